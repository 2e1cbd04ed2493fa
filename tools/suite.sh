#!/usr/bin/env bash
# bazel run //:suite [-- --out DIR] [--only SUBSTRING] [--list] [-- PAIR_FLAGS]
# — the suite's main job on the CPU default backend: the environment report,
# then every registered repro/fix binary with its default flags (plus
# PAIR_FLAGS), each writing its result records to DIR (default: results/latest
# under the directory bazel was run from), then a one-screen summary of the
# records this run wrote: first what each pair binary ran (its rows by kind
# and verdict, rows that could not run apart, with why), then per bug its
# headline number and configuration, the fix and how exact, where the
# records are and the report command. --only
# runs the pairs whose path contains SUBSTRING.
# --list stops after the report and the list of pairs, checking that each
# binary answers --help. A pair that fails without writing records leaves no
# earlier records of its own in DIR to be mistaken for this run's.
set -uo pipefail

# Runfiles: next to the script under `bazel run`, or $0.runfiles when run as
# another target's data.
runfiles="${RUNFILES_DIR:-$0.runfiles}/ddp_pitfalls"
[ -d "$runfiles" ] || runfiles="$(cd "$(dirname "$0")" && pwd)"
[ -f "$runfiles/suite_pairs.txt" ] || runfiles="$0.runfiles/ddp_pitfalls"
doctor="$runfiles/tools/doctor/doctor"
mapfile -t pairs < "$runfiles/suite_pairs.txt"
out=""
only=""
list_only=0
pair_flags=()
allowed="allowed: --out DIR, --only SUBSTRING, --list, --help, then -- PAIR_FLAGS"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { echo "suite: --out needs a directory" >&2; exit 2; }; out="$2"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    --only) [ $# -ge 2 ] || { echo "suite: --only needs a substring" >&2; exit 2; }; only="$2"; shift 2 ;;
    --only=*) only="${1#--only=}"; shift ;;
    --list) list_only=1; shift ;;
    --) shift; pair_flags=("$@"); break ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --*) echo "suite: unknown flag '$1' ($allowed)" >&2; exit 2 ;;
    *) echo "suite: unexpected argument '$1' ($allowed)" >&2; exit 2 ;;
  esac
done
if [ -n "$only" ]; then
  kept=()
  for p in "${pairs[@]}"; do [[ "$p" == *"$only"* ]] && kept+=("$p"); done
  [ "${#kept[@]}" -gt 0 ] || { echo "suite: --only '$only' matches no registered pair" >&2; exit 2; }
  pairs=("${kept[@]}")
fi
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

# One line per pair binary: the rows it wrote by kind and verdict, and the
# rows it could not run (verdict error) apart, with the first reason. A pair
# has no test cases to skip: a row that could not run is what it did not
# measure.
rows_line() {  # PAIR FILE
  python3 - "$1" "$2" <<'PY'
import json, sys
pair, path = sys.argv[1:3]
try:
    records = json.load(open(path))
    assert isinstance(records, list)
except (OSError, ValueError, AssertionError) as e:
    sys.exit("%s: records unreadable (%s)" % (pair, e))
by = {}
for r in records:
    if r.get("verdict") != "error":
        k = by.setdefault(r.get("kind", "?"), {})
        k[r.get("verdict", "?")] = k.get(r.get("verdict", "?"), 0) + 1
errors = [r for r in records if r.get("verdict") == "error"]
text = "%s: %d row%s: %s" % (pair, len(records), "" if len(records) == 1 else "s", "; ".join(
    "%s %s" % (k, ", ".join("%d %s" % (n, v) for v, n in sorted(vs.items(), key=lambda x: (-x[1], x[0]))))
    for k, vs in sorted(by.items())) or "none measured")
if errors:
    text += "; %d could not run (%s)" % (len(errors), str(errors[0].get("error") or "no reason given").splitlines()[0][:80])
print(text)
PY
}

mkdir -p "$out" || { echo "suite: cannot create $out" >&2; exit 2; }
status=0
written=()
ran=()
for p in "${pairs[@]}"; do
  name=$(sed 's|^\./||; s|/|_|g' <<<"$p")
  echo
  echo "== $p =="
  # Last run's records of this pair must not pass for this run's.
  rm -f "$out/$name.json"
  "$runfiles/$p" --json "$out/$name.json" "${pair_flags[@]}"
  rc=$?
  [ "$rc" -eq 0 ] || { echo "suite: $p exited $rc"; status=1; }
  if [ -f "$out/$name.json" ]; then
    written+=("$out/$name.json")
    ran+=("$(rows_line "${p#./}" "$out/$name.json" 2>&1)")
  else
    echo "suite: $p wrote no records"
    ran+=("${p#./}: no records (exit $rc)")
  fi
done
echo
echo "== what each pair ran (rows by kind and verdict) =="
printf '%s\n' "${ran[@]}" | cut -c1-120
echo
if [ "${#written[@]}" -gt 0 ]; then
  # One screen: per bug its headline number and the fix's exactness, where
  # the records are and the command that turns them into the report.
  python3 "$runfiles/tools/summarize.py" --out "$out" "${written[@]}" || status=1
else
  echo "suite: no pair wrote records"
  echo "result records: $out"
fi
exit $status
