#!/usr/bin/env bash
# //tools:trace on folders whose inputs are ambiguous (issue 59): every
# input that two sources claim is refused (exit 2) naming both, and a stray
# file that is no dump changes nothing. Only the committed PyTorch corpus and
# the trace binary: no ranks are run.
set -u
trace="$1"
corpus="$2"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
skip_one="$corpus/skip_one"  # rank 1 never entered collective #6 of 4 ranks

# (4) One rank twice: rank 1's dump as nccl_trace_rank_01, rank 3's as
# nccl_trace_rank_1. It printed "healthy" and exit 0 (the _01 file dropped).
dup="$tmp/dup"; mkdir -p "$dup"
cp "$skip_one"/nccl_trace_rank_0 "$skip_one"/nccl_trace_rank_2 "$skip_one"/nccl_trace_rank_3 "$dup"/
cp "$skip_one"/nccl_trace_rank_1 "$dup"/nccl_trace_rank_01
cp "$skip_one"/nccl_trace_rank_3 "$dup"/nccl_trace_rank_1
out=$("$trace" "$dup" 2>&1); code=$?
[[ $code == 2 ]] || fail "one rank twice: exit $code, want 2: $out"
[[ "$out" == *"$dup/nccl_trace_rank_01 and $dup/nccl_trace_rank_1: both are rank 1"* ]] ||
  fail "one rank twice: message does not name both files: $out"

# (10) A stray ranks.json among PyTorch's dumps is no dump of the suite: the
# dumps are read as PyTorch's (it said "no rank<R>.json ... dumps in it").
stray="$tmp/stray"; mkdir -p "$stray"
cp "$skip_one"/nccl_trace_rank_* "$stray"/
echo '{"ranks": [0, 1, 2, 3]}' > "$stray/ranks.json"
out=$("$trace" "$stray" 2>&1); code=$?
[[ $code == 1 ]] || fail "stray ranks.json: exit $code, want 1: $out"
[[ "$(head -1 <<< "$out")" == "culprit rank 1: "* ]] || fail "stray ranks.json: verdict '$out'"

# Both kinds of dump in one folder: refused naming one of each.
both="$tmp/both"; mkdir -p "$both"
cp "$skip_one"/nccl_trace_rank_* "$both"/
echo '{}' > "$both/rank0.json"
out=$("$trace" "$both" 2>&1); code=$?
[[ $code == 2 ]] || fail "both kinds: exit $code, want 2: $out"
[[ "$out" == *"both the suite's dumps (rank0.json) and PyTorch's (nccl_trace_rank_0)"* ]] ||
  fail "both kinds: message '$out'"

# (12) An empty path is no path: `--to-fr ""` ran the analysis instead.
out=$("$trace" "$skip_one" --to-fr "" 2>&1); code=$?
[[ $code == 2 && "$out" == *"bad value '' for --to-fr"* ]] || fail "--to-fr '': exit $code '$out'"

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "PASS"
