#!/usr/bin/env bash
# make_bundle.sh --list-libs on a real binary of the suite (the allreduce
# example: Gloo, and NCCL where CUDA exists): Gloo travels with the bundle,
# glibc, the C++ runtime and NCCL come from the target machine; neither the
# binary nor a carried library needs a glibc above 2.34 or a libstdc++ above
# GLIBCXX_3.4.30 (--check-versions), and the check does catch Debian 12's own
# libstdc++.so.6 (GLIBC_2.36), which bundles used to carry. Also usage errors.
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
! grep -qE '^bundle (libc|libm|libnccl|libcuda|libcudart|ld-linux|libstdc\+\+|libgcc_s)' <<<"$libs" || fail "a target library would be carried"
grep -qE '^host libstdc\+\+\.so\.6$' <<<"$libs" || fail "libstdc++ must come from the target"

mapfile -t carried < <(awk '$1 == "bundle" {print $3}' <<<"$libs")
versions="$("$make_bundle" --check-versions "$binary" "${carried[@]}")" || fail "too new a version needed: $versions"
echo "$versions"
grep -q "GLIBC_2\.[0-9]" <<<"$versions" || fail "no GLIBC_ versions read: $versions"
set +e
stdcxx="$("$make_bundle" --check-versions /usr/lib/x86_64-linux-gnu/libstdc++.so.6 2>&1)"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "Debian 12's libstdc++.so.6 passed the check (exit $rc): $stdcxx"
grep -q '^too new: .*libstdc++.so.6 needs GLIBC_2.36 (max 2.34)$' <<<"$stdcxx" || fail "check output: $stdcxx"

for args in "--compilation_mode fast" "--bogus" "--list-libs /nonexistent" "" "--check-versions" "--check-versions /nonexistent" "--only" "--only (" "--only [z-a]"; do
  set +e
  msg="$("$make_bundle" $args 2>&1)"
  rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "'$args' exited $rc, want 2: $msg"
done
"$make_bundle" --help | grep -q '^usage: make_bundle.sh' || fail "--help"

# --only's selection: a target's path in the bundle (package/name, as
# run_all.sh's --only sees it) against the expression; a bad one is 2.
# shellcheck source=tools/bundle/bundle_lib.sh
source "$(dirname "$make_bundle")/bundle_lib.sh"
labels=(//bench:sync_bn //bench:sync_bn_nccl_test //bench/padding:padding //core/cuda:norm_bits_test //repro/wrong_all_gather:wrong_all_gather //fixes/wrong_all_gather:test_nccl)
got="$(bundle_select '^(bench/sync_bn$|bench/padding/padding$|core/cuda/|(repro|fixes)/wrong_all_gather/wrong_all_gather$)' "${labels[@]}" | tr '\n' ' ')"
[[ "$got" == "//bench:sync_bn //bench/padding:padding //core/cuda:norm_bits_test //repro/wrong_all_gather:wrong_all_gather " ]] ||
  fail "bundle_select chose: $got"
[[ -z "$(bundle_select '^nothing/' "${labels[@]}")" ]] || fail "bundle_select: a selection of none"
set +e
bundle_select '(' "${labels[@]}" >/dev/null
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "bundle_select on a bad expression returned $rc, want 2"

# The bundle's commit, by provenance's rule: results/ and untracked files do
# not make it dirty, a changed tracked file does; no git tree: unknown.
repo="$TEST_TMPDIR/commit_repo"
command -v git >/dev/null || { echo "libs_test: no git here, commit rule not checked"; exit 0; }
mkdir -p "$repo/results"
echo 'int x;' >"$repo/code.cc"
echo '[]' >"$repo/results/r.json"
git -C "$repo" init -q && git -C "$repo" add -A && git -C "$repo" -c user.name=t -c user.email=t@t commit -q -m init
head="$(git -C "$repo" rev-parse HEAD)"
echo '[1]' >"$repo/results/r.json"
echo x >"$repo/untracked.txt"
[[ "$(bundle_commit "$repo")" == "$head" ]] || fail "results/ or untracked made it dirty: $(bundle_commit "$repo")"
echo 'int y;' >"$repo/code.cc"
[[ "$(bundle_commit "$repo")" == "$head+dirty" ]] || fail "changed code not dirty: $(bundle_commit "$repo")"
[[ "$(bundle_commit "$TEST_TMPDIR/nowhere")" == unknown ]] || fail "no git tree"
echo "libs_test: all checks passed"
