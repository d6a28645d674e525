"""Forward-mode formulas of the linalg factorisations, scatter reductions and CTC loss:
values against ``torch.func.jvp`` (or central differences where torch's rule is off),
and under ``vmap`` against ``torch.func.vmap`` of the same ``jvp``."""

import numpy as np
import pytest

import ember
from ember.testing import assert_close
from tests.conftest import HAS_TORCH

if HAS_TORCH:
    import torch

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _r(*shape, seed=0):
    return np.random.default_rng(seed + 7 * len(shape) + sum(shape)).standard_normal(shape)


_IDX = np.array([[0, 1, 0, 2], [1, 1, 0, 0]])
_TRI = np.tril(_r(2, 3, 3)) + 3 * np.eye(3)
# ties: a member of src equal to self's value, two equal src members in one group
_TA, _TS = _r(2, 3), _r(2, 4, seed=1)
_TS[0, 0], _TS[1, 2], _TS[1, 3] = _TA[0, 0], 7.0, 7.0


def _sr(reduce, include_self=True):
    return lambda T, x, y: x.scatter_reduce(1, T.tensor(_IDX), y, reduce,
                                            include_self=include_self)


def _lu_solve(left, adjoint):
    return lambda T, a, b: T.linalg.lu_solve(*T.linalg.lu_factor(a), b, left=left,
                                             adjoint=adjoint)


#: name -> (f(T, *tensors), primal arrays); tangents are cos(3 * primal)
CASES = {
    "pinv_wide": (lambda T, a: T.linalg.pinv(a), [_r(2, 3, 5)]),
    "pinv_tall": (lambda T, a: T.linalg.pinv(a), [_r(5, 3)]),
    "pinv_hermitian": (lambda T, a: T.linalg.pinv(a, hermitian=True), [_r(4, 4) + _r(4, 4).T]),
    "lu_square": (lambda T, a: tuple(T.linalg.lu(a))[1:], [_r(2, 4, 4)]),
    "lu_wide": (lambda T, a: tuple(T.linalg.lu(a))[1:], [_r(3, 5)]),
    "lu_tall": (lambda T, a: tuple(T.linalg.lu(a))[1:], [_r(5, 3)]),
    "lu_factor_wide": (lambda T, a: T.linalg.lu_factor(a)[0], [_r(2, 3, 5)]),
    "lu_factor_tall": (lambda T, a: T.linalg.lu_factor(a)[0], [_r(5, 3)]),
    "lu_solve_left": (_lu_solve(True, False), [_r(2, 4, 4), _r(4, 3)]),
    "lu_solve_left_adjoint": (_lu_solve(True, True), [_r(4, 4), _r(4, 3)]),
    "lu_solve_right": (_lu_solve(False, False), [_r(4, 4), _r(2, 3, 4)]),
    "lu_solve_right_adjoint": (_lu_solve(False, True), [_r(4, 4), _r(3, 4)]),
    "cholesky_solve_lower": (lambda T, b, l: T.cholesky_solve(b, l), [_r(2, 3, 2), _TRI]),
    "cholesky_solve_upper": (lambda T, b, u: T.cholesky_solve(b, u, upper=True),
                             [_r(3, 2), _TRI[0].T.copy()]),
    "eigvals": (lambda T, a: T.linalg.eigvals(a), [_r(2, 4, 4)]),
    # gauge-invariant functions of the eigenvectors: the reconstruction and |V|
    "eig": (lambda T, a: (lambda L, V: (L, (V * L.unsqueeze(-2)) @ T.linalg.inv(V), V.abs()))(
        *T.linalg.eig(a)), [_r(2, 4, 4)]),
    "scatter_reduce_amax_ties": (_sr("amax"), [_TA, _TS]),
    "scatter_reduce_amin_exclude_self": (_sr("amin", False), [_TA, _TS]),
    "scatter_reduce_mean_exclude_self": (_sr("mean", False), [_TA, _TS]),
}


def _jvp(T, fn, primals):
    tangents = [np.cos(3 * p) for p in primals]
    return T.func.jvp(lambda *xs: fn(T, *xs), tuple(T.tensor(p) for p in primals),
                      tuple(T.tensor(t) for t in tangents))[1]


def _same(e, t, **kw):
    e, t = (r if isinstance(r, tuple) else (r,) for r in (e, t))
    assert len(e) == len(t)
    for a, b in zip(e, t):
        assert_close(a, ember.tensor(b.numpy()), rtol=1e-6, atol=1e-8, **kw)


@pytest.mark.parametrize("case", sorted(CASES))
def test_jvp_matches_torch(case):
    fn, primals = CASES[case]
    _same(_jvp(ember, fn, primals), _jvp(torch, fn, primals))


#: vmap over a leading batch of 3 (primals and tangents), against torch.func.vmap
VMAP_CASES = {
    "pinv": (lambda T, a: T.linalg.pinv(a), [_r(3, 2, 4)]),
    "lu": (lambda T, a: tuple(T.linalg.lu(a))[1:], [_r(3, 4, 3)]),
    "lu_factor": (lambda T, a: T.linalg.lu_factor(a)[0], [_r(3, 3, 4)]),
    "lu_solve": (_lu_solve(True, False), [_r(3, 4, 4), _r(3, 4, 2)]),
    "cholesky_solve": (lambda T, b, l: T.cholesky_solve(b, l),
                       [_r(3, 3, 2), np.tril(_r(3, 3, 3)) + 3 * np.eye(3)]),
    "eigvals": (lambda T, a: T.linalg.eigvals(a), [_r(3, 4, 4)]),
    "scatter_reduce_amax": (_sr("amax"), [np.stack([_TA, _TA + 1, -_TA]),
                                          np.stack([_TS, _TS + 1, _TS])]),
    "scatter_reduce_mean": (_sr("mean"), [_r(3, 2, 3), _r(3, 2, 4)]),
}


@pytest.mark.parametrize("case", sorted(VMAP_CASES))
def test_jvp_under_vmap_matches_torch(case):
    import warnings

    fn, primals = VMAP_CASES[case]
    tangents = [np.cos(3 * p) for p in primals]
    k = len(primals)
    res = []
    for T in (ember, torch):
        def one(*xs, T=T):
            return T.func.jvp(lambda *ps: fn(T, *ps), xs[:k], xs[k:])[1]

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # per-sample fallbacks' performance warnings
            res.append(T.func.vmap(one)(*(T.tensor(x) for x in primals + tangents)))
    _same(*res)


def _central(fn, primals, eps=1e-6):
    tangents = [np.cos(3 * p) for p in primals]
    plus = fn(ember, *(ember.tensor(p + eps * t) for p, t in zip(primals, tangents)))
    minus = fn(ember, *(ember.tensor(p - eps * t) for p, t in zip(primals, tangents)))
    return (plus - minus) / (2 * eps)


_ZA, _ZS = _r(2, 3), _r(2, 5, seed=2)  # src wider than the index: its tail is unused
_ZA[0, 0], _ZS[0, 2], _ZS[1, 0], _ZS[1, 1] = 0.0, 0.0, 0.0, 0.0


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_with_zeros_matches_central_differences(include_self):
    # torch's forward rule for prod gives zeros here; differences are the oracle
    fn = _sr("prod", include_self)
    assert_close(_jvp(ember, fn, [_ZA, _ZS]), _central(fn, [_ZA, _ZS]), rtol=1e-5, atol=1e-6)


def test_scatter_reduce_prod_under_vmap_zeros_in_later_examples():
    # the zeros sit in examples 1 and 2 only: the rule must not look at example 0's data
    fn = _sr("prod")
    a, s = np.stack([_r(2, 3), _ZA, _ZA]), np.stack([_r(2, 5), _r(2, 5), _ZS])
    ta, ts = np.cos(3 * a), np.cos(3 * s)
    got = ember.func.vmap(lambda x, y, u, v: ember.func.jvp(
        lambda p, q: fn(ember, p, q), (x, y), (u, v))[1])(*map(ember.tensor, (a, s, ta, ts)))
    for i in range(3):
        assert_close(got[i], _central(fn, [a[i], s[i]]), rtol=1e-5, atol=1e-6)


def test_scatter_multiply_value_matches_central_differences():
    fn = (lambda T, x: x.scatter(1, T.tensor(_IDX), 0.0, reduce="multiply"))
    assert_close(_jvp(ember, fn, [_ZA]), _central(fn, [_ZA]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_inverse_jvp_matches_inverse_of_product(upper):
    # torch's own forward rule for cholesky_inverse disagrees with its vjp; the jvp of
    # inv(L L^H) with the whole factor differentiated (the vjp's convention) is the oracle
    L = _TRI.swapaxes(-1, -2).copy() if upper else _TRI
    got = _jvp(ember, lambda T, l: T.cholesky_inverse(l, upper=upper), [L])
    want = _jvp(torch, lambda T, l: T.linalg.inv(l.mT @ l if upper else l @ l.mT), [L])
    _same(got, want)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_jvp_matches_torch_jacobian(reduction):
    # torch has no forward rule for ctc_loss: its Jacobian times the tangent is the oracle
    lp = np.log(np.random.default_rng(0).dirichlet(np.ones(5), size=(6, 2)))
    t = np.cos(3 * lp)
    targets, il, tl = np.array([[1, 2, 2], [3, 1, 0]]), [6, 5], [3, 2]

    def f(T, x):
        return T.nn.functional.ctc_loss(x, T.tensor(targets), il, tl, reduction=reduction)

    got = ember.func.jvp(lambda x: f(ember, x), (ember.tensor(lp),), (ember.tensor(t),))[1]
    J = torch.autograd.functional.jacobian(lambda x: f(torch, x), torch.tensor(lp))
    want = (J * torch.tensor(t)).flatten(J.dim() - 3).sum(-1)
    assert_close(got, ember.tensor(want.numpy()), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["geqrf", "ldl_factor_ex", "ldl_solve"])
def test_unsupported_forward_ad_raises_like_torch(name):
    a = _r(3, 3) + _r(3, 3).T
    errors = []
    for T in (ember, torch):
        A = T.tensor(a)
        LD, piv = T.linalg.ldl_factor(A)
        f = {"geqrf": lambda x: T.geqrf(x)[0],
             "ldl_factor_ex": lambda x: T.linalg.ldl_factor_ex(x)[0],
             "ldl_solve": lambda x: T.linalg.ldl_solve(LD, piv, x)}[name]
        with pytest.raises(NotImplementedError) as info:
            T.func.jvp(f, (A,), (A,))
        errors.append(str(info.value).split("\n")[0])
    assert errors[0] in errors[1]


def test_no_op_takes_the_transpose_of_its_vjp():
    # every differentiable op has a forward rule of its own (NOTE [ Which rule each op
    # uses ] in ember/autograd/_forward.py)
    from ember.autograd._forward import fallback_ops

    assert fallback_ops() == []


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_reduce_extremum_grad_under_vmap_matches_torch(reduce):
    # ties differ between examples: the vjp must not read example 0's data for all
    a = np.stack([_TA, _TA + 1, -_TA])
    s = np.stack([_TS, _TS + 1, -_TS])
    w = np.arange(6.0).reshape(2, 3)
    res = []
    for T in (ember, torch):
        def loss(x, y, T=T):
            return (_sr(reduce)(T, x, y) * T.tensor(w)).sum()

        res.append(T.func.vmap(T.func.grad(loss, argnums=(0, 1)))(T.tensor(a), T.tensor(s)))
    _same(*res)


def test_scatter_reduce_prod_grad_under_vmap_zeros_in_later_examples():
    # torch's vmap refuses this (data-dependent); a loop of ember's own grads is the oracle
    a, s = np.stack([_r(2, 3), _ZA, _ZA]), np.stack([_r(2, 5), _r(2, 5), _ZS])

    def loss(x, y):
        return (_sr("prod")(ember, x, y) * ember.tensor(np.arange(6.0).reshape(2, 3))).sum()

    got = ember.func.vmap(ember.func.grad(loss, argnums=(0, 1)))(ember.tensor(a), ember.tensor(s))
    for i in range(3):
        want = ember.func.grad(loss, argnums=(0, 1))(ember.tensor(a[i]), ember.tensor(s[i]))
        assert_close(got[0][i], want[0])
        assert_close(got[1][i], want[1])


@pytest.mark.parametrize("create_graph", [False, True])
def test_sdpa_float_mask_gets_gradient_like_torch(create_graph):
    # an additive mask's gradient is the scores' gradient, summed over the broadcast batch
    arrays = [_r(2, 3, 4), _r(2, 5, 4), _r(2, 5, 6), _r(3, 5)]
    w = np.cos(np.arange(36.0)).reshape(2, 3, 6)
    res = []
    for T in (ember, torch):
        q, k, v, m = (T.tensor(a, requires_grad=True) for a in arrays)
        o = T.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)
        res.append(tuple(g.detach() for g in T.autograd.grad(
            (o * T.tensor(w)).sum(), (q, k, v, m), create_graph=create_graph)))
    _same(*res)


@pytest.mark.parametrize("argnums", [(0,), (0, 3), (1, 2)])
def test_sdpa_grad_under_vmap_matches_torch(argnums):
    # some inputs need no gradient: the per-example fallback gets None outputs to pass on
    import warnings

    arrays = [_r(4, 3, 4), _r(4, 5, 4), _r(4, 5, 6), _r(4, 3, 5)]
    res = []
    for T in (ember, torch):
        def loss(q, k, v, m, T=T):
            return T.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m).sin().sum()

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res.append(T.func.vmap(T.func.grad(loss, argnums=argnums))(
                *(T.tensor(a) for a in arrays)))
    _same(*res)


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_second_derivatives_through_zeros_match_torch(include_self):
    # groups with one zero from src (with and without a non-zero self), a zero in self
    # beside one from src, and a zero from src alone
    src = np.array([2.0, 0.0, 3.0, 0.0, 4.0, 1.5, 0.0, 0.0])
    inp = np.array([1.0, 0.5, 0.0, 2.0])
    idx = np.array([0, 0, 1, 1, 1, 2, 2, 3])
    res = []
    for T in (torch, ember):
        def f(s, i, T=T):
            out = i.scatter_reduce(0, T.tensor(idx), s, "prod", include_self=include_self)
            return (out * T.tensor([1.0, 2.0, 3.0, 4.0], dtype=T.float64)).sum()

        h = T.autograd.functional.hessian(f, (T.tensor(src), T.tensor(inp)))
        res.append(np.concatenate([b.numpy().ravel() for row in h for b in row]))
    np.testing.assert_allclose(res[1], res[0], atol=1e-12)
