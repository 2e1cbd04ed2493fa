#!/usr/bin/env bash
# Regenerates the tables of repro/mean_of_means/README.md from
# results/mean_of_means_repro.json (run from the repository root).
set -euo pipefail
t="python3 analysis/pair_table.py --records results/mean_of_means_repro.json --update repro/mean_of_means/README.md"
$t --id by_sharding --group-by variant,config.sharding \
  --columns 'variant,config.sharding,count,median(reference.accuracy),min(measured.error),median(measured.error),max(measured.error),max(measured.max_loss_abs_error),max(measured.closed_form_gap),verdicts'
$t --id by_n --group-by variant,config.n \
  --columns 'variant,config.n,count,min(measured.error),median(measured.error),max(measured.error),verdicts'
