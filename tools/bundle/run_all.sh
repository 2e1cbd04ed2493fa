#!/usr/bin/env bash
# run_all.sh: runs a ddp-pitfalls GPU-runner bundle (made by
# tools/bundle/make_bundle.sh) on a machine without Bazel.
#
# 1. Every gpu-tagged test binary (tests.txt), as `bazel test --config=gpu`
#    would run it: cwd in its runfiles, TEST_TMPDIR / TEST_SRCDIR set, and
#    DDP_PITFALLS_REQUIRE_GPU=1 (a missing GPU fails instead of skipping).
#    One line per binary (PASS / FAIL / SKIP), then "N passed, N failed, N skipped".
# 2. Every repro / fix binary (pairs.txt) with --backend nccl --json
#    OUT/records/<name>.json; exit status 0 = every record had its expected
#    verdict, 1 = one did not, 2 = bad usage, 124 = timed out.
# 3. With --bench, every bench binary (bench.txt), JSON into OUT/records.
# Logs go to OUT/logs. Exit status 0 only when nothing failed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
  cat <<'USAGE'
usage: run_all.sh [--out DIR] [--timeout SECONDS] [--only REGEX] [--nccl-lib DIR]
                  [--no-pairs] [--bench] [--allow-skip] [--help]

  --out DIR          where logs/ and records/ go (default: out/ next to this script)
  --timeout SECONDS  per binary, default 600; a binary past it is killed (FAIL)
  --only REGEX       run only the binaries whose path matches REGEX
  --nccl-lib DIR     folder with libnccl.so.2 (default: searched in $NCCL_HOME,
                     $CUDA_HOME, /usr/local/cuda, Python's nvidia-nccl, ldconfig)
  --no-pairs         run the tests only
  --bench            also run the bench binaries
  --allow-skip       let gpu tests skip when they see no GPU (default: fail)
  --help             this text
USAGE
}

die_usage() {
  echo "run_all.sh: $*" >&2
  echo "run with --help for usage" >&2
  exit 2
}

out="$here/out" timeout_s=600 only="" nccl_dir="" run_pairs=1 run_bench=0 require_gpu=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) [[ $# -ge 2 && -n "$2" ]] || die_usage "--out needs a folder"; out="$2"; shift 2 ;;
    --timeout)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || die_usage "--timeout must be a positive whole number of seconds, got '${2:-}'"
      timeout_s="$2"; shift 2 ;;
    --only) [[ $# -ge 2 ]] || die_usage "--only needs a regular expression"; only="$2"; shift 2 ;;
    --nccl-lib)
      [[ $# -ge 2 ]] || die_usage "--nccl-lib needs a folder"
      compgen -G "$2/libnccl.so*" >/dev/null || die_usage "--nccl-lib: no libnccl.so* in '$2'"
      nccl_dir="$2"; shift 2 ;;
    --no-pairs) run_pairs=0; shift ;;
    --bench) run_bench=1; shift ;;
    --allow-skip) require_gpu=0; shift ;;
    --help | -h) usage; exit 0 ;;
    *) die_usage "unknown flag '$1'; allowed: --out, --timeout, --only, --nccl-lib, --no-pairs, --bench, --allow-skip, --help" ;;
  esac
done
[[ -f "$here/tests.txt" ]] || die_usage "no tests.txt next to run_all.sh: not a bundle folder ($here)"
mkdir -p "$out/logs" "$out/records" "$out/tmp" || exit 1
out="$(cd "$out" && pwd)"

find_nccl() {
  local d
  for d in "${NCCL_HOME:+$NCCL_HOME/lib}" "${CUDA_HOME:+$CUDA_HOME/lib64}" /usr/local/cuda/lib64 \
    "$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)"; do
    if [[ -n "$d" ]] && compgen -G "$d/libnccl.so.2*" >/dev/null; then
      echo "$d"
      return
    fi
  done
  d="$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')"
  [[ -n "$d" ]] && dirname "$d"
}
[[ -n "$nccl_dir" ]] || nccl_dir="$(find_nccl)"
if [[ -z "$nccl_dir" ]]; then
  echo "run_all.sh: no libnccl.so.2 found; NCCL binaries will not start (give --nccl-lib DIR)" >&2
fi
export LD_LIBRARY_PATH="$here/lib${nccl_dir:+:$nccl_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname) $(uname -srm)"
  echo "libnccl: ${nccl_dir:-not found}"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  else
    echo "gpu: nvidia-smi not found"
  fi
  sed -n '1,4p' "$here/MANIFEST.txt" 2>/dev/null
} >"$out/environment.txt"
cat "$out/environment.txt"

selected() { [[ -z "$only" || "$1" =~ $only ]]; }

# Runs binary $1 (bundle-relative) with the rest as arguments, in its
# runfiles as Bazel would, under the deadline; output to log $log.
run_binary() {
  local rel="$1"
  shift
  local srcdir="$here/bin/$rel.runfiles" tmp
  tmp="$(mktemp -d "$out/tmp/XXXXXX")"
  local cwd="$srcdir/ddp_pitfalls"
  [[ -d "$cwd" ]] || cwd="$here"
  (
    cd "$cwd" || exit 1
    export TEST_TMPDIR="$tmp" TEST_SRCDIR="$srcdir" RUNFILES_DIR="$srcdir" TEST_WORKSPACE=ddp_pitfalls
    export TEST_TARGET="//$(dirname "$rel"):$(basename "$rel")" DDP_PITFALLS_REQUIRE_GPU="$require_gpu"
    exec timeout --kill-after=10 "$timeout_s" "$here/bin/$rel" "$@"
  ) >"$log" 2>&1
}

passed=0 failed=0 skipped=0
echo "== gpu tests"
while read -r rel; do
  [[ -n "$rel" ]] && selected "$rel" || continue
  log="$out/logs/${rel//\//.}.log"
  start=$SECONDS
  run_binary "$rel"
  rc=$?
  secs=$((SECONDS - start))
  ok=$(grep -cE '^\[       OK \] ' "$log")
  skips=$(grep -cE '^\[  SKIPPED \] [^ ]+ \([0-9]+ ms\)$' "$log")
  if [[ $rc -eq 0 && $ok -eq 0 && $skips -gt 0 ]]; then
    skipped=$((skipped + 1))
    reason="$(awk 'found { print; exit } /: Skipped$/ { found = 1 }' "$log" | head -c 160)"
    echo "SKIP  $rel ($skips skipped${reason:+: $reason})"
  elif [[ $rc -eq 0 ]]; then
    passed=$((passed + 1))
    note=""
    [[ $skips -gt 0 ]] && note=", $skips skipped"
    echo "PASS  $rel ($ok ok$note, ${secs} s)"
  else
    failed=$((failed + 1))
    if [[ $rc -eq 124 || $rc -eq 137 ]]; then why="timeout after $timeout_s s"; else why="exit $rc"; fi
    echo "FAIL  $rel ($why; log $log)"
    tail -n 15 "$log" | sed 's/^/      | /'
  fi
done <"$here/tests.txt"
echo "$passed passed, $failed failed, $skipped skipped"

pair_bad=0
if [[ $run_pairs -eq 1 ]]; then
  echo "== repro / fix binaries (--backend nccl)"
  pair_ok=0
  while read -r rel; do
    [[ -n "$rel" ]] && selected "$rel" || continue
    name="$(dirname "$rel")"
    name="${name//\//_}"
    log="$out/logs/$name.log"
    run_binary "$rel" --backend nccl --json "$out/records/$name.json"
    rc=$?
    case $rc in
      0) pair_ok=$((pair_ok + 1)); what="OK          every record has its expected verdict" ;;
      1) pair_bad=$((pair_bad + 1)); what="UNEXPECTED  a record did not have its expected verdict" ;;
      2) pair_bad=$((pair_bad + 1)); what="USAGE       exit 2" ;;
      124 | 137) pair_bad=$((pair_bad + 1)); what="TIMEOUT     killed after $timeout_s s" ;;
      *) pair_bad=$((pair_bad + 1)); what="CRASH       exit $rc" ;;
    esac
    echo "$what  $rel -> records/$name.json"
    [[ $rc -eq 0 ]] || tail -n 6 "$log" | sed 's/^/      | /'
  done <"$here/pairs.txt"
  echo "pairs: $pair_ok as expected, $pair_bad not"
fi

if [[ $run_bench -eq 1 && -f "$here/bench.txt" ]]; then
  echo "== bench binaries"
  while read -r rel; do
    [[ -n "$rel" ]] && selected "$rel" || continue
    name="${rel//\//_}"
    log="$out/logs/$name.log"
    run_binary "$rel" --benchmark_out="$out/records/$name.bench.json" --benchmark_out_format=json
    rc=$?
    if [[ $rc -eq 0 ]]; then echo "OK    $rel"; else pair_bad=$((pair_bad + 1)); echo "FAIL  $rel (exit $rc; log $log)"; fi
  done <"$here/bench.txt"
fi

rm -rf "$out/tmp"
[[ $failed -eq 0 && $pair_bad -eq 0 ]]
