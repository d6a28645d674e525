"""OpInfo entries for ember/_ops/linalg_extra.py (LDL, lu_factor_ex, cond, tensorinv,
tensorsolve, vander, linalg.diagonal) and ember/_ops/linalg_legacy.py (torch.lu, lu_solve,
triangular_solve, geqrf, orgqr, ormqr, nuclear_norm, frobenius_norm, svd_lowrank,
pca_lowrank).

LDL factors and geqrf's packed QR are LAPACK's own output, so they are compared with PyTorch
(which calls the same routines) rather than with a NumPy reference.
"""

import math

import numpy as np

from .._opinfo import COMPLEX, INTS, ErrorInput, OpInfo, SampleInput
from .linalg import F32_64, LINALG, _square, _t


def _sym(shape, dtype, rng, hermitian):
    """Symmetric (or Hermitian) and indefinite: LDL's Bunch-Kaufman pivoting has work."""
    import ember

    a = rng.uniform(-2, 2, size=shape)
    if dtype.category == 3:
        a = a + 1j * rng.uniform(-2, 2, size=shape)
    t = np.swapaxes(a, -1, -2)
    a = a + (np.conj(t) if hermitian else t)
    return ember.tensor(a.astype(dtype.np))


def _sample_ldl(dtype, rng):
    for shape in [(3, 3), (2, 4, 4), (1, 1), (0, 0)]:
        yield SampleInput(_sym(shape, dtype, rng, False), name=f"{shape}")
    if dtype.category == 3:
        yield SampleInput(_sym((3, 3), dtype, rng, True), hermitian=True, name="hermitian")


def _errors_ldl(name):
    def gen(rng):
        import ember

        yield ErrorInput(SampleInput(ember.ones(2, 3)), RuntimeError, "square")
        yield ErrorInput(SampleInput(ember.ones(3, 3, dtype=ember.int64)), RuntimeError,
                         "floating point")

    return gen


def _sample_ldl_solve(dtype, rng):
    import ember

    for herm in ([False, True] if dtype.category == 3 else [False]):
        for shape, bshape in [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 1)), ((3, 3), (2, 3, 2))]:
            LD, piv = ember.linalg.ldl_factor(_sym(shape, dtype, rng, herm), hermitian=herm)
            yield SampleInput(LD, piv, _t(bshape, dtype, rng), hermitian=herm,
                              name=f"{shape},{bshape},hermitian={herm}")


def _sample_lu_factor_ex(dtype, rng):
    import ember

    for shape in [(3, 3), (2, 4, 4), (4, 3), (3, 5), (0, 0)]:
        yield SampleInput(_square(shape, dtype, rng) if shape[-1] == shape[-2]
                          else _t(shape, dtype, rng), name=f"{shape}")
    if dtype == ember.float32:  # exactly singular: info reports it (no gradient checked)
        yield SampleInput(ember.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=dtype), name="singular")


_CONDS = [None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf]


def _sample_cond(dtype, rng):
    for p in _CONDS:
        yield SampleInput(_square((2, 3, 3), dtype, rng), p, name=f"p={p}")
    yield SampleInput(_t((3, 5), dtype, rng), name="wide")
    yield SampleInput(_t((4, 2), dtype, rng), -2, name="tall")


def _errors_cond(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(3, 3), 3), RuntimeError, "invalid norm type")
    yield ErrorInput(SampleInput(ember.ones(2, 3), "fro"), RuntimeError, "square")


def _sample_diagonal(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), name="matrix")
    yield SampleInput(_t((2, 3, 4), dtype, rng), offset=1, name="offset")
    yield SampleInput(_t((2, 3, 4), dtype, rng), offset=-1, dim1=0, dim2=2, name="dims")


def _sample_tensorinv(dtype, rng):
    def inv_ready(shape, ind):
        left = int(np.prod(shape[:ind]))
        a = _square((left, left), dtype, rng)
        return a.reshape(shape)

    yield SampleInput(inv_ready((4, 6, 8, 3), 2), name="ind=2")
    yield SampleInput(inv_ready((6, 2, 3), 1), ind=1, name="ind=1")
    yield SampleInput(inv_ready((2, 3, 6), 2), ind=2, name="square_last")


def _errors_tensorinv(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(4, 6, 8, 2)), RuntimeError, "prod")
    yield ErrorInput(SampleInput(ember.ones(4, 4), ind=0), RuntimeError, "positive")


def _sample_tensorsolve(dtype, rng):
    a = _square((6, 6), dtype, rng)
    yield SampleInput(a.reshape(2, 3, 6), _t((2, 3), dtype, rng), name="plain")
    yield SampleInput(a.reshape(6, 2, 3), _t((2, 3), dtype, rng), dims=(0,), name="dims")
    yield SampleInput(a.reshape(2, 3, 2, 3), _t((2, 3), dtype, rng), name="matrix_x")


def _errors_tensorsolve(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 3, 5), ember.ones(2, 3)), RuntimeError, "prod")


def _sample_vander(dtype, rng):
    yield SampleInput(_t((4,), dtype, rng), name="vector")
    yield SampleInput(_t((2, 3), dtype, rng), N=5, name="batch_N")
    yield SampleInput(_t((3,), dtype, rng), N=2, name="N=2")


def _vander_ref(x, N=None):
    N = x.shape[-1] if N is None else N
    return x[..., None] ** np.arange(N)


def _errors_vander(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(3), N=1), RuntimeError, "greater than 1")
    yield ErrorInput(SampleInput(ember.ones(3, dtype=ember.bool)), RuntimeError, "Bool")
    yield ErrorInput(SampleInput(ember.ones(3, dtype=ember.float16)), RuntimeError, "Half")


# ------------------------------------------------------------------------------------------------
# the older top-level API


def _sample_lu(dtype, rng):
    for shape in [(3, 3), (2, 4, 4), (4, 3)]:
        yield SampleInput(_square(shape, dtype, rng) if shape[-1] == shape[-2]
                          else _t(shape, dtype, rng), name=f"{shape}")
    yield SampleInput(_square((3, 3), dtype, rng), get_infos=True, name="get_infos")


def _sample_lu_solve_legacy(dtype, rng):
    import ember

    for shape, bshape in [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 1))]:
        LU, piv = ember.linalg.lu_factor(_square(shape, dtype, rng))
        yield SampleInput(_t(bshape, dtype, rng), LU, piv, name=f"{shape},{bshape}")


def _sample_triangular_solve(dtype, rng):
    for upper in (True, False):
        for transpose in (False, True):
            yield SampleInput(_t((3, 2), dtype, rng), _square((3, 3), dtype, rng), upper,
                              transpose, name=f"upper={upper},transpose={transpose}")
    yield SampleInput(_t((2, 3, 2), dtype, rng), _square((3, 3), dtype, rng),
                      unitriangular=True, name="batch_b_unit")
    yield SampleInput(_t((3, 1), dtype, rng), _square((2, 3, 3), dtype, rng), upper=False,
                      name="batch_A")


def _errors_triangular_solve(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(3), ember.eye(3)), RuntimeError, "at least 2")
    yield ErrorInput(SampleInput(ember.ones(4, 2), ember.eye(3)), RuntimeError,
                     "Incompatible matrix sizes")


def _sample_geqrf(dtype, rng):
    for shape in [(4, 3), (3, 5), (2, 3, 3), (0, 2)]:
        yield SampleInput(_t(shape, dtype, rng), name=f"{shape}")


def _sample_orgqr(dtype, rng):
    import ember

    for shape in [(4, 3), (3, 3), (2, 5, 2)]:
        a, tau = ember.geqrf(_t(shape, dtype, rng))
        yield SampleInput(a, tau, name=f"{shape}")


def _sample_ormqr(dtype, rng):
    import ember

    a, tau = ember.geqrf(_t((4, 3), dtype, rng))
    for left in (True, False):
        for transpose in (False, True):
            other = _t((4, 2) if left else (2, 4), dtype, rng)
            yield SampleInput(a, tau, other, left, transpose,
                              name=f"left={left},transpose={transpose}")
    a, tau = ember.geqrf(_t((2, 3, 3), dtype, rng))
    yield SampleInput(a, tau, _t((2, 3, 4), dtype, rng), name="batch")


def _errors_ormqr(rng):
    import ember

    a, tau = ember.geqrf(ember.ones(4, 3))
    yield ErrorInput(SampleInput(a, tau, ember.ones(3, 2)), RuntimeError, "input.shape")


def _sample_nuclear_norm(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), name="matrix")
    yield SampleInput(_t((2, 3, 4), dtype, rng), True, name="keepdim_positional")
    yield SampleInput(_t((2, 3, 4), dtype, rng), (0, 2), name="dims")
    yield SampleInput(_t((2, 3, 4), dtype, rng), (2, 1), keepdim=True, name="dims_keepdim")


def _sample_frobenius_norm(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), (0, 1), name="matrix")
    yield SampleInput(_t((2, 3, 4), dtype, rng), 1, name="one_dim")
    yield SampleInput(_t((2, 3, 4), dtype, rng), (1, 2), True, name="keepdim")
    yield SampleInput(_t((2, 3, 4), dtype, rng), (), name="all")


def _errors_frobenius_norm(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 3, 4), (0, 1, 2)), RuntimeError,
                     "at most 2 dimensions")


def _sample_lowrank(dtype, rng):
    yield SampleInput(_t((8, 2), dtype, rng) @ _t((2, 6), dtype, rng), q=3, name="tall")
    yield SampleInput(_t((5, 9), dtype, rng), q=4, niter=1, name="wide")


def _sample_pca(dtype, rng):
    yield SampleInput(_t((10, 4), dtype, rng), name="default_q")
    yield SampleInput(_t((10, 4), dtype, rng), q=2, center=False, name="uncentered")


op_db = [
    OpInfo("linalg.ldl_factor_ex", ref=None, sample_inputs=_sample_ldl, dtypes=LINALG,
           method=False, supports_out=True, differentiable=False,
           error_inputs=_errors_ldl("ldl_factor_ex")),
    OpInfo("linalg.ldl_factor", ref=None, sample_inputs=_sample_ldl, dtypes=LINALG,
           method=False, supports_out=True, differentiable=False,
           error_inputs=_errors_ldl("ldl_factor")),
    OpInfo("linalg.ldl_solve", ref=None, sample_inputs=_sample_ldl_solve, dtypes=LINALG,
           method=False, supports_out=True, differentiable=False),
    OpInfo("linalg.lu_factor_ex", ref=None, sample_inputs=_sample_lu_factor_ex, dtypes=LINALG,
           method=False, supports_out=True),
    OpInfo("linalg.cond", ref=lambda a, p=None: np.linalg.cond(a, p),
           sample_inputs=_sample_cond, dtypes=LINALG, method=False, supports_out=True,
           error_inputs=_errors_cond, atol=1e-4, rtol=1e-4),
    OpInfo("linalg.diagonal", ref=lambda a, offset=0, dim1=-2, dim2=-1: np.diagonal(
        a, offset, dim1, dim2), sample_inputs=_sample_diagonal, dtypes=F32_64 + COMPLEX + INTS,
           method=False, is_view=True),
    OpInfo("linalg.tensorinv", ref=lambda a, ind=2: np.linalg.tensorinv(a, ind),
           sample_inputs=_sample_tensorinv, dtypes=LINALG, method=False, supports_out=True,
           error_inputs=_errors_tensorinv, atol=1e-4, rtol=1e-4),
    OpInfo("linalg.tensorsolve", ref=lambda a, b, dims=None: np.linalg.tensorsolve(a, b, dims),
           sample_inputs=_sample_tensorsolve, dtypes=LINALG, method=False, supports_out=True,
           error_inputs=_errors_tensorsolve, atol=1e-4, rtol=1e-4),
    OpInfo("linalg.vander", ref=_vander_ref, sample_inputs=_sample_vander,
           dtypes=INTS + F32_64 + COMPLEX, method=False, error_inputs=_errors_vander,
           atol=1e-4, rtol=1e-4),
    # the older top-level API
    OpInfo("lu", ref=None, sample_inputs=_sample_lu, dtypes=LINALG, supports_out=True),
    OpInfo("lu_solve", ref=None, sample_inputs=_sample_lu_solve_legacy, dtypes=LINALG,
           supports_out=True),
    OpInfo("triangular_solve", ref=None, sample_inputs=_sample_triangular_solve,
           dtypes=LINALG, supports_out=True, error_inputs=_errors_triangular_solve),
    OpInfo("geqrf", ref=None, sample_inputs=_sample_geqrf, dtypes=LINALG, supports_out=True,
           differentiable=False),
    OpInfo("orgqr", ref=None, sample_inputs=_sample_orgqr, dtypes=LINALG),
    OpInfo("ormqr", ref=None, sample_inputs=_sample_ormqr, dtypes=LINALG, supports_out=True,
           error_inputs=_errors_ormqr),
    OpInfo("nuclear_norm", ref=None, sample_inputs=_sample_nuclear_norm, dtypes=LINALG,
           method=False, supports_out=True),
    OpInfo("frobenius_norm", ref=lambda a, dim, keepdim=False: np.sqrt(
        (np.abs(a) ** 2).sum(axis=tuple(np.atleast_1d(dim)) or None, keepdims=keepdim)),
           sample_inputs=_sample_frobenius_norm, dtypes=LINALG, method=False,
           supports_out=True, error_inputs=_errors_frobenius_norm),
    OpInfo("svd_lowrank", ref=None, sample_inputs=_sample_lowrank, dtypes=LINALG,
           method=False, nondeterministic=True, differentiable=False),
    OpInfo("pca_lowrank", ref=None, sample_inputs=_sample_pca, dtypes=LINALG, method=False,
           nondeterministic=True, differentiable=False),
]

