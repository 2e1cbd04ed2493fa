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
grep -q '^fake run_all --out /tmp/lease\.[^ ]*/gpu --jobs 3 --budget 100 --timeout 90 --bench$' console.txt || fail "flags passed on"
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
printf '#!/bin/sh\n' >src/ddp-bundle/bin/bench/norm_kernels/norm_kernels
chmod +x src/ddp-bundle/bin/bench/norm_kernels/norm_kernels
tar czf bundle2.tar.gz -C src ddp-bundle
# Prints its command line and writes the JSON it is asked for (--json:
# the norm peers' driver; --out: the PyTorch evidence script).
cat >fake_python <<'FAKE'
#!/usr/bin/env bash
echo "fake python $* commit=$DDP_PITFALLS_COMMIT${NCCL_DEBUG:+ nccl_debug=$NCCL_DEBUG}${NCCL_PROTO:+ proto=$NCCL_PROTO}"
while [[ $# -gt 0 ]]; do [[ "$1" == --json || "$1" == --out ]] && echo '{"fake": true}' >"$2"; shift; done
FAKE
chmod +x fake_python
rm -f out/gpu-run.tar.gz
OUT="$TEST_TMPDIR/out" bash "$lease" --bundle bundle2.tar.gz --budget 30 --norm-peers 20 --python "$PWD/fake_python" >peers.txt 2>&1 ||
  fail "--norm-peers run exited $?: $(cat peers.txt)"
cat peers.txt
grep -q 'fake python .*/bench/peers/torch_norm_gpu.py --ours_binary /tmp/lease\.[^ ]*/ddp-bundle/bin/bench/norm_kernels/norm_kernels --ours_lib_path /tmp/lease\.[^ ]*/ddp-bundle/lib:/fake/nccl/lib --budget 10 --require_gpu --json /tmp/lease\.[^ ]*/gpu/records/torch_norm_gpu.json commit=0123abc+dirty' peers.txt ||
  fail "the driver's command line"
grep -q '^lease: norm peers exit 0 (' peers.txt || fail "peers exit line"
listing="$(tar tzf out/gpu-run.tar.gz)"
grep -q 'gpu/records/torch_norm_gpu.json' <<<"$listing" && grep -q 'gpu/norm_gpu_table.md' <<<"$listing" || fail "peers output not archived: $listing"

# --dist-peers: the driver of ours and PyTorch's W-rank collective rows gets
# the bundle's bench/sync_bn and bench/padding, lib/ and libnccl's folder,
# NCCL at W = 2 with the small sizes, a --budget 30 s inside its bound, the
# commit and a JSON path in the archive; the table is made beside it.
mkdir -p src/ddp-bundle/bin/bench/padding
# A stage whose binary the bundle lacks (make_bundle.sh --only left it out)
# stops the call at once, exit 2, naming it; nothing runs.
printf '#!/bin/sh\n' >src/ddp-bundle/bin/bench/padding/padding
chmod +x src/ddp-bundle/bin/bench/padding/padding
printf 'selection: --only x: 1 of 49 targets\n' >>src/ddp-bundle/MANIFEST.txt
tar czf bundle2s.tar.gz -C src ddp-bundle
rm -f out/gpu-run.tar.gz
set +e
msg="$(OUT="$TEST_TMPDIR/out" bash "$lease" --bundle bundle2s.tar.gz --budget 30 --norm-peers 20 --dist-peers 200 --python "$PWD/fake_python" 2>&1)"
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "a missing bench/sync_bn exited $rc, want 2: $msg"
grep -q '^lease.sh: --dist-peers needs bin/bench/sync_bn, which bundle2s.tar.gz lacks (--only x: 1 of 49 targets): rebuild' <<<"$msg" ||
  fail "the missing binary's message: $msg"
! grep -q 'fake' <<<"$msg" || fail "a stage ran before the check: $msg"
[[ ! -e out/gpu-run.tar.gz ]] || fail "an archive was made"
printf '#!/bin/sh\n' >src/ddp-bundle/bin/bench/sync_bn
chmod +x src/ddp-bundle/bin/bench/sync_bn
tar czf bundle2d.tar.gz -C src ddp-bundle
rm -f out/gpu-run.tar.gz
OUT="$TEST_TMPDIR/out" bash "$lease" --bundle bundle2d.tar.gz --budget 0 --dist-peers 200 --python "$PWD/fake_python" >dist.txt 2>&1 ||
  fail "--dist-peers run exited $?: $(cat dist.txt)"
cat dist.txt
! grep -q 'fake run_all --out' dist.txt || fail "--budget 0 ran run_all"
grep -q 'fake python .*/bench/peers/torch_dist_gpu.py --sync_bn_binary /tmp/lease\.[^ ]*/ddp-bundle/bin/bench/sync_bn --padding_binary /tmp/lease\.[^ ]*/ddp-bundle/bin/bench/padding/padding --ours_lib_path /tmp/lease\.[^ ]*/ddp-bundle/lib:/fake/nccl/lib --backend nccl --world_size 2 --reps 3 --channels 16,256 --batch 2,32 --target_s 0.1 --profiles equal,straggler --payloads 1K,1M --min_time 0.05 --ours_timeout 120 --torch_timeout 120 --pg_timeout 60 --budget 170 --require_gpu --json /tmp/lease\.[^ ]*/gpu/records/torch_dist_gpu.json commit=0123abc+dirty' dist.txt ||
  fail "the dist driver's command line"
grep -q '^lease: dist peers exit 0 (' dist.txt || fail "dist exit line"
! grep -q 'norm peers' dist.txt || fail "--dist-peers alone ran the norm peers"
listing="$(tar tzf out/gpu-run.tar.gz)"
grep -q 'gpu/records/torch_dist_gpu.json' <<<"$listing" && grep -q 'gpu/dist_gpu_table.md' <<<"$listing" || fail "dist output not archived: $listing"
mkdir checkd && tar xzf out/gpu-run.tar.gz -C checkd
grep -q 'fake python .*/bench/peers/dist_gpu_table.py /tmp/lease\.[^ ]*/gpu/records/torch_dist_gpu.json' checkd/gpu/dist_gpu_table.md ||
  fail "the table's command: $(cat checkd/gpu/dist_gpu_table.md)"

# --budget 0 --raw-nccl: no run_all; the bundle's repro at W = 2 and 4
# (--raw_only, 10 runs, the bundle's lib/ and libnccl's folder, the commit,
# without MPS and with a 15 s start-up bound),
# then PyTorch's script on NCCL, each record archived.
mkdir -p src/ddp-bundle/bin/repro/wrong_all_gather
cat >src/ddp-bundle/bin/repro/wrong_all_gather/wrong_all_gather <<'FAKE'
#!/usr/bin/env bash
echo "fake repro $* lib=$LD_LIBRARY_PATH commit=$DDP_PITFALLS_COMMIT mps=$DDP_MPS startup=$DDP_PITFALLS_STARTUP_TIMEOUT nccl_debug=${NCCL_DEBUG:-} proto=${NCCL_PROTO:-}"
while [[ $# -gt 0 ]]; do [[ "$1" == --json ]] && echo '[]' >"$2"; shift; done
FAKE
chmod +x src/ddp-bundle/bin/repro/wrong_all_gather/wrong_all_gather
tar czf bundle3.tar.gz -C src ddp-bundle
rm -f out/gpu-run.tar.gz
OUT="$TEST_TMPDIR/out" bash "$lease" --bundle bundle3.tar.gz --budget 0 --raw-nccl 100 --python "$PWD/fake_python" >raw.txt 2>&1 ||
  fail "--raw-nccl run exited $?: $(cat raw.txt)"
cat raw.txt
! grep -q 'fake run_all --out' raw.txt || fail "--budget 0 ran run_all"
for w in 2 4; do
  for i in 1 10; do
    grep -q "^fake repro --backend nccl --world_size $w --raw_only --raw_runs 1 --n 1003 --batch_size 32 --timeout 5 --raw_dtype float64 --json /tmp/lease\.[^ ]*/gpu/records/wrong_all_gather_raw_nccl_w$w.float64.run$i.json lib=/tmp/lease\.[^ ]*/ddp-bundle/lib:/fake/nccl/lib.* commit=0123abc+dirty mps=0 startup=15 nccl_debug=WARN proto=$" raw.txt ||
      fail "ours at W = $w, run $i"
  done
  grep -qx "lease: raw nccl: ours at W = $w, float64: 10 of 10 runs exit 0" raw.txt || fail "ours' count line at W = $w"
done
# W = 2 (the post's setting) first, both engines, then W = 4.
order="$(grep -oE '^lease: raw nccl: [a-z]+ at W = [0-9] exit' raw.txt | awk '{print $4 $8}' | tr '\n' ' ')"
[[ "$order" == "ours2 pytorch2 ours4 pytorch4 " ]] || fail "stage order: $order"
for w in 2 4; do
  for i in 1 10; do
    grep -q "fake python .*/repro/wrong_all_gather/pytorch/unequal_all_gather.py --backend nccl --worlds $w --runs 1 --dtypes float32 --pg_timeout 10 --out /tmp/lease\.[^ ]*/gpu/records/wrong_all_gather_unequal.torch.nccl_w$w.float32.run$i.json commit=0123abc+dirty nccl_debug=WARN$" raw.txt ||
      fail "PyTorch's command line at W = $w, run $i"
  done
  grep -qx "lease: raw nccl: pytorch at W = $w, float32: 10 of 10 runs exit 0" raw.txt || fail "PyTorch's count line at W = $w"
done
grep -q '^lease: raw nccl exit 0$' raw.txt || fail "raw exit line"
# The engines alternate run by run inside a W: ours 1, PyTorch 1, ours 2, ...
calls="$(grep -oE '^fake (repro|python) .*(raw_nccl|torch\.nccl)_w2\.float(32|64)\.run[0-9]+' raw.txt |
  sed -E 's/^fake (repro|python) .*_w2\.float(32|64)\.run([0-9]+)$/\1\3/' | head -4 | tr '\n' ' ')"
[[ "$calls" == "repro1 python1 repro2 python2 " ]] || fail "engines not alternating: $calls"
listing="$(tar tzf out/gpu-run.tar.gz)"
for f in wrong_all_gather_raw_nccl_w2.float64.run1.json wrong_all_gather_raw_nccl_w4.float64.run10.json wrong_all_gather_unequal.torch.nccl_w2.float32.run1.json wrong_all_gather_unequal.torch.nccl_w4.float32.run10.json; do
  grep -q "gpu/records/$f" <<<"$listing" || fail "$f not archived: $listing"
done
# --raw-worlds 2: the post's setting alone, all of the time.
rm -f out/gpu-run.tar.gz
OUT="$TEST_TMPDIR/out" bash "$lease" --bundle bundle3.tar.gz --budget 0 --raw-nccl 100 --raw-worlds 2 \
  --python "$PWD/fake_python" >raw2.txt 2>&1 || fail "--raw-worlds 2 exited $?: $(cat raw2.txt)"
grep -qx "lease: raw nccl: ours at W = 2, float64: 10 of 10 runs exit 0" raw2.txt || fail "--raw-worlds 2: W = 2"
! grep -q 'world_size 4\|worlds 4' raw2.txt || fail "--raw-worlds 2 ran W = 4"
grep -q 'exit 0 (100 s allowed for the W)' raw2.txt || fail "--raw-worlds 2: the whole time for W = 2"
grep -q -- '--dtypes float32 ' raw2.txt || fail "PyTorch's default dtype is not the post's float32"
# --raw-dtype: both engines gather that dtype (each record names it).
for d in float32 float64; do
  OUT="$TEST_TMPDIR/out" bash "$lease" --bundle bundle3.tar.gz --budget 0 --raw-nccl 100 --raw-worlds 2 \
    --raw-dtype $d --python "$PWD/fake_python" >raw3.txt 2>&1 || fail "--raw-dtype $d exited $?: $(cat raw3.txt)"
  grep -q "unequal_all_gather.py --backend nccl --worlds 2 --runs 1 --dtypes $d --pg_timeout 10" raw3.txt ||
    fail "--raw-dtype $d not passed to PyTorch: $(cat raw3.txt)"
  grep -q "^fake repro .* --timeout 5 --raw_dtype $d --json" raw3.txt || fail "--raw-dtype $d not passed to ours"
  [[ "$(grep -c -- "--dtypes $d\|--raw_dtype $d" raw3.txt)" == 20 ]] || fail "--raw-dtype $d: not every run in $d"
done
# --raw-dtype swap: each engine in the other's own dtype (issue 63); with
# --raw-proto both run under that NCCL_PROTO and their record names say
# it; --raw-runs bounds the runs per engine; --archive names the archive.
rm -f out/gpu-run.tar.gz
OUT="$TEST_TMPDIR/out" bash "$lease" --bundle bundle3.tar.gz --budget 0 --raw-nccl 100 --raw-worlds 2 \
  --raw-dtype swap --raw-proto Simple --raw-runs 3 --archive raw-swap --python "$PWD/fake_python" >raw4.txt 2>&1 ||
  fail "--raw-dtype swap exited $?: $(cat raw4.txt)"
cat raw4.txt
[[ "$(grep -c '^fake repro .* --raw_dtype float32 --json /tmp/lease\.[^ ]*/gpu/records/wrong_all_gather_raw_nccl_w2.float32.proto-Simple.run[123].json .* proto=Simple$' raw4.txt)" == 3 ]] ||
  fail "swap: ours not 3 runs in float32 under NCCL_PROTO=Simple"
[[ "$(grep -c 'fake python .*unequal_all_gather.py .* --dtypes float64 .*/gpu/records/wrong_all_gather_unequal.torch.nccl_w2.float64.proto-Simple.run[123].json .* proto=Simple$' raw4.txt)" == 3 ]] ||
  fail "swap: PyTorch not 3 runs in float64 under NCCL_PROTO=Simple"
grep -qx "lease: raw nccl: ours at W = 2, float32, NCCL_PROTO=Simple: 3 of 3 runs exit 0" raw4.txt || fail "swap: ours' count line"
grep -qx "lease: raw nccl: pytorch at W = 2, float64, NCCL_PROTO=Simple: 3 of 3 runs exit 0" raw4.txt || fail "swap: PyTorch's count line"
! grep -q 'run4' raw4.txt || fail "--raw-runs 3 ran a fourth run"
[[ -f out/raw-swap.tar.gz && ! -e out/gpu-run.tar.gz ]] || fail "--archive raw-swap: $(ls out)"
# The listing first, then grep: under pipefail, `tar | grep -q` fails when
# grep stops reading at its match while tar still writes (SIGPIPE), which
# failed this check once in a fresh-clone .ci/run at 342f93d.
listing="$(tar tzf out/raw-swap.tar.gz)"
grep -q 'gpu/records/wrong_all_gather_unequal.torch.nccl_w2.float64.proto-Simple.run3.json' <<<"$listing" ||
  fail "--archive: the records not in raw-swap.tar.gz"
# Without --raw-proto nothing sets NCCL_PROTO.
! grep -q 'proto=[A-Z]' raw.txt || fail "NCCL_PROTO set without --raw-proto"

# --budget 0 --hang-nccl: PyTorch's uneven-steps script on NCCL at W = 2,
# without and then with blocking wait, each its own JSON, NCCL_DEBUG=WARN,
# the table from both; both records archived.
rm -f out/gpu-run.tar.gz
OUT="$TEST_TMPDIR/out" bash "$lease" --bundle bundle3.tar.gz --budget 0 --hang-nccl 120 \
  --python "$PWD/fake_python" >hang.txt 2>&1 || fail "--hang-nccl exited $?: $(cat hang.txt)"
for bw in 0 1; do
  grep -q "fake python .*/repro/drop_last_hang/pytorch/uneven_steps_timeout.py --backend nccl --worlds 2 --blocking_wait $bw --pg_timeout 10 --out /tmp/lease\.[^ ]*/gpu/records/drop_last_hang_timeout.torch.nccl.bw$bw.json commit=0123abc+dirty nccl_debug=WARN" hang.txt ||
    fail "--hang-nccl: blocking wait $bw: $(cat hang.txt)"
  grep -qx "lease: hang nccl: blocking wait $bw exit 0" hang.txt || fail "--hang-nccl: bw $bw exit line"
done
grep -q '^lease: hang nccl exit 0 ' hang.txt || fail "--hang-nccl exit line"
! grep -q 'raw_nccl\|fake run_all --out' hang.txt || fail "--hang-nccl ran other stages"
mkdir -p checkh && tar xzf out/gpu-run.tar.gz -C checkh
for bw in 0 1; do
  [[ -f checkh/gpu/records/drop_last_hang_timeout.torch.nccl.bw$bw.json ]] || fail "bw$bw record not archived"
done
grep -q 'uneven_steps_timeout.py --table .*nccl.bw0.json .*nccl.bw1.json' checkh/gpu/hang_nccl_table.md ||
  fail "the hang table's command: $(cat checkh/gpu/hang_nccl_table.md)"

# --guard-nccl with a fake Python that prints what coverage.py and
# overhead.py print: with --budget 0 and no other stage no bundle is needed
# (none at the default path here); coverage.py on NCCL at W = 2 with its
# world bounded 30 s inside S, then overhead.py; the count line repeated as
# the stage's; both records named by the torch version and archived.
cat >fake_guard_python <<'FAKE'
#!/usr/bin/env bash
if [[ "$1" == -c ]]; then echo 2.11; exit 0; fi
echo "fake guard python $* commit=${DDP_PITFALLS_COMMIT:-}"
case "$*" in
  *coverage.py\ --table*) echo "| fake coverage table |" ;;
  *coverage.py*) echo "coverage (nccl, ranks sharing one GPU (NET/Socket), correctness only, W = 2): triggers caught on every rank 17 of 17; correct code silent 14 of 14; not as expected 0; ranks left before the end 0, inside the guard's exchange 0" >&2 ;;
esac
while [[ $# -gt 0 ]]; do [[ "$1" == --out ]] && echo '{"fake": true}' >"$2"; shift; done
FAKE
chmod +x fake_guard_python
[[ ! -e .gpu/ddp-bundle.tar.gz ]] || fail "a bundle at the default path"
rm -f out/gpu-run.tar.gz
DDP_PITFALLS_COMMIT=feedbeef OUT="$TEST_TMPDIR/out" bash "$lease" --budget 0 --guard-nccl 200 \
  --python "$PWD/fake_guard_python" >guard.txt 2>&1 || fail "--guard-nccl exited $?: $(cat guard.txt)"
cat guard.txt
grep -q "^fake guard python .*/guard/eval/coverage.py --backend nccl --worlds 2 --timeout 170 --out /tmp/lease\.[^ ]*/gpu/records/guard_coverage.nccl_w2.torch2.11.json commit=feedbeef$" guard.txt ||
  fail "--guard-nccl: coverage's command line"
grep -qx "lease: guard nccl: coverage (nccl, ranks sharing one GPU (NET/Socket), correctness only, W = 2): triggers caught on every rank 17 of 17; correct code silent 14 of 14; not as expected 0; ranks left before the end 0, inside the guard's exchange 0" guard.txt ||
  fail "--guard-nccl: the count line"
grep -q "^fake guard python .*/guard/eval/overhead.py --backend nccl --steps 5 --pairs 5 --alt_pairs 10 --alt_block 2 --timeout [0-9]* --out /tmp/lease\.[^ ]*/gpu/records/guard_overhead.nccl_w2.torch2.11.json commit=feedbeef$" guard.txt ||
  fail "--guard-nccl: overhead's command line"
grep -q '^lease: guard nccl: overhead exit 0 ' guard.txt && grep -q '^lease: guard nccl exit 0 ' guard.txt || fail "--guard-nccl exit lines"
! grep -q 'fake run_all' guard.txt || fail "--guard-nccl ran run_all"
listing="$(tar tzf out/gpu-run.tar.gz)"
for f in records/guard_coverage.nccl_w2.torch2.11.json records/guard_overhead.nccl_w2.torch2.11.json guard_coverage_table.md guard_overhead_table.md; do
  grep -q "gpu/$f" <<<"$listing" || fail "--guard-nccl: $f not archived: $listing"
done
# A world that printed no count line (cut, crashed) is not a pass.
printf '#!/usr/bin/env bash\n[[ "$1" == -c ]] && echo 2.11\nexit 0\n' >mute_python
chmod +x mute_python
set +e
OUT="$TEST_TMPDIR/out" bash "$lease" --budget 0 --guard-nccl 60 --python "$PWD/mute_python" >mute.txt 2>&1
rc=$?
set -e
[[ $rc -eq 1 ]] && grep -q '^lease: guard nccl: coverage: no count line (exit 0)' mute.txt &&
  grep -q '^lease: guard nccl: overhead not run (coverage not as expected)' mute.txt || fail "no count line: $rc $(cat mute.txt)"
# The real coverage.py here, without a GPU: its check comes first, one
# line, exit 2, no rank started (with torch: "no CUDA device"; without
# torch in that Python: "no torch").
real_py=/usr/bin/python3
if "$real_py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "lease_test: a CUDA device is visible here: the no-GPU check of --guard-nccl not run"
else
  set +e
  OUT="$TEST_TMPDIR/out" bash "$lease" --budget 0 --guard-nccl 60 --python "$real_py" >nogpu.txt 2>&1
  rc=$?
  set -e
  cat nogpu.txt
  [[ $rc -eq 2 ]] || fail "--guard-nccl without a GPU exited $rc, want 2: $(cat nogpu.txt)"
  [[ "$(grep -c '^lease: guard nccl not run: ' nogpu.txt)" == 1 ]] || fail "--guard-nccl's one-line reason: $(cat nogpu.txt)"
  if "$real_py" -c 'import torch' 2>/dev/null; then
    grep -q '^lease: guard nccl not run: no CUDA device: torch .* sees none' nogpu.txt || fail "the reason: $(cat nogpu.txt)"
  fi
  grep -q '^lease: guard nccl exit 2 ' nogpu.txt || fail "--guard-nccl exit line: $(cat nogpu.txt)"
  ! grep -q 'W = 2: ' nogpu.txt || fail "a world was started without a GPU"
fi

for args in "--budget -1" "--guard-nccl soon" "--guard-nccl 30" "--guard-backend tpu" "--hang-nccl soon" "--raw-nccl later" "--raw-worlds 1" "--raw-worlds 2,x" "--jobs 17" "--timeout x" "--frob" "--bundle /nonexistent" "--norm-peers soon" "--dist-peers later" "--python /nonexistent" "--raw-dtype float16" "--raw-proto Tree" "--raw-runs 11" "--raw-runs 0" "--archive a/b"; do
  set +e
  msg="$(OUT="$TEST_TMPDIR/out" bash "$lease" $args 2>&1)"
  rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "'$args' exited $rc, want 2"
  grep -q -- "${args%% *}" <<<"$msg" || fail "'$args' message: $msg"
done
# A run_all flag copied from a Markdown table ('\|' for '|') is refused
# before anything runs.
set +e
msg="$(OUT="$TEST_TMPDIR/out" bash "$lease" --bundle bundle.tar.gz -- --only '^core/cuda/\|^bench/' 2>&1)"
rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "holds '\\\\|', a literal '|'" <<<"$msg" || fail "a run_all flag with '\\|': $rc $msg"
! grep -q 'fake run_all' <<<"$msg" || fail "run_all ran with a '\\|' flag"
set +e
msg="$(env -u OUT bash "$lease" --bundle bundle.tar.gz 2>&1)"
rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q 'OUT must name a folder' <<<"$msg" || fail "no \$OUT: $rc $msg"
echo "lease_test: all checks passed"
