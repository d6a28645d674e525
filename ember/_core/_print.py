"""Tensor printing: ``repr(t)`` as PyTorch prints it, and the print options.

``ember.set_printoptions`` sets the options; ``ember._tensor_str`` exposes this module under
PyTorch's private name (``PRINT_OPTS``, ``get_printoptions``, ``printoptions``).

NOTE [ How tensors print ]
The output must match PyTorch character for character (dtypes say ``ember.`` instead of
``torch.``). The rules, as observed on PyTorch 2.13:

- One formatter decides the layout of every element of a tensor (two for complex tensors:
  one for the real parts, one for the imaginary parts). It looks only at the elements that
  will be printed (see *summarising* below), and of those only at the finite non-zero ones:
  * all of them integers -> "int mode": ``1.``, ``-3.`` (the dot says "floating");
  * scientific notation when max|x| / min|x| > 1000, max|x| > 1e8 or min|x| < 1e-4, unless
    ``sci_mode`` forces it on or off; then ``{:.4e}`` with ``precision`` digits;
  * otherwise fixed ``{:.4f}``.
  The column width is the longest of those values once formatted; every element (zeros,
  nan and inf included) is right-aligned to it, and never cut when longer.
- Integers and bools print as Python prints them, right-aligned to the longest.
- Complex numbers print as ``real+imagj``: real part aligned by the real formatter, the
  imaginary part by the imaginary one, its padding dropped so the sign sits on the ``+``.
- Rows wrap so a line holds ``(linewidth - indent) // (width + 2)`` elements; nested rows
  are indented one column per level and separated by ``dim - 1`` newlines.
- *Summarising*: above ``threshold`` elements, each dimension longer than ``2 * edgeitems``
  shows its first and last ``edgeitems`` entries around ``...``.
- Suffixes after the data, in order: device (when not the CPU), size (empty tensors that are
  not 1-D, or ``edgeitems=0``), dtype (when not implied: int64, bool, the default float and
  complex dtypes are; empty tensors always show a non-default-float dtype), then
  ``grad_fn=<...>`` or ``requires_grad=True``, then a forward-mode ``tangent=``. A suffix
  that would pass ``linewidth`` goes on its own line, indented under the data.

Everything here works on the NumPy array behind the tensor, never on ember ops, so printing
works whatever state the op library is in and records nothing for autograd.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np

from . import dtype as _dt
from .backend import backends_by_type
from .tensor import Tensor

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "PRINT_OPTS", "tensor_repr"]


# ------------------------------------------------------------------------------------------------
# options


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """Set how tensors print.

    Args:
        precision: digits after the decimal point for floating values (default 4).
        threshold: tensors with more elements than this are summarised (default 1000).
        edgeitems: items shown at each end of a summarised dimension (default 3).
        linewidth: characters per line before rows wrap (default 80).
        profile: ``'default'``, ``'short'`` or ``'full'`` (never summarise): resets the four
            options above before the explicit ones are applied.
        sci_mode: True or False forces scientific notation on or off; None (the default,
            and what every call without it restores) lets each tensor's values decide.

    Example::

        >>> import ember
        >>> ember.set_printoptions(precision=2)
        >>> ember.tensor([1.12345])
        tensor([1.12])
        >>> ember.set_printoptions(profile='default')
    """
    if profile is not None:
        if profile not in _PROFILES:
            # PyTorch ignores an unknown profile silently; an error tells the user the fix.
            raise ValueError(
                f"set_printoptions: profile must be one of 'default', 'short', 'full', "
                f"but got {profile!r}")
        for key, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, key, value)
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    # as in PyTorch, sci_mode is always assigned: leaving it out resets it to automatic
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Context manager: ``set_printoptions(**kwargs)`` inside, the old options restored after."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# ------------------------------------------------------------------------------------------------
# element formatting


class _Formatter:
    """Formats the elements of one tensor (or of one part of a complex tensor) to a common
    width. See NOTE [ How tensors print ].

    ``values`` is a NumPy array of the elements that will be printed: float64 for floating
    tensors (exact for every floating dtype), the tensor's own dtype otherwise.
    """

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        self.precision = PRINT_OPTS.precision
        v = values.reshape(-1)
        if not floating:
            if v.size:
                if v.dtype == np.bool_:
                    candidates = np.unique(v).tolist()
                else:
                    candidates = [v.min().item(), v.max().item()]
                self.width = max(len(str(c)) for c in candidates)
            return
        v = v[np.isfinite(v) & (v != 0)]
        if v.size == 0:
            return
        self.int_mode = bool((v == np.ceil(v)).all())
        magnitude = np.abs(v)
        smallest, largest = magnitude.min(), magnitude.max()
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = bool(largest / smallest > 1000.0 or largest > 1.0e8
                                 or smallest < 1.0e-4)
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        # The formatted length grows with |x| in fixed notation and with |exponent| in
        # scientific notation, and a minus sign adds one: the longest string comes from the
        # smallest or largest magnitude of either sign, so only those four need formatting.
        candidates = []
        for part in (v[v > 0], v[v < 0]):
            if part.size:
                candidates += [part.min().item(), part.max().item()]
        if self.sci_mode:
            spec = f".{self.precision}e"
            self.width = max(len(format(c, spec)) for c in candidates)
        elif self.int_mode:
            # the trailing "." of int mode counts towards the width
            self.width = max(len(format(c, ".0f")) + 1 for c in candidates)
        else:
            spec = f".{self.precision}f"
            self.width = max(len(format(c, spec)) for c in candidates)
        self.width = max(self.width, 1)

    def format(self, value) -> str:
        """One element, right-aligned to the common width."""
        if not self.floating:
            s = str(value)
        elif self.sci_mode:
            s = format(value, f"{self.width}.{self.precision}e")
        elif self.int_mode:
            s = format(value, ".0f")
            if math.isfinite(value):
                s += "."
        else:
            s = format(value, f".{self.precision}f")
        return s.rjust(self.width)


def _complex_str(value, real_fmt, imag_fmt) -> str:
    real = real_fmt.format(value.real)
    imag = (imag_fmt.format(value.imag) + "j").lstrip()
    # a negative imaginary part (-0. included) brings its own sign; otherwise join with "+"
    if imag[0] in "+-":
        return real + imag
    return real + "+" + imag


# ------------------------------------------------------------------------------------------------
# layout


def _kept_indices(shape, summarize, edgeitems):
    """Per dimension, the indices that will print (all, or the two ends of the dimension),
    and whether the dimension is cut by a ``...``."""
    kept, cut = [], []
    for n in shape:
        if summarize and n > 2 * edgeitems:
            kept.append(np.r_[0:edgeitems, n - edgeitems:n])
            cut.append(True)
        else:
            kept.append(np.arange(n))
            cut.append(False)
    return kept, cut


def _vector_str(row, indent, cut, fmt):
    """A 1-D row; ``fmt`` formats one element."""
    opts = PRINT_OPTS
    values = row.tolist()
    if cut and not opts.edgeitems:
        data = ["..."]
    elif cut:
        e = opts.edgeitems
        data = [fmt(x) for x in values[:e]] + [" ..."] + [fmt(x) for x in values[e:]]
    else:
        data = [fmt(x) for x in values]
    per_line = max(1, math.floor((opts.linewidth - indent) / fmt.element_length))
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _block_str(block, indent, cut, fmt):
    """The printed block (already reduced to the kept indices) as nested rows."""
    ndim = block.ndim
    if ndim == 1:
        return _vector_str(block, indent, cut[0], fmt)
    rows = [_block_str(block[i], indent + 1, cut[1:], fmt) for i in range(block.shape[0])]
    if cut[0]:
        e = PRINT_OPTS.edgeitems
        rows = rows[:e] + ["..."] + rows[e:]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(rows) + "]"


class _ElementFormat:
    """Callable formatting one element of a real or complex tensor, with its printed length
    (the element plus the ", " after it) used to wrap rows."""

    def __init__(self, real_fmt, imag_fmt=None):
        self.real_fmt = real_fmt
        self.imag_fmt = imag_fmt
        self.element_length = real_fmt.width + 2
        if imag_fmt is not None:
            self.element_length += imag_fmt.width + 1  # the "j"

    def __call__(self, value):
        if self.imag_fmt is None:
            return self.real_fmt.format(value)
        return _complex_str(value, self.real_fmt, self.imag_fmt)


def _host(a):
    """A backend array as a NumPy array (copies device arrays to the host)."""
    return a if type(a) is np.ndarray else a.get()


def tensor_str(t, indent: int) -> str:
    """The data part of ``repr(t)``: ``[...]`` rows (or a scalar), laid out for a first line
    starting ``indent`` columns in."""
    a = t._data
    if a.size == 0:
        return "[]"
    if a.dtype in _dt._OPAQUE_NP:  # NOTE [ Opaque dtypes ]
        if a.dtype != _dt.float4_e2m1fn_x2.np:
            _dt.refuse_opaque(t, "_local_scalar_dense_cpu")
        a = a.view(np.uint8).astype(np.float32)  # PyTorch prints each packed byte's value
    opts = PRINT_OPTS
    summarize = a.size > opts.threshold
    kept, cut = _kept_indices(a.shape, summarize, opts.edgeitems)
    if any(cut):
        # take the printed block on the device, so only it is copied to the host
        block = _host(a[np.ix_(*kept)] if type(a) is np.ndarray else a[_ix(a, kept)])
    else:
        block = _host(a)
    kind = block.dtype.kind
    if kind == "c":
        block = block.astype(np.complex128)
        fmt = _ElementFormat(_Formatter(block.real, True), _Formatter(block.imag, True))
    elif kind == "f" or block.dtype == _dt.bfloat16.np or block.dtype in _dt._FLOAT8_NP:
        e8m0 = block.dtype == _dt.float8_e8m0fnu.np
        if kind != "f":
            block = block.astype(np.float32)  # exact; ml_dtypes casts reliably to float32
        block = block.astype(np.float64)
        # float8_e8m0fnu has no zero: PyTorch's layout counts its smallest value, 2**-127
        # (what zero converts to), as zero
        stats = np.where(block == 2.0 ** -127, 0.0, block) if e8m0 else block
        fmt = _ElementFormat(_Formatter(stats, True))
    else:
        fmt = _ElementFormat(_Formatter(block, False))
    if block.ndim == 0:
        return fmt(block.item())
    return _block_str(block, indent, cut, fmt)


#: PyTorch's private name (``torch._tensor_str._tensor_str``, which libraries import)
_tensor_str = tensor_str


def _ix(a, kept):
    """``np.ix_`` for a device array: the same open mesh built with its own namespace."""
    xp = backends_by_type[type(a)].xp
    return xp.ix_(*[xp.asarray(k) for k in kept])


# ------------------------------------------------------------------------------------------------
# repr


def _add_suffixes(text, suffixes, indent):
    """Append ``, suffix`` items and the closing parenthesis, wrapping at ``linewidth``."""
    parts = [text]
    # PyTorch counts the last line's length two columns long; wrapping depends on it
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _grad_fn_name(t):
    try:
        node = t.grad_fn
    except RuntimeError:
        # reading grad_fn may rebase a view's history and fail; PyTorch prints this then
        return "Invalid"
    if node is None:
        return None
    name = node.name() if hasattr(node, "name") else type(node).__name__
    return name.rsplit("::", 1)[-1]


def _is_plain(t):
    cls = type(t)
    # Parameter prints as a plain tensor (nn wraps it in "Parameter containing:"); the core
    # cannot import nn, so it is recognised by name (and module: ember's, or torch's under the
    # alias, NOTE [ Class names under the alias ])
    return cls is Tensor or (cls.__name__ == "Parameter" and
                             cls.__module__ in ("ember.nn.parameter", "torch.nn.parameter"))


def tensor_repr(t, tensor_contents=None) -> str:
    """``repr(t)``. ``tensor_contents`` replaces the data part when given (as in PyTorch)."""
    prefix = "tensor(" if _is_plain(t) else type(t).__name__ + "("
    indent = len(prefix)
    suffixes = []
    a = t._data
    dtype = _dt.from_np[a.dtype]

    device = t.device
    if device.type != "cpu":
        suffixes.append(f"device='{device}'")

    if device.type == "meta":
        # no values to show (NOTE [ Meta device ] in ember/backends/meta.py)
        suffixes.append(f"size={tuple(a.shape)}")
        if dtype is not _dt.get_default_dtype():
            suffixes.append(f"dtype={dtype}")
        text = "..."
    elif a.size == 0:
        # Nothing shows the dtype of an empty tensor, so any non-default one is printed,
        # int64 included; the size too unless it is 1-D (as NumPy does).
        if a.ndim != 1:
            suffixes.append(f"size={tuple(a.shape)}")
        if dtype is not _dt.get_default_dtype():
            suffixes.append(f"dtype={dtype}")
        text = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(a.shape)}")
        if dtype not in (_dt.get_default_dtype(), _dt.default_complex(), _dt.int64, _dt.bool_):
            suffixes.append(f"dtype={dtype}")
        text = None if tensor_contents is not None else tensor_str(t, indent)
    if tensor_contents is not None:
        text = tensor_contents

    name = _grad_fn_name(t)
    if name is not None:
        suffixes.append(f"grad_fn=<{name}>")
    elif t._rg:
        suffixes.append("requires_grad=True")

    tangent = _tangent_of(t)
    if tangent is not None:
        suffixes.append(f"tangent={tangent}")

    return _add_suffixes(prefix + text, suffixes, indent)


def _tangent_of(t):
    """The forward-mode tangent riding on ``t`` (None when there is none or no dual level
    is active); read through the autograd package when it provides ``unpack_dual``."""
    try:
        tangent = t._tangent
    except AttributeError:
        return None
    if tangent is None:
        return None
    try:
        from ..autograd.forward_ad import unpack_dual
    except ImportError:
        return tangent if hasattr(tangent, "_data") else None
    return unpack_dual(t).tangent
