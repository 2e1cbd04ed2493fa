#!/bin/bash
# Re-exports the digits from scikit-learn into $TEST_TMPDIR and requires the
# committed digits.csv byte for byte. Needs Debian's python3-sklearn for
# /usr/bin/python3; where it is missing the test says so and skips (exit 0),
# since the C++ code never needs Python.
set -euo pipefail
dir="${TEST_SRCDIR}/${TEST_WORKSPACE}/core/data/digits"
if ! /usr/bin/python3 -c "import sklearn" 2>/dev/null; then
  echo "SKIPPED: /usr/bin/python3 cannot import sklearn (apt-get install python3-sklearn)"
  exit 0
fi
/usr/bin/python3 "$dir/export_digits.py" "$TEST_TMPDIR/digits.csv"
cmp "$dir/digits.csv" "$TEST_TMPDIR/digits.csv"
echo "re-exported digits.csv: byte-identical"
