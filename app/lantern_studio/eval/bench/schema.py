"""What a bench report holds, and the error for bad bench input.

The fields of a method's row and of its per-prompt rows are listed once here:
the runner and the summary fill them, the writers and the tests read them.
"""

from __future__ import annotations

SCHEMA = "lantern-studio-bench/2"

#: Every field a method's entry in the report has (values may be null).
METHOD_FIELDS = (
    "name", "label", "family", "drafter", "k", "delta", "lam", "bound", "draft_length", "precision", "reference",
    "settings",
    "images", "seconds_median", "seconds_mean", "decode_seconds_median",
    "speedup_median", "speedup_q25", "speedup_q75", "speedup_min", "speedup_max",
    "decode_speedup_median",
    "tokens_per_image", "target_forwards_per_image", "drafter_forwards_per_image",
    "mean_accepted_length", "acceptance_rate", "relaxed_share", "drafter_cost_share", "tokens_per_second",
    "rounds_per_image", "forward_ms_per_round", "overhead_ms_per_round",
    "prompt_fidelity", "fidelity_interval", "fidelity_n", "fidelity_delta", "frechet_distance",
    "identity_top1", "identity_top5",
    "seed_distance", "seeds_differ", "seed_pairs",
    "tv_budget_per_image", "step_tv_mean", "step_tv_max",
    "compiled", "compiled_share", "compile_seconds", "compiled_note",
    "per_prompt",
)
#: Fields of each ``per_prompt`` row.
PER_PROMPT_FIELDS = ("prompt_index", "prompt", "seed", "seconds", "decode_seconds", "speedup", "tokens",
                     "target_forwards", "drafter_forwards", "drafted", "accepted", "accepted_relaxed",
                     "mean_accepted_length", "drafter_seconds", "identity_rank", "fidelity")
#: Columns of the CSV (one row per method).
CSV_FIELDS = tuple(f for f in METHOD_FIELDS if f not in ("settings", "per_prompt"))


class BenchError(ValueError):
    """Bad bench input: the message names the option and what is allowed."""
