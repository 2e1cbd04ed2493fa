#!/usr/bin/env bash
# Runs every PyTorch evidence script on every PyTorch version and rewrites the
# README tables that quote their records (run from anywhere; works on the
# checkout it lives in).
#
#   tools/vs_pytorch/run_all.sh                    # every script, 1.13 and 2.15, then tables
#   tools/vs_pytorch/run_all.sh --versions 2.15 --only torch_debug_detail
#   tools/vs_pytorch/run_all.sh --tables           # only rewrite the README tables
#   tools/vs_pytorch/run_all.sh --no-tables        # only the records (tools/regen_all.sh:
#                                                  # a rewritten README would mark later records +dirty)
#
# Records: results/vs_pytorch/NAME.torchVERSION.json. Interpreters: 1.13 is
# /usr/bin/python3 (Debian's python3-torch: tools/setup.sh --dev), 2.15 is
# $TORCH215_PYTHON, default .venv-torch2.15/bin/python of this checkout
# (tools/setup.sh --torch2.15). A script whose stack lacks a package it
# needs (torchmetrics, pytorch-lightning: 2.15 only) is not run there.
# Takes about 75 minutes for both versions on 2 cores (tools/vs_pytorch/README.md). Nothing in
# bazel test //... runs this.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }

versions="1.13,2.15"
only=""
tables_only=0
no_tables=0
while [ $# -gt 0 ]; do
  case "$1" in
    --versions) versions="${2:?--versions needs a value}"; shift 2 ;;
    --only) only="${2:?--only needs a value}"; shift 2 ;;
    --tables) tables_only=1; shift ;;
    --no-tables) no_tables=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run_all.sh: unknown argument '$1' (allowed: --versions 1.13,2.15, --only NAME,..., --tables, --no-tables, --help)" >&2
       exit 2 ;;
  esac
done

# name | script | versions it runs on | README | table id
scripts=(
  "wrong_all_gather_unequal|repro/wrong_all_gather/pytorch/unequal_all_gather.py|1.13,2.15|repro/wrong_all_gather/README.md|pytorch"
  "wrong_all_gather_torchmetrics|repro/wrong_all_gather/pytorch/torchmetrics_auroc.py|2.15|repro/wrong_all_gather/README.md|torchmetrics"
  "wrong_all_gather_auc_curve|repro/wrong_all_gather/pytorch/auc_curve.py|1.13,2.15|repro/wrong_all_gather/README.md|auc_curve"
  "wrong_all_gather_torchmetrics_step_epoch|repro/wrong_all_gather/pytorch/torchmetrics_step_epoch.py|2.15|repro/wrong_all_gather/README.md|torchmetrics_step_epoch"
  "drop_last_hang_timeout|repro/drop_last_hang/pytorch/uneven_steps_timeout.py|1.13,2.15|repro/drop_last_hang/README.md|pytorch"
  "drop_last_hang_join|fixes/drop_last_hang/pytorch/join_divide.py|1.13,2.15|fixes/drop_last_hang/README.md|pytorch"
  "drop_last_hang_final_barrier|fixes/drop_last_hang/pytorch/final_barrier.py|1.13,2.15|fixes/drop_last_hang/README.md|final_barrier"
  "drop_last_hang_find_unused|fixes/drop_last_hang/pytorch/find_unused.py|1.13,2.15|fixes/drop_last_hang/README.md|find_unused"
  "torch_debug_detail|tools/vs_pytorch/checked_vs_detail/detail.py|1.13,2.15|core/comm/README.md|detail"
  "missing_set_epoch_sampler|repro/missing_set_epoch/pytorch/sampler_vs_golden.py|1.13,2.15|repro/missing_set_epoch/README.md|pytorch"
  "small_batch_bn_sync_bn|fixes/small_batch_bn/pytorch/sync_bn_cases.py|1.13,2.15|fixes/small_batch_bn/README.md|pytorch"
  "small_batch_bn_no_group|fixes/small_batch_bn/pytorch/sync_bn_no_group.py|1.13,2.15|fixes/small_batch_bn/README.md|no_group"
  "small_batch_bn_bn_eval|repro/small_batch_bn/pytorch/bn_eval_mode.py|1.13,2.15|repro/small_batch_bn/README.md|pytorch"
  "autograd_lost_gather_diff_gather|fixes/autograd_lost_gather/pytorch/diff_gather.py|1.13,2.15|fixes/autograd_lost_gather/README.md|pytorch"
  "autograd_lost_gather_memory|fixes/autograd_lost_gather/pytorch/gather_memory.py|1.13,2.15|fixes/autograd_lost_gather/README.md|memory"
  "mean_of_means_lightning|repro/mean_of_means/pytorch/lightning_accumulator.py|2.15|repro/mean_of_means/README.md|pytorch_lightning"
  "autograd_lost_gather_torchmetrics|repro/autograd_lost_gather/pytorch/torchmetrics_loss.py|2.15|repro/autograd_lost_gather/README.md|torchmetrics"
)

python_for() {
  case "$1" in
    1.13) echo /usr/bin/python3 ;;
    2.15) echo "${TORCH215_PYTHON:-$root/.venv-torch2.15/bin/python}" ;;
    *) echo "run_all.sh: --versions: unknown version '$1' (allowed: 1.13, 2.15)" >&2; exit 2 ;;
  esac
}

selected() {  # name
  [ -z "$only" ] && return 0
  case ",$only," in *",$1,"*) return 0 ;; esac
  return 1
}

if [ "$tables_only" = 0 ]; then
  for v in ${versions//,/ }; do
    py="$(python_for "$v")"
    if ! "$py" -c 'import torch' >/dev/null 2>&1; then
      echo "run_all.sh: $py cannot import torch (PyTorch $v: see tools/vs_pytorch/README.md)" >&2
      exit 1
    fi
    for row in "${scripts[@]}"; do
      IFS='|' read -r name script on _ _ <<<"$row"
      selected "$name" || continue
      case ",$on," in *",$v,"*) ;; *) continue ;; esac
      out="results/vs_pytorch/$name.torch$v.json"
      echo "== PyTorch $v: $name -> $out ($(date -u +%H:%M:%S))"
      "$py" "$script" --out "$out"
    done
  done
fi

if [ "$tables_only" = 1 ] && [ "$no_tables" = 1 ]; then
  echo "run_all.sh: --tables and --no-tables together do nothing" >&2
  exit 2
fi
[ "$no_tables" = 1 ] && exit 0

# README tables from whatever records exist, older version first.
for row in "${scripts[@]}"; do
  IFS='|' read -r name script on readme id <<<"$row"
  selected "$name" || continue
  files=()
  for v in 1.13 2.15; do
    [ -f "results/vs_pytorch/$name.torch$v.json" ] && files+=("results/vs_pytorch/$name.torch$v.json")
  done
  [ "${#files[@]}" -gt 0 ] || continue
  extra=()
  [ "$name" = torch_debug_detail ] && extra=(--ours results/vs_pytorch/checked_mode.json)
  /usr/bin/python3 "$script" --table "${files[@]}" "${extra[@]}" --update "$readme" --id "$id"
  echo "table $id of $readme <- ${files[*]}"
done
