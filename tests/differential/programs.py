"""Random programs beyond the OpInfo table: short statements run with ``T = ember`` and with
``T = torch``, compared by outcome.

NOTE [ Differential programs ]
The OpInfo cases (harness.py) call one op with arguments its samples shape; some ground they
reach thinly: type promotion across every dtype (uint16/32/64 included) with 0-dim tensors
and Python numbers in each form (function, method, operator, in-place, ``out=``); indexing
with mixed basic and advanced parts and ``__setitem__`` with broadcast values of other
dtypes; fill values at and past a dtype's range (``full``, ``fill_``, ``full_like``,
``new_full``); and ``repr`` of tensors of every dtype and scale. Each *program* here is a
few lines of source drawn from a seed, in which ``T`` is the library; it leaves its result
in ``out``. The same source runs with each library, so the source is its own repro. Several
more families live in their own modules: ``torch.nn`` modules from random constructor calls
(NOTE [ Differential module programs ], programs_modules.py), ``torch.distributions`` from
random parameters (NOTE [ Differential distribution programs ], programs_distributions.py),
sorting, searching, counting and scattering with ties, NaN and duplicate indices (NOTE
[ Differential sorting programs ], programs_sorting.py), and ``torch.func`` transforms and
forward-mode AD over random differentiable functions (NOTE [ Differential transform
programs ], programs_func.py), and dtype inference of the factories and casts at the edges
under other default dtypes (NOTE [ Differential creation programs ], programs_creation.py).

A program's outcome is the exception's builtin class (torch's own classes reduce to the
builtin they derive from) or the result: its dtype, shape and values (NaN equal to NaN), or
a string for ``repr``, or a tuple or list of such results, compared item by item.
Messages are compared too, but a different message is reported as kind ``message`` apart
from the counted kinds, since ember words a few errors its own way
where torch's words come from a different internal route (``x[True] = v`` of the wrong
shape is torch's copy_ expand message). Where torch has no CPU kernel for uint16/32/64
(NotImplementedError) and ember computes (or refuses for another reason, a zero divisor),
the case is recorded as ``documented``: ember's kernels cover those dtypes, torch 2.13's
only their promotion. So is a case where torch computes or refuses in complex32
(ComplexHalf), a dtype ember does not have.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

#: every dtype the programs use
DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
_SHELL = ("uint16", "uint32", "uint64")

#: mismatch kinds that count
KINDS = ("exception_type", "ember_raises", "ember_no_raise", "dtype", "shape", "values",
         "repr")
#: recorded, never counted
NOT_COUNTED = ("message", "documented", "torch_crash")


@dataclasses.dataclass
class Program:
    family: str
    seed: int
    source: str  # statements using ``T``; the result is left in ``out``


# ------------------------------------------------------------------------------------------------
# generators


def _tensor_src(rng, dtype, shape, lo=-4, hi=5, nonzero=False):
    """Source of a tensor of ``dtype`` and ``shape`` with small integer values (exact in every
    dtype; never 0 when ``nonzero``)."""
    n = int(np.prod(shape)) if shape else 1
    vals = rng.integers(lo, hi, size=n)
    if nonzero:
        vals[vals == 0] = 1
    if dtype == "bool":
        vals = vals > 0
    elif dtype.startswith("uint"):
        vals = np.abs(vals) + (1 if nonzero else 0)
    data = np.asarray(vals).reshape(shape).tolist() if shape else np.asarray(vals)[0].item()
    return f"T.tensor({data!r}, dtype=T.{dtype})"


_BINARY = ("add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod",
           "pow", "maximum", "minimum", "eq", "lt", "ge", "ne", "bitwise_and", "bitwise_or",
           "bitwise_xor", "atan2", "hypot", "logaddexp", "copysign", "fmax", "fmin", "xlogy",
           "float_power", "heaviside", "ldexp", "nextafter", "logical_and", "logical_xor")
_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floor_divide": "//",
              "remainder": "%", "pow": "**", "eq": "==", "lt": "<", "ge": ">=", "ne": "!=",
              "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


def _operand(rng, nonzero):
    r = rng.random()
    if r < 0.25:
        kind = rng.integers(4)
        return [repr(bool(rng.integers(2))), str(int(rng.integers(-3, 4)) or 2),
                repr(float(rng.choice([0.5, -1.5, 2.0, 3.25]))),
                repr(complex(float(rng.integers(-2, 3)), 1.0))][kind], True
    dtype = DTYPES[rng.integers(len(DTYPES))]
    shape = [(), (3,), (2, 3), (1, 3)][rng.integers(4)]
    return _tensor_src(rng, dtype, shape, nonzero=nonzero), False


def promotion(rng):
    """A binary op on two operands of random dtypes, 0-dim tensors and Python numbers among
    them, in one of the forms torch offers."""
    op = _BINARY[rng.integers(len(_BINARY))]
    a, a_num = _operand(rng, False)
    if a_num:  # the first operand of most forms is a tensor
        a = _tensor_src(rng, DTYPES[rng.integers(len(DTYPES))], (2, 3))
    b, _ = _operand(rng, op in ("div", "floor_divide", "remainder", "fmod", "true_divide"))
    forms = ["function", "method", "inplace", "out"] + (["operator"] if op in _OPERATORS
                                                        else [])
    form = forms[rng.integers(len(forms))]
    if form == "function":
        return f"out = T.{op}({a}, {b})"
    if form == "method":
        return f"out = ({a}).{op}({b})"
    if form == "operator":
        return f"out = ({a}) {_OPERATORS[op]} ({b})"
    if form == "inplace":
        return f"x = {a}\nr = x.{op}_({b})\nout = (r is x, x)"
    odt = DTYPES[rng.integers(len(DTYPES))]
    return f"o = T.empty(0, dtype=T.{odt})\nr = T.{op}({a}, {b}, out=o)\nout = (r is o, o)"


def _index_parts(rng, shape):
    """Source of an index: ints, slices, int and bool index tensors, lists, None, Ellipsis
    and Python bools, mixed."""
    parts, d, ellipsis = [], 0, False
    for _ in range(int(rng.integers(1, len(shape) + 2))):
        size = shape[d] if d < len(shape) else 1
        r = rng.random()
        if r < 0.2:
            parts.append(str(int(rng.integers(-size, size)) if size else 0))
            d += 1
        elif r < 0.4:
            a, b = sorted(int(v) for v in rng.integers(-size - 1, size + 2, size=2))
            parts.append(f"slice({a}, {b}, {int(rng.choice([1, 1, 2, 3]))})")
            d += 1
        elif r < 0.58:
            ish = tuple(int(v) for v in rng.integers(0, 3, size=rng.integers(0, 3)))
            vals = rng.integers(-size, max(size, 1), size=ish) if size else np.zeros(ish, int)
            parts.append(f"T.tensor({np.asarray(vals).tolist()!r}, "
                         f"dtype=T.{rng.choice(['int64', 'int32'])})")
            d += 1
        elif r < 0.7:
            m = (rng.random(shape[d:d + 1] if d < len(shape) else (1,)) < 0.5).tolist()
            parts.append(f"T.tensor({m!r}, dtype=T.bool)")
            d += 1
        elif r < 0.78:
            parts.append("None")
        elif r < 0.86 and not ellipsis:
            parts.append("...")
            ellipsis = True
            d = len(shape)
        elif r < 0.94:
            vals = rng.integers(-size, max(size, 1), size=rng.integers(1, 3)) if size else [0]
            parts.append(repr([int(v) for v in vals]))
            d += 1
        else:
            parts.append(repr(bool(rng.random() < 0.5)))
    if len(parts) == 1 and rng.random() < 0.5:
        return parts[0]
    return "(" + ", ".join(parts) + ",)"


def indexing(rng):
    """``x[index]`` or ``x[index] = value`` (value a number or a tensor of some dtype and
    shape), on a contiguous, transposed or autograd-tracked ``x``."""
    shape = tuple(int(s) for s in rng.integers(0, 4, size=rng.integers(0, 4)))
    dtype = str(rng.choice(["float32", "int64", "bool", "float16", "complex64"]))
    n = int(np.prod(shape)) if shape else 1
    base = f"T.arange({n}, dtype=T.float64).reshape({shape!r}).to(T.{dtype})"
    r = rng.random()
    if r < 0.2 and len(shape) >= 2:
        base = f"{base}.transpose(0, -1).contiguous().transpose(0, -1)"
    elif r < 0.35 and dtype in ("float32", "float16", "complex64"):
        base = f"({base}).requires_grad_() * 1"
    idx = _index_parts(rng, shape)
    if rng.random() < 0.45:
        return f"x = {base}\nout = x[{idx}]"
    if rng.random() < 0.2:
        value = repr(float(rng.choice([7.5, -1.0, 0.0])))
    else:
        vdt = str(rng.choice([dtype, "float64", "int32"]))
        vshape = tuple(int(s) for s in rng.integers(1, 4, size=rng.integers(0, 3)))
        vn = int(np.prod(vshape)) if vshape else 1
        value = f"(T.arange({vn}, dtype=T.float64).reshape({vshape!r}) + 100).to(T.{vdt})"
    return f"x = {base}\nx[{idx}] = {value}\nout = x"


_FILL_VALUES = (-1, -256, 255, 70000, -2 ** 31 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, -1.0,
                -0.5, -0.0, 0.5, 255.5, 1e20, 65504.0, 65520.0, 3.4e38, 1e39, math.inf,
                math.nan, True, complex(1, 0), complex(1, 2), complex(-0.0, -0.0))


def fill(rng):
    """A number at or past a dtype's range written by ``full``, ``fill_``, ``full_like``,
    ``new_full`` or ``zeros(...) + 0 * value``."""
    dtype = DTYPES[rng.integers(len(DTYPES))]
    v = _FILL_VALUES[rng.integers(len(_FILL_VALUES))]
    value = repr(v) if not (isinstance(v, float) and not math.isfinite(v)) else \
        f"float({str(v)!r})"
    form = int(rng.integers(4))
    if form == 0:
        return f"out = T.full((2,), {value}, dtype=T.{dtype})"
    if form == 1:
        return f"out = T.zeros(2, dtype=T.{dtype}).fill_({value})"
    if form == 2:
        return f"out = T.full_like(T.zeros(2, dtype=T.{dtype}), {value})"
    return f"out = T.zeros(2, dtype=T.{dtype}).new_full((2,), {value})"


def printing(rng):
    """``repr``/``str`` of a tensor of random dtype, shape (some summarised) and scale, with
    NaN, infinities and signed zeros among the values, optionally with a grad_fn."""
    nd = int(rng.integers(0, 4))
    shape = tuple(int(rng.choice([0, 1, 2, 3, 5, 7, 40, 1100])) if rng.random() < 0.1 else
                  int(rng.integers(1, 5)) for _ in range(nd))
    if int(np.prod(shape)) > 5000:
        shape = shape[:1]
    dtype = str(rng.choice(["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16",
                            "float32", "float64", "complex64", "complex128"]))
    scale = 10.0 ** int(rng.integers(-12, 12))
    n = int(np.prod(shape)) if shape else 1
    v = rng.standard_normal(n) * scale
    if rng.random() < 0.3:
        v = np.round(v)
    if rng.random() < 0.2 and n:
        idx = rng.integers(0, n, size=max(1, n // 4))
        v[idx] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, 1e30], size=idx.size)
    if dtype in ("bool", "uint8", "int8", "int32", "int64"):
        v = np.nan_to_num(v, nan=0, posinf=0, neginf=0).clip(-100, 100)
    vals = ", ".join(f"float({str(x)!r})" if not math.isfinite(x) else repr(float(x))
                     for x in v)
    src = f"x = T.tensor([{vals}], dtype=T.float64)[:{n}].reshape({shape!r})"
    if dtype.startswith("complex"):
        im = rng.standard_normal(n) * 10.0 ** int(rng.integers(-6, 6))
        src += (f"\nx = T.complex(x, T.tensor({im.tolist()!r}, dtype=T.float64)"
                f".reshape({shape!r}))")
    src += f"\nx = x.to(T.{dtype})"
    if dtype in ("float32", "float64") and rng.random() < 0.2:
        src += "\nx = x.requires_grad_() * 2"
    fn = str(rng.choice(["repr", "str"]))
    return f"{src}\nout = {fn}(x.t() if x.dim() == 2 else x)"


from tests.differential.programs_creation import creation  # noqa: E402
from tests.differential.programs_distributions import distributions  # noqa: E402
from tests.differential.programs_func import func  # noqa: E402
from tests.differential.programs_functional import functional  # noqa: E402
from tests.differential.programs_modules import modules  # noqa: E402
from tests.differential.programs_optim import optim  # noqa: E402
from tests.differential.programs_reductions import reductions  # noqa: E402
from tests.differential.programs_sorting import sorting  # noqa: E402
from tests.differential.programs_ties import ties  # noqa: E402

FAMILIES = {"promotion": promotion, "indexing": indexing, "fill": fill, "printing": printing,
            "modules": modules, "distributions": distributions, "sorting": sorting,
            "optim": optim, "ties": ties, "func": func, "reductions": reductions,
            "functional": functional, "creation": creation}


def make(family, seed):
    """The program ``seed`` of ``family`` (deterministic)."""
    return Program(family, seed, FAMILIES[family](np.random.default_rng(seed)))


# ------------------------------------------------------------------------------------------------
# running


def _builtin_class(exc):
    for k in type(exc).__mro__:
        if k.__module__ == "builtins":
            return k
    return Exception


def _run(source, T):
    env = {"T": T}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            exec(source, env)
        return env["out"], None
    except Exception as exc:  # compared by the caller
        return None, exc


def _summary(x, T):
    """A library-neutral summary of a result: strings with the library's name taken out,
    tensors as (dtype, shape, values as float64 or complex128, NaN kept)."""
    if isinstance(x, str):
        return ("str", x.replace("torch", "ember"))
    if isinstance(x, (tuple, list)):
        return ("tuple", tuple(_summary(y, T) for y in x))
    if isinstance(x, T.Tensor):
        x = x.detach()
        if getattr(x, "_is_zerotensor", lambda: False)():
            x = T.zeros_like(x)  # torch's forward-mode zero tangent has no storage
        dt = str(x.dtype).split(".")[-1]
        if x.dtype.is_complex:
            vals = x.resolve_conj().to(T.complex128).numpy()
        elif x.dtype == T.bool:
            vals = x.numpy().astype(np.float64)
        elif dt in _SHELL:
            vals = x.to(T.float64).numpy() if dt != "uint64" else \
                np.array(x.tolist(), dtype=object)
        else:
            vals = x.to(T.float64).numpy()
        return ("tensor", dt, tuple(x.shape), vals)
    return ("value", x)


#: (rtol, atol) of values by result dtype (the harness's: transcendental functions may
#: differ in the last bits); integers and bool compare exactly
_TOL = {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 8e-3), "float32": (1e-5, 1e-6),
        "float64": (1e-12, 1e-12), "complex64": (1e-5, 1e-6), "complex128": (1e-12, 1e-12)}


#: families whose results go through longer computations (special functions, reductions,
#: recurrences, sums over windows) than one op: values of a program that names a dtype
#: compare to its entry here at least. torch's distributions evaluate Bessel functions
#: (VonMises) by polynomial fits good to ~1e-8, ember's to the last bits; float32 module
#: gradients sum many products whose order differs by kernel; torch's transforms take
#: celu's derivative with 1 / alpha rounded to float32 and polygamma to ~1e-8
_FAMILY_TOL = {"modules": {"float64": (1e-9, 1e-9), "float32": (1e-4, 1e-4)},
               "distributions": {"float64": (1e-7, 1e-7)},
               "optim": {"float64": (1e-10, 1e-10), "float32": (1e-5, 1e-5)},
               "func": {"float64": (1e-7, 1e-7)},
               "functional": {"float64": (1e-9, 1e-9), "float32": (1e-4, 1e-4)}}


def _loosest(source, family=None):
    """The loosest tolerance of the floating dtypes a program names: a float32 result
    written to a float64 or complex128 out= carries float32's rounding."""
    named = [_TOL[d] for d in _TOL if f"T.{d}" in source]
    named += [t for d, t in _FAMILY_TOL.get(family, {}).items() if f"T.{d}" in source]
    return max(named, default=None)


def _same_values(a, b, dtype, tol=None):
    if a.dtype == object or b.dtype == object:
        return a.shape == b.shape and a.tolist() == b.tolist()
    if a.shape != b.shape:
        return False
    same = (a == b) | ((a != a) & (b != b))
    if dtype in _TOL and not same.all():
        rtol, atol = max(_TOL[dtype], tol or (0, 0))
        with np.errstate(all="ignore"):
            close = np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= atol + rtol * np.abs(b))
            if a.dtype.kind == "c":  # NaN in one part only counts as that part's NaN
                close |= (np.isnan(a.real) == np.isnan(b.real)) & (np.isnan(a.imag) ==
                                                                    np.isnan(b.imag)) & same
        same = same | close
    return bool(np.all(same))


def _diff(e, t, tol=None):
    """The first mismatch kind between two summaries, or None."""
    if e[0] != t[0]:
        return "values"
    if e[0] == "str":
        return None if e[1] == t[1] else "repr"
    if e[0] == "tensor":
        if e[1] != t[1]:
            return "dtype"
        if e[2] != t[2]:
            return "shape"
        return None if _same_values(e[3], t[3], e[1], tol) else "values"
    if e[0] == "value":
        return None if e == t else "values"
    if len(e[1]) != len(t[1]):
        return "values"
    for a, b in zip(e[1], t[1]):
        k = _diff(a, b, tol)
        if k:
            return k
    return None


def compare(program, torch):
    """[(kind, detail)] for ``program`` run with ember and with ``torch``."""
    import ember

    t_res, t_exc = _run(program.source, torch)
    if t_exc is not None and "INTERNAL ASSERT" in str(t_exc):
        return [("torch_crash", str(t_exc)[:160])]
    e_res, e_exc = _run(program.source, ember)
    if t_exc is not None or e_exc is not None:
        if isinstance(t_exc, NotImplementedError) and not isinstance(
                e_exc, NotImplementedError) and any(f"T.{d}" in program.source for d in _SHELL):
            return [("documented", f"torch has no kernel: {t_exc}")]
        if "ComplexHalf" in str(t_exc) + str(e_exc):
            return [("documented", "ember has no complex32 (ComplexHalf)")]
        if e_exc is None:
            return [("ember_no_raise", f"torch raises {type(t_exc).__name__}: {t_exc}")]
        if t_exc is None:
            return [("ember_raises", f"{type(e_exc).__name__}: {e_exc}")]
        if not isinstance(e_exc, _builtin_class(t_exc)):
            return [("exception_type", f"ember {type(e_exc).__name__} ({e_exc}), torch "
                     f"{type(t_exc).__name__} ({t_exc})")]
        if str(e_exc).replace("ember", "torch") != str(t_exc):
            return [("message", f"ember: {e_exc} | torch: {t_exc}")]
        return []
    kind = _diff(_summary(e_res, ember), _summary(t_res, torch),
                 _loosest(program.source, program.family))
    if kind == "dtype" and "complex32" in repr(_summary(t_res, torch)):
        return [("documented", "ember has no complex32: a half tensor and a complex number "
                 "give complex64")]
    return [(kind, "results differ")] if kind else []


def run(families, seeds, torch):
    """{family: [(program, [(kind, detail)])]} of the programs with any mismatch or note."""
    found = {}
    for family in families:
        for seed in seeds:
            p = make(family, seed)
            got = compare(p, torch)
            if got:
                found.setdefault(family, []).append((p, got))
    return found
