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

# --norm-peers: after the runner, the driver of ours and PyTorch's W = 1
# norm rows (a fake python here) gets the bundle's binary, its lib/ and
# libnccl's folder, the bundle's commit and a JSON path in the archive.
mkdir -p src/ddp-bundle/bin/bench/norm_kernels src/ddp-bundle/lib
printf 'ddp-pitfalls GPU-runner bundle\ncommit: 0123abc+dirty\n' >src/ddp-bundle/MANIFEST.txt
cat >src/ddp-bundle/run_all.sh <<'FAKE'
#!/usr/bin/env bash
if [[ "$1" == --find-nccl ]]; then echo "libnccl: /fake/nccl/lib (system)"; exit 0; fi
echo "fake run_all $*"
exit 0
FAKE
chmod +x src/ddp-bundle/run_all.sh
tar czf bundle2.tar.gz -C src ddp-bundle
cat >fake_python <<'FAKE'
#!/usr/bin/env bash
echo "fake python $* commit=$DDP_PITFALLS_COMMIT"
while [[ $# -gt 0 ]]; do [[ "$1" == --json ]] && echo '{"fake": true}' >"$2"; shift; done
FAKE
chmod +x fake_python
rm -f out/gpu-run.tar.gz
OUT="$TEST_TMPDIR/out" bash "$lease" --bundle bundle2.tar.gz --budget 30 --norm-peers 20 --python "$PWD/fake_python" >peers.txt 2>&1 ||
  fail "--norm-peers run exited $?: $(cat peers.txt)"
cat peers.txt
grep -q 'fake python .*/bench/peers/torch_norm_gpu.py --ours_binary /tmp/lease\.[^ ]*/ddp-bundle/bin/bench/norm_kernels/norm_kernels --ours_lib_path /tmp/lease\.[^ ]*/ddp-bundle/lib:/fake/nccl/lib --require_gpu --json /tmp/lease\.[^ ]*/gpu/records/torch_norm_gpu.json commit=0123abc+dirty' peers.txt ||
  fail "the driver's command line"
grep -q '^lease: norm peers exit 0 (' peers.txt || fail "peers exit line"
listing="$(tar tzf out/gpu-run.tar.gz)"
grep -q 'gpu/records/torch_norm_gpu.json' <<<"$listing" && grep -q 'gpu/norm_gpu_table.md' <<<"$listing" || fail "peers output not archived: $listing"

for args in "--budget 0" "--jobs 17" "--timeout x" "--frob" "--bundle /nonexistent" "--norm-peers soon" "--python /nonexistent"; do
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
