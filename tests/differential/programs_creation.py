"""Random creation and conversion programs (see NOTE [ Differential programs ] in programs.py).

NOTE [ Differential creation programs ]
The OpInfo creation cases call each factory with a dtype; what they reach thinly is how a
factory *infers* a dtype and what a cast does to values at the edges. Each program here is
one of: ``tensor`` / ``as_tensor`` of a nested list mixing bools, ints (some past int32),
floats (NaN, infinities, signed zeros) and complex numbers, with or without ``dtype=``;
``arange`` / ``linspace`` / ``logspace`` / ``full`` / ``zeros_like``-style factories with
int, float, bool and complex arguments; or ``to(dtype)`` of values at the edges (negative
numbers to uint8, fractions to integers, numbers to bool, complex to real, beyond float16's
range). A third of them run under another default dtype (float64, float16 or bfloat16, set
and restored by the program itself). The result is the tensor (dtype, shape and values) or
a tuple of tensors; both libraries must agree on the exception class where one refuses.
Casts whose result C leaves undefined (NaN or out-of-range floats to integers) are left out:
torch's values there follow the CPU's conversion instructions.
"""

from __future__ import annotations

import math

_DEFAULTS = ("float64", "float16", "bfloat16")
_ALL = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
        "float64", "complex64", "complex128")


def _pick(rng, options):
    return options[int(rng.integers(len(options)))]


def _number(rng, kinds):
    """The source of one Python number of a kind drawn from ``kinds``."""
    kind = _pick(rng, kinds)
    if kind == "bool":
        return repr(bool(rng.random() < 0.5))
    if kind == "int":
        return repr(int(_pick(rng, (0, 1, -1, 3, -7, 127, 128, 255, 256, -129, 2 ** 31,
                                    -(2 ** 31) - 1, 2 ** 40, 2 ** 53 + 1))))
    if kind == "float":
        v = _pick(rng, (0.5, -0.0, 0.0, 1.0, -2.5, 1e-8, 3.4e38, 1e39, 65504.0, 65520.0,
                        1 / 3, float("nan"), float("inf"), -float("inf"), 2.0 ** 24 + 1))
        return f"float({str(v)!r})" if not math.isfinite(v) else repr(v)
    re_, im = _pick(rng, ((1.0, 2.0), (0.0, -0.0), (-1.5, 0.0), (float("nan"), 1.0),
                          (0.0, float("inf"))))
    return f"complex({_float_src(re_)}, {_float_src(im)})"


def _float_src(v):
    return f"float({str(v)!r})" if not math.isfinite(v) else repr(v)


def _nested(rng, kinds):
    """A nested list (0 to 3 levels, rectangular) of numbers of ``kinds``."""
    nd = int(rng.integers(0, 4))
    shape = [int(rng.integers(0 if rng.random() < 0.1 else 1, 4)) for _ in range(nd)]

    def level(d):
        if d == nd:
            return _number(rng, kinds)
        return "[" + ", ".join(level(d + 1) for _ in range(shape[d])) + "]"

    return level(0)


def _from_data(rng):
    kinds = _pick(rng, (("bool",), ("int",), ("float",), ("int", "float"), ("bool", "int"),
                        ("bool", "float"), ("int", "complex"), ("float", "complex"),
                        ("bool", "int", "float", "complex")))
    data = _nested(rng, kinds)
    fn = _pick(rng, ("T.tensor", "T.tensor", "T.as_tensor"))
    dtype = f", dtype=T.{_pick(rng, _ALL)}" if rng.random() < 0.3 else ""
    return f"out = {fn}({data}{dtype})"


def _factory(rng):
    op = _pick(rng, ("arange", "arange", "linspace", "logspace", "full", "like"))
    dtype = f", dtype=T.{_pick(rng, _ALL)}" if rng.random() < 0.3 else ""
    if op == "arange":
        k = _pick(rng, (("int",), ("float",), ("int", "float"), ("bool", "int")))
        n = int(rng.integers(1, 4))
        start = _pick(rng, ("0", "1", "-3", "0.5", "2.0", "True"))
        end = _pick(rng, ("5", "7.5", "-1", "10", "3.0"))
        step = _pick(rng, ("1", "2", "0.5", "-1", "1.5", "3"))
        args = [end] if n == 1 else [start, end] if n == 2 else [start, end, step]
        if "float" not in k:
            args = [a.split(".")[0] if "." in a else a for a in args]
        return f"out = T.arange({', '.join(args)}{dtype})"
    if op in ("linspace", "logspace"):
        a, b = _pick(rng, ("0", "-1.5", "2", "3", "True")), _pick(rng, ("1", "5", "2.5", "-2"))
        steps = _pick(rng, ("0", "1", "2", "5"))
        base = f", base={_pick(rng, ('2', '10.0', '0.5'))}" if op == "logspace" and \
            rng.random() < 0.5 else ""
        return f"out = T.{op}({a}, {b}, {steps}{base}{dtype})"
    if op == "full":
        size = _pick(rng, ("(2,)", "(2, 3)", "()", "(0,)"))
        return f"out = T.full({size}, {_number(rng, ('bool', 'int', 'float', 'complex'))}" \
               f"{dtype})"
    src = _pick(rng, _ALL)
    fn = _pick(rng, ("zeros_like", "ones_like", "empty_like", "full_like", "rand_like"))
    fill = f", {_number(rng, ('bool', 'int', 'float'))}" if fn == "full_like" else ""
    lines = f"x = T.ones(2, 3, dtype=T.{src})\nout = T.{fn}(x{fill}{dtype})"
    if fn in ("empty_like", "rand_like"):  # values unspecified or random: dtype and shape
        lines += "\nout = (T.zeros_like(out), str(out.dtype))"
    return lines


def _cast(rng):
    src = _pick(rng, ("float64", "float32", "float16", "bfloat16", "complex64", "complex128",
                      "int64", "int32", "bool"))
    dst = _pick(rng, _ALL)
    if src in ("float64", "float32", "float16", "bfloat16"):
        vals = ["-0.0", "0.0", "0.75", "-0.75", "1.5", "-1.0", "-3.7", "127.9", "200.5"]
        if dst in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128",
                   "bool"):
            vals += ["float('nan')", "float('inf')", "-float('inf')", "65519.0", "65520.0",
                     "3.0e38", "1e-8", "6e-8"]
        if dst == "uint8":  # (negative fractions above -1 truncate to 0; below wrap in C)
            vals = [v for v in vals if not v.startswith("-") or v in ("-0.0", "-0.75")]
        if dst == "int8":
            vals = [v for v in vals if v not in ("200.5",)]
        data = f"[{', '.join(vals)}]"
    elif src.startswith("complex"):
        data = "[complex(1.5, 2.0), complex(-0.0, 1.0), complex(0.0, -0.0), complex(3.0, 0.0)]"
        if dst.startswith(("float", "bfloat", "complex")) or dst == "bool":
            data = data[:-1] + ", complex(float('nan'), 0.0), complex(0.0, float('inf'))]"
    elif src == "bool":
        data = "[True, False]"
    else:
        data = "[0, 1, -1, 127, 128, 255, 256, -129, 65504, 65536, 16777217]"
        if src == "int64":
            data = data[:-1] + ", 2 ** 40 + 1, -(2 ** 53) - 1]"
    how = _pick(rng, (f".to(T.{dst})", f".type(T.{dst})", f".to(dtype=T.{dst})"))
    layout = _pick(rng, ("", "", "[::-1]", ".reshape(1, -1).expand(2, -1)"))
    return f"x = T.tensor({data}, dtype=T.{src}){layout}\nout = x{how}"


def creation(rng):
    """One creation or conversion program, a third of them under another default dtype."""
    body = _pick(rng, (_from_data, _from_data, _factory, _factory, _cast))(rng)
    if rng.random() < 1 / 3:
        default = _pick(rng, _DEFAULTS)
        inner = "\n".join("    " + line for line in body.split("\n"))
        return (f"T.set_default_dtype(T.{default})\ntry:\n{inner}\nfinally:\n"
                "    T.set_default_dtype(T.float32)")
    return body
