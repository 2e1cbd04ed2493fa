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
  --columns 'world_size,config.n,measured.outcome,verdict'
