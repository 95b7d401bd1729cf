"""Which decode path is faster on this machine, for each family of decoding methods.

Compiled decode steps are not faster everywhere: on a 2-core AVX2-only CPU the shipped default
decoded in 0.78 s eagerly and 0.85 s compiled, while vanilla gained from compiling (1.15 → 1.07 s).
So after a background compile, :func:`time_paths` times a few decodes of each family on the
compiled twin, eager and compiled interleaved (the twin's graphs switched off and on, in the
compiling thread, before any job sees the twin), and a family uses the compiled steps only
where they measured faster. :class:`PathVerdicts` keeps those timings in the compile cache
folder under the machine's and the model's fingerprint, so a relaunch on the same machine
knows at once (and skips a compile no family would use).

Families: ``vanilla`` (one token a forward: ``drafter == "none"``) and ``speculative`` (draft →
verify: Jacobi, EAGLE, heads; exact or relaxed). Their steps have different widths, and a verify's
cost grows with its width differently compiled and eager.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import torch

from . import decode_method
from .files import atomic_write

VANILLA, SPECULATIVE = "vanilla", "speculative"
FAMILIES = (VANILLA, SPECULATIVE)
FAMILY_WORDS = {VANILLA: "vanilla AR", SPECULATIVE: "speculative (LANTERN)"}
#: compiled is chosen only when it is at least this much faster (timings of a few decodes are noisy)
MARGIN = 0.05
VERDICTS_FILE = "decode-paths.json"


def family_of(settings) -> str:
    """The step shapes a job's settings decode with: vanilla's one token a step, or a speculative method's
    verify widths (every method but vanilla: DecodeMethod says which a job is)."""
    return VANILLA if decode_method.DecodeMethod.of(settings).family == decode_method.VANILLA else SPECULATIVE


@dataclass(frozen=True)
class PathTiming:
    """Median seconds per decode (tokens only) of one family, eager and compiled."""

    eager: float
    compiled: float
    busy: bool = False  # the machine had more runnable work than cores while this was timed

    @property
    def faster(self) -> str:
        return "compiled" if self.compiled < self.eager * (1 - MARGIN) else "eager"

    def words(self) -> str:
        return f"{self.compiled:.2f} s compiled vs {self.eager:.2f} s eager" + (", machine busy" if self.busy else "")


def family_settings(defaults) -> dict:
    """The settings each family is timed at: the model's defaults as vanilla, and as Jacobi drafting at the
    default window (a verify as wide as any drafter's). Jacobi holds no state of its own: a learned drafter's
    modules (and their caches) are shared with the eager pipeline a job may be decoding with meanwhile."""
    return {VANILLA: defaults.with_(drafter="none"), SPECULATIVE: defaults.with_(drafter="jacobi")}


def time_paths(pipe, rounds: int = 3, should_stop: Optional[Callable[[], bool]] = None) -> Optional[dict]:
    """{family: PathTiming} from ``rounds`` decodes of each family on each path, interleaved, on ``pipe``
    (a compiled twin no job uses yet: its graphs are switched off for the eager decodes); each path's
    fastest decode counts (other work on the machine only ever slows one down). None when stopped, or
    when the model cannot decode its warm-up prompt (nothing to time). ``busy``: the load average
    exceeded the cores while timing (the caller then keeps the verdict for this launch only)."""
    runner = pipe.runner
    graphs = runner.graphs
    load = [_load()]
    if graphs is None:
        return None
    prompt = pipe.conditioner.warm_prompt
    seconds: dict = {f: {"eager": [], "compiled": []} for f in FAMILIES}
    try:
        for r in range(rounds):
            for family, settings in family_settings(pipe.defaults).items():
                for path in (("eager", "compiled") if r % 2 == 0 else ("compiled", "eager")):
                    if should_stop is not None and should_stop():
                        return None
                    runner.graphs = graphs if path == "compiled" else None
                    try:
                        run, _c = pipe.decoding(prompt, settings.with_(seed=r))
                    except ValueError:  # the conditioner refused the warm-up prompt: nothing to time
                        return None
                    t = time.perf_counter()
                    for _ev in run:
                        pass
                    seconds[family][path].append(time.perf_counter() - t)
                    load.append(_load())
    finally:
        runner.graphs = graphs
    busy = max(load) > (os.cpu_count() or 1)
    return {f: PathTiming(min(s["eager"]), min(s["compiled"]), busy) for f, s in seconds.items()}


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):  # no load average on this system
        return 0.0


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def fingerprint(pipe) -> str:
    """What a verdict holds for: the CPU (or GPU), its cores and torch's threads, torch's version, and the
    model (name, size, precision, device, default window and guidance)."""
    dev = pipe.device
    hw = torch.cuda.get_device_name(dev) if dev.type == "cuda" else _cpu_name()
    d = pipe.defaults
    params = sum(p.numel() for p in pipe.gpt.parameters())
    return " | ".join([hw, f"{os.cpu_count()} cores", f"{torch.get_num_threads()} threads", f"torch {torch.__version__}",
                       pipe.name, f"{params} params", pipe.precision, dev.type,
                       f"window {d.draft_length}", f"cfg {d.cfg_scale:g}"])


class PathVerdicts:
    """Timings per fingerprint, kept as JSON in ``folder`` (the compile cache). A file that cannot be read
    or written is treated as empty (the next compile measures again); it never stops a decode."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / VERDICTS_FILE

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> Optional[dict]:
        """{family: PathTiming} measured for ``key``, or None."""
        entry = self._read().get(key)
        if not isinstance(entry, dict):
            return None
        try:
            out = {f: PathTiming(float(entry[f]["eager"]), float(entry[f]["compiled"]),
                                 bool(entry[f].get("busy", False))) for f in FAMILIES}
        except (KeyError, TypeError, ValueError):
            return None
        return out if all(t.eager > 0 and t.compiled > 0 for t in out.values()) else None

    def put(self, key: str, timings: dict) -> None:
        data = self._read()
        data[key] = {f: {"eager": t.eager, "compiled": t.compiled, "busy": t.busy} for f, t in timings.items()}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(data, indent=1)
            atomic_write(self.path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
        except OSError:
            pass


def describe(timings: dict) -> str:
    """One sentence for the status line's tooltip: which path each family takes and why."""
    return "; ".join(f"{FAMILY_WORDS[f]}: {t.faster} ({t.words()})" for f, t in timings.items())
