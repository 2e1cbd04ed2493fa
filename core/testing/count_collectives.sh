#!/usr/bin/env bash
# Counts, case by case, the worlds and collectives a test binary makes: runs
# each gtest case alone with DDP_PITFALLS_COUNT_FILE set (core/comm/options.h:
# every communicator appends a line as it ends) and prints one line per case:
#
#   <case> <seconds here> <status> worlds{W:n,...} collectives{W:n,...} [gloo helper ...]
#
# A world is one communicator (its store names it); its collectives are the
# most any of its ranks entered (a rank that crashed wrote no line). Run it
# on the Gloo twin of a pair test: the NCCL twin makes the same calls.
#
#   bazel build //repro/autograd_lost_gather:test
#   core/testing/count_collectives.sh bazel-bin/repro/autograd_lost_gather/test [FILTER]
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 || "$1" == --help || "$1" == -h ]]; then
  echo "usage: $0 TEST_BINARY [GTEST_FILTER]" >&2
  exit 2
fi
bin=$1
filter=${2:-*}
[[ -x "$bin" ]] || { echo "$0: TEST_BINARY '$bin' is not an executable file" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The test's runfiles (golden files), as bazel test would set them.
export TEST_SRCDIR="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin").runfiles"
export TEST_WORKSPACE=ddp_pitfalls
export TEST_TMPDIR="$work/tmp"
mkdir -p "$TEST_TMPDIR"

cases=$("$bin" --gtest_list_tests --gtest_filter="$filter" | awk '
  /^[^ ]/ { suite = $1; next }
  /^  / { print suite $1 }')

for c in $cases; do
  file="$work/count.txt"
  rm -f "$file"
  start=$(date +%s.%N)
  status=ok
  DDP_PITFALLS_COUNT_FILE="$file" "$bin" --gtest_filter="$c" >"$work/log" 2>&1 || status=FAILED
  grep -q '^\[  SKIPPED \]' "$work/log" && status=skipped
  end=$(date +%s.%N)
  touch "$file"
  awk -v name="$c" -v secs="$(echo "$end - $start" | bc)" -v status="$status" '
    {
      split($1, b, "="); split($2, w, "="); split($4, k, "=");
      where = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ [^ ]+ /, "", where);
      if (where ~ /\[check\]$/) { hkey = w[2] " " where; if (k[2] + 0 > hmost[hkey]) hmost[hkey] = k[2] + 0; next }
      key = b[2] " " w[2] " " where;
      if (!(key in most) || k[2] + 0 > most[key]) most[key] = k[2] + 0;
    }
    END {
      for (key in most) { split(key, p, " "); worlds[p[2]]++; colls[p[2]] += most[key] }
      for (key in hmost) { split(key, p, " "); helper[p[1]] += hmost[key] }
      out = sprintf("%s %.1f %s worlds{", name, secs, status);
      sep = ""; for (x = 1; x <= 64; x++) if (x in worlds) { out = out sep x ":" worlds[x]; sep = "," }
      out = out "} collectives{";
      sep = ""; for (x = 1; x <= 64; x++) if (x in colls) { out = out sep x ":" colls[x]; sep = "," }
      out = out "}";
      hs = ""; for (x = 1; x <= 64; x++) if (x in helper) hs = hs " " x ":" helper[x];
      if (hs != "") out = out " gloo_helper{" substr(hs, 2) "}";
      print out;
    }' "$file"
done
