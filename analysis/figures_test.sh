#!/bin/bash
# analysis/figures_test.py with the system Python (matplotlib from Debian).
MPLCONFIGDIR="$TEST_TMPDIR/mpl" exec /usr/bin/python3 "$1"
