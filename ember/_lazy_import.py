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
