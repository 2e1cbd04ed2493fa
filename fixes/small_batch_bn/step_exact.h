// Per-step exactness of the small-batch BatchNorm fixes (core/exact).
//
// sync_bn, group_norm: at every step the DDP ranks and the one-process
// reference start from the same parameters, running statistics and SGD
// momentum (teacher forcing: each rank copies the reference's state into its
// DDP model before the step), run the step on the same data (the reference
// on the concatenation, in rank order, of the ranks' batches) and must agree
// on the averaged gradients, the updated parameters and the updated running
// statistics to 1e-12 relative (double). With uneven per-rank batches each
// rank's loss is weighted by W * b_r / B (B = the global batch), so the
// averaged gradient is the global batch's mean-loss gradient (DDP's average of
// per-rank means is not, when the b_r differ: the mean_of_means pitfall); an
// empty rank runs the step with no samples (SyncBN: count 0 in the
// collectives) and adds a zero gradient. A second DDP model trains free
// (never forced) beside them: its final distance from the free-running
// reference is `trajectory_rel_err`, information only (it measures how
// chaotic the training is, not the fix).
//
// The DDP ranks' norm layers compute where StepExactConfig::placement says
// (core/device: by default the GPU under nccl); the reference always uses
// core/nn's Eigen layers, so a device run is judged against the same
// one-process computation as a host run. The tolerance stays 1e-12 in double
// (core/device/device_tolerance.h: the kernels round differently from Eigen,
// far below it).
//
// precise_bn: the DDP training itself is per-rank BatchNorm (no one-process
// equivalent: it is the bug). What PreciseBN computes is judged: after every
// training step, with the same parameters on every rank and in the reference,
// the running statistics PreciseBN gives across the ranks (each rank averaging
// its own batches, one all-reduce of sums and counts) equal the plain average
// of the batch statistics over all ranks' batches computed in one process, to
// 1e-12. Its effect (the running-stat error against the eval-time population
// shrinks) is reported as information.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device/make_device.h"
#include "core/exact/step_check.h"
#include "core/harness/pair_main.h"
#include "repro/small_batch_bn/task.h"

namespace ddp::small_batch_bn {

enum class Fix { kSyncBn, kGroupNorm, kPreciseBn };
const char* ToString(Fix f);

struct StepExactConfig {
  Fix fix = Fix::kSyncBn;
  std::vector<int> batches;  // per-rank batch sizes; size = W; 0 = an empty rank
  int steps = 8;
  int precise_batches = 4;   // PreciseBN: batches per rank (of its batch size)
  // PreciseBN: batches of each rank when they differ (fvcore issue 152's
  // case); size = W, overrides precise_batches; 0 = a rank with none.
  std::vector<int> precise_counts;
  uint64_t seed = 0;
  double lr = 0.05;
  double noise = 0.3;
  // Where the DDP ranks' norm layers compute (the one-process reference is
  // always core/nn's Eigen on the host).
  device::Placement placement = device::Placement::kAuto;
};

struct StepExactResult {
  exact::StepCheck check{exact::kDoubleTolerance};  // merged over ranks
  double trajectory_rel_err = -1;  // free-running DDP vs reference, final parameters (sync_bn, group_norm)
  double trajectory_buffer_rel_err = -1;
  double rs_err_before = -1;  // precise_bn: running-stat error before / after the last PreciseBN
  double rs_err_after = -1;
  int64_t collectives_per_step = -1;  // sync_bn: the layers' collectives per forced step
  // Per rank, the first training step's host<->device copies of the norm
  // layers (core/device/copy_json.h; empty on the host) and what the Comm
  // staged through device memory for host buffers ({"h2d": {"calls",
  // "bytes"}, "d2h": {...}}; zero on Gloo). sync_bn and group_norm: the
  // first teacher-forced DDP step; precise_bn: the first training step
  // (before PreciseBN).
  std::vector<results::Json> device_copies;
  std::vector<results::Json> comm_staging;
};

// Runs the check on W = batches.size() ranks (spawned, or the launcher's);
// throws std::runtime_error with the failure when the world fails.
StepExactResult RunStepExact(const harness::CommonFlags& f, const StepExactConfig& c);

}  // namespace ddp::small_batch_bn
