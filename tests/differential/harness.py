"""Differential testing: run the same generated call in ember and in real PyTorch, compare.

NOTE [ Differential cases ]
A *case* is one call of one OpInfo entry (ember/testing/opinfos): the entry's own
``sample_inputs`` give the structure of the call (which arguments are tensors, which are
numbers, which keywords), and a seeded generator mutates it:

- the dtype: one the entry claims (3 in 4 cases) or one it does not (bool, integers,
  float16, bfloat16, complex), so "unsupported" paths are compared too;
- sizes: every size >= 2 in the sample is remapped consistently across all tensor
  arguments (so a matmul's inner sizes still agree) to 0, 1 or another size, and
  elementwise families sometimes get 0-d operands;
- values: NaN, +-inf, -0.0, dtype extremes and tiny numbers in floating tensors, integer
  extremes in integer tensors;
- layout: transposed and strided (``[..., ::2]``) views, built the same way on both sides;
- mixed operand dtypes (promotion);
- the form: function, ``Tensor`` method, in-place method, or ``out=``.

Tensors are kept as *specs* (NumPy data, dtype name, layout) and built freshly for each
library from the same bytes, so the inputs are identical (bfloat16 travels as float32, which
holds every bfloat16 exactly).

A case compares: raised-or-not and the exception's builtin class (torch's own classes such
as ``LinAlgError`` reduce to the builtin they derive from); result structure (tuple length,
named-tuple fields, Python scalar types); dtype; shape; values with dtype-aware tolerances
(NaN equals NaN, infinities exactly); ``requires_grad`` of every output. *Gradient* cases
(float64 / complex128, differentiable entries) also compare ``autograd.grad`` of
``sum(out * w)`` for a fixed weight ``w`` with respect to every floating input, None-ness
included.

Torch crashing (an internal assert, a time-out in torch) is recorded as ``torch_crash`` and
not counted; so is a mismatch where torch's own answer is known to be wrong (``TORCH_WRONG``,
each verified by hand), as ``torch_wrong``. Every mismatch carries a one-line repro that runs
with ``T = ember`` and ``T = torch``.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import pkgutil
import warnings
import zlib

import numpy as np

import ember
from ember._core import dtype as _dt
from ember.testing import _opinfo

#: every dtype a case may use
DTYPES = tuple(d.name for d in _opinfo.ALL)
FLOATING = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
INTEGER = ("uint8", "int8", "int16", "int32", "int64")

#: mismatch kinds that count, most severe first
KINDS = (
    "values", "values_nonfinite", "grad_values", "grad_none", "grad_raises", "dtype", "shape",
    "structure", "requires_grad", "ember_raises", "ember_no_raise", "exception_type",
    "ember_timeout", "missing_form", "grad_values_nonfinite", "grad_dtype", "grad_shape",
)
#: recorded, never counted
NOT_COUNTED = ("torch_crash", "torch_grad_raises", "harness_error", "torch_wrong",
               "documented")

#: (rtol, atol) by result dtype; atol is scaled by the largest finite |expected| (>= 1)
TOL = {
    "float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 8e-3), "float32": (1e-4, 1e-5),
    "float64": (1e-7, 1e-7), "complex64": (1e-4, 1e-5), "complex128": (1e-7, 1e-7),
}
GRAD_TOL = (1e-6, 1e-6)


class CaseTimeout(BaseException):
    """Raised by the long runner's alarm; a BaseException so ops' ``except`` can't eat it."""


class Skip(Exception):
    """The case can't be built (a generator failed, an argument has no torch twin)."""


# ------------------------------------------------------------------------------------------------
# the op table


@dataclasses.dataclass
class Entry:
    family: str  # the opinfos module: arithmetic, pointwise, reduction, shape, ...
    info: _opinfo.OpInfo

    @property
    def id(self):
        return self.info.id


_DB = None


def load_db():
    """Every OpInfo entry that has a torch counterpart, with its family."""
    global _DB
    if _DB is None:
        from ember.testing import opinfos

        db = []
        for m in sorted(pkgutil.iter_modules(opinfos.__path__), key=lambda m: m.name):
            mod = importlib.import_module(f"{opinfos.__name__}.{m.name}")
            for info in getattr(mod, "op_db", []):
                if info.torch_op is not None:
                    db.append(Entry(m.name, info))
        _DB = db
    return _DB


def entry(op_id):
    for e in load_db():
        if e.id == op_id:
            return e
    raise KeyError(op_id)


# ------------------------------------------------------------------------------------------------
# specs: library-neutral arguments


@dataclasses.dataclass
class TensorSpec:
    data: np.ndarray  # the logical values; bfloat16 as float32
    dtype: str
    layout: str = "contig"  # "contig", "T" (transposed view), "step" ([..., ::2] view)
    requires_grad: bool = False

    @property
    def shape(self):
        return self.data.shape


@dataclasses.dataclass(frozen=True)
class Named:
    """An object both libraries spell ``T.<name>`` (dtypes, memory formats, layouts)."""

    name: str


def _np_dtype(name):
    return np.float32 if name == "bfloat16" else _dt.lookup(name).np


def _round(arr, dtype):
    """``arr`` rounded to ``dtype``, in the spec's storage dtype."""
    if dtype == "bfloat16":
        with np.errstate(all="ignore"):
            return np.asarray(arr, np.float32).astype(_dt.bfloat16.np).astype(np.float32)
    return np.asarray(arr).astype(_np_dtype(dtype))


def to_spec(x):
    """An argument tree of ember objects as specs."""
    if isinstance(x, ember.Tensor):
        x = x.detach()
        if x.is_conj():
            x = x.resolve_conj()
        if x.is_neg():
            x = x.resolve_neg()
        a = x.numpy()
        a = a.astype(np.float32) if x.dtype.name == "bfloat16" else a.copy()
        return TensorSpec(a, x.dtype.name)
    if isinstance(x, _dt.dtype):
        return Named(x.name)
    if isinstance(x, ember.Size):
        return tuple(x)
    if isinstance(x, list):
        return [to_spec(y) for y in x]
    if isinstance(x, tuple):
        return tuple(to_spec(y) for y in x)
    if isinstance(x, dict):
        return {k: to_spec(v) for k, v in x.items()}
    if isinstance(x, (bool, int, float, complex, str, slice, type(None), type(Ellipsis))):
        return x
    if type(x).__module__.startswith("ember"):
        name = str(x).split(".")[-1]
        if getattr(ember, name, None) is x:
            return Named(name)
    raise Skip(f"argument {x!r} has no torch counterpart")


def build(spec, T):
    """The spec tree as objects of library ``T`` (ember or torch)."""
    if isinstance(spec, TensorSpec):
        return _build_tensor(spec, T)
    if isinstance(spec, Named):
        return getattr(T, spec.name)
    if isinstance(spec, list):
        return [build(y, T) for y in spec]
    if isinstance(spec, tuple):
        return tuple(build(y, T) for y in spec)
    if isinstance(spec, dict):
        return {k: build(v, T) for k, v in spec.items()}
    return spec


def _base(s):
    """The contiguous array a spec's view is taken from."""
    if s.layout == "T":
        return np.ascontiguousarray(np.swapaxes(s.data, -1, -2))
    if s.layout == "step":
        base = np.zeros(s.data.shape[:-1] + (2 * s.data.shape[-1],), s.data.dtype)
        base[..., ::2] = s.data
        return base
    return np.ascontiguousarray(s.data)


def _build_tensor(s, T):
    # copy=True: a tensor of its own storage, resizable as users' tensors are (a from_numpy
    # storage is not, and torch then refuses to grow an out= tensor)
    base = _base(s)
    if base.size:
        t = T.from_numpy(base).to(getattr(T, s.dtype), copy=True)
    else:
        # an empty one as users make it (and as the repro prints it): torch.from_numpy keeps
        # NumPy's zero strides of an empty array, and .to(copy=True) keeps them, so stride
        # checks (view(dtype), view_as_complex) saw 0 where torch.empty gives 1
        t = T.empty(base.shape, dtype=getattr(T, s.dtype))
    if s.requires_grad:
        t.requires_grad_(True)
    if s.layout == "T":
        t = t.transpose(-1, -2)
    elif s.layout == "step":
        t = t[..., ::2]
    return t


def _tensors(spec):
    if isinstance(spec, TensorSpec):
        yield spec
    elif isinstance(spec, (list, tuple)):
        for y in spec:
            yield from _tensors(y)
    elif isinstance(spec, dict):
        for y in spec.values():
            yield from _tensors(y)


# ------------------------------------------------------------------------------------------------
# generation


@dataclasses.dataclass
class Case:
    entry: Entry
    seed: int
    dtype: str
    form: str  # "function", "method", "inplace", "out"
    grad: bool
    args: tuple
    kwargs: dict
    tags: list
    out: object = None  # the out= spec, filled in when the case runs

    @property
    def op_id(self):
        return self.entry.id


def _random_values(shape, dtype, rng, lo=-9.0, hi=9.0):
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype in INTEGER:
        info = np.iinfo(_np_dtype(dtype))
        lo, hi = max(int(math.floor(lo)), info.min), min(int(math.ceil(hi)), info.max)
        return rng.integers(lo, max(hi, lo) + 1, size=shape).astype(_np_dtype(dtype))
    if dtype in COMPLEX:
        v = rng.uniform(lo, hi, size=shape) + 1j * rng.uniform(lo, hi, size=shape)
        return v.astype(_np_dtype(dtype))
    return _round(rng.uniform(lo, hi, size=shape), dtype)


def _range(data):
    """The value range of existing data, so regenerated data stays in the op's domain."""
    a = data.real if data.dtype.kind == "c" else data
    a = a[np.isfinite(a)] if a.dtype.kind == "f" else a
    if a.size == 0 or a.dtype == bool:
        return -9.0, 9.0
    lo, hi = float(a.min()), float(a.max())
    return (lo, hi) if lo < hi else (lo - 1, hi + 1)


def _remap_sizes(args, kwargs, rng, scalar=False):
    specs = list(_tensors((args, kwargs)))
    sizes = sorted({n for s in specs for n in s.shape if n >= 2})
    new = {n: int(rng.choice([0, 1, 1, 2, 3, 4, 6])) for n in sizes}
    changed = False
    for s in specs:
        shape = () if scalar else tuple(new.get(n, n) for n in s.shape)
        if shape != s.shape:
            lo, hi = _range(s.data)
            s.data = _random_values(shape, s.dtype, rng, lo, hi)
            changed = True
    return changed


def _specials(dtype):
    if dtype in FLOATING or dtype in COMPLEX:
        real = "float32" if dtype == "complex64" else "float64" if dtype == "complex128" \
            else dtype
        fi = ember.finfo(getattr(ember, real))
        vals = [math.nan, math.inf, -math.inf, -0.0, 0.0, fi.max, fi.min, fi.tiny, 1.0, -1.0,
                0.5]
        if dtype in COMPLEX:
            vals += [complex(math.nan, 1), complex(1, math.inf), complex(0, -0.0), 1j]
        return vals
    if dtype in INTEGER:
        ii = np.iinfo(_np_dtype(dtype))
        return [int(ii.min), int(ii.max), 0, 1] + ([-1] if ii.min < 0 else [])
    return [True, False]


def _inject_specials(s, rng):
    if s.data.size == 0 or s.dtype == "bool":
        return False
    vals = _specials(s.dtype)
    data = s.data.copy().reshape(-1)
    mask = rng.random(data.size) < 0.4
    mask[rng.integers(data.size)] = True
    for i in np.flatnonzero(mask):
        v = vals[rng.integers(len(vals))]
        if s.dtype not in COMPLEX and isinstance(v, complex):
            v = v.real
        data[i] = v
    s.data = _round(data.reshape(s.data.shape), s.dtype)
    return True


def _recast(s, dtype):
    a = s.data
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dtype not in COMPLEX and a.dtype.kind == "c":
            a = a.real
        if dtype == "bool":
            a = a != 0
        elif dtype in INTEGER:
            ii = np.iinfo(_np_dtype(dtype))
            a = np.clip(np.nan_to_num(a.astype(np.float64), nan=0.0), ii.min, ii.max)
            a = np.trunc(a)
        s.data = _round(a, dtype)
    s.dtype = dtype


def _forms(info, grad):
    forms = ["function", "function"]
    if info.method:
        forms.append("method")
    if info.inplace and not grad:
        forms.append("inplace")
    if info.supports_out and not grad:
        forms.append("out")
    return forms


def make_case(ent, seed, specials=True):
    """The case ``seed`` of entry ``ent`` (deterministic), or raise Skip. ``specials=False``
    keeps NaN / inf / extremes out (for ops known to hang on them)."""
    info = ent.info
    rng = np.random.default_rng(seed)
    grad_dtypes = [d.name for d in info.grad_dtypes if d in info.dtypes]
    grad = (info.differentiable and not info.nondeterministic and bool(grad_dtypes)
            and rng.random() < 0.3)
    claimed = [d.name for d in info.dtypes] or list(DTYPES)
    if grad:
        dtype = "float64" if "float64" in grad_dtypes and rng.random() < 0.8 else \
            grad_dtypes[rng.integers(len(grad_dtypes))]
    else:
        others = [d for d in DTYPES if d not in claimed]
        pool = claimed if rng.random() < 0.75 or not others else others
        dtype = pool[rng.integers(len(pool))]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            samples = list(info.sample_inputs(_dt.lookup(dtype), np.random.default_rng(seed)))
        if not samples:
            raise Skip("no samples")
        s = samples[rng.integers(len(samples))]
        args = to_spec(s.all_args())
        kwargs = to_spec(s.kwargs)
    except Skip:
        raise
    except Exception as exc:  # a generator that can't make this dtype
        raise Skip(f"sample_inputs failed: {type(exc).__name__}: {exc}") from None
    tags = [s.name or "sample"]
    specs = list(_tensors((args, kwargs)))
    elementwise = ent.family in ("pointwise", "arithmetic")
    if specs and rng.random() < 0.3:
        if _remap_sizes(args, kwargs, rng, scalar=elementwise and rng.random() < 0.25):
            tags.append("resized")
    if not grad and len(specs) > 1 and rng.random() < 0.12:
        s2 = specs[1 + rng.integers(len(specs) - 1)]
        _recast(s2, DTYPES[rng.integers(len(DTYPES))])
        tags.append("mixed_dtype")
    if rng.random() < (0.1 if grad else 0.3) and specials:
        hit = False
        for s in specs:
            if (s.dtype not in INTEGER or rng.random() < 0.3) and _inject_specials(s, rng):
                hit = True
        if hit:
            tags.append("specials")
    for s in specs:
        if s.data.ndim >= 1 and rng.random() < 0.3:
            s.layout = "T" if s.data.ndim >= 2 and rng.random() < 0.5 else "step"
            tags.append("noncontig")
    forms = _forms(info, grad)
    form = forms[rng.integers(len(forms))]
    if form != "function" and not (args and isinstance(args[0], TensorSpec)):
        form = "function"
    if grad:
        for s in specs:
            if s.dtype in ("float64", "complex128"):
                s.requires_grad = True
    return Case(ent, seed, dtype, form, grad, args, kwargs, tags)


def case_seed(op_id, i):
    """The seed of the CI sample's case ``i`` of ``op_id``."""
    return zlib.crc32(op_id.encode()) * 4096 + i


# ------------------------------------------------------------------------------------------------
# running


@dataclasses.dataclass
class Outcome:
    case: Case
    mismatches: list  # [(kind, detail)]
    notes: list  # [(kind, detail)] recorded, not counted

    @property
    def kinds(self):
        return sorted({k for k, _ in self.mismatches})


def _method_name(info):
    return info.name.split(".")[-1]


def _callable(case, T, is_torch):
    info = case.entry.info
    if case.form == "function":
        fn = info.get_torch_op(T) if is_torch else info.get_op()
        if fn is None:
            raise Skip("torch lacks the op")
        return fn
    suffix = "_" if case.form == "inplace" else ""
    name = _method_name(info) + suffix
    if is_torch and not hasattr(T.Tensor, name):
        raise Skip(f"torch has no Tensor.{name}")
    return None


def _invoke(case, T, is_torch, out_spec=None):
    """Build the arguments in ``T`` and call; returns (result, args) or raises."""
    info = case.entry.info
    args = build(case.args, T)
    kwargs = build(case.kwargs, T)
    if case.form in ("method", "inplace"):
        name = _method_name(info) + ("_" if case.form == "inplace" else "")
        meth = getattr(args[0], name, None)
        if meth is None:
            raise _Missing(f"Tensor.{name}")
        r = meth(*args[1:], **kwargs)
        if case.form == "inplace":
            r = (r, args[0], r is args[0])
        return r, args
    fn = info.get_torch_op(T) if is_torch else info.get_op()
    if case.form == "out":
        out = build(out_spec, T)
        r = fn(*args, **kwargs, out=out)
        # torch's complex left=False solves (linalg.solve/solve_ex/lu_solve) hand back the
        # out tensor with its conjugate bit set; the OpInfo's torch wrapper resolves that to
        # a copy, so there an out tensor marked conjugate counts as the one returned
        same = (lambda a, b: a is b or (is_torch and b.is_conj()))
        return (r, out, same(r, out) if not isinstance(out, tuple) else
                all(same(a, b) for a, b in zip(r, out))), args
    return fn(*args, **kwargs), args


class _Missing(Exception):
    pass


def _is_torch_crash(exc):
    msg = str(exc)
    # "MKL FFT error": oneMKL refuses a valid call (an FFT over an empty batch, which has
    # an empty result), a failure of torch's CPU FFT backend rather than a check of its own
    return "INTERNAL ASSERT" in msg or "report a bug to PyTorch" in msg or \
        msg.startswith("MKL FFT error")


def _builtin_class(exc):
    for k in type(exc).__mro__:
        if k.__module__ == "builtins":
            return k
    return Exception


def _out_spec(result, dtype):
    """Empty out= tensors shaped like torch's function-form result."""
    import torch

    if isinstance(result, torch.Tensor):
        name = str(result.dtype).replace("torch.", "")
        return TensorSpec(np.zeros(tuple(result.shape), _np_dtype(name)), name)
    if isinstance(result, (tuple, list)) and result and all(
            isinstance(r, torch.Tensor) for r in result):
        return tuple(_out_spec(r, dtype) for r in result)
    return TensorSpec(np.zeros((0,), _np_dtype(dtype)), dtype)


def run_case(case, torch, alarm=None, phase=None):
    """Run ``case`` in ember and torch; the Outcome lists the mismatches.

    ``alarm(seconds)`` (optional) arms a time-out that raises CaseTimeout; ``phase(name)``
    (optional) is told "torch" / "ember" before each library runs, so a runner watching a
    process that dies knows whose call it was.
    """
    mismatches, notes = [], []
    info = case.entry.info
    arm = alarm or (lambda s: None)
    phase = phase or (lambda name: None)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if case.form == "out":
            try:
                tr, _ = _invoke(dataclasses.replace(case, form="function"), torch, True)
                case.out = _out_spec(tr, case.dtype)
            except Exception:
                case.out = TensorSpec(np.zeros((0,), _np_dtype(case.dtype)), case.dtype)
        # torch first: a torch crash skips the case
        t_res = t_exc = None
        phase("torch")
        try:
            arm(10)
            t_res, t_args = _invoke(case, torch, True, case.out)
        except CaseTimeout:
            notes.append(("torch_crash", "torch timed out"))
            return Outcome(case, mismatches, notes)
        except Exception as exc:
            if _is_torch_crash(exc):
                notes.append(("torch_crash", f"{type(exc).__name__}: {_short(exc)}"))
                return Outcome(case, mismatches, notes)
            t_exc = exc
        finally:
            arm(0)
        e_res = e_exc = None
        phase("ember")
        try:
            arm(5)
            e_res, e_args = _invoke(case, ember, False, case.out)
        except CaseTimeout:
            mismatches.append(("ember_timeout", "ember did not return within 5 s"))
            return Outcome(case, mismatches, notes)
        except _Missing as exc:
            if t_exc is None:
                mismatches.append(("missing_form", f"ember lacks {exc}"))
            return Outcome(case, mismatches, notes)
        except Exception as exc:
            e_exc = exc
        finally:
            arm(0)
        if t_exc is not None or e_exc is not None:
            if e_exc is None:
                mismatches.append(("ember_no_raise", f"torch raises {type(t_exc).__name__}: "
                                   f"{_short(t_exc)}"))
            elif t_exc is None:
                mismatches.append(("ember_raises", f"{type(e_exc).__name__}: {_short(e_exc)}"))
            elif not isinstance(e_exc, _builtin_class(t_exc)):
                mismatches.append(("exception_type", f"ember {type(e_exc).__name__} "
                                   f"({_short(e_exc)}), torch {type(t_exc).__name__} "
                                   f"({_short(t_exc)})"))
            return _finish(case, mismatches, notes)
        values = not info.nondeterministic
        phase("compare")
        try:
            _compare(e_res, t_res, "out", mismatches, torch, values, TOL)
            if case.grad and not mismatches and not _torch_wrong(case, "grad_values"):
                # (a gradient torch's kernel answers wrongly may be no answer at all: its
                # 2-d grid sampler's backward crashes on some NaN coordinates)
                _compare_grads(case, e_res, e_args, t_res, t_args, torch, mismatches, notes,
                               phase)
        except Exception as exc:  # the harness itself, or a result it can't read
            notes.append(("harness_error", f"{type(exc).__name__}: {_short(exc)}"))
    return _finish(case, mismatches, notes)


def _finish(case, mismatches, notes):
    """The case's outcome, with the mismatches where torch is known wrong moved to notes."""
    for m in [m for m in mismatches if _torch_wrong(case, m[0])]:
        mismatches.remove(m)
        notes.append(("torch_wrong", f"{m[0]}: {m[1]}"))
    for m in list(mismatches):
        why = _documented(case, m[0])
        if why:
            mismatches.remove(m)
            notes.append(("documented", f"{m[0]}: {why}: {m[1]}"))
    return Outcome(case, mismatches, notes)


# ------------------------------------------------------------------------------------------------
# cases where torch's answer is wrong (verified by hand; recorded as torch_wrong, not counted)


def _int_arg(case, i, name):
    v = case.args[i] if len(case.args) > i else case.kwargs.get(name)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _narrow_copy_to_end(case):
    # torch's narrow_copy backward slices [start, start + length), which is empty when a
    # negative start runs to the end (start + length == 0): the gradient comes back zero
    start, length = _int_arg(case, 2, "start"), _int_arg(case, 3, "length")
    return start is not None and length is not None and start < 0 and start + length == 0


def _always(case):
    # as_strided_scatter's input gradient in torch 2.13 is the complement of the right one:
    # ``as_strided_scatter(arange(4.), src, (2,), (1,))`` gives the input [1, 2, 0, 0] for
    # ``w = [1, 2, 3, 4]`` where positions 0, 1 are overwritten, so it must be [0, 0, 3, 4]
    # (``src``'s gradient is right)
    return True


def _strided_scatter_base(case):
    # as_strided_scatter places ``src`` by strides into a copy of the input; for a
    # non-dense input (a ``[..., ::2]`` view, whose copy is contiguous) torch's values are
    # neither that copy's nor the view storage's geometry (and its own backward asserts
    # ``self.is_contiguous()``), so they specify nothing
    x = case.args[0] if case.args else case.kwargs.get("input")
    return isinstance(x, TensorSpec) and x.layout == "step" and x.data.ndim > 0


def _ldexp_negative_int_exponent(case):
    # torch's ldexp backward computes 2 ** other in integer arithmetic, so a negative integer
    # exponent gives the input a zero gradient (d/dx x * 2**-k is 2**-k)
    other = case.args[1] if len(case.args) > 1 else case.kwargs.get("other")
    return (isinstance(other, TensorSpec) and other.dtype in INTEGER + ("bool",)
            and other.data.size and other.data.min() < 0)


def _group_norm_strided_params(case):
    # torch's CPU group norm kernel reads weight and bias as if contiguous
    return any(isinstance(a, TensorSpec) and a.layout != "contig" for a in case.args[1:3])


def _batch_norm_strided_weight(case):
    # torch's CPU batch norm backward reads a strided weight as if contiguous: with
    # ``w = wf[::2]`` the input's gradient uses wf[:3], not w (the forward and a contiguous
    # copy of w give ember's numbers); F.batch_norm takes weight fifth, the others second
    at = 3 if case.op_id == "nn.functional.batch_norm" else 1
    w = case.args[at] if len(case.args) > at else case.kwargs.get("weight")
    return isinstance(w, TensorSpec) and w.layout != "contig" and w.data.size > 1


def _grid_has_nan(case):
    # torch's CPU grid samplers turn a NaN coordinate into an integer index (undefined in
    # C++: INT64_MIN here), so which cells such a point reads, and its value, are arbitrary
    grid = case.args[1] if len(case.args) > 1 else case.kwargs.get("grid")
    return isinstance(grid, TensorSpec) and grid.data.dtype.kind in "fc" and bool(
        np.isnan(grid.data).any())


_NAN_GRID_KINDS = ("values", "values_nonfinite", "grad_values", "grad_values_nonfinite")


def _ctc_target_out_of_range(case):
    # torch's CPU CTC does not check target classes: one outside [0, C) reads whatever lies
    # beyond the log-probabilities, so its loss (or its lack of an error) specifies nothing
    lp = case.args[0] if case.args else case.kwargs.get("log_probs")
    tg = case.args[1] if len(case.args) > 1 else case.kwargs.get("targets")
    lens = case.args[3] if len(case.args) > 3 else case.kwargs.get("target_lengths")
    if not (isinstance(lp, TensorSpec) and isinstance(tg, TensorSpec) and lp.data.ndim):
        return False
    lens = lens.data if isinstance(lens, TensorSpec) else lens
    with np.errstate(all="ignore"):
        t = np.real(tg.data).astype(np.float64)
        lens = np.asarray(lens).reshape(-1).astype(np.int64)
    if t.ndim == 2:  # padded: row b uses its first lens[b] classes
        used = [t[b, :max(int(k), 0)] for b, k in enumerate(lens[:len(t)])]
        t = np.concatenate(used) if used else t.reshape(-1)
    elif t.ndim == 1:  # concatenated
        t = t[:max(int(lens.clip(0).sum()), 0)]
    # (a NaN class converts to an arbitrary integer)
    return bool(t.size) and bool((~((t >= 0) & (t < lp.data.shape[-1]))).any())


def _ctc_strided_concatenated_targets(case):
    # torch's CPU CTC finds sequence b of 1-d (concatenated) targets at element offset
    # sum(target_lengths[:b]) but steps through it by the tensor's stride: a ``[::2]`` view
    # gives every sequence after the first the classes of another place (torch reads
    # ``[1, 0, 1, 0, 0, 0][::2]`` with lengths [2, 1] as [1, 1] and [1], not [0])
    tg = case.args[1] if len(case.args) > 1 else case.kwargs.get("targets")
    lp = case.args[0] if case.args else case.kwargs.get("log_probs")
    return (isinstance(tg, TensorSpec) and tg.data.ndim == 1 and tg.layout == "step"
            and isinstance(lp, TensorSpec) and lp.data.ndim == 3 and lp.data.shape[1] > 1)


def _ctc_unspecified(case):
    return _ctc_target_out_of_range(case) or _ctc_strided_concatenated_targets(case)


def _transposed_operand(case):
    # these ops flatten an operand with ``view`` inside torch (kron's result reshape, conv_tbc's
    # weight, take_along_dim without dim, isin's test elements), so a transposed operand makes
    # torch raise "view size is not compatible" where the op is well defined
    def walk(x):
        if isinstance(x, TensorSpec):
            yield x
        elif isinstance(x, (list, tuple)):
            for y in x:
                yield from walk(y)
    return any(t.layout == "T" and t.data.ndim >= 2 and t.data.size > 1
               for t in walk(list(case.args) + list(case.kwargs.values())))


def _ldl_pivots_run_past(case):
    # pivots no ldl_factor gives (a 2x2 block starting on the last row): LAPACK's *sytrs
    # reads and writes outside the matrix in torch, which corrupts its heap (the process
    # aborts later: "corrupted size vs. prev_size"); ember answers NaN
    from ember._ops.linalg_extra import _blocks_fit

    piv = case.args[1] if len(case.args) > 1 else case.kwargs.get("pivots")
    if not isinstance(piv, TensorSpec) or piv.data.ndim < 1 or not piv.data.size:
        return False
    rows = piv.data.reshape(-1, piv.data.shape[-1])
    n = rows.shape[-1]
    return any(not _blocks_fit(r) or (abs(r) > n).any() or (r == 0).any() for r in rows)


#: (a class past the end makes torch's backward write outside its gradient: the heap
#: corruption may abort the process later, in ember's phase)
_CTC_KINDS = ("values", "values_nonfinite", "grad_values", "grad_values_nonfinite",
              "ember_raises", "ember_timeout")


def _half_matrix_exp(case):
    # torch's CPU matrix_exp runs its Taylor/Pade polynomial in float16/bfloat16 itself, and
    # the result is far off: [[0.086, 0.149], [0.087, 0.070]] in bfloat16 gives inf everywhere
    # (exact: [[1.10, 0.16], [0.10, 1.08]]), and most 3x3 matrices of norm ~10 give inf or NaN
    # (ember computes in float32 and rounds once)
    x = case.args[0] if case.args else case.kwargs.get("input", case.kwargs.get("A"))
    return isinstance(x, TensorSpec) and x.dtype in ("float16", "bfloat16") and x.data.size

def _polynomial_of_nan(case):
    # torch's CPU U/W/Legendre/Laguerre polynomials (and the shifted U/W) at x = NaN with
    # n >= 2 return an uninitialised double (6.95e-310, 4e-323, 0.0: whatever the stack
    # held) where the recurrence never runs; ember gives NaN, as T and H do in torch
    x = case.args[0] if case.args else case.kwargs.get("input")
    return isinstance(x, TensorSpec) and x.data.dtype.kind == "f" and bool(
        np.isnan(x.data).any())


def _gelu_vectorized_extreme(case):
    # torch's vectorized float32 (and bfloat16/float16, computed in float32) exact GELU
    # gives NaN at +inf and inf for finite x above half the largest float (its scalar loop,
    # a tensor of one element, gives inf and x): gelu(inf) = inf and gelu(x) ~ x there,
    # ember's answers for every length
    x = case.args[0] if case.args else case.kwargs.get("input")
    if not (isinstance(x, TensorSpec) and x.dtype in ("float32", "bfloat16", "float16")
            and x.data.size and case.kwargs.get("approximate", "none") == "none"):
        return False
    with np.errstate(invalid="ignore"):
        return bool((x.data > np.finfo(np.float32).max / 2).any())


def _block_diag_empty_vector(case):
    # torch's block_diag places an empty 1-D input as a row of zeros (a (1, 0) block) but its
    # backward gives that block no row, so every later input reads its gradient one row up:
    # block_diag([[a]], empty(0), [b]) is [[a, 0], [0, 0], [0, b]], yet b's gradient is the
    # cotangent at (1, 1), not (2, 1) (ember's is the latter)
    ts = [a for a in case.args if isinstance(a, TensorSpec)]
    return any(t.data.ndim == 1 and t.data.size == 0 for t in ts[:-1])


def _scatter_prod_src_beyond_index(case):
    # torch's scatter_reduce "prod" backward divides the result by every element of src,
    # also those past the index's extent that the forward never read, so they get nonzero
    # gradients (scatter_reduce(x, 1, [[1]], [[a, b]], "prod", include_self=False): b's
    # gradient is g * a / b, where it is 0 in ember; "sum" raises on the shape instead)
    idx, src = (case.args[2], case.args[3]) if len(case.args) > 3 else (None, None)
    return isinstance(idx, TensorSpec) and isinstance(src, TensorSpec) and \
        idx.data.shape != src.data.shape


def _igamma_float_overflow(case):
    # torch's float32 igamma/igammac (bfloat16 and float16 compute in float32) overflow inside
    # for a near the largest float: igamma(3.4e38, 4.0) is NaN there, 0 in its own float64
    # (and 0 exactly: the mass of Gamma(a) lies near a), ember's answer in every dtype
    args = list(case.args) + [case.kwargs.get("input"), case.kwargs.get("self")]
    a = next((x for x in args if isinstance(x, TensorSpec)), None)
    if not (isinstance(a, TensorSpec) and a.dtype in ("float32", "bfloat16", "float16")):
        return False
    with np.errstate(invalid="ignore"):
        return bool((np.abs(a.data) > 1e37).any())


_IGAMMA_OPS = ("igamma", "igammac", "special.gammainc", "special.gammaincc")


_NAN_POLYNOMIALS = ("chebyshev_polynomial_u", "chebyshev_polynomial_w",
                    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_w",
                    "legendre_polynomial_p", "laguerre_polynomial_l")


#: mpmath's function for ops whose torch CPU kernels are less accurate than SciPy's
_MP_SPECIAL = {
    "bessel_j0": lambda mp, x: mp.besselj(0, x), "bessel_j1": lambda mp, x: mp.besselj(1, x),
    "bessel_y0": lambda mp, x: mp.bessely(0, x), "bessel_y1": lambda mp, x: mp.bessely(1, x),
    "airy_ai": lambda mp, x: mp.airyai(x),
}


def _torch_less_accurate(case):
    # torch's float Bessel J0/J1/Y0/Y1 beyond x ~ 4 (its asymptotic branch) are off by up to
    # 5e-3 relative in float64 (y1(5.0318): torch 0.1370645, mpmath 0.1370654), and Airy Ai
    # for x in about [-4.1, -2.1] by up to 9e-3 (and in float32 at -32768: -0.034994 against
    # -0.034531); SciPy (ember) stays within 1e-9. A case is torch's error when, against
    # mpmath at 30 digits, ember's every value is within the tolerance and torch's is not.
    name = case.op_id.rpartition(".")[2]
    x = case.args[0] if case.args else case.kwargs.get("input")
    if name not in _MP_SPECIAL or not isinstance(x, TensorSpec) or not x.data.size:
        return False
    import mpmath
    import torch

    import ember

    e = getattr(ember.special, name)(build(x, ember)).numpy().astype(np.float64)
    t = getattr(torch.special, name)(build(x, torch))
    rtol, atol = TOL.get(str(t.dtype).split(".")[-1], TOL["float64"])
    # the argument the op saw: an integer input is first rounded to the result's dtype
    # (int32 2147483647 is float32 2147483648, where J1 has another value)
    xs = np.asarray(build(x, torch).to(t.dtype).double().numpy(), np.float64)
    t = t.double().numpy()
    with np.errstate(invalid="ignore"):
        # far out (and inf, NaN): the two must agree, no evidence (up to 2**31, int32's
        # range, mpmath's 30 digits still pin the value down)
        fin = np.abs(xs) <= 2.2e9
    with mpmath.workdps(30):
        m = np.array([float(_MP_SPECIAL[name](mpmath, v)) for v in xs[fin]])
    return bool(not _bad(e[fin], m, rtol, atol).any() and _bad(t[fin], m, rtol, atol).any()
                and not _bad(e[~fin], t[~fin], rtol, atol).any())


def _addmv_empty_matrix(case):
    # addmv with an empty matrix (no rows or no columns) answers with the input's own shape
    # in torch 2.13 (``ones(1).addmv(empty(3, 0), empty(0))`` is ``[1.]``, under a warning that
    # an output "was resized"): the broadcast result is (rows,)
    x = case.args[0] if case.args else case.kwargs.get("input")
    mat = case.args[1] if len(case.args) > 1 else case.kwargs.get("mat")
    return (isinstance(x, TensorSpec) and isinstance(mat, TensorSpec) and mat.data.ndim == 2
            and 0 in mat.data.shape and x.data.shape != mat.data.shape[:1])


def _complex_factor_diagonal(case):
    # cholesky_inverse reads a Cholesky factor, whose diagonal is real; with an imaginary
    # part there, LAPACK's potri builds from parts its implementations read differently
    # (torch's MKL and SciPy's reference LAPACK disagree from 6x6 on), so nothing is specified
    x = case.args[0] if case.args else case.kwargs.get("input")
    if not (isinstance(x, TensorSpec) and x.data.dtype.kind == "c" and x.data.ndim >= 2):
        return False
    return bool(np.any(np.diagonal(x.data, axis1=-2, axis2=-1).imag != 0))


def _margin_mean_of_no_rows(case):
    # multi_margin_loss / multilabel_margin_loss with an empty batch under the mean or the
    # sum: torch's CPU kernel returns its output's uninitialised memory (4e-310, 4e27, -64
    # in int8, ... run to run), where the mean of no losses is NaN and their sum 0 (ember's)
    x = case.args[0] if case.args else case.kwargs.get("input")
    return (isinstance(x, TensorSpec) and x.data.ndim == 2 and x.data.shape[0] == 0
            and case.kwargs.get("reduction", "mean") in ("mean", "sum"))


#: (op id, mismatch kinds, predicate of the case)
TORCH_WRONG = (
    *((f"nn.functional.{n}", ("values", "values_nonfinite"), _margin_mean_of_no_rows)
      for n in ("multi_margin_loss", "multi_margin_loss.weighted", "multilabel_margin_loss")),
    ("addmv", ("shape",), _addmv_empty_matrix),
    ("cholesky_inverse", ("values", "values_nonfinite"), _complex_factor_diagonal),
    *((f"special.{n}", ("values",), _torch_less_accurate) for n in _MP_SPECIAL),
    ("grid_sampler", _NAN_GRID_KINDS, _grid_has_nan),
    ("grid_sampler_2d", _NAN_GRID_KINDS, _grid_has_nan),
    ("grid_sampler_3d", _NAN_GRID_KINDS, _grid_has_nan),
    ("narrow_copy", ("grad_values",), _narrow_copy_to_end),
    ("ldexp", ("grad_values",), _ldexp_negative_int_exponent),
    ("as_strided_scatter", ("values",), _strided_scatter_base),
    ("as_strided_scatter", ("grad_values",), _always),
    ("native_group_norm", ("values", "values_nonfinite", "grad_values"),
     _group_norm_strided_params),
    *((n, ("grad_values", "grad_values_nonfinite"), _batch_norm_strided_weight)
      for n in ("batch_norm", "native_batch_norm", "nn.functional.batch_norm")),
    ("ctc_loss", _CTC_KINDS, _ctc_unspecified),
    ("linalg.ldl_solve", ("ember_timeout", "values", "values_nonfinite", "ember_raises",
                          "ember_no_raise"), _ldl_pivots_run_past),
    ("kron", ("ember_no_raise",), _transposed_operand),
    ("conv_tbc", ("ember_no_raise",), _transposed_operand),
    ("take_along_dim", ("ember_no_raise",), _transposed_operand),
    ("isin", ("ember_no_raise",), _transposed_operand),
    ("nn.functional.ctc_loss", _CTC_KINDS, _ctc_unspecified),
    ("matrix_exp", _NAN_GRID_KINDS, _half_matrix_exp),
    ("linalg.matrix_exp", _NAN_GRID_KINDS, _half_matrix_exp),
    ("lstm", KINDS, lambda case: _lstm_malformed_params(case)),
    *((f"special.{n}", ("values", "values_nonfinite"), _polynomial_of_nan)
      for n in _NAN_POLYNOMIALS),
    ("nn.functional.gelu", ("values", "values_nonfinite"), _gelu_vectorized_extreme),
    *((n, ("values_nonfinite",), _igamma_float_overflow) for n in _IGAMMA_OPS),
    ("block_diag", ("grad_values", "grad_values_nonfinite"), _block_diag_empty_vector),
    ("scatter_reduce.prod", ("grad_values", "grad_values_nonfinite"),
     _scatter_prod_src_beyond_index),
)


def _lstm_malformed_params(case):
    # torch's CPU lstm takes its weights' shapes on trust: a weight whose rows are not four
    # gates of the hidden size, a bias of another length, or a parameter of another dtype
    # than the input is read past its end (or as other bytes), so torch's numbers (or its
    # lack of an error) specify nothing; ember checks the shapes and refuses
    x = case.args[0] if case.args else None
    hx = case.args[1] if len(case.args) > 1 else None
    params = case.args[2] if len(case.args) > 2 else None
    if not (isinstance(x, TensorSpec) and isinstance(hx, (list, tuple)) and len(hx) == 2
            and isinstance(params, (list, tuple)) and params
            and all(isinstance(t, TensorSpec) for t in list(hx) + list(params))):
        return False
    hidden, out = hx[1].data.shape[-1] if hx[1].data.ndim else 1, \
        hx[0].data.shape[-1] if hx[0].data.ndim else 1
    for p in params:
        shape = p.data.shape
        if p.dtype != x.dtype or not 1 <= len(shape) <= 2:
            return True
        if len(shape) == 1 and shape[0] != 4 * hidden:
            return True
        if len(shape) == 2 and shape[0] != 4 * hidden and not (
                out != hidden and shape == (out, hidden)):
            return True
    return False


def _torch_wrong(case, kind):
    return any(op == case.op_id and kind in kinds and pred(case)
               for op, kinds, pred in TORCH_WRONG)


# ------------------------------------------------------------------------------------------------
# documented differences: torch's answer is right by its own rules, but follows the internal
# order of a vendor kernel (MKL's BLAS and LAPACK, oneDNN's convolutions, MKL's FFT) that
# ember cannot know; recorded as ``documented``, not counted (NOTE [ Kernel-order differences ])

#: NOTE [ Kernel-order differences ]
#: Where an input holds inf or NaN, which outputs of a blocked product, factorisation or
#: transform come out inf and which NaN depends on the order in which the vendor kernel
#: combines the terms (inf - inf, 0 * inf): MKL's gemm/trsm blocking and its GEMV fast paths,
#: oneDNN's convolution tiling (torch's CPU convolutions and SDPA), MKL's DFT codelets, and
#: LAPACK's Householder and QR-iteration steps inside MKL. These orders differ between MKL's
#: code paths (chosen by CPU vendor and instruction set, see ``skip_unless_intel_avx512``),
#: so ember follows the ones it can measure and the rest is recorded here, narrowly: for the
#: ops below, only the inf-versus-NaN kinds, and only when an input holds inf or NaN.
KERNEL_ORDER_OPS = frozenset({
    # products (MKL gemm / gemv / batched gemm)
    "addbmm", "addmm", "addmv", "baddbmm", "bmm", "chain_matmul", "einsum", "inner", "matmul",
    "matmul.lowp", "mm", "mv", "tensordot", "linalg.multi_dot", "linalg.matrix_power",
    "matrix_power.int", "nn.functional.linear", "bilinear", "cdist",
    # LAPACK inside MKL
    "cholesky", "cholesky_inverse", "cholesky_solve", "det", "inverse", "logdet", "slogdet",
    "geqrf", "orgqr", "ormqr", "lu", "lu_solve", "lu_unpack", "triangular_solve",
    "linalg.cholesky", "linalg.cholesky_ex", "linalg.det", "linalg.eig", "linalg.eigh",
    "linalg.eigvals", "linalg.eigvalsh", "linalg.householder_product", "linalg.inv",
    "linalg.inv_ex", "linalg.lstsq", "linalg.lu", "linalg.lu.rectangular", "linalg.lu_factor",
    "linalg.lu_factor_ex", "linalg.lu_solve", "linalg.matrix_exp", "matrix_exp",
    "linalg.matrix_norm", "linalg.norm", "norm", "nuclear_norm", "linalg.matrix_rank",
    "linalg.pinv", "pinverse", "linalg.qr", "linalg.qr.complete", "linalg.slogdet",
    "linalg.solve", "linalg.solve_ex", "linalg.solve_triangular", "linalg.svd",
    "linalg.svd.full", "linalg.svdvals", "svd", "svd_lowrank", "pca_lowrank", "linalg.cond",
    "linalg.ldl_factor", "linalg.ldl_factor_ex", "linalg.ldl_solve", "linalg.tensorinv",
    "linalg.tensorsolve",
    # oneDNN convolutions, SDPA's blocked softmax-products, RNNs' gemms
    "convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "nn.functional.conv1d", "nn.functional.conv2d",
    "nn.functional.conv_transpose2d", "nn.functional.scaled_dot_product_attention",
    "gru", "gru_cell", "lstm", "lstm_cell", "rnn_relu", "rnn_relu_cell", "rnn_tanh",
    "rnn_tanh_cell",
    # sgn of an infinite complex number: torch's vectorised loop divides each part by |z|
    # (1 + inf j -> 0 + nan j), its scalar tail divides as complex numbers (nan + nan j),
    # so the answer depends on the element's position (ember divides as complex numbers)
    "sgn",
    # MKL's DFT
    "fft.fft", "fft.fft2", "fft.fftn", "fft.hfft", "fft.hfft2", "fft.hfftn", "fft.ifft",
    "fft.ifft2", "fft.ifftn", "fft.ihfft", "fft.ihfft2", "fft.ihfftn", "fft.irfft",
    "fft.irfft2", "fft.irfftn", "fft.rfft", "fft.rfft2", "fft.rfftn",
})
_NONFINITE_KINDS = ("values_nonfinite", "grad_values_nonfinite")
#: MKL's SVD (gesdd's QR iteration on the bidiagonal) on a matrix holding inf: whether it
#: stops with "failed to converge" (info > 0) or returns NaNs depends on where the infs sit
#: (the same positions give the same answer whatever the finite values; 2x2 and vectors
#: never raise) through MKL's own iteration; the reference LAPACK ember could replay loops
#: for minutes on the same input. ember returns NaNs promptly and never raises there.
#: MKL's gelsy (lstsq's default driver) scales an infinite matrix by 0 and pivots NaN column
#: norms in an order of its own: rank 0 with a zero solution or rank 1 with NaNs.
_SVD_ON_INF = frozenset({
    "svd", "linalg.svd", "linalg.svd.full", "linalg.svdvals", "linalg.pinv", "pinverse",
    "linalg.matrix_rank", "linalg.cond", "linalg.matrix_norm", "linalg.norm", "norm",
    "nuclear_norm", "svd_lowrank", "pca_lowrank",
})


#: NOTE [ Welford moments overflow ]
#: torch's CPU normalisation kernels (group_norm, layer_norm, instance_norm through batch
#: norm, var_mean/std_mean) accumulate mean and variance with vectorized Welford updates, in
#: lanes and chunks whose size follows the SIMD width. Where an input holds inf or NaN, or
#: values whose squares overflow (|x| above the square root of the dtype's largest value),
#: which outputs come out inf, NaN or a huge finite number depends on that chunking (inf -
#: inf in one lane, not in another). ember's moments are exact where they are finite; the
#: inf-versus-NaN kinds of these ops on such inputs are recorded, not counted.
WELFORD_OPS = frozenset({
    "group_norm", "native_group_norm", "nn.functional.group_norm", "native_layer_norm",
    "layer_norm", "nn.functional.layer_norm", "instance_norm", "nn.functional.instance_norm",
    "var_mean", "std_mean",
})


def _input_overflows_square(case):
    """Whether a floating input holds inf, NaN or a value whose square overflows."""
    for t in _tensors((case.args, case.kwargs)):
        d = t.data
        if d.dtype.kind in "fc" and d.size:
            real = d.real.dtype if d.dtype.kind == "c" else d.dtype
            # (float16 moments are float32 sums, as bfloat16's, which travel as float32)
            big = np.sqrt(np.finfo(np.float32 if real == np.float16 else real).max)
            with np.errstate(invalid="ignore"):
                if not (np.abs(d) < big).all():
                    return True
    return False


def _input_nonfinite(case):
    """Whether a floating or complex input tensor holds inf or NaN."""
    for t in _tensors((case.args, case.kwargs)):
        d = t.data
        if d.dtype.kind in "fc" and d.size:
            with np.errstate(invalid="ignore"):
                if not np.isfinite(d).all():
                    return True
    return False


def _input_infinite(case):
    """Whether a floating or complex input holds inf (and no NaN: NaN is refused by torch)."""
    inf = nan = False
    for t in _tensors((case.args, case.kwargs)):
        d = t.data
        if d.dtype.kind in "fc" and d.size:
            parts = (d.real, d.imag) if d.dtype.kind == "c" else (d,)
            inf = inf or any(bool(np.isinf(p).any()) for p in parts)
            nan = nan or any(bool(np.isnan(p).any()) for p in parts)
    return inf and not nan


def _svd_below_noise(case):
    """Whether a floating input holds a finite entry so large that values of order 1 lie
    below its SVD's noise floor (``eps * |A|`` > 1e3): a backward-stable SVD determines the
    small singular values only to that floor. float32 ``[[3.4e38, 0, ...], ...]``: MKL's
    sgesdd returns 0 for singular values that are 1.31 and 3.14 exactly (ember's)."""
    for t in _tensors((case.args, case.kwargs)):
        d = t.data
        if d.dtype.kind in "fc" and d.size:
            real = d.real.dtype if d.dtype.kind == "c" else d.dtype
            with np.errstate(invalid="ignore", over="ignore"):
                a = np.abs(d)
                if (a[np.isfinite(a)] * np.finfo(real).eps > 1e3).any():
                    return True
    return False


def _eigenvalues_cluster(case):
    """Whether the Hermitian part of ``linalg.eigh``'s input (the OpInfo wrapper decomposes
    ``(A + A^H) / 2`` and compares ``|V|``) has two eigenvalues closer than ``1e4 eps |A|``:
    an eigenvector basis of such a cluster is fixed only up to a rotation inside it (to
    ``eps |A| / gap``), so LAPACK builds (MKL's and OpenBLAS's ``syevd``) choose different
    bases. ``ones(3, 3)``: eigenvalue 0 twice, torch's and ember's vectors span the same
    plane with other coordinates."""
    a = case.args[0] if case.args else case.kwargs.get("input")
    if not (isinstance(a, TensorSpec) and a.data.ndim >= 2 and a.data.size
            and a.data.shape[-1] == a.data.shape[-2] and a.data.shape[-1] > 1):
        return False
    d = a.data.astype(np.complex128)
    with np.errstate(all="ignore"):
        h = (d + np.conj(np.swapaxes(d, -1, -2))) / 2
        if not np.isfinite(h).all():
            return False
        w = np.linalg.eigvalsh(h)
    eps = np.finfo(np.float64 if a.dtype in ("float64", "complex128") else np.float32).eps
    scale = np.abs(w).max(axis=-1, keepdims=True)
    return bool((np.diff(w, axis=-1) <= 1e4 * eps * scale).any())


#: NOTE [ Pivoting and reflectors on overflowing input ]
#: Bunch-Kaufman LDL (sytrf) picks its pivots by comparing magnitudes, and Householder QR
#: (geqrf) scales each column by its norm. Where an input holds inf or NaN, or entries whose
#: squares overflow, the comparisons meet NaN and the norms inf - inf, so which pivots, which
#: ``info`` and which (finite, inf or NaN) factors come out follow MKL's own sytrf / geqrf
#: (its idamax on NaN, its nrm2 scaling), not a rule: every value kind is recorded there.
PIVOT_OVERFLOW_OPS = frozenset({
    "linalg.ldl_factor", "linalg.ldl_factor_ex", "linalg.qr", "linalg.qr.complete", "geqrf",
})


def _documented(case, kind):
    """The reason a mismatch is a documented difference, or None."""
    if case.op_id in PIVOT_OVERFLOW_OPS and kind in (
            "values", "values_nonfinite", "ember_raises", "ember_no_raise") \
            and _input_overflows_square(case):
        return "MKL's pivoting/reflectors on overflowing input (NOTE [ Pivoting and " \
            "reflectors on overflowing input ])"
    if case.op_id == "linalg.eigh" and kind == "values" and _eigenvalues_cluster(case):
        return "eigenvectors of a repeated eigenvalue: any basis of its eigenspace " \
            "(LAPACK syevd's choice)"
    if case.op_id in _SVD_ON_INF and kind in ("values", "grad_values") \
            and _svd_below_noise(case):
        # the gradient (U V^H for the nuclear norm) holds the singular vectors of those
        # small values, which are as arbitrary as the values themselves
        return "small singular values below the SVD's noise floor eps * |A| (LAPACK scaling)"
    if kind in _NONFINITE_KINDS and case.op_id in KERNEL_ORDER_OPS and _input_nonfinite(case):
        return "inf-vs-NaN order of a vendor kernel (NOTE [ Kernel-order differences ])"
    if kind in _NONFINITE_KINDS and case.op_id in WELFORD_OPS and _input_overflows_square(case):
        return "inf-vs-NaN of torch's vectorized Welford moments (NOTE [ Welford moments " \
            "overflow ])"
    if case.op_id in _SVD_ON_INF and kind in ("ember_no_raise", "values", "values_nonfinite",
                                              "grad_values", "grad_values_nonfinite") \
            and _input_infinite(case):
        return "MKL's SVD/gelsy on an infinite matrix (NOTE [ Kernel-order differences ])"
    if case.op_id == "linalg.lstsq" and kind in ("values", "values_nonfinite") \
            and _input_infinite(case):
        return "MKL's gelsy on an infinite matrix (NOTE [ Kernel-order differences ])"
    return None


def _short(exc, n=160):
    msg = str(exc).strip().splitlines()
    msg = msg[0] if msg else ""
    return msg[:n] + ("..." if len(msg) > n else "")


def _as_np(t, is_torch):
    t = t.detach()
    if is_torch:
        t = t.resolve_conj().resolve_neg()
        if t.dtype.is_floating_point and t.element_size() == 2:
            t = t.float()
        return t.numpy(force=True)  # force: a ZeroTensor gradient materialises
    if t.is_conj():
        t = t.resolve_conj()
    a = t.numpy()
    return a.astype(np.float32) if t.dtype.name == "bfloat16" else a


def _bad(a, b, rtol, atol):
    """Mask of elements that differ: beyond ``atol' + rtol |b|`` (atol' = atol scaled by the
    largest finite |b|, at least 1), NaN against non-NaN, or unequal infinities."""
    if a.dtype.kind == "c" or b.dtype.kind == "c":
        a, b = a.astype(np.complex128), b.astype(np.complex128)
        return _bad(a.real, b.real, rtol, atol) | _bad(a.imag, b.imag, rtol, atol)
    a, b = a.astype(np.float64), b.astype(np.float64)
    finite = np.isfinite(b)
    scale = max(1.0, float(np.max(np.abs(b[finite])))) if finite.any() else 1.0
    with np.errstate(all="ignore"):
        near = np.abs(a - b) <= atol * scale + rtol * np.abs(b)
    same = (np.isnan(a) & np.isnan(b)) | (a == b)
    return ~(near | same)


def _close(a, b, rtol, atol):
    return not _bad(a, b, rtol, atol).any()


def _value_kind(a, b, bad):
    """``values``, or ``values_nonfinite`` when every differing element is NaN or infinite
    on one side (inf - inf and 0 * inf orderings: BLAS, FFT, complex arithmetic)."""
    with np.errstate(all="ignore"):
        nonfinite = ~np.isfinite(a.astype(np.complex128)) | ~np.isfinite(
            b.astype(np.complex128))
    return "values_nonfinite" if np.all(nonfinite[bad]) else "values"


def _first_diff(a, b, bad):
    try:
        i = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
        return f"at {i}: ember {a[i]!r}, torch {b[i]!r}"
    except Exception:
        return ""


def _compare(e, t, where, out, torch, values, tol):
    if isinstance(t, torch.Tensor):
        if not isinstance(e, ember.Tensor):
            out.append(("structure", f"{where}: ember {type(e).__name__}, torch Tensor"))
            return
        tdt = str(t.dtype).replace("torch.", "")
        if e.dtype.name != tdt:
            out.append(("dtype", f"{where}: ember {e.dtype.name}, torch {tdt}"))
            return
        if tuple(e.shape) != tuple(t.shape):
            out.append(("shape", f"{where}: ember {tuple(e.shape)}, torch {tuple(t.shape)}"))
            return
        if bool(e.requires_grad) != bool(t.requires_grad):
            out.append(("requires_grad", f"{where}: ember {e.requires_grad}, "
                        f"torch {t.requires_grad}"))
        if not values or t.layout != torch.strided:
            return
        a, b = _as_np(e, False), _as_np(t, True)
        bad = _bad(a, b, *tol[tdt]) if tdt in tol else (a != b)
        if bad.any():
            out.append((_value_kind(a, b, bad), f"{where} ({tdt}) {_first_diff(a, b, bad)}"))
        return
    if isinstance(t, (tuple, list)):
        if not isinstance(e, (tuple, list)) or len(e) != len(t):
            out.append(("structure", f"{where}: ember {_describe(e)}, torch {_describe(t)}"))
            return
        tf, ef = getattr(t, "_fields", None), getattr(e, "_fields", None)
        if tf is not None and tuple(tf) != tuple(ef or ()):
            out.append(("structure", f"{where}: fields {ef} vs torch {tf}"))
        for i, (x, y) in enumerate(zip(e, t)):
            _compare(x, y, f"{where}[{i}]", out, torch, values, tol)
        return
    if t is None or isinstance(t, (bool, int, float, complex)):
        if type(e) is not type(t) and not (isinstance(t, float) and isinstance(e, float)):
            if not (isinstance(t, int) and not isinstance(t, bool) and isinstance(e, int)
                    and not isinstance(e, bool)):
                out.append(("structure", f"{where}: ember {_describe(e)}, torch "
                            f"{_describe(t)}"))
                return
        if values and t is not None and not (e == t or (e != e and t != t)):
            if not (isinstance(t, (float, complex)) and
                    _close(np.asarray(e), np.asarray(t), *TOL["float64"])):
                out.append(("values", f"{where}: ember {e!r}, torch {t!r}"))
        return
    if isinstance(t, torch.dtype):
        if str(e).replace("ember.", "") != str(t).replace("torch.", ""):
            out.append(("values", f"{where}: ember {e}, torch {t}"))
        return
    if type(e).__name__ != type(t).__name__:
        out.append(("structure", f"{where}: ember {_describe(e)}, torch {_describe(t)}"))


def _describe(x):
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"Tensor{list(x.shape)}"
    if isinstance(x, (tuple, list)):
        return f"{type(x).__name__}[{len(x)}]"
    return type(x).__name__


def _flat(x):
    if isinstance(x, (tuple, list)):
        for y in x:
            yield from _flat(y)
    else:
        yield x


def _weight(T, o):
    w = (T.arange(o.numel(), dtype=T.float64) % 7 - 3) * 0.5
    return w.reshape(o.shape)


def _loss(T, outs):
    total = None
    for o in outs:
        p = o * _weight(T, o)
        term = p.real.sum() + 0.5 * p.imag.sum() if p.is_complex() else p.sum()
        total = term if total is None else total + term
    return total


def _grad_inputs(args, T):
    return [t for t in _flat(args) if isinstance(t, T.Tensor) and t.requires_grad]


def _grad_outputs(res, T):
    return [o for o in _flat(res) if isinstance(o, T.Tensor) and o.requires_grad]


def _compare_grads(case, e_res, e_args, t_res, t_args, torch, mismatches, notes,
                   phase=lambda name: None):
    t_out = _grad_outputs(t_res, torch)
    e_out = _grad_outputs(e_res, ember)
    t_in = _grad_inputs(t_args, torch)
    e_in = _grad_inputs(e_args, ember)
    if not t_out or not t_in or len(t_out) != len(e_out):
        return
    phase("torch_grad")
    try:
        tg = torch.autograd.grad(_loss(torch, t_out), t_in, allow_unused=True)
    except Exception as exc:
        notes.append(("torch_grad_raises", f"{type(exc).__name__}: {_short(exc)}"))
        return
    phase("ember_grad")
    try:
        eg = ember.autograd.grad(_loss(ember, e_out), e_in, allow_unused=True)
    except Exception as exc:
        mismatches.append(("grad_raises", f"{type(exc).__name__}: {_short(exc)}"))
        return
    for i, (a, b) in enumerate(zip(eg, tg)):
        if (a is None) != (b is None):
            mismatches.append(("grad_none", f"grad[{i}]: ember {_describe(a)}, torch "
                               f"{_describe(b)}"))
            continue
        if a is None:
            continue
        sub = []
        _compare(a.detach(), b.detach(), f"grad[{i}]", sub, torch, True,
                 {k: GRAD_TOL for k in TOL})
        for kind, detail in sub:
            kind = {"values": "grad_values", "values_nonfinite": "grad_values_nonfinite",
                    "dtype": "grad_dtype", "shape": "grad_shape"}.get(kind, kind)
            mismatches.append((kind, detail))


# ------------------------------------------------------------------------------------------------
# repros


def _r_float(v):
    if isinstance(v, complex):
        return f"complex({_r_float(v.real)}, {_r_float(v.imag)})"
    if isinstance(v, float):
        if math.isnan(v):
            return "float('nan')"
        if math.isinf(v):
            return "float('inf')" if v > 0 else "-float('inf')"
    return repr(v)


def _r_list(a):
    if a.ndim == 0:
        v = a.item()
        return _r_float(v) if not isinstance(v, bool) else repr(v)
    return "[" + ", ".join(_r_list(x) for x in a) + "]"


def _r_tensor(s):
    base = _base(s)
    if base.size == 0:
        core = f"T.empty({tuple(base.shape)}, dtype=T.{s.dtype})"
    else:
        core = f"T.tensor({_r_list(base)}, dtype=T.{s.dtype})"
    if s.requires_grad:
        core += ".requires_grad_()"
    if s.layout == "T":
        core += ".transpose(-1, -2)"
    elif s.layout == "step":
        core += "[..., ::2]"
    return core


def _r(x, names):
    if isinstance(x, TensorSpec):
        return names.get(id(x)) or _r_tensor(x)
    if isinstance(x, Named):
        return f"T.{x.name}"
    if isinstance(x, list):
        return "[" + ", ".join(_r(y, names) for y in x) + "]"
    if isinstance(x, tuple):
        inner = ", ".join(_r(y, names) for y in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_r(v, names)}" for k, v in x.items()) + "}"
    if isinstance(x, (float, complex)):
        return _r_float(x)
    if isinstance(x, slice):
        return f"slice({x.start!r}, {x.stop!r}, {x.step!r})"
    if x is Ellipsis:
        return "..."
    return repr(x)


def repro(case):
    """A one-line program that runs with ``T = ember`` and with ``T = torch``."""
    info = case.entry.info
    names = {}
    pre = []
    if case.grad:
        for i, s in enumerate(_tensors((case.args, case.kwargs))):
            if s.requires_grad:
                pre.append(f"a{i} = {_r_tensor(s)}")
                names[id(s)] = f"a{i}"
    args = [_r(a, names) for a in case.args]
    kwargs = [f"{k}={_r(v, names)}" for k, v in case.kwargs.items()]
    custom = info.op is not None  # torch_op wrappers only resolve lazy conj/neg bits
    if case.form in ("method", "inplace"):
        name = _method_name(info) + ("_" if case.form == "inplace" else "")
        call = f"{args[0]}.{name}({', '.join(args[1:] + kwargs)})"
    else:
        if case.form == "out" and case.out is not None:
            kwargs.append(f"out={_r(case.out, names)}")
        fn = f"<{info.id}>" if custom else f"T.{info.name}"
        call = f"{fn}({', '.join(args + kwargs)})"
    if not case.grad:
        return call
    return "; ".join(pre + [
        f"out = {call}",
        "outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) "
        "if o.requires_grad]",
        "L = sum(((o * ((T.arange(o.numel(), dtype=T.float64) % 7 - 3) * 0.5)"
        ".reshape(o.shape)).sum()) for o in outs)",
        f"print(T.autograd.grad(L, [{', '.join(names.values())}], allow_unused=True))",
    ])


def size(case):
    """How big a case's tensors are, for picking the smallest repro."""
    return sum(s.data.size for s in _tensors((case.args, case.kwargs)))
