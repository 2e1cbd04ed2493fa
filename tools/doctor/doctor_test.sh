#!/usr/bin/env bash
# The doctor prints every field users rely on, exits 0, and rejects arguments.
set -u
doctor="$1"
out=$("$doctor") || { echo "doctor exited $?"; exit 1; }
echo "$out"
for key in host os cpu bazel compiler eigen gloo cuda nccl gpus "backend gloo" "backend nccl"; do
  grep -q "^$key:" <<<"$out" || { echo "missing field: $key"; exit 1; }
done
grep -q "^backend gloo: *yes" <<<"$out" || { echo "gloo should be usable here"; exit 1; }
# Built with CUDA: the driver line (the check itself: //core/env:driver_check_test).
if grep -q "^cuda: .*runtime" <<<"$out"; then
  grep -qE "^driver: +(none|.*: ok|.*needs driver >= )" <<<"$out" || { echo "no driver line"; exit 1; }
fi
"$doctor" --bogus >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] || { echo "bad argument: expected exit 2, got $rc"; exit 1; }
echo "doctor_test: ok"
