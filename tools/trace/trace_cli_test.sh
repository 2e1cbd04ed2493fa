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
[[ $code == 2 && "$err" == *"no rank<R>.json"* ]] || fail "empty: exit $code '$err'"
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
"$trace" --help | grep -q "64 MiB" || fail "--help does not state the size cap"
err=$("$trace" "$skip" --comm nosuch 2>&1 >/dev/null); code=$?
[[ $code == 2 && "$err" == *"--comm"*"nosuch"*"comm0"* ]] || fail "--comm nosuch: exit $code '$err'"
"$trace" "$skip" --comm comm0 > /dev/null; [[ $? == 1 ]] || fail "--comm comm0: exit"

echo "$failures failure(s)"
[[ $failures == 0 ]]
