// DDP training of TinyCnn on TinyImages with a chosen normalisation layer,
// the measurements the small-batch BatchNorm pair reports, and the
// one-process reference that replays the same global batches.
//
// What one run does (every rank of a world, or one process):
//  - data: TinyImages (3x8x8, channel means (3, -2, 10), stds (2, 0.5, 5):
//    far from 0/1), n_train training and n_val validation images (another
//    seed); DistributedSampler(shuffle, seed, set_epoch) + DataLoader with
//    drop_last, batch_per_rank * accumulate indices per step;
//  - model: TinyCnn (conv-norm-ReLU x2, pool, linear), double, init seed;
//  - step: `accumulate` micro-batches of batch_per_rank (loss / accumulate),
//    then DDP: all-reduce the flat gradient, divide by W, SGD (momentum 0.9).
//    Before every training forward rank 0's buffers are broadcast (PyTorch
//    DDP's broadcast_buffers=True default), so the running statistics are
//    rank 0's;
//  - after each epoch: optional PreciseBN, then validation accuracy (eval mode).
// Measurements: validation accuracy per epoch; the error of each BatchNorm's
// running_mean / running_var against the statistics its input really has at
// eval time over the whole training set (`population`); and how far the
// per-rank batch means of the same layer are apart across ranks.
//
// The reference (comm == nullptr) is one process whose step s uses the
// concatenation, in rank order, of what the W ranks of a DDP run use at step
// s: with SyncBatchNorm or GroupNorm, DDP must equal it up to rounding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/nn/tensor.h"
#include "core/results/json.h"

namespace ddp::small_batch_bn {

enum class NormKind { kBatchNorm, kSyncBatchNorm, kGroupNorm };

const char* ToString(NormKind k);

struct TrainConfig {
  NormKind norm = NormKind::kBatchNorm;
  bool precise_bn = false;   // recompute running stats after each epoch (fvcore precise_bn)
  int world_size = 4;        // DDP ranks; for the reference, the world it replays
  int batch_per_rank = 2;    // BatchNorm sees this many samples per forward
  int accumulate = 1;        // micro-batches per optimizer step (gradient accumulation)
  int epochs = 6;
  int64_t n_train = 512;
  int64_t n_val = 512;
  uint64_t seed = 0;         // data, sampler and initialisation
  double lr = 0.05;
  int precise_batches = 32;  // M: batches PreciseBN averages over (per rank)
  int gn_groups = 4;
};

struct TrainResult {
  std::vector<double> val_acc;  // one per epoch
  // Running-stat error against the population statistics of each BN input,
  // averaged over channels and both BN layers: |rm - pm| / sqrt(pv) and
  // |rv / pv - 1|. Final model; *_before_precise: before the last PreciseBN.
  double rs_mean_err = -1, rs_var_err = -1;
  double rs_mean_err_before_precise = -1, rs_var_err_before_precise = -1;
  // Cross-rank standard deviation of the per-rank batch means (the statistics
  // each rank's BatchNorm normalises with), in units of the global batch's
  // standard deviation, averaged over channels and steps, per layer.
  double rank_spread1 = -1, rank_spread2 = -1;
  nn::Vector<double> params;   // final parameters (flat)
  nn::Vector<double> buffers;  // final running statistics (flat)
  int64_t steps = 0;
};

// comm: this rank's communicator (its world size must be c.world_size), or
// nullptr for the one-process reference.
TrainResult Train(comm::Comm* comm, const TrainConfig& c);

// Summary over epochs: mean accuracy and its epoch-to-epoch standard
// deviation over the second half of the epochs (after the initial rise).
struct AccSummary {
  double last = 0;
  double mean = 0;  // second half
  double sd = 0;    // second half, population sd
  double half_range = 0;  // (max - min) / 2 over the second half
};
AccSummary Summarize(const std::vector<double>& val_acc);

results::Json ToJson(const TrainResult& r);

}  // namespace ddp::small_batch_bn
