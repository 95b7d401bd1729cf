"""One reader for untrusted generation records: the JSON the studio embeds in its PNGs (and keeps in
its history), read back from files anyone may have put there.

Everything is bounded before it is parsed: the PNG is read chunk by chunk (its pixels are never
decoded, so a 20000×20000 header costs nothing), its size and its width × height are checked from
the header, the record is at most :data:`MAX_RECORD_BYTES` (compressed text is inflated only that
far), the JSON parser refuses nesting deeper than :data:`MAX_DEPTH` and numbers longer than
:data:`MAX_NUMBER_CHARS`, and every field is checked for its type and range — the settings by the
engine's own validation. Any failure is one :class:`RecordError` naming the file and what was wrong.
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from pathlib import Path
from typing import Any, Optional

from .engine.settings import GenerationSettings, SettingsError

JSON_KEY = "lantern-studio"  # the iTXt keyword of the record (export.py writes it)
MAX_FILE_BYTES = 64 * 2**20  # a studio PNG is a few kB to a few MB (×8 export of 256 px)
MAX_PIXELS = 4096 * 4096  # width × height from the header (the largest export is 2048 × 2048)
MAX_RECORD_BYTES = 2**20
MAX_PROMPT_CHARS = 2000
MAX_DEPTH = 32
MAX_NUMBER_CHARS = 40
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class RecordError(ValueError):
    """A file or record that is not a usable studio record; the message names the file and why."""


def _bad(where, what: str) -> RecordError:
    return RecordError(f"{where}: {what}")


# --------------------------------------------------------------------------- PNG text


def png_text(path, key: str = JSON_KEY) -> Optional[str]:
    """The text of the tEXt / zTXt / iTXt chunk ``key`` of a PNG, or None when it has none;
    RecordError for a file that is not a PNG within the limits."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise _bad(path, f"{size} bytes, more than a studio image ({MAX_FILE_BYTES // 2**20} MiB)")
        with open(path, "rb") as f:
            if f.read(8) != PNG_SIGNATURE:
                raise _bad(path, "not a PNG file")
            first = True
            while True:
                head = f.read(8)
                if len(head) < 8:
                    return None
                length, kind = struct.unpack(">I4s", head)
                if first:
                    if kind != b"IHDR" or length != 13:
                        raise _bad(path, "not a PNG file (no IHDR header)")
                    w, h = struct.unpack(">II", f.read(8))
                    if w * h > MAX_PIXELS or w == 0 or h == 0:
                        raise _bad(path, f"{w}×{h} pixels is not a studio image (at most {MAX_PIXELS} pixels)")
                    f.seek(length - 8 + 4, 1)
                    first = False
                    continue
                if kind == b"IEND":
                    return None
                if kind in (b"tEXt", b"zTXt", b"iTXt") and length <= MAX_RECORD_BYTES + 4096:
                    text = _chunk_text(kind, f.read(length), key, path)
                    f.seek(4, 1)
                    if text is not None:
                        return text
                else:
                    f.seek(length + 4, 1)
    except OSError as e:
        raise _bad(path, f"unreadable ({e.strerror or e})") from None


def _inflate(data: bytes, path) -> bytes:
    d = zlib.decompressobj()
    try:
        out = d.decompress(data, MAX_RECORD_BYTES + 1)
    except zlib.error as e:
        raise _bad(path, f"a compressed text chunk is damaged ({e})") from None
    if len(out) > MAX_RECORD_BYTES:
        raise _bad(path, f"the record is larger than {MAX_RECORD_BYTES // 2**10} kB")
    return out


def _chunk_text(kind: bytes, data: bytes, key: str, path) -> Optional[str]:
    name, _, rest = data.partition(b"\x00")
    if name.decode("latin-1") != key:
        return None
    if kind == b"tEXt":
        raw = rest
    elif kind == b"zTXt":
        raw = _inflate(rest[1:], path)
    else:  # iTXt: compression flag, method, language\0, translated keyword\0, text
        if len(rest) < 2:
            raise _bad(path, "a damaged text chunk")
        compressed, body = rest[0], rest[2:]
        _lang, _, body = body.partition(b"\x00")
        _translated, _, body = body.partition(b"\x00")
        raw = _inflate(body, path) if compressed else body
    if len(raw) > MAX_RECORD_BYTES:
        raise _bad(path, f"the record is larger than {MAX_RECORD_BYTES // 2**10} kB")
    try:
        return raw.decode("utf-8" if kind == b"iTXt" else "latin-1")
    except UnicodeDecodeError:
        raise _bad(path, "the record is not UTF-8 text") from None


# --------------------------------------------------------------------------- JSON, bounded


def _depth(text: str) -> int:
    """The deepest nesting of [ and { outside strings (no recursion, one pass)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _number(kind):
    def parse(text: str):
        if len(text) > MAX_NUMBER_CHARS:
            raise ValueError(f"a number of {len(text)} characters")
        return kind(text)
    return parse


def bounded_json(text: str, where) -> Any:
    """json.loads with the limits above; RecordError naming ``where``."""
    if len(text) > MAX_RECORD_BYTES:
        raise _bad(where, f"larger than {MAX_RECORD_BYTES // 2**10} kB")
    if _depth(text) > MAX_DEPTH:
        raise _bad(where, f"nests deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, parse_int=_number(int), parse_float=_number(float),
                          parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"{c} is not a number")))
    except (ValueError, RecursionError) as e:
        raise _bad(where, f"not valid JSON ({str(e)[:120]})") from None


# --------------------------------------------------------------------------- the schema


def _text(v, what: str, where, limit: int) -> str:
    if not isinstance(v, str):
        raise _bad(where, f'"{what}" must be text, got {type(v).__name__}')
    if len(v) > limit:
        raise _bad(where, f'"{what}" is {len(v)} characters (at most {limit})')
    if any("\ud800" <= ch <= "\udfff" for ch in v):
        raise _bad(where, f'"{what}" holds a lone surrogate (not valid Unicode text)')
    return v


def _finite_numbers(d: dict, what: str, where) -> None:
    for k, v in d.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise _bad(where, f'"{what}.{k}" is not a finite number')
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 2**63:
            raise _bad(where, f'"{what}.{k}" does not fit in 64 bits')


def check_record(rec: Any, where) -> dict:
    """The record if every field the studio reads has the right type and range, else RecordError."""
    if not isinstance(rec, dict):
        raise _bad(where, f"the record must be a JSON object, got {type(rec).__name__}")
    _text(rec.get("prompt", ""), "prompt", where, MAX_PROMPT_CHARS)
    for key in ("model", "understood_as"):
        if key in rec and rec[key] is not None:
            _text(rec[key], key, where, MAX_PROMPT_CHARS)
    settings = rec.get("settings", {})
    if not isinstance(settings, dict):
        raise _bad(where, f'"settings" must be an object, got {type(settings).__name__}')
    try:
        GenerationSettings.from_dict(settings).validate()
    except (SettingsError, TypeError, ValueError, OverflowError) as e:
        raise _bad(where, f'"settings" {e}') from None
    stats = rec.get("stats", {})
    if not isinstance(stats, dict):
        raise _bad(where, f'"stats" must be an object, got {type(stats).__name__}')
    _finite_numbers(stats, "stats", where)
    size = rec.get("size")
    if size is not None and not (isinstance(size, list) and len(size) == 2
                                 and all(isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 2**16
                                         for x in size)):
        raise _bad(where, '"size" must be [height, width] in pixels')
    if not isinstance(rec.get("compiled", False), bool):  # absent in records made before it was kept
        raise _bad(where, f'"compiled" must be true or false, got {type(rec["compiled"]).__name__}')
    replay = rec.get("replay")
    if replay is not None and not isinstance(replay, dict):
        raise _bad(where, f'"replay" must be an object, got {type(replay).__name__}')
    return rec


def read_record(path) -> Optional[dict]:
    """A studio PNG's record, checked; None for a PNG without one; RecordError otherwise."""
    text = png_text(path)
    return None if text is None else check_record(bounded_json(text, path), path)


def parse_record(text: str, where) -> dict:
    """A record kept as JSON text elsewhere (a history row), under the same limits and checks."""
    return check_record(bounded_json(text, where), where)
