// An all_gather of per-rank rows as an autograd function: what its forward
// returns, and what its backward sends back to this rank's input.
//
// Forward: every rank's rows in rank order (counts[r] rows from rank r;
// equal counts use the engine's all_gather, unequal ones its allgatherv).
// Backward: given dL/d(gathered) on this rank (total x D), the gradient that
// reaches this rank's own input rows. The implementations are the bug's
// variants (buggy_gathers.h) and the fix (fixes/autograd_lost_gather).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/device/device.h"
#include "repro/autograd_lost_gather/encoder.h"

namespace ddp::autograd_lost_gather {

class GatherOp {
 public:
  virtual ~GatherOp() = default;
  // Collective. Remembers counts and this rank's slice for Backward.
  Mat Forward(comm::Comm& comm, const Mat& mine, std::span<const int64_t> counts);
  // May be collective (then every rank must call it).
  virtual Mat Backward(comm::Comm& comm, const Mat& d_gathered) = 0;
  // Where a Backward that all-reduces does it (nullptr: host buffers; see
  // core/device/device_allreduce.h). RankGrad sets it before Forward.
  void set_device(device::Device<double>* device) { device_ = device; }

 protected:
  device::Device<double>* device_ = nullptr;
  std::vector<int64_t> counts_;
  int64_t offset_ = 0;  // this rank's first row in the gathered matrix
  int64_t rows_ = 0;    // this rank's rows
  Eigen::Index cols_ = 0;
};

// The engine call behind Forward: all_gather when every count is equal,
// allgatherv otherwise.
Mat AllgatherRows(comm::Comm& comm, const Mat& mine, std::span<const int64_t> counts);

}  // namespace ddp::autograd_lost_gather
