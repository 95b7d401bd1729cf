"""The studio session (studio/session.py) driven as plain Python: no QApplication, no thread, no model.

A scripted link stands in for the engine: it records what the session asks (``load``, ``run``) and the
tests answer as the engine would, through the session's ``on_*`` methods.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from lantern_studio.engine.decode_paths import SPECULATIVE, VANILLA, PathTiming
from lantern_studio.engine.settings import GenerationSettings
from lantern_studio.studio import events as ev
from lantern_studio.studio.compiled_steps import COMPILED_STEPS, EAGER_STEPS, measured_steps
from lantern_studio.studio.jobs import Frame, JobResult, ModelInfo
from lantern_studio.studio.preferences import StudioPreferences
from lantern_studio.studio.session import StudioSession

LANTERN = GenerationSettings(drafter="jacobi", k=3, delta=0.2, seed=7)


class Link:
    def __init__(self):
        self.loads, self.runs, self.compiled = [], [], []

    def load(self, spec):
        self.loads.append(spec)

    def run(self, job):
        self.runs.append(job)

    def set_compiled(self, on):
        self.compiled.append(on)


class Store(dict):
    def get_json(self, key, default=None):
        return self.get(key, default)

    def set_json(self, key, value):
        self[key] = value


def info(name="m", vocab=64) -> ModelInfo:
    return ModelInfo(None, name, 4, vocab, ("jacobi",), GenerationSettings(), False)


def result(job, wall=0.5) -> JobResult:
    stats = {"wall_seconds": wall, "target_forwards": 5, "mean_accepted_length": 16 / 6, "tokens": 16,
             "tokens_per_second": 16 / wall}
    image = np.full((8, 8, 3), 200, np.uint8)
    return JobResult(job, image, np.zeros(16, np.int64), np.zeros(16, np.uint8), stats, "", "m")


@pytest.fixture
def session(tmp_path):
    s = StudioSession(tmp_path / "data", Link())
    s.on_model_ready(info())
    heard = []
    for kind in (ev.JobQueued, ev.JobStarted, ev.FrameShown, ev.JobFinished, ev.JobStopped, ev.Notice, ev.Said,
                 ev.QueueChanged, ev.ModelReady, ev.StepsChanged):
        s.events.subscribe(kind, heard.append)
    s.heard = heard
    return s


def of(session, kind):
    return [e for e in session.heard if isinstance(e, kind)]


def test_the_session_imports_no_qt():
    code = ("import sys, lantern_studio.studio.session\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'qasync', 'pyqtgraph')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_generate_hands_one_job_to_the_engine_and_a_finished_one_gets_its_history_row(session):
    job = session.generate("  a red heart ", LANTERN)
    assert session.link.runs == [job] and job.prompt == "a red heart" and session.queue.current is job
    session.on_job_started(job)
    session.on_frame(Frame(job.id, np.zeros((8, 8, 3), np.uint8), np.zeros(16, np.uint8), 4, 16, 2, 0, 0.1))
    session.on_job_finished(result(job))
    done = of(session, ev.JobFinished)
    assert len(done) == 1 and done[0].entry is not None and done[0].entry.prompt == "a red heart"
    assert session.history.count() == 1 and session.queue.current is None
    assert [type(e) for e in session.heard if not isinstance(e, (ev.QueueChanged, ev.Said))] == \
        [ev.JobQueued, ev.JobStarted, ev.FrameShown, ev.JobFinished]


def test_a_subscriber_reads_a_session_already_up_to_date(session):
    """When a view hears JobFinished, the queue has handed out the next job and the history row exists."""
    seen = []
    session.events.subscribe(ev.JobFinished, lambda e: seen.append(
        (session.queue.current, session.history.count(), session.display.finished.job_id)))
    first = session.generate("a cat", LANTERN)
    second = session.generate("a dog", LANTERN)
    assert session.link.runs == [first]  # one runs, the other waits
    session.on_job_started(first)
    session.on_job_finished(result(first))
    assert seen == [(second, 1, first.id)] and session.link.runs == [first, second]


@pytest.mark.parametrize("prompt,settings,said", [
    ("", LANTERN, "prompt"),
    ("a cat", GenerationSettings(drafter="jacobi", k=10_000, delta=0.2), "k"),
    ("a cat", GenerationSettings(drafter="jacobi", k=3, delta=1.5), "delta"),
])
def test_bad_input_is_one_notice_and_nothing_is_queued(session, prompt, settings, said):
    assert session.generate(prompt, settings) is None
    notices = of(session, ev.Notice)
    assert len(notices) == 1 and notices[0].topic == "input" and said in notices[0].text
    assert session.link.runs == [] and "\n" not in notices[0].text


def test_compare_needs_a_drafter_and_runs_both_halves_on_one_path(session):
    assert session.compare("a cat", GenerationSettings(drafter="none")) is None
    assert of(session, ev.Notice)[0].level == "info"
    vanilla, lantern = session.compare("a cat", LANTERN)
    assert vanilla.settings.drafter == "none" and lantern.settings == LANTERN
    assert vanilla.steps == lantern.steps == "eager" and vanilla.group == lantern.group


def test_variations_never_reuse_a_seed_of_the_session(session):
    session.generate("a cat", LANTERN.with_(seed=1))
    draws = iter([1, 1, 2, 3, 4, 5])
    v = session.variations("a cat", LANTERN, lambda: next(draws))
    assert [c.seed for c in v.cells] == [2, 3, 4, 5]
    assert "seeds 2, 3, 4, 5" in of(session, ev.Said)[-1].text


def test_esc_stops_a_whole_request_and_says_so(session):
    v = session.variations("a cat", LANTERN, iter(range(100, 200)).__next__)
    running = v.cells[0].job
    session.on_job_started(running)
    stopped = session.cancel()
    assert [j.id for j in stopped] == [c.job.id for c in v.cells]
    assert of(session, ev.Said)[-1].text == f"Cancelling the Generate ×4 (#{running.id} and the 3 waiting)…"
    session.on_job_cancelled(running)
    assert of(session, ev.JobStopped)[-1].how == "Cancelled" and session.link.runs == [running]


def test_a_full_disk_loses_the_history_row_not_the_picture(session, monkeypatch):
    job = session.generate("a cat", LANTERN)
    session.on_job_started(job)

    def full(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(session.history, "add", full)
    session.on_job_finished(result(job))
    done = of(session, ev.JobFinished)[-1]
    assert done.entry is None and session.display.finished.job_id == job.id  # Save still has it
    notice = of(session, ev.Notice)[-1]
    assert notice.topic == "history" and "No space left" in notice.text


def test_a_failed_job_while_no_model_offers_the_way_out(session):
    job = session.generate("a cat", LANTERN)
    session.on_model_failed(None, "weights damaged")
    session.on_job_failed(job, "weights damaged")
    last = of(session, ev.Notice)[-1]
    assert last.topic == "model" and last.actions == ("model",) and f"#{job.id} failed" in last.text


def test_steps_changed_says_when_steps_became_compiled_and_compare_follows(session):
    session.on_steps_changed(None, COMPILED_STEPS, "")
    changed = of(session, ev.StepsChanged)[-1]
    assert changed.compiled_now and session.decode_path() == "compiled"
    vanilla, _ = session.compare("a cat", LANTERN)
    assert vanilla.steps == "compiled"
    session.on_steps_changed("another model", EAGER_STEPS, "")  # not the loaded model's: ignored
    assert session.decode_path() == "compiled"


def test_a_measured_verdict_reaches_the_status_line_whole_and_a_compare_stays_eager(session):
    """Measured timings pick a path per family: the event's info carries the verdict, whose short words end
    the status line; one path for a Compare keeps its ratios about the method (eager), and nothing says
    "compiled" as if every job were."""
    timings = {VANILLA: PathTiming(eager=1.15, compiled=1.07), SPECULATIVE: PathTiming(eager=0.78, compiled=0.85)}
    session.on_steps_changed(None, measured_steps(timings), "")
    changed = of(session, ev.StepsChanged)[-1]
    assert changed.info.steps.measured and not changed.compiled_now and session.decode_path() == "eager"
    short = "compiled for vanilla AR, eager for speculative (LANTERN) (faster here)"
    assert changed.info.status_text().endswith(f" · {short}")
    assert "0.85 s compiled vs 0.78 s eager" in changed.info.status_tip()
    vanilla, lantern = session.compare("a cat", LANTERN)
    assert vanilla.steps == lantern.steps == "eager"


def test_export_writes_the_finished_picture_or_says_there_is_none(session, tmp_path):
    assert session.save_png(tmp_path / "x.png", 2, "nearest") is None
    assert "Nothing to export" in of(session, ev.Notice)[-1].text
    job = session.generate("a red heart", LANTERN)
    session.on_job_started(job)
    session.on_job_finished(result(job))
    out = session.save_png(tmp_path / "heart.png", 2, "nearest")
    assert out is not None and out.stat().st_size > 0 and session.suggested_name() == "a-red-heart.png"


# ------------------------------------------------------------------------------------------- preferences


def test_preferences_round_trip_through_one_store():
    p = StudioPreferences(settings=LANTERN.to_dict(), prompt="a cat", prompt_history=["a cat", "a dog"],
                          model="/models/x", recent_models=["/models/x"], zoom=4, overlay=True, export_factor=2,
                          export_method="lanczos", new_seed_each_generate=False, compiled_decoding=False)
    store = Store()
    p.write(store)
    assert StudioPreferences.read(store) == p


@pytest.mark.parametrize("key,value", [
    ("prompt", 42), ("prompt_history", "not a list"), ("zoom", 3.7), ("zoom", True), ("overlay", "yes"),
    ("export_factor", 1000), ("export_method", "bicubic"), ("compiled_decoding", 0), ("model", ["x"]),
    ("settings", "garbage"),
])
def test_a_damaged_preference_costs_that_value_its_default(key, value):
    store = Store()
    StudioPreferences(prompt="kept").write(store)
    store[key] = value
    p = StudioPreferences.read(store)
    default = StudioPreferences.defaults()
    assert getattr(p, key) == getattr(default, key)
    if key != "prompt":
        assert p.prompt == "kept"  # the others stay


def test_recent_models_are_newest_first_and_bounded():
    p = StudioPreferences()
    for i in range(12):
        p.remember_model(f"/m/{i}")
    p.remember_model("/m/5")
    assert p.recent_models[:2] == ["/m/5", "/m/11"] and len(p.recent_models) == 8


def test_a_damaged_lantern_profile_is_one_warning_and_the_model_still_loads(session):
    from dataclasses import replace

    session.heard.clear()
    problem = "lantern_profile.json: schema must be 'lantern-studio-profile/1', got 'x'; the sliders' measured notes are left out"
    session.on_model_ready(replace(info(name="other"), profile_problem=problem))
    notes = of(session, ev.Notice)
    assert [(n.text, n.level, n.topic) for n in notes] == [(problem, "warning", "model")]
    assert session.model_info.name == "other" and of(session, ev.ModelReady)
    session.heard.clear()
    session.on_model_ready(replace(info(name="other"), profile_problem=problem))  # the same model again: said once
    assert not of(session, ev.Notice)


def test_a_switch_to_another_model_hands_the_controls_its_defaults_and_a_reload_does_not(tmp_path):
    """The first model and a reload of the same one keep the settings the person chose (or saved); moving to
    another model marks them as not chosen while its ModelReady is heard, so the view applies its defaults —
    even after a failed load in between — and they count as chosen again afterwards."""
    s = StudioSession(tmp_path / "data", Link())
    seen = []
    s.events.subscribe(ev.ModelReady, lambda e: seen.append((e.info.name, e.switched, s.settings_chosen)))
    s.on_model_ready(info("a"))
    s.settings_chosen = True  # the person moved a slider
    s.on_model_ready(info("a"))  # the same model again (a reload after a compile setting changed)
    s.on_model_failed("/nowhere", "no model.json")
    s.on_model_ready(info("b"))
    assert seen == [("a", False, False), ("a", False, True), ("b", True, False)]
    assert s.settings_chosen
