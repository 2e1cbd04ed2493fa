#!/usr/bin/env bash
# shared_gpu_flags.txt against the pair binaries: every line names one of
# them (its path as in the bundle's pairs.txt), every pair binary has exactly
# one line, and each binary accepts the line's flags: `BINARY FLAGS --help`
# parses every flag, name and value, before --help exits 0 (a bad one is
# exit 2 naming it). Whether the flags keep the expected verdicts is checked
# by running them (README.md, "Pair binaries on a shared GPU").
#
# usage: shared_gpu_flags_test.sh FLAGS_FILE BINARY...
set -uo pipefail

file=$1
shift
fail=0
declare -A binary_of seen
for b in "$@"; do
  # bazel-out/.../bin/repro/x/x -> repro/x/x: the path pairs.txt names.
  rel="${b#*bin/}"
  binary_of[$rel]=$b
done

lineno=0
while IFS= read -r line || [[ -n "$line" ]]; do
  lineno=$((lineno + 1))
  [[ -z "${line// /}" || "$line" =~ ^[[:space:]]*# ]] && continue
  read -r -a words <<<"$line"
  rel=${words[0]}
  flags=("${words[@]:1}")
  if [[ -z "${binary_of[$rel]:-}" ]]; then
    echo "FAIL line $lineno: '$rel' is not a pair binary (known: ${!binary_of[*]})"
    fail=1
    continue
  fi
  if [[ -n "${seen[$rel]:-}" ]]; then
    echo "FAIL line $lineno: '$rel' again (first on line ${seen[$rel]})"
    fail=1
  fi
  seen[$rel]=$lineno
  if ! out=$("${binary_of[$rel]}" "${flags[@]}" --help 2>&1 >/dev/null); then
    echo "FAIL line $lineno: $rel does not accept '${flags[*]}': $out"
    fail=1
  else
    echo "ok   line $lineno: $rel ${flags[*]}"
  fi
done <"$file"

for rel in "${!binary_of[@]}"; do
  if [[ -z "${seen[$rel]:-}" ]]; then
    echo "FAIL $rel has no line in $file"
    fail=1
  fi
done
exit $fail
