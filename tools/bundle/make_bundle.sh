#!/usr/bin/env bash
# make_bundle.sh: builds the gpu-tagged test binaries and the repro / fix /
# bench binaries with CUDA, and collects them with their runfiles and the
# non-system shared libraries they need into a folder (and optionally a
# .tar.gz) that runs on a GPU machine without Bazel: `DIR/run_all.sh`.
# See tools/bundle/README.md.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: make_bundle.sh --out DIR [--compilation_mode opt|fastbuild|dbg] [--cuda-arches 80,90|90|80]
                      [--only ERE] [--tar]
       make_bundle.sh --list-libs BINARY
       make_bundle.sh --check-versions ELF...
       bazel run //tools/bundle -- --out DIR [...]

  --out DIR              bundle folder to create (replaced if it exists);
                         relative to the current directory (bazel run: the
                         directory bazel was run from)
  --compilation_mode M   Bazel compilation mode for the bundle (default opt,
                         so bench binaries measure optimised code)
  --cuda-arches A        the GPU architectures whose SASS the kernels carry:
                         80,90 (default: A100 and H100/H200), or 90 (H100/H200
                         only) or 80 alone, for a smaller bundle where one
                         device call carries 64 MiB (--define=cuda_arches,
                         third_party/cuda/cuda.bzl)
  --only ERE             bundle only the targets whose path in the bundle
                         (e.g. bench/norm_kernels/norm_kernels,
                         core/cuda/norm_bits_test) matches the extended
                         regular expression ERE, as run_all.sh's --only
                         matches them: a bundle of what one lease runs (the
                         whole bundle and the working tree no longer fit one
                         device call); MANIFEST.txt names the selection
  --tar                  also write DIR.tar.gz; fails if it is 64 MiB or more
  --list-libs BINARY     print which shared libraries BINARY's bundle would
                         carry ("bundle NAME PATH") or leave to the target
                         ("host NAME"), then exit
  --check-versions ELF...  print the GLIBC_ / GLIBCXX_ versions each file
                         needs; exit 1 if one is above what the bundle
                         promises (glibc 2.34, GLIBCXX_3.4.30), else 0
  --help                 this text

Needs CUDA + NCCL detected by the WORKSPACE (@local_cuda), or there are no
gpu binaries to bundle.
USAGE
}

die_usage() {
  echo "make_bundle.sh: $*" >&2
  echo "run with --help for usage" >&2
  exit 2
}
die() {
  echo "make_bundle.sh: $*" >&2
  exit 1
}

# Next to this script in the source tree; in the runfiles under `bazel run`.
here=""
for d in "$(dirname "${BASH_SOURCE[0]}")" "${RUNFILES_DIR:-/nonexistent}/ddp_pitfalls/tools/bundle" \
  "${BASH_SOURCE[0]}.runfiles/ddp_pitfalls/tools/bundle" "$PWD/tools/bundle"; do
  if [[ -f "$d/bundle_lib.sh" && -f "$d/run_all.sh" && -f "$d/mps_isolated_base.txt" ]]; then
    here="$(cd "$d" && pwd)"
    break
  fi
done
[[ -n "$here" ]] || die "cannot find bundle_lib.sh, run_all.sh and mps_isolated_base.txt next to ${BASH_SOURCE[0]}"
# The pair registry (pairs.bzl) gives the pairs' shared-GPU flags and which
# pairs run apart from CUDA MPS: made here, for the checks below and the
# bundle (two levels up: the source tree, or the runfiles under bazel run).
lists="$(mktemp -d)"
trap 'rm -rf "$lists"' EXIT
registry="$here/../../analysis/registry.py"
/usr/bin/python3 "$registry" shared-gpu-flags "$here/../../pairs.bzl" >"$lists/shared_gpu_flags.txt" &&
  { cat "$here/mps_isolated_base.txt" &&
    /usr/bin/python3 "$registry" mps-isolated "$here/../../pairs.bzl"; } >"$lists/mps_isolated.txt" ||
  die "cannot read the pair registry ($here/../../pairs.bzl through $registry)"
# shellcheck source=tools/bundle/bundle_lib.sh
source "$here/bundle_lib.sh"

out="" mode="opt" arches="80,90" tar=0 list_libs="" check_versions=0 only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) [[ $# -ge 2 && -n "$2" ]] || die_usage "--out needs a folder"; out="$2"; shift 2 ;;
    --compilation_mode)
      [[ $# -ge 2 ]] || die_usage "--compilation_mode needs a value: opt, fastbuild or dbg"
      case "$2" in opt | fastbuild | dbg) mode="$2" ;; *) die_usage "--compilation_mode must be opt, fastbuild or dbg, got '$2'" ;; esac
      shift 2 ;;
    --cuda-arches)
      [[ $# -ge 2 ]] || die_usage "--cuda-arches needs a value: 80,90, 90 or 80"
      case "$2" in 80,90 | 90 | 80) arches="$2" ;; *) die_usage "--cuda-arches must be 80,90, 90 or 80, got '$2'" ;; esac
      shift 2 ;;
    --only)
      [[ $# -ge 2 && -n "$2" ]] || die_usage "--only needs an extended regular expression (e.g. '^bench/norm_kernels/')"
      bundle_select "$2" >/dev/null || die_usage "--only must be an extended regular expression (bash =~), got '$2'"
      only="$2"; shift 2 ;;
    --tar) tar=1; shift ;;
    --list-libs) [[ $# -ge 2 ]] || die_usage "--list-libs needs a binary"; list_libs="$2"; shift 2 ;;
    --check-versions) check_versions=1; shift; break ;;
    --help | -h) usage; exit 0 ;;
    *) die_usage "unknown flag '$1'; allowed: --out, --compilation_mode, --cuda-arches, --only, --tar, --list-libs, --check-versions, --help" ;;
  esac
done

if [[ $check_versions -eq 1 ]]; then
  [[ $# -ge 1 ]] || die_usage "--check-versions needs ELF files"
  for f in "$@"; do [[ -f "$f" ]] || die_usage "--check-versions: no such file '$f'"; done
  bundle_check_versions "$@"
  exit
fi
if [[ -n "$list_libs" ]]; then
  [[ -f "$list_libs" ]] || die_usage "--list-libs: no such file '$list_libs'"
  bundle_list_libs "$list_libs"
  exit 0
fi
[[ -n "$out" ]] || die_usage "--out DIR is required"

# Paths: --out is relative to where the user ran the command.
start_dir="${BUILD_WORKING_DIRECTORY:-$PWD}"
[[ "$out" = /* ]] || out="$start_dir/$out"
workspace="${BUILD_WORKSPACE_DIRECTORY:-}"
if [[ -z "$workspace" ]]; then
  workspace="$(cd "$here/../.." && pwd)"
fi
[[ -f "$workspace/WORKSPACE" ]] || die "cannot find the workspace (looked in $workspace)"
cd "$workspace"

bazel_flags=(--compilation_mode="$mode")
[[ "$arches" == 80,90 ]] || bazel_flags+=(--define=cuda_arches="$arches")
echo "== querying targets"
gpu_tests=$(bazel query --noshow_progress 'attr(tags, "[\[ ]gpu[,\]]", tests(//...))' 2>/dev/null | sort)
pattern=""
for d in repro fixes bench; do
  if [[ -d "$d" ]] && find "$d" -name BUILD -print -quit | grep -q .; then
    pattern+="${pattern:+ + }//$d/..."
  fi
done
binaries=""
if [[ -n "$pattern" ]]; then
  # A helper that is not a pair (tag not_in_bundle, e.g. the generator of
  # repro/wrong_all_gather/raw_inputs.json) would be run as one and fail.
  binaries=$(bazel query --noshow_progress \
    "kind(cc_binary, $pattern) except attr(tags, '[\[ ]not_in_bundle[,\]]', $pattern)" 2>/dev/null | sort)
fi

# The gpu tests that Bazel runs without CUDA MPS (env DDP_MPS=0: NO_MPS in
# core/testing/pair_test.bzl) must be exactly the tests that run_all.sh runs
# apart (mps_isolated.txt): two lists of one fact, checked here so that
# neither drifts.
isolated_in_list() {
  local pattern _
  while read -r pattern _; do
    [[ -z "$pattern" || "$pattern" == \#* ]] && continue
    # shellcheck disable=SC2053  # the line is a glob pattern
    [[ "$1" == $pattern ]] && return 0
  done <"$lists/mps_isolated.txt"
  return 1
}
no_mps_tests=" $(bazel query --noshow_progress 'attr(env, "DDP_MPS", tests(//...))' 2>/dev/null | sort | tr '\n' ' ')"
for label in $gpu_tests; do
  rel="$(bundle_rel_path "$label")"
  in_list=0 in_build=0
  isolated_in_list "$rel" && in_list=1
  [[ "$no_mps_tests" == *" $label "* ]] && in_build=1
  ((in_list == in_build)) || die "$label: mps_isolated.txt says $( ((in_list)) && echo apart || echo shared), its BUILD $( ((in_build)) && echo 'sets DDP_MPS (no MPS)' || echo 'lets it use MPS'): make them agree"
done

defs="$(bazel info --noshow_progress output_base 2>/dev/null)/external/local_cuda/defs.bzl"
grep -q '^CUDA_AVAILABLE = True' "$defs" 2>/dev/null ||
  die "CUDA + NCCL were not detected for this workspace ($defs): the gpu binaries cannot be built here"
[[ -n "$gpu_tests" ]] || die "no gpu-tagged tests found"

# --only: what one lease runs, chosen after the checks above (which hold
# for every target, bundled or not).
all_targets=$(wc -w <<<"$gpu_tests $binaries")
selection="all $all_targets targets"
if [[ -n "$only" ]]; then
  # shellcheck disable=SC2086
  gpu_tests=$(bundle_select "$only" $gpu_tests)
  # shellcheck disable=SC2086
  binaries=$(bundle_select "$only" $binaries)
  chosen=$(wc -w <<<"$gpu_tests $binaries")
  ((chosen > 0)) || die_usage "--only '$only' selects none of the $all_targets targets (paths such as bench/sync_bn, core/cuda/norm_bits_test)"
  selection="--only '$only': $chosen of $all_targets targets"
fi

echo "== building $(wc -w <<<"$gpu_tests") gpu tests and $(wc -w <<<"$binaries") binaries (-c $mode)"
# shellcheck disable=SC2086
bazel build --noshow_progress "${bazel_flags[@]}" $gpu_tests $binaries
bin_dir="$(bazel info --noshow_progress "${bazel_flags[@]}" bazel-bin 2>/dev/null)"

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
: >"$out/tests.txt"
: >"$out/pairs.txt"
: >"$out/bench.txt"
libs_file="$lists/libs.txt"

copy_target() {
  local rel="$1" src="$bin_dir/$1"
  [[ -f "$src" ]] || die "built target missing: $src"
  mkdir -p "$out/bin/$(dirname "$rel")"
  cp -L "$src" "$out/bin/$rel"
  if [[ -d "$src.runfiles" ]]; then cp -rL "$src.runfiles" "$out/bin/$rel.runfiles"; fi
  if file -L "$src" | grep -q ELF; then bundle_list_libs "$src" >>"$libs_file"; fi
}

for label in $gpu_tests; do
  rel="$(bundle_rel_path "$label")"
  copy_target "$rel"
  echo "$rel" >>"$out/tests.txt"
done
for label in $binaries; do
  rel="$(bundle_rel_path "$label")"
  copy_target "$rel"
  case "$rel" in bench/*) echo "$rel" >>"$out/bench.txt" ;; *) echo "$rel" >>"$out/pairs.txt" ;; esac
done

if grep -q '^missing ' "$libs_file"; then
  die "ldd could not resolve: $(grep '^missing ' "$libs_file" | sort -u | cut -d' ' -f2 | tr '\n' ' ')"
fi
grep '^bundle ' "$libs_file" | sort -u | while read -r _ name path; do
  cp -L "$path" "$out/lib/$name"
done

# Symbols are not needed to run the binaries (reports name their source lines
# through std::source_location, not the symbol table): stripped, the archive
# is ~12% smaller, which it needs to fit a device call's 64 MiB beside the
# working tree. Before the linking below, so that copies stay identical.
while IFS= read -r -d '' f; do
  if head -c 4 "$f" | grep -q ELF; then
    chmod u+w "$f"
    strip --strip-unneeded "$f" || die "strip failed on $f"
  fi
done < <(find "$out/bin" -type f -print0)

# Binaries also appear inside runfiles trees: store identical files once
# (hard links; tar keeps them as links).
declare -A first_copy=()
while read -r sum file; do
  if [[ -n "${first_copy[$sum]:-}" ]]; then
    ln -f "${first_copy[$sum]}" "$file"
  else
    first_copy[$sum]="$file"
  fi
done < <(find "$out/bin" -type f -size +64k -print0 | xargs -0 -r sha256sum | sort)

# What the target must provide: no file may need a newer glibc or libstdc++
# than the README promises.
mapfile -t elves < <(find "$out/bin" "$out/lib" -type f -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print | sort)
versions="$(bundle_check_versions "${elves[@]}")" ||
  die "$(grep '^too new: ' <<<"$versions" | sed "s|$out/||" | head -5 | tr '\n' ';') the bundle would not load on glibc $BUNDLE_MAX_GLIBC"

cp "$here/run_all.sh" "$out/run_all.sh"
# run_all.sh applies a pair binary's line where fewer than 4 GPUs are visible.
cp "$lists/shared_gpu_flags.txt" "$out/shared_gpu_flags.txt"
# and runs these apart, without CUDA MPS.
cp "$lists/mps_isolated.txt" "$out/mps_isolated.txt"
chmod +x "$out/run_all.sh"

commit="$(bundle_commit .)"  # what every record of this bundle will carry
cuda_version="$(sed -n 's/^CUDA_VERSION = "\(.*\)"/\1/p' "$defs")"
{
  echo "ddp-pitfalls GPU-runner bundle"
  echo "commit: $commit"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) ($(uname -m)), -c $mode"
  echo "cuda: $cuda_version (runtime linked statically; needs an NVIDIA driver that supports it)"
  echo "cuda arches: $arches (SASS; PTX of the newest)"
  echo "selection: $selection"
  echo "compiler: $(gcc --version | head -1)"
  echo "glibc: built with $(ldd --version | head -1)"
  echo "target needs: glibc >= $BUNDLE_MAX_GLIBC and a libstdc++.so.6 with GLIBCXX_$BUNDLE_MAX_GLIBCXX (GCC 12 or newer); highest needed by a file here: GLIBC_$(awk '{print $2}' <<<"$versions" | sed 's/GLIBC_//' | grep -v none | sort -V | tail -1), GLIBCXX_$(awk '{print $3}' <<<"$versions" | sed 's/GLIBCXX_//' | grep -v none | sort -V | tail -1)"
  echo "carried libraries (lib/):"
  grep '^bundle ' "$libs_file" | sort -u | awk '{print "  " $2 "  <- " $3}'
  echo "left to the target machine:"
  grep '^host ' "$libs_file" | sort -u | awk '{print "  " $2}'
  echo "binaries (sha256):"
  (cd "$out/bin" && sha256sum $(cat "$out/tests.txt" "$out/pairs.txt" "$out/bench.txt")) | sed 's/^/  /'
} >"$out/MANIFEST.txt"

echo "== bundle: $out ($(du -sh "$out" | cut -f1); $selection): $(wc -l <"$out/tests.txt") tests, $(wc -l <"$out/pairs.txt") pair binaries, $(wc -l <"$out/bench.txt") bench binaries, $(ls "$out/lib" | wc -l) libraries"
if [[ "$tar" == 1 ]]; then
  tarball="$out.tar.gz"
  tar -C "$(dirname "$out")" -czf "$tarball" "$(basename "$out")"
  bytes=$(stat -c %s "$tarball")
  echo "== $tarball: $bytes bytes"
  ((bytes < 64 * 1024 * 1024)) || die "$tarball is $bytes bytes, over the 64 MiB limit"
  # A device call carries the bundle and the working tree within 64 MiB.
  if tree_bytes=$(cd "$workspace" && git ls-files -z 2>/dev/null | xargs -0 -r stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'); then
    echo "== with the working tree's tracked files ($tree_bytes bytes): $((bytes + tree_bytes)) of 67108864 bytes a device call carries"
    ((bytes + tree_bytes < 64 * 1024 * 1024)) ||
      echo "WARNING: bundle + working tree exceed 64 MiB: a device call cannot carry both; bundle only what the lease runs (--only ERE)" >&2
  fi
fi
