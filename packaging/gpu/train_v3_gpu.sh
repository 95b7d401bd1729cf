#!/usr/bin/env bash
# Model v3's recipe, bigger, on one GPU for about ten minutes (issue: "Bundled model v3", item 8).
#
# Here (any machine with the dataset and a run that tokenized it, e.g. ~/.cache/lantern-studio/runs/v3-every):
#     packaging/gpu/train_v3_gpu.sh pack RUN_DIR
#   writes gpu-pack/ (ignored by git): the run's prepared tokens and classes as one training pack (~13 MB for
#   the 1,349 everyday identities) and the shipped weights to warm-start from.
# On the GPU machine (the repository's working tree with gpu-pack/ carried; torch preinstalled, no network):
#     packaging/gpu/train_v3_gpu.sh train OUT_DIR
#   trains from the pack with bf16 autocast and writes OUT_DIR/gpt.safetensors, metrics.json, identities.json
#   and log.txt (the run's checkpoint stays in OUT_DIR/run). Bring them back, then
#   `lantern-studio train ship --gpt OUT_DIR/gpt.safetensors …` as for a CPU run.
# Knobs (environment): DEVICE (cuda), MINUTES (9), STEPS (6000), BATCH (256), LAYERS (6), DIM (256), HEADS (8),
# LR (1e-3), GROW_FROM (gpu-pack/warm.safetensors: the shipped model, its classes kept and the pack's new ones
# added; "none" to start from scratch). The default size is the shipped one: it decodes at the same speed on a
# user's CPU, and the GPU's ten minutes give it the many epochs two cores cannot. A bigger model (LAYERS=8 DIM=384:
# ~15 M parameters, ~30 MB in fp16; resources/ holds at most 60 MB) starts from scratch (GROW_FROM=none), or from
# weights of that size (INIT_FROM=FILE: `train ar --init-from`; GROW_FROM=none with it).
# Flags after RUN_DIR / OUT_DIR go to `train ar` as they are: a run's own recipe. Model v5's long run (TH: every
# art set on the v5 tokenizer, pixel-noise copies with mixture targets, substituted contexts, style "any"), e.g.:
#     V5="--data DATA/emoji64-v5 --grow-from resources/models/emoji-64/gpt.safetensors --jitter pixel \
#         --jitter-copies 2 --style-dropout 0.3 --styles all"
#     VQ=resources/models/emoji-64-v5/vq.safetensors packaging/gpu/train_v3_gpu.sh pack RUNS/v5-TH2 $V5
#       (reuses the run's prepared.pt, copies included)
#     GROW_FROM=none INIT_FROM=snapshots/emoji-64-ar-v5-TH-stepN.safetensors LR=3e-4 \
#       packaging/gpu/train_v3_gpu.sh train OUT --styles all --jitter pixel --jitter-copies 2 --mixture-targets \
#       --substitute 0.15 --substitute-k 8 --style-dropout 0.3 --vq resources/models/emoji-64-v5/vq.safetensors
#   (the pack holds the copies; the tokenizer only gives the substitution its neighbour table; N: the newest
#   snapshot's step). Checked on this project's CPU machine with DEVICE=cpu STEPS=3 BATCH=32: the pack (16.4 MiB)
#   from TH's run, and 3 steps from TH's step-5430 snapshot at NLL 1.975 on sampled rows (TH's own 1.977 @5400).
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$here"
what="${1:-}"
case "$what" in
  pack)
    run="${2:?usage: train_v3_gpu.sh pack RUN_DIR}"
    mkdir -p gpu-pack
    grep -qx '/gpu-pack/' .git/info/exclude 2>/dev/null || echo '/gpu-pack/' >> .git/info/exclude
    python3 -m lantern_studio train ar --condition class --repertoire "${REPERTOIRE:-everyday}" \
      --vq "${VQ:-resources/models/emoji-64/vq.safetensors}" --run "$run" --pack-out gpu-pack/pack.pt \
      ${GROW_FROM:+--grow-from "$GROW_FROM"} "${@:3}"
    for f in gpt.safetensors identities.json model.json; do  # the shipped model: what the GPU run grows from
      cp "${WARM_DIR:-resources/models/emoji-64}/$f" "gpu-pack/${f/gpt.safetensors/warm.safetensors}"
    done
    ls -l gpu-pack
    ;;
  train)
    out="${2:?usage: train_v3_gpu.sh train OUT_DIR}"
    mkdir -p "$out"
    export PYTHONPATH="$here/app${PYTHONPATH:+:$PYTHONPATH}"
    grow="${GROW_FROM:-gpu-pack/warm.safetensors}"
    args=(--condition class --pack gpu-pack/pack.pt --run "$out/run" --device "${DEVICE:-cuda}" --bf16
          --steps "${STEPS:-6000}" --budget-minutes "${MINUTES:-9}" --batch "${BATCH:-256}" --layers "${LAYERS:-6}"
          --dim "${DIM:-256}" --heads "${HEADS:-8}" --lr "${LR:-1e-3}" --warmup "${WARMUP:-200}" --dropout 0
          --threads "${THREADS:-4}" --eval-every "${EVAL_EVERY:-500}" --log-every "${LOG_EVERY:-50}"
          --checkpoint-seconds 60)
    if [ "$grow" != none ]; then args+=(--grow-from "$grow"); fi
    if [ -n "${INIT_FROM:-}" ]; then args+=(--init-from "$INIT_FROM"); fi
    python3 -m lantern_studio train ar "${args[@]}" "${@:3}"
    for f in gpt.safetensors metrics.json identities.json log.txt; do cp "$out/run/$f" "$out/"; done
    ls -l "$out"
    ;;
  *)
    echo "usage: train_v3_gpu.sh pack RUN_DIR [train ar flags] | train OUT_DIR [train ar flags]" >&2
    exit 2
    ;;
esac
