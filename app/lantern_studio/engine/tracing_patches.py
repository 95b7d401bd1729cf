"""torch.fx's tracing patches, confined to the thread that traces.

While ``torch.fx`` traces a function (``symbolic_trace``, and the tracers ``torch.compile`` runs:
inductor traces a small helper the first time it lowers a loop, ``make_fx`` traces every graph),
it replaces ``torch.nn.Module.__call__`` and ``__getattr__`` — and chosen functions in module
globals — with its own wrappers for the whole process, and puts the originals back when the trace
ends. A module called from another thread inside that window is routed into the tracer: the plain
``fx.Tracer`` asks where that module sits in the traced root and raises
``NameError: module is not installed as a submodule``. The studio decodes eagerly in its worker
thread while a compile traces in a thread of its own, so the first Generate could fail that way.

:func:`confine_tracing_patches` makes every such patch answer only in the thread that installed it:
any other thread reaches the function that was in place before, as if no trace were running. The
tracing thread sees exactly what it saw before (nested traces included), so graphs are unchanged.
It is installed once per process (idempotent) before any compile starts.
"""

from __future__ import annotations

import builtins
import functools
import threading
from typing import Any, Callable

from torch.fx import _symbolic_trace as fx_trace

_lock = threading.Lock()
_installed = False


def _confined(new_fn: Callable[..., Any], before: Callable[..., Any]) -> Callable[..., Any]:
    """``new_fn`` in the calling thread (the tracer's), ``before`` in every other."""
    owner = threading.get_ident()

    @functools.wraps(new_fn)
    def patched(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == owner:
            return new_fn(*args, **kwargs)
        return before(*args, **kwargs)

    return patched


def confine_tracing_patches() -> bool:
    """Confine torch.fx's process-wide patches to the thread that traces (once per process).
    → False when this torch has no patcher of the known shape (nothing changed; the caller then
    knows tracing can still leak into other threads)."""
    global _installed
    patcher = getattr(fx_trace, "_Patcher", None)
    if patcher is None or not callable(getattr(patcher, "patch", None)) \
            or not callable(getattr(patcher, "patch_method", None)):
        return False
    with _lock:
        if _installed:
            return True
        patch, patch_method = patcher.patch, patcher.patch_method

        def confined_patch(self, frame_dict, name, new_fn, deduplicate=True):
            # a builtin the patch shadows in a module's globals: other threads keep the builtin
            before = frame_dict[name] if name in frame_dict else getattr(builtins, name, None)
            if before is None:
                return patch(self, frame_dict, name, new_fn, deduplicate)
            return patch(self, frame_dict, name, _confined(new_fn, before), deduplicate)

        def confined_patch_method(self, cls, name, new_fn, deduplicate=True):
            return patch_method(self, cls, name, _confined(new_fn, getattr(cls, name)), deduplicate)

        patcher.patch = confined_patch
        patcher.patch_method = confined_patch_method
        _installed = True
    return True
