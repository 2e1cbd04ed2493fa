#!/usr/bin/env bash
# A pair binary whose rendezvous store cannot be written: exit 2 with one
# message naming the store, and no record (core/launch/README.md, "Pair
# binaries"). Issue 59 (5): with TMPDIR on a full tmpfs, mean_of_means wrote
# 12 `error` records over --json and exited 1 (an empty probe file could be
# created; the first key's bytes could not).
set -u
bin="$1"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# check NAME CODE LOG JSON: exit 2, the store named, the old --json untouched.
check() {
  [[ $2 == 2 ]] || fail "$1: exit $2, want 2: $(tail -5 "$3")"
  grep -q "rendezvous directory '.*ddp-rdzv-[^']*' cannot be written: $4" "$3" ||
    fail "$1: no message naming the store: $(tail -5 "$3")"
  [[ "$(cat "$5")" == "OLD" ]] || fail "$1: --json was written: $(head -c 300 "$5")"
}

# The store is a fresh folder under $TEST_TMPDIR, else $TMPDIR: the
# commands run without TEST_TMPDIR.
# 1. Past RLIMIT_FSIZE (SIGXFSZ ignored: write() fails with EFBIG). Runs
#    anywhere; the --json file is on the same (limited) process, so only the
#    exit status and the message can tell here.
#    The log goes through a pipe: a file could not be written either.
echo OLD > "$tmp/limit.json"
(trap '' XFSZ; ulimit -f 0; exec env -u TEST_TMPDIR TMPDIR="$tmp" "$bin" --seeds 1 \
  --json "$tmp/limit.json") 2>&1 | cat > "$tmp/limit.log"
check "RLIMIT_FSIZE 0" "${PIPESTATUS[0]}" "$tmp/limit.log" "File too large" "$tmp/limit.json"

# 2. The issue's case: TMPDIR on a full 64 KiB tmpfs, --json elsewhere. A
#    private mount namespace (root only): nothing is left mounted.
if [[ $(id -u) == 0 ]] && unshare -m true 2>/dev/null; then
  mkdir -p "$tmp/full"
  echo OLD > "$tmp/full.json"
  unshare -m bash -c '
    mount -t tmpfs -o size=64k tmpfs "$1" || exit 99
    dd if=/dev/zero of="$1/fill" bs=4k count=100 2>/dev/null
    exec env -u TEST_TMPDIR TMPDIR="$1" "$2" --seeds 1 --json "$3"' _ "$tmp/full" "$bin" "$tmp/full.json" \
    > "$tmp/full.log" 2>&1
  code=$?
  if [[ $code == 99 ]]; then
    echo "skipped the full-tmpfs case: cannot mount tmpfs here"
  else
    check "full tmpfs" $code "$tmp/full.log" "No space left on device" "$tmp/full.json"
  fi
else
  echo "skipped the full-tmpfs case: needs root and unshare -m"
fi

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "PASS"
