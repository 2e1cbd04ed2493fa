#!/usr/bin/env bash
# make_bundle.sh --list-libs on a real binary of the suite (the allreduce
# example: Gloo, and NCCL where CUDA exists): Gloo travels with the bundle,
# glibc and NCCL come from the target machine. Also its usage errors.
set -euo pipefail
make_bundle="$1"
binary="$2"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

libs="$("$make_bundle" --list-libs "$binary")"
echo "$libs"
grep -qE '^bundle libgloo\.so[^ ]* /' <<<"$libs" || fail "libgloo must be carried"
grep -qE '^host libc\.so\.6$' <<<"$libs" || fail "libc must come from the target"
if ldd "$binary" | grep -q libnccl; then
  grep -qE '^host libnccl\.so\.2$' <<<"$libs" || fail "libnccl must come from the target"
fi
! grep -qE '^bundle (libc|libm|libnccl|libcuda|libcudart|ld-linux)' <<<"$libs" || fail "a target library would be carried"

for args in "--compilation_mode fast" "--bogus" "--list-libs /nonexistent" ""; do
  set +e
  msg="$("$make_bundle" $args 2>&1)"
  rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "'$args' exited $rc, want 2: $msg"
done
"$make_bundle" --help | grep -q '^usage: make_bundle.sh' || fail "--help"
echo "libs_test: all checks passed"
