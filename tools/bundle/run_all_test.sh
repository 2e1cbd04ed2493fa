#!/usr/bin/env bash
# run_all.sh on a fake bundle whose "binaries" are small scripts that pass,
# fail, skip, hang, check their environment, and act as repro/fix pairs.
# Checks the per-binary lines, the summary line, the records and exit codes.
set -euo pipefail

run_all="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
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
# Passes only if it runs as Bazel would run it.
mkdir -p "$root/bin/pkg/env_test.runfiles/ddp_pitfalls"
make_bin pkg/env_test '
[[ -d "$TEST_TMPDIR" && -w "$TEST_TMPDIR" ]] || { echo "bad TEST_TMPDIR"; exit 1; }
[[ "$TEST_SRCDIR" == */bin/pkg/env_test.runfiles ]] || { echo "bad TEST_SRCDIR $TEST_SRCDIR"; exit 1; }
[[ "$PWD" == "$TEST_SRCDIR/ddp_pitfalls" ]] || { echo "bad cwd $PWD"; exit 1; }
[[ "$DDP_PITFALLS_REQUIRE_GPU" == 1 ]] || { echo "GPU not required"; exit 1; }
[[ "$LD_LIBRARY_PATH" == */lib:*/nccl* ]] || { echo "bad LD_LIBRARY_PATH $LD_LIBRARY_PATH"; exit 1; }
echo "[       OK ] Env.AsBazel (0 ms)"'
printf '%s\n' pkg/pass_test pkg/skip_test pkg/fail_test pkg/hang_test pkg/env_test >"$root/tests.txt"
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
grep -qx '2 passed, 2 failed, 1 skipped' <<<"$output" || fail "summary line"
grep -q '^PASS  pkg/pass_test (2 ok, ' <<<"$output" || fail "pass line"
grep -q '^PASS  pkg/env_test ' <<<"$output" || fail "env_test did not see Bazel's environment"
grep -q '^SKIP  pkg/skip_test (1 skipped: skipped, no GPU: fake reason)' <<<"$output" || fail "skip line"
grep -q '^FAIL  pkg/fail_test (exit 1; ' <<<"$output" || fail "fail line"
grep -q '^FAIL  pkg/hang_test (timeout after 2 s; ' <<<"$output" || fail "timeout line"
grep -q '^OK .* repro/bug/bug -> records/repro_bug.json' <<<"$output" || fail "repro line"
grep -q '^UNEXPECTED .* fixes/bug/bug' <<<"$output" || fail "fix line"
grep -qx 'pairs: 1 as expected, 1 not' <<<"$output" || fail "pairs summary"
grep -q '"verdict": "reproduced"' "$TEST_TMPDIR/out/records/repro_bug.json" || fail "record not written"
[[ -f "$TEST_TMPDIR/out/environment.txt" ]] || fail "no environment.txt"

# --only selects; nothing failing -> exit 0.
"$root/run_all.sh" --only 'pass|skip' --no-pairs --nccl-lib "$TEST_TMPDIR/nccl" --out "$TEST_TMPDIR/out2" >"$TEST_TMPDIR/only.txt" 2>&1 ||
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
"$root/run_all.sh" --help | grep -q '^usage: run_all.sh' || fail "--help"
echo "run_all_test: all checks passed"
