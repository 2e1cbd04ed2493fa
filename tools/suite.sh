#!/usr/bin/env bash
# bazel run //:suite [-- --out DIR] [-- --list] — the suite's main job on the
# CPU default backend: the environment report, then every registered
# repro/fix binary with its default flags, each writing its result records to
# DIR (default: results/latest under the directory bazel was run from), then
# one summary table of every record. --list stops after the report and the
# list of pairs, checking that each binary answers --help.
set -uo pipefail

# Runfiles: next to the script under `bazel run`, or $0.runfiles when run as
# another target's data.
runfiles="${RUNFILES_DIR:-$0.runfiles}/ddp_pitfalls"
[ -d "$runfiles" ] || runfiles="$(cd "$(dirname "$0")" && pwd)"
[ -f "$runfiles/suite_pairs.txt" ] || runfiles="$0.runfiles/ddp_pitfalls"
doctor="$runfiles/tools/doctor/doctor"
mapfile -t pairs < "$runfiles/suite_pairs.txt"
out=""
list_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { echo "suite: --out needs a directory" >&2; exit 2; }; out="$2"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    --list) list_only=1; shift ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --*) echo "suite: unknown flag '$1' (allowed: --out DIR, --list, --help)" >&2; exit 2 ;;
    *) echo "suite: unexpected argument '$1' (allowed: --out DIR, --list, --help)" >&2; exit 2 ;;
  esac
done
here="${BUILD_WORKING_DIRECTORY:-$PWD}"
out="${out:-results/latest}"
case "$out" in /*) ;; *) out="$here/$out" ;; esac

"$doctor" || exit 1
echo
echo "== registered repro/fix pairs (${#pairs[@]} binaries) =="
if [ "${#pairs[@]}" -eq 0 ]; then
  echo "(none registered yet)"
  exit 0
fi
for p in "${pairs[@]}"; do echo "  ${p#./}"; done
if [ "$list_only" = 1 ]; then
  for p in "${pairs[@]}"; do
    "$runfiles/$p" --help >/dev/null 2>&1 || { echo "suite: $p --help failed" >&2; exit 1; }
  done
  echo "every pair binary answers --help"
  exit 0
fi

mkdir -p "$out" || { echo "suite: cannot create $out" >&2; exit 2; }
status=0
for p in "${pairs[@]}"; do
  name=$(sed 's|^\./||; s|/|_|g' <<<"$p")
  echo
  echo "== $p =="
  "$runfiles/$p" --json "$out/$name.json"
  rc=$?
  [ "$rc" -eq 0 ] || { echo "suite: $p exited $rc"; status=1; }
done
echo
python3 "$runfiles/tools/summarize.py" "$out"/*.json || status=1
echo "result records: $out"
exit $status
