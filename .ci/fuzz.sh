#!/bin/sh
# Runs each libFuzzer target (test/fuzz) for a bounded time from its committed seed corpus, both
# at once (one core each), in the tree .ci/sanitizers.sh built: ASan, UBSan and LeakSanitizer on,
# any crash, mismatch with the CPU reference, validation message or sanitizer report fails.
# What a run finds new goes to a scratch directory; the committed corpus stays as it is.
# Usage: .ci/fuzz.sh [BUILD_DIR] [SECONDS] (defaults build-sanitize, 90).
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build-sanitize}
seconds=${2:-90}
. .ci/sanitizer-env.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pids=""
for target in npy operator; do
  mkdir -p "$work/$target"
  "$dir/test/fuzz/vkdml_fuzz_$target" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$dir/fuzz-$target-" "$work/$target" "test/fuzz/corpus/$target" \
    >"$work/$target.log" 2>&1 &
  pids="$pids $!"
done
failed=0
for pid in $pids; do wait "$pid" || failed=1; done
for target in npy operator; do
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$target.log")
  echo "fuzz_$target: $runs inputs in $seconds s"
  [ -n "$runs" ] && [ "$runs" -gt 0 ] || { echo "fuzz_$target: ran no input" >&2; failed=1; }
done
# fuzz_operator's floor: at least half of its inputs created, compiled, run and compared (not
# refused by validation); its last stats line counts them (the process prints one at exit).
stats=$(grep -h '^fuzz_operator: [0-9]' "$work/operator.log" | tail -n 1)
echo "${stats:-fuzz_operator: no stats line}"
inputs=$(echo "$stats" | sed -n 's/^fuzz_operator: \([0-9]*\) inputs.*/\1/p')
ran=$(echo "$stats" | sed -n 's/.* \([0-9]*\) run and compared.*/\1/p')
if [ -z "$inputs" ] || [ -z "$ran" ] || [ $((ran * 2)) -lt "$inputs" ]; then
  echo "fuzz_operator: below its floor (half of the inputs run and compared): $stats" >&2
  failed=1
fi
# ... and at least one of them each of vkdml's own: a quantized-row gather and a quantizing scatter
# (an input whose first byte is 0xE0+; the scatter's second byte has bit 0x40), an embedding bag
# (0xD0 to 0xDF), a block-quantized gather (0xC8 to 0xCF), a MoE permute or unpermute (0xC4 to
# 0xC7), a segment reduction (0xB8 to 0xBF) and a paged cache write or gather (0xC0 to 0xC3).
for own in "quantized-row gathers" "quantizing scatters" "embedding bags" \
  "block-quantized gathers" "MoE permutes and unpermutes" "segment reductions" \
  "paged cache writes and gathers"; do
  n=$(echo "$stats" | sed -n "s/.* \([0-9]*\) $own[ ,].*/\1/p")
  if [ -z "$n" ] || [ "$n" -eq 0 ]; then
    echo "fuzz_operator: no $own run and compared: $stats" >&2
    failed=1
  fi
done
# ... and its check of colliding float sums and products met some (seeds op6_* and op7_*).
folds=$(echo "$stats" | sed -n 's/.* \([0-9]*\) colliding float sums and products checked.*/\1/p')
if [ -z "$folds" ] || [ "$folds" -eq 0 ]; then
  echo "fuzz_operator: no colliding float sum or product checked: $stats" >&2
  failed=1
fi
if [ "$failed" != 0 ]; then
  for target in npy operator; do tail -n 60 "$work/$target.log"; done
  echo "fuzz: a target failed; its input is in $dir/fuzz-*" >&2
  exit 1
fi
echo "fuzz: no failures"
