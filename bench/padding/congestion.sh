#!/usr/bin/env bash
# bench/padding/congestion.sh — the same W = 2 padding cases under each TCP
# congestion control, to show how much of a loopback gather's time (and of
# a skewed share's cost) is the kernel's choice rather than the method's.
#
# On the 2-core VM this was written on (bbr by default) an equal 1 MiB
# exchange took about twice as long as a 1016 KiB one, and under cubic it
# did not: the step is the congestion control's, not Gloo's or ours.
#
# Each run gets a network namespace of its own (unshare -n, loopback up) and
# sets net.ipv4.tcp_congestion_control there only: the machine's setting is
# never touched. Needs root (unshare, sysctl in the namespace) and the
# congestion controls in net.ipv4.tcp_available_congestion_control.
#
#   bench/padding/congestion.sh [CC ...]     (default: bbr cubic)
#
# Writes results/bench_padding_congestion_<cc>.json (Google Benchmark JSON
# with ddp_tcp_congestion in its context); bench/tables.py renders them in
# bench/padding/README.md. Exit 2 on a bad argument, 1 when it cannot run.
set -euo pipefail
cd "$(dirname "$0")/../.."
ccs=("$@")
[ "${#ccs[@]}" -eq 0 ] && ccs=(bbr cubic)
available="$(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null || true)"
for cc in "${ccs[@]}"; do
  case " $available " in
    *" $cc "*) ;;
    *) echo "congestion: '$cc' is not an available congestion control (allowed: $available)" >&2
       exit 2 ;;
  esac
done
if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
  echo "congestion: needs root and unshare -n (a network namespace per run)" >&2
  exit 1
fi
bazel build -c opt //bench/padding
bin="$PWD/bazel-bin/bench/padding/padding"
for cc in "${ccs[@]}"; do
  out="results/bench_padding_congestion_$cc.json"
  tmp="results/.bench_padding_congestion_$cc.json.tmp"
  echo "congestion: $cc (load $(cut -d' ' -f1 /proc/loadavg))" >&2
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
