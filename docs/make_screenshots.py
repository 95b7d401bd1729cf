"""Take the README screenshots of the real studio window.

    xvfb-run -s "-screen 0 1400x900x24" .venv/bin/python docs/make_screenshots.py MODEL_FOLDER

Writes ``docs/images/screenshot-generating.png`` (mid-generation, decision overlay on,
a second job waiting in the queue), ``docs/images/screenshot-tradeoff.png`` (the
trade-off chart after a Compare and a sweep over δ), ``docs/images/screenshot-replay.png``
(the last image replayed half-way with its overlay, and the Compare pair replayed
side by side on one clock) and ``docs/images/screenshot-models.png`` (the Models dialog). The app runs in this
process and is driven with timers; history and caches go to a temporary folder
unless --keep-data is given. Works on any model folder (use the bundled one
for the published pictures); --throttle slows decoding down so a fast model
can be caught mid-way.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


class slow_steps:
    """Sleep ``seconds`` after every decoding step in the worker thread, until ``undo()`` (the studio has no such
    knob itself: this script wraps the worker's per-step view)."""

    def __init__(self, seconds: float):
        import time

        from lantern_studio.gui import worker

        self._view, self._real = worker._LiveView, worker._LiveView.step
        real = self._real

        def step(view, ev):
            real(view, ev)
            time.sleep(seconds)

        worker._LiveView.step = step

    def undo(self) -> None:
        self._view.step = self._real


def wait(cond, timeout: float) -> bool:
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    poll = QTimer()
    poll.setInterval(5)
    poll.timeout.connect(lambda: loop.quit() if cond() else None)
    poll.start()
    QTimer.singleShot(int(timeout * 1000), loop.quit)
    if not cond():
        loop.exec()
    poll.stop()
    return bool(cond())


def settle(seconds: float = 0.3) -> None:
    wait(lambda: False, seconds)


def run(w, prompt: str, timeout: float = 600):
    w.controls.set_prompt(prompt)
    job = w.generate()
    if job is None:
        raise SystemExit(f"generate refused: {w.banner.text()}")
    if not wait(lambda: w.last_result is not None and w.last_result.job.id == job.id, timeout):
        raise SystemExit(f"generation did not finish: {w.banner.text()}")
    return w.last_result


def grab(w, path: Path) -> None:
    settle(0.4)
    pm = w.grab()
    if not pm.save(str(path)):
        raise SystemExit(f"could not write {path}")
    print(f"wrote {path} ({pm.width()}×{pm.height()})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="model folder (with model.json)")
    ap.add_argument("--out", default=str(HERE / "images"), help="folder for the PNGs (default: docs/images/)")
    ap.add_argument("--prompt", default="a red heart")
    ap.add_argument("--gallery", default="a smiling sun;a green frog;a slice of pizza;a blue butterfly",
                    help="prompts generated first so the history is not empty (';'-separated)")
    ap.add_argument("--deltas", default="0,0.01,0.02,0.05,0.1,0.2,0.4", help="δ sweep for the trade-off chart")
    ap.add_argument("--k", type=int, default=None, help="neighbour count k for the sweep (default: the model's)")
    ap.add_argument("--throttle", type=float, default=0.15,
                    help="seconds added after each step of the mid-generation shot (0 for a slow model)")
    ap.add_argument("--size", default="1400x880", help="window size WxH")
    ap.add_argument("--keep-data", action="store_true", help="use the real app data folder (history)")
    args = ap.parse_args(argv)

    if not args.keep_data:
        tmp = Path(tempfile.mkdtemp(prefix="lantern-shots-"))
        os.environ["LANTERN_STUDIO_DATA"] = str(tmp / "data")
        os.environ.setdefault("LANTERN_STUDIO_CACHE", str(tmp / "cache"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from lantern_studio.gui.app import create_main_window

    w = create_main_window(str(Path(args.model).resolve()))
    w.confirm = lambda title, text: True
    width, height = (int(x) for x in args.size.split("x"))
    w.resize(width, height)
    w.move(0, 0)
    w.show()
    if not wait(lambda: w.model_info is not None, 600):
        print(f"model did not load: {w.banner.text()}", file=sys.stderr)
        return 1
    c = w.controls
    info = w.model_info
    base = info.defaults  # the model's own defaults (drafter, k, δ, draft length), as a new user sees them
    if args.k is not None:
        base = base.with_(k=args.k)
    c.set_settings(base)
    w.canvas.set_zoom("fit")

    for i, p in enumerate(filter(None, (s.strip() for s in args.gallery.split(";")))):
        c.seed.setValue(10 + i)
        run(w, p)

    # 1. mid-generation, overlay on, one more job (the next seed) waiting in the queue
    w.canvas.set_overlay(True)
    throttle = slow_steps(args.throttle)  # the bundled model decodes too fast to catch mid-way otherwise
    total = info.grid ** 2
    c.set_prompt(args.prompt)
    c.seed.setValue(8)
    first = w.generate()
    c.seed.setValue(7)
    w.generate()  # queued behind the first
    c.seed.setValue(8)  # the controls show the running job's settings
    caught = wait(lambda: w.canvas.frame_job_id == first.id and w.canvas.progress.value() >= 0.4 * total, 600)
    if not caught:
        print("warning: did not catch the run mid-way (try a larger --throttle)", file=sys.stderr)
    grab(w, out / "screenshot-generating.png")
    throttle.undo()
    wait(lambda: not w.jobs.busy, 600)

    # 2. the trade-off: a Compare, a δ sweep on the same prompt / seed / sampling, a final Compare
    w.chart.clear()  # only the sweep's points (the throttled run above would be a misleading outlier)
    c.set_prompt(args.prompt)
    c.seed.setValue(7)
    deltas = [float(x) for x in args.deltas.split(",") if x.strip()]
    c.set_settings(c.settings().with_(delta=deltas[len(deltas) // 2]))
    w.compare()
    wait(lambda: not w.jobs.busy, 600)
    for d in deltas:
        c.set_settings(c.settings().with_(delta=d))
        run(w, args.prompt)
    c.set_settings(c.settings().with_(delta=deltas[-2] if len(deltas) > 1 else deltas[-1]))
    w.compare()
    wait(lambda: not w.jobs.busy, 600)
    grab(w, out / "screenshot-tradeoff.png")

    # 3. replay: the last Compare's current run scrubbed half-way, the pair mid-way on the shared clock
    rec = w.replay.recording
    if rec is not None:
        w.replay.show_step(rec.steps // 2)
        panel = w.stats
        t_mid = min(r.recording.duration for r in panel._pair) * 0.5
        from lantern_studio.gui.stats_panel import COMPARE_SLOWMO

        now = {"t": 0.0}
        panel.clock = lambda: now["t"]
        panel.replay_compare()
        panel.replay_timer.stop()
        now["t"] = t_mid * COMPARE_SLOWMO  # the moment half-way through the faster run
        panel._replay_tick()
        grab(w, out / "screenshot-replay.png")

    # 4. the Models dialog (the Hub catalogue; nothing downloaded on this machine)
    d = w.show_models_dialog()
    d.resize(820, 420)
    settle(0.4)
    pm = d.grab()
    pm.save(str(out / "screenshot-models.png"))
    print(f"wrote {out / 'screenshot-models.png'} ({pm.width()}×{pm.height()})")
    d.close()
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
