#!/usr/bin/env bash
# Regenerates the table of fixes/wrong_all_gather/README.md from
# results/wrong_all_gather_fix.json (run from the repository root).
set -euo pipefail
python3 analysis/pair_table.py --records results/wrong_all_gather_fix.json \
  --update fixes/wrong_all_gather/README.md --id fix \
  --group-by variant,config.sharding,world_size \
  --columns 'variant,config.sharding,world_size,count,max(measured.error),max(measured.max_abs_ap_error),max(measured.count_errors),max(measured.undefined_seeds),verdicts'
