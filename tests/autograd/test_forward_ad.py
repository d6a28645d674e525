"""Forward-mode AD (ember.autograd.forward_ad): the OpInfo sweep, the named API, views,
in-place ops, custom Functions, nested levels, errors and forward-over-reverse."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import ember
from ember.utils._pytree import tree_map_only
import ember.autograd.forward_ad as fwAD
from ember._core import dtype as _dt
from ember.testing import assert_close
from ember.testing._opinfo import load_op_db
from tests.conftest import HAS_TORCH

op_db = [i for i in load_op_db() if i.differentiable and _dt.float64 in i.dtypes
         and not i.nondeterministic]


#: ops whose sample makes central differences no oracle (or whose ember vjp, which the
#: tangent is derived from, has a known issue), with the reason
FD_SKIPS = {
    "nn.functional.cross_entropy.weighted": "torch has no derivative for the class weights",
    "nn.functional.nll_loss.weighted": "torch has no derivative for the class weights",
    "nn.functional.multi_margin_loss.weighted": "torch has no derivative for the class weights",
    "cholesky_solve": "the whole factor is differentiated (torch's convention) where the "
                      "kernel reads one triangle",
    "cholesky_inverse": "the whole factor is differentiated (torch's convention) where the "
                        "kernel reads one triangle",
    "linalg.lstsq": "the residuals output is not differentiated",
    "batch_norm": "the sample (training=False without running stats) is one torch rejects",
    "native_batch_norm": "the saved mean / invstd outputs carry no tangent",
    "native_layer_norm": "the saved mean / rstd outputs carry no tangent",
    "cosine_embedding_loss": "the float target is a label: not smooth in it",
    "hinge_embedding_loss": "the float target is a label: not smooth in it",
    "ctc_loss": "the gradient assumes normalised log-probabilities, as PyTorch's does",
    "nanquantile": "NaN rows",
}
#: ops where torch.func.jvp is the one that is off, with the reason
TORCH_SKIPS = {
    "ldexp": "torch's jvp zeroes the tangent where the exponent is negative",
    "triangular_solve": "torch does not mask the unused triangle of A's tangent; central "
                        "differences agree with ember",
    "scatter_reduce.prod": "central differences agree with ember",
    "cholesky_inverse": "torch's forward rule disagrees with its own vjp (checked against "
                        "inv(L L^H) in tests/func/test_jvp_rules.py)",
}


def _map(x, f):
    """``x`` with ``f`` applied to each tensor inside it (lists, tuples, dicts)."""
    return tree_map_only(ember.Tensor, f, x)


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [y for z in x for y in _leaves(z)]
    if isinstance(x, dict):
        return [y for z in x.values() for y in _leaves(z)]
    return [x]


def _samples(info):
    rng = np.random.default_rng(zlib.crc32(f"{info.id}/fwad".encode()))
    out = []
    for s in info.sample_inputs(_dt.float64, rng):
        leaves = [x for x in _leaves([s.all_args(), s.kwargs])
                  if isinstance(x, ember.Tensor) and x.dtype == _dt.float64 and x.numel()]
        if leaves:
            out.append((s, leaves))
        if len(out) == 1:  # one sample per op keeps the sweep fast
            break
    return out


def _call_with(info, s, leaves, sub):
    """``info``'s op on sample ``s`` with each leaf replaced by ``sub(index, leaf)``."""
    def f(t):
        for k, l in enumerate(leaves):
            if t is l:
                return sub(k, t)
        return t

    return info.get_op()(*_map(s.all_args(), f), **_map(s.kwargs, f))


def _float_results(r):
    return [x for x in _leaves(r) if isinstance(x, ember.Tensor)
            and x.dtype.is_floating_point or isinstance(x, ember.Tensor) and x.is_complex()]


@pytest.mark.parametrize("info", op_db, ids=lambda i: i.id)
def test_jvp_matches_finite_differences(info):
    """The tangent forward AD gives equals central differences along the tangent."""
    if info.id in FD_SKIPS:
        pytest.skip(FD_SKIPS[info.id])
    samples = _samples(info)
    if not samples:
        pytest.skip("no float64 sample")
    rng = np.random.default_rng(1)
    for s, leaves in samples:
        tangents = [ember.from_numpy(rng.standard_normal(tuple(l.shape))) for l in leaves]
        with fwAD.dual_level():
            out = _call_with(info, s, leaves, lambda k, t: fwAD.make_dual(t, tangents[k]))
            res = [(fwAD.unpack_dual(o).primal.detach().clone(), fwAD.unpack_dual(o).tangent)
                   for o in _float_results(out)]
        eps = 1e-6
        plus = _float_results(_call_with(info, s, leaves,
                                         lambda k, t: t + eps * tangents[k]))
        minus = _float_results(_call_with(info, s, leaves,
                                          lambda k, t: t - eps * tangents[k]))
        for (p, tan), a, b in zip(res, plus, minus):
            fd = (a - b) / (2 * eps)
            if tan is None:
                tan = ember.zeros_like(p)
            assert tan.shape == p.shape, f"{info.id} {s}"
            assert_close(tan, fd, rtol=1e-3, atol=1e-4, msg=f"{info.id} {s}",
                         equal_nan=True)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("info", op_db, ids=lambda i: i.id)
def test_jvp_matches_torch(info):
    """The tangent equals torch.func.jvp's for the same sample and tangents."""
    import torch

    top = info.get_torch_op(torch)
    if top is None or "torch" in info.skips:
        pytest.skip("no torch counterpart")
    if info.id in TORCH_SKIPS:
        pytest.skip(TORCH_SKIPS[info.id])
    samples = _samples(info)
    if not samples:
        pytest.skip("no float64 sample")
    rng = np.random.default_rng(2)
    compared = 0
    for s, leaves in samples:
        tangents = [rng.standard_normal(tuple(l.shape)) for l in leaves]

        def to_t(x):
            return torch.from_numpy(x.detach().numpy().copy())

        t_leaves = [to_t(l) for l in leaves]

        def tf(*xs):
            def f(t):
                for k, l in enumerate(leaves):
                    if t is l:
                        return xs[k]
                return to_t(t)

            r = top(*_map(s.all_args(), f), **_map(s.kwargs, f))
            return tuple(x for x in _leaves(r) if isinstance(x, torch.Tensor)
                         and (x.is_floating_point() or x.is_complex()))

        try:
            _, t_tans = torch.func.jvp(tf, tuple(t_leaves),
                                       tuple(torch.from_numpy(t) for t in tangents))
        except Exception:  # noqa: BLE001 -- torch has no forward rule for this sample
            continue
        e_tans = [ember.from_numpy(t) for t in tangents]
        with fwAD.dual_level():
            out = _call_with(info, s, leaves, lambda k, t: fwAD.make_dual(t, e_tans[k]))
            res = [fwAD.unpack_dual(o).tangent for o in _float_results(out)]
            prim = [fwAD.unpack_dual(o).primal for o in _float_results(out)]
            res = [ember.zeros_like(p) if r is None else r.detach().clone()
                   for r, p in zip(res, prim)]
        assert len(res) == len(t_tans), f"{info.id} {s}"
        for e, t in zip(res, t_tans):
            if t._is_zerotensor():
                t = torch.zeros(t.shape, dtype=t.dtype)
            assert_close(e, t.resolve_conj(), rtol=1e-5, atol=1e-6, msg=f"{info.id} {s}",
                         equal_nan=True)
        compared += 1
    if not compared:
        pytest.skip("torch cannot forward-differentiate these samples")


# ------------------------------------------------------------------------------------------------
# the named API


def _dual(p, t):
    return fwAD.make_dual(ember.tensor(p, dtype=ember.float64),
                          ember.tensor(t, dtype=ember.float64))


def test_dual_level_gives_level_zero():
    with fwAD.dual_level() as lvl:
        assert lvl == 0


def test_make_dual_outside_level_raises():
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(ember.ones(2), ember.ones(2))


def test_make_dual_shape_mismatch_raises():
    with fwAD.dual_level(), pytest.raises(RuntimeError, match="different size"):
        fwAD.make_dual(ember.ones(2), ember.ones(3))


def test_make_dual_integer_primal_raises_value_error():
    with fwAD.dual_level(), pytest.raises(ValueError, match="floating point or complex"):
        fwAD.make_dual(ember.arange(3), ember.arange(3))


def test_enter_dual_level_nested_raises():
    with fwAD.dual_level(), pytest.raises(RuntimeError, match="Nested forward mode AD"):
        fwAD.enter_dual_level()


def test_exit_dual_level_without_level_raises():
    with pytest.raises(RuntimeError):
        fwAD.exit_dual_level()


def test_unpack_dual_named_tuple_fields():
    with fwAD.dual_level():
        u = fwAD.unpack_dual(_dual([1.0], [2.0]))
        assert isinstance(u, fwAD.UnpackedDualTensor)
        assert u._fields == ("primal", "tangent")
        assert u.tangent.tolist() == [2.0]
        assert fwAD.unpack_dual(u.primal).tangent is None


def test_unpack_dual_outside_level_gives_none():
    x = ember.ones(2)
    assert fwAD.unpack_dual(x).tangent is None


def test_tangents_dropped_on_exit():
    with fwAD.dual_level():
        y = _dual([1.0, 2.0], [1.0, 1.0]) * 3
    assert fwAD.unpack_dual(y).tangent is None


def test_make_dual_is_view_of_primal():
    p = ember.zeros(2, dtype=ember.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(p, ember.ones(2, dtype=ember.float64))
        assert d._base is p


def test_fw_primal_drops_tangent():
    with fwAD.dual_level() as lvl:
        d = _dual([1.0], [1.0])
        assert fwAD.unpack_dual(d._fw_primal(lvl)).tangent is None


def test_repr_shows_tangent():
    with fwAD.dual_level():
        assert "tangent=" in repr(_dual([1.0], [2.0]))


def test_floor_gives_zero_tangent():
    with fwAD.dual_level():
        t = fwAD.unpack_dual(_dual([1.5, 2.5], [1.0, 1.0]).floor()).tangent
        assert t.tolist() == [0.0, 0.0]


# views and in-place ops


def test_view_tangent_is_view_of_tangent():
    with fwAD.dual_level():
        tan = ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float64)
        d = fwAD.make_dual(ember.zeros(4, dtype=ember.float64), tan)
        v = d.view(2, 2)[1]
        vt = fwAD.unpack_dual(v).tangent
        assert vt.tolist() == [3.0, 4.0]
        assert vt.data_ptr() == tan.data_ptr() + 2 * 8


def test_inplace_on_dual_updates_tangent():
    with fwAD.dual_level():
        x = _dual([1.0, 2.0], [1.0, 1.0])
        y = x.clone()
        y.mul_(x)
        assert fwAD.unpack_dual(y).tangent.tolist() == [2.0, 4.0]


def test_inplace_on_view_reaches_base_tangent():
    base = ember.zeros(4, dtype=ember.float64)
    with fwAD.dual_level():
        x = _dual([1.0, 2.0], [5.0, 7.0])
        base[1:3].copy_(x)
        assert fwAD.unpack_dual(base).tangent.tolist() == [0.0, 5.0, 7.0, 0.0]


def test_setitem_carries_tangent():
    base = ember.zeros(3, dtype=ember.float64)
    with fwAD.dual_level():
        base[0] = _dual(2.0, 3.0)
        assert fwAD.unpack_dual(base).tangent.tolist() == [3.0, 0.0, 0.0]


def test_fill_zeroes_tangent():
    with fwAD.dual_level():
        x = _dual([1.0, 2.0], [1.0, 1.0]).clone()
        x.fill_(3.0)
        assert fwAD.unpack_dual(x).tangent.tolist() == [0.0, 0.0]


def test_inplace_on_base_seen_by_view_tangent():
    with fwAD.dual_level():
        x = _dual([1.0, 2.0], [1.0, 1.0]).clone()
        v = x[:1]
        x.mul_(2)
        assert fwAD.unpack_dual(v).tangent.tolist() == [2.0]


# custom Functions


class _Mul(ember.autograd.Function):
    @staticmethod
    def forward(x, y):
        return x * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_forward(*inputs)

    @staticmethod
    def jvp(ctx, x_dot, y_dot):
        x, y = ctx.saved_tensors
        return x_dot * y + x * y_dot

    @staticmethod
    def backward(ctx, g):
        return g, g


class _NoJvp(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_custom_function_jvp_used():
    with fwAD.dual_level():
        x = _dual([2.0], [1.0])
        y = _Mul.apply(x, ember.tensor([3.0], dtype=ember.float64))
        assert fwAD.unpack_dual(y).tangent.tolist() == [3.0]


def test_custom_function_without_jvp_raises():
    with fwAD.dual_level(), pytest.raises(NotImplementedError, match="jvp function"):
        _NoJvp.apply(_dual([1.0], [1.0]))


def test_save_for_forward_rejects_non_tensor():
    class Bad(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(3)
            return x

    with pytest.raises(AssertionError, match="save_for_forward"):
        Bad.apply(ember.ones(1))


# transforms


def test_forward_over_reverse_hvp():
    f = lambda x: (x.exp() * x.cos()).sum()  # noqa: E731
    x = ember.tensor([0.3, -0.7, 1.1], dtype=ember.float64)
    v = ember.tensor([1.0, 2.0, -1.0], dtype=ember.float64)
    hvp = ember.func.jvp(ember.func.grad(f), (x,), (v,))[1]
    assert_close(hvp, ember.autograd.functional.hessian(f, x) @ v)


def test_nested_jvp_second_derivative():
    f = lambda x: x.sin()  # noqa: E731
    x = ember.tensor([0.5], dtype=ember.float64)
    one = ember.ones(1, dtype=ember.float64)
    d2 = ember.func.jvp(lambda y: ember.func.jvp(f, (y,), (one,))[1], (x,), (one,))[1]
    assert_close(d2, -x.sin())


def test_jacfwd_matches_jacrev():
    f = lambda x: (x.tanh() @ ember.ones(3, 2, dtype=ember.float64)) * x.sum()  # noqa: E731
    x = ember.tensor([0.1, 0.2, 0.3], dtype=ember.float64)
    assert_close(ember.func.jacfwd(f)(x), ember.func.jacrev(f)(x))


def test_linearize_jvp_fn_matches_jvp():
    f = lambda x: x.exp() * x  # noqa: E731
    x = ember.tensor([0.1, 0.2], dtype=ember.float64)
    v = ember.tensor([1.0, -1.0], dtype=ember.float64)
    out, jvp_fn = ember.func.linearize(f, x)
    assert_close(jvp_fn(v), ember.func.jvp(f, (x,), (v,))[1])


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_forward_over_reverse_matches_torch():
    import torch

    x = np.array([0.3, -0.7, 1.1])
    v = np.array([1.0, 2.0, -1.0])
    e = ember.func.jvp(ember.func.grad(lambda x: (x.sin() * x.prod()).sum()),
                       (ember.from_numpy(x),), (ember.from_numpy(v),))[1]
    t = torch.func.jvp(torch.func.grad(lambda x: (x.sin() * x.prod()).sum()),
                       (torch.from_numpy(x),), (torch.from_numpy(v),))[1]
    assert_close(e, t)


def test_no_dual_level_leaves_dispatch_untouched():
    from ember import _dispatch

    with fwAD.dual_level():
        pass
    assert not _dispatch.state.modes
    assert _dispatch.commit_tangent is None and _dispatch.carries_tangent is None


def test_gradcheck_check_forward_ad_passes():
    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: t.sin() * t, (x,), check_forward_ad=True)


def test_gradcheck_check_forward_ad_complex_non_holomorphic():
    z = ember.randn(3, dtype=ember.complex128, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: t.abs() * t, (z,), check_forward_ad=True)


def test_gradcheck_check_forward_ad_catches_wrong_jvp():
    class Wrong(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def jvp(ctx, x_dot):
            return x_dot * 3

    x = ember.randn(2, dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="forward mode mismatch"):
        ember.autograd.gradcheck(Wrong.apply, (x,), check_forward_ad=True,
                                 check_backward_ad=False)


def test_module_parameters_as_duals():
    model = ember.nn.Linear(5, 5)
    x = ember.randn(4, 5)
    params = dict(model.named_parameters())
    tangents = {n: ember.rand_like(p) for n, p in params.items()}
    with fwAD.dual_level():
        for n, p in params.items():
            delattr(model, n)
            setattr(model, n, fwAD.make_dual(p, tangents[n]))
        jvp = fwAD.unpack_dual(model(x)).tangent
    assert_close(jvp, x @ tangents["weight"].T + tangents["bias"])


def test_functional_call_with_dual_params():
    model = ember.nn.Linear(3, 2)
    x = ember.randn(4, 3)
    params = dict(model.named_parameters())
    tangents = {n: ember.rand_like(p) for n, p in params.items()}
    with fwAD.dual_level():
        duals = {n: fwAD.make_dual(p, tangents[n]) for n, p in params.items()}
        out = ember.func.functional_call(model, duals, (x,))
        jvp = fwAD.unpack_dual(out).tangent
    assert_close(jvp, x @ tangents["weight"].T + tangents["bias"])


def test_custom_op_output_has_no_tangent():
    @ember.library.custom_op("fwad_test::sin", mutates_args=())
    def f(x: ember.Tensor) -> ember.Tensor:
        return x.sin()

    with fwAD.dual_level():
        assert fwAD.unpack_dual(f(_dual([1.0], [1.0]))).tangent is None


def test_dual_level_as_decorator():
    @fwAD.dual_level()
    def run():
        return fwAD.unpack_dual(_dual([2.0], [1.0]).exp()).tangent.item()

    assert abs(run() - np.exp(2.0)) < 1e-9


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_layer_norm_jvp_matches_torch():
    import torch

    rng = np.random.default_rng(0)
    x, t, w, wt = (rng.standard_normal(s) for s in ((3, 5), (3, 5), (5,), (5,)))
    E = ember.from_numpy
    with fwAD.dual_level():
        y = ember.nn.functional.layer_norm(fwAD.make_dual(E(x), E(t)), (5,),
                                           fwAD.make_dual(E(w), E(wt)))
        e = fwAD.unpack_dual(y).tangent
    T = torch.from_numpy
    ref = torch.func.jvp(lambda x, w: torch.nn.functional.layer_norm(x, (5,), w),
                         (T(x), T(w)), (T(t), T(wt)))[1]
    assert_close(e, ref)


# ------------------------------------------------------------------------------------------------
# formulas beyond the OpInfo samples: options and edge cases, against torch.func.jvp


def _rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape)


def _spd(n, batch=()):
    a = _rand(*batch, n, n, seed=5)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _sym(a):
    return (a + np.swapaxes(a, -1, -2)) / 2


_TGT = np.array([1, 4, 0, 4])
_MASK = np.random.default_rng(3).random((3, 5)) > 0.3
_CUMPROD_ZEROS = np.where(np.arange(18).reshape(3, 6) % 7 == 2, 0.0, _rand(3, 6))

#: name -> (f(T, *tensors), primal arrays, tangent arrays or None for cos(3 * primal))
FORMULA_CASES = {
    "cross_entropy_weight_ignore_mean": (
        lambda T, x: T.nn.functional.cross_entropy(
            x, T.tensor(_TGT), weight=T.tensor(np.linspace(0.5, 2, 5)), ignore_index=0),
        [_rand(4, 5)], None),
    "cross_entropy_spatial_none": (
        lambda T, x: T.nn.functional.cross_entropy(x, T.tensor(_TGT[:3].reshape(3, 1).repeat(
            2, 1).reshape(3, 2) % 5), reduction="none"), [_rand(3, 5, 2)], None),
    "sdpa_bool_mask": (
        lambda T, q, k, v: T.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=T.tensor(_MASK)), [_rand(2, 3, 4), _rand(2, 5, 4), _rand(2, 5, 6)],
        None),
    "sdpa_float_mask": (
        lambda T, q, k, v, m: T.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m),
        [_rand(2, 3, 4), _rand(2, 5, 4), _rand(2, 5, 6), _rand(3, 5)], None),
    "sdpa_causal": (
        lambda T, q, k, v: T.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
        [_rand(2, 4, 4), _rand(2, 4, 4), _rand(2, 4, 6)], None),
    "adaptive_max_pool2d": (lambda T, x: T.nn.functional.adaptive_max_pool2d(x, (2, 3)),
                            [_rand(2, 3, 5, 7)], None),
    "cumprod_with_zeros": (lambda T, x: T.cumprod(x, 1), [_CUMPROD_ZEROS], [_rand(3, 6, seed=9)]),
    "logcumsumexp": (lambda T, x: T.logcumsumexp(x, 1), [5 * _rand(3, 6)], None),
    "cross": (lambda T, a, b: T.linalg.cross(a, b, dim=0), [_rand(3, 4), _rand(3, 4, seed=1)],
              None),
    "slogdet": (lambda T, a: tuple(T.linalg.slogdet(a)), [_rand(2, 3, 3)], None),
    "inv_ex": (lambda T, a: T.linalg.inv_ex(a)[0], [_rand(2, 3, 3)], None),
    "solve_triangular_right_unit": (
        lambda T, a, b: T.linalg.solve_triangular(a, b, upper=True, left=False,
                                                  unitriangular=True),
        [_rand(3, 3) + 3 * np.eye(3), _rand(2, 3)], None),
    "cholesky_upper": (lambda T, a: T.linalg.cholesky(a, upper=True), [_spd(3, (2,))],
                       [_sym(_rand(2, 3, 3))]),
    "eigh_eigenvalues": (lambda T, a: T.linalg.eigh(a)[0], [_sym(_rand(2, 4, 4))],
                         [_sym(_rand(2, 4, 4, seed=2))]),
    "eigh_reconstruction": (lambda T, a: (lambda L, V: (V * L.unsqueeze(-2)) @ V.mT)(
        *T.linalg.eigh(a)), [_sym(_rand(4, 4))], [_sym(_rand(4, 4, seed=2))]),
    "svdvals": (lambda T, a: T.linalg.svdvals(a), [_rand(2, 4, 3)], None),
    "matrix_exp": (lambda T, a: T.linalg.matrix_exp(a), [0.5 * _rand(2, 3, 3)], None),
    "qr_reduced": (lambda T, a: tuple(T.linalg.qr(a)), [_rand(5, 3)], None),
    # gauge-invariant functions of the factors: U S Vh, S, |U|, |Vh|
    "svd_reduced": (lambda T, a: (lambda U, S, Vh: (
        (U * S.unsqueeze(-2)) @ Vh, S, U.abs(), Vh.abs()))(*T.linalg.svd(a, full_matrices=False)),
        [_rand(2, 5, 3)], None),
    "vander": (lambda T, x: T.vander(x, N=4), [_rand(5)], None),
    "polar": (lambda T, r, t: T.polar(r, t), [np.abs(_rand(4)), _rand(4, seed=1)], None),
    "frexp_mantissa": (lambda T, x: T.frexp(x)[0], [10 * _rand(5)], None),
    "block_diag": (lambda T, a, b: T.block_diag(a, b), [_rand(2, 3), _rand(1, 2)], None),
}


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("case", sorted(FORMULA_CASES))
def test_jvp_formula_matches_torch(case):
    import torch

    fn, primals, tangents = FORMULA_CASES[case]
    if tangents is None:
        tangents = [np.cos(3 * p) for p in primals]
    res = []
    for T in (ember, torch):
        res.append(T.func.jvp(lambda *xs: fn(T, *xs), tuple(T.tensor(p) for p in primals),
                              tuple(T.tensor(t) for t in tangents))[1])
    e, t = (r if isinstance(r, tuple) else (r,) for r in res)
    for a, b in zip(e, t):
        assert_close(a, ember.tensor(b.numpy()), rtol=1e-6, atol=1e-8)


def _lstm_pair():
    import torch

    torch.manual_seed(0)
    tm = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2,
                       batch_first=True).double()
    em = ember.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2,
                       batch_first=True).double()
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return em, tm


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_lstm_jvp_matches_torch():
    import torch

    em, tm = _lstm_pair()
    x, t = _rand(2, 5, 3), _rand(2, 5, 3, seed=4)
    e = ember.func.jvp(lambda v: em(v)[0], (ember.tensor(x),), (ember.tensor(t),))[1]
    r = torch.func.jvp(lambda v: tm(v)[0], (torch.tensor(x),), (torch.tensor(t),))[1]
    assert_close(e, ember.tensor(r.detach().numpy()), rtol=1e-6, atol=1e-8)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("p", [0.5, 1.0, 2.0, 3.0, float("inf")])
def test_cdist_jvp_matches_torch_norm_of_differences(p):
    # torch has no forward rule for cdist: its norm of the differences is the oracle
    import torch

    a, b = _rand(2, 4, 3), _rand(2, 5, 3, seed=1)
    b[:, 0] = a[:, 1]  # one zero distance
    ta, tb = np.cos(3 * a), np.sin(2 * b)
    got = ember.func.jvp(lambda x, y: ember.cdist(x, y, p=p), (ember.tensor(a), ember.tensor(b)),
                         (ember.tensor(ta), ember.tensor(tb)))[1]
    want = torch.func.jvp(lambda x, y: torch.linalg.vector_norm(
        x.unsqueeze(-2) - y.unsqueeze(-3), p, -1), (torch.tensor(a), torch.tensor(b)),
        (torch.tensor(ta), torch.tensor(tb)))[1]
    assert_close(got, ember.tensor(want.numpy()), rtol=1e-6, atol=1e-8)


def test_common_ops_have_jvp_formulas():
    # not the transpose of the vjp (NOTE [ Which rule each op uses ] in
    # ember/autograd/_forward.py)
    from ember.autograd._forward import fallback_ops

    common = {"cross_entropy_loss", "scaled_dot_product_attention", "adaptive_max_pool",
              "max_pool_backward", "lstm_cell", "lstm_layer", "cumprod", "logcumsumexp",
              "linalg_cholesky", "linalg_eigh", "linalg_slogdet", "linalg_solve_triangular"}
    assert not common & set(fallback_ops())


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("order", [0.5, -1.0])
def test_vector_norm_order_below_one_zero_elements_match_torch(order):
    # zero elements: zero partials (not 0 * inf = nan); with order < 0 the norm is 0
    import torch

    x = np.array([[0.0, 1.0, -2.0], [0.0, 0.0, 0.0]])
    t = np.array([[1.0, 0.5, 0.3], [1.0, 2.0, 3.0]])
    got, want = (T.func.jvp(lambda v: T.linalg.vector_norm(v, order, -1), (T.tensor(x),),
                            (T.tensor(t),))[1] for T in (ember, torch))
    assert_close(got, ember.tensor(want.numpy()))
