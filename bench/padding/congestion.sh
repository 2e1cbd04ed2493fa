#!/usr/bin/env bash
# bench/padding/congestion.sh — the same W = 2 padding cases under each TCP
# congestion control, to show how much of a loopback gather's time (and of
# a skewed share's cost) is the kernel's choice rather than the method's.
#
# On the 2-core VM this was written on (bbr by default) an equal 1 MiB
# exchange took about 1.6 times as long as a 1016 KiB one, and under cubic
# it did not: the step is the congestion control's, not Gloo's or ours.
#
# Each run gets a network namespace of its own (unshare -n, loopback up) and
# sets net.ipv4.tcp_congestion_control there only: the machine's setting is
# never touched. Needs root (unshare, sysctl in the namespace) and the
# congestion controls in net.ipv4.tcp_available_congestion_control and in
# net.ipv4.tcp_allowed_congestion_control (which a namespace may choose).
#
#   bench/padding/congestion.sh [CC[:PIECE_KIB] ...]
#
# default: bbr cubic cubic:4096. PIECE_KIB sets the Gloo allgatherv's piece
# size for that run (DDP_GLOO_ALLGATHERV_PIECE_KIB, 64..65536; default 512).
# Writes results/bench_padding_congestion_<cc>[_piece<K>KiB].json (Google
# Benchmark JSON; ddp_tcp_congestion and ddp_gloo_allgatherv_piece_kib in
# its context); bench/tables.py renders them in bench/padding/README.md.
# Before each run it waits for a quiet machine as bench/regen.sh does
# (bench/quiet.sh: MAX_LOAD, WAIT_S, FORCE). Exit 2 on a bad argument, 1
# when it cannot run.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=("$@")
[ "${#runs[@]}" -eq 0 ] && runs=(bbr cubic cubic:4096)
available="$(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null || true)"
for run in "${runs[@]}"; do
  cc="${run%%:*}"
  case " $available " in
    *" $cc "*) ;;
    *) echo "congestion: '$cc' is not an available congestion control (allowed: $available)" >&2
       exit 2 ;;
  esac
  if [ "$run" != "$cc" ]; then
    kib="${run#*:}"
    if ! [[ "$kib" =~ ^[0-9]{2,5}$ ]] || [ "$kib" -lt 64 ] || [ "$kib" -gt 65536 ]; then
      echo "congestion: piece size '$kib' in '$run' must be a whole number of KiB in [64, 65536]" >&2
      exit 2
    fi
  fi
done
if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
  echo "congestion: needs root and unshare -n (a network namespace per run)" >&2
  exit 1
fi
# Linux lets a namespace other than the first choose only the congestion
# controls in net.ipv4.tcp_allowed_congestion_control (any other: EPERM,
# even for root); that list is the machine's, so say so rather than set it.
allowed="$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control 2>/dev/null || true)"
for run in "${runs[@]}"; do
  cc="${run%%:*}"
  case " $allowed " in
    *" $cc "*) ;;
    *) echo "congestion: '$cc' is available but not allowed in a network namespace" \
            "(net.ipv4.tcp_allowed_congestion_control = $allowed); to allow it for this" \
            "machine: sysctl -w net.ipv4.tcp_allowed_congestion_control=\"$allowed $cc\"" >&2
       exit 1 ;;
  esac
done
source bench/quiet.sh  # wait_quiet: one run's own load must not start the next
bazel build -c opt //bench/padding
bin="$PWD/bazel-bin/bench/padding/padding"
for run in "${runs[@]}"; do
  cc="${run%%:*}"
  name="$cc"
  unset DDP_GLOO_ALLGATHERV_PIECE_KIB
  if [ "$run" != "$cc" ]; then
    export DDP_GLOO_ALLGATHERV_PIECE_KIB="${run#*:}"
    name="${cc}_piece${DDP_GLOO_ALLGATHERV_PIECE_KIB}KiB"
  fi
  out="results/bench_padding_congestion_$name.json"
  tmp="results/.bench_padding_congestion_$name.json.tmp"
  wait_quiet congestion
  echo "congestion: $run (load $(load1))" >&2
  unshare -n bash -c '
    set -e
    ip link set lo up
    sysctl -q -w net.ipv4.tcp_congestion_control="$1"
    "$2" --world_size 2 --profiles equal,short_tail,straggler --payloads 1016K,1M,16M \
      --reps 7 --pin_cpus --benchmark_out="$3" --benchmark_out_format=json' \
    _ "$cc" "$bin" "$PWD/$tmp"
  mv "$tmp" "$out"
done
echo "congestion: done; bench/tables.py --update renders the tables" >&2
