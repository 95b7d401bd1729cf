"""How many CPU threads torch uses while decoding.

Decoding a small model is a stream of tiny matrix products: more threads add
synchronisation, and on a busy machine torch's spinning pool threads stall
everything (measured here: 2 threads on a loaded 2-core machine were ~10×
slower than 1). Default: one core fewer than the machine has (at least 1),
leaving one to the GUI; ``LANTERN_STUDIO_THREADS`` or ``OMP_NUM_THREADS``
override it.
"""

from __future__ import annotations

import os

import torch


def configure_decode_threads() -> int:
    want = os.environ.get("LANTERN_STUDIO_THREADS")
    if want:
        torch.set_num_threads(max(1, int(want)))
    elif not os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(max(1, (os.cpu_count() or 2) - 1))
    return torch.get_num_threads()
