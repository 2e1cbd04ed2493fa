#!/usr/bin/env bash
# Regenerates the tables of repro/wrong_all_gather/README.md from
# results/wrong_all_gather_repro.json (run from the repository root).
set -euo pipefail
rec=results/wrong_all_gather_repro.json
t="python3 analysis/pair_table.py --records $rec --update repro/wrong_all_gather/README.md"
$t --id by_n --where kind=repro --group-by variant,config.n \
  --columns 'variant,config.n,count,median(reference.auc),min(measured.auc_min),max(measured.auc_max),min(measured.auc_error_min),median(measured.auc_error_median),max(measured.auc_error_max),max(measured.max_abs_ap_error),verdicts'
$t --id by_w --where config.n=1003 --group-by variant,world_size \
  --columns 'variant,world_size,count,min(measured.auc_error_min),median(measured.auc_error_median),max(measured.auc_error_max),max(measured.closed_form_gap),verdicts'
$t --id raw --where variant=raw_unequal --where config.batch_size=32 \
  --columns 'world_size,config.n,measured.runs,measured.silent_runs,measured.failed_runs,measured.rank0_not_peer_data_max,measured.rank0_peer_values,measured.first_gather,measured.outcome,verdict'
# PyTorch 1.13's gloo on the same split (pytorch/unequal_all_gather.py).
/usr/bin/python3 repro/wrong_all_gather/pytorch/unequal_all_gather.py \
  --table results/vs_pytorch/wrong_all_gather_unequal.json \
  --update repro/wrong_all_gather/README.md --id pytorch
