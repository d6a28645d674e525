"""``python -m ember.compat.run script.py [args...]``: run a PyTorch script on ember."""

from __future__ import annotations

import runpy
import sys

from . import install


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    if argv[0] == "-m":
        if len(argv) < 2:
            print("ember.compat.run: -m needs a module name", file=sys.stderr)
            return 2
        install()
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    install()
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
