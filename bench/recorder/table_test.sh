#!/bin/bash
# bench/recorder/table.py: the table from a summary, the README block it
# rewrites between its markers (and nothing else), exit 2 without markers
# or on bad usage.
set -u
table="$1"
fixture="$2"
fail() { echo "FAIL: $*"; exit 1; }
out="$(/usr/bin/python3 "$table" "$fixture")" || fail "print exited $?"
grep -q '^| flight recorder, per collective (Enter + Exit, two clock reads) | .* | limit 100 ns (CPU time): ok |$' \
  <<<"$out" || fail "recorder row: $out"
grep -q '^Commit 0123456789ab+dirty, ' <<<"$out" || fail "commit line: $out"
readme="$TEST_TMPDIR/README.md"
printf 'top\n<!-- recorder:begin -->\nold\n<!-- recorder:end -->\nbottom\n' > "$readme"
/usr/bin/python3 "$table" "$fixture" --update "$readme" || fail "update exited $?"
grep -q old "$readme" && fail "old block kept"
[ "$(head -2 "$readme")" = "$(printf 'top\n<!-- recorder:begin -->')" ] || fail "head changed"
[ "$(tail -2 "$readme")" = "$(printf '<!-- recorder:end -->\nbottom')" ] || fail "tail changed"
grep -q '^| flight recorder, per collective' "$readme" || fail "table not written"
printf 'no markers\n' > "$readme"
/usr/bin/python3 "$table" "$fixture" --update "$readme" 2>/dev/null
[ $? -eq 2 ] || fail "missing markers should exit 2"
/usr/bin/python3 "$table" "$fixture" --bogus x 2>/dev/null
[ $? -eq 2 ] || fail "bad usage should exit 2"
echo PASS
