#include "bench/norm_kernels/device_rows.h"

#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/cuda/device_buffer.h"
#include "core/cuda/norm_kernels.h"

namespace ddp::bench::norm_kernels {
namespace {

using cuda::DeviceBuffer;

constexpr double kEps = 1e-5;
constexpr double kMomentum = 0.1;

template <typename T>
std::vector<T> Normal(std::size_t n, double mean, double sd, std::mt19937_64& gen) {
  std::normal_distribution<double> dist(mean, sd);
  std::vector<T> out(n);
  for (T& v : out) v = static_cast<T>(dist(gen));
  return out;
}

template <typename T>
class Rows final : public DeviceRows {
 public:
  Rows(const Shape& s, cudaStream_t stream)
      : shape_{s.n, s.c, s.plane()},
        groups_(GroupsFor(s.c)),
        count_(s.n * s.plane()),
        stream_(stream),
        e_(static_cast<std::size_t>(s.elements())),
        c_(static_cast<std::size_t>(s.c)),
        g_(static_cast<std::size_t>(s.n * groups_)),
        gen_(static_cast<uint64_t>(s.n * 1000003 + s.c * 1009 + s.h * 31 + s.w)),
        x_(Normal<T>(e_, 3, 2, gen_)),
        dy_(Normal<T>(e_, 0, 1, gen_)),
        y_(e_),
        dx_(e_),
        local_mean_(c_),
        local_m2_(c_),
        mean_(c_),
        m2_(c_),
        invstd_(c_),
        gamma_(Normal<T>(c_, 1, 0.1, gen_)),
        beta_(Normal<T>(c_, 0, 0.1, gen_)),
        running_mean_(std::vector<T>(c_, T(0))),
        running_var_(std::vector<T>(c_, T(1))),
        sum_dy_(c_),
        sum_dy_xhat_(c_),
        dgamma_(c_),
        dbeta_(c_),
        group_mean_(g_),
        group_invstd_(g_) {
    // The statistics and sums the single-kernel rows read: one training
    // step, once.
    Enqueue(Row::kBnFwdBwd);
    Enqueue(Row::kGnForward);
    DDP_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void Enqueue(Row r) override {
    switch (r) {
      case Row::kBnStats: return cuda::BnLocalStats(x_.get(), shape_, mean_.get(), m2_.get(), stream_);
      case Row::kBnFinalize:
        return cuda::BnFinalizeStats(mean_.get(), m2_.get(), count_, shape_.c, kEps, kMomentum, invstd_.get(),
                                     running_mean_.get(), running_var_.get(), stream_);
      case Row::kBnNormalize:
        return cuda::BnNormalize(x_.get(), shape_, mean_.get(), invstd_.get(), gamma_.get(), beta_.get(), y_.get(),
                                 stream_);
      case Row::kBnGradSums:
        return cuda::BnLocalGradSums(dy_.get(), x_.get(), shape_, mean_.get(), invstd_.get(), sum_dy_.get(),
                                     sum_dy_xhat_.get(), stream_);
      case Row::kBnInputGrad:
        return cuda::BnInputGrad(dy_.get(), x_.get(), shape_, mean_.get(), invstd_.get(), gamma_.get(),
                                 sum_dy_.get(), sum_dy_xhat_.get(), count_, dx_.get(), stream_);
      case Row::kGnForward:
        return cuda::GnForward(x_.get(), shape_, groups_, kEps, gamma_.get(), beta_.get(), y_.get(),
                               group_mean_.get(), group_invstd_.get(), stream_);
      case Row::kGnBackward:
        return cuda::GnBackward(dy_.get(), x_.get(), shape_, groups_, group_mean_.get(), group_invstd_.get(),
                                gamma_.get(), dx_.get(), dgamma_.get(), dbeta_.get(), stream_);
      case Row::kBnFwdBwd:
        for (Row k : {Row::kBnStats, Row::kBnFinalize, Row::kBnNormalize, Row::kBnGradSums, Row::kBnInputGrad}) {
          Enqueue(k);
        }
        return;
      case Row::kSyncBnFwdBwd: {
        // SyncBatchNorm's sequence with a world of one: the local statistics,
        // BnMergeStats of the one rank (what the all-gather would feed),
        // then as BatchNorm with the merged count.
        cuda::BnLocalStats(x_.get(), shape_, local_mean_.get(), local_m2_.get(), stream_);
        const int64_t counts[1] = {count_};
        const int64_t total = cuda::BnMergeStats<T>(counts, local_mean_.get(), local_m2_.get(), shape_.c,
                                                    mean_.get(), m2_.get(), stream_);
        cuda::BnFinalizeStats(mean_.get(), m2_.get(), total, shape_.c, kEps, kMomentum, invstd_.get(),
                              running_mean_.get(), running_var_.get(), stream_);
        for (Row k : {Row::kBnNormalize, Row::kBnGradSums}) Enqueue(k);
        cuda::BnInputGrad(dy_.get(), x_.get(), shape_, mean_.get(), invstd_.get(), gamma_.get(), sum_dy_.get(),
                          sum_dy_xhat_.get(), total, dx_.get(), stream_);
        return;
      }
      case Row::kGnFwdBwd:
        Enqueue(Row::kGnForward);
        Enqueue(Row::kGnBackward);
        return;
    }
  }

 private:
  cuda::NchwShape shape_;
  int64_t groups_, count_;
  cudaStream_t stream_;
  std::size_t e_, c_, g_;  // elements of a tensor, a channel vector, a group vector
  std::mt19937_64 gen_;
  DeviceBuffer<T> x_, dy_, y_, dx_;
  DeviceBuffer<T> local_mean_, local_m2_, mean_, m2_, invstd_, gamma_, beta_, running_mean_, running_var_;
  DeviceBuffer<T> sum_dy_, sum_dy_xhat_, dgamma_, dbeta_;
  DeviceBuffer<T> group_mean_, group_invstd_;
};

}  // namespace

std::unique_ptr<DeviceRows> MakeDeviceRows(const Shape& shape, const std::string& dtype, cudaStream_t stream) {
  if (dtype == "float") return std::make_unique<Rows<float>>(shape, stream);
  if (dtype == "double") return std::make_unique<Rows<double>>(shape, stream);
  throw std::invalid_argument("MakeDeviceRows: dtype must be float or double, got " + dtype);
}

}  // namespace ddp::bench::norm_kernels
