"""OpInfo entries for the products (ember/_ops/linalg.py), ember.linalg (linalg_decomp.py,
linalg_norm.py) and the math library (misc.py).

Decompositions whose factors are only unique up to signs or phases (qr, svd, eigh, eig) are
tested through gauge-invariant wrappers: the singular values / eigenvalues, the absolute
values of the factors and products that reconstruct the input.
"""

import functools

import numpy as np

from .._opinfo import (
    COMPLEX, ErrorInput, FLOAT_AND_COMPLEX, INTS, OpInfo, SampleInput,
)
from ..._core import dtype as _dt

# ops that read one triangle of a Cholesky factor: ember's gradient is zero on the triangle
# that is never read (gradcheck confirms it); PyTorch returns a gradient there too
#: the factor's gradient follows torch's, which also fills the triangle the kernel never
#: reads (it differentiates A = L L^H for the factor as given), so no numerical gradcheck
_TRIANGLE_GRADIENT = {"gradients": "the unread triangle has torch's nonzero gradient"}

F32_64 = (_dt.float32, _dt.float64)
LINALG = F32_64 + COMPLEX
LOWP = (_dt.float16, _dt.bfloat16)
#: products run on every dtype but bool
PRODUCT = INTS + F32_64 + COMPLEX


def _arr(shape, dtype, rng, low=-2, high=2):
    a = rng.uniform(low, high, size=shape)
    if dtype.category == 3:
        a = a + 1j * rng.uniform(low, high, size=shape)
    if dtype.category == 1:
        a = np.round(a * 2)
    return a


def _t(shape, dtype, rng, low=-2, high=2):
    import ember

    a = _arr(shape, dtype, rng, low, high)
    if dtype is _dt.bfloat16:
        return ember.tensor(a.astype(np.float32)).to(dtype)
    return ember.tensor(a.astype(dtype.np))


def _square(shape, dtype, rng):
    """Diagonally dominant, hence invertible and well-conditioned."""
    import ember

    n = shape[-1]
    a = _arr(shape, dtype, rng, -1, 1) + n * np.eye(n)
    return ember.tensor(a.astype(dtype.np))


def _pd(shape, dtype, rng):
    """Hermitian positive-definite: A A^H + n I."""
    import ember

    n = shape[-1]
    a = _arr(shape, dtype, rng, -1, 1)
    a = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    return ember.tensor(a.astype(dtype.np))


def _conj_t(a):
    return np.conj(np.swapaxes(a, -1, -2))


# ------------------------------------------------------------------------------------------------
# products


def _sample_matmul(dtype, rng):
    for sa, sb in [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)),
                   ((2, 1, 3, 4), (3, 4, 2)), ((0, 3), (3, 2)), ((3, 0), (0, 2)),
                   ((2, 3, 4), (2, 4, 5))]:
        yield SampleInput(_t(sa, dtype, rng), _t(sb, dtype, rng), name=f"{sa}@{sb}")


def _sample_mm(dtype, rng):
    for sa, sb in [((3, 4), (4, 5)), ((0, 3), (3, 2)), ((3, 0), (0, 2)), ((1, 1), (1, 1))]:
        yield SampleInput(_t(sa, dtype, rng), _t(sb, dtype, rng), name=f"{sa}@{sb}")


def _sample_bmm(dtype, rng):
    for sa, sb in [((2, 3, 4), (2, 4, 5)), ((0, 3, 4), (0, 4, 2)), ((2, 3, 0), (2, 0, 2))]:
        yield SampleInput(_t(sa, dtype, rng), _t(sb, dtype, rng), name=f"{sa}@{sb}")


def _sample_mv(dtype, rng):
    for sa, sb in [((3, 4), (4,)), ((0, 4), (4,)), ((3, 0), (0,))]:
        yield SampleInput(_t(sa, dtype, rng), _t(sb, dtype, rng), name=f"{sa}@{sb}")


def _sample_vectors(dtype, rng):
    for n in (5, 1, 0):
        yield SampleInput(_t((n,), dtype, rng), _t((n,), dtype, rng), name=f"({n},)")


def _sample_inner(dtype, rng):
    for sa, sb in [((3, 4), (2, 4)), ((4,), (4,)), ((), (3,)), ((2, 3, 4), (4,)),
                   ((0, 4), (4,))]:
        yield SampleInput(_t(sa, dtype, rng), _t(sb, dtype, rng), name=f"{sa},{sb}")


def _sample_outer(dtype, rng):
    for sa, sb in [((3,), (4,)), ((0,), (4,)), ((1,), (1,))]:
        yield SampleInput(_t(sa, dtype, rng), _t(sb, dtype, rng), name=f"{sa},{sb}")


def _scalars(dtype):
    if dtype.category == 1:
        return [{}, {"beta": 2, "alpha": 3}, {"beta": 0}]
    return [{}, {"beta": 0.5, "alpha": -2.0}, {"beta": 0}]


def _sample_addmm(dtype, rng):
    for kw in _scalars(dtype):
        yield SampleInput(_t((3, 5), dtype, rng), _t((3, 4), dtype, rng), _t((4, 5), dtype, rng),
                          name=f"full{kw}", **kw)
        yield SampleInput(_t((5,), dtype, rng), _t((3, 4), dtype, rng), _t((4, 5), dtype, rng),
                          name=f"broadcast{kw}", **kw)
    yield SampleInput(_t((0, 2), dtype, rng), _t((0, 3), dtype, rng), _t((3, 2), dtype, rng),
                      name="empty")


def _sample_addmv(dtype, rng):
    for kw in _scalars(dtype):
        yield SampleInput(_t((3,), dtype, rng), _t((3, 4), dtype, rng), _t((4,), dtype, rng),
                          name=f"{kw}", **kw)
    yield SampleInput(_t((1,), dtype, rng), _t((3, 4), dtype, rng), _t((4,), dtype, rng),
                      name="broadcast")


def _sample_addr(dtype, rng):
    for kw in _scalars(dtype):
        yield SampleInput(_t((3, 4), dtype, rng), _t((3,), dtype, rng), _t((4,), dtype, rng),
                          name=f"{kw}", **kw)


def _sample_addbmm(dtype, rng):
    for kw in _scalars(dtype):
        yield SampleInput(_t((3, 5), dtype, rng), _t((2, 3, 4), dtype, rng),
                          _t((2, 4, 5), dtype, rng), name=f"{kw}", **kw)


def _sample_baddbmm(dtype, rng):
    for kw in _scalars(dtype):
        yield SampleInput(_t((2, 3, 5), dtype, rng), _t((2, 3, 4), dtype, rng),
                          _t((2, 4, 5), dtype, rng), name=f"{kw}", **kw)
    yield SampleInput(_t((3, 5), dtype, rng), _t((2, 3, 4), dtype, rng),
                      _t((2, 4, 5), dtype, rng), name="broadcast")


def _ref_add(prod):
    def ref(c, a, b, beta=1, alpha=1):
        p = prod(a, b) * alpha
        return p if beta == 0 else beta * c + p

    return ref


def _sample_einsum(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput("ij,jk->ik", t(2, 3), t(3, 4), name="mm")
    yield SampleInput("bij,bjk->bik", t(2, 2, 3), t(2, 3, 4), name="bmm")
    yield SampleInput("ii->i", t(3, 3), name="diagonal")
    yield SampleInput("ii", t(3, 3), name="trace")
    yield SampleInput("i,j->ij", t(3), t(4), name="outer")
    yield SampleInput("ij->", t(3, 4), name="sum")
    yield SampleInput("...ij,...jk", t(2, 2, 3), t(1, 3, 4), name="ellipsis_broadcast")
    yield SampleInput("ij,jk,kl->il", t(2, 3), t(3, 4), t(4, 2), name="chain")
    yield SampleInput("ij,ij->i", t(0, 3), t(0, 3), name="empty")


def _errors_einsum(rng):
    import ember

    yield ErrorInput(SampleInput("ij,jk->ik", ember.ones(2, 3), ember.ones(4, 5)),
                     RuntimeError, "")
    yield ErrorInput(SampleInput("ij->ik", ember.ones(2, 3)), RuntimeError, "")
    yield ErrorInput(SampleInput("ij,jk->ik", ember.ones(2, 3)), RuntimeError, "")


def _sample_tensordot(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(2, 3, 4), t(3, 4, 5), name="dims2")
    yield SampleInput(t(2, 3, 4), t(4, 5), dims=1, name="dims1")
    yield SampleInput(t(2, 3, 4), t(4, 2, 5), dims=([0, 2], [1, 0]), name="lists")
    yield SampleInput(t(2, 3), t(4, 5), dims=0, name="outer")


def _sample_kron(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(2, 3), t(3, 2), name="2d")
    yield SampleInput(t(2), t(3, 2), name="mixed_rank")
    yield SampleInput(t(2, 2, 2), t(2), name="3d")
    yield SampleInput(t(0, 2), t(2, 2), name="empty")


def _sample_cross(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(4, 3), t(4, 3), dim=1, name="dim1")
    yield SampleInput(t(3, 4), t(3, 4), dim=0, name="dim0")
    yield SampleInput(t(2, 3), t(1, 3), dim=-1, name="broadcast")
    yield SampleInput(t(0, 3), t(0, 3), dim=-1, name="empty")


def _sample_linalg_cross(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(4, 3), t(4, 3), name="default_dim")
    yield SampleInput(t(3, 4), t(3, 4), dim=0, name="dim0")
    yield SampleInput(t(2, 3), t(1, 3), name="broadcast")


def _sample_trace(dtype, rng):
    for s in [(3, 3), (3, 5), (5, 2), (0, 3)]:
        yield SampleInput(_t(s, dtype, rng), name=f"{s}")


def _sample_chain(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(2, 3), t(3, 4), t(4, 2), name="three")
    yield SampleInput(t(2, 3), t(3, 4), name="two")


def _sample_multi_dot(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput([t(2, 3), t(3, 4), t(4, 2)], name="three")
    yield SampleInput([t(3), t(3, 4), t(4, 5), t(5)], name="vectors")
    yield SampleInput([t(3), t(3, 4)], name="first_vector")


def _errors_matmul(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 3), ember.ones(4, 5)), RuntimeError,
                     "cannot be multiplied")
    yield ErrorInput(SampleInput(ember.ones(2, 3), ember.ones(3, 2, dtype=ember.float64)),
                     RuntimeError, "same dtype")
    yield ErrorInput(SampleInput(ember.ones(3), ember.ones(4)), RuntimeError,
                     "inconsistent tensor size")
    yield ErrorInput(SampleInput(ember.ones(()), ember.ones(4)), RuntimeError, "at least 1D")
    yield ErrorInput(SampleInput(ember.ones(2, 3, 4), ember.ones(5, 4, 2)), RuntimeError, "")
    yield ErrorInput(SampleInput(ember.ones(2, 2, dtype=ember.bool),
                                 ember.ones(2, 2, dtype=ember.bool)), RuntimeError, "Bool")


def _errors_mm(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(3), ember.ones(3, 4)), RuntimeError, "matrix")
    yield ErrorInput(SampleInput(ember.ones(2, 3), ember.ones(4, 5)), RuntimeError,
                     "cannot be multiplied")


def _errors_bmm(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 3, 4), ember.ones(3, 4, 5)), RuntimeError, "")
    yield ErrorInput(SampleInput(ember.ones(3, 4), ember.ones(4, 5)), RuntimeError, "3D")


def _errors_dot(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(3), ember.ones(4)), RuntimeError, "")
    yield ErrorInput(SampleInput(ember.ones(3, 3), ember.ones(3)), RuntimeError, "1D")
    yield ErrorInput(SampleInput(ember.ones(3), ember.ones(3, dtype=ember.float64)),
                     RuntimeError, "dtype")


def _errors_trace(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(3)), RuntimeError, "")


def _errors_addmm(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 2), ember.ones(2, 3), ember.ones(4, 2)),
                     RuntimeError, "")
    yield ErrorInput(SampleInput(ember.ones(3, 3), ember.ones(2, 3), ember.ones(3, 2)),
                     RuntimeError, "")


def _errors_cross(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(4, 2), ember.ones(4, 2), dim=1), RuntimeError, "")
    yield ErrorInput(SampleInput(ember.ones(4, 3), ember.ones(4, 3), dim=2), IndexError, "")


# ------------------------------------------------------------------------------------------------
# linalg


def _sample_square(dtype, rng, shapes=((3, 3), (2, 4, 4), (1, 1), (0, 0), (0, 2, 2))):
    for s in shapes:
        yield SampleInput(_square(s, dtype, rng), name=f"{s}")


def _sample_pd(dtype, rng):
    for s in [(3, 3), (2, 4, 4), (1, 1), (0, 0)]:
        yield SampleInput(_pd(s, dtype, rng), name=f"{s}")


def _sample_cholesky(dtype, rng):
    yield from _sample_pd(dtype, rng)
    yield SampleInput(_pd((3, 3), dtype, rng), upper=True, name="upper")


def _sample_rect(dtype, rng, shapes=((4, 3), (3, 4), (3, 3), (2, 5, 3), (0, 3), (3, 0))):
    for s in shapes:
        yield SampleInput(_t(s, dtype, rng, -1, 1), name=f"{s}")


def _sample_solve(dtype, rng):
    yield SampleInput(_square((3, 3), dtype, rng), _t((3, 2), dtype, rng), name="matrix")
    yield SampleInput(_square((3, 3), dtype, rng), _t((3,), dtype, rng), name="vector")
    yield SampleInput(_square((2, 3, 3), dtype, rng), _t((2, 3), dtype, rng),
                      name="batched_vector")
    yield SampleInput(_square((2, 3, 3), dtype, rng), _t((3, 4), dtype, rng), name="broadcast")
    yield SampleInput(_square((3, 3), dtype, rng), _t((2, 3), dtype, rng), left=False,
                      name="right")
    yield SampleInput(_square((0, 0), dtype, rng), _t((0, 2), dtype, rng), name="empty")


def _sample_solve_triangular(dtype, rng):
    for upper in (True, False):
        yield SampleInput(_square((3, 3), dtype, rng), _t((3, 2), dtype, rng), upper=upper,
                          name=f"upper={upper}")
    yield SampleInput(_square((2, 3, 3), dtype, rng), _t((2, 3, 2), dtype, rng), upper=True,
                      left=False if False else True, unitriangular=True, name="unit")
    yield SampleInput(_square((3, 3), dtype, rng), _t((2, 3), dtype, rng), upper=False,
                      left=False, name="right")


def _sample_cholesky_solve(dtype, rng):
    import ember

    for upper in (False, True):
        L = ember.linalg.cholesky(_pd((3, 3), dtype, rng), upper=upper)
        yield SampleInput(_t((3, 2), dtype, rng), L, upper=upper, name=f"upper={upper}")


def _sample_hermitian(dtype, rng):
    """Hermitian matrices with well-separated eigenvalues."""
    import ember

    for s in [(3, 3), (2, 4, 4), (1, 1)]:
        n = s[-1]
        q, _ = np.linalg.qr(_arr(s, dtype, rng, -1, 1) + n * np.eye(n))
        w = np.arange(1, n + 1) * 1.5 - 2
        a = (q * w[..., None, :]) @ _conj_t(q)
        a = (a + _conj_t(a)) / 2
        yield SampleInput(ember.tensor(a.astype(dtype.np)), name=f"{s}")


def _sample_eig(dtype, rng):
    """Matrices with distinct real eigenvalues (a similarity transform of a diagonal)."""
    import ember

    for s in [(3, 3), (2, 3, 3)]:
        n = s[-1]
        p = _arr(s, dtype, rng, -1, 1) + n * np.eye(n)
        d = np.arange(1, n + 1) * 1.0
        a = (p * d[..., None, :]) @ np.linalg.inv(p)
        yield SampleInput(ember.tensor(a.astype(dtype.np)), name=f"{s}")


def _sample_lstsq(dtype, rng):
    yield SampleInput(_t((5, 3), dtype, rng), _t((5, 2), dtype, rng), name="tall")
    yield SampleInput(_t((5, 3), dtype, rng), _t((5, 2), dtype, rng), driver="gelsd",
                      name="gelsd")
    yield SampleInput(_t((2, 5, 3), dtype, rng), _t((2, 5, 2), dtype, rng), name="batched")


def _sample_matrix_power(dtype, rng):
    for n in (0, 1, 2, 3, 5, -1, -2):
        yield SampleInput(_square((3, 3), dtype, rng), n, name=f"n={n}")
    yield SampleInput(_square((2, 2, 2), dtype, rng), 3, name="batched")


def _sample_matrix_power_int(dtype, rng):
    for n in (0, 1, 2, 3):
        yield SampleInput(_t((3, 3), dtype, rng), n, name=f"n={n}")


def _sample_matrix_exp(dtype, rng, shapes=((2, 2), (1, 2, 2), (1, 1), (0, 0))):
    # small: the gradient checks exponentiate 4x larger block matrices many times
    for s in shapes:
        yield SampleInput(_t(s, dtype, rng, -1, 1), name=f"{s}")


def _sample_pinv(dtype, rng):
    yield from _sample_rect(dtype, rng, ((4, 3), (3, 4), (2, 3, 3), (0, 3)))
    yield SampleInput(_pd((3, 3), dtype, rng), hermitian=True, name="hermitian")


def _sample_rank(dtype, rng):
    import ember

    yield from _sample_rect(dtype, rng, ((4, 3), (3, 4), (2, 3, 3)))
    a = _arr((4, 2), dtype, rng) @ _arr((2, 4), dtype, rng)
    yield SampleInput(ember.tensor(a.astype(dtype.np)), name="rank2")
    yield SampleInput(ember.tensor(a.astype(dtype.np)), atol=1.0, rtol=0.0, name="atol")


def _sample_vector_norm(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    for ord in (2, 1, 3, 0.5, float("inf"), -float("inf"), 0, -1):
        yield SampleInput(t(3, 4), ord=ord, name=f"ord={ord}")
    yield SampleInput(t(3, 4), ord=2, dim=1, keepdim=True, name="dim_keepdim")
    yield SampleInput(t(2, 3, 4), ord=1, dim=(0, 2), name="two_dims")
    yield SampleInput(t(0, 3), ord=2, name="empty")
    yield SampleInput(t(), name="scalar")


def _sample_matrix_norm(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    for ord in ("fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf")):
        yield SampleInput(t(3, 4), ord=ord, name=f"ord={ord}")
    yield SampleInput(t(2, 3, 4), ord="nuc", keepdim=True, name="nuc_keepdim")
    yield SampleInput(t(2, 3, 4), ord=1, dim=(0, 2), name="dims")
    yield SampleInput(t(2, 3, 4), ord=float("inf"), keepdim=True, name="inf_keepdim")


def _sample_norm(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(3, 4), name="default")
    yield SampleInput(t(5), ord=3, name="vector")
    yield SampleInput(t(3, 4), ord="nuc", name="matrix")
    yield SampleInput(t(2, 3, 4), dim=(1, 2), name="fro_dims")
    yield SampleInput(t(2, 3, 4), ord=1, dim=2, name="vector_dim")


def _sample_torch_norm(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(3, 4), name="fro")
    yield SampleInput(t(3, 4), p=1, dim=1, name="p1")
    yield SampleInput(t(3, 4), p="nuc", name="nuc")
    yield SampleInput(t(2, 3, 4), p=3, dim=(0, 1), keepdim=True, name="p3")


def _sample_vecdot(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(3, 4), t(3, 4), name="same")
    yield SampleInput(t(3, 4), t(4), name="broadcast")
    yield SampleInput(t(4, 3), t(4, 3), dim=0, name="dim0")


def _errors_inv(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 3)), RuntimeError, "square")
    yield ErrorInput(SampleInput(ember.ones(3)), RuntimeError, "at least 2 dimensions")
    yield ErrorInput(SampleInput(ember.ones(2, 2, dtype=ember.int64)), RuntimeError,
                     "floating point")
    yield ErrorInput(SampleInput(ember.zeros(3, 3)), RuntimeError, "singular")


def _errors_cholesky(rng):
    import ember

    yield ErrorInput(SampleInput(-ember.ones(3, 3).double()), RuntimeError,
                     "positive-definite")
    yield ErrorInput(SampleInput(ember.ones(2, 3)), RuntimeError, "square")


def _errors_solve(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(3, 3), ember.ones(4)), RuntimeError,
                     "Incompatible shapes")
    yield ErrorInput(SampleInput(ember.zeros(3, 3), ember.ones(3)), RuntimeError,
                     "singular")
    yield ErrorInput(SampleInput(ember.ones(3, 3), ember.ones(3).double()), RuntimeError,
                     "dtype")


def _errors_vector_norm(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(3, dtype=ember.int64)), RuntimeError,
                     "floating point")
    yield ErrorInput(SampleInput(ember.ones(0, 3), ord=float("inf")), RuntimeError, "empty")
    yield ErrorInput(SampleInput(ember.ones(3), dim=2), IndexError, "")


# gauge-invariant views of the decompositions


def _qr_invariant(mod):
    def f(A, mode="reduced"):
        Q, R = mod.linalg.qr(A, mode=mode)
        return Q.abs(), R.abs(), Q @ R

    return f


def _svd_invariant(mod):
    def f(A, full_matrices=True):
        U, S, Vh = mod.linalg.svd(A, full_matrices=full_matrices)
        k = S.shape[-1]
        # the columns of U (rows of Vh) beyond k are not unique: leave them out
        U, Vh = U[..., :k], Vh[..., :k, :]
        return S, U.abs(), Vh.abs(), (U * S.unsqueeze(-2).to(U.dtype)) @ Vh

    return f


def _eigh_invariant(mod):
    def f(A, UPLO="L"):
        w, V = mod.linalg.eigh((A + A.mH) / 2, UPLO=UPLO)
        return w, V.abs()

    return f


def _eig_invariant(mod):
    def f(A):
        w, V = mod.linalg.eig(A)
        # the eigenvalues of these samples are real and distinct: sort for a fixed order
        order = w.real.argsort(-1)
        return w.real.gather(-1, order), V.abs().gather(-1, order.unsqueeze(-2).expand(
            *V.shape))

    return f


def _eigvals_sorted(mod):
    def f(A):
        w = mod.linalg.eigvals(A)
        return w.real.sort(-1).values

    return f


def _svd_old_invariant(mod):
    def f(A, some=True):
        U, S, V = mod.svd(A, some=some)
        return S, U.abs(), V.abs()

    return f


def _hermitian(name, only_if=None):
    """``name`` applied to the Hermitian part of its input: the same values on the Hermitian
    samples, and gradients that gradcheck can compare (the op reads one triangle only)."""

    def make(mod):
        obj = mod
        for part in name.split("."):
            obj = getattr(obj, part)

        @functools.wraps(obj)  # its signature: the forms it takes (out=) are obj's
        def f(A, *args, **kwargs):
            if only_if is None or kwargs.get(only_if):
                A = (A + A.mH) / 2
            return obj(A, *args, **kwargs)

        return f

    return make


def _torch_resolved(name):
    """torch's ``name`` with conjugate views resolved (the test driver reads .numpy())."""

    def get(torch):
        obj = torch
        for part in name.split("."):
            obj = getattr(obj, part)

        def f(*args, **kwargs):
            r = obj(*args, **kwargs)
            if isinstance(r, tuple):
                return tuple(x.resolve_conj() for x in r)
            return r.resolve_conj()

        return f

    return get


def _both(make):
    """An ember op and a torch op built by the same wrapper."""
    import ember

    return {"op": make(ember), "torch_op": lambda torch: make(torch)}


def _np_qr(A, mode="reduced"):
    Q, R = np.linalg.qr(A, mode=mode)
    return np.abs(Q), np.abs(R), Q @ R


def _np_svd(A, full_matrices=True):
    if A.size == 0:
        return None
    U, S, Vh = np.linalg.svd(A, full_matrices=full_matrices)
    k = S.shape[-1]
    U, Vh = U[..., :k], Vh[..., :k, :]
    return S, np.abs(U), np.abs(Vh), (U * S[..., None, :]) @ Vh


def _np_lstsq(A, B, driver=None):
    return np.linalg.pinv(A) @ B


def _np_vector_norm(x, ord=2, dim=None, keepdim=False):
    ax = None if dim is None else (dim if isinstance(dim, tuple) else (dim,))
    a = np.abs(x).astype(np.float64)
    if ord == float("inf"):
        r = a.max(axis=ax, keepdims=keepdim)
    elif ord == -float("inf"):
        r = a.min(axis=ax, keepdims=keepdim)
    elif ord == 0:
        r = (a != 0).sum(axis=ax, keepdims=keepdim)
    else:
        r = (a ** ord).sum(axis=ax, keepdims=keepdim) ** (1 / ord)
    return np.asarray(r)


# ------------------------------------------------------------------------------------------------
# the math library (misc.py)


def _sample_cdist(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    for p in (2.0, 1.0, 0.5, 3.0, float("inf"), 0.0):
        yield SampleInput(t(3, 4), t(5, 4), p=p, name=f"p={p}")
    yield SampleInput(t(2, 3, 4), t(1, 5, 4), name="batched")
    yield SampleInput(t(30, 4), t(5, 4), name="use_mm")
    yield SampleInput(t(3, 4), t(5, 4), compute_mode="use_mm_for_euclid_dist", name="mm")
    yield SampleInput(t(0, 4), t(5, 4), name="empty")


def _np_cdist(a, b, p=2.0, compute_mode=None):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :]).astype(np.float64)
    if p == 0:
        return (d != 0).sum(-1)
    if p == float("inf"):
        return d.max(-1)
    return (d ** p).sum(-1) ** (1 / p)


def _sample_cartesian(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(3), t(2), name="two")
    yield SampleInput(t(2), t(2), t(3), name="three")
    yield SampleInput(t(3), name="one")


def _np_cartesian(*arrays):
    if len(arrays) == 1:
        return arrays[0]
    return np.stack([g.reshape(-1) for g in np.meshgrid(*arrays, indexing="ij")], -1)


def _sample_combinations(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(4), name="r2")
    yield SampleInput(t(4), r=3, name="r3")
    yield SampleInput(t(3), r=2, with_replacement=True, name="replacement")
    yield SampleInput(t(4), r=1, name="r1")


def _np_combinations(a, r=2, with_replacement=False):
    import itertools

    gen = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = list(gen(range(len(a)), r))
    return a[np.asarray(idx)]


def _sample_block_diag(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(2, 3), t(1, 2), name="two")
    yield SampleInput(t(2, 2), t(3), t(), name="mixed_ranks")
    yield SampleInput(t(0, 2), t(2, 1), name="empty_block")


def _sample_cov(dtype, rng):
    import ember

    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(3, 5), name="matrix")
    yield SampleInput(t(5), name="vector")
    yield SampleInput(t(3, 5), correction=0, name="correction0")
    if dtype.category >= 2:
        w = ember.tensor(rng.uniform(0.5, 2, 5).astype(dtype.to_real().np))
        f = ember.tensor(rng.integers(1, 4, 5))
        yield SampleInput(t(3, 5), fweights=f, aweights=w, name="weights")


def _np_cov(a, correction=1, fweights=None, aweights=None):
    return np.cov(a, ddof=correction, fweights=fweights, aweights=aweights)


def _sample_vander(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(t(4), name="default")
    yield SampleInput(t(4), N=3, name="N3")
    yield SampleInput(t(3), N=5, increasing=True, name="increasing")
    yield SampleInput(t(0), name="empty")


def _sample_lu_packed(dtype, rng):
    import ember

    for s in [(3, 3), (2, 3, 3), (3, 4), (4, 2)]:
        yield SampleInput(*ember.linalg.lu_factor(_square(s, dtype, rng) if s[-1] == s[-2]
                                                  else _t(s, dtype, rng)), name=f"{s}")


def _sample_lu_solve(dtype, rng):
    import ember

    for kw in ({}, {"adjoint": True}, {"left": False}):
        LU, piv = ember.linalg.lu_factor(_square((3, 3), dtype, rng))
        b = _t((3, 2) if kw.get("left", True) else (2, 3), dtype, rng)
        yield SampleInput(LU, piv, b, name=f"{kw}", **kw)


def _sample_cholesky_inverse(dtype, rng):
    import ember

    for upper in (False, True):
        L = ember.linalg.cholesky(_pd((3, 3), dtype, rng), upper=upper)
        yield SampleInput(L, upper=upper, name=f"upper={upper}")


def _sample_householder(dtype, rng):
    for shape, k in [((4, 3), 3), ((4, 3), 2), ((2, 3, 3), 3), ((3, 0), 0)]:
        yield SampleInput(_t(shape, dtype, rng, -1, 1), _t(shape[:-2] + (k,), dtype, rng, -1, 1),
                          name=f"{shape},k={k}")


lu_db = [
    OpInfo("linalg.householder_product", ref=None, sample_inputs=_sample_householder,
           dtypes=LINALG, method=False, supports_out=True),
    OpInfo("linalg.lu", ref=None, sample_inputs=lambda d, r: _sample_square(
        d, r, ((3, 3), (2, 4, 4), (0, 0))), dtypes=LINALG, method=False, supports_out=True),
    OpInfo("linalg.lu", variant="rectangular", ref=None,
           sample_inputs=lambda d, r: _sample_rect(d, r, ((3, 4), (4, 2), (0, 2))),
           dtypes=LINALG, method=False, supports_out=True),
    OpInfo("linalg.lu_factor", ref=None,
           sample_inputs=lambda d, r: _sample_rect(d, r, ((3, 3), (3, 4), (2, 4, 2))),
           dtypes=LINALG, method=False, supports_out=True),
    OpInfo("lu_unpack", ref=None, sample_inputs=_sample_lu_packed, dtypes=LINALG,
           method=False, supports_out=True,
           skips={"noncontiguous": "pivots are an index tensor"}),
    OpInfo("linalg.lu_solve", ref=None, sample_inputs=_sample_lu_solve, dtypes=LINALG,
           method=False, torch_op=_torch_resolved("linalg.lu_solve"), supports_out=True,
           skips={"noncontiguous": "pivots are an index tensor"}),
    OpInfo("cholesky_inverse", ref=None, sample_inputs=_sample_cholesky_inverse,
           dtypes=LINALG, supports_out=True, skips=_TRIANGLE_GRADIENT),
]


misc_db = [
    OpInfo("cdist", ref=_np_cdist, sample_inputs=_sample_cdist, dtypes=F32_64, method=False,
           atol=1e-4, rtol=1e-4),
    OpInfo("cartesian_prod", ref=_np_cartesian, sample_inputs=_sample_cartesian,
           dtypes=PRODUCT, method=False),
    OpInfo("combinations", ref=_np_combinations, sample_inputs=_sample_combinations,
           dtypes=PRODUCT, method=False),
    OpInfo("block_diag", ref=None, sample_inputs=_sample_block_diag, dtypes=PRODUCT,
           method=False),
    OpInfo("cov", ref=_np_cov, sample_inputs=_sample_cov, dtypes=LINALG),
    OpInfo("corrcoef", ref=np.corrcoef,
           sample_inputs=lambda d, r: (SampleInput(_t((3, 5), d, r), name="matrix"),),
           dtypes=LINALG),
    OpInfo("vander", ref=lambda x, N=None, increasing=False: np.vander(x, N, increasing),
           sample_inputs=_sample_vander, dtypes=(_dt.int64,) + F32_64 + COMPLEX,
           method=False),
]


op_db = [
    # products
    OpInfo("matmul", ref=np.matmul, sample_inputs=_sample_matmul, dtypes=PRODUCT,
           supports_out=True, error_inputs=_errors_matmul),
    OpInfo("matmul", variant="lowp", ref=np.matmul, sample_inputs=_sample_mm, dtypes=LOWP,
           atol=1e-2, rtol=1e-2, differentiable=False, supports_out=True),
    OpInfo("mm", ref=np.matmul, sample_inputs=_sample_mm, dtypes=PRODUCT, supports_out=True,
           error_inputs=_errors_mm),
    OpInfo("bmm", ref=np.matmul, sample_inputs=_sample_bmm, dtypes=PRODUCT, supports_out=True,
           error_inputs=_errors_bmm),
    OpInfo("mv", ref=np.matmul, sample_inputs=_sample_mv, dtypes=PRODUCT, supports_out=True),
    OpInfo("dot", ref=np.dot, sample_inputs=_sample_vectors, dtypes=PRODUCT, supports_out=True,
           error_inputs=_errors_dot),
    OpInfo("vdot", ref=np.vdot, sample_inputs=_sample_vectors, dtypes=PRODUCT,
           supports_out=True),
    OpInfo("inner", ref=np.inner, sample_inputs=_sample_inner, dtypes=PRODUCT,
           supports_out=True),
    OpInfo("outer", ref=np.outer, sample_inputs=_sample_outer, dtypes=PRODUCT,
           supports_out=True),
    OpInfo("ger", ref=np.outer, sample_inputs=_sample_outer, dtypes=F32_64, supports_out=True),
    OpInfo("addmm", ref=_ref_add(np.matmul), sample_inputs=_sample_addmm, dtypes=PRODUCT,
           inplace=True, supports_out=True, error_inputs=_errors_addmm),
    OpInfo("addmv", ref=_ref_add(np.matmul), sample_inputs=_sample_addmv, dtypes=PRODUCT,
           inplace=True, supports_out=True),
    OpInfo("addr", ref=_ref_add(np.outer), sample_inputs=_sample_addr, dtypes=PRODUCT,
           inplace=True, supports_out=True),
    OpInfo("addbmm", ref=_ref_add(lambda a, b: (a @ b).sum(0)), sample_inputs=_sample_addbmm,
           dtypes=PRODUCT, inplace=True, supports_out=True),
    OpInfo("baddbmm", ref=_ref_add(np.matmul), sample_inputs=_sample_baddbmm, dtypes=PRODUCT,
           inplace=True, supports_out=True),
    OpInfo("einsum", ref=lambda eq, *ops: np.einsum(eq, *ops), sample_inputs=_sample_einsum,
           dtypes=F32_64 + COMPLEX + (_dt.int64,), method=False, error_inputs=_errors_einsum),
    OpInfo("tensordot", ref=lambda a, b, dims=2: np.tensordot(a, b, axes=dims),
           sample_inputs=_sample_tensordot, dtypes=PRODUCT, method=False, supports_out=True),
    OpInfo("kron", ref=np.kron, sample_inputs=_sample_kron, dtypes=PRODUCT, supports_out=True),
    OpInfo("cross", ref=lambda a, b, dim: np.cross(a, b, axis=dim),
           sample_inputs=_sample_cross, dtypes=PRODUCT, supports_out=True,
           error_inputs=_errors_cross),
    OpInfo("linalg.cross", ref=lambda a, b, dim=-1: np.cross(a, b, axis=dim),
           sample_inputs=_sample_linalg_cross, dtypes=PRODUCT, method=False,
           supports_out=True),
    OpInfo("trace", ref=lambda a: np.trace(a), sample_inputs=_sample_trace,
           dtypes=PRODUCT, error_inputs=_errors_trace),
    OpInfo("chain_matmul", ref=lambda *ms: np.linalg.multi_dot(ms),
           sample_inputs=_sample_chain, dtypes=F32_64 + COMPLEX, method=False, supports_out=True),
    OpInfo("linalg.multi_dot", ref=lambda ms: np.linalg.multi_dot(ms),
           sample_inputs=_sample_multi_dot, dtypes=F32_64 + COMPLEX, method=False,
           supports_out=True),
    # inverses and determinants
    OpInfo("linalg.inv", ref=np.linalg.inv, sample_inputs=_sample_square, dtypes=LINALG,
           method=False, supports_out=True, error_inputs=_errors_inv),
    OpInfo("inverse", ref=np.linalg.inv, sample_inputs=_sample_square, dtypes=LINALG,
           supports_out=True, differentiable=False),
    OpInfo("linalg.inv_ex", ref=lambda a: (np.linalg.inv(a), np.zeros(a.shape[:-2])),
           sample_inputs=_sample_square, dtypes=LINALG, method=False, supports_out=True),
    OpInfo("linalg.det", ref=np.linalg.det, sample_inputs=_sample_square, dtypes=LINALG,
           method=False, supports_out=True),
    OpInfo("det", ref=np.linalg.det, sample_inputs=_sample_square, dtypes=LINALG,
           differentiable=False),
    OpInfo("linalg.slogdet", ref=np.linalg.slogdet, sample_inputs=_sample_square,
           dtypes=LINALG, method=False, supports_out=True),
    OpInfo("slogdet", ref=np.linalg.slogdet, sample_inputs=_sample_square, dtypes=LINALG,
           differentiable=False, supports_out=True),
    OpInfo("logdet", ref=lambda a: np.log(np.linalg.det(a)),
           sample_inputs=lambda d, r: _sample_square(d, r, ((3, 3), (2, 4, 4), (1, 1))),
           dtypes=LINALG),
    # solvers
    OpInfo("linalg.solve", ref=None, sample_inputs=_sample_solve, dtypes=LINALG,
           method=False, supports_out=True, error_inputs=_errors_solve,
           torch_op=_torch_resolved("linalg.solve")),
    OpInfo("linalg.solve_ex", ref=None, sample_inputs=_sample_solve, dtypes=LINALG,
           method=False, torch_op=_torch_resolved("linalg.solve_ex"), supports_out=True),
    OpInfo("linalg.solve_triangular", ref=None, sample_inputs=_sample_solve_triangular,
           dtypes=LINALG, method=False, supports_out=True),
    OpInfo("cholesky_solve", ref=None, sample_inputs=_sample_cholesky_solve, dtypes=LINALG,
           supports_out=True, skips=_TRIANGLE_GRADIENT),
    OpInfo("linalg.lstsq", ref=_np_lstsq, sample_inputs=_sample_lstsq, dtypes=LINALG,
           method=False, skips={"reference": "lstsq returns four results; checked by torch"}),
    # decompositions
    OpInfo("linalg.cholesky", ref=np.linalg.cholesky, sample_inputs=_sample_cholesky,
           dtypes=LINALG, method=False,
           skips={"reference": "upper= variant"}, **_both(_hermitian("linalg.cholesky"))),
    OpInfo("linalg.cholesky", variant="errors", ref=None, sample_inputs=_sample_pd,
           dtypes=(_dt.float64,), method=False, error_inputs=_errors_cholesky,
           differentiable=False),
    OpInfo("cholesky", ref=np.linalg.cholesky, sample_inputs=_sample_pd, dtypes=LINALG,
           method=False, differentiable=False, **_both(_hermitian("cholesky"))),
    OpInfo("linalg.cholesky_ex", ref=lambda a, upper=False: (
        np.linalg.cholesky(a), np.zeros(a.shape[:-2])), sample_inputs=_sample_pd,
        dtypes=LINALG, method=False, **_both(_hermitian("linalg.cholesky_ex"))),
    OpInfo("linalg.qr", ref=_np_qr, sample_inputs=_sample_rect, dtypes=LINALG, method=False,
           **_both(_qr_invariant)),
    OpInfo("linalg.qr", variant="complete", ref=lambda a, mode: _np_qr(a, mode),
           sample_inputs=lambda d, r: (SampleInput(s.input, mode="complete", name=s.name)
                                       for s in _sample_rect(d, r, ((4, 3), (3, 3)))),
           dtypes=LINALG, method=False, differentiable=False, **_both(_qr_invariant)),
    OpInfo("linalg.svd", ref=_np_svd,
           sample_inputs=lambda d, r: (SampleInput(s.input, full_matrices=False,
                                                   name=s.name)
                                       for s in _sample_rect(d, r, ((4, 3), (3, 4), (2, 3, 2),
                                                                    (0, 3)))),
           dtypes=LINALG, method=False, **_both(_svd_invariant),
           skips={"reference": "empty inputs"}),
    OpInfo("linalg.svd", variant="full", ref=None,
           sample_inputs=lambda d, r: _sample_rect(d, r, ((4, 3), (2, 3))),
           dtypes=LINALG, method=False, **_both(_svd_invariant)),
    OpInfo("svd", ref=None, sample_inputs=lambda d, r: _sample_rect(d, r, ((4, 3), (3, 4))),
           dtypes=LINALG, method=False, differentiable=False, **_both(_svd_old_invariant)),
    OpInfo("linalg.svdvals", ref=lambda a: np.linalg.svd(a, compute_uv=False),
           sample_inputs=lambda d, r: _sample_rect(d, r, ((4, 3), (3, 4), (2, 5, 3))),
           dtypes=LINALG, method=False, supports_out=True),
    OpInfo("linalg.eigh", ref=None, sample_inputs=_sample_hermitian, dtypes=LINALG,
           method=False, **_both(_eigh_invariant)),
    OpInfo("linalg.eigvalsh", ref=np.linalg.eigvalsh, sample_inputs=_sample_hermitian,
           dtypes=LINALG, method=False, **_both(_hermitian("linalg.eigvalsh"))),
    OpInfo("linalg.eig", ref=None, sample_inputs=_sample_eig, dtypes=LINALG, method=False,
           **_both(_eig_invariant), skips={"gradgrad": "second derivative of eigenvectors"}),
    OpInfo("linalg.eigvals", ref=None, sample_inputs=_sample_eig, dtypes=LINALG,
           method=False, **_both(_eigvals_sorted)),
    # pseudo-inverse, rank, matrix functions
    OpInfo("linalg.pinv", ref=None, sample_inputs=_sample_pinv, dtypes=LINALG, method=False,
           device_tols={"cuda": (1e-4, 1e-4)},
           **_both(_hermitian("linalg.pinv", only_if="hermitian"))),
    OpInfo("pinverse", ref=np.linalg.pinv,
           sample_inputs=lambda d, r: _sample_rect(d, r, ((4, 3), (3, 4))), dtypes=LINALG),
    OpInfo("linalg.matrix_rank", ref=None, sample_inputs=_sample_rank, dtypes=LINALG,
           method=False, differentiable=False, supports_out=True),
    OpInfo("linalg.matrix_power", ref=None, sample_inputs=_sample_matrix_power,
           dtypes=LINALG, method=False, supports_out=True),
    OpInfo("matrix_power", variant="int", ref=None, sample_inputs=_sample_matrix_power_int,
           dtypes=INTS[1:], differentiable=False, supports_out=True),
    OpInfo("linalg.matrix_exp", ref=None, sample_inputs=_sample_matrix_exp, dtypes=LINALG,
           method=False),
    # the aliases below share their op (and its gradient tests) with the linalg entries
    OpInfo("matrix_exp", ref=None, dtypes=LINALG, differentiable=False,
           sample_inputs=lambda d, r: _sample_matrix_exp(d, r, ((4, 4), (2, 3, 3)))),
    # norms
    OpInfo("linalg.vector_norm", ref=_np_vector_norm, sample_inputs=_sample_vector_norm,
           dtypes=FLOAT_AND_COMPLEX, method=False, supports_out=True,
           error_inputs=_errors_vector_norm, atol=1e-2, rtol=1e-2),
    OpInfo("linalg.matrix_norm", ref=None, sample_inputs=_sample_matrix_norm, dtypes=LINALG,
           method=False, supports_out=True),
    OpInfo("linalg.norm", ref=None, sample_inputs=_sample_norm, dtypes=LINALG, method=False,
           supports_out=True),
    OpInfo("norm", ref=None, sample_inputs=_sample_torch_norm, dtypes=LINALG, supports_out=True),
    OpInfo("linalg.vecdot", ref=None, sample_inputs=_sample_vecdot, dtypes=LINALG,
           method=False, supports_out=True),
]

op_db += misc_db + lu_db
