"""OpInfo: one table entry per op drives the generic op tests in tests/_ops/test_opinfo.py.

An entry names the op, the dtypes it supports, a generator of sample inputs, a NumPy
reference and error inputs. The generic tests then check, for every sample and dtype:
values against the reference (and against real PyTorch when it is installed, result dtype
included), non-contiguous inputs, function/method/in-place/out= forms agreeing, views
sharing memory, error inputs raising the declared exception type, and gradients.

Entries live in ``ember/testing/opinfos/<family>.py``, one module per op family, each
exporting a list ``op_db``.

Example::

    OpInfo("add", ref=np.add, sample_inputs=sample_binary, dtypes=ALL)
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from typing import Any
from collections.abc import Callable


from .._core import dtype as _dt

BOOL = (_dt.bool_,)
INTS = (_dt.uint8, _dt.int8, _dt.int16, _dt.int32, _dt.int64)
FLOATS = (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64)
COMPLEX = (_dt.complex64, _dt.complex128)
ALL = BOOL + INTS + FLOATS + COMPLEX
ALL_BUT_BOOL = INTS + FLOATS + COMPLEX
REAL = BOOL + INTS + FLOATS
REAL_NO_BOOL = INTS + FLOATS
FLOAT_AND_COMPLEX = FLOATS + COMPLEX
#: the dtypes gradients are checked in
GRAD_DTYPES = (_dt.float64, _dt.complex128)


class SampleInput:
    """``op(input, *args, **kwargs)``; ``name`` shows in test ids and failure messages."""

    __slots__ = ("input", "args", "kwargs", "name")

    def __init__(self, input, *args, name="", **kwargs):
        self.input = input
        self.args = args
        self.kwargs = kwargs
        self.name = name

    def all_args(self):
        return (self.input,) + self.args

    def __repr__(self):
        def show(x):
            shape = getattr(x, "shape", None)
            if shape is not None:
                return f"Tensor{list(shape)}:{x.dtype.name}"
            if isinstance(x, (list, tuple)):
                inner = ", ".join(show(y) for y in x)
                return f"[{inner}]" if isinstance(x, list) else f"({inner})"
            return repr(x)

        args = ", ".join([show(a) for a in self.all_args()] +
                         [f"{k}={show(v)}" for k, v in self.kwargs.items()])
        return f"{self.name or 'sample'}({args})"


class ErrorInput:
    """A sample that must raise ``error_type`` with a message matching ``match``."""

    __slots__ = ("sample", "error_type", "match")

    def __init__(self, sample, error_type, match=""):
        self.sample = sample
        self.error_type = error_type
        self.match = match


@dataclasses.dataclass
class OpInfo:
    """The test-table entry of one op. See the module docstring.

    Attributes:
        name: the public name, ``ember.<name>`` (and ``torch.<name>`` for conformance).
        sample_inputs: ``fn(dtype, rng) -> iterable of SampleInput``.
        ref: NumPy reference ``fn(*numpy_args, **kwargs)``; None to skip the value check.
        dtypes: the dtypes the op supports (tested); others may raise.
        op: the ember callable (default ``ember.<name>``).
        torch_op: the torch callable for conformance (default ``torch.<name>``), or None.
        method / inplace / supports_out: which forms exist. ``inplace`` and ``supports_out``
            left at None are read off the registry (``Tensor.<name>_`` exists; the function
            takes ``out=`` in the overload the samples call, see ``out_overloads`` in
            ember/_ops/_registry.py) unless ``skips`` names the form; the coverage tests
            check they agree with PyTorch's forms.
        is_view: the result shares memory with ``input`` (checked).
        error_inputs: ``fn(rng) -> iterable of ErrorInput``.
        differentiable: gradients are checked (gradcheck/gradgradcheck in float64).
        grad_dtypes: the dtypes gradients are checked in.
        atol / rtol: tolerances override (None: by dtype).
        device_tols: ``{device type: (rtol, atol)}`` for comparing that device's results
            with the CPU's, where its libraries round differently (cuSOLVER's float32 SVD).
        skips: names of generic tests to skip for this op, with the reason as value; the keys
            ``"inplace"`` / ``"out"`` instead say that ``Tensor.<name>_`` / ``out=`` is a
            different op, which the form-coverage check (tests/_ops/test_opinfo_coverage.py)
            then accepts unflagged.
        nondeterministic: results are random or unordered (value checks skipped; the forms
            are still compared, each drawing from the same seed).
    """

    name: str
    sample_inputs: Callable
    ref: Callable | None = None
    dtypes: tuple = FLOATS
    op: Callable | None = None
    torch_op: Any = "default"
    method: bool = True
    inplace: bool | None = None
    supports_out: bool | None = None
    is_view: bool = False
    error_inputs: Callable | None = None
    differentiable: bool = True
    grad_dtypes: tuple = GRAD_DTYPES
    atol: float | None = None
    rtol: float | None = None
    device_tols: dict = dataclasses.field(default_factory=dict)
    skips: dict = dataclasses.field(default_factory=dict)
    nondeterministic: bool = False
    variant: str = ""

    def __post_init__(self):
        # the forms come from the declarations (issue: "adding an op is one declaration plus
        # one OpInfo entry"); an entry states a flag only to differ from them
        if self.inplace is None:
            self.inplace = bool(self.method) and "inplace" not in self.skips and \
                self.get_inplace() is not None
        if self.supports_out is None:
            self.supports_out = "out" not in self.skips and self._accepts_out()

    def _accepts_out(self):
        # the callable the generic tests call: an entry's own ``op`` (a wrapper fixing some
        # arguments) takes out= only if its signature says so (``functools.wraps`` lends it
        # the wrapped function's); an op declared with ``out_overloads`` takes it only in
        # the overload the entry's samples call
        from .._ops._registry import out_accepts

        op = self.get_op()
        try:
            sig = inspect.signature(op)
        except (TypeError, ValueError):
            return False
        if "out" not in sig.parameters:
            return False
        accepts = out_accepts(op)
        if accepts is None:
            return True
        import numpy as np

        for dtype in self.dtypes:
            for s in self.sample_inputs(dtype, np.random.default_rng(0)):
                bound = sig.bind(*s.all_args(), **s.kwargs)
                bound.apply_defaults()
                return bool(accepts(**bound.arguments))
        return False

    @property
    def id(self):
        return self.name + ("." + self.variant if self.variant else "")

    def get_op(self):
        if self.op is not None:
            return self.op
        import ember

        obj = ember
        for part in self.name.split("."):
            obj = getattr(obj, part)
        return obj

    def get_torch_op(self, torch):
        """The counterpart of this op in ``torch`` (the oracle module the tests pass in; ember
        itself never imports PyTorch), or None."""
        if self.torch_op is None:
            return None
        if self.torch_op != "default":
            return self.torch_op(torch) if callable(self.torch_op) else self.torch_op
        obj = torch
        for part in self.name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj

    def get_method(self):
        import ember

        return getattr(ember.Tensor, self.name.split(".")[-1], None)

    def get_inplace(self):
        import ember

        return getattr(ember.Tensor, self.name.split(".")[-1] + "_", None)


def load_op_db():
    """Every OpInfo in ember/testing/opinfos/*.py."""
    from . import opinfos

    db = []
    for m in sorted(pkgutil.iter_modules(opinfos.__path__), key=lambda m: m.name):
        mod = importlib.import_module(f"{opinfos.__name__}.{m.name}")
        db.extend(getattr(mod, "op_db", []))
    return db


# ------------------------------------------------------------------------------------------------
# common sample generators


def _t(shape, dtype, rng, **kw):
    from . import make_tensor

    return make_tensor(shape, dtype=dtype, rng=rng, **kw)


def sample_unary(dtype, rng, *, low=None, high=None, **kwargs):
    """Shapes: scalar, vector, matrix, 3-d, empty; values in [low, high)."""
    for shape in [(), (5,), (3, 4), (2, 3, 4), (0, 3)]:
        yield SampleInput(_t(shape, dtype, rng, low=low, high=high), name=f"{shape}", **kwargs)


def sample_binary(dtype, rng, *, low=None, high=None, rhs_exclude_zero=False, scalars=True,
                  **kwargs):
    """Same shapes, broadcasting, zero-dim operands, Python scalars, empty tensors."""
    ex = rhs_exclude_zero

    def t(shape, **kw):
        return _t(shape, dtype, rng, low=low, high=high, **kw)

    yield SampleInput(t((5,)), t((5,), exclude_zero=ex), name="same", **kwargs)
    yield SampleInput(t((3, 4)), t((4,), exclude_zero=ex), name="broadcast_rhs", **kwargs)
    yield SampleInput(t((3, 1)), t((1, 4), exclude_zero=ex), name="broadcast_both", **kwargs)
    yield SampleInput(t((2, 3)), t((), exclude_zero=ex), name="zero_dim_rhs", **kwargs)
    yield SampleInput(t(()), t((), exclude_zero=ex), name="both_zero_dim", **kwargs)
    yield SampleInput(t((0, 3)), t((3,), exclude_zero=ex), name="empty", **kwargs)
    if scalars:
        if dtype.category == 2:
            yield SampleInput(t((4,)), 2.5, name="float_scalar", **kwargs)
        if dtype.category in (1, 2):
            yield SampleInput(t((4,)), 3, name="int_scalar", **kwargs)
