#!/usr/bin/env bash
# lease.sh: the whole GPU half in one call of a lent machine (the `device`
# tool), bounded, and brought back as one archive even when the call is cut.
#
#   bash tools/bundle/lease.sh [--bundle TAR] [--budget S] [--jobs N] [-- RUN_ALL_FLAGS...]
#
# Unpacks the bundle (made here by `bazel run //tools:bundle -- --out
# .gpu/ddp-bundle --tar`, carried as `.gpu`), runs its run_all.sh with the
# budget and jobs given (every binary bounded by --timeout, the whole run by
# the budget plus a minute), and packs the output folder into
# $OUT/gpu-run.tar.gz every 20 s while it runs and once more at the end
# (written beside and renamed, so the archive is always whole): a call
# stopped at its limit still brings back everything finished by then.
# Prints run_all's console as it goes, then "lease: run_all exit N".
set -uo pipefail

usage() {
  cat <<'USAGE'
usage: lease.sh [--bundle TAR] [--budget SECONDS] [--jobs N] [--timeout SECONDS] [-- RUN_ALL_FLAGS...]

  --bundle TAR       the bundle archive (default .gpu/ddp-bundle.tar.gz)
  --budget SECONDS   run_all.sh's budget (default 420: 7 minutes, leaving the
                     machine's start and the transfers inside a 15-minute lease)
  --jobs N           binaries side by side (default 4)
  --timeout SECONDS  per binary (default 120)
  -- FLAGS...        passed on to run_all.sh (e.g. --bench, --only REGEX)
Needs $OUT (the device tool sets it): the archive goes there.
USAGE
}
die_usage() {
  echo "lease.sh: $*" >&2
  echo "run with --help for usage" >&2
  exit 2
}

bundle=".gpu/ddp-bundle.tar.gz" budget=420 jobs=4 per_binary=120
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bundle) [[ $# -ge 2 ]] || die_usage "--bundle needs a file"; bundle="$2"; shift 2 ;;
    --budget)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || die_usage "--budget must be a positive whole number of seconds, got '${2:-}'"
      budget="$2"; shift 2 ;;
    --jobs)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ && "$2" -le 16 ]] || die_usage "--jobs must be a whole number from 1 to 16, got '${2:-}'"
      jobs="$2"; shift 2 ;;
    --timeout)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || die_usage "--timeout must be a positive whole number of seconds, got '${2:-}'"
      per_binary="$2"; shift 2 ;;
    --) shift; break ;;
    --help | -h) usage; exit 0 ;;
    *) die_usage "unknown flag '$1'; allowed: --bundle, --budget, --jobs, --timeout, --, --help" ;;
  esac
done
[[ -n "${OUT:-}" && -d "$OUT" ]] || die_usage "\$OUT must name a folder (the device tool sets it)"
[[ -f "$bundle" ]] || die_usage "--bundle: no file '$bundle' (build it here: bazel run //tools:bundle -- --out .gpu/ddp-bundle --tar; carry .gpu)"

work="$(mktemp -d /tmp/lease.XXXXXX)"
trap 'rm -rf "$work"' EXIT  # everything that matters is in the archive
tar xzf "$bundle" -C "$work" || { echo "lease.sh: cannot unpack $bundle" >&2; exit 1; }
run_all="$(find "$work" -maxdepth 2 -name run_all.sh | head -1)"
[[ -x "$run_all" ]] || { echo "lease.sh: no run_all.sh in $bundle" >&2; exit 1; }
mkdir -p "$work/gpu"

pack() {  # the output folder as it is now, whole or not at all
  tar czf "$OUT/gpu-run.tar.gz.part" -C "$work" gpu 2>/dev/null && mv -f "$OUT/gpu-run.tar.gz.part" "$OUT/gpu-run.tar.gz"
}

# run_all's own budget ends the run; the outer bound only catches a runner
# that fails to stop (a minute past the budget, then SIGKILL 10 s later).
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
echo "lease: run_all exit $rc; archive $OUT/gpu-run.tar.gz ($(stat -c %s "$OUT/gpu-run.tar.gz" 2>/dev/null || echo 0) bytes)"
exit "$rc"
