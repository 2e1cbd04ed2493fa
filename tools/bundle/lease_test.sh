#!/usr/bin/env bash
# lease.sh on a fake bundle whose run_all.sh writes a record, prints its
# flags and runs past the first packing (20 s): the archive is in $OUT while
# it still runs, whole at the end with the console and the record, and the
# runner's exit status comes back; bad flags are exit 2.
set -euo pipefail
lease="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
cd "$TEST_TMPDIR"
mkdir -p src/ddp-bundle out
cat >src/ddp-bundle/run_all.sh <<'FAKE'
#!/usr/bin/env bash
echo "fake run_all $*"
out="$2"
mkdir -p "$out/records"
echo '[{"verdict": "reproduced"}]' >"$out/records/repro_bug.json"
sleep 24
echo "fake run_all done"
exit 3
FAKE
chmod +x src/ddp-bundle/run_all.sh
tar czf bundle.tar.gz -C src ddp-bundle

set +e
OUT="$TEST_TMPDIR/out" bash "$lease" --bundle bundle.tar.gz --budget 100 --jobs 3 -- --bench >console.txt 2>&1 &
pid=$!
sleep 22
[[ -f out/gpu-run.tar.gz ]] || fail "no archive while the run still goes on"
listing="$(tar tzf out/gpu-run.tar.gz)"
grep -q 'gpu/records/repro_bug.json' <<<"$listing" || fail "mid-run archive lacks the record: $listing"
wait "$pid"
rc=$?
set -e
cat console.txt
[[ $rc -eq 3 ]] || fail "exit $rc, want the runner's 3"
grep -q '^fake run_all --out /tmp/lease\.[^ ]*/gpu --jobs 3 --budget 100 --timeout 120 --bench$' console.txt || fail "flags passed on"
grep -q '^lease: run_all exit 3; archive .*/out/gpu-run.tar.gz' console.txt || fail "last line"
mkdir check && tar xzf out/gpu-run.tar.gz -C check
grep -q 'fake run_all done' check/gpu/console.txt || fail "final archive lacks the whole console"
[[ ! -e out/gpu-run.tar.gz.part ]] || fail "a partial archive was left"

for args in "--budget 0" "--jobs 17" "--timeout x" "--frob" "--bundle /nonexistent"; do
  set +e
  msg="$(OUT="$TEST_TMPDIR/out" bash "$lease" $args 2>&1)"
  rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "'$args' exited $rc, want 2"
  grep -q -- "${args%% *}" <<<"$msg" || fail "'$args' message: $msg"
done
set +e
msg="$(env -u OUT bash "$lease" --bundle bundle.tar.gz 2>&1)"
rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q 'OUT must name a folder' <<<"$msg" || fail "no \$OUT: $rc $msg"
echo "lease_test: all checks passed"
