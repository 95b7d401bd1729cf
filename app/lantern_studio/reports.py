"""What a bench report says beyond its rows: the machine it was measured on and
the row its speed-ups are relative to.

Shared by the bench that writes reports (eval/bench/) and the model card that
quotes them (training/ship.py), which is why it sits below both
(docs/architecture.md).
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
from datetime import datetime, timezone
from typing import Optional, Sequence

import numpy as np
import torch

from . import __version__


def machine_info() -> dict:
    """CPU, thread counts, library versions, date and command line of this run."""
    cpu = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu or platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "lantern_studio": __version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": shlex.join(["lantern-studio"] + sys.argv[1:]) if sys.argv else None,
    }


def reference_of(rows: Sequence[dict]) -> Optional[dict]:
    """The report row speed-ups are measured against: the vanilla row marked as the
    reference (the fastest vanilla precision), else the first vanilla row."""
    rows = list(rows)
    return (next((r for r in rows if r.get("reference")), None)
            or next((r for r in rows if r.get("family") == "vanilla"), None)
            or next((r for r in rows if r.get("name") == "vanilla"), None))  # schema-1 reports
