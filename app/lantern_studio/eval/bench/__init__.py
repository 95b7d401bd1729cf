"""`lantern-studio bench`: speed and quality of decoding methods side by side.

Every method decodes the same prompts with the same seeds and the model's own
sampling defaults (temperature, top-k/top-p, CFG); only the decoding changes:

* ``vanilla-<precision>`` — one target forward per token, in fp32 and (where the
  machine runs it natively) bf16; the faster of them is the reference;
* ``exact-<drafter>`` — speculative decoding with exact acceptance (δ = 0),
  for each drafter the model has (``eagle`` if it ships a head, ``jacobi``);
* ``lantern-<drafter>-k<K>-d<δ>`` — LANTERN relaxed acceptance over a grid of
  (k, δ), with the learned drafter (Jacobi if the model has none);
* ``lantern++-<drafter>-k<K>-l<λ>`` — the multiplicative LANTERN++ bound;
* ``lantern-jacobi-k<K>-d<δ>`` — training-free Jacobi drafts with relaxation ((k, δ) in JACOBI_RELAXED);
* ``step-jacobi-k<K>-d<δ>[-ad]`` — the step bound (each step's output within δ of the target in total
  variation, sampled drafts included) at the same (k, δ); ``-ad``: entropy-adaptive δ.

``--measure-tv`` makes every decode measure, exactly, the TV between each step's
output distribution and the target's (``step_tv_mean`` / ``step_tv_max``; costly
for LANTERN with sampled drafts, so timings then include it).

Runs are interleaved: after one untimed warm-up generation per method, every
method decodes prompt 1 in turn, then prompt 2, … (A, B, C, A, B, C), so slow
drift of the machine (other jobs, thermal state) hits all methods alike. The
order actually run is recorded in the report (``order``).

Speed-up is the median over prompts of (reference seconds / method seconds) for
the same prompt and seed, the reference being vanilla at its fastest precision on
this machine (the vanilla row with the lowest median time), end to end (conditioning + decoding + VQ decode),
with its interquartile range and min/max. Quality, when the model folder ships
a recogniser (``recogniser.safetensors``): prompt fidelity (recogniser top-5
contains the prompt's subgroup), its change against vanilla, and a Fréchet
distance between recogniser features of the method's images and real held-out
images. Without a recogniser the quality fields are null and the rest still runs.

The numbers are ratios from one run on one machine: the report carries the
machine (CPU, torch, threads, load average) and the command line.

The package, one concept a module: ``methods`` (the grid and ``--methods``),
``prompts`` (which prompts), ``quality`` (recogniser and real features),
``sample`` (one timed generation), ``runner`` (the interleaved run),
``summary`` (statistics and the default pick), ``report`` (table, CSV, JSON,
pictures), ``schema`` (the report's fields), ``cli`` (the command). Every name
is importable from here.
"""

from ...reports import machine_info, reference_of
from .cli import DEFAULT_N, EXIT_BAD_INPUT, QUICK_PROMPTS, add_arguments, run
from .methods import (JACOBI_LONG, JACOBI_RELAXED, LANTERN_DELTAS, LANTERN_KS, PLUS_K, PLUS_LAMS, QUICK_LANTERN,
                      STEP_ADAPTIVE, STEP_RELAXED, Method, method_grid, select_methods, vanilla_methods)
from .prompts import FALLBACK_PROMPTS, choose_prompts, read_prompt_set, read_prompts_file
from .quality import Quality, load_quality
from .report import format_table, write_csv, write_json, write_pictures
from .runner import run_bench
from .sample import Sample, generate_one
from .schema import CSV_FIELDS, METHOD_FIELDS, PER_PROMPT_FIELDS, SCHEMA, BenchError
from .summary import pick_default, summarise

__all__ = [
    "CSV_FIELDS", "DEFAULT_N", "EXIT_BAD_INPUT", "FALLBACK_PROMPTS", "JACOBI_LONG", "JACOBI_RELAXED",
    "LANTERN_DELTAS", "LANTERN_KS", "METHOD_FIELDS", "PER_PROMPT_FIELDS", "PLUS_K", "PLUS_LAMS", "QUICK_LANTERN",
    "QUICK_PROMPTS", "SCHEMA", "STEP_ADAPTIVE", "STEP_RELAXED", "BenchError", "Method", "Quality", "Sample",
    "add_arguments", "choose_prompts", "format_table", "generate_one", "load_quality", "machine_info",
    "method_grid", "pick_default", "read_prompt_set", "read_prompts_file", "reference_of", "run", "run_bench",
    "select_methods", "summarise", "vanilla_methods", "write_csv", "write_json", "write_pictures",
]
