// 2-D convolution (cross-correlation, as nn.Conv2d) with a square kernel,
// stride and zero padding, by im2col + one Eigen GEMM per sample.
//
// The weight is stored out_channels x (in_channels * k * k): PyTorch's
// (out, in, k, k) weight flattened row-major, so its weights load unchanged.
// im2col of one sample is a (in*k*k) x (Ho*Wo) matrix whose row
// (c * k + i) * k + j holds x[c, oh*stride - pad + i, ow*stride - pad + j]
// (0 outside the image) in column oh * Wo + ow; then the sample's output,
// out x (Ho*Wo) in NCHW order, is W * cols + b.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/nn/param.h"
#include "core/nn/rng.h"
#include "core/nn/tensor.h"

namespace ddp::nn {

struct Conv2dOptions {
  int kernel = 3;
  int stride = 1;
  int padding = 0;
  bool bias = true;
};

template <typename S>
class Conv2d {
 public:
  Conv2d(int in_channels, int out_channels, Conv2dOptions opts = {})
      : in_(in_channels), out_(out_channels), opts_(opts),
        weight_(out_channels, in_channels * opts.kernel * opts.kernel), bias_(1, opts.bias ? out_channels : 0) {
    if (in_channels <= 0 || out_channels <= 0) throw std::invalid_argument("Conv2d: channels must be > 0");
    if (opts.kernel <= 0 || opts.stride <= 0 || opts.padding < 0) {
      throw std::invalid_argument("Conv2d: need kernel > 0, stride > 0, padding >= 0");
    }
  }

  // PyTorch's default bound 1/sqrt(fan_in), fan_in = in * k * k, for weight and bias.
  void Init(Rng& rng) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(weight_.value.cols()));
    for (Eigen::Index i = 0; i < weight_.value.size(); ++i) {
      weight_.value.data()[i] = static_cast<S>(rng.Uniform(-bound, bound));
    }
    for (Eigen::Index i = 0; i < bias_.value.size(); ++i) {
      bias_.value.data()[i] = static_cast<S>(rng.Uniform(-bound, bound));
    }
  }

  int OutSize(int in_size) const { return (in_size + 2 * opts_.padding - opts_.kernel) / opts_.stride + 1; }

  Tensor4<S> Forward(const Tensor4<S>& x) {
    if (x.c != in_) {
      throw std::invalid_argument("Conv2d::Forward: input has " + std::to_string(x.c) + " channels, expected " +
                                  std::to_string(in_));
    }
    if (x.h + 2 * opts_.padding < opts_.kernel || x.w + 2 * opts_.padding < opts_.kernel) {
      throw std::invalid_argument("Conv2d::Forward: input " + x.ShapeString() + " smaller than the kernel");
    }
    in_h_ = x.h;
    in_w_ = x.w;
    out_h_ = OutSize(x.h);
    out_w_ = OutSize(x.w);
    Tensor4<S> y(x.n, out_, out_h_, out_w_);
    cols_.assign(x.n, Matrix<S>());
    for (int n = 0; n < x.n; ++n) {
      cols_[n] = Im2Col(x, n);
      Eigen::Map<Matrix<S>> yn(y.Plane(n, 0), out_, out_h_ * out_w_);
      yn.noalias() = weight_.value * cols_[n];
      if (opts_.bias) yn.colwise() += bias_.value.row(0).transpose();
    }
    return y;
  }

  // Accumulates dW += sum_n dY_n cols_n^T and db += sum over n, h, w of dy;
  // returns dx = col2im(W^T dY_n).
  Tensor4<S> Backward(const Tensor4<S>& dy) {
    if (dy.n != static_cast<int>(cols_.size()) || dy.c != out_ || dy.h != out_h_ || dy.w != out_w_) {
      throw std::invalid_argument("Conv2d::Backward: gradient shape does not match the last Forward");
    }
    Tensor4<S> dx(dy.n, in_, in_h_, in_w_);
    for (int n = 0; n < dy.n; ++n) {
      Eigen::Map<const Matrix<S>> dyn(dy.Plane(n, 0), out_, out_h_ * out_w_);
      weight_.grad.noalias() += dyn * cols_[n].transpose();
      if (opts_.bias) bias_.grad.row(0) += dyn.rowwise().sum().transpose();
      const Matrix<S> dcols = weight_.value.transpose() * dyn;
      Col2ImAdd(dcols, n, &dx);
    }
    return dx;
  }

  Parameter<S>& weight() { return weight_; }
  Parameter<S>& bias() { return bias_; }

  ParamList<S> Params() {
    ParamList<S> list{{"weight", &weight_}};
    if (opts_.bias) list.push_back({"bias", &bias_});
    return list;
  }

 private:
  Matrix<S> Im2Col(const Tensor4<S>& x, int n) const {
    const int k = opts_.kernel;
    Matrix<S> cols = Matrix<S>::Zero(in_ * k * k, out_h_ * out_w_);
    for (int c = 0; c < in_; ++c) {
      for (int i = 0; i < k; ++i) {
        for (int j = 0; j < k; ++j) {
          const int row = (c * k + i) * k + j;
          for (int oh = 0; oh < out_h_; ++oh) {
            const int ih = oh * opts_.stride - opts_.padding + i;
            if (ih < 0 || ih >= x.h) continue;
            for (int ow = 0; ow < out_w_; ++ow) {
              const int iw = ow * opts_.stride - opts_.padding + j;
              if (iw < 0 || iw >= x.w) continue;
              cols(row, oh * out_w_ + ow) = x.At(n, c, ih, iw);
            }
          }
        }
      }
    }
    return cols;
  }

  void Col2ImAdd(const Matrix<S>& dcols, int n, Tensor4<S>* dx) const {
    const int k = opts_.kernel;
    for (int c = 0; c < in_; ++c) {
      for (int i = 0; i < k; ++i) {
        for (int j = 0; j < k; ++j) {
          const int row = (c * k + i) * k + j;
          for (int oh = 0; oh < out_h_; ++oh) {
            const int ih = oh * opts_.stride - opts_.padding + i;
            if (ih < 0 || ih >= in_h_) continue;
            for (int ow = 0; ow < out_w_; ++ow) {
              const int iw = ow * opts_.stride - opts_.padding + j;
              if (iw < 0 || iw >= in_w_) continue;
              dx->At(n, c, ih, iw) += dcols(row, oh * out_w_ + ow);
            }
          }
        }
      }
    }
  }

  int in_;
  int out_;
  Conv2dOptions opts_;
  Parameter<S> weight_;  // out x (in * k * k)
  Parameter<S> bias_;    // 1 x out (1 x 0 without bias)
  int in_h_ = 0, in_w_ = 0, out_h_ = 0, out_w_ = 0;
  std::vector<Matrix<S>> cols_;  // im2col of each sample of the last Forward
};

}  // namespace ddp::nn
