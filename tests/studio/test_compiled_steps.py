"""How jobs decode, as the status line says it (studio/compiled_steps.py's StepsVerdict, read by ModelInfo):
the verdict reaches the views in fields, and the words are the ones the studio has always shown."""

from __future__ import annotations

import pytest

from lantern_studio.engine.compiled import NO_COMPILER
from lantern_studio.engine.decode_paths import SPECULATIVE, VANILLA, PathTiming
from lantern_studio.engine.settings import GenerationSettings
from lantern_studio.studio.compiled_steps import (
    COMPILED, COMPILED_STEPS, EAGER, EAGER_STEPS, StepsVerdict, failed_steps, measured_steps,
)
from lantern_studio.studio.jobs import ModelInfo

LINE = "tiny · 8×8 tokens · V=64 · fp32"
TIP = ("Weights and KV caches in fp32 (chosen automatically: bf16 where the CPU or GPU multiplies bf16 natively, "
       "fp32 elsewhere); decode steps {path} (Generate ▸ Compiled decoding)")
FASTER, SLOWER = PathTiming(eager=1.15, compiled=1.07), PathTiming(eager=0.78, compiled=0.85)


def info(steps: StepsVerdict) -> ModelInfo:
    return ModelInfo(None, "tiny", 8, 64, ("jacobi",), GenerationSettings(), False, steps=steps)


@pytest.mark.parametrize("steps,line,path,why", [
    (EAGER_STEPS, "", "eager", ""),
    (COMPILED_STEPS, " · compiled", "compiled", ""),
    (failed_steps(NO_COMPILER), " · eager (compiling failed)", "eager", NO_COMPILER),
])
def test_eager_compiled_and_a_failed_compile_say_what_they_always_said(steps, line, path, why):
    i = info(steps)
    assert i.status_text() == LINE + line
    assert i.status_text("compiling decode steps… 1/2") == LINE + " · compiling decode steps… 1/2"
    assert i.status_tip() == TIP.format(path=path) + (f"\n{why}" if why else "")


@pytest.mark.parametrize("vanilla,speculative,path,short", [
    (FASTER, FASTER, COMPILED, "compiled (faster here)"),
    (SLOWER, SLOWER, EAGER, "eager (faster here than compiled)"),
    (FASTER, SLOWER, COMPILED, "compiled for vanilla AR, eager for speculative (LANTERN) (faster here)"),
    (SLOWER, FASTER, COMPILED, "compiled for speculative (LANTERN), eager for vanilla AR (faster here)"),
])
def test_a_measured_verdict_puts_its_short_words_on_the_line_and_its_timings_in_the_tooltip(
        vanilla, speculative, path, short):
    timings = {VANILLA: vanilla, SPECULATIVE: speculative}
    steps = measured_steps(timings)
    why = (f"measured: {short} — measured on this machine: vanilla AR: {vanilla.faster} ({vanilla.words()}); "
           f"speculative (LANTERN): {speculative.faster} ({speculative.words()})")
    assert steps == StepsVerdict(path, short, why, measured=True)
    i = info(steps)
    assert i.status_text() == f"{LINE} · {short}"
    assert i.status_tip() == TIP.format(path="compiled where faster") + f"\n{why}"


def test_the_line_reads_the_verdicts_fields_and_parses_nothing():
    """A verdict whose words hold the old string's separators: the line shows its ``short`` whole, whatever
    ``why`` says (a reader splitting "measured: SHORT — WHY" apart again would show something else)."""
    steps = StepsVerdict(COMPILED, "compiled — for now", "measured: eager — not this", measured=True)
    i = info(steps)
    assert i.status_text() == f"{LINE} · compiled — for now"
    assert i.status_tip().endswith("decode steps compiled where faster (Generate ▸ Compiled decoding)\n"
                                   "measured: eager — not this")
    plain = info(StepsVerdict(EAGER, "", "measured: compiled — no"))  # not measured: the line says nothing
    assert plain.status_text() == LINE and "compiled where faster" not in plain.status_tip()
