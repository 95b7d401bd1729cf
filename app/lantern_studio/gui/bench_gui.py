"""How responsive the studio is while it decodes (a benchmark, not a test).

Drives the real main window and reports:

* time from opening the window to "ready" (model loaded and warmed up),
* time from Generate to the first painted partial image, and to the finished
  image (the first run is the first image after the window said ready),
* the longest GUI event-loop stall during a generation (a 5 ms QTimer measuring
  the gaps between its ticks),
* cancel latency: from pressing Cancel to the GUI hearing that the job stopped.

    python -m lantern_studio.gui.bench_gui                 # tiny random models, offscreen
    python -m lantern_studio.gui.bench_gui --model FOLDER  # any model folder

History and caches go to a temporary folder unless --keep-data is given.

It lives in the studio package because everything it measures is Qt's: it opens
the real MainWindow, waits in a QEventLoop, counts QTimer ticks and listens for
the canvas's paint signal, and only gui/ may import Qt. The decode itself is
timed by the bench in eval/ (``lantern-studio bench``), which knows no Qt.
tests/gui/test_bench_gui.py runs it once on a tiny model.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QEventLoop, Qt, QTimer


def _wait(cond, timeout: float) -> bool:
    """Run the event loop (without sleeping in the GUI thread) until cond() or timeout."""
    if cond():
        return True
    loop = QEventLoop()
    poll = QTimer()
    poll.setInterval(1)
    poll.timeout.connect(lambda: loop.quit() if cond() else None)
    poll.start()
    QTimer.singleShot(int(timeout * 1000), loop.quit)
    loop.exec()
    poll.stop()
    return bool(cond())


class TickRecorder:
    """A 5 ms precise QTimer; the gaps between ticks are the event loop's stalls."""

    def __init__(self, interval_ms: int = 5):
        self.ticks = []
        self.timer = QTimer()
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def start(self):
        self.ticks = [time.perf_counter()]
        self.timer.start()

    def stop(self) -> list:
        self.timer.stop()
        self.ticks.append(time.perf_counter())
        return [b - a for a, b in zip(self.ticks, self.ticks[1:])]


def _ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"


def timed_runs(w, runs: int, seed0: int = 100) -> dict:
    """Generate → first painted partial image, and the longest tick gap, per run."""
    first_paint, stalls, walls, images = [], [], [], []
    for i in range(runs):
        state = {"job": None, "painted": None}

        def on_paint(state=state):
            job = state["job"]
            if state["painted"] is None and job is not None and w.canvas.frame_job_id == job.id:
                state["painted"] = time.perf_counter()

        w.canvas.view.painted.connect(on_paint)
        w.controls.new_seed.setChecked(False)  # the bench's own seeds
        w.controls.seed.setValue(seed0 + i)
        ticks = TickRecorder()
        ticks.start()
        t0 = time.perf_counter()
        state["job"] = w.generate()
        ok = _wait(lambda: w.last_result is not None and w.last_result.job.id == state["job"].id, 300)
        state["done"] = time.perf_counter()
        _wait(lambda: state["painted"] is not None, 2)
        gaps = ticks.stop()
        w.canvas.view.painted.disconnect(on_paint)
        if not ok:
            raise RuntimeError(f"run {i} did not finish: {w.banner.text()}")
        first_paint.append(state["painted"] - t0)
        images.append(state["done"] - t0)
        stalls.append(max(gaps))
        walls.append(w.last_result.stats["wall_seconds"])
    return {"model": describe(w), "first_paint_s": first_paint, "image_s": images, "stall_max_s": stalls,
            "decode_wall_s": walls}


def cancel_runs(w, runs: int, cancel_after: float = 0.15) -> dict:
    latencies, stopped_at = [], []
    for i in range(runs):
        done = {"t": None}
        seen = {"n": 0}

        def on_cancel(job, done=done):
            done["t"] = time.perf_counter()

        def on_frame(f, seen=seen):
            seen["n"] = f.n_fixed

        w.jobs.answers.job_cancelled.connect(on_cancel)
        w.jobs.answers.frame.connect(on_frame)
        w.controls.new_seed.setChecked(False)  # the bench's own seeds
        w.controls.seed.setValue(200 + i)
        job = w.generate()
        _wait(lambda: seen["n"] > 0, 60)
        t_start = time.perf_counter()
        _wait(lambda: time.perf_counter() - t_start >= cancel_after, cancel_after + 1)
        t0 = time.perf_counter()
        w.cancel()
        _wait(lambda: done["t"] is not None or (w.last_result is not None and w.last_result.job.id == job.id), 60)
        w.jobs.answers.job_cancelled.disconnect(on_cancel)
        w.jobs.answers.frame.disconnect(on_frame)
        if done["t"] is not None:
            latencies.append(done["t"] - t0)
            stopped_at.append(seen["n"])
    return {"model": describe(w), "cancel_latency_s": latencies, "stopped_at_tokens": stopped_at}


def describe(w) -> str:
    i, s = w.model_info, w.controls.settings()
    how = "vanilla" if s.drafter == "none" else f"{s.drafter}, k={s.k}, δ={s.delta:g}"
    return f"{i.name}, {i.grid}×{i.grid} tokens, {how}"


def bench(window, runs: int, slow_window=None) -> dict:
    ticks = TickRecorder()  # baseline: the longest gap with nothing running (the machine's own noise)
    ticks.start()
    _wait(lambda: False, 1.0)
    out = {"idle_stall_max_s": max(ticks.stop()), "runs": [timed_runs(window, runs)]}
    if slow_window is not None:
        out["runs"].append(timed_runs(slow_window, runs, seed0=300))
    out["cancel"] = cancel_runs(slow_window or window, runs)
    return out


def _summ(xs) -> str:
    if not xs:
        return "n/a"
    return f"median {_ms(statistics.median(xs))}, max {_ms(max(xs))} (first run {_ms(xs[0])})"


def report(r: dict) -> str:
    lines = [f"window opened → ready (model loaded, text encoder and decoder warmed): {_ms(r['ready_s'])}"] \
        if r.get("ready_s") is not None else []
    lines += [f"idle baseline: longest 5 ms-timer gap over 1 s with nothing running: {_ms(r['idle_stall_max_s'])}"]
    for run in r["runs"]:
        lines += [
            f"[{run['model']}] {len(run['first_paint_s'])} runs",
            f"  decode wall time per image:                 {_summ(run['decode_wall_s'])}",
            f"  Generate → first painted partial image:     {_summ(run['first_paint_s'])}",
            f"  Generate → finished image:                  {_summ(run['image_s'])}",
            f"  longest GUI event-loop stall during a run:  {_summ(run['stall_max_s'])}",
        ]
    c = r["cancel"]
    lines += [f"[{c['model']}] cancel after ~0.15 s (stopped at tokens {c['stopped_at_tokens']})",
              f"  cancel latency (Cancel → GUI told it stopped): {_summ(c['cancel_latency_s'])}"]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench_gui", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="model folder (default: build tiny random models)")
    ap.add_argument("--slow-model", default=None, help="model folder for the cancel test (default: --model, or a "
                    "16×16-token tiny model decoded vanilla)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--drafter", default=None, help="override the drafter for the timed runs (none/jacobi/eagle)")
    ap.add_argument("--keep-data", action="store_true", help="use the real app data / cache folders")
    ap.add_argument("--json", action="store_true", help="print the raw numbers as JSON too")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="lantern-bench-gui-"))
    if not args.keep_data:
        os.environ["LANTERN_STUDIO_DATA"] = str(tmp / "data")
        os.environ["LANTERN_STUDIO_CACHE"] = str(tmp / "cache")
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    from ..models.tiny import build_tiny_model_dir  # noqa: PLC0415 - torch-backed, only when this bench runs
    from .app import create_main_window  # noqa: PLC0415 - after the Qt platform is chosen above

    model = args.model or str(build_tiny_model_dir(tmp / "tiny"))
    slow = args.slow_model or (args.model if args.model else str(build_tiny_model_dir(tmp / "slow", grid=16, layers=4,
                                                                                        dim=128)))
    windows = []
    try:
        t_open = time.perf_counter()
        w = create_main_window(model)
        windows.append(w)
        w.show()
        if not _wait(lambda: w.model_info is not None, 300):
            print(f"model did not load: {w.banner.text()}", file=sys.stderr)
            return 1
        ready_s = time.perf_counter() - t_open
        w.controls.set_prompt("a red heart")
        if args.drafter:
            w.controls.drafter.setCurrentIndex(w.controls.drafter.findData(args.drafter))
        sw = None
        if slow != model:
            sw = create_main_window(slow)
            windows.append(sw)
            sw.show()
            if not _wait(lambda: sw.model_info is not None, 300):
                print(f"slow model did not load: {sw.banner.text()}", file=sys.stderr)
                return 1
            sw.controls.set_prompt("a red heart")
            sw.controls.drafter.setCurrentIndex(sw.controls.drafter.findData("none"))
        result = bench(w, args.runs, sw)
        result["ready_s"] = ready_s
    finally:
        for win in windows:
            win.close()
    print(report(result))
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
