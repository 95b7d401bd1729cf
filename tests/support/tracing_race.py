"""Eager decodes of a tiny pipeline while torch.fx traces in another thread (tests/engine/test_tracing_patches.py).

Run as a script so each variant starts in a process whose torch was never patched:
``python -m support.tracing_race [--confine] [--rounds N] [--loop-seconds S]`` prints one JSON line:
``rounds``: decodes each started while a trace was held open inside its window (deterministic);
``loop``: decodes run back to back beside traces in a loop for ``S`` seconds (the race as it happens);
each with how many failed and the first error; ``graph_ok``: the traces still recorded the modules they called.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path

import torch

from lantern_studio.engine.tracing_patches import confine_tracing_patches
from lantern_studio.models import load_pipeline
from lantern_studio.models.tiny import build_tiny_model_dir


class Held(torch.nn.Module):
    """A module whose forward, while being traced, waits for ``release`` (the patch window stays open)."""

    def __init__(self, inside: threading.Event | None = None, release: threading.Event | None = None,
                 pause: float = 0.0):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.inside, self.release, self.pause = inside, release, pause

    def forward(self, x):
        if self.inside is not None:
            self.inside.set()
            self.release.wait(30)
        if self.pause:
            time.sleep(self.pause)
        return self.lin(x).relu()


def _graph_ok(gm) -> bool:
    return any(n.op == "call_module" and n.target == "lin" for n in gm.graph.nodes)


def _decode(pipe, seed: int):
    try:
        pipe.generate("a red heart", pipe.defaults.with_(seed=seed))
        return None
    except Exception as e:  # noqa: BLE001 - counted and reported
        return f"{type(e).__name__}: {e}"


def held_rounds(pipe, rounds: int) -> dict:
    failed, first, graphs = 0, None, []
    for r in range(rounds):
        inside, release = threading.Event(), threading.Event()
        tracer = threading.Thread(target=lambda: graphs.append(torch.fx.symbolic_trace(Held(inside, release))))
        tracer.start()
        assert inside.wait(30)
        err = _decode(pipe, r)  # FX's patches are in place for the whole of this decode
        release.set()
        tracer.join(30)
        failed += err is not None
        first = first or err
    return {"decodes": rounds, "failed": failed, "first_error": first, "graph_ok": all(map(_graph_ok, graphs))}


def looped(pipe, seconds: float) -> dict:
    stop, traces, graphs = threading.Event(), [0], []

    def trace_forever():
        m = Held(pause=0.002)
        while not stop.is_set():
            graphs.append(_graph_ok(torch.fx.symbolic_trace(m)))
            traces[0] += 1

    t = threading.Thread(target=trace_forever, daemon=True)
    t.start()
    n = failed = 0
    first = None
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        err = _decode(pipe, n)
        n += 1
        failed += err is not None
        first = first or err
    stop.set()
    t.join(30)
    return {"decodes": n, "failed": failed, "first_error": first, "traces": traces[0], "graph_ok": all(graphs)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--confine", action="store_true")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--loop-seconds", type=float, default=3.0)
    a = p.parse_args()
    torch.set_num_threads(1)
    confined = confine_tracing_patches() if a.confine else False
    pipe = load_pipeline(str(build_tiny_model_dir(Path(tempfile.mkdtemp()) / "tiny")))
    print(json.dumps({"confined": confined, "rounds": held_rounds(pipe, a.rounds), "loop": looped(pipe, a.loop_seconds)}))


if __name__ == "__main__":
    main()
