#!/usr/bin/env bash
# Regenerates the table of fixes/mean_of_means/README.md from
# results/mean_of_means_fix.json (run from the repository root).
set -euo pipefail
python3 analysis/pair_table.py --records results/mean_of_means_fix.json \
  --update fixes/mean_of_means/README.md --id fix --group-by config.sharding,world_size \
  --columns 'config.sharding,world_size,count,max(measured.error),max(measured.max_loss_abs_error),max(measured.count_mismatch),measured.collectives,verdicts'
