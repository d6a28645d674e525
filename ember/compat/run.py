"""``python -m ember.compat.run script.py [args...]``: run a PyTorch script on ember."""

from __future__ import annotations

import os
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
    # as ``python script.py`` does: the script's folder comes first on the import path (so it
    # imports its sibling modules from any working directory), and ``__file__`` is absolute
    path = os.path.abspath(argv[0])
    if os.path.isdir(path) or path.endswith(".zip"):
        sys.path[0:0] = [path]
    elif sys.path and sys.path[0] in ("", os.getcwd()):
        sys.path[0] = os.path.dirname(path)
    else:
        sys.path.insert(0, os.path.dirname(path))
    runpy.run_path(path, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
