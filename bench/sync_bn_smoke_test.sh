#!/bin/bash
# Runs bench/sync_bn on 2 ranks with tiny shapes and checks its outputs.
set -euo pipefail
bin="$1"
out="${TEST_TMPDIR}/sync_bn.json"
log="${TEST_TMPDIR}/sync_bn.log"
"$bin" --world_size 2 --channels 16 --batch 2 --target_s 0.001 \
  --benchmark_out="$out" --benchmark_out_format=json >"$log" 2>&1 || { cat "$log"; exit 1; }
cat "$log"
for name in bn/C:16/N:2 sync_bn/C:16/N:2 group_norm/C:16/N:2 comm_floor/C:16/N:2; do
  grep -q "$name" "$log" || { echo "missing benchmark $name"; exit 1; }
done
grep -q "overhead x" "$log" || { echo "missing summary line"; exit 1; }
grep -q '"name": "sync_bn/C:16/N:2/HW:8x8/iterations:' "$out" || { echo "JSON lacks sync_bn"; exit 1; }
# 2 ranks, C = 16, float: (2 x 33 + 32) x 4 = 392 bytes received per step.
grep -q '"bytes_recv": 3.92' "$out" || { echo "JSON lacks bytes_recv 392"; grep bytes_recv "$out"; exit 1; }
# Bad flag value: exit 2 with the flag's name.
set +e
"$bin" --world_size 0 >/dev/null 2>"$log"; rc=$?
set -e
[ "$rc" = 2 ] || { echo "expected exit 2, got $rc"; exit 1; }
grep -q world_size "$log" || { echo "error does not name the flag"; cat "$log"; exit 1; }
echo PASS
