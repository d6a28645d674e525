"""Forward-mode AD through in-place ops that change a tensor's view (``t_``, ``squeeze_``,
``as_strided_``), forward-over-reverse through in-place ops with ``forward_ad`` and
``autograd.grad`` directly, and ``make_dual``/``unpack_dual`` given a level that does not
exist -- each against torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _r(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _both(fn):
    import torch

    return fn(ember), fn(torch)


_VIEW_INPLACE = {
    "t_": lambda y: y.t_(),
    "transpose_": lambda y: y.transpose_(0, 1),
    "unsqueeze_": lambda y: y.unsqueeze_(1),
    "as_strided_": lambda y: y.as_strided_((2, 2), (1, 3), 1),
}


@pytest.mark.parametrize("name", sorted(_VIEW_INPLACE))
def test_view_changing_inplace_op_transforms_tangent(name):
    def run(T):
        fw = T.autograd.forward_ad
        with fw.dual_level():
            y = fw.make_dual(T.tensor(_r(2, 3)), T.tensor(_r(2, 3, seed=1))) * 2
            _VIEW_INPLACE[name](y)
            return fw.unpack_dual(y).tangent.clone()

    got, want = _both(run)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy())


@pytest.mark.parametrize("write", ["exp_", "sin_", "mul_"])
def test_hvp_through_inplace_with_autograd_grad(write):
    def run(T):
        fw = T.autograd.forward_ad
        x = T.tensor(_r(4), requires_grad=True)
        with fw.dual_level():
            d = fw.make_dual(x, T.tensor(_r(4, seed=1)))
            y = d * 1.5
            if write == "mul_":
                y.mul_(d)
            else:
                getattr(y, write)()
            g, = T.autograd.grad((y * T.tensor(_r(4, seed=2))).sum(), d, create_graph=True)
            return fw.unpack_dual(g).tangent.detach()

    got, want = _both(run)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-8)


def _message(fn):
    try:
        fn()
    except RuntimeError as e:
        return str(e)
    return None


@pytest.mark.parametrize("case", ["make_dual_other_level", "unpack_dual_other_level",
                                  "make_dual_exited_level", "make_dual_never_entered"])
def test_dual_level_index_errors_match_torch(case):
    def run(T):
        fw = T.autograd.forward_ad
        one = T.ones(2)
        if case == "make_dual_other_level":
            with fw.dual_level():
                return _message(lambda: fw.make_dual(one, one, level=1))
        if case == "unpack_dual_other_level":
            with fw.dual_level():
                return _message(lambda: fw.unpack_dual(fw.make_dual(one, one), level=1))
        if case == "make_dual_exited_level":
            with fw.dual_level():
                pass
            return _message(lambda: fw.make_dual(one, one, level=0))
        return _message(lambda: fw.make_dual(one, one, level=3))

    got, want = _both(run)
    assert want is not None and got == want


def test_unpack_dual_unknown_level_outside_levels_gives_no_tangent():
    p, t = ember.autograd.forward_ad.unpack_dual(ember.ones(2), level=3)
    assert t is None and p.shape == (2,)
