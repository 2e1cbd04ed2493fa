#!/usr/bin/env bash
# run_all.sh on a fake bundle whose "binaries" are small scripts that pass,
# fail, skip, hang, check their environment, and act as repro/fix pairs.
# Checks the per-binary lines, the summary line, the records and exit codes;
# --jobs, --budget (order of importance, cut, not run), CUDA MPS with a fake
# control program (the isolated runs apart without it, a refusal rerun),
# the records' commit and the shared-GPU pair flags.
set -euo pipefail

run_all="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
fake_mps="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
isolated_file="$3"
root="$TEST_TMPDIR/bundle"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

mkdir -p "$root/bin/pkg" "$root/bin/repro/bug" "$root/bin/fixes/bug" "$root/lib" "$TEST_TMPDIR/nccl"
cp "$run_all" "$root/run_all.sh"
touch "$TEST_TMPDIR/nccl/libnccl.so.2"
echo "ddp-pitfalls GPU-runner bundle (fake)" >"$root/MANIFEST.txt"

make_bin() {  # path, body
  printf '#!/usr/bin/env bash\n%s\n' "$2" >"$root/bin/$1"
  chmod +x "$root/bin/$1"
}
make_bin pkg/pass_test 'echo "[       OK ] A.One (1 ms)"; echo "[       OK ] A.Two (1 ms)"'
make_bin pkg/skip_test 'echo "x.cc:3: Skipped"; echo "skipped, no GPU: fake reason"; echo "[  SKIPPED ] A.One (0 ms)"'
make_bin pkg/fail_test 'echo "[  FAILED  ] A.One (1 ms)"; exit 1'
make_bin pkg/hang_test 'sleep 60'
# A shell test (no gtest lines) that skips as bench/sync_bn_nccl_test does.
make_bin pkg/sh_skip_test 'echo "skipped, no GPU: fake sh reason"'
# A test that ran 1 of its 3 cases (2 left to the shared-GPU sizes, as
# fixes/small_batch_bn/test_nccl on one GPU), and a benchmark smoke test
# that ran its rows and no gtest case (bench/sync_bn_nccl_test).
make_bin pkg/few_test 'echo "[       OK ] F.One (5 ms)"
for c in Two Three; do echo "f.cc:9: Skipped"; echo "shared GPU: W = 4 only (not 2 and 3)"; echo; echo "[  SKIPPED ] F.$c (0 ms)"; done'
make_bin pkg/rows_test 'echo "bn/C:16/N:2/rep:0/iterations:3/manual_time   1648 us   1171 us   3 W=2"
echo "sync_bn/C:16/N:2/rep:0/iterations:3/manual_time   2955 us   1314 us   3 W=2"; echo PASS'
# Passes only if it runs as Bazel would run it.
mkdir -p "$root/bin/pkg/env_test.runfiles/ddp_pitfalls"
make_bin pkg/env_test '
[[ -d "$TEST_TMPDIR" && -w "$TEST_TMPDIR" ]] || { echo "bad TEST_TMPDIR"; exit 1; }
[[ "$TEST_SRCDIR" == */bin/pkg/env_test.runfiles ]] || { echo "bad TEST_SRCDIR $TEST_SRCDIR"; exit 1; }
[[ "$PWD" == "$TEST_SRCDIR/ddp_pitfalls" ]] || { echo "bad cwd $PWD"; exit 1; }
[[ "$DDP_PITFALLS_REQUIRE_GPU" == 1 ]] || { echo "GPU not required"; exit 1; }
[[ "$LD_LIBRARY_PATH" == */lib:*/nccl* ]] || { echo "bad LD_LIBRARY_PATH $LD_LIBRARY_PATH"; exit 1; }
echo "[       OK ] Env.AsBazel (0 ms)"'
printf '%s\n' pkg/pass_test pkg/skip_test pkg/fail_test pkg/hang_test pkg/env_test pkg/sh_skip_test pkg/few_test \
  pkg/rows_test >"$root/tests.txt"
# A repro that writes its records when given --backend nccl; a fix with an
# unexpected verdict.
make_bin repro/bug/bug '
[[ "$1 $2 $3" == "--backend nccl --json" ]] || exit 2
echo "[{\"bug\": \"bug\", \"verdict\": \"reproduced\"}]" >"$4"'
make_bin fixes/bug/bug 'echo "[]" >"$4"; exit 1'
printf '%s\n' repro/bug/bug fixes/bug/bug >"$root/pairs.txt"
: >"$root/bench.txt"

set +e
output="$("$root/run_all.sh" --timeout 2 --nccl-lib "$TEST_TMPDIR/nccl" --out "$TEST_TMPDIR/out" 2>&1)"
rc=$?
set -e
echo "$output"
[[ $rc -eq 1 ]] || fail "exit $rc, want 1 (failures)"
grep -qx '4 passed, 2 failed, 2 skipped' <<<"$output" || fail "summary line"
grep -qx 'of the 4 passed: 3 ran every case, 1 passed with cases skipped (1 of them most of their cases: pkg/few_test (1 of 3 cases))' \
  <<<"$output" || fail "the passed tests apart by what ran"
grep -q '^PASS  pkg/few_test (1 of 3 cases; 2 skipped at shared-GPU sizes, ' <<<"$output" || fail "a test that skipped most of its cases"
grep -q '^PASS  pkg/rows_test (2 benchmark rows, no gtest case, ' <<<"$output" || fail "a benchmark smoke test reads 0 ok"
grep -qP '^test\tpkg/few_test\tpass\t\d+\t1 of 3 cases; 2 skipped at shared-GPU sizes$' "$TEST_TMPDIR/out/summary.tsv" ||
  fail "summary.tsv: the cases counted"
grep -q '^SKIP  pkg/sh_skip_test (skipped, no GPU: fake sh reason)' <<<"$output" || fail "shell test skip line"
grep -q '^PASS  pkg/pass_test (2 of 2 cases, ' <<<"$output" || fail "pass line"
grep -q '^PASS  pkg/env_test ' <<<"$output" || fail "env_test did not see Bazel's environment"
grep -q '^SKIP  pkg/skip_test (1 skipped: skipped, no GPU: fake reason)' <<<"$output" || fail "skip line"
grep -q '^FAIL  pkg/fail_test (exit 1; ' <<<"$output" || fail "fail line"
grep -q '^FAIL  pkg/hang_test (timeout after 2 s; ' <<<"$output" || fail "timeout line"
grep -q '^OK .* repro/bug/bug -> records/repro_bug.json' <<<"$output" || fail "repro line"
grep -q '^UNEXPECTED .* fixes/bug/bug' <<<"$output" || fail "fix line"
grep -qx 'pairs: 1 as expected, 1 not, 0 skipped' <<<"$output" || fail "pairs summary"
grep -q '"verdict": "reproduced"' "$TEST_TMPDIR/out/records/repro_bug.json" || fail "record not written"
[[ -f "$TEST_TMPDIR/out/environment.txt" ]] || fail "no environment.txt"

# --only selects; nothing failing -> exit 0.
"$root/run_all.sh" --only 'pass_test|/skip_test' --no-pairs --nccl-lib "$TEST_TMPDIR/nccl" --out "$TEST_TMPDIR/out2" >"$TEST_TMPDIR/only.txt" 2>&1 ||
  fail "--only run exited $?: $(cat "$TEST_TMPDIR/only.txt")"
grep -qx '1 passed, 0 failed, 1 skipped' "$TEST_TMPDIR/only.txt" || fail "--only summary"

# Bad usage: exit 2 and a message naming the flag.
for args in "--timeout 0" "--timeout abc" "--frobnicate" "--nccl-lib /nonexistent"; do
  set +e
  msg="$("$root/run_all.sh" $args 2>&1)"
  rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "'$args' exited $rc, want 2"
  grep -q -- "${args%% *}" <<<"$msg" || fail "'$args' message does not name the flag: $msg"
done
# --only: a Markdown table's '\|' (a literal | in an extended expression),
# a bad expression, and one that selects nothing of what would run (here
# the pairs, with --no-pairs) are exit 2 before anything runs.
for only in '^pkg/pass_test\|^pkg/skip_test' '(' '^repro/'; do
  set +e
  msg="$("$root/run_all.sh" --no-pairs --only "$only" --nccl-lib "$TEST_TMPDIR/nccl" --out "$TEST_TMPDIR/out3" 2>&1)"
  rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "--only '$only' exited $rc, want 2: $msg"
  grep -q -- '--only' <<<"$msg" || fail "--only '$only' message: $msg"
  [[ ! -e "$TEST_TMPDIR/out3/environment.txt" ]] || fail "--only '$only': the run started"
done
grep -q "'\\|' is a literal '|'" <<<"$("$root/run_all.sh" --only 'a\|b' 2>&1)" || fail "the '\\|' message"
grep -q "selects none of the 8 binaries this run would consider (tests.txt;" \
  <<<"$("$root/run_all.sh" --no-pairs --only '^repro/' --out "$TEST_TMPDIR/out3" 2>&1)" || fail "the selects-none message"

# --- A fresh fake bundle for the GPU-machine checks below.
new_bundle() {
  rm -rf "$root"
  mkdir -p "$root/bin/pkg" "$root/lib"
  cp "$run_all" "$root/run_all.sh"
  printf 'ddp-pitfalls GPU-runner bundle (fake)\ncommit: x\nbuilt: y\ncuda: 13.0 (runtime linked statically)\n' >"$root/MANIFEST.txt"
  : >"$root/tests.txt"
  : >"$root/pairs.txt"
  : >"$root/bench.txt"
}
fakebin="$TEST_TMPDIR/fakebin"
mkdir -p "$fakebin"
fake_smi() {  # driver version, number of GPUs
  printf '#!/usr/bin/env bash\ncase "$*" in\n  *driver_version\\ *|*=driver_version\\ *) echo %s ;;\n  -L) for i in $(seq 0 $(( %s - 1 ))); do echo "GPU $i: NVIDIA H100 (UUID: GPU-$i)"; done ;;\n  *) echo "NVIDIA H100, %s, 81559 MiB" ;;\nesac\n' "$1" "$2" "$1" >"$fakebin/nvidia-smi"
  chmod +x "$fakebin/nvidia-smi"
}
run() {  # runs the fake bundle; output in $output, status in $rc
  set +e
  output="$(PATH="$fakebin:$PATH" "$root/run_all.sh" --nccl-lib "$TEST_TMPDIR/nccl" --out "$TEST_TMPDIR/o" "$@" 2>&1)"
  rc=$?
  set -e
}

# --allow-skip on a machine without a GPU: a pair that refuses NCCL (exit 2,
# as every pair binary does there) and a gpu test that skips are SKIPs,
# quickly, with their reasons, and leave no records.
new_bundle
rm -f "$fakebin/nvidia-smi"
mkdir -p "$root/bin/repro/bug" "$root/bin/fixes/bug" "$root/bin/bench"
make_bin pkg/skip_test 'echo "x.cc:3: Skipped"; echo "skipped, no GPU: fake reason"; echo "[  SKIPPED ] A.One (0 ms)"'
refuse='echo "prog: --backend nccl: no usable GPU here (cudaGetDeviceCount: CUDA driver version is insufficient): use --backend gloo" >&2; exit 2'
make_bin repro/bug/bug "$refuse"
make_bin fixes/bug/bug "$refuse"
make_bin bench/sync_bn '[[ "$*" == *"--backend nccl"* ]] && { echo "rank 0: backend '"'"'nccl'"'"' needs a GPU, but none is usable here" >&2; exit 1; }; for a; do [[ "$a" == --benchmark_out=* ]] && echo "{}" >"${a#*=}"; done; true'
echo pkg/skip_test >"$root/tests.txt"
printf '%s\n' repro/bug/bug fixes/bug/bug >"$root/pairs.txt"
echo bench/sync_bn >"$root/bench.txt"
mkdir -p "$TEST_TMPDIR/o/records"
echo stale >"$TEST_TMPDIR/o/records/repro_bug.json"
start=$SECONDS
run --allow-skip --bench
echo "$output"
[[ $rc -eq 0 ]] || fail "--allow-skip without a GPU exited $rc, want 0"
((SECONDS - start < 60)) || fail "--allow-skip took $((SECONDS - start)) s"
grep -q '^SKIP  *repro/bug/bug (--backend nccl: no usable GPU here' <<<"$output" || fail "pair SKIP line"
grep -qx 'pairs: 0 as expected, 0 not, 2 skipped' <<<"$output" || fail "pairs summary with skips"
grep -q "^SKIP  bench/sync_bn on nccl (backend 'nccl' needs a GPU" <<<"$output" || fail "bench nccl SKIP"
grep -q '^OK    bench/sync_bn on gloo -> records/bench_sync_bn.gloo.bench.json' <<<"$output" || fail "bench gloo run"
[[ -z "$(ls "$TEST_TMPDIR/o/records" | grep -v '\.gloo\.')" ]] || fail "NCCL records written: $(ls "$TEST_TMPDIR/o/records")"
# Without --allow-skip the same refusals are failures.
run
[[ $rc -eq 1 ]] || fail "refusals without --allow-skip exited $rc, want 1"
grep -q '^USAGE .* repro/bug/bug' <<<"$output" || fail "refusal without --allow-skip is not USAGE"

# The driver is checked before anything runs: one line, exit 1.
new_bundle
make_bin pkg/pass_test 'echo "[       OK ] A.One (1 ms)"'
echo pkg/pass_test >"$root/tests.txt"
fake_smi 535.104.05 1
run
[[ $rc -eq 1 ]] || fail "old driver exited $rc, want 1"
want="run_all.sh: this bundle's CUDA 13.0 runtime needs driver >= 580; this machine has 535.104.05: rebuild with CUDA_PATH pointing at a CUDA 12 toolkit"
[[ "$output" == "$want" ]] || fail "old driver output: '$output'"
fake_smi 580.159.04 1
run
[[ $rc -eq 0 ]] || fail "driver 580 exited $rc: $output"
sed -i 's/^cuda: 13.0/cuda: 12.4/' "$root/MANIFEST.txt"
fake_smi 535.104.05 1
run
[[ $rc -eq 0 ]] || fail "CUDA 12.4 on driver 535 exited $rc: $output"
fake_smi 470.57.02 1
run
grep -q "CUDA 12.4 runtime needs driver >= 525; this machine has 470.57.02: rebuild with CUDA_PATH pointing at a CUDA 11 toolkit" <<<"$output" ||
  fail "CUDA 12 on 470: $output"

# Binaries that do not load: one line, exit 1.
new_bundle
mkdir -p "$root/bin/repro/bug"
make_bin repro/bug/bug "echo \"bug: /lib/x86_64-linux-gnu/libstdc++.so.6: version \\\`GLIBCXX_3.4.30' not found (required by lib/libgloo.so.0)\" >&2; exit 1"
echo repro/bug/bug >"$root/pairs.txt"
rm -f "$fakebin/nvidia-smi"
run
[[ $rc -eq 1 ]] || fail "unloadable binaries exited $rc"
grep -q "^run_all.sh: the bundle's binaries do not load here: .*GLIBCXX_3.4.30' not found" <<<"$output" || fail "load line: $output"
[[ "$(grep -c . <<<"$output")" -eq 1 ]] || fail "more than one line for a load error: $output"

# --bench on one GPU: each benchmark on NCCL and on Gloo with regen.sh's
# flags; padding shares the GPU; peers' helpers are skipped.
new_bundle
fake_smi 580.159.04 1
mkdir -p "$root/bin/bench/padding" "$root/bin/bench/recorder" "$root/bin/bench/peers"
args_file="$TEST_TMPDIR/bench_args.txt"
record_args='echo "$*" >>"'"$args_file"'"; for a; do [[ "$a" == --benchmark_out=* ]] && echo "{}" >"${a#*=}"; done; true'
for b in bench/sync_bn bench/padding/padding bench/recorder/recorder bench/peers/gather_loop; do make_bin "$b" "$record_args"; done
printf '%s\n' bench/sync_bn bench/padding/padding bench/recorder/recorder bench/peers/gather_loop >"$root/bench.txt"
rm -f "$args_file"
run --bench --no-pairs
echo "$output"
[[ $rc -eq 0 ]] || fail "--bench exited $rc"
# On one GPU the NCCL runs are functional (shared) and smaller; Gloo keeps
# regen.sh's sizes but padding's repetitions (3 of 9: a lease's time).
grep -q -- '^--backend nccl --world_size 4 --reps 3 --channels 16,256 --batch 2,32 --pin_cpus --benchmark_out=.*/records/bench_sync_bn.nccl.bench.json' "$args_file" || fail "sync_bn on nccl: $(cat "$args_file")"
grep -q -- '^--backend gloo --world_size 4 --reps 5 --pin_cpus --benchmark_out=' "$args_file" || fail "sync_bn on gloo"
grep -q -- '^--backend nccl --world_size 4 --reps 3 --profiles equal,straggler --payloads 1K,1M --pin_cpus --share_gpu --benchmark_out=.*padding.nccl' "$args_file" || fail "padding on nccl must share the GPU, smaller"
grep -q -- '^--backend gloo --world_size 4 --reps 3 --pin_cpus --benchmark_out=.*padding.gloo' "$args_file" || fail "padding on gloo"
[[ "$(wc -l <"$args_file")" -eq 5 ]] || fail "5 benchmark runs expected: $(cat "$args_file")"
grep -q '^SKIP  bench/peers/gather_loop (a helper' <<<"$output" || fail "peers helper not skipped"
for f in bench_sync_bn.nccl bench_sync_bn.gloo bench_padding_padding.nccl bench_padding_padding.gloo bench_recorder_recorder.gloo; do
  [[ -f "$TEST_TMPDIR/o/records/$f.bench.json" ]] || fail "no records/$f.bench.json"
done
# --full-size on one GPU: the NCCL benchmarks at regen.sh's sizes, padding still sharing.
rm -f "$args_file"
run --bench --no-pairs --only padding --full-size
grep -q -- '^--backend nccl --world_size 4 --reps 9 --pin_cpus --share_gpu --benchmark_out=.*padding.nccl' "$args_file" || fail "--full-size: padding on nccl: $(cat "$args_file")"
grep -q -- '^--backend gloo --world_size 4 --reps 9 --pin_cpus --benchmark_out=.*padding.gloo' "$args_file" || fail "--full-size: padding on gloo: $(cat "$args_file")"
fake_smi 580.159.04 4
rm -f "$args_file"
run --bench --no-pairs --only 'padding|sync_bn'
! grep -q -- '--share_gpu' "$args_file" || fail "4 GPUs: padding must not share"
grep -q -- '^--backend nccl --world_size 4 --reps 9 --pin_cpus --benchmark_out=.*padding.nccl' "$args_file" || fail "4 GPUs: padding on nccl at full size: $(cat "$args_file")"
grep -q -- '^--backend nccl --world_size 4 --reps 5 --pin_cpus --benchmark_out=.*sync_bn.nccl' "$args_file" || fail "4 GPUs: sync_bn on nccl at full size: $(cat "$args_file")"

# --jobs: two 2-second tests side by side take about 2 s, one at a time 4 s.
new_bundle
mkdir -p "$root/bin/core/a" "$root/bin/core/b"
# (--help: the load check before the run, at once.)
make_bin core/a/slow_test '[[ "${1:-}" == --help ]] && exit 0; sleep 2; echo "[       OK ] A.Slow (2000 ms)"'
make_bin core/b/slow_test '[[ "${1:-}" == --help ]] && exit 0; sleep 2; echo "[       OK ] B.Slow (2000 ms)"'
printf '%s\n' core/a/slow_test core/b/slow_test >"$root/tests.txt"
rm -f "$fakebin/nvidia-smi"
start=$SECONDS
run --jobs 2
((SECONDS - start <= 3)) || fail "--jobs 2 took $((SECONDS - start)) s for two 2 s tests"
[[ $rc -eq 0 ]] || fail "--jobs 2 exited $rc: $output"
grep -qx '2 passed, 0 failed, 0 skipped' <<<"$output" || fail "--jobs summary: $output"
start=$SECONDS
run --jobs 1
((SECONDS - start >= 4)) || fail "--jobs 1 ran side by side"
for bad in "--jobs 0" "--jobs 17" "--jobs x" "--budget 0" "--budget soon" "--mps maybe" "--bench-timeout 0"; do
  run $bad
  [[ $rc -eq 2 ]] || fail "'$bad' exited $rc, want 2"
  grep -q -- "${bad%% *} must be" <<<"$output" || fail "'$bad' message: $output"
done

# --budget: the most informative first (core tests, then the pairs' records,
# then their test twins, then the rest), a binary still running at the
# budget's end is cut, what could not start is listed; summary.tsv holds
# every run as it finished. The twin sleeps past the budget.
new_bundle
mkdir -p "$root/bin/core/k" "$root/bin/repro/bug" "$root/bin/tools/t"
make_bin core/k/kernels_test 'echo "[       OK ] K.One (1 ms)"'
make_bin repro/bug/test_nccl '[[ "${1:-}" == --help ]] && exit 0; sleep 60'
make_bin tools/t/late_test 'echo "[       OK ] T.One (1 ms)"'
make_bin repro/bug/bug 'echo "[{\"verdict\": \"reproduced\"}]" >"$4"'
printf '%s\n' tools/t/late_test repro/bug/test_nccl core/k/kernels_test >"$root/tests.txt"
echo repro/bug/bug >"$root/pairs.txt"
start=$SECONDS
run --budget 17
echo "$output"
((SECONDS - start <= 22)) || fail "--budget 17 took $((SECONDS - start)) s"
[[ $rc -eq 1 ]] || fail "a cut run exited $rc, want 1"
order="$(grep -oE '^(PASS|OK|CUT) +[^ ]+( .*repro/bug/bug)?' <<<"$output" | awk '{print $NF}')"
[[ "$order" == "$(printf '%s\n' core/k/kernels_test repro/bug/bug repro/bug/test_nccl)" ]] || fail "order: $order"
grep -q "^CUT   repro/bug/test_nccl (stopped at the budget's end after " <<<"$output" || fail "cut line"
grep -qx "not run (budget of 17 s): 1: tools/t/late_test" <<<"$output" || fail "not-run line"
tsv="$TEST_TMPDIR/o/summary.tsv"
grep -qP '^test\tcore/k/kernels_test\tpass\t' "$tsv" || fail "summary.tsv pass: $(cat "$tsv")"
grep -qP '^pair\trepro/bug/bug\tok\t' "$tsv" || fail "summary.tsv pair"
grep -qP '^test\trepro/bug/test_nccl\tcut\t' "$tsv" || fail "summary.tsv cut"
grep -qP '^test\ttools/t/late_test\tnot_run\t0\tbudget of 17 s$' "$tsv" || fail "summary.tsv not run"

# CUDA MPS on one GPU, with the fake control program: started before the
# first binary, its pipe exported to every binary, each NCCL rank's report
# counted, told to quit at the end; --mps off exports DDP_MPS=0; --mps on
# without the program is one line and exit 1. The records carry the
# bundle's commit, "+dirty" for a dirty build; on a shared GPU a pair gets
# its line of shared_gpu_flags.txt, unless --full-size or 4 GPUs.
new_bundle
fake_smi 580.159.04 1
ln -sf "$fake_mps" "$fakebin/nvidia-cuda-mps-control"
export FAKE_MPS_LOG="$TEST_TMPDIR/mps_calls.log"
: >"$FAKE_MPS_LOG"
mkdir -p "$root/bin/repro/bug"
make_bin repro/bug/bug '
[[ -e "$CUDA_MPS_PIPE_DIRECTORY/control" ]] && echo "$$ mps=1" >>"$DDP_MPS_REPORT"
echo "[{\"commit\": \"$DDP_PITFALLS_COMMIT\", \"mps\": \"${DDP_MPS:-auto} ${CUDA_MPS_PIPE_DIRECTORY:-none}\", \"args\": \"$*\"}]" >"$4"'
echo repro/bug/bug >"$root/pairs.txt"
printf '# comment\nrepro/bug/bug --steps 5 --n 100\nfixes/other/other --steps 1\n' >"$root/shared_gpu_flags.txt"
sed -i 's/^commit: x$/commit: 0123abc (with uncommitted changes)/' "$root/MANIFEST.txt"
printf 'cuda arches: 90\ncompiler: g\nselection: --only x: 1 of 9 targets\n' >>"$root/MANIFEST.txt"
run
echo "$output"
[[ $rc -eq 0 ]] || fail "MPS run exited $rc"
rec="$TEST_TMPDIR/o/records/repro_bug.json"
grep -q "run_all.sh: CUDA MPS started ($fakebin/nvidia-cuda-mps-control -d, pipe /tmp/ddp-mps\." <<<"$output" || fail "MPS start line"
grep -q '"mps": "auto /tmp/ddp-mps\.' "$rec" || fail "the pair did not get the pipe: $(cat "$rec")"
grep -qx 'run_all.sh: CUDA MPS stopped; 1 of 1 NCCL rank processes attached' <<<"$output" || fail "MPS stop line"
grep -qx 'CUDA MPS: 1 of 1 NCCL rank processes attached' <<<"$output" || fail "MPS summary line"
pipe="$(grep -o '"mps": "auto [^"]*' "$rec" | awk '{print $NF}')"
[[ ! -e "$pipe" ]] || fail "MPS pipe folder left: $pipe"
grep -q '^daemon -d$' "$FAKE_MPS_LOG" && grep -q '^client quit$' "$FAKE_MPS_LOG" || fail "fake calls: $(cat "$FAKE_MPS_LOG")"
grep -q '"commit": "0123abc+dirty"' "$rec" || fail "record's commit: $(cat "$rec")"
grep -q "^records' commit: 0123abc+dirty" "$TEST_TMPDIR/o/environment.txt" || fail "environment.txt commit"
# The manifest's head and its selection (make_bundle.sh --only), nothing
# else of it.
grep -qx 'selection: --only x: 1 of 9 targets' "$TEST_TMPDIR/o/environment.txt" || fail "environment.txt lacks the selection"
! grep -q '^compiler: ' "$TEST_TMPDIR/o/environment.txt" || fail "environment.txt holds more of the manifest than its head"
grep -q '"args": "--backend nccl --json .* --steps 5 --n 100"' "$rec" || fail "shared-GPU flags not given: $(cat "$rec")"
grep -q "pairs with shared_gpu_flags.txt's flags (1 GPU visible" <<<"$output" || fail "flags header line"
run --full-size --mps off
grep -q '"args": "--backend nccl --json [^ ]*"' "$rec" || fail "--full-size still got flags: $(cat "$rec")"
grep -q '"mps": "0 none"' "$rec" || fail "--mps off: $(cat "$rec")"
grep -q 'run_all.sh: CUDA MPS off (--mps off): ranks sharing a GPU are time-sliced' <<<"$output" || fail "off line"
fake_smi 580.159.04 4
sed -i 's/^commit: .*/commit: 4567def/' "$root/MANIFEST.txt"
run
grep -q '"args": "--backend nccl --json [^ ]*"' "$rec" || fail "4 GPUs still got flags"
grep -q '"commit": "4567def"' "$rec" || fail "clean commit: $(cat "$rec")"
fake_smi 580.159.04 1
rm -f "$fakebin/nvidia-cuda-mps-control"
run --mps on
[[ $rc -eq 1 ]] || fail "--mps on without the program exited $rc"
[[ "$output" == *"run_all.sh: --mps on but no CUDA MPS daemon: nvidia-cuda-mps-control not on PATH"* ]] || fail "--mps on line: $output"
run
grep -q 'run_all.sh: CUDA MPS not available (nvidia-cuda-mps-control not on PATH)' <<<"$output" || fail "auto without MPS"
grep -q '"mps": "0 none"' "$rec" || fail "without MPS the launchers must not try again: $(cat "$rec")"
unset FAKE_MPS_LOG

# The runs of mps_isolated.txt (the real file) go apart, without MPS, after
# the other tests and pairs; the benchmarks get a fresh daemon. A run that
# the MPS server refuses (a client's fatal GPU error) is REFUSED, not a
# failure: the daemon is restarted for what follows and the run goes again
# without MPS at the end. A daemon that leaves its control socket behind
# (the real one does) but logs its exit has stopped. A benchmark killed at
# --bench-timeout keeps its cut JSON only as .partial.
new_bundle
fake_smi 580.159.04 1
ln -sf "$fake_mps" "$fakebin/nvidia-cuda-mps-control"
export FAKE_MPS_LOG="$TEST_TMPDIR/mps_calls2.log" FAKE_MPS_KEEP_PIPE=1
: >"$FAKE_MPS_LOG"
cp "$isolated_file" "$root/mps_isolated.txt"
where="$TEST_TMPDIR/where.log"
: >"$where"
note="[[ \"\${1:-}\" == --help ]] && exit 0; echo \"\$(basename \"\$(dirname \"\$0\")\")/\$(basename \"\$0\") \${DDP_MPS:-auto} \${CUDA_MPS_PIPE_DIRECTORY:-none}\" >>$where"
mkdir -p "$root/bin/core/comm" "$root/bin/repro/drop_last_hang" "$root/bin/bench"
for t in pkg/a_test pkg/z_test core/comm/nccl_ops_test repro/drop_last_hang/test_nccl; do
  make_bin "$t" "$note; echo '[       OK ] W.Where (0 ms)'"
done
make_bin pkg/faulted_test "$note
if [[ ! -e $TEST_TMPDIR/faulted ]]; then
  : >$TEST_TMPDIR/faulted
  echo 'no GPU: cudaGetDeviceCount: MPS server is not ready to accept new MPS client requests'; exit 1
fi
echo '[       OK ] W.Where (0 ms)'"
make_bin bench/b "$note; for a; do [[ \"\$a\" == --benchmark_out=* ]] && echo '{}' >\"\${a#*=}\"; done; true"
make_bin bench/slow 'for a; do [[ "$a" == --benchmark_out=* ]] && echo "{\"cut" >"${a#*=}"; done; sleep 30'
# As bench/recorder over its limit: the whole record written, then exit 1.
make_bin bench/over 'for a; do [[ "$a" == --benchmark_out=* ]] && echo "{}" >"${a#*=}"; done; echo "  allreduce 153.6 ns (153.6)   limit 100 ns: EXCEEDED"; exit 1'
printf '%s\n' core/comm/nccl_ops_test pkg/a_test pkg/faulted_test repro/drop_last_hang/test_nccl pkg/z_test >"$root/tests.txt"
printf '%s\n' bench/b bench/slow bench/over >"$root/bench.txt"
run --bench --bench-timeout 2
echo "$output"
[[ $rc -eq 1 ]] || fail "isolated run exited $rc, want 1 (the slow benchmark)"
grep -qx '== then without CUDA MPS, apart (mps_isolated.txt: they stall collectives on purpose): core/comm/nccl_ops_test repro/drop_last_hang/test_nccl' <<<"$output" ||
  fail "apart line"
grep -q '^REFUSED pkg/faulted_test (the CUDA MPS server refuses new clients' <<<"$output" || fail "refused line"
grep -qx 'refused by the CUDA MPS server (a client.s fatal GPU error) and rerun without MPS: 1' <<<"$output" || fail "refused summary"
grep -qx '5 passed, 0 failed, 0 skipped' <<<"$output" || fail "the rerun did not count as the result"
grep -q 'run_all.sh: CUDA MPS off for what follows: restarting it after a client.s fatal GPU error (restart 1 of 2)' <<<"$output" ||
  fail "restart line"
grep -q 'run_all.sh: CUDA MPS off for what follows: the runs of mps_isolated.txt' <<<"$output" || fail "isolated off line"
grep -q 'run_all.sh: CUDA MPS off for what follows: the reruns of what the MPS server refused' <<<"$output" || fail "rerun off line"
! grep -q 'did not quit' <<<"$output" || fail "a daemon that logged its exit was said not to quit"
mapfile -t w <"$where"
pipe_of() { awk '{print $3}' <<<"$1"; }
[[ "${w[0]}" == "pkg/a_test auto /tmp/ddp-mps."* && "${w[1]}" == "pkg/faulted_test auto $(pipe_of "${w[0]}")" ]] || fail "phase 1: ${w[*]}"
[[ "${w[2]}" == "pkg/z_test auto /tmp/ddp-mps."* && "$(pipe_of "${w[2]}")" != "$(pipe_of "${w[0]}")" ]] || fail "no fresh daemon after the refusal: ${w[*]}"
[[ "${w[3]}" == "comm/nccl_ops_test 0 none" && "${w[4]}" == "drop_last_hang/test_nccl 0 none" ]] || fail "phase 2: ${w[*]}"
[[ "${w[5]}" == "bench/b auto /tmp/ddp-mps."* ]] || fail "benchmarks without a daemon: ${w[*]}"
[[ "${w[6]}" == "pkg/faulted_test 0 none" && ${#w[@]} -eq 7 ]] || fail "rerun: ${w[*]}"
[[ $(grep -c '^daemon -d$' "$FAKE_MPS_LOG") -eq 3 ]] || fail "want 3 daemon starts: $(cat "$FAKE_MPS_LOG")"
[[ -f "$TEST_TMPDIR/o/logs/pkg.faulted_test.mps_refused.log" ]] || fail "the refused run's log"
grep -qP '^test\tpkg/faulted_test\tmps_refused\t' "$TEST_TMPDIR/o/summary.tsv" || fail "summary.tsv refused line"
grep -q "^FAIL  bench/slow on default (timeout after 2 s; its cut JSON: records/bench_slow.default.bench.json.partial" <<<"$output" ||
  fail "cut benchmark line"
[[ -f "$TEST_TMPDIR/o/records/bench_slow.default.bench.json.partial" && ! -e "$TEST_TMPDIR/o/records/bench_slow.default.bench.json" ]] ||
  fail "cut JSON not set apart"
grep -q '^OK    bench/over on default -> records/bench_over.default.bench.json (.*; over its own limit: allreduce 153.6 ns (153.6)   limit 100 ns: EXCEEDED)' <<<"$output" ||
  fail "over-limit line"
[[ -f "$TEST_TMPDIR/o/records/bench_over.default.bench.json" ]] || fail "the over-limit record was set apart"
grep -qx 'benchmarks: 2 ok (1 over its own limit), 1 failed, 0 skipped' <<<"$output" || fail "benchmarks summary"
# --isolated /dev/null: nothing apart, every run under the one daemon.
: >"$where"
rm -f "$TEST_TMPDIR/o/records/"*.partial
run --isolated /dev/null --only 'nccl_ops_test|a_test'
[[ $rc -eq 0 ]] || fail "--isolated /dev/null exited $rc"
! grep -q '^== then without CUDA MPS' <<<"$output" || fail "--isolated /dev/null still set runs apart"
mapfile -t w <"$where"
[[ "${w[0]}" == "comm/nccl_ops_test auto /tmp/ddp-mps."* && "${w[1]}" == "pkg/a_test auto $(pipe_of "${w[0]}")" ]] ||
  fail "--isolated /dev/null: ${w[*]}"
run --isolated /nonexistent
[[ $rc -eq 2 ]] && grep -q -- '--isolated needs a readable file' <<<"$output" || fail "--isolated /nonexistent: $rc $output"
unset FAKE_MPS_LOG FAKE_MPS_KEEP_PIPE

# Where libnccl.so.2 is found (--find-nccl), on a fake folder layout: in
# order $VIRTUAL_ENV, $CONDA_PREFIX, a python3.N on PATH, ldconfig -p; none
# found -> the --nccl-lib hint and exit 1.
lay="$TEST_TMPDIR/layout"
mkdir -p "$lay/venv/lib/python3.12/site-packages/nvidia/nccl/lib" "$lay/conda/lib" "$lay/pyenv/nvidia/nccl/lib" \
  "$lay/ldconf/lib" "$lay/bin"
for d in "$lay/venv/lib/python3.12/site-packages/nvidia/nccl/lib" "$lay/conda/lib" "$lay/pyenv/nvidia/nccl/lib" "$lay/ldconf/lib"; do
  touch "$d/libnccl.so.2"
done
printf '#!/bin/sh\necho "%s"\n' "$lay/pyenv/nvidia/nccl/lib" >"$lay/bin/python3.99"
printf '#!/bin/sh\necho "/nonexistent/for/config"\n' >"$lay/bin/python3.99-config"
printf '#!/bin/sh\nprintf "\\tlibnccl.so.2 (libc6,x86-64) => %s/libnccl.so.2\\n"\n' "$lay/ldconf/lib" >"$lay/ldconfig"
chmod +x "$lay/bin/python3.99" "$lay/bin/python3.99-config" "$lay/ldconfig"
find_nccl() {
  env -u NCCL_HOME -u CUDA_HOME RUN_ALL_SYSTEM_NCCL_DIRS="" RUN_ALL_LDCONFIG="$lay/ldconfig" \
    PATH="$lay/bin:/usr/bin:/bin" "$@" "$root/run_all.sh" --find-nccl 2>&1
}
got="$(find_nccl env VIRTUAL_ENV="$lay/venv" CONDA_PREFIX="$lay/conda")"
[[ "$got" == "libnccl: $lay/venv/lib/python3.12/site-packages/nvidia/nccl/lib (under $lay/venv)" ]] || fail "venv: $got"
got="$(find_nccl env -u VIRTUAL_ENV CONDA_PREFIX="$lay/conda")"
[[ "$got" == "libnccl: $lay/conda/lib (under $lay/conda)" ]] || fail "conda: $got"
got="$(find_nccl env -u VIRTUAL_ENV -u CONDA_PREFIX)"
[[ "$got" == "libnccl: $lay/pyenv/nvidia/nccl/lib (nvidia.nccl of $lay/bin/python3.99)" ]] || fail "python3.99: $got"
rm "$lay/bin/python3.99"
got="$(find_nccl env -u VIRTUAL_ENV -u CONDA_PREFIX)"
[[ "$got" == "libnccl: $lay/ldconf/lib (ldconfig -p)" ]] || fail "ldconfig: $got"
printf '#!/bin/sh\ntrue\n' >"$lay/ldconfig"
set +e
got="$(find_nccl env -u VIRTUAL_ENV -u CONDA_PREFIX)"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "nothing found: exit $rc, want 1"
grep -q 'no libnccl.so.2 found .*give --nccl-lib DIR' <<<"$got" || fail "no hint: $got"

"$root/run_all.sh" --help | grep -q '^usage: run_all.sh' || fail "--help"
echo "run_all_test: all checks passed"
