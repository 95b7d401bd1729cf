"""What Janus-Pro costs on this machine, without downloading it: a model of Janus-Pro-1B's (or -7B's)
exact shapes with random weights, timed through the same target the studio decodes with
(models/janus.py): the prefill, one vanilla step, a verify of each window width, tokens per second and
memory. Random weights time the arithmetic exactly; they say nothing of acceptance (that needs the real
weights: ``lantern-studio bench --model janus-pro-1b`` once downloaded).

    python -m lantern_studio.eval.janus_cost --size 1B --precision auto --widths 1 2 4 8 12 16 25
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time

import torch

from ..engine.precision import name as precision_name, resolve
from ..models.janus import JanusImageModel, JanusTarget, janus_pro_config, memory_needed


def build(size: str, dtype: torch.dtype, device="cpu"):
    """A random JanusImageModel of Janus-Pro-``size``'s shapes in ``dtype`` (the understanding encoder dropped)."""
    from transformers import JanusForConditionalGeneration  # noqa: PLC0415 - seconds to import

    config = janus_pro_config(size)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            hf = JanusForConditionalGeneration(config).eval()
    finally:
        torch.set_default_dtype(prev)
    text = config.text_config
    return JanusImageModel(hf, text.bos_token_id, text.pad_token_id, 100016), config


def timed(fn, repeats: int, sync=lambda: None) -> float:
    """The median seconds of ``repeats`` calls (after one untimed call)."""
    fn()
    out = []
    for _ in range(repeats):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def measure(size="1B", precision="auto", widths=(1, 2, 4, 8, 12, 16, 25), context=288, prompt_tokens=32,
            repeats=3, cfg=True, device="cpu") -> dict:
    dtype = resolve(precision, device)
    cuda = torch.device(device).type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    t = time.perf_counter()
    model, config = build(size, dtype, device)
    build_s = time.perf_counter() - t
    rows = 2 if cfg else 1
    target = JanusTarget(model)
    g = torch.Generator().manual_seed(0)
    cond = torch.randint(0, 100000, (rows, prompt_tokens), generator=g).to(device)
    image = torch.randint(0, model.vocab_size, (rows, context + max(widths)), generator=g).to(device)
    result = {"size": size, "device": str(device), "precision": precision_name(dtype), "threads": torch.get_num_threads(), "rows": rows,
              "prompt_tokens": prompt_tokens, "context": context, "build_seconds": round(build_s, 1),
              "parameters_kept": sum(p.numel() for p in model.parameters()),
              "estimate_bytes": memory_needed(config, dtype, prompt_tokens)}
    with torch.inference_mode():
        def prefill():
            target.start_sequence(rows)
            target.prefill(cond)

        result["prefill_s"] = timed(prefill, 1, sync)
        target.step(image[:, :context], 0)  # `context` image tokens in the cache: mid-picture
        steps = {}
        for w in widths:  # each verify cuts the cache back to `context` first, as after a rejection
            steps[w] = timed(lambda w=w: target.step(image[:, context:context + w], context), repeats, sync)
        result["step_s"] = {str(w): round(s, 4) for w, s in steps.items()}
        one = steps.get(1)
        if one is not None:
            result["vanilla_tokens_per_s"] = round(1.0 / one, 2)
            result["vanilla_picture_s"] = round(model.block_size * one + result["prefill_s"], 1)
            result["verify_cost_vs_step"] = {str(w): round(s / one, 2) for w, s in steps.items()}
    result["max_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if cuda:
        result["max_gpu_bytes"] = torch.cuda.max_memory_allocated()
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m lantern_studio.eval.janus_cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="1B", choices=("1B", "7B"))
    p.add_argument("--precision", default="auto", help="auto (bf16 where native), fp32 or bf16")
    p.add_argument("--widths", type=int, nargs="+", default=[1, 2, 4, 8, 12, 16, 25])
    p.add_argument("--context", type=int, default=288, help="image tokens already in the cache (default: half)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--no-cfg", action="store_true", help="one row instead of guidance's two")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    r = measure(a.size, a.precision, tuple(a.widths), a.context, repeats=a.repeats, cfg=not a.no_cfg, device=a.device)
    if a.json:
        print(json.dumps(r, indent=1))
        return 0
    gb = 1e9
    print(f"Janus-Pro-{r['size']} shapes, random weights, {r['device']}, {r['precision']}, {r['threads']} threads, {r['rows']} rows "
          f"(CFG), prompt {r['prompt_tokens']} tokens, {r['context']} image tokens in the cache")
    print(f"  parameters kept {r['parameters_kept'] / 1e9:.2f} B; built in {r['build_seconds']} s; "
          f"peak RSS {r['max_rss_bytes'] / gb:.1f} GB (estimate to load and run: "
          f"{sum(r['estimate_bytes'].values()) / gb:.1f} GB)")
    print(f"  prefill {r['prefill_s'] * 1000:.0f} ms")
    for w, s in r["step_s"].items():
        ratio = r.get("verify_cost_vs_step", {}).get(w)
        print(f"  window {int(w):>3}: {s * 1000:8.1f} ms" + (f"  ({ratio:.2f}× a step)" if ratio else ""))
    if "vanilla_tokens_per_s" in r:
        print(f"  vanilla: {r['vanilla_tokens_per_s']} tokens/s → ≈{r['vanilla_picture_s']} s for 576 tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
