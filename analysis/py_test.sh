#!/bin/bash
# Runs one of analysis/*_test.py with the system Python (matplotlib from
# Debian for the figures): py_test.sh SCRIPT ARGS...
MPLCONFIGDIR="$TEST_TMPDIR/mpl" exec /usr/bin/python3 "$@"
