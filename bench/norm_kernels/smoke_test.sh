#!/bin/bash
# bench/norm_kernels without a GPU (here): exactly one line on stderr, the
# refusal tools/bundle/run_all.sh's gpu_refusal() recognises, exit 2, no
# JSON written. With a GPU: a tiny run (one shape, two rows, one repetition)
# writes Google-Benchmark JSON with the rows' counters. Either way: --help
# exits 0, bad flags exit 2 naming the flag, before any GPU is touched.
set -u
bin="$1"
out="$TEST_TMPDIR/out.json"
err="$TEST_TMPDIR/err.txt"
fail() { echo "FAIL: $*"; cat "$err" 2>/dev/null; exit 1; }

"$bin" --help >"$TEST_TMPDIR/help.txt" 2>&1 || fail "--help exited $?"
grep -q -- "--shapes" "$TEST_TMPDIR/help.txt" || fail "--help does not list --shapes"

bad() {  # bad FLAG... : exit 2 and a message naming what is wrong
  local want="$1"; shift
  "$bin" "$@" >/dev/null 2>"$err"
  local rc=$?
  [[ $rc -eq 2 ]] || fail "$* exited $rc, want 2"
  grep -q -- "$want" "$err" || fail "$*: message lacks '$want': $(cat "$err")"
}
bad "--shapes" --shapes 2x5x8x8
bad "--shapes" --shapes 2x16x8
bad "--dtypes" --dtypes half
bad "--rows" --rows bn_stats,nope
bad "--reps" --reps 0
bad "selects none" --benchmark_filter=nothing_is_called_this
bad "benchmark_repetitions" --benchmark_repetitions=3
bad "--benchmark_format" --benchmark_format=xml

# --benchmark_list_tests needs no GPU: the names in registration order.
"$bin" --shapes 2x16x8x8 --rows bn_stats,gn_fwd_bwd --dtypes float --reps 2 --benchmark_list_tests \
  >"$TEST_TMPDIR/list.txt" 2>"$err" || fail "list_tests exited $?"
want=$'norm_kernels/float/bn_stats/N:2/C:16/HW:8x8/rep:0\nnorm_kernels/float/gn_fwd_bwd/N:2/C:16/HW:8x8/rep:0\nnorm_kernels/float/bn_stats/N:2/C:16/HW:8x8/rep:1\nnorm_kernels/float/gn_fwd_bwd/N:2/C:16/HW:8x8/rep:1'
[[ "$(cat "$TEST_TMPDIR/list.txt")" == "$want" ]] || fail "list: $(cat "$TEST_TMPDIR/list.txt")"

"$bin" --shapes 2x16x8x8 --rows bn_stats,bn_fwd_bwd --dtypes float --reps 1 --batches 2 --batch_us 50 \
  --benchmark_out="$out" --benchmark_out_format=json >"$TEST_TMPDIR/stdout.txt" 2>"$err"
rc=$?
if [[ $rc -eq 2 ]]; then
  # No GPU: the one-line refusal, in run_all.sh's words (its gpu_refusal regex).
  [[ $(grep -vc 'warning: host code built without optimization' "$err") -eq 1 ]] \
    || fail "want one refusal line, got: $(cat "$err")"
  grep -qE -- "--backend nccl: .*|backend '?nccl'? needs a GPU.*" "$err" \
    || fail "refusal not in run_all.sh's words: $(cat "$err")"
  grep -q "none is usable here (" "$err" || fail "refusal gives no reason: $(cat "$err")"
  [[ ! -e "$out" ]] || fail "a refused run wrote $out"
  echo "no GPU here: refused as run_all.sh expects: $(grep -v warning "$err")"
  exit 0
fi
[[ $rc -eq 0 ]] || fail "tiny GPU run exited $rc"
for key in '"ddp_gpu"' '"ddp_cuda"' '"ddp_commit"' '"ddp_device_l2_bytes"' \
    '"name": "norm_kernels/float/bn_fwd_bwd/N:2/C:16/HW:8x8/rep:0' '"frac_of_copy"' '"copy_us"'; do
  grep -q -- "$key" "$out" || fail "JSON lacks $key"
done
# bn_fwd_bwd at 2x16x8x8 float moves (8E + 22C) * 4 = (8 * 2048 + 22 * 16) * 4 = 66944 bytes
# (reads 6E + 15C, writes 2E + 7C: traffic_test).
grep -qE '"bytes": 6\.69440*e\+04,' "$out" || fail "bytes of bn_fwd_bwd: $(grep '"bytes"' "$out")"
grep -q "^summary" "$TEST_TMPDIR/stdout.txt" || fail "no summary"
echo "GPU run: $(grep -c '"run_name"' "$out") rows written"
