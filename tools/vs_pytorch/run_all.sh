#!/usr/bin/env bash
# Runs every PyTorch evidence script on every PyTorch version and rewrites the
# README tables that quote their records (run from anywhere; works on the
# checkout it lives in).
#
#   tools/vs_pytorch/run_all.sh                    # every script, 1.13 and 2.15, then tables
#   tools/vs_pytorch/run_all.sh --versions 2.15 --only torch_debug_detail
#   tools/vs_pytorch/run_all.sh --tables           # only rewrite the README tables
#   tools/vs_pytorch/run_all.sh --list             # the scripts, name|script|versions|README|table
#   tools/vs_pytorch/run_all.sh --no-tables        # only the records (tools/regen_all.sh:
#                                                  # a rewritten README would mark later records +dirty)
#
# Records: results/vs_pytorch/NAME.torchVERSION.json. Interpreters: 1.13 is
# /usr/bin/python3 (Debian's python3-torch: tools/setup.sh --dev), 2.15 is
# $TORCH215_PYTHON, default .venv-torch2.15/bin/python of this checkout
# (tools/setup.sh --torch2.15). A script whose stack lacks a package it
# needs (torchmetrics, pytorch-lightning: 2.15 only) is not run there.
# Takes about 75 minutes for both versions on 2 cores (tools/vs_pytorch/README.md). Nothing in
# bazel test //... runs this.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }

versions="1.13,2.15"
only=""
tables_only=0
list_only=0
no_tables=0
while [ $# -gt 0 ]; do
  case "$1" in
    --versions) versions="${2:?--versions needs a value}"; shift 2 ;;
    --only) only="${2:?--only needs a value}"; shift 2 ;;
    --tables) tables_only=1; shift ;;
    --list) list_only=1; shift ;;
    --no-tables) no_tables=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run_all.sh: unknown argument '$1' (allowed: --versions 1.13,2.15, --only NAME,..., --tables, --no-tables, --list, --help)" >&2
       exit 2 ;;
  esac
done

# name | script | versions it runs on | README | table id: the pairs' own
# scripts come from the pair registry (pairs.bzl "evidence", read by
# analysis/registry.py), beside the suite's one of its own (core/comm's).
pair_scripts=$(/usr/bin/python3 analysis/registry.py evidence) || {
  echo "run_all.sh: cannot read the pair registry (pairs.bzl)" >&2; exit 2; }
scripts=("torch_debug_detail|tools/vs_pytorch/checked_vs_detail/detail.py|1.13,2.15|core/comm/README.md|detail")
while IFS= read -r line; do [ -n "$line" ] && scripts+=("$line"); done <<<"$pair_scripts"

if [ "$list_only" = 1 ]; then
  printf '%s\n' "${scripts[@]}"
  exit 0
fi

python_for() {
  case "$1" in
    1.13) echo /usr/bin/python3 ;;
    2.15) echo "${TORCH215_PYTHON:-$root/.venv-torch2.15/bin/python}" ;;
    *) echo "run_all.sh: --versions: unknown version '$1' (allowed: 1.13, 2.15)" >&2; exit 2 ;;
  esac
}

selected() {  # name
  [ -z "$only" ] && return 0
  case ",$only," in *",$1,"*) return 0 ;; esac
  return 1
}

if [ "$tables_only" = 0 ]; then
  for v in ${versions//,/ }; do
    py="$(python_for "$v")"
    if ! "$py" -c 'import torch' >/dev/null 2>&1; then
      echo "run_all.sh: $py cannot import torch (PyTorch $v: see tools/vs_pytorch/README.md)" >&2
      exit 1
    fi
    for row in "${scripts[@]}"; do
      IFS='|' read -r name script on _ _ <<<"$row"
      selected "$name" || continue
      case ",$on," in *",$v,"*) ;; *) continue ;; esac
      out="results/vs_pytorch/$name.torch$v.json"
      echo "== PyTorch $v: $name -> $out ($(date -u +%H:%M:%S))"
      "$py" "$script" --out "$out"
    done
  done
fi

if [ "$tables_only" = 1 ] && [ "$no_tables" = 1 ]; then
  echo "run_all.sh: --tables and --no-tables together do nothing" >&2
  exit 2
fi
[ "$no_tables" = 1 ] && exit 0

# README tables from whatever records exist, older version first.
for row in "${scripts[@]}"; do
  IFS='|' read -r name script on readme id <<<"$row"
  selected "$name" || continue
  files=()
  for v in 1.13 2.15; do
    [ -f "results/vs_pytorch/$name.torch$v.json" ] && files+=("results/vs_pytorch/$name.torch$v.json")
  done
  [ "${#files[@]}" -gt 0 ] || continue
  extra=()
  [ "$name" = torch_debug_detail ] && extra=(--ours results/vs_pytorch/checked_mode.json)
  /usr/bin/python3 "$script" --table "${files[@]}" "${extra[@]}" --update "$readme" --id "$id"
  echo "table $id of $readme <- ${files[*]}"
done
