// Reads the golden-vector files written by golden/gen_golden.py (format
// described there) from the test's runfiles, and compares tensors.
#pragma once

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/nn/tensor.h"

namespace ddp::nn::golden {

struct GoldenTensor {
  std::vector<int> dims;
  std::vector<double> values;
};

class GoldenFile {
 public:
  // `name` is a file under core/nn/golden/, e.g. "linear_f64.txt".
  static GoldenFile Load(const std::string& name) {
    const char* srcdir = std::getenv("TEST_SRCDIR");
    const char* workspace = std::getenv("TEST_WORKSPACE");
    if (srcdir == nullptr || workspace == nullptr) {
      throw std::runtime_error("golden: TEST_SRCDIR/TEST_WORKSPACE unset; run under bazel test");
    }
    const std::string path = std::string(srcdir) + "/" + workspace + "/core/nn/golden/" + name;
    std::ifstream in(path);
    if (!in) throw std::runtime_error("golden: cannot open " + path);
    GoldenFile file;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream header(line);
      std::string tensor_name;
      int ndim = -1;
      header >> tensor_name >> ndim;
      if (!header || ndim < 0) throw std::runtime_error("golden: bad header line in " + path + ": " + line);
      GoldenTensor t;
      size_t count = 1;
      for (int i = 0; i < ndim; ++i) {
        int d = -1;
        header >> d;
        if (!header || d < 0) throw std::runtime_error("golden: bad dims in " + path + ": " + line);
        t.dims.push_back(d);
        count *= static_cast<size_t>(d);
      }
      std::string values_line;
      if (!std::getline(in, values_line)) throw std::runtime_error("golden: missing values for " + tensor_name);
      std::istringstream values(values_line);
      double v;
      while (values >> v) t.values.push_back(v);
      if (t.values.size() != count) {
        throw std::runtime_error("golden: " + tensor_name + " in " + path + " has " +
                                 std::to_string(t.values.size()) + " values, dims say " + std::to_string(count));
      }
      file.tensors_[tensor_name] = std::move(t);
    }
    if (file.tensors_.empty()) throw std::runtime_error("golden: no tensors in " + path);
    return file;
  }

  const GoldenTensor& Get(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) throw std::runtime_error("golden: no tensor named " + name);
    return it->second;
  }

  double Scalar(const std::string& name) const { return Get(name).values.at(0); }

  // As an R x C matrix: 2-D as is, 1-D as one row, 0-D as 1 x 1; 4-D as N x (C*H*W).
  template <typename S>
  Matrix<S> AsMatrix(const std::string& name) const {
    const GoldenTensor& t = Get(name);
    Eigen::Index rows = 1;
    Eigen::Index cols = static_cast<Eigen::Index>(t.values.size());
    if (t.dims.size() >= 2) {
      rows = t.dims[0];
      cols = rows == 0 ? 0 : static_cast<Eigen::Index>(t.values.size()) / rows;
    }
    Matrix<S> m(rows, cols);
    for (size_t i = 0; i < t.values.size(); ++i) m.data()[i] = static_cast<S>(t.values[i]);
    return m;
  }

  // 4-D as is; 2-D N x C as N x C x 1 x 1.
  template <typename S>
  Tensor4<S> AsTensor4(const std::string& name) const {
    const GoldenTensor& t = Get(name);
    if (t.dims.size() != 4 && t.dims.size() != 2) throw std::runtime_error("golden: " + name + " is not 2-D or 4-D");
    const bool four = t.dims.size() == 4;
    Tensor4<S> out(t.dims[0], t.dims[1], four ? t.dims[2] : 1, four ? t.dims[3] : 1);
    for (size_t i = 0; i < t.values.size(); ++i) out.data[i] = static_cast<S>(t.values[i]);
    return out;
  }

 private:
  std::map<std::string, GoldenTensor> tensors_;
};

}  // namespace ddp::nn::golden
