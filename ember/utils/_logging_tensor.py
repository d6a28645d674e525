"""Logging every op as a line of pseudo-code: ``LoggingTensorMode`` and ``capture_logs``
(re-exported by ``ember.utils.checkpoint``, as torch's module does).

Each op call becomes one log record on the ``"LoggingTensor"`` logger; inside
``capture_logs(is_mode=True)`` it reads ``$2: f32[2] = torch._ops.aten.sin.default($1)``,
tensors named ``$0, $1, ...`` in order of first appearance.
"""

from __future__ import annotations

import contextlib
import logging
import numpy as np

from .._core.tensor import Tensor
from ._python_dispatch import TorchDispatchMode
from .weak import WeakIdKeyDictionary

__all__ = ["LoggingTensorMode", "capture_logs"]

logger = logging.getLogger("LoggingTensor")

_SHORT = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int64": "i64",
    "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "b8",
    "complex64": "c64", "complex128": "c128",
}


def _type_str(t: Tensor) -> str:
    name = str(t.dtype).rsplit(".", 1)[-1]
    return f"{_SHORT.get(name, name)}[{', '.join(str(s) for s in t.shape)}]"


class _Handler(logging.Handler):
    """Turns each op record into a line, numbering the tensors it has met."""

    def __init__(self, log_list, with_type, use_shortid_for_all_tensors):
        super().__init__()
        self.log_list = log_list
        self.with_type = with_type
        self.short_ids = use_shortid_for_all_tensors
        self.ids = WeakIdKeyDictionary()
        self.count = 0

    def _id(self, t):
        if t not in self.ids:
            self.ids[t] = self.count
            self.count += 1
        return f"${self.ids[t]}"

    def _fmt(self, x):
        if isinstance(x, Tensor):
            return self._id(x) if self.short_ids else repr(x)
        if isinstance(x, (list, tuple)):
            inner = ", ".join(self._fmt(v) for v in x)
            return f"[{inner}]" if isinstance(x, list) else f"({inner}{',' if len(x) == 1 else ''})"
        if isinstance(x, np.dtype):
            from .._core import dtype as _dt

            try:
                return repr(_dt.lookup(x))
            except TypeError:
                return str(x)
        return repr(x)

    def emit(self, record):
        func, args, kwargs, out = record.args
        parts = [self._fmt(a) for a in args]
        parts += [f"{k}={self._fmt(v)}" for k, v in kwargs.items()]
        outs = out if isinstance(out, (list, tuple)) else (out,)
        lhs = ", ".join(self._fmt(o) for o in outs)
        if self.with_type and self.short_ids and all(isinstance(o, Tensor) for o in outs):
            lhs = f"{lhs}: {', '.join(_type_str(o) for o in outs)}"
        self.log_list.append(f"{lhs} = torch._ops.{func}({', '.join(parts)})")


class LoggingTensorMode(TorchDispatchMode):
    """A dispatch mode that logs every op it sees to the ``"LoggingTensor"`` logger.

    Collect the lines with :func:`capture_logs`; the op still runs normally.

    Example:
        >>> import ember
        >>> from ember.utils.checkpoint import LoggingTensorMode, capture_logs
        >>> x = ember.ones(2)
        >>> with capture_logs(is_mode=True) as logs, LoggingTensorMode():
        ...     _ = x.sin()
        >>> logs
        ['$1: f32[2] = torch._ops.aten.sin.default($0)']
    """

    def __init__(self, _dispatch_key=None):
        super().__init__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        logger.info("%s %s %s %s", func, args, kwargs, out)
        return out


@contextlib.contextmanager
def capture_logs(is_mode=False, python_tb=False, script_tb=False, cpp_tb=False):
    """Collect the lines :class:`LoggingTensorMode` logs inside the block.

    Args:
        is_mode (bool): name every tensor ``$n`` (as for a mode); otherwise tensors print
            in full. Default: False.
        python_tb, script_tb, cpp_tb (bool): also collect a traceback per line (ember keeps
            Python tracebacks only; script and C++ frames do not exist). Default: False.

    Returns:
        A context manager yielding the list of lines (and the list of tracebacks when one
        is asked for), filled as ops run.

    Example:
        >>> import ember
        >>> from ember.utils.checkpoint import LoggingTensorMode, capture_logs
        >>> with capture_logs(is_mode=True) as logs, LoggingTensorMode():
        ...     _ = ember.ones(2) * 2
        >>> len(logs)
        2
    """
    import traceback

    logs: list[str] = []
    tracebacks: list = []
    collect = python_tb or script_tb or cpp_tb
    handler = _Handler(logs, with_type=True, use_shortid_for_all_tensors=is_mode)
    old_level, old_propagate = logger.level, logger.propagate

    def gather(record):
        if collect:
            tracebacks.append(traceback.extract_stack()[:-1] if python_tb else [])
        return True

    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    logger.addFilter(gather)
    try:
        yield (logs, tracebacks) if collect else logs
    finally:
        logger.removeFilter(gather)
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate
