"""The window's model views: the status line's model part, the window title, the controls' model facts and
the chart's quality axis, drawn from the studio session's model events."""

from __future__ import annotations

from ..studio.events import ModelFailed, ModelLoading, ModelReady, StepsChanged
from ..studio.jobs import ModelInfo
from ..studio.tradeoff import MAX_HISTORY_POINTS


class ModelViews:
    def __init__(self, window):
        self.w = window
        ev = window.session.events
        ev.subscribe(ModelLoading, self._model_loading)
        ev.subscribe(ModelReady, self._model_ready)
        ev.subscribe(StepsChanged, self._steps_changed)
        ev.subscribe(ModelFailed, self._model_failed)

    def _model_loading(self, e: ModelLoading) -> None:
        w = self.w
        w.status_model.setText(e.message)
        w.statusBar().queue("Loading model…" if e.started else f"Getting the model ready: {e.message}")
        if not e.started and w.session.queue.busy:
            w.canvas.set_status(f"Generate is queued: waiting for the model ({e.message})")

    def _model_ready(self, e: ModelReady) -> None:
        w = self.w
        info = e.info
        w.controls.set_model_info(info)
        if not w.session.settings_chosen:
            keep = {"seed": w.controls.seed.value()} if e.switched else {}
            w.controls.set_settings(info.defaults.with_(**keep))
            if e.switched:
                d = info.defaults
                w.statusBar().queue(f"Settings: {info.name}'s defaults (temperature {d.temperature:g}, top-k {d.top_k}, "
                                    f"CFG {d.cfg_scale:g}, k {d.k}, δ {d.delta:g}); the seed is kept", 8000)
        w.chart.set_quality_available(info.has_score)
        if e.changed:  # this model's runs: the saved ones (a restart keeps the chart), then this session's
            w.chart.clear()
            runs = w.session.chart_history(info.name, MAX_HISTORY_POINTS)
            w.chart.add_records((r.record, f"history: “{r.prompt}” (seed {r.settings.get('seed')})") for r in runs)
        w.setWindowTitle(info.name)  # Qt appends the application's display name: "emoji-64 — Lantern Studio"
        self.show_steps(info, "")
        w.statusBar().queue(f"Model {info.name} ready", 4000)
        if w.banner_topic == "model":
            w.banner.dismiss()

    def show_steps(self, info: ModelInfo, doing: str) -> None:
        w = self.w
        w.status_model.setText(info.status_text(doing))
        w.status_model.setToolTip(f"{info.status_text(doing)}\n{info.status_tip()}")

    def _steps_changed(self, e: StepsChanged) -> None:
        """The background compile moved on or ended: the status line says how steps run now."""
        w = self.w
        self.show_steps(e.info, e.doing)
        if e.compiled_now:
            w.statusBar().queue("Decode steps compiled: the next Generate runs them", 6000)

    def _model_failed(self, e: ModelFailed) -> None:
        w = self.w
        w.controls.set_model_failed(e.message)
        w.status_model.setText("no model")

