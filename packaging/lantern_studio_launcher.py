"""Entry script of the frozen app (PyInstaller): the same CLI as ``lantern-studio``."""

import multiprocessing
import sys


def _main() -> int:
    multiprocessing.freeze_support()
    from lantern_studio.cli import main

    return main()


if __name__ == "__main__":
    sys.exit(_main())
