# Which shared libraries a GPU-runner bundle carries (sourced by
# make_bundle.sh and its test).
#
# Left to the target machine ("host"):
#  * glibc's own libraries and the dynamic loader: they must match the
#    target's kernel interface and cannot be mixed with another glibc;
#  * NVIDIA's: libcuda (the driver's), libnccl / libcudart (the target's CUDA
#    or Python install; libnccl.so.2 is over 200 MB, and the CUDA runtime is
#    linked statically anyway), libnvidia-*;
#  * the C++ runtime, libstdc++ and libgcc_s: Debian 12's libstdc++.so.6
#    needs glibc 2.36 (GLIBC_2.36: arc4random) and libgcc_s 2.35, so carrying
#    them made every binary fail at load on glibc 2.34/2.35 (RHEL 9, Ubuntu
#    22.04). Linking it statically would not help: libgloo.so (no static
#    build in Debian) needs libstdc++.so.6 itself, and one process must not
#    hold two C++ runtimes. The target's own libstdc++ must be GCC 12's or
#    newer (GLIBCXX_3.4.30, which libgloo and g++ 12's code need).
# Carried ("bundle"): everything else ldd lists, e.g. libgloo and its
# dependencies (libhiredis, libibverbs, libnl).
#
# What the target machine must provide, as symbol versions: no ELF file in
# a bundle may need more (bundle_check_versions).
BUNDLE_MAX_GLIBC=2.34
BUNDLE_MAX_GLIBCXX=3.4.30

# Prints "host NAME" when NAME (a soname) comes from the target machine.
bundle_lib_is_host() {
  case "$1" in
    linux-vdso.so* | linux-gate.so* | ld-linux*.so* | ld64.so*) return 0 ;;
    libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | libutil.so.*) return 0 ;;
    libcuda.so* | libnccl.so* | libcudart.so* | libnvidia-*.so*) return 0 ;;
    libstdc++.so* | libgcc_s.so*) return 0 ;;
  esac
  return 1
}

# For each library `ldd BINARY` lists, one line:
#   bundle NAME PATH   (copy PATH into the bundle's lib/ as NAME)
#   host NAME          (the target machine provides it)
#   missing NAME       (not found here: the bundle would be incomplete)
bundle_list_libs() {
  local binary="$1" line name path
  ldd "$binary" | while IFS= read -r line; do
    line="${line#"${line%%[![:space:]]*}"}"
    case "$line" in
      *" => not found"*) name="${line%% *}"; echo "missing $name" ;;
      *" => "*)
        name="${line%% *}"
        path="${line#* => }"; path="${path%% (*}"
        if bundle_lib_is_host "$name"; then echo "host $name"; else echo "bundle $name $path"; fi ;;
      /*) name="${line%% *}"; name="${name##*/}"; echo "host $name" ;;  # the loader itself
      linux-vdso* | linux-gate*) echo "host ${line%% *}" ;;
      statically\ linked* | "") ;;
      *) echo "host ${line%% *}" ;;
    esac
  done
}

# The highest version of symbol set PREFIX ("GLIBC", "GLIBCXX") that ELF file
# $1 needs (its .gnu.version_r), e.g. "2.34"; nothing when it needs none.
bundle_needed_version() {
  readelf -V --wide "$1" 2>/dev/null |
    sed -n '/^Version needs section/,/^Version definition section/p' |
    { grep -oE "Name: $2_[0-9][0-9.]*" || true; } | sed "s/^Name: $2_//" | sort -V | tail -1
}

# For each ELF file given: "FILE GLIBC_x GLIBCXX_y" (what it needs), and
# "too new: FILE needs GLIBC_x (max 2.34)" for each version above the
# bundle's maximum. Returns 1 when any file needs too new a version.
bundle_check_versions() {
  local f glibc cxx bad=0
  for f in "$@"; do
    glibc="$(bundle_needed_version "$f" GLIBC)"
    cxx="$(bundle_needed_version "$f" GLIBCXX)"
    echo "$f GLIBC_${glibc:-none} GLIBCXX_${cxx:-none}"
    if [[ -n "$glibc" && "$(printf '%s\n' "$glibc" "$BUNDLE_MAX_GLIBC" | sort -V | tail -1)" != "$BUNDLE_MAX_GLIBC" ]]; then
      echo "too new: $f needs GLIBC_$glibc (max $BUNDLE_MAX_GLIBC)"
      bad=1
    fi
    if [[ -n "$cxx" && "$(printf '%s\n' "$cxx" "$BUNDLE_MAX_GLIBCXX" | sort -V | tail -1)" != "$BUNDLE_MAX_GLIBCXX" ]]; then
      echo "too new: $f needs GLIBCXX_$cxx (max $BUNDLE_MAX_GLIBCXX)"
      bad=1
    fi
  done
  return $bad
}

# The commit every record of a bundle built from the git tree at $1 carries
# (run_all.sh exports it as DDP_PITFALLS_COMMIT): HEAD, with "+dirty" when a
# tracked file outside results/ differs, the rule of
# core/results/provenance.cc's GitCommitOf; "unknown" outside a git tree.
bundle_commit() {
  local head
  head="$(git -C "$1" rev-parse HEAD 2>/dev/null)" || { echo unknown; return; }
  if [[ -n "$(git -C "$1" status --porcelain --untracked-files=no -- . ':(exclude)results' 2>/dev/null)" ]]; then
    head+="+dirty"
  fi
  echo "$head"
}

# //a/b:c -> a/b/c: a target's path under bazel-bin and in the bundle's bin/
# (what run_all.sh's --only and the lists see).
bundle_rel_path() {
  local label="${1#//}"
  echo "${label%%:*}/${label#*:}"
}

# Of the Bazel labels given (//a/b:c), prints those whose path in the bundle
# (a/b/c, as run_all.sh's --only sees it) matches the extended regular
# expression ERE ($1, bash's =~), one per line. Returns 2, printing nothing,
# when ERE is not a valid expression. make_bundle.sh --only: a bundle of
# what one lease runs, where the whole bundle and the working tree no
# longer fit the 64 MiB a device call carries.
bundle_select() {
  local ere="$1" label rel rc=0
  shift
  [[ "" =~ $ere ]] || rc=$?
  ((rc != 2)) || return 2
  for label in "$@"; do
    rel="$(bundle_rel_path "$label")"
    if [[ "$rel" =~ $ere ]]; then echo "$label"; fi
  done
  return 0
}
