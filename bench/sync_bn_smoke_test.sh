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
# The default on Gloo is the host path, and the records say so.
grep -q '"ddp_norm_device": "host"' "$out" || { echo "JSON lacks ddp_norm_device host"; exit 1; }
grep -q '"shared_gpu": 0' "$out" || { echo "JSON rows lack shared_gpu 0"; exit 1; }
grep -q '"ddp_shared_gpu": "no"' "$out" || { echo "JSON lacks ddp_shared_gpu no"; exit 1; }
grep -q "check_rel_err" "$out" && { echo "host rows carry a device check"; exit 1; }

# The device path on the emulated device (host memory standing in for the
# GPU's, the kernels' arithmetic) over Gloo: device-resident tensors, SyncBN's
# collectives and the floor on device buffers, each case checked against
# core/nn before timing (the bench fails the run past the tolerance).
dout="${TEST_TMPDIR}/sync_bn_emulated.json"
"$bin" --world_size 2 --channels 16,64 --batch 2 --target_s 0.001 --reps 2 --norm_device emulated \
  --benchmark_out="$dout" --benchmark_out_format=json >"$log" 2>&1 || { cat "$log"; exit 1; }
cat "$log"
grep -q '"ddp_norm_device": "emulated"' "$dout" || { echo "JSON lacks ddp_norm_device emulated"; exit 1; }
grep -q "^norm_device emulated (device-resident" "$log" || { echo "summary lacks norm_device"; exit 1; }
grep -q "overhead x[0-9.]* \[[0-9.]*, [0-9.]*\]" "$log" || { echo "emulated summary lacks the spread"; exit 1; }
# Same formula, same traffic as on the host: 392 bytes received per step at C = 16.
grep -q '"bytes_recv": 3.92' "$dout" || { echo "emulated JSON lacks bytes_recv 392"; exit 1; }
# Every bn / sync_bn / group_norm row (2 shapes x 3 methods x 2 reps; not
# the floor) was checked, each within core/device's float tolerance (1e-5,
# device_tolerance.h).
errs="$(grep -o '"check_rel_err": [0-9.e+-]*' "$dout" | sed 's/.*: //')"
[ "$(echo "$errs" | wc -l)" = 12 ] || { echo "expected 12 check_rel_err, got: $errs"; exit 1; }
echo "$errs" | awk '{ if (!($1 >= 0 && $1 <= 1e-5)) { print "check_rel_err over 1e-5: " $1; bad = 1 } } END { exit bad }'
# The kernels' own time (Device spans) on every norm row: positive and
# within the step that holds it (both the slowest rank's median).
awk -F': ' '/"kernel_us"/ { k = $2 + 0; have = 1 }
  /"median_us"/ { if (have) { n++; if (!(k > 0 && k <= $2 + 0)) { print "kernel_us " k " not in (0, median_us " $2 "]"; bad = 1 } } have = 0 }
  END { if (n != 12) { print "expected 12 kernel_us, got " n; bad = 1 } exit bad }' "$dout" || exit 1
# What crosses per step is the parameters only: at C = 16, BN's forward
# uploads gamma, beta, running stats, count (4C + 1 = 65 floats = 260 B).
grep -q '"h2d_bytes": 2.6' "$dout" || { echo "emulated JSON lacks h2d_bytes 260"; grep h2d_bytes "$dout"; exit 1; }
grep -q '"shared_gpu": 0' "$dout" || { echo "emulated rows lack shared_gpu 0"; exit 1; }

# Bad flag values: exit 2 with the flag's name.
for bad in "--world_size 0" "--reps 0" "--sched fifo" "--norm_device gpu" "--norm_device cuda"; do
  set +e
  "$bin" $bad >/dev/null 2>"$log"; rc=$?
  set -e
  [ "$rc" = 2 ] || { echo "$bad: expected exit 2, got $rc"; exit 1; }
  flag="${bad%% *}"
  grep -q -- "${flag#--}" "$log" || { echo "$bad: error does not name the flag"; cat "$log"; exit 1; }
done
echo PASS
