// repro/small_batch_bn: BatchNorm with 2 samples per rank under DDP (seed 003).
// Runs the variants of variants.cc; see README.md.
#include "core/device/device_flag.h"
#include "core/harness/pair_main.h"
#include "repro/small_batch_bn/variants.h"

int main(int argc, char** argv) {
  ddp::small_batch_bn::PairOptions o;
  ddp::harness::PairSpec spec;
  spec.program = "repro_small_batch_bn";
  spec.summary =
      "Trains TinyCnn under DDP (W ranks x --batch_size per rank, Gloo) on noisy UCI digits with\n"
      "per-rank BatchNorm and with SyncBatchNorm, over --seeds seeds, and prints the validation-error\n"
      "gap with its 95% interval. --sweep: per-rank batch {2,4,8,16,32} x {per-rank BN, PreciseBN,\n"
      "GroupNorm} vs SyncBN, gradient accumulation, the TinyImages counter-example, and per-rank BN\n"
      "with its BN layers in eval mode while training (seed 003's debug step; --bn_eval_from_epoch).\n"
      "--levers: per-rank BN vs SyncBN under the levers seed 003 says do not help.";
  spec.defaults.world_size = 4;
  spec.defaults.batch_size = 2;
  spec.defaults.seeds = 5;
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    flags.Bool("sweep", &o.sweep,
               "W x per-rank batch {2,4,8,16,32}: per_rank_bn, precise_bn, group_norm vs SyncBN; grad_accum; "
               "tiny_images");
    flags.IntList("sweep_batches", &o.sweep_batches,
                  "--sweep: the per-rank batches of its figure-1 rows (fewer: a part of the sweep)",
                  1, 4096);
    flags.Bool("sweep_extras", &o.sweep_extras, "--sweep: also grad_accum and the TinyImages rows");
    flags.Choice("task", &o.task, "digits (noisy UCI digits) or tiny_images (this pair's first task)",
                 {"digits", "tiny_images"});
    flags.Int("epochs", &o.epochs, "training epochs", 1, 1000);
    flags.Double("lr", &o.base_lr, "SGD learning rate per 32 images of global batch (linear scaling)", 1e-6, 10);
    flags.Double("warmup_epochs", &o.warmup_epochs, "linear learning-rate warm-up, epochs", 0, 1000);
    flags.Bool("cosine", &o.cosine, "cosine learning-rate decay to 0 (--cosine=false: constant, the first protocol)");
    flags.Double("noise", &o.noise, "digits: pixel noise sd (pixels in [0, 1])", 0, 10);
    flags.Bool("sync_bn_ddp", &o.sync_bn_ddp,
               "train the SyncBN reference on the ranks (default: one process replaying the ranks' batches, "
               "what SyncBN computes)");
    flags.Int("bn_eval_from_epoch", &o.bn_eval_from_epoch,
              "one run (not --sweep): train per-rank BN with its BN layers in eval mode from this epoch on "
              "(seed 003's debug step; the bn_eval row); -1: never",
              -1, 1000);
    flags.Bool("levers", &o.levers,
               "per_rank_bn vs SyncBN at --batch_size per rank under each lever seed 003 says does not help: "
               "lr x0.25, lr x4, momentum 0, Adam (lr 1e-3), no augmentation (rows 'lever')");
    flags.Int("precise_batches", &o.precise_batches, "PreciseBN: batches averaged per rank (M)", 1, 100000);
  };
  spec.shared_flags = {ddp::device::PlacementFlag(
      "norm_device",
      "where the norm layers and the gradient / PreciseBN all-reduces compute: auto (the GPU under "
      "--backend nccl, else the host), host (Eigen), emulated (the device path on the host), cuda",
      &o.placement)};
  spec.validate = [&](const ddp::harness::CommonFlags&) { return ddp::small_batch_bn::ValidateOptions(o); };
  spec.run = [&](const ddp::harness::CommonFlags& f) { return ddp::small_batch_bn::RunRepro(f, o); };
  return ddp::harness::PairMain(argc, argv, spec);
}
