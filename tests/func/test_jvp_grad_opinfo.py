"""Forward-over-reverse over the differentiable ops of the OpInfo table: ``jvp(grad(loss))``
(a Hessian-vector product) equals ``torch.func.jvp(torch.func.grad(loss))`` on the same
random inputs and tangents, for each op's functional form and, where it has one, its in-place
form applied to an intermediate (the backward formula then reads the value the write
destroyed, and its tangent: NOTE [ Forward-mode AD as a mode ] in ember/autograd/_forward.py).

The loss weights every output element differently, so a tangent permuted or summed shows."""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest

import ember
from ember.testing._opinfo import load_op_db
from ember.utils._pytree import tree_map_only
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

#: ops where torch's own second derivative is the one that is off, with the reason
_TORCH_OFF = {
    "ldexp": "torch's jvp zeroes the tangent where the exponent is negative",
    "triangular_solve": "torch does not mask the unused triangle of A's tangent",
    "cholesky_inverse": "torch's forward rule disagrees with its own vjp",
    "scatter_reduce.prod": "central differences agree with ember (test_forward_ad.py)",
    "cholesky_solve": "with a tangent in the factor's unused triangle torch differentiates "
                      "its formula in the whole factor; central differences of the gradient "
                      "agree with ember (both agree for triangular tangents)",
}


def _usable(info):
    return info.differentiable and ember.float64 in info.dtypes and \
        not info.nondeterministic and not info.name.endswith("_") and \
        info.id not in _TORCH_OFF and "torch" not in info.skips


op_db = [info for info in load_op_db() if _usable(info)]


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [y for z in x for y in _leaves(z)]
    if isinstance(x, dict):
        return [y for z in x.values() for y in _leaves(z)]
    return [x]


def _sample(info):
    """The op's first float64 sample with floating tensors, and those tensors."""
    rng = np.random.default_rng(zlib.crc32(f"jvpgrad/{info.id}".encode()))
    for s in info.sample_inputs(ember.float64, rng):
        leaves = [x for x in _leaves([s.all_args(), s.kwargs]) if isinstance(x, ember.Tensor)
                  and x.dtype == ember.float64 and x.numel()]
        if leaves:
            return s, leaves
    return None, []


def _floats(r, T):
    return [x for x in _leaves(r) if isinstance(x, T.Tensor) and x.dtype == T.float64]


def _loss_fn(T, op, s, leaves, weights, inplace):
    """``loss(*xs)``: the op on the sample with ``leaves`` replaced by ``xs``, each output
    weighted; ``inplace``: ``op`` is an in-place method run on ``2 * xs[0]``."""
    to = (lambda t: t) if T is ember else (lambda t: T.from_numpy(t.numpy().copy()))

    def loss(*xs):
        def sub(t):
            for k, leaf in enumerate(leaves):
                if t is leaf:
                    return xs[k] * 2 if inplace and k == 0 else xs[k]
            return to(t)

        args = tree_map_only(ember.Tensor, sub, list(s.all_args()))
        kwargs = tree_map_only(ember.Tensor, sub, s.kwargs)
        out = op(*args, **kwargs)
        total = 0
        for o, w in zip(_floats(out, T), weights):
            total = total + (o * T.from_numpy(w.copy())).sum()
        return total

    return loss


def _torch_hvp(torch, loss, leaves, tangents):
    """torch's forward-over-reverse, as ``torch.func.jvp(torch.func.grad(loss))`` computes
    it, through ``forward_ad`` and ``autograd.grad`` (torch.func's first calls of each op
    cost 10x more)."""
    fw = torch.autograd.forward_ad
    with fw.dual_level():
        xs = [fw.make_dual(torch.from_numpy(x.numpy().copy()).requires_grad_(),
                           torch.from_numpy(t)) for x, t in zip(leaves, tangents)]
        grads = torch.autograd.grad(loss(*xs), xs, create_graph=True, allow_unused=True)
        out = []
        for g, x in zip(grads, xs):
            tan = None if g is None else fw.unpack_dual(g).tangent
            out.append(torch.zeros(x.shape, dtype=x.dtype) if tan is None else tan)
        return out


def _check(info, inplace):
    import torch

    top = info.get_torch_op(torch)
    s, leaves = _sample(info)
    if top is None or s is None:
        pytest.skip("no torch counterpart or no float64 sample")
    if inplace:
        name = info.name.split(".")[-1] + "_"
        op, top = info.get_inplace(), getattr(torch.Tensor, name, None)
        if op is None or top is None or not any(leaves[0] is a for a in s.all_args()[:1]):
            pytest.skip("no in-place form on a floating self")
    else:
        op = info.get_op()
    try:
        t_out = top(*tree_map_only(ember.Tensor, lambda t: torch.from_numpy(t.numpy().copy()),
                                   list(s.all_args())),
                    **tree_map_only(ember.Tensor, lambda t: torch.from_numpy(t.numpy().copy()),
                                    s.kwargs))
    except Exception:  # noqa: BLE001 -- a sample torch rejects is no comparison point
        pytest.skip("torch rejects the sample")
    rng = np.random.default_rng(3)
    weights = [rng.standard_normal(tuple(o.shape)) for o in _floats(t_out, torch)]
    if not weights:
        pytest.skip("no floating output")
    tangents = [rng.standard_normal(tuple(x.shape)) for x in leaves]
    argnums = tuple(range(len(leaves)))
    t_loss = _loss_fn(torch, top, s, leaves, weights, inplace)
    try:
        want = _torch_hvp(torch, t_loss, leaves, tangents)
    except Exception:  # noqa: BLE001 -- torch has no second derivative here
        pytest.skip("torch cannot take jvp of grad here")
    e_loss = _loss_fn(ember, op, s, leaves, weights, inplace)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, got = ember.func.jvp(ember.func.grad(e_loss, argnums),
                                tuple(x.detach().clone() for x in leaves),
                                tuple(ember.from_numpy(t) for t in tangents))
    for k, (g, w) in enumerate(zip(got, want)):
        if w._is_zerotensor():
            w = torch.zeros(w.shape, dtype=w.dtype)
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=f"{info.id} ({s.name}) argument {k}")


@pytest.mark.parametrize("info", op_db, ids=[i.id for i in op_db])
def test_jvp_of_grad_matches_torch(info):
    _check(info, inplace=False)


inplace_db = [info for info in op_db if info.get_inplace() is not None]


@pytest.mark.parametrize("info", inplace_db, ids=[i.id for i in inplace_db])
def test_jvp_of_grad_inplace_matches_torch(info):
    _check(info, inplace=True)
