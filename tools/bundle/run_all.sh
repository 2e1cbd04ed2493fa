#!/usr/bin/env bash
# run_all.sh: runs a ddp-pitfalls GPU-runner bundle (made by
# tools/bundle/make_bundle.sh) on a machine without Bazel.
#
# The work, in this order (the most informative first, so a --budget that
# ends early still brings back what matters): the gpu tests of core/ and
# third_party/ (kernels, the NCCL backend: everything else stands on them),
# every repro / fix binary on NCCL (the records the ledger judges), the
# pairs' _nccl test twins, the other gpu tests; then, apart and without
# CUDA MPS, the runs of mps_isolated.txt (they stall collectives on
# purpose); then with --bench the benchmarks (alone: nothing else runs
# beside a timing); last, once more without MPS, any run the MPS server
# refused (REFUSED: a client's fatal GPU error, not the run's own result).
#  - A test binary runs as `bazel test --config=gpu` would run it: cwd in its
#    runfiles, TEST_TMPDIR / TEST_SRCDIR set, DDP_PITFALLS_REQUIRE_GPU=1.
#    PASS / FAIL / SKIP, then "N passed, N failed, N skipped".
#  - A pair binary runs with --backend nccl --json OUT/records/<name>.json
#    (plus its line of shared_gpu_flags.txt where fewer than 4 GPUs are
#    visible, unless --full-size); 0 = every record had its expected verdict,
#    1 = one did not, 2 = bad usage, 124 = timed out.
#  - --jobs N runs N binaries side by side; --budget S starts nothing that
#    cannot get at least 15 s before S seconds are up, cuts what runs at S,
#    and lists what did not run.
# Ranks sharing a GPU: CUDA MPS is started when it can be (--mps), so their
# kernels share the GPU at once instead of being time-sliced; restarted
# (at most twice) after a refusal.
# Every record carries the bundle's commit (DDP_PITFALLS_COMMIT from
# MANIFEST.txt). Before anything runs: the driver must be new enough for the
# bundle's CUDA runtime, and the binaries must load (one line and exit 1 if
# not). Logs go to OUT/logs, one line per finished binary to
# OUT/summary.tsv as it finishes. Exit status 0 only when everything ran
# and passed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
  cat <<'USAGE'
usage: run_all.sh [--out DIR] [--timeout SECONDS] [--bench-timeout SECONDS] [--budget SECONDS] [--jobs N]
                  [--only REGEX] [--nccl-lib DIR] [--mps auto|on|off] [--isolated FILE] [--full-size]
                  [--no-pairs] [--bench] [--allow-skip] [--find-nccl] [--help]

  --out DIR          where logs/, records/ and summary.tsv go (default: out/
                     next to this script)
  --timeout SECONDS  per test or pair binary, default 600; a binary past it is
                     killed (FAIL)
  --bench-timeout SECONDS  per benchmark run, default 300 (their sizes are set
                     for it); a benchmark past it is killed and its cut JSON
                     kept as records/NAME.bench.json.partial
  --budget SECONDS   the whole run: binaries start in order of importance while
                     at least 15 s are left, each is cut at the budget's end,
                     the rest are listed as not run (default: no budget)
  --jobs N           binaries run side by side, 1 to 16 (default 1); benchmarks
                     always run alone
  --only REGEX       run only the binaries whose path matches REGEX
  --nccl-lib DIR     folder with libnccl.so.2 (default: searched in $NCCL_HOME/lib,
                     $CUDA_HOME/lib64, pip's nvidia/nccl/lib under $VIRTUAL_ENV
                     and $CONDA_PREFIX, $CONDA_PREFIX/lib, the nvidia.nccl
                     package of every python3* on PATH, /usr/local/cuda/lib64,
                     then /sbin/ldconfig -p)
  --mps MODE         CUDA MPS for ranks that share a GPU: auto (default) starts
                     nvidia-cuda-mps-control -d when fewer GPUs than 8 are
                     visible and it is on PATH, on fails without it, off never
  --isolated FILE    the binaries to run apart, without CUDA MPS, one glob
                     pattern per line (default: mps_isolated.txt next to this
                     script; /dev/null: none, e.g. to try one under MPS)
  --full-size        pairs and the NCCL benchmarks at their default sizes even on
                     a shared GPU (default: shared_gpu_flags.txt's flags and smaller
                     NCCL benchmark runs where fewer than 4 GPUs)
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

isolated_file="$here/mps_isolated.txt"
out="$here/out" timeout_s=600 bench_timeout_s=300 budget_s=0 jobs=1 only="" nccl_dir="" mps_mode=auto full_size=0
run_pairs=1 run_bench=0 require_gpu=1 find_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) [[ $# -ge 2 && -n "$2" ]] || die_usage "--out needs a folder"; out="$2"; shift 2 ;;
    --timeout)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || die_usage "--timeout must be a positive whole number of seconds, got '${2:-}'"
      timeout_s="$2"; shift 2 ;;
    --bench-timeout)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || die_usage "--bench-timeout must be a positive whole number of seconds, got '${2:-}'"
      bench_timeout_s="$2"; shift 2 ;;
    --budget)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || die_usage "--budget must be a positive whole number of seconds, got '${2:-}'"
      budget_s="$2"; shift 2 ;;
    --jobs)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ && "$2" -le 16 ]] || die_usage "--jobs must be a whole number from 1 to 16, got '${2:-}'"
      jobs="$2"; shift 2 ;;
    --only)
      [[ $# -ge 2 && -n "$2" ]] || die_usage "--only needs an extended regular expression (e.g. '^core/cuda/|^bench/sync_bn$')"
      # A Markdown table escapes | as \|, and a command copied from one
      # would match nothing: in an extended expression \| is a literal |,
      # which no binary's path holds.
      [[ "$2" != *'\|'* ]] ||
        die_usage "--only: '\\|' is a literal '|' in an extended regular expression (a Markdown table's escape of '|'), so '$2' would match nothing: write '|'"
      rc_re=0 && { [[ "" =~ $2 ]] || rc_re=$?; }
      ((rc_re != 2)) || die_usage "--only must be an extended regular expression (bash =~), got '$2'"
      only="$2"; shift 2 ;;
    --nccl-lib)
      [[ $# -ge 2 ]] || die_usage "--nccl-lib needs a folder"
      compgen -G "$2/libnccl.so*" >/dev/null || die_usage "--nccl-lib: no libnccl.so* in '$2'"
      nccl_dir="$2"; shift 2 ;;
    --mps)
      [[ $# -ge 2 && "$2" =~ ^(auto|on|off)$ ]] || die_usage "--mps must be auto, on or off, got '${2:-}'"
      mps_mode="$2"; shift 2 ;;
    --isolated)
      [[ $# -ge 2 && -r "$2" ]] || die_usage "--isolated needs a readable file (one glob pattern per line; /dev/null for none), got '${2:-}'"
      isolated_file="$2"; shift 2 ;;
    --full-size) full_size=1; shift ;;
    --no-pairs) run_pairs=0; shift ;;
    --bench) run_bench=1; shift ;;
    --allow-skip) require_gpu=0; shift ;;
    --find-nccl) find_only=1; shift ;;
    --help | -h) usage; exit 0 ;;
    *) die_usage "unknown flag '$1'; allowed: --out, --timeout, --bench-timeout, --budget, --jobs, --only, --nccl-lib, --mps, --isolated, --full-size, --no-pairs, --bench, --allow-skip, --find-nccl, --help" ;;
  esac
done
[[ -f "$here/tests.txt" ]] || die_usage "no tests.txt next to run_all.sh: not a bundle folder ($here)"
# An --only that selects nothing of what would run is a mistake, not a run
# of nothing that exits 0: say so before anything starts.
if [[ -n "$only" ]]; then
  lists=("$here/tests.txt")
  ((run_pairs)) && lists+=("$here/pairs.txt")
  ((run_bench)) && lists+=("$here/bench.txt")
  n_listed=0 n_chosen=0
  while read -r rel; do
    [[ -n "$rel" ]] || continue
    n_listed=$((n_listed + 1))
    if [[ "$rel" =~ $only ]]; then n_chosen=$((n_chosen + 1)); fi
  done < <(cat "${lists[@]}" 2>/dev/null)
  ((n_chosen > 0)) ||
    die_usage "--only '$only' selects none of the $n_listed binaries this run would consider ($(basename -a "${lists[@]}" | tr '\n' ' ' | sed 's/ $//'); paths such as core/cuda/norm_bits_test)"
fi
# `wait -n -p` (bash 5.1) tells which binary ended.
if ((BASH_VERSINFO[0] < 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] < 1))); then
  echo "run_all.sh: needs bash 5.1 or newer, this is $BASH_VERSION" >&2
  exit 1
fi

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


# Every record names the bundle's commit ("+dirty" when it was built from a
# tree with uncommitted changes), not "unknown": no git here to ask.
bundle_commit="$(sed -n 's/^commit: \([^ ]*\).*/\1/p' "$here/MANIFEST.txt" 2>/dev/null | head -1)"
if grep -q '^commit: .*(with uncommitted changes)' "$here/MANIFEST.txt" 2>/dev/null; then bundle_commit+="+dirty"; fi
export DDP_PITFALLS_COMMIT="${bundle_commit:-unknown}"

# --- CUDA MPS (see core/launch/mps.h for why): one daemon for the whole
# run, its pipe folder exported so that every launcher uses it and every
# NCCL rank reports to $DDP_MPS_REPORT whether it attached. The pipe lives
# under /tmp: a Unix socket's path must stay short (108 bytes).
mps_cost="ranks sharing a GPU are time-sliced (one H100, 2026-11-26: 90-140 ms per 4 KB allreduce at W = 4)"
mps_control="${RUN_ALL_MPS_CONTROL:-$(command -v nvidia-cuda-mps-control 2>/dev/null)}"
mps_started=0 mps_pipe="" mps_line="" mps_external=""
attached_summary() {  # the ranks' "<pid> mps=0|1" lines, counted
  local f="$1"
  [[ -s "$f" ]] || { echo "no NCCL rank reported whether it attached"; return; }
  echo "$(grep -c ' mps=1$' "$f") of $(grep -c . "$f") NCCL rank processes attached"
}
start_mps() {
  local existing why="" i
  if [[ $mps_mode == off ]]; then
    export DDP_MPS=0
    mps_line="off (--mps off): $mps_cost"
    return 0
  fi
  if [[ $mps_mode == auto ]] && ((gpu_count < 1 || gpu_count >= 8)); then
    mps_line="not started: $gpu_count GPUs visible, no ranks share one"
    return 0
  fi
  existing="${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}"
  if [[ -e "$existing/control" ]]; then
    export CUDA_MPS_PIPE_DIRECTORY="$existing"
    mps_external="$existing"
    mps_line="using the daemon at $existing (started elsewhere, left running)"
    return 0
  fi
  if [[ -z "$mps_control" || ! -x "$mps_control" ]]; then
    why="nvidia-cuda-mps-control not on PATH"
  else
    mps_pipe="$(mktemp -d /tmp/ddp-mps.XXXXXX)" || why="mktemp under /tmp failed"
  fi
  if [[ -z "$why" ]]; then
    mkdir -p "$out/mps/log"
    if CUDA_MPS_PIPE_DIRECTORY="$mps_pipe" CUDA_MPS_LOG_DIRECTORY="$out/mps/log" timeout 30 "$mps_control" -d \
      >"$out/mps/start.txt" 2>&1; then
      for ((i = 0; i < 200; i++)); do [[ -e "$mps_pipe/control" ]] && break; sleep 0.05; done
      [[ -e "$mps_pipe/control" ]] || why="$mps_control -d made no control pipe in 10 s"
    else
      why="$mps_control -d exited $?: $(tail -n 1 "$out/mps/start.txt")"
    fi
  fi
  if [[ -n "$why" ]]; then
    [[ -n "$mps_pipe" ]] && rm -rf "$mps_pipe"
    mps_pipe=""
    if [[ $mps_mode == on ]]; then
      echo "run_all.sh: --mps on but no CUDA MPS daemon: $why" >&2
      exit 1
    fi
    export DDP_MPS=0  # the launchers would only fail the same way, once per binary
    mps_line="not available ($why): $mps_cost"
    return 0
  fi
  mps_started=1
  export CUDA_MPS_PIPE_DIRECTORY="$mps_pipe" CUDA_MPS_LOG_DIRECTORY="$out/mps/log" DDP_MPS_REPORT="$out/mps/attached"
  mps_line="started ($mps_control -d, pipe $mps_pipe, logs in $out/mps/log): ranks sharing the GPU run their kernels at once"
}
# The real daemon leaves its control socket behind when it quits; its own
# log's "Exit with status" line (or the socket gone, as the test's stand-in
# does) says that it did.
mps_exited() {
  [[ ! -e "$mps_pipe/control" ]] || grep -q 'Exit with status' "$out/mps/log/control.log" 2>/dev/null
}
stop_mps() {
  ((mps_started)) || return 0
  mps_started=0
  local i
  echo quit | CUDA_MPS_PIPE_DIRECTORY="$mps_pipe" timeout 20 "$mps_control" >>"$out/mps/stop.txt" 2>&1
  for ((i = 0; i < 200; i++)); do mps_exited && break; sleep 0.05; done
  if mps_exited; then
    echo "run_all.sh: CUDA MPS stopped; $(attached_summary "$out/mps/attached")" >&2
    rm -rf "$mps_pipe"
  else
    echo "run_all.sh: CUDA MPS did not quit within 10 s (pipe $mps_pipe left); $(attached_summary "$out/mps/attached")" >&2
  fi
  # A later start writes a new control.log: keep this one's.
  [[ -f "$out/mps/log/control.log" ]] && mv "$out/mps/log/control.log" "$out/mps/log/control.$SECONDS.log"
  [[ -f "$out/mps/log/server.log" ]] && mv "$out/mps/log/server.log" "$out/mps/log/server.$SECONDS.log"
  return 0
}

# --- Runs that leave a collective unmatched on purpose (a rank killed,
# stopped or aborted inside an NCCL kernel, mps_isolated.txt) run apart,
# without MPS: on one H100 (results/gpu/h100-2026-11-27) such a run under
# the shared daemon took "a fatal GPU error", the server tore down every
# client and refused every new one (cudaErrorMpsServerNotReady) until all
# had exited, so one deliberate hang failed every binary after it.
# MPS is wanted in phases 1 (tests and pairs) and 3 (benchmarks), never in
# 2 (the isolated runs) and 4 (reruns of runs MPS refused). After a
# refusal the daemon is restarted (a fresh server) for what follows, at
# most twice; then the rest runs without MPS.
mps_isolated=()
if [[ -f "$isolated_file" || "$isolated_file" == /dev/null ]]; then
  while read -r pattern _; do
    [[ -n "$pattern" && "$pattern" != \#* ]] && mps_isolated+=("$pattern")
  done <"$isolated_file"
fi
isolated() {
  local p
  for p in "${mps_isolated[@]+"${mps_isolated[@]}"}"; do
    # shellcheck disable=SC2053  # the line is a glob pattern
    [[ "$1" == $p ]] && return 0
  done
  return 1
}
mps_now=off mps_wanted_once=0 mps_broken=0 mps_restarts=0 mps_refused=0 ddp_mps_given="${DDP_MPS-}"
want_mps() {  # $1: phase -> on|off
  if [[ $mps_mode == off ]] || ((mps_wanted_once == 0 || mps_restarts > 2)); then echo off; return; fi
  case "$1" in 1 | 3) echo on ;; *) echo off ;; esac
}
set_mps() {  # on|off, with nothing running
  local mode_given="$mps_mode"
  if [[ $1 == on ]]; then
    if [[ -n "$ddp_mps_given" ]]; then export DDP_MPS="$ddp_mps_given"; else unset DDP_MPS; fi
    if [[ -n "$mps_external" ]]; then export CUDA_MPS_PIPE_DIRECTORY="$mps_external"; else unset CUDA_MPS_PIPE_DIRECTORY; fi
    mps_mode=auto  # a daemon that fails to start again mid-run: go on without it
    start_mps
    mps_mode="$mode_given"
    echo "run_all.sh: CUDA MPS $mps_line" >&2
    if ((mps_started)) || [[ -n "$mps_external" ]]; then mps_now=on; else export DDP_MPS=0; fi
  else
    stop_mps
    export DDP_MPS=0
    unset DDP_MPS_REPORT  # "N of M attached" counts the ranks that were meant to
    # A daemon started elsewhere stays up: point the clients at a folder
    # with no daemon in it, and CUDA runs them without MPS.
    if [[ -n "$mps_external" ]]; then export CUDA_MPS_PIPE_DIRECTORY="$out/mps/none"; else unset CUDA_MPS_PIPE_DIRECTORY; fi
    mps_now=off
    echo "run_all.sh: CUDA MPS off for what follows: $2" >&2
  fi
  mps_broken=0
}
cleanup() {
  local pids
  pids="$(jobs -p)"
  # shellcheck disable=SC2086
  [[ -n "$pids" ]] && kill $pids 2>/dev/null && wait 2>/dev/null
  stop_mps
  rm -rf "$out/tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
start_mps
echo "run_all.sh: CUDA MPS $mps_line" >&2
if ((mps_started)) || [[ -n "$mps_external" ]]; then mps_now=on mps_wanted_once=1; fi

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname) $(uname -srm)"
  if [[ -n "$nccl_dir" ]]; then echo "libnccl: $nccl_dir ($nccl_from)"; else echo "libnccl: not found"; fi
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  else
    echo "gpu: nvidia-smi not found"
  fi
  echo "mps: $mps_line"
  echo "records' commit: $DDP_PITFALLS_COMMIT"
  # The manifest's head: commit, build, CUDA, arches, and which targets the
  # bundle holds (make_bundle.sh --only), so a record says what could run.
  sed -n '1,5p; /^selection: /p' "$here/MANIFEST.txt" 2>/dev/null
} >"$out/environment.txt"
cat "$out/environment.txt"

selected() { [[ -z "$only" || "$1" =~ $only ]]; }

# Runs binary $1 (bundle-relative) for at most $2 seconds with the rest as
# arguments, in its runfiles as Bazel would; output to log $log.
run_binary() {
  local rel="$1" limit="$2"
  shift 2
  local srcdir="$here/bin/$rel.runfiles" tmp
  tmp="$(mktemp -d "$out/tmp/XXXXXX")"
  local cwd="$srcdir/ddp_pitfalls"
  [[ -d "$cwd" ]] || cwd="$here"
  (
    cd "$cwd" || exit 1
    export TEST_TMPDIR="$tmp" TEST_SRCDIR="$srcdir" RUNFILES_DIR="$srcdir" TEST_WORKSPACE=ddp_pitfalls
    export TEST_TARGET="//$(dirname "$rel"):$(basename "$rel")" DDP_PITFALLS_REQUIRE_GPU="$require_gpu"
    exec timeout --kill-after=10 "$limit" "$here/bin/$rel" "$@"
  ) </dev/null >"$log" 2>&1  # stdin: not the list being read
}

# A binary's refusal of NCCL for want of a GPU (exit 2 from a pair's check,
# a rank's "backend 'nccl' needs a GPU", bench/padding's "--backend nccl
# needs a GPU"), "" otherwise.
gpu_refusal() {
  grep -m1 -oE -- "--backend nccl: .*|backend '?nccl'? needs a GPU.*" "$1" | head -c 200
}

# How each benchmark runs: one line per run, "ENGINE FLAGS..." (the flags
# bench/regen.sh uses; --share_gpu where fewer GPUs than ranks are visible),
# or "skip WHY".
# Where the 4 NCCL ranks share fewer GPUs, their rows are functional only
# (ddp_shared_gpu), so the NCCL runs take fewer shapes, payloads and
# repetitions: enough to show every method working on the device inside a
# lease's budget, not the full tables (the Gloo runs keep regen.sh's sizes;
# --full-size keeps the NCCL ones too).
bench_runs() {
  local small=0 share=""
  ((gpu_count < 4)) && share=" --share_gpu"
  ((gpu_count < 4 && full_size == 0)) && small=1
  case "$1" in
    bench/sync_bn)  # shares the GPU itself on NCCL
      if ((small)); then
        echo "nccl --backend nccl --world_size 4 --reps 3 --channels 16,256 --batch 2,32 --pin_cpus"
      else
        echo "nccl --backend nccl --world_size 4 --reps 5 --pin_cpus"
      fi
      echo "gloo --backend gloo --world_size 4 --reps 5 --pin_cpus" ;;
    bench/padding/padding)
      if ((small)); then
        echo "nccl --backend nccl --world_size 4 --reps 3 --profiles equal,straggler --payloads 1K,1M --pin_cpus$share"
      else
        echo "nccl --backend nccl --world_size 4 --reps 9 --pin_cpus$share"
      fi
      # Gloo's table is real at W = 4 with a core per rank; below 4 GPUs
      # (a lease) 3 repetitions of it fit --bench-timeout (9 took over
      # 120 s for a third of the table on the H100 machine's 16 cores).
      if ((small)); then
        echo "gloo --backend gloo --world_size 4 --reps 3 --pin_cpus"
      else
        echo "gloo --backend gloo --world_size 4 --reps 9 --pin_cpus"
      fi ;;
    bench/recorder/recorder) echo "gloo" ;;  # Gloo only: the recorder over a bare Gloo call
    # One process on one GPU, no collectives: "nccl" only so that its
    # refusal without a GPU reads as a skip, as the other GPU runs do.
    bench/norm_kernels/norm_kernels) echo "nccl --reps 5" ;;
    bench/peers/*) echo "skip a helper of bench/peers' PyTorch comparison (bench/peers/*.py drive it)" ;;
    *) echo "default" ;;
  esac
}

# A pair binary's extra flags on a shared GPU (shared_gpu_flags.txt: "PATH
# FLAGS..." lines, # comments), "" when none or not sharing.
shared_flags=0
if ((full_size == 0 && gpu_count < 4)) && [[ -f "$here/shared_gpu_flags.txt" ]]; then shared_flags=1; fi
pair_flags() {
  ((shared_flags)) || return 0
  awk -v rel="$1" '$1 == rel { $1 = ""; sub(/^ +/, ""); print; exit }' "$here/shared_gpu_flags.txt"
}

# Importance: the foundations first (a broken kernel or backend explains
# everything after it), then the records, then the pairs' test twins.
test_class() {
  case "$1" in
    core/* | third_party/*) echo 1 ;;
    repro/* | fixes/*) echo 3 ;;
    *) echo 4 ;;
  esac
}

# --- The work list: "CLASS<TAB>KIND<TAB>REL<TAB>ENGINE<TAB>FLAGS", run in
# CLASS order (stable). CLASS = 10 x phase + importance: phase 1 the tests
# and pairs (MPS), 2 the isolated ones (mps_isolated.txt, no MPS), 3 the
# benchmarks (alone, MPS), 4 the reruns of what MPS refused (no MPS).
work=()
add_work() { work+=("$1"$'\t'"$2"$'\t'"$3"$'\t'"${4:-}"$'\t'"${5:-}"); }
phase_of() { if isolated "$1"; then echo 2; else echo 1; fi; }
while read -r rel; do
  [[ -n "$rel" ]] && selected "$rel" && add_work "$(($(phase_of "$rel") * 10 + $(test_class "$rel")))" test "$rel"
done <"$here/tests.txt"
if [[ $run_pairs -eq 1 ]]; then
  while read -r rel; do
    [[ -n "$rel" ]] && selected "$rel" && add_work "$(($(phase_of "$rel") * 10 + 2))" pair "$rel" nccl "$(pair_flags "$rel")"
  done <"$here/pairs.txt"
fi
bench_skipped=()
if [[ $run_bench -eq 1 && -f "$here/bench.txt" ]]; then
  while read -r rel; do
    [[ -n "$rel" ]] && selected "$rel" || continue
    while read -r engine flags; do
      if [[ "$engine" == skip ]]; then bench_skipped+=("SKIP  $rel ($flags)"); else add_work 35 bench "$rel" "$engine" "$flags"; fi
    done < <(bench_runs "$rel")
  done <"$here/bench.txt"
fi
mapfile -t order < <(((${#work[@]})) && printf '%s\n' "${work[@]}" | sort -s -t $'\t' -k1,1n)

passed=0 failed=0 skipped=0 cut=0
pair_ok=0 pair_bad=0 pair_skip=0
bench_ok=0 bench_bad=0 bench_skip=0 bench_over=0
not_run=()
summary_tsv="$out/summary.tsv"
printf 'kind\tbinary\tstatus\tseconds\tdetail\n' >"$summary_tsv"
tsv() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$summary_tsv"; }
# Of the tests that passed: how many ran every case, and those that skipped
# cases (the shared-GPU sizes skip most of some tests' cases by design; a
# reader must see that apart from a test that ran them all).
passed_every=0 passed_some=0 most_skipped=()

# What test log $1 says ran, from its gtest lines: "1 of 9 cases; 8 skipped
# at shared-GPU sizes", "2 of 2 cases", "16 benchmark rows, no gtest case"
# (a benchmark smoke test prints rows, not gtest cases), "no gtest case",
# into case_text; and case_ran, case_total and case_skipped.
cases_of() {
  local log="$1" failed_cases reasons rows
  case_ran=$(grep -cE '^\[       OK \] [^ ]+ \([0-9]+ ms\)$' "$log")
  failed_cases=$(grep -cE '^\[  FAILED  \] [^ ]+ \([0-9]+ ms\)$' "$log")
  case_skipped=$(grep -cE '^\[  SKIPPED \] [^ ]+ \([0-9]+ ms\)$' "$log")
  case_ran=$((case_ran + failed_cases))
  case_total=$((case_ran + case_skipped))
  if ((case_total == 0)); then
    rows=$(grep -cE '^[^ ]+/[^ ]*[[:space:]]+[0-9.]+ (ns|us|ms|s)[[:space:]]+[0-9.]+ (ns|us|ms|s)[[:space:]]+[0-9]+' "$log")
    if ((rows > 0)); then case_text="$rows benchmark rows, no gtest case"; else case_text="no gtest case"; fi
    return
  fi
  local text="$case_ran of $case_total case"
  ((case_total == 1)) || text+="s"
  ((failed_cases > 0)) && text+=", $failed_cases failed"
  if ((case_skipped > 0)); then
    # Each skip's reason is the line after gtest's "FILE:LINE: Skipped";
    # core/testing's shared-GPU skips start with "shared GPU: ".
    reasons="$(awk 'found { print; found = 0 } /: Skipped$/ { found = 1 }' "$log")"
    local shared others
    shared=$(grep -c '^shared GPU: ' <<<"$reasons")
    others="$(grep -v '^shared GPU: ' <<<"$reasons" | grep . | sort | uniq -c | sort -rn |
      awk '{ n = $1; $1 = ""; printf "%s%d skipped:%s", (NR > 1 ? ", " : ""), n, $0 }' | head -c 200)"
    ((shared > 0)) && text+="; $shared skipped at shared-GPU sizes"
    if [[ -n "$others" ]]; then
      if ((shared > 0)); then text+=", $others"; else text+="; $others"; fi
    fi
    local unexplained=$((case_skipped - shared - $(grep -v '^shared GPU: ' <<<"$reasons" | grep -c .)))
    ((unexplained > 0)) && text+=", $unexplained skipped with no reason given"
  fi
  case_text="$text"
}

budget_note="" flags_note="their default flags"
((budget_s > 0)) && budget_note=", budget $budget_s s"
((shared_flags)) && flags_note="shared_gpu_flags.txt's flags ($gpu_count GPU visible; --full-size for their defaults)"
echo "== ${#order[@]} runs, $jobs at a time$budget_note; pairs with $flags_note"
apart="$(printf '%s\n' "${order[@]+"${order[@]}"}" | awk -F'\t' '$1 >= 20 && $1 < 30 { printf " %s", $3 }')"
[[ -n "$apart" ]] && echo "== then without CUDA MPS, apart (mps_isolated.txt: they stall collectives on purpose):$apart"
printf '%s\n' "${bench_skipped[@]+"${bench_skipped[@]}"}" | grep . || true

# The fields of work item $1 into kind rel engine flags, and its log and
# record paths.
item_fields() {
  IFS=$'\t' read -r cls kind rel engine flags <<<"${order[$1]}"
  case $kind in
    test) name="${rel//\//.}" ;;
    pair) name="$(dirname "$rel")"; name="${name//\//_}" ;;
    bench) name="${rel//\//_}.$engine" ;;
  esac
  log="$out/logs/$name.log"
}

# Starts item $1 in the background with at most $2 seconds.
start_item() {
  local idx="$1" limit="$2" cls kind rel engine flags name log
  item_fields "$idx"
  case $kind in
    test) run_binary "$rel" "$limit" & ;;
    pair)
      rm -f "$out/records/$name.json"  # never report a previous run's records
      # shellcheck disable=SC2086
      run_binary "$rel" "$limit" --backend nccl --json "$out/records/$name.json" $flags & ;;
    bench)
      rm -f "$out/records/$name.bench.json"
      # shellcheck disable=SC2086
      run_binary "$rel" "$limit" $flags --benchmark_out="$out/records/$name.bench.json" --benchmark_out_format=json & ;;
  esac
  running[$!]="$idx $limit $SECONDS $3"
}

# Reports item $1, which ended with status $2 after $3 seconds; $4 = 1 when
# its limit was the budget's end rather than --timeout.
report_item() {
  local idx="$1" rc="$2" secs="$3" by_budget="$4" cls kind rel engine flags name log ok skips reason note what refusal over_limit
  item_fields "$idx"
  # Refused by a CUDA MPS server that is recovering from a client's fatal
  # GPU error: not this binary's result. Once more at the end, without MPS.
  if [[ $rc -ne 0 && $cls -lt 40 ]] && grep -qE 'MpsServerNotReady|MPS server is not ready' "$log"; then
    mps_refused=$((mps_refused + 1)) mps_broken=1
    mv "$log" "${log%.log}.mps_refused.log"
    [[ $kind == pair ]] && rm -f "$out/records/$name.json"
    [[ $kind == bench ]] && rm -f "$out/records/$name.bench.json"
    echo "REFUSED $rel${engine:+ on $engine} (the CUDA MPS server refuses new clients after a client's fatal GPU error: $out/mps/log/server.*.log; log ${log%.log}.mps_refused.log): rerun without MPS at the end"
    tsv "$kind" "$rel${engine:+ on $engine}" mps_refused "$secs" "rerun without MPS at the end"
    order+=("$((40 + cls % 10))"$'\t'"$kind"$'\t'"$rel"$'\t'"$engine"$'\t'"$flags")
    return
  fi
  # bench/recorder exits 1 when its median is over its own limit, after
  # writing the whole record: a measured result (the H100 machine's clock
  # reads alone cost 90 ns of the 100), not a failed run.
  over_limit=""
  if [[ $kind == bench && $rc -eq 1 ]]; then over_limit="$(grep -m1 -E 'limit .*: EXCEEDED' "$log" | sed 's/^ *//' | head -c 160)"; fi
  # A benchmark killed mid-run leaves its JSON cut off: never beside the
  # whole ones under the same name.
  if [[ $kind == bench && $rc -ne 0 && -z "$over_limit" && -f "$out/records/$name.bench.json" ]]; then
    mv "$out/records/$name.bench.json" "$out/records/$name.bench.json.partial"
  fi
  if [[ ($rc -eq 124 || $rc -eq 137) && $by_budget -eq 1 ]]; then
    cut=$((cut + 1))
    echo "CUT   $rel${engine:+ on $engine} (stopped at the budget's end after $secs s; log $log)"
    tsv "$kind" "$rel${engine:+ on $engine}" cut "$secs" "the budget ended"
    return
  fi
  case $kind in
    test)
      ok=$(grep -cE '^\[       OK \] ' "$log")
      skips=$(grep -cE '^\[  SKIPPED \] [^ ]+ \([0-9]+ ms\)$' "$log")
      # A shell test (no gtest lines) says "skipped, no GPU: ..." instead.
      sh_skip=""
      ((ok == 0 && skips == 0)) && sh_skip="$(grep -m1 -E '^skipped, no GPU' "$log" | head -c 160)"
      if [[ $rc -eq 0 && $ok -eq 0 && ($skips -gt 0 || -n "$sh_skip") ]]; then
        skipped=$((skipped + 1))
        if [[ -n "$sh_skip" ]]; then
          reason="$sh_skip"
          echo "SKIP  $rel ($reason)"
        else
          reason="$(awk 'found { print; exit } /: Skipped$/ { found = 1 }' "$log" | head -c 160)"
          echo "SKIP  $rel ($skips skipped${reason:+: $reason})"
        fi
        tsv test "$rel" skip "$secs" "$reason"
      elif [[ $rc -eq 0 ]]; then
        passed=$((passed + 1))
        cases_of "$log"
        note="$case_text"
        if ((case_skipped > 0)); then
          passed_some=$((passed_some + 1))
          ((2 * case_skipped > case_total)) && most_skipped+=("$rel ($case_ran of $case_total cases)")
        else
          passed_every=$((passed_every + 1))
        fi
        echo "PASS  $rel ($note, ${secs} s)"
        tsv test "$rel" pass "$secs" "$note"
      else
        failed=$((failed + 1))
        if [[ $rc -eq 124 || $rc -eq 137 ]]; then what="timeout after $timeout_s s"; else what="exit $rc"; fi
        echo "FAIL  $rel ($what; log $log)"
        tail -n 15 "$log" | sed 's/^/      | /'
        tsv test "$rel" fail "$secs" "$what"
      fi ;;
    pair)
      refusal=""
      [[ $rc -eq 2 && $require_gpu -eq 0 ]] && refusal="$(gpu_refusal "$log")"
      if [[ -n "$refusal" ]]; then
        pair_skip=$((pair_skip + 1))
        echo "SKIP        $rel ($refusal)"
        tsv pair "$rel" skip "$secs" "$refusal"
        return
      fi
      case $rc in
        0) pair_ok=$((pair_ok + 1)); what="OK          every record has its expected verdict" ;;
        1) pair_bad=$((pair_bad + 1)); what="UNEXPECTED  a record did not have its expected verdict" ;;
        2) pair_bad=$((pair_bad + 1)); what="USAGE       exit 2" ;;
        124 | 137) pair_bad=$((pair_bad + 1)); what="TIMEOUT     killed after $timeout_s s" ;;
        *) pair_bad=$((pair_bad + 1)); what="CRASH       exit $rc" ;;
      esac
      echo "$what  $rel -> records/$name.json (${secs} s${flags:+; $flags})"
      [[ $rc -eq 0 ]] || tail -n 6 "$log" | sed 's/^/      | /'
      tsv pair "$rel" "$(awk '{print tolower($1)}' <<<"$what")" "$secs" "${flags:-default flags}" ;;
    bench)
      refusal=""
      [[ $rc -ne 0 && $require_gpu -eq 0 && "$engine" == nccl ]] && refusal="$(gpu_refusal "$log")"
      if [[ -n "$refusal" ]]; then
        rm -f "$out/records/$name.bench.json"
        bench_skip=$((bench_skip + 1))
        echo "SKIP  $rel on $engine ($refusal)"
        tsv bench "$rel on $engine" skip "$secs" "$refusal"
      elif [[ $rc -eq 0 || -n "$over_limit" ]]; then
        bench_ok=$((bench_ok + 1))
        note=""
        [[ -n "$over_limit" ]] && note="; over its own limit: $over_limit" bench_over=$((bench_over + 1))
        echo "OK    $rel on $engine -> records/$name.bench.json (${secs} s$note)"
        tsv bench "$rel on $engine" ok "$secs" "$flags$note"
      else
        bench_bad=$((bench_bad + 1))
        what="exit $rc"
        [[ $rc -eq 124 || $rc -eq 137 ]] && what="timeout after $bench_timeout_s s"
        [[ -f "$out/records/$name.bench.json.partial" ]] && what+="; its cut JSON: records/$name.bench.json.partial"
        echo "FAIL  $rel on $engine ($what; log $log)"
        tail -n 6 "$log" | sed 's/^/      | /'
        tsv bench "$rel on $engine" fail "$secs" "$what"
      fi ;;
  esac
}

# --- The scheduler: up to $jobs items at once, in order; a benchmark only
# when nothing else runs, and nothing beside it.
declare -A running=()
min_start=15 next=0 solo_running=0
while ((next < ${#order[@]} || ${#running[@]} > 0)); do
  while ((next < ${#order[@]} && ${#running[@]} < jobs && solo_running == 0)); do
    IFS=$'\t' read -r cls kind _ <<<"${order[$next]}"
    if [[ $kind == bench ]] && ((${#running[@]} > 0)); then break; fi
    # MPS on or off, or a fresh server after a refusal: only with nothing running.
    want="$(want_mps $((cls / 10)))"
    if [[ $want != "$mps_now" ]] || ((mps_broken)); then
      ((${#running[@]} > 0)) && break
      if ((mps_broken)) && [[ $want == on ]]; then
        mps_restarts=$((mps_restarts + 1))
        [[ -n "$mps_external" ]] && mps_restarts=3  # not ours to restart
        want="$(want_mps $((cls / 10)))"
        if [[ $want == on ]]; then
          set_mps off "restarting it after a client's fatal GPU error (restart $mps_restarts of 2)"
        fi
      fi
      if [[ $want == on ]]; then
        set_mps on
      elif [[ $mps_now == on ]]; then
        case $((cls / 10)) in
          2) set_mps off "the runs of mps_isolated.txt (they stall collectives on purpose)" ;;
          4) set_mps off "the reruns of what the MPS server refused" ;;
          *) set_mps off "the MPS server failed more than twice" ;;
        esac
      else
        mps_broken=0
      fi
    fi
    full=$timeout_s
    [[ $kind == bench ]] && full=$bench_timeout_s
    limit=$full
    if ((budget_s > 0)); then
      left=$((budget_s - SECONDS))
      if ((left < min_start)); then
        for ((k = next; k < ${#order[@]}; k++)); do
          IFS=$'\t' read -r _ kind rel engine _ <<<"${order[$k]}"
          not_run+=("$rel${engine:+ on $engine}")
          tsv "$kind" "$rel${engine:+ on $engine}" not_run 0 "budget of $budget_s s"
        done
        next=${#order[@]}
        break
      fi
      ((left < limit)) && limit=$left
    fi
    start_item "$next" "$limit" "$full"
    next=$((next + 1))
    [[ $kind == bench ]] && solo_running=1
  done
  ((${#running[@]} > 0)) || continue
  done_pid=""
  wait -n -p done_pid
  rc=$?
  [[ -n "$done_pid" && -n "${running[$done_pid]:-}" ]] || continue
  read -r idx limit began full <<<"${running[$done_pid]}"
  unset "running[$done_pid]"
  solo_running=0
  by_budget=0
  ((budget_s > 0 && limit < full)) && by_budget=1
  report_item "$idx" "$rc" "$((SECONDS - began))" "$by_budget"
done

echo "== summary"
echo "$passed passed, $failed failed, $skipped skipped"
if ((passed > 0)); then
  most=""
  ((${#most_skipped[@]} > 0)) && most=" (${#most_skipped[@]} of them most of their cases: $(printf '%s, ' "${most_skipped[@]}" | sed 's/, $//'))"
  echo "of the $passed passed: $passed_every ran every case, $passed_some passed with cases skipped$most"
fi
[[ $run_pairs -eq 1 ]] && echo "pairs: $pair_ok as expected, $pair_bad not, $pair_skip skipped"
if [[ $run_bench -eq 1 ]]; then
  over_note=""
  ((bench_over > 0)) && over_note=" ($bench_over over its own limit)"
  echo "benchmarks: $bench_ok ok$over_note, $bench_bad failed, $bench_skip skipped"
fi
((cut > 0)) && echo "cut at the budget's end: $cut"
if ((${#not_run[@]} > 0)); then
  echo "not run (budget of $budget_s s): ${#not_run[@]}: ${not_run[*]}"
fi
[[ -s "$out/mps/attached" ]] && echo "CUDA MPS: $(attached_summary "$out/mps/attached")"
((mps_refused > 0)) && echo "refused by the CUDA MPS server (a client's fatal GPU error) and rerun without MPS: $mps_refused"
echo "records and logs: $out (summary.tsv: one line per run); records' commit: $DDP_PITFALLS_COMMIT"
[[ $failed -eq 0 && $pair_bad -eq 0 && $bench_bad -eq 0 && $cut -eq 0 && ${#not_run[@]} -eq 0 ]]
