#!/usr/bin/env bash
# tools/regen_all.sh [--dry-run] [--steps] [--only NAME[,NAME...]] — regenerates every
# record and benchmark file under results/ at ONE commit (issue 30 item 5),
# then the tables made from them and the report, and writes a manifest.
#
#   - refuses a dirty tree (any change, staged, unstaged or untracked outside
#     ignored files): the records must carry the commit they name;
#   - runs every step in a clean worktree of HEAD (git worktree add), so
#     nothing uncommitted can leak in, and copies results/ back at the end;
#   - waits for a quiet machine (bench/quiet.sh: MAX_LOAD, WAIT_S, FORCE as
#     there) before every step whose record holds times (marked timed: the
#     benchmarks, the hang detection times, the PyTorch evidence); the other
#     steps are correctness records, whose numbers do not depend on load, and
#     start at once (the manifest says which waited);
#   - rewrites no README until every record is written (a rewritten tracked
#     file would mark the later records +dirty), then all tables at the end;
#   - writes results/regen_manifest.json: commit, date, machine (host,
#     kernel, CPU model, CPUs), and per step its command, whether it waited
#     for quiet, the load at its start, its wall time in seconds and its
#     exit status; a step not run is listed as not_run, with why (not
#     selected by --only, or the run stopped first), so a partial run's
#     manifest never reads as a whole regeneration.
# Steps: one build of every binary (opt for the benchmarks), every pair record
# (the commands the pair READMEs name), bench/regen.sh all, ours and
# PyTorch's checked-mode evidence (tools/vs_pytorch/run_all.sh, when its
# venv exists), the guard's evidence (guard/eval: coverage, no harm, cost, on
# 1.13 and 2.15), then the tables (bench, PyTorch, pair READMEs) and the report.
# The worktree uses this checkout's user.bazelrc (e.g. a disk cache) when
# there is one. --dry-run checks the tree and prints the steps without running
# them; --steps lists every step (name|timed|command) without checking the
# tree. A failed step stops the run (exit 1); the manifest says which. The
# records made before a failure or an interruption (Ctrl-C: exit 130,
# SIGTERM: 143) are copied back, never lost with the worktree.
# Takes hours on a 2-core machine (bench/regen.sh alone about 50 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

usage() { sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
dry=0
list_steps=0
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --help | -h) usage; exit 0 ;;
    --dry-run) dry=1 ;;
    --steps) list_steps=1 ;;
    --only) only="${2:?--only needs a list of step names}"; shift ;;
    *) echo "regen_all: unknown argument '$1' (allowed: --dry-run, --steps, --only NAMES, --help)" >&2; exit 2 ;;
  esac
  shift
done

# name|timed or -|command (run from the worktree's root; records go to results/)
STEPS=(
  "build|-|bazel build //repro/... //fixes/... //tools/vs_pytorch/checked_vs_detail && bazel build -c opt //bench/padding //bench/peers //bench/peers:gather_loop //bench:sync_bn //bench/recorder"
  "@pairs"  # every pair's record steps, from the pair registry (pairs.bzl): below
  "checked_mode|timed|bazel run //tools/vs_pytorch/checked_vs_detail -- --json \$PWD/results/vs_pytorch/checked_mode.json"
  # The guard's evidence (guard/eval/*.json) is tracked code's neighbour, not
  # under results/: written in the worktree it would mark every later record
  # +dirty, so these steps write to \$guard_out outside it; guard_tables puts
  # the records in place once every record is made, and copy_back brings them
  # home also when guard_tables did not run.
  "guard_coverage|-|/usr/bin/python3 guard/eval/coverage.py --out \$guard_out/coverage.torch1.13.json && .venv-torch2.15/bin/python guard/eval/coverage.py --out \$guard_out/coverage.torch2.15.json"
  "guard_no_harm|-|cd guard && /usr/bin/python3 eval/no_harm.py --out \$guard_out/no_harm.torch1.13.json && ../.venv-torch2.15/bin/python eval/no_harm.py --out \$guard_out/no_harm.torch2.15.json"
  "guard_overhead|timed|/usr/bin/python3 guard/eval/overhead.py --out \$guard_out/overhead.torch1.13.json && .venv-torch2.15/bin/python guard/eval/overhead.py --out \$guard_out/overhead.torch2.15.json"
  "bench|timed|bench/regen.sh all --no-tables"
  "vs_pytorch|timed|tools/vs_pytorch/run_all.sh --no-tables"
  "bench_tables|-|/usr/bin/python3 bench/recorder/table.py results/bench_recorder.json --update bench/README.md && /usr/bin/python3 bench/tables.py --update"
  "vs_pytorch_tables|-|tools/vs_pytorch/run_all.sh --tables"
  "pair_tables|-|python3 analysis/pair_table.py --all"
  "guard_tables|-|cp \$guard_out/*.json guard/eval/ && python3 guard/eval/coverage.py --table guard/eval/coverage.torch1.13.json guard/eval/coverage.torch2.15.json --update guard/README.md && (cd guard && python3 eval/no_harm.py --table eval/no_harm.torch1.13.json eval/no_harm.torch2.15.json --update README.md) && python3 guard/eval/overhead.py --table guard/eval/overhead.torch1.13.json guard/eval/overhead.torch2.15.json --update guard/README.md"
  "report|-|bazel run //analysis:report -- --results results --out report --latex"
)

# The pair steps come from the registry (pairs.bzl "regen", read by
# analysis/registry.py): the untimed ones where "@pairs" stands, the timed
# ones after them, in the registry's order; a new pair's steps appear here
# with no edit of this script.
pair_steps=$(/usr/bin/python3 analysis/registry.py regen-steps) || {
  echo "regen_all: cannot read the pair registry (pairs.bzl)" >&2; exit 2; }
expanded=()
for s in "${STEPS[@]}"; do
  if [ "$s" = "@pairs" ]; then
    while IFS= read -r line; do [ -n "$line" ] && expanded+=("$line"); done <<<"$pair_steps"
  else
    expanded+=("$s")
  fi
done
STEPS=("${expanded[@]}")
if [ "$list_steps" = 1 ]; then  # every step, name|timed or -|command, the tree unchecked
  printf '%s\n' "${STEPS[@]}"
  exit 0
fi

dirty="$(git status --porcelain --untracked-files=normal)"
if [ -n "$dirty" ]; then
  echo "regen_all: the tree is dirty; commit or remove these first (records must name a clean commit):" >&2
  echo "$dirty" | head -20 >&2
  exit 1
fi
commit="$(git rev-parse HEAD)"
names=()
for s in "${STEPS[@]}"; do
  n="${s%%|*}"
  if [ -z "$only" ] || [[ ",$only," == *",$n,"* ]]; then names+=("$n"); fi
done
if [ -n "$only" ] && [ "${#names[@]}" -eq 0 ]; then
  echo "regen_all: --only names no step (allowed: $(printf '%s ' "${STEPS[@]%%|*}"))" >&2
  exit 2
fi
# What the selected steps need, checked before hours are spent: a run that
# stops at the bench step after the pair records loses nothing, but the
# missing piece is better named now.
problems=()
want() { [[ " ${names[*]} " == *" $1 "* ]]; }
if want vs_pytorch || want report; then
  /usr/bin/python3 -c 'import torch, matplotlib' 2>/dev/null ||
    problems+=("/usr/bin/python3 lacks torch 1.13 or matplotlib (tools/setup.sh --dev)")
fi
if want vs_pytorch && [ ! -x .venv-torch2.15/bin/python ]; then
  echo "regen_all: no .venv-torch2.15: the vs_pytorch step will be skipped (tools/setup.sh --torch2.15)" >&2
fi
if want bench; then
  if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
    problems+=("bench: needs root and unshare -n (bench/padding/congestion.sh)")
  fi
  allowed=" $(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control 2>/dev/null) "
  for cc in bbr cubic; do
    [[ "$allowed" == *" $cc "* ]] || problems+=("bench: congestion control $cc not allowed in a namespace (bench/padding/congestion.sh names the sysctl)")
  done
fi
if [ "${#problems[@]}" -gt 0 ]; then
  printf 'regen_all: cannot run the selected steps here:\n' >&2
  printf '  %s\n' "${problems[@]}" >&2
  exit 1
fi
if [ "$dry" = 1 ]; then
  echo "regen_all: tree clean at $commit; would run in a worktree of it:"
  for s in "${STEPS[@]}"; do
    n="${s%%|*}"
    rest="${s#*|}"
    [[ " ${names[*]} " == *" $n "* ]] && echo "  $n${rest%%|*}: ${rest#*|}" | sed 's/^\(  [a-z0-9_]*\)-:/\1:/; s/^\(  [a-z0-9_]*\)timed:/\1 (timed: waits for quiet):/' 
  done
  exit 0
fi

source bench/quiet.sh  # wait_quiet
work="$(mktemp -d "${TMPDIR:-/tmp}/regen-${commit:0:12}-XXXX")"
git worktree add --detach "$work/tree" "$commit" >/dev/null
manifest="$work/steps.jsonl"
guard_out="$work/guard_eval"  # the guard steps' records, outside the tree (see STEPS)
mkdir -p "$guard_out"
: > "$manifest"
# Local Bazel settings (a disk cache) are ignored files: the worktree lacks them.
[ -f user.bazelrc ] && cp user.bazelrc "$work/tree/user.bazelrc"
# The worktree's results/ and the READMEs whose tables it rewrote come back,
# also when a step failed or the run was interrupted: the records made before
# that are kept, not removed with the worktree (each names its commit).
write_manifest() {  # the steps run so far, also after a failure or a signal
  # Every step regen_all knows is listed; those not run say why
  # (tools/regen_manifest.py).
  python3 "$root/tools/regen_manifest.py" "$manifest" "$commit" \
    "$work/tree/results/regen_manifest.json" "$1" "${STEPS[*]%%|*}" "${names[*]}"
}
copied=0
current=""
copy_back() {
  # return 0: a bare return in the EXIT trap would return the status of the
  # exit that ran the trap, and cleanup would report a failed copy.
  [ "$copied" = 1 ] && return 0
  copied=1
  [ -f "$manifest" ] && write_manifest "$current"
  mkdir -p "$root/results"
  # A step's half-written file (results/.NAME.tmp) is not a record.
  find "$work/tree/results" -name '.*.tmp' -delete 2>/dev/null || true
  cp -a "$work/tree/results/." "$root/results/"
  # The guard's records (only whole ones: a run writes its file at the end).
  for f in "$guard_out"/*.json; do if [ -f "$f" ]; then cp "$f" "$root/guard/eval/"; fi; done
  (cd "$work/tree" && git status --porcelain --untracked-files=no | awk '{print $2}' |
    grep -v '^results/' || true) |
    while read -r f; do if [ -f "$work/tree/$f" ]; then cp "$work/tree/$f" "$root/$f"; fi; done
}
cleanup() {
  copy_back || echo "regen_all: copying results back from $work/tree failed" >&2
  git -C "$root" worktree remove --force "$work/tree" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# A signal ends the running step too (bash would run the trap only after it):
# the step runs in the background and the trap stops it.
step_pid=""
tree_pids() {  # a step's every descendant (a pair binary's ranks too), itself last
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do tree_pids "$child"; done
  echo "$1"
}
stop() {
  if [ -n "$step_pid" ]; then
    # Listed before the signal: a rank whose parent ends is re-parented and
    # could no longer be found. TERM first (a pair binary stops its ranks),
    # KILL for whatever is left after 5 s (a rank in a Gloo wait may not end).
    local pids
    pids="$(tree_pids "$step_pid")"
    kill -TERM $pids 2>/dev/null || true
    local pid alive
    for _ in $(seq 50); do
      alive=0
      for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive=1; done
      [ "$alive" = 0 ] && break
      sleep 0.1
    done
    kill -KILL $pids 2>/dev/null || true
    wait "$step_pid" 2>/dev/null || true
  fi
  echo "regen_all: interrupted; the records made so far are copied back" >&2
  exit "$1"
}
trap 'stop 130' INT
trap 'stop 143' TERM
status=0
for s in "${STEPS[@]}"; do
  n="${s%%|*}" rest="${s#*|}"
  timed="${rest%%|*}" cmd="${rest#*|}"
  [[ " ${names[*]} " == *" $n "* ]] || continue
  if [ "$n" = vs_pytorch ] && [ ! -x "$root/.venv-torch2.15/bin/python" ]; then
    printf '{"step": "%s", "skipped": "no .venv-torch2.15 (tools/setup.sh --torch2.15)"}\n' "$n" >> "$manifest"
    continue
  fi
  if [ "$timed" = timed ]; then wait_quiet "regen_all $n"; fi
  current="$n"
  load="$(cut -d' ' -f1-3 /proc/loadavg)"
  start="$(date +%s.%N)"
  rc=0
  (cd "$work/tree" && ln -sfn "$root/.venv-torch2.15" .venv-torch2.15 2>/dev/null; eval "$cmd") &
  step_pid=$!
  wait "$step_pid" || rc=$?
  step_pid=""
  current=""
  secs="$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
  python3 -c 'import json, sys; print(json.dumps({"step": sys.argv[1], "command": sys.argv[2],
    "waited_for_quiet": sys.argv[6] == "timed", "load_at_start": sys.argv[3],
    "seconds": float(sys.argv[4]), "exit": int(sys.argv[5])}))' \
    "$n" "$cmd" "$load" "$secs" "$rc" "$timed" >> "$manifest"
  if [ "$rc" != 0 ]; then echo "regen_all: step $n failed (exit $rc)" >&2; status=1; break; fi
done
copy_back
echo "regen_all: manifest results/regen_manifest.json (commit ${commit:0:12})"
exit "$status"
