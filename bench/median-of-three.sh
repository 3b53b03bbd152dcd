#!/usr/bin/env bash
# Runs bench/run.sh three times (arguments passed on, e.g. --no-litellm) and prints the median of
# each headline figure with all three runs' figures, then the performance targets met or missed.
# Run it with nothing else working on the machine. Output: bench/out/medians.md; each run's
# table and results in bench/out/run-{1,2,3}.{md,jsonl}.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out
files=()
for run in 1 2 3; do
  echo "run $run of 3 …" >&2
  bench/run.sh "$@" >/dev/null
  cp "$OUT/results.jsonl" "$OUT/run-$run.jsonl"
  cp "$OUT/table.md" "$OUT/run-$run.md"
  files+=("$OUT/run-$run.jsonl")
done
{
  echo "bench/median-of-three.sh $* — $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
  bench/target/release/driver medians "${files[@]}"
} | tee "$OUT/medians.md"
