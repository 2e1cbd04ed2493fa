#!/usr/bin/env bash
# bench/regen.sh [padding|peers|profile|sync_bn|recorder|all] [--no-tables] — regenerates the
# committed benchmark JSON (results/bench_padding_w{2,4}.json,
# results/bench_peers_w{2,4}.json, results/bench_torch_norm_split.json,
# results/bench_profile_small.json, results/bench_cpu_split.json,
# results/bench_padding_congestion_{bbr,cubic,cubic_piece4096KiB}.json,
# results/bench_sync_bn.json, results/bench_recorder.json) and the README
# tables made from them (bench/tables.py --update; the recorder's table by
# bench/recorder/table.py --update). --no-tables: the JSON only (as
# tools/regen_all.sh runs it, rewriting every table at its end: a README
# rewritten mid-run would mark the later records +dirty).
#
# Timings are only worth committing from a quiet machine: before each run
# the script waits until the 1-minute load average is below MAX_LOAD
# (default 0.7), for at most WAIT_S seconds (default 1800), and then gives
# up (exit 1) unless FORCE=1 (bench/quiet.sh; congestion.sh waits the same
# way before each of its runs). The load at the start of every run and next
# to every entry is recorded in the JSON either way.
#
# Run from anywhere; about 25 minutes for padding (9 repetitions, then
# bench/padding/cpu_split.py and bench/padding/congestion.sh), 13 for peers,
# 6 for profile, 2 for sync_bn (W = 2), 1 for recorder, on the 2-core
# machine this was written on (plus any wait for quiet). profile needs perf
# and padding network namespaces (root).
set -euo pipefail
cd "$(dirname "$0")/.."
what=all
tables=1
for arg in "$@"; do
  case "$arg" in
    padding | peers | profile | sync_bn | recorder | all) what="$arg" ;;
    --no-tables) tables=0 ;;
    *) echo "regen: unknown argument '$arg' (allowed: padding, peers, profile, sync_bn, recorder, all, --no-tables)" >&2
       exit 2 ;;
  esac
done
source bench/quiet.sh  # wait_quiet regen

bazel build -c opt //bench/padding //bench/peers //bench/peers:gather_loop //bench:sync_bn \
  //bench/recorder

if [ "$what" = padding ] || [ "$what" = all ]; then
  for w in 2 4; do
    wait_quiet regen
    tmp="results/.bench_padding_w$w.json.tmp"
    bazel-bin/bench/padding/padding --world_size "$w" --reps 9 --pin_cpus --benchmark_out="$PWD/$tmp" \
      --benchmark_out_format=json
    mv "$tmp" "results/bench_padding_w$w.json"
  done
  wait_quiet regen
  /usr/bin/python3 bench/padding/cpu_split.py --gather_loop bazel-bin/bench/peers/gather_loop \
    --json results/bench_cpu_split.json
  bench/padding/congestion.sh  # root: a netns per congestion control; waits for quiet itself
fi
if [ "$what" = peers ] || [ "$what" = all ]; then
  # PyTorch 2.15 (tools/setup.sh --torch2.15) as one more interleaved side.
  second=()
  if [ -x .venv-torch2.15/bin/python ]; then
    second=(--second_torch_python "$PWD/.venv-torch2.15/bin/python")
  else
    echo "regen: no .venv-torch2.15 (tools/setup.sh --torch2.15): peers without PyTorch 2.15" >&2
  fi
  for w in 2 4; do
    wait_quiet regen
    bazel-bin/bench/peers/peers --world_size "$w" --torch_batch_control "${second[@]}" \
      --json "results/bench_peers_w$w.json"
  done
  wait_quiet regen
  (cd bench/peers && /usr/bin/python3 torch_norm_split.py \
    --json "$OLDPWD/results/bench_torch_norm_split.json")
fi
if [ "$what" = profile ] || [ "$what" = all ]; then
  wait_quiet regen
  /usr/bin/python3 bench/peers/profile_small.py --gather_loop bazel-bin/bench/peers/gather_loop \
    --json results/bench_profile_small.json
fi
if [ "$what" = sync_bn ] || [ "$what" = all ]; then
  # W = 2: one rank per core on the machine this was written on (the
  # headline); a larger W on a machine with the cores: --world_size.
  wait_quiet regen
  tmp="results/.bench_sync_bn.json.tmp"
  bazel-bin/bench/sync_bn --world_size 2 --reps 5 --pin_cpus --benchmark_out="$PWD/$tmp" \
    --benchmark_out_format=json
  mv "$tmp" results/bench_sync_bn.json
fi
if [ "$what" = recorder ] || [ "$what" = all ]; then
  wait_quiet regen
  tmp="results/.bench_recorder.json.tmp"
  # Exit 1 means the recorder's cost exceeded its limit (--limit_ns): a
  # finding, kept in the record (within_limit false) and in the table
  # (EXCEEDED), not a reason to discard the record. Any other failure (no
  # file, another exit status) still stops the script.
  rc=0
  bazel-bin/bench/recorder/recorder --benchmark_out="$PWD/$tmp" --benchmark_out_format=json || rc=$?
  if [ "$rc" != 0 ] && { [ "$rc" != 1 ] || [ ! -s "$tmp" ]; }; then
    echo "regen: bench/recorder failed (exit $rc)" >&2
    exit 1
  fi
  [ "$rc" = 1 ] && echo "regen: bench/recorder exceeded its limit; the record says within_limit false" >&2
  mv "$tmp" results/bench_recorder.json
fi
if [ "$tables" = 0 ]; then
  echo "regen: done (--no-tables: README tables not rewritten)" >&2
  exit 0
fi
if [ -f results/bench_recorder.json ]; then
  /usr/bin/python3 bench/recorder/table.py results/bench_recorder.json --update bench/README.md
fi
/usr/bin/python3 bench/tables.py --update
echo "regen: done; tables updated in bench/README.md, bench/padding/README.md," \
     "bench/peers/README.md" >&2
