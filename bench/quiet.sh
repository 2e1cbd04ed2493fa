# bench/quiet.sh — sourced by bench/regen.sh and bench/padding/congestion.sh:
# wait_quiet PREFIX waits until the 1-minute load average is below MAX_LOAD
# (default 0.7), for at most WAIT_S seconds (default 1800), and then gives
# up (exit 1) unless FORCE=1.
#
# Timings are only worth committing from a quiet machine, and a benchmark
# run is itself load: right after one, the 1-minute average reads about 2
# on two busy cores. Waiting before every run keeps one run's own load out
# of the next run's numbers (and out of the load it records at its start).

load1() { cut -d' ' -f1 /proc/loadavg; }

wait_quiet() {
  local who="$1" max_load="${MAX_LOAD:-0.7}" wait_s="${WAIT_S:-1800}" waited=0
  while awk -v l="$(load1)" -v m="$max_load" 'BEGIN { exit !(l >= m) }'; do
    if [ "$waited" -ge "$wait_s" ]; then
      if [ "${FORCE:-0}" = 1 ]; then
        echo "$who: load $(load1) >= $max_load after ${waited}s; FORCE=1, measuring anyway" >&2
        return
      fi
      echo "$who: load $(load1) >= $max_load after ${waited}s; not measuring (FORCE=1 to" \
           "measure anyway, MAX_LOAD/WAIT_S to change the limits)" >&2
      exit 1
    fi
    [ $((waited % 60)) -eq 0 ] && echo "$who: waiting for a quiet machine (load $(load1))" >&2
    sleep 10
    waited=$((waited + 10))
  done
  echo "$who: load $(load1), measuring" >&2
}
