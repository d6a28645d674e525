"""``ember.cuda.tunable``: PyTorch's TunableOp settings and results files.

NOTE [ TunableOp on cuBLAS ]
PyTorch's TunableOp times several GEMM implementations (cuBLAS, cuBLASLt, hipBLASLt
algorithms) on the first call of each shape and keeps the fastest, recording the choice in a
CSV file that later runs read back. ember's CUDA GEMMs run through CuPy's cuBLAS calls, which
offer one implementation per shape: cuBLAS's own heuristic choice, which TunableOp calls
``Default``. So ember keeps TunableOp's whole surface -- the switches and limits (from the
``PYTORCH_TUNABLEOP_*`` environment variables first, as PyTorch reads them), the results
table, reading and writing the results file in PyTorch's format -- and "tuning" a GEMM means
recording that it runs ``Default``. A results file written by PyTorch reads back here; one
written here reads back in PyTorch (which then keeps its ``Default`` choice).

Example::

    >>> from ember.cuda import tunable
    >>> tunable.is_enabled()
    False
"""

from __future__ import annotations

import os
import re

from ._runtime import require_gpu

__all__ = [
    "enable", "is_enabled", "tuning_enable", "tuning_is_enabled", "record_untuned_enable",
    "record_untuned_is_enabled", "set_max_tuning_duration", "get_max_tuning_duration",
    "set_max_tuning_iterations", "get_max_tuning_iterations", "set_filename", "get_filename",
    "get_results", "get_validators", "read_file", "tune_gemm_in_file",
    "mgpu_tune_gemm_in_file", "set_rotating_buffer_size", "get_rotating_buffer_size",
    "set_numerical_check_tolerances",
]


def _env_flag(name, default):
    value = os.environ.get(name)
    return default if value is None else value.strip() == "1"


def _env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


class _State:
    """The process's TunableOp settings (read from the environment once, at import)."""

    def __init__(self):
        self.enabled = _env_flag("PYTORCH_TUNABLEOP_ENABLED", False)
        self.tuning = _env_flag("PYTORCH_TUNABLEOP_TUNING", True)
        self.record_untuned = _env_flag("PYTORCH_TUNABLEOP_RECORD_UNTUNED", False)
        self.max_duration_ms = _env_int("PYTORCH_TUNABLEOP_MAX_TUNING_DURATION_MS", 30)
        self.max_iterations = _env_int("PYTORCH_TUNABLEOP_MAX_TUNING_ITERATIONS", 100)
        self.rotating_buffer_mb = _env_int("PYTORCH_TUNABLEOP_ROTATING_BUFFER_SIZE", -1)
        self.filename = os.environ.get("PYTORCH_TUNABLEOP_FILENAME", "tunableop_results.csv")
        self.insert_ordinal = False
        self.numerical_check = (False, 1e-5, 1e-5)
        self.results: dict = {}  # (op signature, params signature) -> (solution, time in ms)
        self.validators: dict = {}


_state = _State()


def enable(val: bool = True) -> None:
    """Switch TunableOp on or off (``PYTORCH_TUNABLEOP_ENABLED``).

    Args:
        val (bool): on (True) or off. Default: True.

    Example::

        >>> ember.cuda.tunable.enable(False)
    """
    _state.enabled = bool(val)


def is_enabled() -> bool:
    """Whether TunableOp is on.

    Returns:
        bool

    Example::

        >>> ember.cuda.tunable.is_enabled() in (True, False)
        True
    """
    return _state.enabled


def tuning_enable(val: bool = True) -> None:
    """Allow (True) or forbid tuning shapes that the results table does not hold yet.

    Args:
        val (bool): Default: True.

    Example::

        >>> ember.cuda.tunable.tuning_enable(True)
    """
    _state.tuning = bool(val)


def tuning_is_enabled() -> bool:
    """Whether shapes missing from the results table may be tuned.

    Returns:
        bool

    Example::

        >>> ember.cuda.tunable.tuning_is_enabled() in (True, False)
        True
    """
    return _state.tuning


def record_untuned_enable(val: bool = True) -> None:
    """Record (True) or not the GEMM shapes met without a result, for offline tuning.

    Args:
        val (bool): Default: True.

    Example::

        >>> ember.cuda.tunable.record_untuned_enable(False)
    """
    _state.record_untuned = bool(val)


def record_untuned_is_enabled() -> bool:
    """Whether untuned GEMM shapes are recorded.

    Returns:
        bool

    Example::

        >>> ember.cuda.tunable.record_untuned_is_enabled() in (True, False)
        True
    """
    return _state.record_untuned


def set_max_tuning_duration(duration: int) -> None:
    """Set the most milliseconds spent tuning one shape.

    Args:
        duration (int): milliseconds.

    Example::

        >>> ember.cuda.tunable.set_max_tuning_duration(30)
    """
    _state.max_duration_ms = int(duration)


def get_max_tuning_duration() -> int:
    """The most milliseconds spent tuning one shape.

    Returns:
        int

    Example::

        >>> ember.cuda.tunable.get_max_tuning_duration() >= 0
        True
    """
    return _state.max_duration_ms


def set_max_tuning_iterations(iterations: int) -> None:
    """Set the most timed runs per candidate when tuning one shape.

    Args:
        iterations (int): runs.

    Example::

        >>> ember.cuda.tunable.set_max_tuning_iterations(100)
    """
    _state.max_iterations = int(iterations)


def get_max_tuning_iterations() -> int:
    """The most timed runs per candidate when tuning one shape.

    Returns:
        int

    Example::

        >>> ember.cuda.tunable.get_max_tuning_iterations() > 0
        True
    """
    return _state.max_iterations


def set_rotating_buffer_size(buffer_size: int) -> None:
    """Set the size in MB of the buffers rotated through while timing (a negative value: the
    device's L2 cache size).

    Args:
        buffer_size (int): megabytes.

    Example::

        >>> ember.cuda.tunable.set_rotating_buffer_size(-1)
    """
    _state.rotating_buffer_mb = int(buffer_size)


def get_rotating_buffer_size() -> int:
    """The rotating buffer size in MB (negative: the L2 cache size).

    Returns:
        int

    Example::

        >>> isinstance(ember.cuda.tunable.get_rotating_buffer_size(), int)
        True
    """
    return _state.rotating_buffer_mb


def set_numerical_check_tolerances(enable: bool, atol: float = 1e-5, rtol: float = 1e-5) -> None:
    """Check (or not) each candidate's result against the default one within these tolerances.

    Args:
        enable (bool): whether to check.
        atol (float): absolute tolerance. Default: 1e-5.
        rtol (float): relative tolerance. Default: 1e-5.

    Example::

        >>> ember.cuda.tunable.set_numerical_check_tolerances(False)
    """
    _state.numerical_check = (bool(enable), float(atol), float(rtol))


def set_filename(filename: str, insert_device_ordinal: bool = False) -> None:
    """Set the results file's name; ``insert_device_ordinal`` puts the device index before the
    extension (``results.csv`` -> ``results0.csv``), one file per GPU.

    Args:
        filename (str): the file name.
        insert_device_ordinal (bool): Default: False.

    Example::

        >>> ember.cuda.tunable.set_filename("tunableop_results.csv")
    """
    _state.filename = str(filename)
    _state.insert_ordinal = bool(insert_device_ordinal)


def get_filename() -> str:
    """The results file's name (with the current device's index when asked for).

    Returns:
        str

    Example::

        >>> ember.cuda.tunable.get_filename().endswith(".csv")
        True
    """
    name = _state.filename
    if _state.insert_ordinal:
        from . import current_device, is_available

        stem, ext = os.path.splitext(name)
        name = f"{stem}{current_device() if is_available() else 0}{ext}"
    return name


def get_results() -> tuple:
    """The results table: one ``(op signature, params signature, solution, time in ms)`` tuple
    per tuned shape.

    Returns:
        tuple

    Example::

        >>> isinstance(ember.cuda.tunable.get_results(), tuple)
        True
    """
    return tuple((op, params, sol, ms) for (op, params), (sol, ms) in _state.results.items())


def get_validators() -> tuple:
    """The validators that a results file must match to be read (name, value pairs).

    Returns:
        tuple

    Example::

        >>> isinstance(ember.cuda.tunable.get_validators(), tuple)
        True
    """
    return tuple(_state.validators.items())


def read_file(filename: str | None = None) -> bool:
    """Read a results file (PyTorch's CSV format) into the results table.

    Lines ``Validator,<name>,<value>`` set validators; lines ``<op>,<params>,<solution>,<ms>``
    add results. A missing file reads as nothing.

    Args:
        filename (str, optional): the file; Default: :func:`get_filename`.

    Returns:
        bool: True when the file existed and was read.

    Example::

        >>> ember.cuda.tunable.read_file("/nonexistent/results.csv")
        False
    """
    path = get_filename() if filename is None else filename
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    for line in lines:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0] == "Validator":
            _state.validators[parts[1]] = ",".join(parts[2:])
        elif len(parts) >= 4:
            try:
                ms = float(parts[3])
            except ValueError:
                continue
            _state.results[(parts[0], parts[1])] = (parts[2], ms)
    return True


def write_file(filename: str | None = None) -> bool:
    """Write the validators and the results table to a results file (PyTorch's CSV format).

    Args:
        filename (str, optional): the file; Default: :func:`get_filename`.

    Returns:
        bool: True when written.

    Example::

        >>> import os, tempfile
        >>> ember.cuda.tunable.write_file(os.path.join(tempfile.mkdtemp(), "r.csv"))
        True
    """
    path = get_filename() if filename is None else filename
    with open(path, "w") as f:
        for name, value in _state.validators.items():
            f.write(f"Validator,{name},{value}\n")
        for (op, params), (sol, ms) in _state.results.items():
            f.write(f"{op},{params},{sol},{ms}\n")
    return True


def _untuned_signatures(filename):
    """The (op, params) signature pairs of an untuned-GEMM file (one ``op,params`` a line)."""
    pairs = []
    with open(filename) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) >= 2 and parts[0] and parts[0] != "Validator":
                pairs.append((parts[0], parts[1]))
    return pairs


def tune_gemm_in_file(filename: str) -> None:
    """Tune every GEMM shape listed in an untuned-results file (written with
    :func:`record_untuned_enable`) and add the choices to the results table.

    ember's GEMMs have one implementation per shape on cuBLAS (NOTE [ TunableOp on cuBLAS ]),
    so each shape is recorded as running ``Default``. Needs a GPU.

    Args:
        filename (str): the untuned file.

    Example::

        >>> ember.cuda.tunable.tune_gemm_in_file("tunableop_untuned0.csv")  # doctest: +SKIP
    """
    require_gpu()
    for op, params in _untuned_signatures(filename):
        if re.match(r"Gemm|ScaledGemm|GemmStrided", op):
            _state.results.setdefault((op, params), ("Default", 0.0))


def mgpu_tune_gemm_in_file(filename_pattern: str, num_gpus: int) -> None:
    """Tune the GEMMs of several untuned files (a glob pattern) across ``num_gpus`` GPUs.

    Args:
        filename_pattern (str): glob pattern of untuned files.
        num_gpus (int): the GPUs to use.

    Example::

        >>> ember.cuda.tunable.mgpu_tune_gemm_in_file("untuned*.csv", 1)  # doctest: +SKIP
    """
    import glob

    from . import device_count

    require_gpu()
    if not 1 <= int(num_gpus) <= device_count():
        raise ValueError(f"num_gpus must be between 1 and {device_count()}, got {num_gpus}")
    for name in sorted(glob.glob(filename_pattern)):
        tune_gemm_in_file(name)
