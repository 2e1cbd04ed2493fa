// The fixes for ranks with different step counts, each one epoch of DDP
// training on W ranks in checked mode (every collective's fingerprint is
// compared across ranks first, so any step-count mismatch would fail loudly):
//   drop_last     DistributedSampler(drop_last=True) and DataLoader(drop_last
//                 =True) instead of the hand-written split: floor(N/W)
//                 indices, whole batches only
//   even_batches  one allreduce(max) of the local batch count, then every
//                 rank cycles through its own batches again up to that count
//                 (PyTorch's "even sampler" idea, done after filtering)
//   join          every step all ranks allreduce a has-data flag; a rank out
//                 of data shadows the gradient allreduce with zeros, and the
//                 average divides by the number of ranks that contributed
//                 (torch.distributed.algorithms.Join with DDP and
//                 divide_by_initial_world_size=False)
//   join_initial_world_size
//                 the same protocol dividing by the initial W instead, which
//                 is what PyTorch's Join does by default
//                 (divide_by_initial_world_size=True): a step that only c < W
//                 ranks had data for applies c/W of the mean gradient, a
//                 relative error of exactly 1 - c/W. Run to show it, with
//                 verdict `inexact` expected whenever some rank joins early.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/device/device.h"
#include "core/exact/step_check.h"
#include "repro/drop_last_hang/scenario.h"
#include "core/exact/replica.h"

namespace ddp::drop_last_hang {

enum class Fix { kDropLast, kEvenBatches, kJoin, kJoinInitialWorldSize };
const char* Name(Fix f);
// The PyTorch code each variant corresponds to.
const char* TorchCounterpart(Fix f);
bool IsJoin(Fix f);

// The batches rank `rank` trains on under `fix` (even_batches: after the
// padding, given the global maximum batch count). A join rank simply runs
// out: the steps after its last batch are the ones it shadows.
Batches FixedBatches(Fix fix, const Config& c, int rank, int64_t max_batches);
// Every rank's batches, computed without communication (the one-process
// computation's view of the data; even_batches takes the maximum itself).
std::vector<Batches> AllFixedBatches(Fix fix, const Config& c);

struct RankRun {
  // This rank's steps, each compared with the one-process step started
  // from the state this rank held before it (see TrainWithFix).
  exact::StepCheck check{exact::kDoubleTolerance};
  int64_t steps = 0;
  int contributors_min = 0;  // fewest ranks with data in one step (W if none)
  Eigen::VectorXd final_params;
};

// Trains one epoch on this rank under `fix` and judges every step (teacher
// forcing): before the step the rank's state (parameters, momentum) goes to
// replica::StepInOneProcess, which runs the one-process step over every
// rank's batch of that step; after it the averaged gradient this rank
// applied and its new state must equal the reference's. The reference adopts
// the rank's state rather than the other way round, so the check needs no
// collective of its own (checked mode compares the fix's collectives only)
// and every rank judges itself: a rank whose state went astray is caught at
// the step where it did.
// `device` (--device): where the gradient allreduce runs (nullptr: the host
// buffer; a device: uploaded, reduced there and downloaded, counted in its
// copies; one collective either way). The flag and count allreduces
// (int64) stay host buffers.
RankRun TrainWithFix(comm::Comm& comm, Fix fix, const Config& c,
                     device::Device<double>* device = nullptr);

// The same epoch in one process, free-running (every step the mean over the
// contributing ranks' batch gradients, then SGD). Its distance to a rank's
// final parameters is the record's trajectory_rel_err: information only,
// since rounding differences of one step grow over the next ones.
struct SerialRun {
  int64_t steps = 0;
  Eigen::VectorXd final_params;
};
SerialRun SerialReference(Fix fix, const Config& c);

}  // namespace ddp::drop_last_hang
