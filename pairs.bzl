"""The registry of repro/fix pairs: the one place that lists them, and
everything each pair needs from the tools around it. Every consumer derives
from it: `bazel run //:suite` (PAIRS), the report's sections, order and
checks, the summary, tools/regen_all.sh, the GPU bundle's shared-GPU flags
and MPS list, tools/vs_pytorch (run_all.sh and its BUILD), the citation's
wording (//:registry_test). Python and shell read it through
analysis/registry.py (this file is Starlark that is also a Python literal:
keep each entry plain strings, lists, dicts and booleans).

A new pair: `tools/new_pair NAME` scaffolds repro/NAME and fixes/NAME and
appends an entry here; docs/adding_a_pair.md says what is left by hand.

Per pair:
  name              the folder name under repro/ and fixes/, and the
                    records' "bug"
  seed              the source post it comes from (analysis/claims.json
                    cites it), or "" for a pair no post inspired yet
  judging_readmes   the READMEs ("repro", "fixes") that judge the post's
                    claims ("what the seed got right / wrong")
  regen             the records tools/regen_all.sh writes, each
                    [kind ("repro" | "fix"), suffix, flags, timed]: step and
                    file results/NAME_KIND SUFFIX.json from
                    `bazel run //KIND/NAME -- FLAGS --json ...`; timed steps
                    hold times and wait for a quiet machine
  shared_gpu        per kind, the flags that fit the binary in about 60 s
                    when its NCCL ranks share one GPU, and the estimate
                    behind them (core/testing/README.md's model)
  stalls_nccl       per kind, why its NCCL runs stall a collective on
                    purpose (run apart from CUDA MPS by the bundle), if so
  evidence          the PyTorch evidence scripts set beside the pair
                    (tools/vs_pytorch/run_all.sh), each [record name,
                    script under the pair's folders, versions, README kind,
                    README table id]
"""

PAIR_REGISTRY = [
    {
        "name": "wrong_all_gather",
        "seed": "000",
        "judging_readmes": ["repro", "fixes"],
        "regen": [
            ["repro", "", "--sweep", False],
            ["fix", "", "--sweep", False],
        ],
        "shared_gpu": {
            "repro": ["--raw_runs 1 --seeds 1 --batch_size 7 --timeout 5",
                      "81 worlds (20 raw runs of 4 rows) ~800 s, more if NCCL waits out the 60 s deadline in the unequal raw runs -> 3 worlds, 87 collectives, at most one 5 s deadline: ~37 s."],
            "fix": ["", "1 world, 200 collectives: ~17 s (13 s seen on the H100)."],
        },
        "stalls_nccl": {
            "repro": "the raw unequal all_gather: ranks stall, then abort",
            "fix": "not a deliberate stall: the first device-resident varlen gather under MPS reported cudaErrorIllegalAddress while call 1's fault happened; exact without MPS; apart until it has run alone under MPS",
        },
        "evidence": [
            ["wrong_all_gather_unequal", "repro/pytorch/unequal_all_gather.py", "1.13,2.15", "repro", "pytorch"],
            ["wrong_all_gather_torchmetrics", "repro/pytorch/torchmetrics_auroc.py", "2.15", "repro", "torchmetrics"],
            ["wrong_all_gather_auc_curve", "repro/pytorch/auc_curve.py", "1.13,2.15", "repro", "auc_curve"],
            ["wrong_all_gather_torchmetrics_step_epoch", "repro/pytorch/torchmetrics_step_epoch.py", "2.15", "repro", "torchmetrics_step_epoch"],
        ],
    },
    {
        "name": "mean_of_means",
        "seed": "004",
        "judging_readmes": ["repro"],
        "regen": [
            ["repro", "", "--sweep", False],
            ["fix", "", "--sweep", False],
        ],
        "shared_gpu": {
            "repro": ["--seeds 3", "1 world, 1395 collectives: ~64 s (63 s seen) -> 837: ~42 s."],
            "fix": ["", "1 world, 60 collectives: ~12 s (12 s seen)."],
        },
        "stalls_nccl": {},
        "evidence": [
            ["mean_of_means_lightning", "repro/pytorch/lightning_accumulator.py", "2.15", "repro", "pytorch_lightning"],
        ],
    },
    {
        "name": "missing_set_epoch",
        "seed": "001",
        "judging_readmes": ["repro"],
        "regen": [
            ["repro", "", "", False],
            ["fix", "", "", False],
            ["fix", "_sweep", "--sweep", False],
        ],
        "shared_gpu": {
            "repro": ["--epochs 3", "2 worlds, 851 + 451 collectives: ~53 s (32 s and 79 s seen) -> 511 + 271: ~39 s."],
            "fix": ["", "2 worlds, 105 + 65 collectives: ~24 s (21 s seen)."],
        },
        "stalls_nccl": {},
        "evidence": [
            ["missing_set_epoch_sampler", "repro/pytorch/sampler_vs_golden.py", "1.13,2.15", "repro", "pytorch"],
        ],
    },
    {
        "name": "drop_last_hang",
        "seed": "001",
        "judging_readmes": ["repro"],
        "regen": [
            ["repro", "", "", True],
            ["fix", "", "", True],
            ["fix", "_sweep", "--sweep", True],
        ],
        "shared_gpu": {
            "repro": ["--controls=false --nccl_startup_allowance 15",
                      "7 worlds, the no-deadline row held 65 s: ~133 s (~105 s seen) -> the four unequal-step rows, no-deadline row held 5 + 15 s: ~59 s."],
            "fix": ["", "1 world, 685 collectives (checked mode): ~36 s (~26 s seen)."],
        },
        "stalls_nccl": {
            "repro": "the uneven-step hang, aborted at its deadline",
        },
        "evidence": [
            ["drop_last_hang_timeout", "repro/pytorch/uneven_steps_timeout.py", "1.13,2.15", "repro", "pytorch"],
            ["drop_last_hang_join", "fixes/pytorch/join_divide.py", "1.13,2.15", "fixes", "pytorch"],
            ["drop_last_hang_final_barrier", "fixes/pytorch/final_barrier.py", "1.13,2.15", "fixes", "final_barrier"],
            ["drop_last_hang_find_unused", "fixes/pytorch/find_unused.py", "1.13,2.15", "fixes", "find_unused"],
        ],
    },
    {
        "name": "small_batch_bn",
        "seed": "003",
        "judging_readmes": ["repro", "fixes"],
        "regen": [
            ["repro", "_sweep", "--sweep", False],
            ["repro", "_levers", "--levers", False],
            ["fix", "", "", False],
            ["fix", "_sweep", "--sweep", False],
        ],
        "shared_gpu": {
            "repro": ["--seeds 3 --epochs 1 --warmup_epochs 0 --lr 0.2",
                      "5 seeds x 20 epochs, 18230 collectives: ~755 s -> 3 seeds x 1 epoch, 552: ~50 s."],
            "fix": ["--steps 3 --precise_batches 2",
                    "6 worlds, 50 steps per check: ~119 s (109 s seen) -> 3 steps, PreciseBN over 2 batches (the test's setting): ~61 s (six worlds are most of it)."],
        },
        "stalls_nccl": {},
        "evidence": [
            ["small_batch_bn_sync_bn", "fixes/pytorch/sync_bn_cases.py", "1.13,2.15", "fixes", "pytorch"],
            ["small_batch_bn_no_group", "fixes/pytorch/sync_bn_no_group.py", "1.13,2.15", "fixes", "no_group"],
            ["small_batch_bn_bn_eval", "repro/pytorch/bn_eval_mode.py", "1.13,2.15", "repro", "pytorch"],
        ],
    },
    {
        "name": "autograd_lost_gather",
        "seed": "002",
        "judging_readmes": ["repro"],
        "regen": [
            ["repro", "", "--sweep", False],
            ["fix", "", "--sweep", False],
        ],
        "shared_gpu": {
            "repro": ["--steps 40", "300 steps, 3676 collectives: ~162 s (killed at 170 s) -> 40 steps, 556: ~41 s."],
            "fix": ["--steps 40", "300 steps, 5257 collectives: ~224 s (killed at 170 s) -> 40 steps, 837: ~52 s."],
        },
        "stalls_nccl": {},
        "evidence": [
            ["autograd_lost_gather_diff_gather", "fixes/pytorch/diff_gather.py", "1.13,2.15", "fixes", "pytorch"],
            ["autograd_lost_gather_memory", "fixes/pytorch/gather_memory.py", "1.13,2.15", "fixes", "memory"],
            ["autograd_lost_gather_torchmetrics", "repro/pytorch/torchmetrics_loss.py", "2.15", "repro", "torchmetrics"],
        ],
    },
]

PAIR_NAMES = [p["name"] for p in PAIR_REGISTRY]

# The registered pair binaries: `bazel run //:suite` runs each with its
# default flags (CPU, Gloo) and prints one summary table.
PAIRS = [
    "//%s/%s" % (kind, p["name"])
    for p in PAIR_REGISTRY
    for kind in ["repro", "fixes"]
]

# Every pair README, for the targets that read them.
PAIR_READMES = [
    "//%s/%s:README.md" % (kind, p["name"])
    for p in PAIR_REGISTRY
    for kind in ["repro", "fixes"]
]

# The files of the PyTorch evidence scripts and the READMEs they write
# tables into, as labels (tools/vs_pytorch).
PAIR_EVIDENCE_FILES = [
    "//%s/%s:%s" % (e[1].split("/")[0], p["name"], e[1][len(e[1].split("/")[0]) + 1:])
    for p in PAIR_REGISTRY
    for e in p["evidence"]
]

# Each pair's report spec and README table specs (analysis/registry.py
# reads them), as labels for the targets that read them.
PAIR_SPEC_FILES = [
    "//repro/%s:report.json" % p["name"]
    for p in PAIR_REGISTRY
] + [
    "//%s/%s:tables.json" % (kind, p["name"])
    for p in PAIR_REGISTRY
    for kind in ["repro", "fixes"]
]

def pair_files(extra = []):
    """In a pair's BUILD (repro/NAME or fixes/NAME): exports the files the
    tools around it read, by the names every pair uses: README.md, its
    tables.json, the repro's report.json, its PyTorch evidence scripts
    (pytorch/*.py), and `extra`."""
    native.exports_files(
        ["README.md", "tables.json"] + native.glob(["report.json", "pytorch/*.py"]) + extra,
    )
