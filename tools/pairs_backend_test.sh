#!/usr/bin/env bash
# Every registered pair binary with --backend nccl on a machine where NCCL
# cannot run (no GPU, or built without CUDA): exit 2 with one line naming the
# flag, at once, and no record file — never a variant recorded as run
# (`reproduced`/`exact`) when it could not run. Skips on a machine with a GPU.
set -u
pairs_file="$1" doctor="$2"
runfiles="$(cd "$(dirname "$pairs_file")" && pwd)"
mapfile -t pairs < "$pairs_file"
if "$doctor" 2>/dev/null | grep -q "^backend nccl: yes"; then
  echo "skipped: NCCL can run here (a GPU is visible): nothing to check"
  exit 0
fi
[ "${#pairs[@]}" -ge 2 ] || { echo "no pairs registered"; exit 1; }
for p in "${pairs[@]}"; do
  bin="$runfiles/$p"
  json="$TEST_TMPDIR/$(basename "$p").json"
  start=$(date +%s)
  timeout 120 "$bin" --backend nccl --json "$json" > "$TEST_TMPDIR/out" 2> "$TEST_TMPDIR/err"
  rc=$?
  [ "$rc" = 2 ] || { echo "FAIL: $p --backend nccl exited $rc, not 2"; cat "$TEST_TMPDIR/err"; exit 1; }
  [ "$(wc -l < "$TEST_TMPDIR/err")" = 1 ] || { echo "FAIL: $p: not one line:"; cat "$TEST_TMPDIR/err"; exit 1; }
  grep -q -- "--backend nccl" "$TEST_TMPDIR/err" || { echo "FAIL: $p: $(cat "$TEST_TMPDIR/err")"; exit 1; }
  [ ! -e "$json" ] || { echo "FAIL: $p wrote records"; exit 1; }
  [ $(( $(date +%s) - start )) -lt 20 ] || { echo "FAIL: $p took too long (ran variants?)"; exit 1; }
  echo "ok: $p: $(cat "$TEST_TMPDIR/err")"
done
echo PASS
