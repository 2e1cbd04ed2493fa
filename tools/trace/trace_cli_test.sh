#!/usr/bin/env bash
# //tools:trace on real dumps: a desynchronised world (exit 1, the verdict
# first, naming the rank that never entered and the call site), a healthy one
# dumped on SIGUSR1 (exit 0), --json, and bad input (exit 2 naming the file).
set -u
trace="$1"
make_dumps="$2"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$make_dumps" --help > "$tmp/help.log" 2>&1 || fail "make_dumps --help: exit $?"
grep -q '^usage: make_dumps DIR skip|agree$' "$tmp/help.log" || fail "make_dumps --help: $(cat "$tmp/help.log")"
"$make_dumps" "$tmp/x" both > /dev/null 2>&1; [[ $? -eq 2 ]] || fail "make_dumps DIR both: not exit 2"

skip="$tmp/skip"
"$make_dumps" "$skip" skip > "$tmp/skip.log" 2>&1 || fail "make_dumps skip: exit $?"
site=$(sed -n 's/^SITE //p' "$tmp/skip.log" | head -1)
[[ -n "$site" ]] || fail "no SITE line: $(cat "$tmp/skip.log")"
out=$("$trace" "$skip"); code=$?
[[ $code == 1 ]] || fail "skip: exit $code, want 1"
first=$(head -1 <<< "$out")
[[ "$first" == "collective #2 (allreduce float64 x1): rank 2 never entered; "* ]] ||
  fail "skip: verdict line '$first'"
[[ "$first" == *" at $site" ]] || fail "skip: verdict line '$first' lacks the call site $site"
grep -q '^class: missing ranks; culprit rank 2$' <<< "$out" || fail "skip: no class line: $out"
grep -q '^call sites first differ at #1: ranks \[0, 1\] at tools/trace/make_dumps.cc:[0-9]*; rank 2 at '"$site"'$' <<< "$out" ||
  fail "skip: no call-site divergence line: $out"
grep -q "^VERDICT $first" "$tmp/skip.log" || grep -q "^VERDICT collective #2 (allreduce float64 x1): rank 2 never entered" "$tmp/skip.log" ||
  fail "skip: the failing ranks printed no matching verdict: $(cat "$tmp/skip.log")"
json=$("$trace" --json "$skip"); code=$?
[[ $code == 1 ]] || fail "--json: exit $code"
grep -q '"class": "missing ranks"' <<< "$json" || fail "--json: no class: $json"
grep -q '"culprits": \[' <<< "$json" || fail "--json: no culprits: $json"
"$trace" --dir "$skip" --entries 0 > /dev/null; [[ $? == 1 ]] || fail "--dir: exit"

agree="$tmp/agree"
"$make_dumps" "$agree" agree > "$tmp/agree.log" 2>&1 || fail "make_dumps agree: exit $?"
out=$("$trace" "$agree"); code=$?
[[ $code == 0 ]] || fail "agree: exit $code, want 0: $out $(cat "$tmp/agree.log")"
[[ "$(head -1 <<< "$out")" == "no mismatch: 3 ranks agree on 1 communicator (comm0: 3 collectives), all completed" ]] ||
  fail "agree: '$(head -1 <<< "$out")'"

bad="$tmp/bad"
mkdir -p "$bad"
cp "$skip"/rank*.json "$bad"/
echo '{"format": "ddp-pitfalls flight recorder", "version": 1' > "$bad/rank1.json"
err=$("$trace" "$bad" 2>&1 >/dev/null); code=$?
[[ $code == 2 ]] || fail "corrupt: exit $code, want 2"
[[ "$err" == *"$bad/rank1.json: not JSON"* ]] || fail "corrupt: message '$err'"
empty="$tmp/empty"; mkdir -p "$empty"
err=$("$trace" "$empty" 2>&1); code=$?
[[ $code == 2 && "$err" == *"no dumps in it"* ]] || fail "empty: exit $code '$err'"
"$trace" > /dev/null 2>&1; [[ $? == 2 ]] || fail "no DIR: exit"
"$trace" --help > /dev/null; [[ $? == 0 ]] || fail "--help: exit"
err=$("$trace" "$skip" --entries 99999 2>&1); code=$?
[[ $code == 2 && "$err" == *"--entries"* ]] || fail "bad --entries: exit $code '$err'"
"$trace" "$skip" "$agree" > /dev/null 2>&1; [[ $? == 2 ]] || fail "two DIRs: exit"

# Hostile input (issue 35): a huge world_size in one small dump, a dump that
# is a link to an endless device or a FIFO, an unknown --comm. Each must end
# promptly with exit 2 and one line naming the file and field, or the flag.
for ws in 2147483647 10000000; do
  huge="$tmp/huge$ws"; mkdir -p "$huge"; cp "$skip"/rank*.json "$huge"/
  # Every file says it (consistent dumps of a world that large), top level only.
  for f in "$huge"/rank*.json; do sed -i '0,/"world_size": 3/s//"world_size": '"$ws"'/' "$f"; done
  err=$(timeout 20 "$trace" "$huge" 2>&1 >/dev/null); code=$?
  [[ $code == 2 ]] || fail "world_size $ws: exit $code, want 2 ($err)"
  [[ "$err" == *"$huge/rank"[0-2]".json: world_size: "* ]] || fail "world_size $ws: message '$err'"
done
zero="$tmp/zero"; mkdir -p "$zero"; cp "$skip"/rank*.json "$zero"/
rm "$zero/rank1.json"; ln -s /dev/zero "$zero/rank1.json"
err=$(timeout 20 "$trace" "$zero" 2>&1 >/dev/null); code=$?
[[ $code == 2 && "$err" == *"$zero/rank1.json: not a regular file"* ]] || fail "/dev/zero link: exit $code '$err'"
fifo="$tmp/fifo"; mkdir -p "$fifo"; cp "$skip"/rank*.json "$fifo"/
rm "$fifo/rank1.json"; mkfifo "$fifo/rank1.json"
err=$(timeout 20 "$trace" "$fifo" 2>&1 >/dev/null); code=$?
[[ $code == 2 && "$err" == *"$fifo/rank1.json: not a regular file"* ]] || fail "FIFO: exit $code '$err'"
big="$tmp/big"; mkdir -p "$big"; cp "$skip"/rank*.json "$big"/
truncate -s 65M "$big/rank1.json"
err=$(timeout 20 "$trace" "$big" 2>&1 >/dev/null); code=$?
[[ $code == 2 && "$err" == *"$big/rank1.json: larger than"* ]] || fail "65 MiB dump: exit $code '$err'"
deep="$tmp/deep"; mkdir -p "$deep"; cp "$skip"/rank*.json "$deep"/
{ printf '{"format": '; head -c 1000000 /dev/zero | tr '\0' '['; } > "$deep/rank1.json"
err=$(timeout 20 "$trace" "$deep" 2>&1 >/dev/null); code=$?
[[ $code == 2 && "$err" == *"$deep/rank1.json: JSON nested deeper than 64"* ]] || fail "nested JSON: exit $code '$err'"
"$trace" --help | grep -q "64 MiB" || fail "--help does not state the size cap"
err=$("$trace" "$skip" --comm nosuch 2>&1 >/dev/null); code=$?
[[ $code == 2 && "$err" == *"--comm"*"nosuch"*"comm0"* ]] || fail "--comm nosuch: exit $code '$err'"
"$trace" "$skip" --comm comm0 > /dev/null; [[ $? == 1 ]] || fail "--comm comm0: exit"

# PyTorch's own dumps (the committed corpus): exit 1 naming the culprit and
# the user's call site, 0 healthy, 2 bad input; --to-fr the other way.
corpus="tools/trace/testdata/fr_corpus"
out=$("$trace" "$corpus/extra_step"); code=$?
[[ $code == 1 ]] || fail "corpus extra_step: exit $code, want 1"
[[ "$(head -1 <<< "$out")" == "culprit rank 2: process group 0 (default_pg, ranks [0-2]), collective #4 (all_reduce): "* ]] ||
  fail "corpus extra_step: verdict '$(head -1 <<< "$out")'"
line=$(sed -n 's/.*"line": \([0-9]*\).*/\1/p' "$corpus/extra_step/truth.json")
[[ "$(head -1 <<< "$out")" == *"; rank 2 at /"*"/scenarios.py:$line (extra_step)" ]] ||
  fail "corpus extra_step: verdict lacks the culprit's call site scenarios.py:$line: $out"
"$trace" "$corpus/uneven_ok" > /dev/null; [[ $? == 0 ]] || fail "corpus uneven_ok: not healthy"
# Issue 45: a hang inside new_group([0, 1]) of a 3-rank gloo job, whose
# pg_config differs across ranks: read, the subgroup and its members named,
# rank 2 (outside it) not blamed; --comm 0 alone is healthy.
out=$("$trace" "$corpus/sub_skip"); code=$?
[[ $code == 1 ]] || fail "corpus sub_skip: exit $code, want 1: $out"
[[ "$(head -1 <<< "$out")" == "culprit rank 1: process group 1 (ranks [0, 1]), collective #3 (all_reduce): "* ]] ||
  fail "corpus sub_skip: verdict '$(head -1 <<< "$out")'"
"$trace" "$corpus/sub_skip" --comm 0 > /dev/null; [[ $? == 0 ]] || fail "corpus sub_skip --comm 0: not healthy"
"$trace" --json "$corpus/two_hung" | grep -q '"class": "missing"' || fail "corpus two_hung: --json findings"
"$trace" --json "$corpus/killed" | grep -q '"culprits": \[' || fail "corpus killed: --json"
err=$("$trace" "$corpus/stalled" --comm nosuch 2>&1 >/dev/null); code=$?
[[ $code == 2 && "$err" == *"--comm"*"allowed: 0"* ]] || fail "corpus --comm nosuch: exit $code '$err'"
trunc="$tmp/trunc"; mkdir -p "$trunc"; cp "$corpus"/stalled/nccl_trace_rank_* "$trunc"/
head -c 300 "$corpus/stalled/nccl_trace_rank_1" > "$trunc/nccl_trace_rank_1"
err=$("$trace" "$trunc" 2>&1 >/dev/null); code=$?
[[ $code == 2 && "$err" == *"$trunc/nccl_trace_rank_1: pickle truncated"* ]] || fail "truncated pickle: exit $code '$err'"
fr="$tmp/to_fr"
"$trace" "$skip" --to-fr "$fr" > /dev/null || fail "--to-fr: exit $?"
out=$("$trace" "$fr"); code=$?
[[ $code == 1 && "$(head -1 <<< "$out")" == "culprit rank 2: "* ]] || fail "--to-fr read back: exit $code '$out'"
"$trace" "$corpus/stalled" --to-fr "$tmp/x" > /dev/null 2>&1; [[ $? == 2 ]] || fail "--to-fr of PyTorch dumps: exit"

echo "$failures failure(s)"
[[ $failures == 0 ]]
