#!/usr/bin/env bash
# lease.sh: the whole GPU half in one call of a lent machine (the `device`
# tool), bounded, and brought back as one archive even when the call is cut.
#
#   bash tools/bundle/lease.sh [--bundle TAR] [--budget S] [--jobs N] [--norm-peers S]
#                              [--dist-peers S] [--hang-nccl S] [--raw-nccl S] [--raw-worlds 2,4]
#                              [--raw-dtype D] [--raw-proto P] [--raw-runs N] [--guard-nccl S]
#                              [--archive NAME] [-- RUN_ALL_FLAGS...]
#
# Unpacks the bundle (made here by `bazel run //tools:bundle -- --out
# .gpu/ddp-bundle --tar`, carried as `.gpu`), runs its run_all.sh with the
# budget and jobs given (every binary bounded by --timeout, the whole run by
# the budget plus a minute), and packs the output folder into
# $OUT/gpu-run.tar.gz (--archive NAME: $OUT/NAME.tar.gz, so that several
# invocations in one device call keep their own) every 20 s while it runs
# and once more at the end
# (written beside and renamed, so the archive is always whole): a call
# stopped at its limit still brings back everything finished by then.
# With --norm-peers S, then (at most S seconds) bench/peers/torch_norm_gpu.py
# from this tree drives the bundle's bench/norm_kernels and PyTorch on the
# same GPU, interleaved (gpu/records/torch_norm_gpu.json and
# gpu/norm_gpu_table.md); its --budget starts no repetition that would end
# past S - 30 s (S / 2 for S <= 60), so the JSON is written before the kill.
# With --dist-peers S, then (at most S seconds) bench/peers/torch_dist_gpu.py
# drives the bundle's bench/sync_bn and bench/padding and PyTorch's
# SyncBatchNorm / BatchNorm2d / GroupNorm / floor and all_gather /
# all_gather_into_tensor / gather_all_tensors at W = 2 on NCCL, interleaved
# (gpu/records/torch_dist_gpu.json and gpu/dist_gpu_table.md; on one GPU
# every row is shared-GPU: functional, not a performance claim).
# With --hang-nccl S, then (at most S seconds, half each) PyTorch's DDP with
# one rank a step ahead on NCCL at W = 2 (repro/drop_last_hang/pytorch/
# uneven_steps_timeout.py --backend nccl), first with PyTorch's default
# error handling, then with TORCH_NCCL_BLOCKING_WAIT=1, NCCL_DEBUG=WARN
# (gpu/records/drop_last_hang_timeout.torch.nccl.bw0.json and .bw1.json,
# gpu/hang_nccl_table.md; claim:drop_last_hang/blocking-wait-shows-waiting-allreduce and
# claim:drop_last_hang/nccl-warn-reduce-timed-out).
# With --raw-nccl S (at most S seconds; issue 44): what NCCL does with the
# post's raw unequal all_gather, 10 runs at W = 2, then at W = 4 (or the
# --raw-worlds given), each W the bundle's repro/wrong_all_gather --raw_only
# and PyTorch's alternating run by run (one JSON per run; PyTorch's from this tree:
# repro/wrong_all_gather/pytorch/unequal_all_gather.py --backend nccl, which
# gathers our samples, repro/wrong_all_gather/raw_inputs.json), into
# gpu/records/, each name saying the dtype and any NCCL_PROTO
# (--raw-dtype, --raw-proto; --raw-runs runs per engine and W, default 10). --budget 0 runs only the extra stages.
# With --guard-nccl S (at most S seconds; issue 69 item 4): the guard's
# coverage scenarios at W = 2 on NCCL (guard/eval/coverage.py --backend nccl
# --worlds 2, from this tree: pure Python, no Bazel and no bundle binary;
# with --budget 0 and no other stage it runs without a bundle), then, if at
# least 90 s of S are left, the guard's cost per step on NCCL
# (guard/eval/overhead.py --backend nccl, far fewer pairs than the
# gloo records), into gpu/records/guard_coverage.nccl_w2.torchV.json and
# guard_overhead.nccl_w2.torchV.json, each packed as it ends. On one GPU
# the two ranks share it, each its own NCCL_HOSTID (NET/Socket): the records
# and their tables say "correctness only".
# Prints run_all's console as it goes, then "lease: run_all exit N" (and
# "lease: norm peers exit N", "lease: dist peers exit N", "lease: hang nccl exit N",
# "lease: raw nccl exit N", "lease: guard nccl exit N").
set -uo pipefail

usage() {
  cat <<'USAGE'
usage: lease.sh [--bundle TAR] [--budget SECONDS] [--jobs N] [--timeout SECONDS]
                [--norm-peers SECONDS] [--dist-peers SECONDS] [--hang-nccl SECONDS]
                [--raw-nccl SECONDS] [--raw-worlds LIST]
                [--raw-dtype float32|float64|swap] [--raw-proto LL|Simple] [--raw-runs N]
                [--guard-nccl SECONDS] [--guard-backend nccl|gloo] [--archive NAME] [--python PATH] [-- RUN_ALL_FLAGS...]

  --bundle TAR       the bundle archive (default .gpu/ddp-bundle.tar.gz); a
                     stage below whose binary it lacks (make_bundle.sh --only)
                     stops the call before anything runs, exit 2
  --budget SECONDS   run_all.sh's budget (default 420: 7 minutes, leaving the
                     machine's start and the transfers inside a 15-minute lease;
                     0: run_all is not run, only the stages asked for below)
  --jobs N           binaries side by side (default 4)
  --timeout SECONDS  per binary (default 90)
  --norm-peers SECONDS  after run_all, the W = 1 norm rows of ours and PyTorch
                     interleaved (bench/peers/torch_norm_gpu.py), at most this
                     long (default 0: not run)
  --dist-peers SECONDS  then bench/sync_bn's and bench/padding's rows beside
                     PyTorch's at W = 2 on NCCL, interleaved
                     (bench/peers/torch_dist_gpu.py), at most this long
                     (default 0: not run)
  --hang-nccl SECONDS  then PyTorch's DDP with rank 0 one step ahead on NCCL at
                     W = 2, the others alive, exited or in a barrier, with
                     PyTorch's default error handling and then with
                     TORCH_NCCL_BLOCKING_WAIT=1 (half of the time each;
                     never run on a GPU yet, so how long it takes is not
                     known: 3 worlds a half, each bounded at 90 s;
                     default 0: not run)
  --raw-nccl SECONDS  then the post's raw unequal all_gather on NCCL, 10 runs at
                     W = 2, then at W = 4: ours (repro/wrong_all_gather
                     --raw_only, one world per run, without MPS) and
                     PyTorch's, alternating run by run, one JSON per run,
                     each W an equal share, at most this long in all
                     (default 0: not run; about 15-25 s a run: 350 s for
                     W = 2, 700 s for everything)
  --raw-worlds LIST  the world sizes of --raw-nccl, in order (default 2,4;
                     2 alone gives the post's setting all of the time)
  --raw-dtype float32|float64|swap  the gathered dtype in --raw-nccl: both
                     engines in float32 or in float64, or swap: each in the
                     other's own (ours float32, PyTorch float64) (default:
                     each its own, ours float64, PyTorch float32, the
                     post's); a peer one element short is 4 or 8 bytes short.
                     Both engines gather the same samples either way
                     (repro/wrong_all_gather/raw_inputs.json)
  --raw-proto LL|Simple  NCCL_PROTO for both engines' runs in --raw-nccl
                     (default: unset, NCCL's choice); the record names
                     carry it (.proto-LL.), as every record name carries
                     its dtype
  --raw-runs N       runs per engine and W in --raw-nccl, 1 to 10 (default 10)
  --guard-nccl SECONDS  then the guard (ddp_pitfalls.guard) on NCCL at W = 2:
                     its coverage scenarios (guard/eval/coverage.py --backend
                     nccl --worlds 2: every trigger caught on every rank,
                     every correct case silent, no rank left inside the
                     guard's exchange), then its cost per step
                     (guard/eval/overhead.py --backend nccl) if at least
                     90 s are left, at most this long in all (at least 60;
                     default 0: not run). Pure Python from this tree: with
                     --budget 0 and no other stage no bundle is needed.
                     Exit 0 all as expected, 1 not (or a rank left before
                     the end), 2 no CUDA device (one line), 124 cut
  --guard-backend nccl|gloo  the backend of --guard-nccl (default nccl; gloo
                     rehearses the whole stage on a machine without a GPU,
                     its records named .gloo_w2.)
  --archive NAME     the archive is $OUT/NAME.tar.gz (default gpu-run): two
                     invocations in one device call keep both
  --python PATH      the Python with torch for --norm-peers, --dist-peers, --hang-nccl, --raw-nccl and --guard-nccl (default: the first
                     of /opt/torch/.venv/bin/python3 and python3 that imports torch)
  -- FLAGS...        passed on to run_all.sh (e.g. --bench, --only REGEX)
Needs $OUT (the device tool sets it): the archive goes there.
USAGE
}
die_usage() {
  echo "lease.sh: $*" >&2
  echo "run with --help for usage" >&2
  exit 2
}

bundle=".gpu/ddp-bundle.tar.gz" budget=420 jobs=4 per_binary=90 peers_s=0 dist_s=0 hang_s=0 raw_s=0 raw_worlds=2,4 raw_dtype="" python=""
guard_s=0 guard_backend=nccl
raw_proto="" raw_runs=10 archive=gpu-run
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bundle) [[ $# -ge 2 ]] || die_usage "--bundle needs a file"; bundle="$2"; shift 2 ;;
    --budget)
      [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || die_usage "--budget must be a whole number of seconds (0: no run_all), got '${2:-}'"
      budget="$2"; shift 2 ;;
    --jobs)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ && "$2" -le 16 ]] || die_usage "--jobs must be a whole number from 1 to 16, got '${2:-}'"
      jobs="$2"; shift 2 ;;
    --timeout)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || die_usage "--timeout must be a positive whole number of seconds, got '${2:-}'"
      per_binary="$2"; shift 2 ;;
    --norm-peers)
      [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || die_usage "--norm-peers must be a whole number of seconds, got '${2:-}'"
      peers_s="$2"; shift 2 ;;
    --dist-peers)
      [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || die_usage "--dist-peers must be a whole number of seconds, got '${2:-}'"
      dist_s="$2"; shift 2 ;;
    --hang-nccl)
      [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || die_usage "--hang-nccl must be a whole number of seconds, got '${2:-}'"
      hang_s="$2"; shift 2 ;;
    --raw-nccl)
      [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || die_usage "--raw-nccl must be a whole number of seconds, got '${2:-}'"
      raw_s="$2"; shift 2 ;;
    --raw-worlds)
      [[ $# -ge 2 && "$2" =~ ^[2-8](,[2-8])*$ ]] ||
        die_usage "--raw-worlds must list world sizes from 2 to 8, comma-separated (e.g. 2 or 2,4), got '${2:-}'"
      raw_worlds="$2"; shift 2 ;;
    --raw-dtype)
      [[ $# -ge 2 && "$2" =~ ^(float32|float64|swap)$ ]] ||
        die_usage "--raw-dtype must be float32, float64 or swap, got '${2:-}'"
      raw_dtype="$2"; shift 2 ;;
    --raw-proto)
      [[ $# -ge 2 && "$2" =~ ^(LL|Simple)$ ]] || die_usage "--raw-proto must be LL or Simple, got '${2:-}'"
      raw_proto="$2"; shift 2 ;;
    --guard-nccl)
      [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] && { ((10#$2 == 0 || 10#$2 >= 60)); } ||
        die_usage "--guard-nccl must be a whole number of seconds, 0 or at least 60, got '${2:-}'"
      guard_s=$((10#$2)); shift 2 ;;
    --guard-backend)
      [[ $# -ge 2 && "$2" =~ ^(nccl|gloo)$ ]] || die_usage "--guard-backend must be nccl or gloo, got '${2:-}'"
      guard_backend="$2"; shift 2 ;;
    --raw-runs)
      [[ $# -ge 2 && "$2" =~ ^([1-9]|10)$ ]] || die_usage "--raw-runs must be a whole number from 1 to 10, got '${2:-}'"
      raw_runs="$2"; shift 2 ;;
    --archive)
      [[ $# -ge 2 && "$2" =~ ^[A-Za-z0-9_-]+$ ]] ||
        die_usage "--archive must be a name of letters, digits, - and _ (the archive \$OUT/NAME.tar.gz), got '${2:-}'"
      archive="$2"; shift 2 ;;
    --python) [[ $# -ge 2 && -x "$2" ]] || die_usage "--python needs an executable, got '${2:-}'"; python="$2"; shift 2 ;;
    --) shift; break ;;
    --help | -h) usage; exit 0 ;;
    *) die_usage "unknown flag '$1'; allowed: --bundle, --budget, --jobs, --timeout, --norm-peers, --dist-peers, --hang-nccl, --raw-nccl, --raw-worlds, --raw-dtype, --raw-proto, --raw-runs, --guard-nccl, --guard-backend, --archive, --python, --, --help" ;;
  esac
done
[[ -n "${OUT:-}" && -d "$OUT" ]] || die_usage "\$OUT must name a folder (the device tool sets it)"
# run_all's --only takes an extended expression, where \| is a literal |: a
# command copied from a Markdown table (which escapes | as \|) would run
# nothing. Refused here, before the bundle is unpacked.
for arg in "$@"; do
  [[ "$arg" != *'\|'* ]] ||
    die_usage "run_all flag '$arg' holds '\\|', a literal '|' in an extended regular expression (a Markdown table's escape of '|'): write '|'"
done
# The guard's stage is pure Python from this tree: asked for alone (no
# run_all, no other stage) it needs no bundle, so a lease can run it
# without building one here (Bazel) or carrying it.
no_bundle=0
((budget == 0 && peers_s == 0 && dist_s == 0 && hang_s == 0 && raw_s == 0 && guard_s > 0)) &&
  [[ ! -f "$bundle" ]] && no_bundle=1
((no_bundle)) || [[ -f "$bundle" ]] ||
  die_usage "--bundle: no file '$bundle' (build it here: bazel run //tools:bundle -- --out .gpu/ddp-bundle --tar; carry .gpu)"

work="$(mktemp -d /tmp/lease.XXXXXX)"
trap 'rm -rf "$work"' EXIT  # everything that matters is in the archive
mkdir -p "$work/gpu"
run_all="" bundle_dir=""
if ((!no_bundle)); then
  tar xzf "$bundle" -C "$work" || { echo "lease.sh: cannot unpack $bundle" >&2; exit 1; }
  run_all="$(find "$work" -maxdepth 2 -name run_all.sh | head -1)"
  [[ -x "$run_all" ]] || { echo "lease.sh: no run_all.sh in $bundle" >&2; exit 1; }
  bundle_dir="$(dirname "$run_all")"
fi

# Each stage asked for needs its binary in the bundle (make_bundle.sh --only
# may have left it out): say so now, before the stages ahead of it spend
# device time, and run nothing.
needs=()
((peers_s > 0)) && needs+=("--norm-peers:bench/norm_kernels/norm_kernels")
((dist_s > 0)) && needs+=("--dist-peers:bench/sync_bn" "--dist-peers:bench/padding/padding")
((raw_s > 0)) && needs+=("--raw-nccl:repro/wrong_all_gather/wrong_all_gather")
for need in "${needs[@]+"${needs[@]}"}"; do
  if [[ ! -x "$bundle_dir/bin/${need#*:}" ]]; then
    selection="$(sed -n 's/^selection: //p' "$bundle_dir/MANIFEST.txt" 2>/dev/null)"
    echo "lease.sh: ${need%%:*} needs bin/${need#*:}, which $bundle lacks (${selection:-no selection in its MANIFEST.txt}): rebuild the bundle with it (make_bundle.sh --only)" >&2
    exit 2
  fi
done

pack() {  # the output folder as it is now, whole or not at all
  tar czf "$OUT/$archive.tar.gz.part" -C "$work" gpu 2>/dev/null && mv -f "$OUT/$archive.tar.gz.part" "$OUT/$archive.tar.gz"
}

# run_all's own budget ends the run; the outer bound only catches a runner
# that fails to stop (a minute past the budget, then SIGKILL 10 s later).
rc=0
if ((budget > 0)); then
  timeout -k 10 $((budget + 60)) "$run_all" --out "$work/gpu" --jobs "$jobs" --budget "$budget" \
    --timeout "$per_binary" "$@" > >(tee "$work/gpu/console.txt") 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    for ((i = 0; i < 20; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    pack
  done
  wait "$pid"
  rc=$?
  sleep 1  # tee's last lines
  pack
  echo "lease: run_all exit $rc; archive $OUT/$archive.tar.gz ($(stat -c %s "$OUT/$archive.tar.gz" 2>/dev/null || echo 0) bytes)"
fi

tree="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"  # this tree's scripts
commit="$(sed -n 's/^commit: \([^ ]*\).*/\1/p' "$bundle_dir/MANIFEST.txt" 2>/dev/null | head -1)"
# Without a bundle the records' commit is the caller's DDP_PITFALLS_COMMIT
# (the copied tree has no git), else evidence.py says "unknown".
[[ -z "$commit" ]] && commit="${DDP_PITFALLS_COMMIT:-}"
nccl=""
if ((peers_s > 0 || dist_s > 0 || hang_s > 0 || raw_s > 0 || guard_s > 0)); then
  mkdir -p "$work/gpu/records"
  [[ -n "$run_all" ]] && nccl="$("$run_all" --find-nccl 2>/dev/null | sed -n 's/^libnccl: \(.*\) (.*$/\1/p')"
  if [[ -z "$python" ]]; then
    for py in /opt/torch/.venv/bin/python3 python3; do
      if "$py" -c 'import torch' 2>/dev/null; then python="$(command -v "$py")"; break; fi
    done
  fi
fi
say() { echo "lease: $*" | tee -a "$work/gpu/console.txt"; }

# Ours and PyTorch's W = 1 norm rows, interleaved in one run (the driver
# runs the bundle's binary once per repetition; bench/peers/README.md).
peers_rc=0
if ((peers_s > 0)); then
  if [[ -z "$python" ]]; then
    say "norm peers not run: no python3 with torch here"
    peers_rc=1
  else
    DDP_PITFALLS_COMMIT="$commit" \
      timeout -k 10 "$peers_s" "$python" "$tree/bench/peers/torch_norm_gpu.py" \
      --ours_binary "$bundle_dir/bin/bench/norm_kernels/norm_kernels" --ours_lib_path "$bundle_dir/lib${nccl:+:$nccl}" \
      --budget $((peers_s > 60 ? peers_s - 30 : peers_s / 2)) \
      --require_gpu --json "$work/gpu/records/torch_norm_gpu.json" > >(tee -a "$work/gpu/console.txt") 2>&1
    peers_rc=$?
    if ((peers_rc == 0)); then
      "$python" "$tree/bench/peers/norm_gpu_table.py" "$work/gpu/records/torch_norm_gpu.json" >"$work/gpu/norm_gpu_table.md" 2>&1
    fi
    sleep 1
    say "norm peers exit $peers_rc ($python)"
  fi
  pack
fi
((rc == 0)) && rc=$peers_rc

# Ours and PyTorch's W-rank collective rows, interleaved in one run: the
# driver runs the bundle's bench/sync_bn and bench/padding once per
# repetition beside W = 2 persistent PyTorch ranks (bench/peers/README.md).
# Small sizes so that it fits S on a shared GPU; its --budget stops starting
# repetitions 30 s before S, so the JSON is written before the kill.
dist_rc=0
if ((dist_s > 0)); then
  if [[ -z "$python" ]]; then
    say "dist peers not run: no python3 with torch here"
    dist_rc=1
  else
    DDP_PITFALLS_COMMIT="$commit" PYTHONUNBUFFERED=1 \
      timeout -k 10 "$dist_s" "$python" "$tree/bench/peers/torch_dist_gpu.py" \
      --sync_bn_binary "$bundle_dir/bin/bench/sync_bn" --padding_binary "$bundle_dir/bin/bench/padding/padding" \
      --ours_lib_path "$bundle_dir/lib${nccl:+:$nccl}" --backend nccl --world_size 2 --reps 3 \
      --channels 16,256 --batch 2,32 --target_s 0.1 --profiles equal,straggler --payloads 1K,1M --min_time 0.05 \
      --ours_timeout 120 --torch_timeout 120 --pg_timeout 60 --budget $((dist_s > 60 ? dist_s - 30 : dist_s / 2)) \
      --require_gpu --json "$work/gpu/records/torch_dist_gpu.json" > >(tee -a "$work/gpu/console.txt") 2>&1
    dist_rc=$?
    if [[ -f "$work/gpu/records/torch_dist_gpu.json" ]]; then
      "$python" "$tree/bench/peers/dist_gpu_table.py" "$work/gpu/records/torch_dist_gpu.json" >"$work/gpu/dist_gpu_table.md" 2>&1
    fi
    sleep 1
    say "dist peers exit $dist_rc ($python)"
  fi
  pack
fi
((rc == 0)) && rc=$dist_rc

# Seed 001's hang on NCCL through PyTorch (claim:drop_last_hang/blocking-wait-shows-waiting-allreduce and
# claim:drop_last_hang/nccl-warn-reduce-timed-out):
# rank 0 one DDP step ahead at W = 2, the others alive, exited or in a
# barrier, a 10 s process-group timeout; once with PyTorch's default error
# handling, once with TORCH_NCCL_BLOCKING_WAIT=1, each its own invocation
# and JSON with half of S, so a cut keeps the first.
hang_rc=0
if ((hang_s > 0)); then
  if [[ -z "$python" ]]; then
    say "hang nccl not run: no python3 with torch here"
    hang_rc=1
  else
    for bw in 0 1; do
      NCCL_DEBUG="${NCCL_DEBUG:-WARN}" DDP_PITFALLS_COMMIT="$commit" PYTHONUNBUFFERED=1 \
        timeout -k 10 $((hang_s / 2)) "$python" "$tree/repro/drop_last_hang/pytorch/uneven_steps_timeout.py" \
        --backend nccl --worlds 2 --blocking_wait "$bw" --pg_timeout 10 \
        --out "$work/gpu/records/drop_last_hang_timeout.torch.nccl.bw$bw.json" > >(tee -a "$work/gpu/console.txt") 2>&1
      r=$?
      ((r == 0)) || hang_rc=$r
      say "hang nccl: blocking wait $bw exit $r"
      pack
    done
    tables=("$work"/gpu/records/drop_last_hang_timeout.torch.nccl.bw*.json)
    if [[ -f "${tables[0]}" ]]; then
      "$python" "$tree/repro/drop_last_hang/pytorch/uneven_steps_timeout.py" --table "${tables[@]}" \
        >"$work/gpu/hang_nccl_table.md" 2>&1
    fi
    sleep 1
    say "hang nccl exit $hang_rc ($python)"
  fi
  pack
fi
((rc == 0)) && rc=$hang_rc

# The post's raw unequal all_gather on this GPU's NCCL (issue 44), W = 2
# first (the post's setting), then W = 4 (--raw-worlds): ours and PyTorch's
# (a 10 s process-group timeout) alternating run by run. Each W gets an
# equal share of what is left of S; every run is one world in its own
# invocation and its own JSON, so a share that runs out keeps every run it
# finished (call 2 of 2026-11-27
# lost all four stages to a cut). Ours runs without CUDA MPS (the stall
# faults a shared MPS server, whose teardown would then be what the ranks
# report: results/gpu/h100-2026-11-27), with a 5 s deadline and a 15 s
# start-up bound (the stalled first collective's deadline is the larger of
# the two; NCCL's default bound is 60 s), so a stalled run takes about
# 15-20 s. Both engines run with NCCL_DEBUG=WARN (unless the caller set
# it): whether NCCL itself prints a WARN line when its collective is
# stalled and aborted is a claim of seed 001 (claim:drop_last_hang/nccl-warn-reduce-timed-out), and
# the console keeps what it prints.
# Each engine's dtype: its own (ours float64, PyTorch's the post's
# float32), both the one asked for, or with swap each the other's own.
case "$raw_dtype" in
  "") ours_dtype=float64 torch_dtype=float32 ;;
  swap) ours_dtype=float32 torch_dtype=float64 ;;
  *) ours_dtype="$raw_dtype" torch_dtype="$raw_dtype" ;;
esac
raw_tag() {  # dtype: the record name's tag, e.g. float32.proto-Simple
  echo "$1${raw_proto:+.proto-$raw_proto}"
}
raw_run() {  # engine, W, run, seconds: one world, its own JSON
  local engine="$1" w="$2" i="$3" s="$4"
  local proto_env=()
  [[ -n "$raw_proto" ]] && proto_env=(NCCL_PROTO="$raw_proto")
  if [[ $engine == ours ]]; then
    env "${proto_env[@]}" LD_LIBRARY_PATH="$bundle_dir/lib${nccl:+:$nccl}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      NCCL_DEBUG="${NCCL_DEBUG:-WARN}" DDP_PITFALLS_COMMIT="$commit" DDP_MPS=0 DDP_PITFALLS_STARTUP_TIMEOUT=15 \
      timeout -k 10 "$s" \
      "$bundle_dir/bin/repro/wrong_all_gather/wrong_all_gather" --backend nccl --world_size "$w" \
      --raw_only --raw_runs 1 --n 1003 --batch_size 32 --timeout 5 --raw_dtype "$ours_dtype" \
      --json "$work/gpu/records/wrong_all_gather_raw_nccl_w$w.$(raw_tag "$ours_dtype").run$i.json"
  else
    env "${proto_env[@]}" NCCL_DEBUG="${NCCL_DEBUG:-WARN}" DDP_PITFALLS_COMMIT="$commit" PYTHONUNBUFFERED=1 \
      timeout -k 10 "$s" "$python" \
      "$tree/repro/wrong_all_gather/pytorch/unequal_all_gather.py" --backend nccl --worlds "$w" \
      --runs 1 --dtypes "$torch_dtype" --pg_timeout 10 \
      --out "$work/gpu/records/wrong_all_gather_unequal.torch.nccl_w$w.$(raw_tag "$torch_dtype").run$i.json"
  fi
}
raw_rc=0
if ((raw_s > 0)); then
  raw_end=$((SECONDS + raw_s))
  read -ra worlds <<<"${raw_worlds//,/ }"
  engines=(ours)
  if [[ -n "$python" ]]; then engines+=(pytorch); else say "raw nccl: pytorch not run: no python3 with torch here"; raw_rc=1; fi
  left_ws=${#worlds[@]}
  for w in "${worlds[@]}"; do
    # Each W gets an equal share of what is left; inside it the engines
    # alternate run by run (ours 1, PyTorch 1, ours 2, ...), so a share
    # that runs out leaves both with about as many runs.
    share=$(((raw_end - SECONDS) / left_ws))
    left_ws=$((left_ws - 1))
    declare -A done_runs=() last_rc=()
    for e in "${engines[@]}"; do done_runs[$e]=0 last_rc[$e]=0; done
    if ((share <= 20)); then
      for e in "${engines[@]}"; do say "raw nccl: $e at W = $w not run (time left $((raw_end - SECONDS)) s)"; done
      raw_rc=1
      continue
    fi
    stage_end=$((SECONDS + share)) cut_at=""
    for ((i = 1; i <= raw_runs && ${#cut_at} == 0; i++)); do
      for e in "${engines[@]}"; do
        run_s=$((stage_end - SECONDS))
        ((run_s > 60)) && run_s=60
        if ((run_s < 10)); then cut_at="$e run $i"; break; fi
        raw_run "$e" "$w" "$i" "$run_s" > >(tee -a "$work/gpu/console.txt") 2>&1
        ri=$?
        if ((ri == 0)); then done_runs[$e]=$((done_runs[$e] + 1)); else last_rc[$e]=$ri; fi
      done
    done
    [[ -n "$cut_at" ]] && say "raw nccl: W = $w: its share of ${share} s was up at $cut_at"
    for e in "${engines[@]}"; do
      r=${last_rc[$e]}
      ((r == 0 && done_runs[$e] < raw_runs)) && r=124
      dt=$ours_dtype
      [[ $e == pytorch ]] && dt=$torch_dtype
      say "raw nccl: $e at W = $w, $dt${raw_proto:+, NCCL_PROTO=$raw_proto}: ${done_runs[$e]} of $raw_runs runs exit 0"
      say "raw nccl: $e at W = $w exit $r (${share} s allowed for the W)"
      ((r == 0)) || raw_rc=$r
    done
    unset done_runs last_rc
    pack
  done
  say "raw nccl exit $raw_rc"
  pack
fi
((rc == 0)) && rc=$raw_rc

# The guard on NCCL (issue 69 item 4): its coverage scenarios at W = 2,
# then its cost per step if time is left, both pure Python from this tree.
# coverage.py checks for a CUDA device itself (exit 2, one line, no rank
# started); its world is bounded 30 s inside S so that a hang is reported
# (each rank dumps its stack 15 s before the world's bound, and the record
# says whether it was inside the guard's exchange) and the record written
# before the outer kill. Its last line counts everything; it is repeated
# as the stage's own lines.
guard_rc=0
if ((guard_s > 0)); then
  guard_end=$((SECONDS + guard_s))
  if [[ -z "$python" ]]; then
    say "guard nccl not run: no python3 with torch here"
    guard_rc=1
  else
    tv="$("$python" -c 'import torch; print(".".join(torch.__version__.split("+")[0].split(".")[:2]))' 2>/dev/null)"
    [[ "$tv" =~ ^[0-9]+\.[0-9]+$ ]] || tv=unknown  # a name part, never a message
    cov="$work/gpu/records/guard_coverage.${guard_backend}_w2.torch$tv.json"
    world_s=$((guard_s - 30))
    ((world_s > 300)) && world_s=300
    DDP_PITFALLS_COMMIT="$commit" PYTHONUNBUFFERED=1 NCCL_DEBUG="${NCCL_DEBUG:-WARN}" \
      timeout -k 10 "$guard_s" "$python" "$tree/guard/eval/coverage.py" --backend "$guard_backend" --worlds 2 \
      --timeout "$world_s" --out "$cov" > >(tee "$work/gpu/guard_coverage.log" | tee -a "$work/gpu/console.txt") 2>&1
    guard_rc=$?
    sleep 1  # tee's last lines
    if ((guard_rc == 2)); then
      say "guard nccl not run: $(grep -m1 '^coverage.py: ' "$work/gpu/guard_coverage.log" | sed 's/^coverage.py: --backend [a-z]*: //')"
    else
      counts="$(grep '^coverage (' "$work/gpu/guard_coverage.log" | tail -1)"
      say "guard nccl: ${counts:-coverage: no count line (exit $guard_rc): cut or failed before its end}"
      [[ -z "$counts" ]] && ((guard_rc == 0)) && guard_rc=1  # nothing counted is nothing shown
      grep '^W = 2: rank [0-9]* left ' "$work/gpu/guard_coverage.log" | while read -r line; do say "guard nccl: $line"; done
      if [[ -f "$cov" ]]; then
        "$python" "$tree/guard/eval/coverage.py" --table "$cov" >"$work/gpu/guard_coverage_table.md" 2>&1
      fi
      say "guard nccl: coverage exit $guard_rc"
      pack
      left=$((guard_end - SECONDS))
      # Few pairs: on one GPU without MPS a collective between the two
      # ranks took 50-140 ms (results/gpu/h100-2026-11-26), so the
      # cost rows are a few hundred steps, about 1,200 collectives.
      if ((guard_rc == 0 && left >= 90)); then
        ovh="$work/gpu/records/guard_overhead.${guard_backend}_w2.torch$tv.json"
        DDP_PITFALLS_COMMIT="$commit" PYTHONUNBUFFERED=1 \
          timeout -k 10 "$left" "$python" "$tree/guard/eval/overhead.py" --backend "$guard_backend" \
          --steps 5 --pairs 5 --alt_pairs 10 --alt_block 2 --timeout $((left - 20)) --out "$ovh" \
          > >(tee -a "$work/gpu/console.txt") 2>&1
        r=$?
        sleep 1
        if [[ -f "$ovh" ]]; then
          "$python" "$tree/guard/eval/overhead.py" --table "$ovh" >"$work/gpu/guard_overhead_table.md" 2>&1
        fi
        say "guard nccl: overhead exit $r ($left s allowed)"
        ((r == 0)) || guard_rc=$r
      elif ((guard_rc != 0)); then
        say "guard nccl: overhead not run (coverage not as expected)"
      else  # the cost is the optional half: its absence is said, not an error
        say "guard nccl: overhead not run ($left s left of $guard_s; it needs 90)"
      fi
    fi
    say "guard nccl exit $guard_rc ($python)"
  fi
  pack
fi
((rc == 0)) && rc=$guard_rc
exit "$rc"
