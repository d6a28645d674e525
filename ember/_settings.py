"""Process-wide settings: threads, deterministic algorithms, float32 matmul precision,
warn-always, and the legacy default tensor type.

NOTE [ Process-wide settings ]
These are the switches PyTorch keeps in its global context. ember keeps each in one object,
``settings`` below, read by the code the switch concerns and written only through the
public functions here (which validate their arguments as PyTorch does):

- Threads: ember's arithmetic runs in NumPy and SciPy, whose parallel part is the BLAS
  (OpenBLAS in the NumPy wheels). ``set_num_threads`` sets the BLAS thread pools through
  ``threadpoolctl``; ember has no intra-op pool of its own. ``set_num_interop_threads``
  records the value for ``get_num_interop_threads`` and, as in PyTorch, may be set once.
- ``use_deterministic_algorithms``: ember's CPU kernels are deterministic already, so the
  flags are recorded for the code (and programs) that consult them.
- ``set_float32_matmul_precision``: NumPy's float32 matmul is always full precision
  ("highest"); the setting is recorded for ``get_float32_matmul_precision`` and for the
  CUDA backend, where TF32 would apply.
"""

from __future__ import annotations

import builtins
import os
import threading
import warnings


class _Settings:
    """The process-wide switches (see NOTE [ Process-wide settings ])."""

    def __init__(self):
        self.num_threads: int | None = None  # None: whatever the BLAS started with
        self.num_interop_threads: int | None = None
        self.deterministic = False
        self.deterministic_warn_only = False
        self._matmul_precision = "highest"
        #: callables run with the new value when the float32 matmul precision changes (the
        #: CUDA backend points cuBLAS at TF32 or full float32 through one)
        self.on_matmul_precision = []
        self.warn_always = False
        self.flush_denormal = False

    @property
    def float32_matmul_precision(self):
        return self._matmul_precision

    @float32_matmul_precision.setter
    def float32_matmul_precision(self, value):
        self._matmul_precision = value
        for fn in self.on_matmul_precision:
            fn(value)


settings = _Settings()
_lock = threading.Lock()


def _check_positive_int(value, fn: str) -> int:
    if isinstance(value, builtins.bool) or not isinstance(value, int):
        raise RuntimeError(f"{fn} expects an int, but got {type(value).__name__}")
    if value <= 0:
        raise RuntimeError(f"{fn} expects a positive integer")
    return value


def _blas_threads() -> int | None:
    """The thread count of the first loaded BLAS, or None when threadpoolctl is missing."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    for pool in threadpool_info():
        if pool.get("user_api") == "blas":
            return int(pool["num_threads"])
    return None


def set_num_threads(int: int) -> None:  # noqa: A002  (PyTorch's parameter name)
    """Set the number of threads used for intra-op parallelism on the CPU.

    ember's CPU arithmetic is parallel only inside the BLAS (matrix products, solvers), so
    this sets the thread pools of the BLAS libraries NumPy and SciPy load (through
    ``threadpoolctl``).

    Args:
        int: the number of threads, a positive integer.

    Returns:
        None

    Example::

        >>> ember.set_num_threads(1)
        >>> ember.get_num_threads()
        1
    """
    n = _check_positive_int(int, "set_num_threads")
    try:
        from threadpoolctl import threadpool_limits

        from ._lazy_import import import_module

        import_module("scipy.linalg")  # SciPy's BLAS too, so that its pool is limited
    except ImportError as e:
        raise RuntimeError(
            "set_num_threads: ember needs the 'threadpoolctl' package to control the BLAS "
            "threads; install it with `pip install threadpoolctl`") from e
    with _lock:
        threadpool_limits(limits=n, user_api="blas")
        settings.num_threads = n
        from . import _parallel

        _parallel.reset()  # the element-wise thread count follows (ember/_parallel.py)


def get_num_threads() -> int:
    """The number of threads used for intra-op parallelism on the CPU.

    Returns:
        int: the value last given to ``set_num_threads``; before any call, the BLAS's own
        thread count (or the CPUs this process may use, when that cannot be read).

    Example::

        >>> ember.get_num_threads() >= 1
        True
    """
    if settings.num_threads is not None:
        return settings.num_threads
    n = _blas_threads()
    return n if n is not None else _cpu_count()


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def set_num_interop_threads(int: int) -> None:  # noqa: A002
    """Set the number of threads for inter-op parallelism (running independent ops at once).

    ember runs ops one after another, so the value is only recorded; as in PyTorch it may be
    set once per process.

    Args:
        int: the number of threads, a positive integer.

    Returns:
        None

    Raises:
        RuntimeError: when called a second time.

    Example::

        >>> ember.set_num_interop_threads(2)  # doctest: +SKIP
        >>> ember.get_num_interop_threads()  # doctest: +SKIP
        2
    """
    n = _check_positive_int(int, "set_num_interop_threads")
    with _lock:
        if settings.num_interop_threads is not None:
            raise RuntimeError(
                "Error: cannot set number of interop threads after parallel work has started "
                "or set_num_interop_threads called")
        settings.num_interop_threads = n


def get_num_interop_threads() -> int:
    """The number of inter-op threads: the value set once, else the CPUs this process may use.

    Returns:
        int

    Example::

        >>> ember.get_num_interop_threads() >= 1
        True
    """
    n = settings.num_interop_threads
    return n if n is not None else _cpu_count()


# -- deterministic algorithms ----------------------------------------------------------------


def use_deterministic_algorithms(mode: builtins.bool, *, warn_only: builtins.bool = False
                                 ) -> None:
    """Ask for deterministic algorithms (``mode=True``) or allow any (``False``).

    Args:
        mode: whether to require deterministic algorithms.
        warn_only: with ``mode=True``, warn instead of raising for an operation that has
            only a nondeterministic implementation.

    Returns:
        None

    Example::

        >>> ember.use_deterministic_algorithms(True)
        >>> ember.are_deterministic_algorithms_enabled()
        True
        >>> ember.use_deterministic_algorithms(False)
    """
    for name, value in (("mode", mode), ("warn_only", warn_only)):
        if not isinstance(value, builtins.bool):
            raise TypeError(f"_set_deterministic_algorithms(): argument '{name}' must be "
                            f"bool, not {type(value).__name__}")
    settings.deterministic = mode
    settings.deterministic_warn_only = warn_only


def are_deterministic_algorithms_enabled() -> builtins.bool:
    """True if ``use_deterministic_algorithms(True)`` is in effect.

    Returns:
        bool

    Example::

        >>> ember.are_deterministic_algorithms_enabled()
        False
    """
    return settings.deterministic


def is_deterministic_algorithms_warn_only_enabled() -> builtins.bool:
    """True if deterministic algorithms were asked for with ``warn_only=True``.

    Returns:
        bool

    Example::

        >>> ember.is_deterministic_algorithms_warn_only_enabled()
        False
    """
    return settings.deterministic_warn_only


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """The same switch as ``use_deterministic_algorithms``, by name or number: ``"default"``
    (0, off), ``"warn"`` (1, on with ``warn_only``) or ``"error"`` (2, on).

    Args:
        debug_mode: one of the names or numbers above.

    Returns:
        None

    Example::

        >>> ember.set_deterministic_debug_mode("warn")
        >>> ember.get_deterministic_debug_mode()
        1
        >>> ember.set_deterministic_debug_mode(0)
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif isinstance(debug_mode, int) and not isinstance(debug_mode, builtins.bool):
        if debug_mode not in (0, 1, 2):
            raise RuntimeError(
                f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    else:
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 when deterministic algorithms are off, 1 when on with ``warn_only``, else 2.

    Returns:
        int

    Example::

        >>> ember.get_deterministic_debug_mode()
        0
    """
    if not settings.deterministic:
        return 0
    return 1 if settings.deterministic_warn_only else 2


# -- float32 matmul precision ----------------------------------------------------------------

_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision: str) -> None:
    """Set the internal precision of float32 matrix products: ``"highest"``, ``"high"``
    (TF32 allowed on CUDA) or ``"medium"`` (bfloat16 allowed on CUDA).

    ember's CPU products always run in full float32; the setting matters to CUDA.
    An unknown name warns and changes nothing, as in PyTorch.

    Args:
        precision: one of the names above.

    Returns:
        None

    Example::

        >>> ember.set_float32_matmul_precision("high")
        >>> ember.get_float32_matmul_precision()
        'high'
        >>> ember.set_float32_matmul_precision("highest")
    """
    if not isinstance(precision, str):
        raise RuntimeError(
            f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", UserWarning,
                      stacklevel=2)
        return
    settings.float32_matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision last set: ``"highest"`` (the default), ``"high"`` or
    ``"medium"``.

    Returns:
        str

    Example::

        >>> ember.get_float32_matmul_precision()
        'highest'
    """
    return settings.float32_matmul_precision


# -- warnings --------------------------------------------------------------------------------


def set_warn_always(b: builtins.bool) -> None:
    """Make warnings that are normally issued once per process be issued every time.

    Args:
        b: True to warn every time.

    Returns:
        None

    Example::

        >>> ember.set_warn_always(True)
        >>> ember.is_warn_always_enabled()
        True
        >>> ember.set_warn_always(False)
    """
    if not isinstance(b, builtins.bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    settings.warn_always = b


def is_warn_always_enabled() -> builtins.bool:
    """True if ``set_warn_always(True)`` is in effect.

    Returns:
        bool

    Example::

        >>> ember.is_warn_always_enabled()
        False
    """
    return settings.warn_always


_warned_once: set = set()


def warn_once(message: str, category=UserWarning, stacklevel: int = 2) -> None:
    """Issue ``message`` the first time only in this process (PyTorch's warn-once warnings),
    or every time while ``set_warn_always(True)`` is in effect.

    Args:
        message: the warning's text (also its identity: one warning per distinct text).
        category: the warning class.
        stacklevel: as ``warnings.warn``'s, counted from the caller of ``warn_once``.

    Returns:
        None
    """
    if not settings.warn_always:
        if message in _warned_once:
            return
        _warned_once.add(message)
    warnings.warn(message, category, stacklevel=stacklevel + 1)


# NOTE [ Warnings point at the user's line ]
# PyTorch's op warnings come from C++ (or from a Python function one frame below the
# caller), so Python shows the line of the program that called the op. An ember op reaches
# its ``warnings.warn`` through a varying number of its own frames: the generated
# ``__torch_function__`` wrapper (``<ember wrapper of f>``), registry decorators, the
# dispatcher, private helpers. A fixed ``stacklevel`` is right for one route only, so
# ``warn_at_caller`` walks out of ember's private modules (any ``_name`` in the dotted
# path, e.g. ``ember._ops.scatter``, ``ember.ao._qtensor``), its wrappers and
# ``ember.nn.functional`` (which is Python in torch too, but one frame deep) and warns at the
# first frame outside them: the user's line, or a public ember module such as
# ``ember.nn.modules.loss`` (where torch's warning names ``torch/nn/modules/loss.py``).


def _internal_frame(frame) -> bool:
    name = frame.f_globals.get("__name__", "")
    if frame.f_code.co_filename.startswith("<ember wrapper") or name == "ember.nn.functional":
        return True
    parts = name.split(".")
    return parts[0] == "ember" and any(p.startswith("_") for p in parts[1:])


def warn_at_caller(message: str, category=UserWarning, once: bool = False,
                   key: str | None = None, skip: int = 0) -> None:
    """Warn at the first frame outside ember's internals (see NOTE [ Warnings point at the
    user's line ]).

    Args:
        message: the warning's text.
        category: the warning class.
        once: warn the first time only in this process, as :func:`warn_once` does.
        key: with ``once``, what identifies the warning instead of its text (one warning
            site whose text varies, as torch's warn-once sites).
        skip: frames above the caller to pass over before looking (a public helper that
            warns for its own caller).

    Returns:
        None
    """
    if once and not settings.warn_always:
        ident = message if key is None else key
        if ident in _warned_once:
            return
        _warned_once.add(ident)
    import sys

    frame, level = sys._getframe(1 + skip), 2 + skip
    while frame.f_back is not None and _internal_frame(frame):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def init_num_threads() -> None:
    """Prepare the calling thread to use ``get_num_threads()`` threads.

    PyTorch needs this in threads it did not start, because OpenMP's settings are per thread.
    ember's BLAS thread limits are process-wide, so every thread already has them and there
    is nothing to do.

    Returns:
        None

    Example::

        >>> ember.init_num_threads()
    """
