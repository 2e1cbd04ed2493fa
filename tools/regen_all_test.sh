#!/bin/bash
# regen_all_test.sh REGEN_ALL BENCH_REGEN VS_PYTORCH_RUN_ALL RESULT_FILES...
# Every committed file under results/ is one tools/regen_all.sh makes: a pair
# record or checked_mode.json named in one of its steps, a benchmark file
# named by bench/regen.sh (which regen_all runs whole), a PyTorch evidence
# record whose script tools/vs_pytorch/run_all.sh runs. A record no step
# makes would keep an old commit after a full regeneration (checked_mode.json
# did). Also: --help is exit 0, an unknown flag exit 2 naming the allowed ones.
set -u
regen_all="$1" bench_regen="$2" run_all="$3"
shift 3
fail=0
steps="$(bash "$regen_all" --steps)" || { echo "FAIL: regen_all.sh --steps exited $?"; exit 1; }
scripts="$(bash "$run_all" --list)" || { echo "FAIL: run_all.sh --list exited $?"; exit 1; }
# bench/regen.sh's header lists its files with braces (bench_padding_w{2,4}.json).
bench_files=" $(eval "echo $(sed -n '1,12p' "$bench_regen" | grep -o 'results/[A-Za-z0-9_{},]*\.json' | tr '\n' ' ')") "
for f in "$@"; do
  name="$(basename "$f")"
  case "$f" in
    */vs_pytorch/*.torch*.json)
      stem="${name%.torch*}"
      grep -q "^$stem|" <<<"$scripts" || { echo "FAIL: $f: no script named $stem in run_all.sh"; fail=1; } ;;
    */bench_*.json)
      [[ "$bench_files" == *" results/$name "* ]] ||
        { echo "FAIL: $f: bench/regen.sh does not name it"; fail=1; } ;;
    *)
      grep -q "results/\(vs_pytorch/\)\{0,1\}$name\( \|$\)" <<<"$steps" ||
        { echo "FAIL: $f: no regen_all.sh step writes it"; fail=1; } ;;
  esac
done
grep -q '^bench|timed|bench/regen.sh all' <<<"$steps" || { echo "FAIL: regen_all does not run bench/regen.sh all"; fail=1; }
grep -q '^vs_pytorch|timed|tools/vs_pytorch/run_all.sh' <<<"$steps" || { echo "FAIL: regen_all does not run run_all.sh"; fail=1; }

bash "$regen_all" --help >/dev/null || { echo "FAIL: --help exit $?"; fail=1; }
out="$(bash "$regen_all" --bogus 2>&1)"
rc=$?
[ "$rc" = 2 ] && [[ "$out" == *"--bogus"* && "$out" == *"--dry-run"* ]] ||
  { echo "FAIL: --bogus: exit $rc, '$out'"; fail=1; }
echo "regen_all_test: $# result files checked; $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
