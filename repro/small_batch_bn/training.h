// One training run of the small-batch BatchNorm pair: DDP (one process per
// rank, gradients averaged through the comm) or, with comm == nullptr, one
// process that replays the W ranks' batches (step s = the concatenation, in
// rank order, of what the W ranks use at step s): with SyncBatchNorm or
// GroupNorm that is what the ranks compute (fixes/small_batch_bn checks it
// per step to 1e-12).
//
// What one run does (task.h has the data and the model):
//  - data: DistributedSampler(shuffle, seed, set_epoch) over the training
//    images + DataLoader(drop_last), batch_per_rank * accumulate indices per
//    rank and step; digits get fresh pixel noise every epoch;
//  - step: `accumulate` micro-batches of batch_per_rank (loss / accumulate),
//    then DDP: all-reduce the flat gradient, divide by W, SGD (momentum 0.9)
//    or, as a lever, Adam;
//    With per-rank BatchNorm every training forward starts from rank 0's
//    buffers (PyTorch DDP's broadcast_buffers=True default), so the running
//    statistics are rank 0's (task.h: AverageGradientsAndBroadcastBuffers);
//  - learning rate: base_lr x global batch / 32 (the linear scaling rule of
//    Goyal et al., which the GroupNorm paper's Figure 1 follows; SGD) or
//    adam_lr (Adam, whose step is scale-free: no batch scaling), linear
//    warm-up over the first warmup_epochs, then cosine decay to 0;
//  - after each epoch: optional PreciseBN, then the validation error (eval mode);
//  - optionally (bn_eval_from_epoch) the BatchNorm layers in eval mode while
//    training, from a given epoch on.
// Measurements: validation error per epoch and of the final model, the final
// model's error on its last epoch's training images (eval mode: does the
// model underfit?), the running-stat error against the statistics each BN
// input has in eval mode, and how far apart the ranks' batch means are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/nn/tensor.h"
#include "core/results/json.h"
#include "repro/small_batch_bn/task.h"

namespace ddp::small_batch_bn {

enum class Optimizer { kSgd, kAdam };

struct TrainConfig {
  TaskConfig task;
  NormKind norm = NormKind::kBatchNorm;
  bool precise_bn = false;   // recompute running stats before each evaluation (fvcore precise_bn)
  int world_size = 4;        // DDP ranks; with comm == nullptr, the world replayed
  int batch_per_rank = 2;    // BatchNorm sees this many samples per forward
  int accumulate = 1;        // micro-batches per optimizer step (gradient accumulation)
  int epochs = 20;
  double base_lr = 0.05;     // per 32 images of global batch
  double warmup_epochs = 3;
  bool cosine = true;        // false: constant learning rate after the warm-up (this pair's first protocol)
  double momentum = 0.9;     // SGD momentum (0: plain SGD)
  Optimizer optimizer = Optimizer::kSgd;
  double adam_lr = 1e-3;     // Adam's peak learning rate (torch.optim.Adam's default); betas 0.9, 0.999
  int precise_batches = 32;  // M: batches PreciseBN averages over (per rank)
  int gn_groups = 4;
  int spread_every = 16;     // measure the ranks' batch-mean spread every k-th micro-batch
  // >= 0: from this epoch on, the BatchNorm layers train in eval mode (seed
  // 003's debug step, set_bn_eval after model.train()): every training
  // forward normalises with the running statistics of that moment, which no
  // longer change (PyTorch's eval mode updates nothing), and the backward
  // treats them as constants. -1: never. Plain BatchNorm only (no PreciseBN:
  // it would rewrite the frozen statistics).
  int bn_eval_from_epoch = -1;
  // Where the norm layers compute (task.h Model; kAuto: the GPU under nccl).
  device::Placement placement = device::Placement::kAuto;
};

struct TrainResult {
  std::vector<double> val_error;  // one per epoch; the last is the final model's
  double train_error = -1;        // final model, last epoch's training images, eval mode
  // Running-stat error (task.h RunningStatError), final model; *_before_precise:
  // before the last PreciseBN. -1: not applicable.
  double rs_mean_err = -1, rs_var_err = -1;
  double rs_mean_err_before_precise = -1, rs_var_err_before_precise = -1;
  // Cross-rank standard deviation of the per-rank batch means (the statistics
  // each rank's BatchNorm normalises with), in units of the global batch's
  // standard deviation, averaged over channels and measured micro-batches,
  // per layer. -1: not measured (one rank, or no BatchNorm).
  double rank_spread1 = -1, rank_spread2 = -1;
  nn::Vector<double> params;   // final parameters (flat)
  nn::Vector<double> buffers;  // final running statistics (flat)
  int64_t steps = 0;
  // This rank's first optimizer step (DDP only; null in one process):
  // StepCopies' Layers() and Staging(). Its micro-batches, the spread
  // measurement's reads (per-rank BN) and DDP's collectives included.
  results::Json first_step_device_copies;
  results::Json first_step_comm_staging;
  // Filled by RunDdp (not serialised): every rank's, in rank order.
  std::vector<results::Json> ranks_device_copies, ranks_comm_staging;
};

// The peak learning rate of a run: SGD's scaled by the global batch, Adam's as given.
double PeakLearningRate(const TrainConfig& c);

// The learning rate of step t (0-based) of `total`, warm-up over `warmup` steps.
double LearningRate(double peak, int64_t t, int64_t warmup, int64_t total);

TrainResult Train(comm::Comm* comm, const TrainConfig& c);

results::Json ToJson(const TrainResult& r);
// Inverse of ToJson (rank 0's result comes back from its process as JSON).
TrainResult FromJson(const results::Json& j);

}  // namespace ddp::small_batch_bn
