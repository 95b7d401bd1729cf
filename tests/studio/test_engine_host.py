"""The engine host (studio/engine_host.py) driven with no QApplication, on a tiny random model: a load says
what it does and what it loaded, a job decodes the same tokens as the pipeline itself, its frames end with
the final one, a cancel from another thread ends it with None, bad input raises, and a failed load loses
nothing the next load needs."""

from __future__ import annotations

import dataclasses
import random
import threading
import time

import numpy as np
import pytest

from lantern_studio.engine.checkpoints import CheckpointError
from lantern_studio.engine.settings import SettingsError
from lantern_studio.models import load_pipeline
from lantern_studio.models.tiny import build_tiny_model_dir
from lantern_studio.studio.compiled_steps import EAGER_STEPS
from lantern_studio.studio.engine_host import EngineHost
from lantern_studio.studio.jobs import UNFILLED, Job, JobResult, ModelInfo

PROMPT = "a red square"
WARM_UP = ["loading weights…", "loading text encoder…", "preparing neighbour table…", "warming up the decoder…"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return str(build_tiny_model_dir(tmp_path_factory.mktemp("models") / "tiny"))


@pytest.fixture(scope="module")
def defaults(tiny):
    return load_pipeline(tiny).defaults


class Heard:
    """What a host said, in order: ("status", message), ("ready", info), ("steps", spec, steps, doing)."""

    def __init__(self):
        self.said: list = []

    def status(self, message):
        self.said.append(("status", message))

    def ready(self, info):
        self.said.append(("ready", info))

    def steps(self, spec, steps, doing):
        self.said.append(("steps", spec, steps, doing))

    def of(self, kind) -> list:
        return [s[1:] if len(s) > 2 else s[1] for s in self.said if s[0] == kind]


def host_for(tiny, heard=None) -> EngineHost:
    heard = heard or Heard()
    host = EngineHost(heard.steps)
    host.max_fps = 1e6  # a frame at every step
    host.load(tiny, heard.status, heard.ready)
    return host


def whole(result: JobResult, grid: int) -> bool:
    return (result.image.shape[:2] == (64, 64) and result.tokens.shape == (grid * grid,)
            and not (result.decisions == UNFILLED).any())


def test_a_load_says_what_it_does_then_ready_then_how_steps_run_and_a_second_load_reuses_it(tiny):
    heard = Heard()
    host = EngineHost(heard.steps)
    info = host.load(tiny, heard.status, heard.ready)
    assert isinstance(info, ModelInfo) and info.spec == tiny and info.name == "tiny-t2i" and info.grid == 8
    assert info.steps == EAGER_STEPS and not host.compiled and host.holds(tiny)
    assert heard.of("status") == WARM_UP
    kinds = [s[0] for s in heard.said]
    assert kinds == ["status"] * len(WARM_UP) + ["ready", "steps"]  # ready before the steps line
    assert heard.of("ready") == [info] and heard.of("steps") == [(tiny, EAGER_STEPS, "")]
    pipe = host.pipeline
    heard.said.clear()
    assert host.load(tiny, heard.status, heard.ready) == info
    assert heard.said == [] and host.pipeline is pipe  # reused, silently


def test_without_warm_up_a_load_only_says_it_loads_weights(tiny):
    heard = Heard()
    host = EngineHost()
    host.warm = False
    host.load(tiny, heard.status)
    assert heard.of("status") == ["loading weights…"]


def test_a_job_decodes_the_pipelines_own_tokens_and_its_frames_end_with_the_final_one(tiny, defaults):
    host = host_for(tiny)
    settings = dataclasses.replace(defaults, seed=11)
    frames: list = []
    job = Job(PROMPT, settings, model=tiny)
    result = host.run(job, frames.append)
    expected = load_pipeline(tiny).generate(PROMPT, settings)
    assert isinstance(result, JobResult) and result.job is job
    np.testing.assert_array_equal(result.tokens, expected.tokens.reshape(-1))
    np.testing.assert_array_equal(result.image, expected.image)
    assert whole(result, 8) and result.model_name == "tiny-t2i" and result.warm_seconds is None
    assert len(frames) >= 2 and {f.job_id for f in frames} == {job.id}
    assert [f.final for f in frames] == [False] * (len(frames) - 1) + [True]
    assert frames[-1].n_fixed == frames[-1].total == 64
    np.testing.assert_array_equal(frames[-1].image, result.image)
    assert [f.n_fixed for f in frames] == sorted(f.n_fixed for f in frames)
    assert sorted(result.recording.order) == list(range(64)) and result.recording.fixed[-1] == 64


def test_a_warmed_job_decodes_the_same_tokens_and_says_how_long_its_warm_up_took(tiny, defaults):
    host = host_for(tiny)
    settings = dataclasses.replace(defaults, seed=5, drafter="none")
    cold = host.run(Job(PROMPT, settings, model=tiny))
    warmed = host.run(Job(PROMPT, settings, model=tiny, warm=True))
    np.testing.assert_array_equal(warmed.tokens, cold.tokens)
    assert warmed.warm_seconds is not None and warmed.warm_seconds > 0


def test_few_frames_when_max_fps_is_low_but_the_final_one_always(tiny, defaults):
    host = host_for(tiny)
    host.max_fps = 1e-3  # one partial frame per 1000 s: the first step's
    frames: list = []
    host.run(Job(PROMPT, dataclasses.replace(defaults, drafter="none"), model=tiny), frames.append)
    assert [f.final for f in frames] == [False, True]


def test_a_cancel_from_another_thread_after_the_first_frame_returns_none(tiny, defaults):
    host = host_for(tiny)
    job = Job(PROMPT, dataclasses.replace(defaults, drafter="none"), model=tiny)  # 64 steps: room to stop
    first = threading.Event()
    frames: list = []

    def on_frame(f):
        frames.append(f)
        if not first.is_set():
            first.set()
            assert job.cancel_event.wait(10)  # hold the decode until the other thread has cancelled

    canceller = threading.Thread(target=lambda: (first.wait(10), job.cancel()))
    canceller.start()
    assert host.run(job, on_frame) is None
    canceller.join()
    assert frames and frames[0].n_fixed < 64 and all(f.n_fixed < 64 for f in frames)
    # the host decodes the next job whole
    assert whole(host.run(Job(PROMPT, defaults, model=tiny)), 8)


def test_a_job_cancelled_before_it_runs_returns_none_without_frames(tiny, defaults):
    host = host_for(tiny)
    job = Job(PROMPT, defaults, model=tiny)
    job.cancel()
    frames: list = []
    assert host.run(job, frames.append) is None and frames == []


def test_a_bad_setting_raises_settings_error_and_the_next_job_runs(tiny, defaults):
    host = host_for(tiny)
    frames: list = []
    with pytest.raises(SettingsError, match="temperature"):
        host.run(Job(PROMPT, dataclasses.replace(defaults, temperature=-1.0), model=tiny), frames.append)
    assert frames == []
    assert whole(host.run(Job(PROMPT, defaults, model=tiny)), 8)


def test_a_failed_load_raises_leaves_nothing_loaded_and_the_next_load_works(tiny, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.json").write_text("{ not json")
    host = host_for(tiny)
    with pytest.raises(CheckpointError, match="model.json: unreadable"):
        host.load(str(broken))
    assert host.pipeline is None and not host.holds(tiny) and not host.holds(str(broken))
    heard = Heard()
    info = host.load(tiny, heard.status, heard.ready)
    assert info.spec == tiny and heard.of("status") == WARM_UP and heard.of("ready") == [info]
    assert host.holds(tiny)


def test_a_failure_after_the_weights_loaded_leaves_nothing_half_loaded(tiny):
    host = EngineHost()

    def refuse(info):
        raise RuntimeError("the listener broke")

    with pytest.raises(RuntimeError, match="the listener broke"):
        host.load(tiny, on_ready=refuse)
    assert host.pipeline is None and not host.holds(tiny)
    heard = Heard()
    host.load(tiny, heard.status, heard.ready)  # loaded again, not reused
    assert heard.of("status") == WARM_UP and host.holds(tiny)


def test_a_job_on_a_model_that_fails_to_load_raises_and_the_next_job_runs(tiny, defaults, tmp_path):
    host = host_for(tiny)
    with pytest.raises(CheckpointError, match="not a model folder"):
        host.run(Job(PROMPT, defaults, model=str(tmp_path / "no such model")))
    assert host.pipeline is None
    assert whole(host.run(Job(PROMPT, defaults, model=tiny)), 8)


def test_compiled_steps_off_says_eager_and_nothing_to_adopt(tiny):
    heard = Heard()
    host = host_for(tiny, heard)
    heard.said.clear()
    host.set_compiled(False)
    assert heard.said == [("steps", tiny, EAGER_STEPS, "")]
    assert host.adopt_compiled() is False and not host.steps.compiling
    host.stop_compiling()  # nothing running: nothing happens


def test_stress_a_cancel_at_a_random_moment_ends_a_job_whole_or_with_none_never_raising(tiny, defaults):
    host = host_for(tiny)
    rng = random.Random(1234)
    t = time.perf_counter()
    host.run(Job(PROMPT, dataclasses.replace(defaults, drafter="none"), model=tiny))
    span = 1.5 * (time.perf_counter() - t)  # cancels from the start to past the end of a vanilla decode
    cancelled = 0
    for i in range(30):
        job = Job(PROMPT, dataclasses.replace(defaults, seed=i, drafter=rng.choice(["none", "jacobi"])),
                  model=tiny)
        frames: list = []
        canceller = threading.Timer(rng.uniform(0.0, span), job.cancel)
        canceller.start()
        result = host.run(job, frames.append)  # never raises
        canceller.join()
        finals = [k for k, f in enumerate(frames) if f.final]
        if result is None:
            cancelled += 1
            assert job.cancel_requested and finals in ([], [len(frames) - 1])
            assert all(f.n_fixed < f.total for f in frames)
        else:
            assert whole(result, 8) and finals == [len(frames) - 1] and frames[-1].n_fixed == 64
            np.testing.assert_array_equal(frames[-1].image, result.image)
    print(f"{cancelled} of 30 cancelled")


def test_the_model_folders_lantern_profile_is_read_once_at_each_load(tmp_path, monkeypatch):
    """info() carries the folder's measured ladder (or the one line naming what is wrong with it), read when the
    model loads: asking info() again reads nothing (the window asks it on every compile step), a damaged file
    written while the model is loaded waits for the next load."""
    import json

    from lantern_studio.models import lantern_profile
    from lantern_studio.studio import engine_host

    folder = build_tiny_model_dir(tmp_path / "tiny")
    lantern_profile.write_profile(folder, {
        "schema": "lantern-studio-profile/1", "measured": "2026-12-03", "images": 4,
        "sampling": {"temperature": 0.5, "top_k": 10, "top_p": 1.0},
        "ladders": {"delta": {"fixed": {"k": 64}, "vanilla_fidelity": 0.5, "break_drop": 0.1, "breaks_at": None,
                              "rungs": [{"delta": 0.0, "tokens_per_forward": 2.0, "relaxed_share": 0.0,
                                         "fidelity": 0.5, "fidelity_change": 0.0}]}}})
    reads = []
    real = engine_host.read_profile
    monkeypatch.setattr(engine_host, "read_profile", lambda f: reads.append(f) or real(f))
    host = EngineHost()
    host.warm = False
    info = host.load(str(folder))
    assert info.profile is not None and info.profile.measured == "2026-12-03" and info.profile_problem == ""
    for _ in range(5):
        assert host.info().profile == info.profile
    assert len(reads) == 1
    (folder / "lantern_profile.json").write_text(json.dumps({"schema": "x"}))
    assert host.info().profile == info.profile  # the loaded model's, until it loads again
    host.pipeline = None  # the next load reads the folder again
    again = host.load(str(folder))
    assert again.profile is None and again.profile_problem.startswith("lantern_profile.json: ")
    assert "\n" not in again.profile_problem and len(reads) == 2
