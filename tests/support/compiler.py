"""Whether torch.compile can build code here: inductor's CPU backend needs a C++ compiler. Tests of the
compiled path skip without one (the eager fallback has its own test, which needs none)."""

from __future__ import annotations

import os
import shutil

import pytest


def cxx_available() -> bool:
    names = [os.environ.get("CXX", ""), "g++", "c++", "clang++"]
    return any(name and shutil.which(name) for name in names)


needs_cxx = pytest.mark.skipif(not cxx_available(), reason="no C++ compiler: torch.compile cannot build CPU code")
