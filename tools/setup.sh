#!/usr/bin/env bash
# Installs what ddp-pitfalls needs from Debian's packages (apt only, except
# --torch2.15). Idempotent: installs only what is missing and says what. Run
# as root, or with sudo.
#
#   sudo tools/setup.sh             # build + test dependencies
#   sudo tools/setup.sh --dev       # also scikit-learn (golden vectors,
#                                   # bench/peers side-by-side; PyTorch 1.13 is
#                                   # in the default set: //guard's tests)
#   tools/setup.sh --torch2.15      # also the second PyTorch stack: a venv
#       .venv-torch2.15 with tools/vs_pytorch/requirements-torch2.15.txt
#       (torch 2.15.0, torchmetrics 1.9.0, pytorch-lightning 2.6.6) from the
#       Python package index: about 5.6 GB, about 2 minutes; and beside it
#       torchmetrics 1.5.2 in .venv-torch2.15/torchmetrics-1.5.2
#       (requirements-torchmetrics1.5.2.txt). Only the evidence scripts
#       under */pytorch/ use them; bazel test //... never does.
#
# CUDA and NCCL are not Debian packages here: when present (CUDA_PATH, nvcc
# on PATH, or /usr/local/cuda) the build uses them, otherwise GPU targets are
# skipped. See README.md.
set -euo pipefail

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }

dev=0
torch215=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    --torch2.15) torch215=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg' (allowed: --dev, --torch2.15, --help)" >&2
       exit 2 ;;
  esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"

# Build and test: Bazel 4.2.3 with its Java rules, a C++20 compiler, the
# system libraries the WORKSPACE finds, and what the tests and report run
# (iproute2 and nftables: the netns tests' test hosts and packet loss).
packages=(
  bazel-bootstrap bazel-rules-java default-jdk-headless
  g++ git ca-certificates procps
  libgtest-dev libgmock-dev libbenchmark-dev libeigen3-dev libgloo-dev
  nlohmann-json3-dev
  redis-server python3 python3-matplotlib
  iproute2 nftables
  python3-torch python3-torchvision python3-venv python3-wheel
)
# python3-torch, python3-torchvision, python3-venv, python3-wheel: //guard's tests (real gloo
# worlds under Debian's PyTorch 1.13; pip installs the guard into a fresh
# venv offline, where setuptools needs wheel to build it).
if [ "$dev" = 1 ]; then
  packages+=(python3-sklearn python3-numpy)
fi
if [ "$torch215" = 1 ]; then
  packages+=(python3-venv python3-pip)
fi

# The second PyTorch stack (--torch2.15): a venv in the ignored folder
# .venv-torch2.15 with every package pinned; kept when it already imports
# torch 2.15.0 (delete the folder to reinstall).
torch215_venv() {
  local venv="$root/.venv-torch2.15"
  local req="$root/tools/vs_pytorch/requirements-torch2.15.txt"
  if "$venv/bin/python" -c 'import sys, torch; sys.exit(torch.__version__.split("+")[0] != "2.15.0")' \
      >/dev/null 2>&1; then
    echo "setup.sh: $venv already has torch 2.15.0."
  else
    echo "setup.sh: creating $venv from $req (about 5.6 GB, about 2 minutes)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q -r "$req"
    "$venv/bin/python" -c 'import torch, torchmetrics, pytorch_lightning, sklearn; print("setup.sh: torch", torch.__version__, "torchmetrics", torchmetrics.__version__, "pytorch-lightning", pytorch_lightning.__version__)'
  fi
  torchmetrics_older "$venv"
}

# torchmetrics 1.5.2 beside the venv's 1.9.0, in its own folder that only
# repro/autograd_lost_gather/pytorch/torchmetrics_loss.py puts on sys.path
# (the release before the change seed 002 proposes; the pin file says why).
torchmetrics_older() {
  local dir="$1/torchmetrics-1.5.2"
  if PYTHONPATH="$dir" "$1/bin/python" -c 'import sys, torchmetrics; sys.exit(torchmetrics.__version__ != "1.5.2")' \
      >/dev/null 2>&1; then
    echo "setup.sh: $dir already has torchmetrics 1.5.2; nothing to do."
    return 0
  fi
  rm -rf "$dir"
  "$1/bin/pip" install -q --no-deps --require-hashes --target "$dir" \
    -r "$root/tools/vs_pytorch/requirements-torchmetrics1.5.2.txt"
  echo "setup.sh: torchmetrics 1.5.2 in $dir"
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup.sh: all ${#packages[@]} packages already installed; nothing to do."
  if [ "$torch215" = 1 ]; then torch215_venv; fi
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
if [ "$torch215" = 1 ]; then torch215_venv; fi
echo "setup.sh: done. Next: bazel run //:suite   (tests: bazel test //...)"
