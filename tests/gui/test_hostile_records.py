"""Hostile PNGs in the places the studio reads: one reader refuses each by name (records.py), none becomes
a history row, and the real studio starts and stays up with all of them in its images folder."""

from __future__ import annotations

import json
import os
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from lantern_studio.export import save_png
from lantern_studio.studio.history_store import HistoryStore
from lantern_studio.records import MAX_DEPTH, RecordError, parse_record, read_record

IMG = np.full((8, 8, 3), 200, np.uint8)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _png(path: Path, text: str | None, width: int = 8, height: int = 8, compress: bool = False) -> Path:
    """A PNG written byte by byte (so headers can lie): an 8×8 grey image, any IHDR size, one iTXt record."""
    raw = b"".join(b"\x00" + bytes([200] * 24) for _ in range(8))
    chunks = [_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))]
    if text is not None:
        body = text.encode("utf-8", "surrogatepass")
        body = zlib.compress(body, 9) if compress else body
        chunks.append(_chunk(b"iTXt", b"lantern-studio\x00" + bytes([int(compress), 0]) + b"\x00\x00" + body))
    chunks += [_chunk(b"IDAT", zlib.compress(raw)), _chunk(b"IEND", b"")]
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"".join(chunks))
    return path


def _rec(**over) -> dict:
    return {"prompt": "red heart", "model": "tiny", "settings": {"seed": 1}, "stats": {"tokens": 16}, **over}


HOSTILE = {
    "deep nesting": ('{"prompt": "x", "a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests deeper"),
    "lone surrogate": (json.dumps(_rec(prompt="\ud800 heart")), "lone surrogate"),
    "bomb header": (json.dumps(_rec()), "pixels"),
    "settings text": (json.dumps(_rec(settings="abc")), '"settings" must be an object'),
    "seed text": (json.dumps(_rec(settings={"seed": "x"})), "seed"),
    "seed infinity": (json.dumps(_rec(settings={"seed": float("inf")})), "not valid JSON"),
    "huge prompt": (json.dumps(_rec(prompt="a" * 50_000_000)), "larger than"),
    "5000 digits": ('{"prompt": "x", "stats": {"tokens": ' + "9" * 5000 + "}}", "not valid JSON"),
    "list record": ("[1, 2, 3]", "must be a JSON object"),
    "stats huge int": (json.dumps(_rec(stats={"tokens": 2**70})), "does not fit in 64 bits"),
    "replay text": (json.dumps(_rec(replay="abc")), '"replay" must be an object'),
}


def _write_hostile(folder: Path) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for i, (name, (text, _why)) in enumerate(HOSTILE.items()):
        big = name == "bomb header"
        out[name] = _png(folder / f"hostile-{i}.png", text, *((20000, 20000) if big else (8, 8)),
                         compress=name == "huge prompt")
    return out


def test_each_hostile_png_is_refused_by_name(tmp_path):
    files = _write_hostile(tmp_path)
    for name, path in files.items():
        with pytest.raises(RecordError, match=HOSTILE[name][1]) as e:
            read_record(path)
        assert str(path) in str(e.value), name
    assert len(tmp_path.joinpath("hostile-6.png").read_bytes()) < 200_000  # 50 MB prompt, compressed


def test_a_studio_png_reads_back_and_a_plain_png_has_no_record(tmp_path):
    rec = _rec(understood_as="red heart · google", size=[8, 8])
    save_png(tmp_path / "ok.png", IMG, rec)
    assert read_record(tmp_path / "ok.png")["understood_as"] == "red heart · google"
    assert read_record(_png(tmp_path / "plain.png", None)) is None
    (tmp_path / "not.png").write_bytes(b"GIF89a....")
    with pytest.raises(RecordError, match="not a PNG"):
        read_record(tmp_path / "not.png")


def test_the_decode_path_is_in_the_record_and_the_parameters_and_old_records_still_read(tmp_path):
    """``compiled`` (which path made the picture) reads back from the PNG and shows in its A1111 parameters;
    a record from before the field existed reads as it did, without the field; a non-boolean is refused."""
    for compiled, word in ((True, "yes"), (False, "no")):
        path = save_png(tmp_path / f"{word}.png", IMG, _rec(compiled=compiled, size=[8, 8]))
        assert read_record(path)["compiled"] is compiled
        with Image.open(path) as img:
            assert f"Compiled: {word}" in img.text["parameters"]
    old = save_png(tmp_path / "old.png", IMG, _rec(size=[8, 8]))
    assert "compiled" not in read_record(old)
    with Image.open(old) as img:
        assert "Compiled:" not in img.text["parameters"]
    with pytest.raises(RecordError, match='"compiled" must be true or false'):
        parse_record(json.dumps(_rec(compiled="yes")), "row 1")


def test_the_history_never_turns_a_hostile_png_into_a_row(tmp_path):
    _write_hostile(tmp_path / "images")
    save_png(tmp_path / "images" / "good.png", IMG, _rec())
    old = time.time() - 3600  # written long ago (a PNG without a row younger than a few seconds is left for now)
    for png in (tmp_path / "images").glob("*.png"):
        os.utime(png, (old, old))
    store = HistoryStore(tmp_path)
    try:
        assert [e.path.name for e in store.entries()] == ["good.png"]
        assert any(f"{len(HOSTILE)} PNG(s)" in n and "left alone" in n for n in store.notices)
    finally:
        store.close()
    # and a second opening leaves them alone again (no row was committed for them)
    store = HistoryStore(tmp_path)
    assert store.count() == 1
    store.close()


def test_hostile_rows_already_in_the_database_are_skipped(tmp_path):
    store = HistoryStore(tmp_path)
    store.add(IMG, _rec())
    bad = [text for name, (text, _why) in HOSTILE.items() if name not in ("bomb header", "huge prompt")]
    for text in bad:
        with store.db:
            store.db.execute("INSERT INTO entries (created, prompt, model, path, record, decisions) "
                             "VALUES (1, 'x', 'tiny', 'x.png', ?, NULL)", (text,))
    assert len(store.entries()) == 1 and store.skipped_rows == len(bad)
    store.close()


# any JSON the parser can take: either a checked record comes back, or RecordError — nothing else escapes
_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                     | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                     max_leaves=20)
_fields = st.fixed_dictionaries({}, optional={"prompt": _json, "settings": st.dictionaries(
    st.sampled_from(["seed", "temperature", "top_k", "cfg_scale", "drafter", "k", "delta", "style", "greedy"]),
    _json, max_size=5), "stats": _json, "size": _json, "replay": _json, "model": _json})


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rec=st.one_of(_fields, _json))
def test_any_json_record_is_checked_or_refused_never_raises_anything_else(rec):
    try:
        out = parse_record(json.dumps(rec), "row")
    except RecordError:
        return
    assert isinstance(out, dict) and isinstance(out.get("prompt", ""), str)


def test_depth_limit_counts_brackets_outside_strings():
    assert parse_record(json.dumps({"prompt": "[" * 500}), "row")["prompt"] == "[" * 500
    with pytest.raises(RecordError, match="nests deeper"):
        parse_record('{"a": ' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}", "row")


def test_the_real_studio_starts_and_stays_up_with_every_hostile_png_in_its_folder(qtbot, tmp_path):
    from lantern_studio.models.tiny import build_tiny_model_dir
    from support.studio import open_window, run_job

    data = Path(os.environ["LANTERN_STUDIO_DATA"])
    _write_hostile(data / "images")
    w = open_window(qtbot, build_tiny_model_dir(tmp_path / "tiny"))
    assert w.store.count() == 0
    _job, result = run_job(qtbot, w, "red heart")  # and it still works
    assert result.image.shape[2] == 3 and w.store.count() == 1


_WRITER = """
import sys, numpy as np
from lantern_studio.studio.history_store import HistoryStore
folder, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = HistoryStore(folder)
for i in range(n):
    img = np.full((8, 8, 3), 0, np.uint8)
    img[0, 0] = (int(who), i % 256, i // 256)  # each image says who wrote it and which it is
    store.add(img, {"prompt": "red heart", "model": "tiny", "settings": {"seed": i}, "stats": {"writer": int(who)}})
store.close()
"""


def test_two_writers_adding_100_rows_each_at_once_lose_nothing(tmp_path):
    """Two studios (or a studio and a script) on one history, the same prompt, at the same time: 200 rows,
    200 distinct PNGs, each holding the image its row says (no name shared, no image overwritten)."""
    import subprocess
    import sys

    from PIL import Image

    HistoryStore(tmp_path).close()  # the database exists before both start
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), str(w), "100"]) for w in (1, 2)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    store = HistoryStore(tmp_path)
    entries = store.entries()
    assert len(entries) == 200 and len({e.path.name for e in entries}) == 200
    for e in entries:
        pixel = np.asarray(Image.open(e.path))[0, 0]
        assert (int(pixel[0]), int(pixel[1]) + 256 * int(pixel[2])) == (e.stats["writer"], e.settings["seed"])
    store.close()


def test_deleting_a_row_keeps_an_image_another_row_still_shows(tmp_path):
    store = HistoryStore(tmp_path)
    a = store.add(IMG, _rec())
    with store.db:  # a second row pointing at the same PNG (as older versions' races left behind)
        store.db.execute("INSERT INTO entries (created, prompt, model, path, record, decisions) "
                         "VALUES (1, 'red heart', 'tiny', ?, ?, NULL)", (a.path.name, json.dumps(_rec())))
    store.delete(a.id)
    assert a.path.exists() and store.count() == 1
    store.delete(store.entries()[0].id)
    assert not a.path.exists() and store.count() == 0
    store.close()


# --------------------------------------------------------------------------- any input, at random

def _fuzz(n):
    return settings(max_examples=n, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


_REPLAY = st.fixed_dictionaries({"format": st.sampled_from([1, 2, "x"]), "total": _json},
                                optional={k: st.one_of(_json, st.lists(st.integers(), max_size=6))
                                          for k in ("fixed", "target", "drafter", "ms", "order")})


def _replay_case(d):
    from lantern_studio.studio.replay import Recording, ReplayError, recording_of

    try:
        r = Recording.from_dict(d)
    except ReplayError:
        r = None
    assert recording_of({"replay": d}) is r or (r is not None and recording_of({"replay": d}) is not None)


@_fuzz(500)
@given(d=st.one_of(_REPLAY, _json))
def test_any_replay_json_loads_or_is_a_replay_error(d):
    _replay_case(d)


_LINE = st.one_of(st.builds(json.dumps, _fields), st.builds(json.dumps, _json), st.text(max_size=40))


def _batch_lines_case(tmp_path_factory, lines):
    from lantern_studio.commands.batch_plan import BatchError, read_prompts

    f = tmp_path_factory.mktemp("lines") / "p.jsonl"
    f.write_text("\n".join(line.replace("\n", " ") for line in lines) + "\n", encoding="utf-8", errors="replace")
    try:
        out = read_prompts(f)
    except BatchError as e:
        assert "\n" not in str(e) and len(str(e)) < 600
        return
    assert all(isinstance(p.prompt, str) and p.prompt for p in out)


@_fuzz(500)
@given(lines=st.lists(_LINE, min_size=1, max_size=4))
def test_any_batch_jsonl_is_read_or_refused_in_one_line(tmp_path_factory, lines):
    _batch_lines_case(tmp_path_factory, lines)


@pytest.mark.slow
@_fuzz(10_000)
@given(rec=st.one_of(_fields, _json), d=st.one_of(_REPLAY, _json), lines=st.lists(_LINE, min_size=1, max_size=3))
def test_ten_thousand_records_replays_and_batch_lines(tmp_path_factory, rec, d, lines):
    try:
        parse_record(json.dumps(rec), "row")
    except RecordError:
        pass
    _replay_case(d)
    _batch_lines_case(tmp_path_factory, lines)


_PEAK = """
import sys
from lantern_studio.records import RecordError, read_record

def peak_kb():  # this process's own high-water mark (ru_maxrss would count the forked parent's pages too)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

before = peak_kb()
try:
    read_record(sys.argv[1])
except RecordError:
    pass
print(before, peak_kb())
"""


@pytest.mark.parametrize("case", ["bomb header", "huge prompt", "deep nesting"])
def test_an_oversize_record_costs_little_memory(tmp_path, case):
    """Measured in a child process: reading the case adds under 50 MB to the interpreter's peak (the issue's
    bar is a 500 MB peak; the 13000×13000 PNG cost 1 GB and the 50 MB prompt 2.7 GB before)."""
    import subprocess
    import sys

    path = _write_hostile(tmp_path)[case]
    out = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, timeout=120)
    before, after = map(int, out.stdout.split())
    assert after < 500 * 1024 and after - before < 50 * 1024, (before, after)  # kB
