#!/usr/bin/env bash
# Installs what ddp-pitfalls needs from Debian's packages (apt only; nothing
# else is downloaded, ever). Idempotent: installs only what is missing and
# says what. Run as root, or with sudo.
#
#   sudo tools/setup.sh           # build + test dependencies
#   sudo tools/setup.sh --dev     # also PyTorch and scikit-learn (golden
#                                 # vectors, bench/peers side-by-side)
#
# CUDA and NCCL are not Debian packages here: when present (CUDA_PATH, nvcc
# on PATH, or /usr/local/cuda) the build uses them, otherwise GPU targets are
# skipped. See README.md.
set -euo pipefail

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }

dev=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg' (allowed: --dev, --help)" >&2; exit 2 ;;
  esac
done

# Build and test: Bazel 4.2.3 with its Java rules, a C++20 compiler, the
# system libraries the WORKSPACE finds, and what the tests and report run
# (iproute2 and nftables: the netns tests' test hosts and packet loss).
packages=(
  bazel-bootstrap bazel-rules-java default-jdk-headless
  g++ git ca-certificates procps
  libgtest-dev libgmock-dev libbenchmark-dev libeigen3-dev libgloo-dev
  redis-server python3 python3-matplotlib
  iproute2 nftables
)
if [ "$dev" = 1 ]; then
  packages+=(python3-torch python3-sklearn python3-numpy)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup.sh: all ${#packages[@]} packages already installed; nothing to do."
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "setup.sh: need root to install: ${missing[*]} (run as root or with sudo)" >&2
    exit 1
  fi
else
  as_root=()
fi

echo "setup.sh: installing ${#missing[@]} missing package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -q
"${as_root[@]}" apt-get install -y -q "${missing[@]}"
echo "setup.sh: done. Next: bazel run //:suite   (tests: bazel test //...)"
