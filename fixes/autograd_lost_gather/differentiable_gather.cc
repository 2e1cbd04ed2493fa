#include "fixes/autograd_lost_gather/differentiable_gather.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "core/device/device_allreduce.h"
#include "repro/autograd_lost_gather/task.h"

namespace ddp::autograd_lost_gather {

Mat DifferentiableGather::Backward(comm::Comm& comm, const Mat& d_gathered) {
  if (d_gathered.rows() != Total(counts_) || d_gathered.cols() != cols_) {
    throw std::invalid_argument("DifferentiableGather::Backward: gradient shape does not match Forward");
  }
  if (method_ == AdjointMethod::kAllreduce) {
    Mat sum = d_gathered;
    // The gathered gradient is the Eigen network's hand-over (an activation).
    device::AllreduceOnDevice(comm, device_, std::span<double>(sum.data(), static_cast<std::size_t>(sum.size())),
                              device::CopyKind::kActivation);
    return sum.middleRows(offset_, rows_);
  }
  const int64_t max_count = *std::max_element(counts_.begin(), counts_.end());
  const std::size_t block = static_cast<std::size_t>(max_count * cols_);
  const std::vector<int64_t> offsets = Offsets(counts_);
  // Rank r's rows go to block r, zero-padded to max_count rows (a no-op
  // layout when the counts are equal). Row-major: rows are contiguous.
  std::vector<double> send(block * counts_.size(), 0.0);
  for (std::size_t r = 0; r < counts_.size(); ++r) {
    const double* from = d_gathered.data() + offsets[r] * cols_;
    std::copy(from, from + counts_[r] * cols_, send.begin() + static_cast<std::ptrdiff_t>(r * block));
  }
  const std::vector<double> mine = comm.ReduceScatter<double>(send);
  return Eigen::Map<const Mat>(mine.data(), rows_, cols_);
}

}  // namespace ddp::autograd_lost_gather
