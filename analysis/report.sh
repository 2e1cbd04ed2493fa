#!/usr/bin/env bash
# Runs report.py with Debian's python3 (it has matplotlib; a python3 earlier
# on PATH, e.g. pyenv's, may not).
here="$(cd "$(dirname "$0")" && pwd)"
script="$here/report.py"
[ -f "$script" ] || script="${RUNFILES_DIR:-$0.runfiles}/ddp_pitfalls/analysis/report.py"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" "$script" "$@"
