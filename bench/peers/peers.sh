#!/usr/bin/env bash
# bazel run //bench/peers -- [--world_size 4] [--quick] [--out FILE.md]
# Runs peers.py with Debian's python3 (it has torch 1.13; a python3 earlier on
# PATH, e.g. pyenv's, may not) and our two binaries from the runfiles.
set -euo pipefail
runfiles="${RUNFILES_DIR:-$0.runfiles}/ddp_pitfalls"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" "$runfiles/bench/peers/peers.py" \
  --padding_bin "$runfiles/bench/padding/padding" \
  --norm_bin "$runfiles/bench/peers/norm_peer" "$@"
