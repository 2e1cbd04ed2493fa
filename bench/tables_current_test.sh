#!/bin/bash
# The README tables in bench/ are the ones the committed results/ give:
# bench/tables.py --update and bench/recorder/table.py --update, run on a
# copy, change nothing. A record regenerated without its tables (or a
# table edited by hand) fails here.
set -u
tables="$1"
recorder_table="$2"
shift 2
root="$TEST_TMPDIR/root"
mkdir -p "$root/results" "$root/bench/padding" "$root/bench/peers"
for f in "$@"; do
  case "$f" in
    */results/*.json | results/*.json) cp "$f" "$root/results/" ;;
    bench/README.md) cp "$f" "$root/bench/README.md" ;;
    bench/padding/README.md) cp "$f" "$root/bench/padding/README.md" ;;
    bench/peers/README.md) cp "$f" "$root/bench/peers/README.md" ;;
    *) echo "FAIL: unexpected input $f"; exit 1 ;;
  esac
done
BUILD_WORKSPACE_DIRECTORY="$root" /usr/bin/python3 "$tables" --update || { echo "FAIL: tables.py exited $?"; exit 1; }
/usr/bin/python3 "$recorder_table" "$root/results/bench_recorder.json" --update "$root/bench/README.md" \
  || { echo "FAIL: recorder/table.py exited $?"; exit 1; }
stale=0
for readme in bench/README.md bench/padding/README.md bench/peers/README.md; do
  if ! diff -u "$readme" "$root/$readme"; then
    echo "FAIL: $readme: its tables differ from what results/ gives (bench/tables.py --update;"
    echo "      bench/recorder/table.py results/bench_recorder.json --update bench/README.md)"
    stale=1
  fi
done
[ "$stale" = 0 ] && echo PASS
exit "$stale"
