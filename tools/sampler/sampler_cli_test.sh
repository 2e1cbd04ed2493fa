#!/usr/bin/env bash
# Runs //tools:sampler: its output must equal torch's (golden file lines) and
# bad usage must exit 2 with a message naming the flag.
set -u
sampler="$1"
golden="$2"
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# sampler N W RANK SHUFFLE SEED DROP_LAST EPOCH : indices (from PyTorch 1.13).
check_golden() {
  local n=$1 w=$2 r=$3 sh=$4 seed=$5 dl=$6 ep=$7
  local want got
  want=$(grep -m1 "^sampler $n $w $r $sh $seed $dl $ep :" "$golden" | sed 's/^[^:]*: *//')
  [[ -n "$(grep -m1 "^sampler $n $w $r $sh $seed $dl $ep :" "$golden")" ]] ||
    { fail "no golden line for $*"; return; }
  local tf=(false true)
  got=$("$sampler" --n "$n" --world "$w" --rank "$r" --shuffle="${tf[$sh]}" --seed "$seed" \
        --drop_last="${tf[$dl]}" --epoch "$ep") || { fail "exit $? for $*"; return; }
  [[ "$got" == "$want" ]] || fail "golden mismatch for $*: got '${got:0:80}' want '${want:0:80}'"
}

check_golden 10 3 0 1 0 0 0
check_golden 10 3 2 1 42 1 7
check_golden 3 8 7 0 0 0 0
check_golden 7 4 1 1 -7 0 2
check_golden 1003 2 1 1 0 0 1
check_golden 1003 8 5 0 0 1 0
check_golden 0 5 4 1 0 0 0
check_golden 100 7 6 1 9223372036854775807 0 5

# PyTorch's DistributedSampler (checked against PyTorch 1.13: repro/missing_set_epoch/pytorch/sampler_vs_golden.py): N=1003, W=2 gives 502 indices on every rank.
count=$("$sampler" --n=1003 --world=2 --rank=0 | wc -w)
[[ "$count" == 502 ]] || fail "N=1003 W=2 gave $count indices, want 502"

"$sampler" --help | grep -q "usage: sampler" || fail "--help prints no usage"

# expect_usage_error EXPECTED_SUBSTRING ARGS...: exit 2 and stderr names it.
expect_usage_error() {
  local want="$1"; shift
  local err rc
  err=$("$sampler" "$@" 2>&1 >/dev/null); rc=$?
  [[ $rc == 2 ]] || fail "exit $rc (want 2) for: $*"
  [[ "$err" == *"$want"* ]] || fail "stderr for '$*' lacks '$want': $err"
}

expect_usage_error "--world must be an integer >= 1, got '0'" --n 5 --world 0 --rank 0
expect_usage_error "--rank must be an integer in [0, 1]" --n 5 --world 2 --rank 2
expect_usage_error "--rank must be an integer in [0, 1]" --n 5 --world 2 --rank -1
expect_usage_error "--n must be an integer >= 0, got '-3'" --n -3 --world 2 --rank 0
expect_usage_error "--n must be an integer >= 0, got '1.5'" --n 1.5 --world 2 --rank 0
expect_usage_error "--seed must be an integer" --n 5 --world 2 --rank 0 --seed abc
expect_usage_error "--shuffle must be true or false, got 'yes'" --n 5 --world 2 --rank 0 --shuffle=yes
expect_usage_error "unknown flag '--bogus'" --n 5 --world 2 --rank 0 --bogus 1
expect_usage_error "--n is required" --world 2 --rank 0
expect_usage_error "--epoch needs a value" --n 5 --world 2 --rank 0 --epoch
expect_usage_error "Overflow when unpacking long" --n 5 --world 2 --rank 0 \
  --seed=-9223372036854775808 --epoch=-1

if [[ $failures -ne 0 ]]; then echo "$failures failure(s)"; exit 1; fi
echo "all sampler CLI checks passed"
