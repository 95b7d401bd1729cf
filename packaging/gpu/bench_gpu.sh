#!/usr/bin/env bash
# The speed measurements a GPU machine makes (issue: "Speed where the verify is nearly free", item 4).
#
#     packaging/gpu/bench_gpu.sh OUT_DIR
# on a CUDA machine with the repository's working tree (torch preinstalled; no network needed) writes OUT_DIR/:
#   doctor.txt                 the machine
#   bench-bundled.json/.txt    the bundled model on the common prompts: vanilla, exact and LANTERN (Jacobi L12),
#                              eager and compiled (CUDA graphs), in bf16; the fastest vanilla is the reference
#   janus-<SIZE>.json          Janus-Pro-1B / -7B's shapes (random weights) through the transformers target
#                              (models/janus.py): prefill, a step, a verify of each width, tokens/s, GPU memory
#   scale-<PRESET>.json/.txt   a LlamaGen-sized target (random weights: the cost does not depend on them) timed
#                              at every verify width, with and without guidance rows, compiled, and the bundled
#                              model's measured tokens per round projected onto it
# Knobs (environment): DEVICE (cuda), PRESETS ("GPT-B GPT-L GPT-XL"), GRID (24: 384 px), N (12 prompts),
# SEEDS (2 per prompt), PRECISION (bf16), METHODS (the three above), JANUS_SIZES ("1B 7B"; "" skips them). On a CPU (DEVICE=cpu, PRESETS=GPT-B,
# GRID=4, N=1) the same script runs in a minute: tests/eval/test_gpu_script.py.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$here"
out="${1:?usage: bench_gpu.sh OUT_DIR}"
mkdir -p "$out"
export PYTHONPATH="$here/app${PYTHONPATH:+:$PYTHONPATH}"
device="${DEVICE:-cuda}"
precision="${PRECISION:-bf16}"
ls="python3 -m lantern_studio"
$ls doctor > "$out/doctor.txt" 2>&1 || true
# shellcheck disable=SC2086  # METHODS and the compile flag are word lists
$ls bench --prompts resources/models/emoji-64/common_prompts.json --n "${N:-12}" --seeds-per-prompt "${SEEDS:-2}" \
  --device "$device" --precision "$precision" ${COMPILE---compile} --no-pictures --quiet --out "$out/bench-out" \
  --methods ${METHODS:-vanilla-$precision exact-jacobi-L12 lantern-jacobi-k64-d0.2-L12} \
  --json "$out/bench-bundled.json" | tee "$out/bench-bundled.txt"
for preset in ${PRESETS:-GPT-B GPT-L GPT-XL}; do
  for guidance in cfg no-cfg; do
    flag=(); if [ "$guidance" = no-cfg ]; then flag=(--no-cfg); fi
    # shellcheck disable=SC2086
    $ls bench-scale --preset "$preset" --grid "${GRID:-24}" --acceptance "$out/bench-bundled.json" \
      --device "$device" --precision "$precision" ${COMPILE---compile} "${flag[@]}" \
      ${WIDTHS:+--widths $WIDTHS} ${ROUNDS:+--rounds $ROUNDS} ${REPEATS:+--repeats $REPEATS} \
      --json "$out/scale-$preset-$guidance.json" | tee "$out/scale-$preset-$guidance.txt"
  done
done
for size in ${JANUS_SIZES-1B 7B}; do
  python3 -m lantern_studio.eval.janus_cost --size "$size" --device "$device" --precision "$precision" \
    ${WIDTHS:+--widths $WIDTHS} --json > "$out/janus-$size.json"
done
ls -l "$out"
