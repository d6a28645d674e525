"""Third-party modules that ember imports on first use, without disturbing the program's
warnings.

NOTE [ First-use imports keep the warnings seen ]
Python shows a warning under the ``"default"`` action once per code location, remembering
each one in the ``__warningregistry__`` of the module it is attributed to. Every change to
the warning filters (``filterwarnings``, ``simplefilter``, entering or leaving
``catch_warnings``) bumps a process-wide version, and each registry is wiped the next time
it is consulted under a newer version: every warning the program has already seen prints
again. SciPy changes the filters while it imports (``scipy._lib._util``,
``scipy.sparse``), and numba reaches SciPy's BLAS on its first compile. ember imports both
on first use, mid-program (an embedding's backward, the first fused kernel, a LAPACK
call), so a transformer that had warned about its masks once warned again after the first
backward; PyTorch never imports SciPy and its programs see each warning once. numba also
enters ``catch_warnings`` each time it compiles a function for new argument types (every
kernel's first call while its on-disk cache is cold, as after an install).

``keep_warnings_seen()`` runs such an import (``import_module``), and ``prepare_numba()``
makes every numba compile run, with the version bump switched off: the
filters SciPy adds still apply (Python reads ``warnings.filters`` on every warning), only
the records of warnings already shown survive. That is safe because a registry only
records warnings that were shown, never ignored ones. The switch is the ``warnings``
module's own hook, ``warnings._filters_mutated`` (Python 3.10-3.13); where a Python has no
such hook, or calls it from elsewhere, imports run as before. While the block runs, a
filter change made by another thread does not bump the version either (it takes effect
all the same).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
import threading
import warnings

_HOOK = "_filters_mutated" if callable(getattr(warnings, "_filters_mutated", None)) else None
_lock = threading.RLock()


def _keep_version():
    pass


@contextlib.contextmanager
def keep_warnings_seen():
    """Run the block without resetting the warnings the program has already been shown.

    See NOTE [ First-use imports keep the warnings seen ].

    Returns:
        A context manager.

    Example::

        >>> with keep_warnings_seen():
        ...     import json
    """
    if _HOOK is None:
        yield
        return
    with _lock:
        original = getattr(warnings, _HOOK)
        setattr(warnings, _HOOK, _keep_version)
        try:
            yield
        finally:
            setattr(warnings, _HOOK, original)


def import_module(name: str):
    """Import module ``name`` on first use (see NOTE [ First-use imports keep the warnings
    seen ]); a module already imported is returned at the cost of a dictionary lookup.

    Args:
        name: the module's full dotted name, e.g. ``"scipy.sparse"``.

    Returns:
        The module. ImportError propagates as from ``import``.

    Example::

        >>> import_module("json").dumps([1])
        '[1]'
    """
    module = sys.modules.get(name)
    if module is not None:
        return module
    with keep_warnings_seen():
        return importlib.import_module(name)


# NOTE [ Numba caches across kernel modules ]
# ember's compiled kernels are cached on disk by numba (``cache=True``), each in the
# ``__pycache__`` beside its module, and numba decides a cache is current from that one
# module's file alone. But kernels inline helpers from other modules (``_numba_par`` runs
# ``_numba``'s row loops, the LSTM kernels share gate helpers): after an edit to a helper's
# module, the other modules' caches kept running the old helper -- seen when a change to
# ``_numba.py`` left ``_numba_par``'s softmax rows a rounding apart from the relay's. So the
# first load of the kernels compares the sizes and modification times of every module that
# compiles with numba against a stamp kept beside the caches, and where they differ drops
# all of ember's numba caches (they compile again, once). Read-only installs are left as
# they are.
_NUMBA_MODULES = ("_kernels", "_ops", "_core", "func")
_STAMP = "ember-numba-sources.txt"


def drop_stale_numba_caches(root=None):
    """Drop ember's numba disk caches when any module compiled with numba changed since they
    were written (NOTE [ Numba caches across kernel modules ]).

    Args:
        root: the package folder to look in (default: ember's own).

    Returns:
        bool: whether caches were dropped.

    Example::

        >>> drop_stale_numba_caches() in (True, False)
        True
    """
    root = root or os.path.dirname(os.path.abspath(__file__))
    dirs = [os.path.join(root, d) for d in _NUMBA_MODULES]
    sources = []
    for d in dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            if name.endswith(".py") and ("numba" in name or name == "rng_sequential.py"):
                st = os.stat(os.path.join(d, name))
                sources.append(f"{d[len(root):]}/{name} {st.st_size} {st.st_mtime_ns}")
    stamp_text = "\n".join(sources)
    stamp = os.path.join(root, "_kernels", "__pycache__", _STAMP)
    try:
        with open(stamp) as f:
            if f.read() == stamp_text:
                return False
    except OSError:
        pass
    try:
        for d in dirs:
            cache = os.path.join(d, "__pycache__")
            if not os.path.isdir(cache):
                continue
            for name in os.listdir(cache):
                if name.endswith((".nbi", ".nbc")):
                    try:
                        os.remove(os.path.join(cache, name))
                    except FileNotFoundError:  # (another process dropped it first)
                        pass
        os.makedirs(os.path.dirname(stamp), exist_ok=True)
        with open(stamp, "w") as f:
            f.write(stamp_text)
    except OSError:  # a read-only install: its caches are whatever it shipped with
        return False
    return True


_dropped_stale = [False]  # checked once a process


def prepare_numba():
    """Make numba's compiles keep the warnings seen, and load the SciPy BLAS its first compile
    would import, now (see NOTE [ First-use imports keep the warnings seen ]). Called where
    ember first loads its numba kernels; idempotent; ImportError if numba is missing.

    Returns:
        None

    Example::

        >>> prepare_numba()  # doctest: +SKIP
    """
    from numba.core.dispatcher import Dispatcher

    if not _dropped_stale[0]:
        _dropped_stale[0] = True
        drop_stale_numba_caches()
    compile_ = Dispatcher.compile
    if not getattr(compile_, "_ember_keeps_warnings", False):
        @functools.wraps(compile_)
        def compile(self, sig):
            with keep_warnings_seen():
                return compile_(self, sig)

        compile._ember_keeps_warnings = True
        Dispatcher.compile = compile
    try:
        import_module("scipy.linalg.cython_blas")  # numba's own linear algebra loads it
    except ImportError:
        pass
