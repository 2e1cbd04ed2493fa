#!/usr/bin/env bash
# Every registered pair binary's --help states the --world_size it accepts
# (issue 35: repro/drop_last_hang's said 1..64 and then rejected 1): the
# lowest value --help allows passes the pair's own checks (the run then stops
# at an unwritable --json, which is checked next, exit 2 naming --json), and
# the value below it is exit 2 naming --world_size.
set -u
pairs_file="$1"
runfiles="$(cd "$(dirname "$pairs_file")" && pwd)"
mapfile -t pairs < "$pairs_file"
[ "${#pairs[@]}" -ge 2 ] || { echo "no pairs registered"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
for p in "${pairs[@]}"; do
  bin="$runfiles/$p"
  help=$("$bin" --help) || fail "$p --help: exit $?"
  range=$(grep -A1 -- "^  --world_size " <<<"$help" | sed -n 's/.*an integer in \([0-9]*\)\.\.\([0-9]*\).*/\1 \2/p')
  read -r lo hi <<<"$range"
  [ -n "${lo:-}" ] || fail "$p --help states no --world_size range: $help"
  msg=$(timeout 60 "$bin" --world_size "$lo" --json /nonexistent-folder/r.json 2>&1 >/dev/null)
  rc=$?
  [ "$rc" -eq 2 ] && grep -q -- "--json /nonexistent-folder/r.json" <<<"$msg" \
    || fail "$p --world_size $lo (allowed by --help: $lo..$hi): exit $rc: $msg"
  if [ "$lo" -gt 1 ]; then
    msg=$(timeout 60 "$bin" --world_size $((lo - 1)) 2>&1 >/dev/null)
    rc=$?
    [ "$rc" -eq 2 ] && grep -q -- "--world_size" <<<"$msg" \
      || fail "$p --world_size $((lo - 1)): exit $rc: $msg"
  fi
  echo "ok: $p: --world_size $lo..$hi"
done
echo PASS
