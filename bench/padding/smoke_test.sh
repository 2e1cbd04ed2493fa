#!/bin/bash
# bench/padding end to end with tiny settings: W=2, 1 KiB, two profiles, two
# interleaved repetitions of two iterations per case. Checks the JSON has
# every case and repetition in interleaved order and every counter with the
# values the lengths fix, the console summary, and exit 2 on bad flags.
set -u
bin="$1"
out="$TEST_TMPDIR/padding.json"
fail() { echo "FAIL: $*"; exit 1; }

# A flag given twice is a usage error, so W and the profiles are given per run.
common=(--payloads 1K --min_time 0 --min_iters 2 --max_iters 2 --reps 2 --timeout 20 --deadline 50)
two=(--world_size 2 --profiles equal,straggler)
"$bin" "${common[@]}" "${two[@]}" --pin_cpus --benchmark_format=json --benchmark_out="$out" \
  > "$TEST_TMPDIR/stdout" \
  || fail "run exited $?"
[ -s "$out" ] || fail "no JSON at $out"

# "name key value" for every counter of every benchmark entry.
flat=$(awk -F': ' '
  /"name":/ { gsub(/[",]/, "", $2); name = $2 }
  /"(W|rep|bytes_per_rank|max_bytes|wire_bytes_per_rank|wasted_bytes|eff_bandwidth|median_us|pad_trim_us|ratio_over_floor|floor_us|load1|iterations)":/ {
    key = $1; gsub(/[" ]/, "", key); v = $2; gsub(/,/, "", v); printf "%s %s %s\n", name, key, v + 0 }
' "$out")
echo "$flat"

want() {  # name key value (every repetition)
  for rep in 0 1; do
    echo "$flat" | grep -qx "padding/gloo/W2/$1/rep:$rep/iterations:2/manual_time $2 $3" \
      || fail "$1 rep $rep: expected $2 = $3"
  done
}
methods="floor_allgather floor_allgatherv pad_gather_trim allgatherv known_counts bounded_pad"
for p in equal straggler; do
  for m in $methods; do
    c="$p/1KiB/$m"
    want "$c" iterations 2
    want "$c" W 2
    for k in wire_bytes_per_rank eff_bandwidth median_us; do
      echo "$flat" | grep -q "^padding/gloo/W2/$c/rep:1/iterations:2/manual_time $k " \
        || fail "$c lacks $k"
    done
    # Every entry after a repetition's two floors has its ratio over that floor.
    [ "$m" = floor_allgather ] && continue
    for k in ratio_over_floor floor_us; do
      echo "$flat" | grep -q "^padding/gloo/W2/$c/rep:1/iterations:2/manual_time $k " \
        || fail "$c lacks $k"
    done
  done
done
# The pad and trim's own time (Memory spans) on the two methods that pad or
# trim, within their gather's time; on no other method.
for p in equal straggler; do
  for m in $methods; do
    for rep in 0 1; do
      n="padding/gloo/W2/$p/1KiB/$m/rep:$rep/iterations:2/manual_time"
      pt=$(echo "$flat" | awk -v n="$n" '$1 == n && $2 == "pad_trim_us" { print $3 }')
      med=$(echo "$flat" | awk -v n="$n" '$1 == n && $2 == "median_us" { print $3 }')
      case $m in
        pad_gather_trim|bounded_pad)
          [ -n "$pt" ] || fail "$n lacks pad_trim_us"
          awk -v a="$pt" -v b="$med" 'BEGIN { exit !(a >= 0 && a <= b) }' || fail "$n: pad_trim_us $pt not in [0, median_us $med]" ;;
        *) [ -z "$pt" ] || fail "$n has pad_trim_us $pt but neither pads nor trims" ;;
      esac
    done
  done
done
grep -q '"ddp_timing": "steady clock per gather, the slowest rank' "$out" || fail "JSON lacks ddp_timing"
# Interleaved: within a group, repetition 0 of every method, then repetition 1.
order=$(grep -o '"name": "padding/gloo/W2/straggler/1KiB/[a-z_]*/rep:[0-9]' "$out" \
  | sed 's/.*1KiB\///' | tr '\n' ' ')
[ "$order" = "$(for r in 0 1; do for m in $methods; do printf '%s/rep:%s ' $m $r; done; done)" ] \
  || fail "not interleaved: $order"
# straggler at W=2, 1 KiB: lengths 128 and 256 elements.
want straggler/1KiB/pad_gather_trim wasted_bytes 1024          # (2*256 - 384) * 8
want straggler/1KiB/pad_gather_trim wire_bytes_per_rank 2056   # 8 + 256 * 8
want straggler/1KiB/allgatherv wasted_bytes 0
want straggler/1KiB/allgatherv wire_bytes_per_rank 1544        # 8 + 384 * 8 / 2
want straggler/1KiB/known_counts wire_bytes_per_rank 1536      # no sizes exchange
want straggler/1KiB/bounded_pad wire_bytes_per_rank 2056       # (256 + 1) * 8
want straggler/1KiB/bounded_pad wasted_bytes 1024
want straggler/1KiB/floor_allgather wire_bytes_per_rank 1536   # 192 * 8
want straggler/1KiB/floor_allgatherv wire_bytes_per_rank 1536
want straggler/1KiB/floor_allgather bytes_per_rank 1536
want equal/1KiB/pad_gather_trim max_bytes 1024
grep -q '"ddp_sched": "batch"' "$out" || fail "context lacks ddp_sched batch"
grep -q '"ddp_pin_cpus": "yes"' "$out" || fail "context lacks ddp_pin_cpus yes"
for key in ddp_reps ddp_oversubscribed ddp_loadavg_start ddp_commit ddp_cpus; do
  grep -q "\"$key\":" "$out" || fail "context lacks $key"
done
grep -q '"time_unit": "us"' "$out" || fail "time unit is not us"
grep -q 'padding' "$TEST_TMPDIR/stdout" || fail "rank 0 wrote nothing to stdout"

# The console table and summary (and the default scheduling class, SCHED_OTHER, works too).
"$bin" "${common[@]}" --world_size 2 --profiles straggler --sched normal > "$TEST_TMPDIR/console" \
  || fail "console run failed"
grep -q "x_floor" "$TEST_TMPDIR/console" || fail "no summary table"
grep -q "median over 2 interleaved repetitions" "$TEST_TMPDIR/console" || fail "no median line"
grep -q "straggler/1KiB/pad_gather_trim " "$TEST_TMPDIR/console" || fail "no case in the summary"
grep -q "straggler/1KiB/floor_allgatherv .*(floor in [0-2]/2)" "$TEST_TMPDIR/console" \
  || fail "no floor winner in the summary"
# From W = 3 the direct-exchange twins and their floor join in (a third floor).
"$bin" "${common[@]}" --world_size 3 --profiles straggler > "$TEST_TMPDIR/console3" \
  || fail "W=3 run failed"
grep -q "W3/straggler/1KiB/known_counts_direct " "$TEST_TMPDIR/console3" \
  || fail "no direct-exchange case at W=3"
grep -q "W3/straggler/1KiB/floor_allgatherv_direct .*(floor in [0-2]/2)" "$TEST_TMPDIR/console3" \
  || fail "no direct floor at W=3"
grep -q "W2/straggler/1KiB/known_counts_direct" "$TEST_TMPDIR/console" \
  && fail "a direct-exchange case at W=2"

# Listing, filter.
[ "$("$bin" "${common[@]}" "${two[@]}" --benchmark_list_tests --benchmark_filter=straggler.*/allgatherv)" = \
  "$(printf 'padding/gloo/W2/straggler/1KiB/%s\n' floor_allgather floor_allgatherv allgatherv)" ] \
  || fail "filter/list"

# Bad usage: exit 2 with a message naming the flag.
bad() {
  local flag="$1"; shift
  "$bin" "$@" > /dev/null 2> "$TEST_TMPDIR/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "$* exited $rc, not 2"
  grep -q -- "$flag" "$TEST_TMPDIR/err" || fail "$*: message does not name $flag: $(cat "$TEST_TMPDIR/err")"
}
bad --backend --backend mpi
bad --world_size --world_size 0
bad --payloads --payloads 3K5
bad --payloads --payloads 128M
bad --profiles --profiles equal,lumpy
bad --benchmark_min_time --benchmark_min_time=1
bad --benchmark_format --benchmark_format=xml
bad --benchmark_filter --benchmark_filter='('
bad --min_iters --min_iters 5 --max_iters 2
bad --reps --reps 0
bad --sched --sched realtime
"$bin" --help > "$TEST_TMPDIR/help" || fail "--help exited $?"
grep -q -- "--payloads" "$TEST_TMPDIR/help" || fail "--help lacks --payloads"
echo PASS
