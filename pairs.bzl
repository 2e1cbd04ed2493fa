"""The registered repro/fix pairs: `bazel run //:suite` runs each binary here
with its default flags (CPU, Gloo) and prints one summary table."""

PAIRS = [
    "//repro/wrong_all_gather",
    "//fixes/wrong_all_gather",
    "//repro/mean_of_means",
    "//fixes/mean_of_means",
    "//repro/missing_set_epoch",
    "//fixes/missing_set_epoch",
    "//repro/drop_last_hang",
    "//fixes/drop_last_hang",
    "//repro/small_batch_bn",
    "//fixes/small_batch_bn",
    "//repro/autograd_lost_gather",
    "//fixes/autograd_lost_gather",
]
