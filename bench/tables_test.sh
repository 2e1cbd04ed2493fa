#!/bin/bash
# bench/tables.py on fixture JSON (bench/testdata): the medians and
# per-repetition ratios it computes, the README blocks it rewrites between
# their markers, and exit 2 on a missing marker or file.
set -u
tables="$1"
src="$(dirname "$tables")/testdata"
root="$TEST_TMPDIR/root"
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$root/results" "$root/bench/padding" "$root/bench/peers"
cp "$src"/*.json "$root/results/"
printf 'top\n<!-- table:overview:begin -->\nold\n<!-- table:overview:end -->\nbottom\n%s\n' \
  '<!-- table:sync_bn:begin -->' '<!-- table:sync_bn:end -->' > "$root/bench/README.md"
{ for w in 2 4; do
    printf 'x\n<!-- table:padding_w%s:begin -->\n<!-- table:padding_w%s:end -->\n' $w $w
  done
  for cc in bbr cubic cubic_piece4096KiB; do
    printf '<!-- table:padding_cc_%s:begin -->\n<!-- table:padding_cc_%s:end -->\n' $cc $cc
  done
  printf '<!-- table:cpu_split:begin -->\n<!-- table:cpu_split:end -->\n'; } \
  > "$root/bench/padding/README.md"
{ for w in 2 4; do
    printf '<!-- table:peers_w%s:begin -->\n<!-- table:peers_w%s:end -->\n' $w $w
  done
  printf '<!-- table:profile:begin -->\n<!-- table:profile:end -->\n'
  printf '<!-- table:torch_split:begin -->\n<!-- table:torch_split:end -->\n'; } > "$root/bench/peers/README.md"

BUILD_WORKSPACE_DIRECTORY="$root" /usr/bin/python3 "$tables" --update || fail "update exited $?"
pad="$root/bench/padding/README.md"
# straggler 1 MiB: floors per rep min(100,95)=95, min(110,120)=110, min(90,100)=90;
# known_counts 100/95, 110/110, 99/90 -> median 1.053, min 1.000, max 1.100.
grep -q '| straggler | 1MiB | 95 \[90, 110\] | allgather 2/3, allgatherv 1/3 |' "$pad" \
  || fail "floor cell: $(grep straggler "$pad")"
grep -q '1.053 \[1.000, 1.100\] (known_counts) | ≤ 1.05 ✗ |' "$pad" || fail "best fix cell"
grep -q '| equal | 64KiB | 40 \[40, 40\] | allgatherv 3/3 |' "$pad" || fail "equal row"
grep -q 'W = 4 (oversubscribed: yes: 4 ranks on 2 CPUs)' "$pad" || fail "oversubscribed label"
# The congestion control where the record has it, and its absence said.
grep -q 'TCP congestion control bbr;' "$pad" || fail "congestion control (W=2 fixture)"
grep -q 'TCP congestion control not recorded;' "$pad" || fail "congestion control (W=4 fixture)"
grep -q 'bench_padding_congestion_cubic.json`: .*TCP congestion control cubic;' "$pad" \
  || fail "congestion table heading"
grep -q 'TCP congestion control cubic; allgatherv pieces 4096 KiB;' "$pad" \
  || fail "piece size in the heading"
# The same call twice: equal known_counts 44, 48 (median_us wins over the
# mean 52), 48 over floor_allgatherv 40.
grep -q 'twice measures: 64KiB 1.200 \[1.100, 1.200\]\.' "$pad" || fail "resolution: $(grep Resolution "$pad")"
# cpu_split: busiest CPU over wall per repetition 450/500 = 0.90, 600/600 = 1.00.
grep -q '| 1MiB | straggler | 131072, 262144 | 550 \[500, 600\] | 310 \[300, 320\] | 60 \[50, 70\] | 525 \[450, 600\] | 100 \[90, 110\] | 0.95 \[0.90, 1.00\] |' \
  "$pad" || fail "cpu_split row: $(grep straggler "$pad" | tail -1)"
grep -q 'ranks pinned to CPUs 0,1' "$pad" || fail "cpu_split heading"
# Skew over floor net of none: wall (500-100)/(400-100), (600-100)/(500-100);
# busiest CPU (450-50)/(300-50), (600-60)/(360-60).
grep -q '1MiB `straggler` / `equal`: wall 1.29 \[1.25, 1.33\], busiest CPU 1.70 \[1.60, 1.80\]\.' \
  "$pad" || fail "cpu_split skew line: $(grep 'A skew' "$pad")"
peers="$root/bench/peers/README.md"
# The PyTorch side in our ranks' class (SCHED_BATCH, the control) comes first.
grep -q '| workload | ours (us) | PyTorch, SCHED_BATCH (same class as ours) (us) | ours / that | PyTorch, SCHED_OTHER (as PyTorch runs by default) (us) | ours / that |' \
  "$peers" || fail "peers head: $(grep workload "$peers")"
grep -q '| gather equal 1KiB/rank floor_allgather | 11.0 \[10.0, 12.0\] | 15.0 \[14.0, 16.0\] | 0.75 \[0.67, 0.79\] | 20.0 \[20.0, 22.0\] | 0.50 \[0.50, 0.60\] |' \
  "$peers" || fail "peers row: $(grep 1KiB "$peers")"
# A second PyTorch (--second_torch_python) is one more column pair, last, in
# the W = 2 fixture only: times 40, 24, 22 us; ratios 0.25, 0.50, 0.50.
grep -q '| 0.50 \[0.50, 0.60\] | 24.0 \[22.0, 40.0\] | 0.50 \[0.25, 0.50\] |$' "$peers" \
  || fail "second PyTorch cells: $(grep 1KiB "$peers")"
[ "$(grep -c '| PyTorch 2.15.0, SCHED_OTHER (us) | ours / that |$' "$peers")" = 1 ] \
  || fail "second PyTorch column: not in exactly one table (the W = 4 fixture has none)"
grep -q 'torch 1.13.0a0 (the PyTorch columns without a version) and 2.15.0, interleaved' "$peers" \
  || fail "second PyTorch in the heading"
grep -q '| 2 | 1KiB | ours_batch | 210 \[210, 210\] | 300 \[300, 300\] | 2 \[2, 2\] | 30.5 \[30.5, 30.5\] | 110 \[110, 110\] | 24.0 \[24.0, 24.0\] |' \
  "$peers" || fail "profile row"
grep -q '| batch_norm C=16 N=2 8x8 | 25.0 \[20.0, 30.0\] | 11.0 \[10.0, 12.0\] | 0.45 \[0.40, 0.50\] |' \
  "$peers" || fail "torch split row: $(grep 'C=16 N=2 8x8 |' "$peers")"
grep -q 'CPU capability AVX2, built -O2' "$peers" || fail "torch build facts"
over="$root/bench/README.md"
# sync_bn: medians of the repetitions' medians, ratios per repetition
# (100/10, 132/12 = 10, 11; comm 80/40, 90/45 = 2, 2; GN 5/10, 6/12).
grep -q '| 16 | 2 | 11.0 \[10.0, 12.0\] | 116.0 \[100.0, 132.0\] | 85.0 \[80.0, 90.0\] | 42.5 \[40.0, 45.0\] | 5.5 \[5.0, 6.0\] | 10.50 \[10.00, 11.00\] | 2.00 \[2.00, 2.00\] | 0.50 \[0.50, 0.50\] |' \
  "$over" || fail "sync_bn row: $(grep '^| 16 ' "$over")"
grep -q 'bench_sync_bn.json`: .*W = 2 (oversubscribed: no); 2 interleaved repetitions' "$over" \
  || fail "sync_bn heading"
# A run from a tree with uncommitted changes says so.
grep -q 'commit `abcdef123456+dirty`' "$over" || fail "+dirty lost: $(grep 'bench_sync_bn' "$over")"
grep -q '^top$' "$over" && grep -q '^bottom$' "$over" || fail "text outside the markers changed"
grep -q 'old' "$over" && fail "old block kept"
grep -q '| 2 | peers | rows with ours / PyTorch, SCHED_BATCH (same class as ours) ≤ 1.0 | 1 of 2; worst 1.20 (group_norm C=256 N=32 8x8 fwd+bwd) |' \
  "$over" || fail "overview peers row: $(grep peers "$over")"
grep -q '| 2 | peers | rows with ours / PyTorch, SCHED_OTHER (as PyTorch runs by default) ≤ 1.0 |' \
  "$over" || fail "overview peers row, default class"
grep -q '| 2 | peers | rows with ours / PyTorch 2.15.0, SCHED_OTHER ≤ 1.0 | 1 of 2; worst 1.5' \
  "$over" || fail "overview peers row, second PyTorch"
# The sync_bn fixture predates --norm_device: its heading says neither.
grep 'bench_sync_bn.json`' "$over" | grep -q 'norm layers on\|SHARED' && fail "sync_bn heading: $(grep 'bench_sync_bn' "$over")"
# A record from the GPU path says where the layers ran, and shared GPUs.
cp "$root/results/bench_sync_bn.json" "$TEST_TMPDIR/sync_bn_host.json"
sed -i 's/"ddp_backend": "gloo",/"ddp_backend": "nccl", "ddp_norm_device": "cuda", "ddp_shared_gpu": "yes: shared",/' \
  "$root/results/bench_sync_bn.json"
BUILD_WORKSPACE_DIRECTORY="$root" /usr/bin/python3 "$tables" --update || fail "update (cuda record) exited $?"
grep -q 'bench_sync_bn.json`: .*; nccl, float; norm layers on cuda; ranks SHARED GPUs: functional numbers' "$over" \
  || fail "sync_bn heading (cuda, shared): $(grep 'bench_sync_bn' "$over")"
cp "$TEST_TMPDIR/sync_bn_host.json" "$root/results/bench_sync_bn.json"

# Missing marker, missing file: exit 2 with the name.
printf 'no markers\n' > "$over"
BUILD_WORKSPACE_DIRECTORY="$root" /usr/bin/python3 "$tables" --update 2> "$TEST_TMPDIR/err"
[ $? -eq 2 ] || fail "missing marker should exit 2"
grep -q "table:overview:begin" "$TEST_TMPDIR/err" || fail "message: $(cat "$TEST_TMPDIR/err")"
rm "$root/results/bench_peers_w4.json"
BUILD_WORKSPACE_DIRECTORY="$root" /usr/bin/python3 "$tables" 2> "$TEST_TMPDIR/err" > /dev/null
[ $? -eq 2 ] || fail "missing file should exit 2"
grep -q "bench_peers_w4.json" "$TEST_TMPDIR/err" || fail "message: $(cat "$TEST_TMPDIR/err")"
echo PASS
