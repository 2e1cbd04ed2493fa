#!/usr/bin/env bash
# Counts the worlds and collectives a test binary makes, case by case, or a
# pair binary makes in one run: runs it with DDP_PITFALLS_COUNT_FILE set
# (core/comm/options.h: every communicator appends a line as it ends) and
# prints one line per case (or run):
#
#   <case> <seconds here> <status> worlds{W:n,...} collectives{W:n,...} model=<s>
#
# A world is one communicator (its store names it); its collectives are the
# most any of its ranks entered (a rank that crashed wrote no line). Run it
# on the Gloo build: the NCCL twin makes the same calls (cases that skip on
# NCCL, such as Gloo-only rows, are counted here all the same).
#
# model: the shared-GPU cost model of core/testing/README.md, what the same
# case would take with its NCCL ranks sharing one GPU (H100, no MPS):
# START_S per world + PER_COLL_S x W per collective; deliberate waits (a
# deadline a case waits out) are not in it.
#
#   core/testing/count_collectives.sh bazel-bin/repro/autograd_lost_gather/test [FILTER]
#   core/testing/count_collectives.sh --run bazel-bin/repro/autograd_lost_gather/autograd_lost_gather --steps 40
#
# DDP_TEST_SHARED_GPU_SIZES=1 in the environment counts a test's shared-GPU
# sizes (core/testing/backend.h).
set -euo pipefail

usage() {
  echo "usage: $0 TEST_BINARY [GTEST_FILTER] | $0 --run BINARY [ARGS...]" >&2
  exit 2
}
[[ $# -ge 1 && "$1" != --help && "$1" != -h ]] || usage
mode=test
if [[ "$1" == --run ]]; then
  mode=run
  shift
  [[ $# -ge 1 ]] || usage
else
  [[ $# -le 2 ]] || usage
fi
bin=$1
shift
[[ -x "$bin" ]] || { echo "$0: '$bin' is not an executable file" >&2; exit 2; }

# Calibrated on the H100 run of 2026-11-26 (core/testing/README.md).
start_s=${START_S:-9.5}
per_coll_s=${PER_COLL_S:-0.0097}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The binary's runfiles (golden files), as bazel test or run_all.sh set them.
export TEST_SRCDIR="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin").runfiles"
export TEST_WORKSPACE=ddp_pitfalls
export TEST_TMPDIR="$work/tmp"
mkdir -p "$TEST_TMPDIR"

# summarize NAME SECONDS STATUS: the census file as one line.
summarize() {
  touch "$work/count.txt"
  awk -v name="$1" -v secs="$2" -v status="$3" -v start_s="$start_s" -v per_coll_s="$per_coll_s" '
    {
      split($1, b, "="); split($2, w, "="); split($4, k, "=");
      where = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ [^ ]+ /, "", where);
      # The Gloo helper of an NCCL communicator in checked mode: not a world.
      if (where ~ /\[check\]$/) next;
      key = b[2] " " w[2] " " where;
      if (!(key in most) || k[2] + 0 > most[key]) most[key] = k[2] + 0;
    }
    END {
      for (key in most) { split(key, p, " "); worlds[p[2]]++; colls[p[2]] += most[key] }
      out = sprintf("%s %.1f %s worlds{", name, secs, status);
      sep = ""; for (x = 1; x <= 64; x++) if (x in worlds) { out = out sep x ":" worlds[x]; sep = "," }
      out = out "} collectives{";
      sep = ""; for (x = 1; x <= 64; x++) if (x in colls) { out = out sep x ":" colls[x]; sep = "," }
      model = 0; for (x in worlds) model += start_s * worlds[x] + per_coll_s * x * colls[x];
      print out sprintf("} model=%.0f", model);
    }' "$work/count.txt"
}

# run NAME COMMAND...: runs it with the census on, then summarizes.
run() {
  local name=$1 status=ok start end
  shift
  rm -f "$work/count.txt"
  start=$(date +%s.%N)
  DDP_PITFALLS_COUNT_FILE="$work/count.txt" "$@" >"$work/log" 2>&1 || status="exit$?"
  end=$(date +%s.%N)
  grep -q '^\[  SKIPPED \]' "$work/log" && status=skipped
  summarize "$name" "$(echo "$end - $start" | bc)" "$status"
}

if [[ $mode == run ]]; then
  run "$bin${*:+ $*}" "$bin" "$@"
  exit 0
fi
filter=${1:-*}
cases=$("$bin" --gtest_list_tests --gtest_filter="$filter" | awk '
  /^[^ ]/ { suite = $1; next }
  /^  / { print suite $1 }')
for c in $cases; do
  run "$c" "$bin" --gtest_filter="$c"
done
