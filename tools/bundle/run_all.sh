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
#    verdict, 1 = one did not, 2 = bad usage, 124 = timed out. With
#    --allow-skip, a pair that refuses NCCL for want of a GPU is a SKIP.
# 3. With --bench, each benchmark on NCCL and on Gloo (the CPU comparison),
#    with the flags bench/regen.sh uses; JSON into OUT/records.
# Before anything runs: the driver must be new enough for the bundle's CUDA
# runtime, and the binaries must load (one line and exit 1 if not).
# Logs go to OUT/logs. Exit status 0 only when nothing failed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
  cat <<'USAGE'
usage: run_all.sh [--out DIR] [--timeout SECONDS] [--only REGEX] [--nccl-lib DIR]
                  [--no-pairs] [--bench] [--allow-skip] [--find-nccl] [--help]

  --out DIR          where logs/ and records/ go (default: out/ next to this script)
  --timeout SECONDS  per binary, default 600; a binary past it is killed (FAIL)
  --only REGEX       run only the binaries whose path matches REGEX
  --nccl-lib DIR     folder with libnccl.so.2 (default: searched in $NCCL_HOME/lib,
                     $CUDA_HOME/lib64, pip's nvidia/nccl/lib under $VIRTUAL_ENV
                     and $CONDA_PREFIX, $CONDA_PREFIX/lib, the nvidia.nccl
                     package of every python3* on PATH, /usr/local/cuda/lib64,
                     then /sbin/ldconfig -p)
  --no-pairs         run the tests only
  --bench            also run the benchmarks, each on nccl and on gloo
  --allow-skip       let gpu tests, and pairs and benchmarks that refuse NCCL,
                     skip when they see no GPU (default: fail)
  --find-nccl        print where libnccl.so.2 was found and exit (1: not found)
  --help             this text
USAGE
}

die_usage() {
  echo "run_all.sh: $*" >&2
  echo "run with --help for usage" >&2
  exit 2
}

out="$here/out" timeout_s=600 only="" nccl_dir="" run_pairs=1 run_bench=0 require_gpu=1 find_only=0
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
    --find-nccl) find_only=1; shift ;;
    --help | -h) usage; exit 0 ;;
    *) die_usage "unknown flag '$1'; allowed: --out, --timeout, --only, --nccl-lib, --no-pairs, --bench, --allow-skip, --find-nccl, --help" ;;
  esac
done
[[ -f "$here/tests.txt" ]] || die_usage "no tests.txt next to run_all.sh: not a bundle folder ($here)"

# Where libnccl.so.2 is, as "DIR (SOURCE)"; nothing when not found. pip's
# nvidia-nccl-cu* wheels put it in site-packages/nvidia/nccl/lib, conda's
# nccl package in $CONDA_PREFIX/lib. RUN_ALL_SYSTEM_NCCL_DIRS and
# RUN_ALL_LDCONFIG replace the fixed places (for the test only).
find_nccl() {
  local d py pydir
  has_nccl() { [[ -n "$1" ]] && compgen -G "$1/libnccl.so.2*" >/dev/null; }
  for d in "${NCCL_HOME:+$NCCL_HOME/lib}" "${CUDA_HOME:+$CUDA_HOME/lib64}"; do
    has_nccl "$d" && { echo "$d (\$NCCL_HOME / \$CUDA_HOME)"; return; }
  done
  for prefix in "${VIRTUAL_ENV:-}" "${CONDA_PREFIX:-}"; do
    [[ -n "$prefix" ]] || continue
    for d in "$prefix"/lib/python3*/site-packages/nvidia/nccl/lib "$prefix/lib"; do
      has_nccl "$d" && { echo "$d (under $prefix)"; return; }
    done
  done
  # Every python3 / python3.N on PATH, in PATH order (not the -config scripts).
  local IFS=:
  for pydir in $PATH; do
    for py in "$pydir"/python3 "$pydir"/python3.[0-9]*; do
      [[ -x "$py" && ! -d "$py" && "$py" != *-config ]] || continue
      d="$(timeout 20 "$py" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)"
      has_nccl "$d" && { echo "$d (nvidia.nccl of $py)"; return; }
    done
  done
  unset IFS
  for d in ${RUN_ALL_SYSTEM_NCCL_DIRS-/usr/local/cuda/lib64}; do
    has_nccl "$d" && { echo "$d (system)"; return; }
  done
  d="$("${RUN_ALL_LDCONFIG:-/sbin/ldconfig}" -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')"
  [[ -n "$d" ]] && echo "$(dirname "$d") (ldconfig -p)"
}
nccl_hint="run_all.sh: no libnccl.so.2 found (looked in \$NCCL_HOME/lib, \$CUDA_HOME/lib64, \$VIRTUAL_ENV, \$CONDA_PREFIX, the nvidia.nccl package of every python3* on PATH, /usr/local/cuda/lib64, ldconfig -p): NCCL binaries will not start; give --nccl-lib DIR (e.g. pip install nvidia-nccl-cu13, then its site-packages/nvidia/nccl/lib)"
nccl_from="--nccl-lib"
if [[ -z "$nccl_dir" ]]; then
  found="$(find_nccl)"
  nccl_dir="${found%% (*}"
  nccl_from="${found#* (}"
  nccl_from="${nccl_from%)}"
fi
if [[ $find_only -eq 1 ]]; then
  if [[ -n "$nccl_dir" ]]; then echo "libnccl: $nccl_dir ($nccl_from)"; exit 0; fi
  echo "$nccl_hint" >&2
  exit 1
fi
[[ -n "$nccl_dir" ]] || echo "$nccl_hint" >&2

# The oldest driver branch that runs a CUDA major version's runtime (minor
# version compatibility within a major: NVIDIA's CUDA compatibility guide);
# the same table as core/env/driver_check.cc (the doctor's check).
min_driver_for_cuda() {
  case "$1" in 11) echo 450 ;; 12) echo 525 ;; 13) echo 580 ;; *) echo "" ;; esac
}
# One line when the driver cannot run the bundle's CUDA runtime, else nothing.
# $1: the bundle's CUDA version ("13.0"), $2: the driver ("535.104.05").
driver_problem() {
  local cuda="$1" driver="$2" need
  need="$(min_driver_for_cuda "${cuda%%.*}")"
  [[ -n "$need" && "$driver" =~ ^[0-9]+ ]] || return 0
  if ((${driver%%.*} < need)); then
    echo "this bundle's CUDA $cuda runtime needs driver >= $need; this machine has $driver: rebuild with CUDA_PATH pointing at a CUDA $((${cuda%%.*} - 1)) toolkit"
  fi
}
mkdir -p "$out/logs" "$out/records" "$out/tmp" || exit 1
out="$(cd "$out" && pwd)"
export LD_LIBRARY_PATH="$here/lib${nccl_dir:+:$nccl_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

bundle_cuda="$(sed -n 's/^cuda: \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' "$here/MANIFEST.txt" 2>/dev/null | head -1)"
driver=""
gpu_count=0
if command -v nvidia-smi >/dev/null; then
  driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
  gpu_count="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')"
fi
problem="$(driver_problem "$bundle_cuda" "$driver")"
if [[ -n "$problem" ]]; then
  echo "run_all.sh: $problem" >&2
  exit 1
fi

# The binaries must load here (glibc, libstdc++ and libnccl versions: see
# README.md): one loader error is a line and exit 1, not a FAIL per binary.
load_probe="$(head -1 "$here/pairs.txt" 2>/dev/null)"
[[ -n "$load_probe" ]] || load_probe="$(head -1 "$here/tests.txt")"
if [[ -n "$load_probe" && -x "$here/bin/$load_probe" ]]; then
  load_err="$(timeout 60 "$here/bin/$load_probe" --help 2>&1 >/dev/null | grep -m1 -E "error while loading shared libraries|version \`[^']*' not found|symbol lookup error")"
  if [[ -n "$load_err" ]]; then
    echo "run_all.sh: the bundle's binaries do not load here: $load_err" >&2
    exit 1
  fi
fi

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname) $(uname -srm)"
  if [[ -n "$nccl_dir" ]]; then echo "libnccl: $nccl_dir ($nccl_from)"; else echo "libnccl: not found"; fi
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
  ) </dev/null >"$log" 2>&1  # stdin: not the list being read
}

# A binary's refusal of NCCL for want of a GPU (exit 2 from a pair's check,
# a rank's "backend 'nccl' needs a GPU", bench/padding's "--backend nccl
# needs a GPU"), "" otherwise.
gpu_refusal() {
  grep -m1 -oE -- "--backend nccl: .*|backend '?nccl'? needs a GPU.*" "$1" | head -c 200
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

pair_bad=0 pair_skip=0
if [[ $run_pairs -eq 1 ]]; then
  echo "== repro / fix binaries (--backend nccl)"
  pair_ok=0
  while read -r rel; do
    [[ -n "$rel" ]] && selected "$rel" || continue
    name="$(dirname "$rel")"
    name="${name//\//_}"
    log="$out/logs/$name.log"
    rm -f "$out/records/$name.json"  # never report a previous run's records
    run_binary "$rel" --backend nccl --json "$out/records/$name.json"
    rc=$?
    refusal=""
    [[ $rc -eq 2 && $require_gpu -eq 0 ]] && refusal="$(gpu_refusal "$log")"
    if [[ -n "$refusal" ]]; then
      pair_skip=$((pair_skip + 1))
      echo "SKIP        $rel ($refusal)"
      continue
    fi
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
  echo "pairs: $pair_ok as expected, $pair_bad not, $pair_skip skipped"
fi

# How each benchmark runs: one line per run, "ENGINE FLAGS..." (the flags
# bench/regen.sh uses; --share_gpu where fewer GPUs than ranks are visible),
# or "skip WHY".
bench_runs() {
  local share=""
  ((gpu_count < 4)) && share="--share_gpu"
  case "$1" in
    bench/sync_bn)  # shares the GPU itself on NCCL
      echo "nccl --backend nccl --world_size 4 --reps 5 --pin_cpus"
      echo "gloo --backend gloo --world_size 4 --reps 5 --pin_cpus" ;;
    bench/padding/padding)
      echo "nccl --backend nccl --world_size 4 --reps 9 --pin_cpus $share"
      echo "gloo --backend gloo --world_size 4 --reps 9 --pin_cpus" ;;
    bench/recorder/recorder) echo "gloo" ;;  # Gloo only: the recorder over a bare Gloo call
    bench/peers/*) echo "skip a helper of bench/peers' PyTorch comparison (bench/peers/*.py drive it)" ;;
    *) echo "default" ;;
  esac
}

if [[ $run_bench -eq 1 && -f "$here/bench.txt" ]]; then
  echo "== benchmarks (NCCL, and Gloo as the CPU comparison)"
  while read -r rel; do
    [[ -n "$rel" ]] && selected "$rel" || continue
    while read -r engine flags; do
      if [[ "$engine" == skip ]]; then
        echo "SKIP  $rel ($flags)"
        continue
      fi
      name="${rel//\//_}.$engine"
      log="$out/logs/$name.log"
      json="$out/records/$name.bench.json"
      rm -f "$json"
      # shellcheck disable=SC2086
      run_binary "$rel" $flags --benchmark_out="$json" --benchmark_out_format=json
      rc=$?
      refusal=""
      [[ $rc -ne 0 && $require_gpu -eq 0 && "$engine" == nccl ]] && refusal="$(gpu_refusal "$log")"
      if [[ -n "$refusal" ]]; then
        rm -f "$json"
        pair_skip=$((pair_skip + 1))
        echo "SKIP  $rel on $engine ($refusal)"
      elif [[ $rc -eq 0 ]]; then
        echo "OK    $rel on $engine -> records/$name.bench.json"
      else
        pair_bad=$((pair_bad + 1))
        echo "FAIL  $rel on $engine (exit $rc; log $log)"
        tail -n 6 "$log" | sed 's/^/      | /'
      fi
    done < <(bench_runs "$rel")
  done <"$here/bench.txt"
fi

rm -rf "$out/tmp"
[[ $failed -eq 0 && $pair_bad -eq 0 ]]
