"""The timed run: every method decodes every prompt, interleaved (A, B, C, A, B, C),
after one untimed warm-up each; the report is built from the samples."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ...reports import reference_of
from .methods import Method, vanilla_methods
from .quality import Quality
from .sample import Sample, generate_one
from .schema import SCHEMA, BenchError
from .summary import pick_default, summarise


def run_bench(pipe, prompts: Sequence[str], methods: Sequence[Method], seed: int = 0, *,
              subgroups: Optional[Sequence[Optional[str]]] = None, quality: Optional[Quality] = None,
              identities: Optional[Sequence] = None,
              warmup: bool = True, on_progress: Optional[Callable[[str], None]] = None,
              precision: Optional[str] = None, measure_tv: bool = False) -> dict:
    """Run every method on every prompt, interleaved; → the report dict (see
    :data:`METHOD_FIELDS`). Prompt i uses seed ``seed + i`` for every method.
    Images are returned under the private key ``_images`` ({method: [image…]}).

    A method runs on ``pipe`` cast to its ``precision`` (a copy; ``pipe`` should be
    the most precise one, fp32), or to ``precision`` (default: ``pipe``'s own) when
    it names none. The reference is the vanilla method with the lowest median time.
    ``measure_tv``: every decode measures each step's TV from the target exactly.
    """
    methods = list(methods)
    if measure_tv:
        methods = [replace(m, measure_tv=True) for m in methods]
    if not any(m.family == "vanilla" for m in methods):
        methods = vanilla_methods((pipe.precision,)) + methods
    methods = [m for m in methods if m.family == "vanilla"] + [m for m in methods if m.family != "vanilla"]
    default_precision = precision or pipe.precision
    variants: dict[tuple, Any] = {}
    tick = on_progress or (lambda _msg: None)

    def pipe_for(m: Method):
        prec = m.precision or default_precision
        key = (prec, m.compiled)
        if key not in variants:
            if m.compiled:  # its own copy of the target, compiled for every width its methods verify
                widths = {1} | {(x.draft_length or pipe.defaults.draft_length) + 1
                                for x in methods if x.compiled and x.drafter != "none"}
                variants[key] = pipe_for(replace(m, compiled=False)).with_compiled_steps(sorted(widths), tick)
            else:
                variants[key] = pipe.with_precision(prec)
        return variants[key]

    prompts = list(prompts)
    if not prompts:
        raise BenchError("no prompts to run")
    seeds = [int(seed) + i for i in range(len(prompts))]
    order: list[dict] = []
    samples: dict[str, list[Sample]] = {m.name: [] for m in methods}
    load_start = _loadavg()
    t_start = time.perf_counter()

    if warmup:  # untimed: caches, neighbour tables, allocator, lazy imports
        for m in methods:
            generate_one(pipe_for(m), m, prompts[0], seeds[0], 0)
            order.append({"phase": "warmup", "prompt_index": 0, "seed": seeds[0], "method": m.name})
            tick(f"warm-up {m.name}")
    for i, (prompt, s) in enumerate(zip(prompts, seeds)):
        for m in methods:
            sample = generate_one(pipe_for(m), m, prompt, s, i)
            samples[m.name].append(sample)
            order.append({"phase": "timed", "prompt_index": i, "seed": s, "method": m.name})
            tick(f"prompt {i + 1}/{len(prompts)} {m.name}")

    # The reference: vanilla at its fastest precision on this machine, in this run.
    ref = min((m for m in methods if m.family == "vanilla"),
              key=lambda m: float(np.median([x.seconds for x in samples[m.name]])))
    vanilla = samples[ref.name]
    results = [summarise(m, samples[m.name], vanilla, quality, subgroups, identities) for m in methods]
    for m, r in zip(methods, results):
        r["precision"] = m.precision or default_precision
        r["reference"] = m is ref
        r["draft_length"] = (r.get("settings") or {}).get("draft_length")
        r["compiled"] = m.compiled
        # with compiled_share (whether the compiled path was actually used): what compiling it cost, and why
        # it failed when it did
        graphs = pipe_for(m).compiled if m.compiled else None
        r["compile_seconds"] = graphs.compile_seconds if graphs is not None else None
        r["compiled_note"] = graphs.note if graphs is not None else None
    v_fid = reference_of(results)["prompt_fidelity"]
    for r in results:
        r["fidelity_delta"] = (r["prompt_fidelity"] - v_fid) if (r["prompt_fidelity"] is not None and v_fid is not None) else None
    report = {
        "schema": SCHEMA,
        "reference": ref.name,
        "prompts": [{"index": i, "prompt": p, "seed": s, "subgroup": (subgroups[i] if subgroups else None),
                     **({"identities": identities[i]} if identities else {})}
                    for i, (p, s) in enumerate(zip(prompts, seeds))],
        "order": order,
        "methods": results,
        "total_seconds": time.perf_counter() - t_start,
        "load_average": {"start": load_start, "end": _loadavg()},
        "quality": quality.describe() if quality is not None else Quality(notes=["no quality provider"]).describe(),
    }
    report["default_pick"] = pick_default(results, images=len(prompts))
    report["_images"] = {m.name: [s.image for s in samples[m.name]] for m in methods}
    return report


def _loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None
