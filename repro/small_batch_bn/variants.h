// The small-batch BatchNorm repro variants (see variants.cc).
#pragma once

#include <string>
#include <vector>

#include "core/harness/pair_main.h"
#include "repro/small_batch_bn/training.h"

namespace ddp::small_batch_bn {

// Pair-specific settings (flags of both binaries).
struct PairOptions {
  bool sweep = false;
  // The sweep's rows, so that its parts can run as parallel processes (the
  // records of the parts, concatenated, are the records of the whole sweep:
  // every row is a pure function of its flags and seeds).
  std::vector<int> sweep_batches = {2, 4, 8, 16, 32};
  bool sweep_extras = true;  // grad_accum and the TinyImages rows
  std::string task = "digits";  // digits | tiny_images
  int epochs = 20;
  double base_lr = 0.05;  // per 32 images of global batch (linear scaling)
  double warmup_epochs = 3;
  bool cosine = true;  // false: constant learning rate (the first protocol)
  double noise = 0.3;
  int precise_batches = 32;
  // Train the SyncBN reference on the ranks too; default: one process
  // replaying the ranks' batches (what SyncBN computes, without its collectives).
  bool sync_bn_ddp = false;
  // Where the norm layers compute (--norm_device), and with them DDP's
  // gradient and PreciseBN all-reduces (one device per rank): auto = the GPU under
  // --backend nccl (the one-process SyncBN reference stays on the host),
  // else the host.
  device::Placement placement = device::Placement::kAuto;
  // One run (not --sweep): >= 0 trains the per-rank BatchNorm model with its
  // BN layers in eval mode from this epoch on (the bn_eval row); -1: the
  // per_rank_bn row. The sweep has its own bn_eval rows (from epoch 0 and
  // from half-way).
  int bn_eval_from_epoch = -1;
  // --levers: per_rank_bn against SyncBN at --batch_size per rank under each
  // of the levers seed 003 says do not help (variants.cc, the lever rows).
  bool levers = false;
};

// "" or the message naming the flag and its allowed values.
std::string ValidateOptions(const PairOptions& o);

TrainConfig BaseConfig(const harness::CommonFlags& f, const PairOptions& o);

// Trains `cfg` on cfg.world_size spawned ranks (or the launcher's) for each
// seed of `f`; returns rank 0's results, or throws std::runtime_error.
std::vector<TrainResult> RunDdp(const harness::CommonFlags& f, TrainConfig cfg);

// The one-process replay of `cfg` (SyncBN / GroupNorm), for each seed.
std::vector<TrainResult> RunOneProcess(const harness::CommonFlags& f, TrainConfig cfg);

// val_error (mean over seeds), val_error_ci95 (half-width), seeds, the
// per-seed errors, and the means of the secondary measurements.
results::Json Summary(const std::vector<TrainResult>& runs);
// The paired difference a - b of the final validation errors, seed by seed:
// {"val_error_gap", "val_error_gap_ci95"}.
results::Json Gap(const std::vector<TrainResult>& a, const std::vector<TrainResult>& b);

std::vector<results::Record> RunRepro(const harness::CommonFlags& f, const PairOptions& o);

}  // namespace ddp::small_batch_bn
