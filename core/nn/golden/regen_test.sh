#!/bin/bash
# Regenerates the golden vectors into $TEST_TMPDIR and requires them to be
# byte-for-byte identical to the committed ones. Needs Debian's python3-torch
# for /usr/bin/python3; where it is missing the test says so and skips
# (exit 0), since the C++ tests themselves never need Python.
set -euo pipefail
dir="${TEST_SRCDIR}/${TEST_WORKSPACE}/core/nn/golden"
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "SKIPPED: /usr/bin/python3 cannot import torch (apt-get install python3-torch)"
  exit 0
fi
out="${TEST_TMPDIR}/golden"
mkdir -p "$out"
/usr/bin/python3 "$dir/gen_golden.py" --out "$out"
n=0
for f in "$dir"/*.txt; do
  cmp "$f" "$out/$(basename "$f")"
  n=$((n + 1))
done
extra=$(comm -13 <(cd "$dir" && ls *.txt) <(cd "$out" && ls *.txt))
if [[ -n "$extra" ]]; then
  echo "generator writes files that are not committed: $extra"
  exit 1
fi
echo "regenerated $n golden files, all byte-identical"
