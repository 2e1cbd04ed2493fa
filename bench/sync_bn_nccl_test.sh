#!/bin/bash
# bench/sync_bn under NCCL with the default --norm_device (auto = cuda): the
# layers on the GPU, device-resident tensors, collectives and the floor on
# device buffers; each case checked against core/nn before timing. Needs a
# GPU: without one the ranks refuse NCCL and the test skips with that reason
# (fails instead under DDP_PITFALLS_REQUIRE_GPU=1).
set -euo pipefail
# The binary: the argument (bazel test), else its runfiles path from the
# runfiles root (tools/bundle/run_all.sh runs gpu tests there, without arguments).
bin="${1:-bench/sync_bn}"
out="${TEST_TMPDIR}/sync_bn_nccl.json"
log="${TEST_TMPDIR}/sync_bn_nccl.log"
set +e
"$bin" --backend nccl --world_size 2 --channels 16,256 --batch 2 --target_s 0.001 --reps 2 \
  --benchmark_out="$out" --benchmark_out_format=json >"$log" 2>&1
rc=$?
set -e
if ((rc != 0)); then
  why="$(grep -m1 -oE "backend '?nccl'? needs a GPU.*|no usable GPU.*|cudaGetDeviceCount.*" "$log" || true)"
  if [[ -n "$why" && "${DDP_PITFALLS_REQUIRE_GPU:-0}" != 1 ]]; then
    echo "skipped, no GPU: $why"
    exit 0
  fi
  cat "$log"
  echo "sync_bn --backend nccl failed (rc $rc)"
  exit 1
fi
cat "$log"
grep -q '"ddp_norm_device": "cuda"' "$out" || { echo "JSON lacks ddp_norm_device cuda (auto under nccl)"; exit 1; }
grep -q "^norm_device cuda (device-resident" "$log" || { echo "summary lacks norm_device cuda"; exit 1; }
# 2 shapes x 3 methods x 2 reps checked against core/nn within 1e-5.
errs="$(grep -o '"check_rel_err": [0-9.e+-]*' "$out" | sed 's/.*: //')"
[ "$(echo "$errs" | wc -l)" = 12 ] || { echo "expected 12 check_rel_err, got: $errs"; exit 1; }
echo "$errs" | awk '{ if (!($1 >= 0 && $1 <= 1e-5)) { print "check_rel_err over 1e-5: " $1; bad = 1 } } END { exit bad }'
# The kernels' own time (Device spans) on every norm row: positive and
# within the step that holds it (both the slowest rank's median).
awk -F': ' '/"kernel_us"/ { k = $2 + 0; have = 1 }
  /"median_us"/ { if (have) { n++; if (!(k > 0 && k <= $2 + 0)) { print "kernel_us " k " not in (0, median_us " $2 "]"; bad = 1 } } have = 0 }
  END { if (n != 12) { print "expected 12 kernel_us, got " n; bad = 1 } exit bad }' "$out" || exit 1
grep -q '"ddp_timing": "steady clock, step ends with Device::Synchronize; kernel_us: CUDA events' "$out" ||
  { echo "JSON does not say kernel_us comes from CUDA events"; exit 1; }
grep -q '"bytes_recv": 3.92' "$out" || { echo "JSON lacks bytes_recv 392"; exit 1; }
# Shared GPUs (the launcher's rule) are said in the context, the rows and the summary, alike.
if grep -q '"ddp_shared_gpu": "yes' "$out"; then
  grep -q '"label": "shared_gpu"' "$out" || { echo "shared run without shared_gpu labels"; exit 1; }
  grep -q '"shared_gpu": 1' "$out" || { echo "shared run without shared_gpu 1"; exit 1; }
  grep -q "^shared_gpu: the 2 ranks share" "$log" || { echo "summary does not say shared_gpu"; exit 1; }
else
  grep -q '"shared_gpu": 1' "$out" && { echo "rows say shared_gpu, context does not"; exit 1; }
  grep -q "^shared_gpu:" "$log" && { echo "summary says shared_gpu, context does not"; exit 1; }
fi
echo PASS
