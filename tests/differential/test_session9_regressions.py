"""Regressions for bug classes the differential suite found: complex add/sub scale the second
operand by alpha even when alpha is 1 (NOTE [ Complex add and sub ]), uint8 interpolation
with torch's fixed-point taps (NOTE [ Separable taps with renormalised weights ]), embedding
bags of unsorted offsets (NOTE [ Bags of unsorted offsets ]), ndtr as ``(1 + erf) / 2``
(NOTE [ ndtr as torch computes it ]), and repeat's backward with infinities warning nothing.
Each expression runs with ``T = ember`` and ``T = torch``."""

import warnings

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH
from tests.differential.expressions import ENV as _ENV
from tests.differential.expressions import agree as _agree

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


# -- complex add / sub --------------------------------------------------------------------------

_A = "T.tensor([complex(1, inf), complex(inf, 0), complex(nan, 1), complex(1, 2)])"
_B = "T.tensor([complex(1, 0), complex(1, inf), complex(0, 0), complex(inf, inf)])"


@pytest.mark.parametrize("expr", [
    f"{_A} + {_B}", f"{_A} - {_B}", f"T.add({_A}, {_B})", f"T.sub({_A}, {_B}, alpha=1)",
    f"T.add({_A}, {_B}, alpha=2)", f"T.add({_A}, {_B}, alpha=1j)", f"T.sub({_A}, {_B}, alpha=-2)",
    f"{_A} + complex(1, inf)", f"complex(1, inf) + {_A}", f"complex(1, inf) - {_A}",
    f"{_A} - complex(1, inf)", f"T.add(complex(inf, 0), {_A})",
    f"{_A} + T.tensor(complex(1, inf))", f"{_A} + T.tensor([inf, 1., 1., -inf])",
    f"T.tensor([inf, 1., 1., -inf]) + {_A}", f"{_A} + inf", f"inf + {_A}", f"inf - {_A}",
    f"{_A}.reshape(4, 1)[:2] + {_A}[:2]", f"{_A}[::2] + {_A}[1::2]",
    f"{_A}.to(T.complex64) + {_B}.to(T.complex64)",
    f"T.add({_A}, {_B}, out=T.empty(4, dtype=T.complex128))",
    f"T.rsub({_A}, 2)", f"T.rsub({_A}, 2, alpha=2)", f"T.rsub({_A}, {_B})",
    f"T.sub(T.tensor([inf, 1., 1., -inf]), {_A}, alpha=3)",
    f"{_A}.clone().add_({_B})", f"{_A}.clone().sub_({_B}, alpha=2j)",
    f"{_A}.clone().add_(complex(1, inf), alpha=2)",
    "T.tensor([1., inf]) + T.tensor([inf, 2.])",  # real dtypes: the plain sum
    "T.add(T.tensor([1, 2]), T.tensor([3, 4]), alpha=2)",
])
def test_complex_add_sub_scale_the_second_operand(expr):
    _agree(expr)


def test_complex_inplace_operators():
    import torch

    for op in ("+=", "-="):
        got = []
        for T in (ember, torch):
            env = {"T": T}
            exec(_ENV, env)
            exec(f"x = {_A}; x {op} {_B}; y = {_A}; y {op} complex(1, inf)", env)
            got.append((env["x"].numpy(), env["y"].numpy()))
        np.testing.assert_array_equal(got[0][0], got[1][0])
        np.testing.assert_array_equal(got[0][1], got[1][1])


def test_complex_alpha_gradients_and_graph():
    import torch

    grads = []
    for T in (ember, torch):
        a = T.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        b = T.tensor([0.5 - 1j, 2 + 2j], requires_grad=True)
        r = T.tensor([1., 2.], requires_grad=True)
        y = (T.add(a, b, alpha=2 - 1j) + T.sub(a, r, alpha=3) + T.rsub(a, 2, alpha=1j)
             + (2 + a) + T.add(r, b, alpha=0.5))
        y.abs().sum().backward()
        grads.append([a.grad.numpy(), b.grad.numpy(), r.grad.numpy()])
        # ``2 + t`` is ``t.add(2)``: the tensor is the graph's first input
        n = (2 + r).grad_fn.next_functions
        assert n[0][0] is not None and n[1][0] is None
    for e, t in zip(*grads):
        np.testing.assert_allclose(e, t, rtol=1e-6)


def test_real_add_keeps_the_direct_path():
    # complex operands leave ``op.direct``; real ones keep it
    from ember._ops.arithmetic import add_op, sub_op

    for op in (add_op, sub_op):
        assert np.dtype(np.float32) in op.direct
        assert np.dtype(np.complex64) not in op.direct


# -- uint8 interpolate ----------------------------------------------------------------------------

_IMG = "(T.arange(2 * {c} * 5 * 7).reshape(2, {c}, 5, 7) * 37 % 256).to(T.uint8)"


@pytest.mark.parametrize("c", [3, 6])
@pytest.mark.parametrize("call", [
    "size=(3, 4), mode='bilinear'", "size=(9, 13), mode='bilinear'",
    "size=(9, 13), mode='bilinear', align_corners=True",
    "size=(2, 20), mode='bilinear', align_corners=True",
    "size=(3, 4), mode='bilinear', antialias=True", "size=(9, 13), mode='bilinear', antialias=True",
    "size=(3, 4), mode='bicubic', antialias=True", "size=(9, 13), mode='bicubic', antialias=True",
    "scale_factor=1.5, mode='bilinear'", "scale_factor=(2.3, 0.4), mode='bilinear'",
    "scale_factor=0.6, mode='bicubic', antialias=True", "size=(5, 7), mode='bilinear'",
    "size=(5, 3), mode='bilinear'",
])
def test_uint8_interpolate_fixed_point_taps(c, call):
    _agree(f"F.interpolate({_IMG.format(c=c)}, {call})")


# -- embedding_bag with unsorted offsets ----------------------------------------------------------

_W = "T.arange(12.).reshape(6, 2)"
_IDX = "T.tensor([0, 1, 2, 3, 4, 5])"


@pytest.mark.parametrize("offsets", ["[0, 3, 1]", "[0, 4, 2, 6]", "[0, 6, 3]", "[0, 2, 4]",
                                     "[0, 2, 2, 6]"])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("extra", ["", ".double()", ".double(), padding_idx=2",
                                   ".double(), padding_idx=1"])
def test_embedding_bag_unsorted_offsets(offsets, mode, last, extra):
    w, _, pad = (_W + extra).partition(", ")
    kw = f", {pad}" if pad else ""
    _agree(f"F.embedding_bag({_IDX}, {w}, T.tensor({offsets}), mode='{mode}', "
           f"include_last_offset={last}{kw})")


def test_embedding_bag_max_skips_padding():
    _agree(f"F.embedding_bag({_IDX}, -{_W}, T.tensor([0, 3]), mode='max', padding_idx=1)")


# -- ndtr -----------------------------------------------------------------------------------------

_NDTR_X = "T.tensor([-40., -10., -8.5, -1., 0., 1., 5., 10., nan, inf, -inf])"


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_ndtr_underflows_to_zero_as_torch(dtype):
    _agree(f"T.special.ndtr({_NDTR_X}.to(T.{dtype}))", exact=dtype in ("float16", "bfloat16"))
    x = ember.tensor([-10.0, -9.0], dtype=getattr(ember, dtype))
    assert (ember.special.ndtr(x) == 0).all()


def test_ndtr_integers():
    _agree("T.special.ndtr(T.tensor([0, 1, -3]))", exact=False)


# -- repeat backward with infinities ---------------------------------------------------------------

def test_repeat_backward_with_infinities_warns_nothing():
    import torch

    grads = []
    for T in (ember, torch):
        x = T.tensor([[float("inf"), -float("inf")]], requires_grad=True)
        g = T.tensor([[float("inf"), 1.0], [-float("inf"), 2.0], [1.0, float("inf")]])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            if T is ember:
                ember._filter_fp_warnings()  # the filter catch_warnings just set aside
            x.repeat(3, 1).backward(g)
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


# -- cross refuses bool input before comparing dtypes ---------------------------------------------

@pytest.mark.parametrize("other", ["T.ones(3, 4, dtype=T.float16)", "T.ones(3, 4, dtype=T.bool)",
                                   "T.ones(3, 5, dtype=T.float16)", "T.ones(3, 4, 1)"])
@pytest.mark.parametrize("fn", ["T.linalg.cross", "T.cross"])
def test_cross_bool_input_error_type(fn, other):
    _agree(f"{fn}(T.ones(3, 4, dtype=T.bool), {other}, dim=0)")
