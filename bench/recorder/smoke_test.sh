#!/usr/bin/env bash
# bench/recorder, briefly: every summary line appears, the JSON gets its
# summary, and the recorder stays far below a microsecond per collective
# (a store or file write per call would cost tens of microseconds; the real
# <= 100 ns figure is measured optimised, see bench/README.md).
set -u
bin="$1"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
out=$("$bin" --limit_ns 2000 --w2_repetitions 3 --w2_calls 20 --benchmark_repetitions=3 \
  --benchmark_min_time=0.01 --benchmark_out="$tmp/r.json" --benchmark_out_format=json 2>&1)
code=$?
echo "$out"
fail=0
[[ $code == 0 ]] || { echo "FAIL: exit $code"; fail=1; }
for want in "flight recorder, per collective recorded" "  allreduce " "limit 2000 ns: ok" \
    "Comm layer over a bare Gloo call, one-rank world" "overhead " \
    "two ranks, TCP loopback (3 interleaved repetitions of 20 calls" "results: $tmp/r.json"; do
  grep -qF -- "$want" <<< "$out" || { echo "FAIL: no line with '$want'"; fail=1; }
done
grep -q '"recorder_ns"' "$tmp/r.json" || { echo "FAIL: no summary in the JSON"; fail=1; }
grep -q '"benchmarks"' "$tmp/r.json" || { echo "FAIL: not Google Benchmark JSON"; fail=1; }
"$bin" --limit_ns 0 > /dev/null 2>&1; [[ $? == 2 ]] || { echo "FAIL: bad --limit_ns not exit 2"; fail=1; }
exit $fail
