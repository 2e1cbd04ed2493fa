#!/bin/bash
# Runs bench/sync_bn on 2 ranks with tiny shapes and checks its outputs.
set -euo pipefail
bin="$1"
out="${TEST_TMPDIR}/sync_bn.json"
log="${TEST_TMPDIR}/sync_bn.log"
"$bin" --world_size 2 --channels 16 --batch 2 --target_s 0.001 --reps 2 \
  --benchmark_out="$out" --benchmark_out_format=json >"$log" 2>&1 || { cat "$log"; exit 1; }
cat "$log"
for name in bn/C:16/N:2 sync_bn/C:16/N:2 group_norm/C:16/N:2 comm_floor/C:16/N:2; do
  grep -q "$name" "$log" || { echo "missing benchmark $name"; exit 1; }
done
grep -q "overhead x" "$log" || { echo "missing summary line"; exit 1; }
for rep in 0 1; do
  grep -q "\"name\": \"sync_bn/C:16/N:2/HW:8x8/rep:$rep/iterations:" "$out" \
    || { echo "JSON lacks sync_bn rep $rep"; exit 1; }
done
# Interleaved: repetition 0 of every method before repetition 1 of any.
order="$(grep -o '"name": "[a-z_]*/C:16/N:2/HW:8x8/rep:[0-9]' "$out" | sed 's/.*"name": "//' | tr '\n' ' ')"
[ "$order" = "bn/C:16/N:2/HW:8x8/rep:0 sync_bn/C:16/N:2/HW:8x8/rep:0 group_norm/C:16/N:2/HW:8x8/rep:0 comm_floor/C:16/N:2/HW:8x8/rep:0 bn/C:16/N:2/HW:8x8/rep:1 sync_bn/C:16/N:2/HW:8x8/rep:1 group_norm/C:16/N:2/HW:8x8/rep:1 comm_floor/C:16/N:2/HW:8x8/rep:1 " ] \
  || { echo "not interleaved: $order"; exit 1; }
for key in median_us comm_us load1 ddp_commit ddp_oversubscribed ddp_reps ddp_loadavg_start ddp_tcp_congestion; do
  grep -q "\"$key\"" "$out" || { echo "JSON lacks $key"; exit 1; }
done
grep -q "overhead x[0-9.]* \[[0-9.]*, [0-9.]*\]" "$log" || { echo "summary lacks the spread"; exit 1; }
# 2 ranks, C = 16, float: (2 x 33 + 32) x 4 = 392 bytes received per step.
grep -q '"bytes_recv": 3.92' "$out" || { echo "JSON lacks bytes_recv 392"; grep bytes_recv "$out"; exit 1; }
# Bad flag values: exit 2 with the flag's name.
for bad in "--world_size 0" "--reps 0" "--sched fifo"; do
  set +e
  "$bin" $bad >/dev/null 2>"$log"; rc=$?
  set -e
  [ "$rc" = 2 ] || { echo "$bad: expected exit 2, got $rc"; exit 1; }
  flag="${bad%% *}"
  grep -q -- "${flag#--}" "$log" || { echo "$bad: error does not name the flag"; cat "$log"; exit 1; }
done
echo PASS
