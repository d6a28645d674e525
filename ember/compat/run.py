"""``python -m ember.compat.run script.py [args...]``: run a PyTorch script on ember."""

from __future__ import annotations

import os
import runpy
import sys
import zipfile

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
        # a torch module (``-m torch.distributed.run``, torchrun's module) runs as the ember
        # module it names: the import hook's torch-named modules are aliases, with no code
        # of their own for runpy to execute
        name = argv[1]
        if name == "torch" or name.startswith("torch."):
            from . import _ember_name

            name = _ember_name(name)
        runpy.run_module(name, run_name="__main__", alter_sys=True)
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
    if os.path.isfile(path) and not zipfile.is_zipfile(path):
        _run_script(path)
    else:
        runpy.run_path(path, run_name="__main__")
    return 0


def _run_script(path):
    """Run the source file ``path`` as ``python path`` does: in a fresh module that is
    ``sys.modules["__main__"]`` and stays so after the script ends.

    The module is also ``sys.modules["__mp_main__"]``: ``multiprocessing`` set that name to
    the main module it saw when first imported (this runner, when ember imported it), and a
    ``spawn`` child, which runs the script as ``__mp_main__``, pickles objects of the
    script's classes under that name (a namedtuple from a DataLoader worker, say), so the
    parent must find them there.
    """
    import builtins
    import importlib.machinery
    import io
    import types

    with io.open_code(path) as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__dict__.update(
        __file__=path, __cached__=None, __package__=None, __spec__=None,
        __loader__=importlib.machinery.SourceFileLoader("__main__", path),
        __builtins__=builtins)
    saved = {name: sys.modules.get(name) for name in ("__main__", "__mp_main__")}
    sys.modules["__main__"] = sys.modules["__mp_main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        # as runpy does: a caller that runs several scripts in one process gets its own
        # main module back after each
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old


def _report_uncaught(exc):
    """Print ``exc`` as Python prints an uncaught exception of ``python script.py``: its
    traceback starts at the script's first frame, without this runner's own frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    # (the default hook prints the exception's own traceback when it has one)
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)


if __name__ == "__main__":
    try:
        status = main()
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001  (reported as the interpreter would)
        _report_uncaught(exc)
        status = 1
    sys.exit(status)
