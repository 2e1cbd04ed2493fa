# Which shared libraries a GPU-runner bundle carries (sourced by
# make_bundle.sh and its test).
#
# Left to the target machine ("host"):
#  * glibc's own libraries and the dynamic loader: they must match the
#    target's kernel interface and cannot be mixed with another glibc;
#  * NVIDIA's: libcuda (the driver's), libnccl / libcudart (the target's CUDA
#    or Python install; libnccl.so.2 is over 200 MB, and the CUDA runtime is
#    linked statically anyway), libnvidia-*.
# Carried ("bundle"): everything else ldd lists, e.g. libgloo and its
# dependencies (libhiredis, libibverbs, libnl), and libstdc++ / libgcc_s, so a
# target with an older GCC runtime still has the GLIBCXX versions g++ 12 used.

# Prints "host NAME" when NAME (a soname) comes from the target machine.
bundle_lib_is_host() {
  case "$1" in
    linux-vdso.so* | linux-gate.so* | ld-linux*.so* | ld64.so*) return 0 ;;
    libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | libutil.so.*) return 0 ;;
    libcuda.so* | libnccl.so* | libcudart.so* | libnvidia-*.so*) return 0 ;;
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
