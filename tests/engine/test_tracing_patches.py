"""The first Generate beside a background compile (issue: "module is not installed as a submodule").

torch.fx patches ``nn.Module.__call__`` for the whole process while it traces; an eager decode in
another thread walked into the patch. ``engine/tracing_patches.py`` confines the patches to the
tracing thread. Each variant runs in a fresh process (the confinement is process-wide and permanent),
first as today's code ran (it must fail: the test can tell), then with the confinement."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def _race(*flags: str, rounds: int = 8, seconds: float = 2.0) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "support.tracing_race", "--rounds", str(rounds),
                          "--loop-seconds", str(seconds), *flags],
                         capture_output=True, text=True, timeout=600, env=env, cwd=TESTS)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_unconfined_tracing_breaks_a_decode_in_another_thread():
    """The mutant (today's code): every decode inside a held trace window fails with FX's NameError."""
    got = _race(rounds=4, seconds=1.0)
    assert not got["confined"]
    assert got["rounds"]["failed"] == got["rounds"]["decodes"] == 4
    assert "not installed as a submodule" in got["rounds"]["first_error"]
    assert got["loop"]["failed"] > 0


def test_confined_tracing_leaves_other_threads_decoding_and_still_traces():
    got = _race("--confine", rounds=8, seconds=2.0)
    assert got["confined"]
    assert got["rounds"] == {"decodes": 8, "failed": 0, "first_error": None, "graph_ok": True}
    loop = got["loop"]
    assert loop["failed"] == 0 and loop["graph_ok"], loop["first_error"]
    assert loop["decodes"] >= 5 and loop["traces"] >= 5  # both threads really ran side by side


@pytest.mark.slow
def test_confined_tracing_holds_over_a_long_loop():
    """The stress run quoted in the notes: back-to-back decodes beside traces for a minute."""
    got = _race("--confine", rounds=50, seconds=60.0)
    assert got["rounds"]["failed"] == 0 and got["loop"]["failed"] == 0, got
