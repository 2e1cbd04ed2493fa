#!/usr/bin/env bash
# Every registered pair binary honours SIGINT and SIGTERM (issue 35: repro/
# drop_last_hang kept running 5-10 s, exited 0 and wrote its records): sent
# once its ranks run, the binary exits 128 + signal within LIMIT seconds,
# says "interrupted by signal N: every rank stopped, no records written",
# writes no record file and leaves no rank behind.
set -u
pairs_file="$1"
limit="${2:-2}"
runfiles="$(cd "$(dirname "$pairs_file")" && pwd)"
mapfile -t pairs < "$pairs_file"
[ "${#pairs[@]}" -ge 2 ] || { echo "no pairs registered"; exit 1; }
# Job control: a background job's SIGINT is then not ignored (as in a shell
# where the user presses Ctrl-C).
set -m
fail() { echo "FAIL: $*"; exit 1; }
children() { cat /proc/"$1"/task/*/children 2>/dev/null; }
for p in "${pairs[@]}"; do
  bin="$runfiles/$p"
  for sig in INT TERM; do
    num=$(kill -l "$sig")
    json="$TEST_TMPDIR/records.json"
    rm -f "$json"
    "$bin" --json "$json" > "$TEST_TMPDIR/out" 2> "$TEST_TMPDIR/err" &
    pid=$!
    for _ in $(seq 1200); do
      [ -n "$(children "$pid")" ] && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    sleep 0.3  # the ranks are in their collectives
    ranks=$(children "$pid")
    [ -n "$ranks" ] || fail "$p: no ranks seen ($(tail -3 "$TEST_TMPDIR/err"))"
    start=$(date +%s%N)
    kill -"$sig" "$pid"
    wait "$pid"
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    [ "$rc" -eq $((128 + num)) ] || fail "$p SIG$sig: exit $rc, not $((128 + num)) ($ms ms): $(tail -5 "$TEST_TMPDIR/err")"
    [ "$ms" -le $((limit * 1000)) ] || fail "$p SIG$sig: took $ms ms, more than $limit s"
    grep -q "interrupted by signal $num: every rank stopped, no records written" "$TEST_TMPDIR/err" \
      || fail "$p SIG$sig: message: $(tail -3 "$TEST_TMPDIR/err")"
    [ ! -e "$json" ] || fail "$p SIG$sig: records written"
    sleep 0.5
    for r in $ranks; do
      if kill -0 "$r" 2>/dev/null && [ "$(cut -d' ' -f3 /proc/"$r"/stat 2>/dev/null)" != Z ]; then
        fail "$p SIG$sig: rank process $r left behind"
      fi
    done
    echo "ok: $p SIG$sig: exit $rc after $ms ms"
  done
done
echo PASS
