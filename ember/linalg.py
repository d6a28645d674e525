"""``ember.linalg``: linear algebra, as ``torch.linalg``.

The ops are declared in ember/_ops/linalg.py (products), linalg_contract.py (multi_dot),
linalg_decomp.py (inverses, solvers, decompositions), linalg_func.py (least squares, pseudo-
inverse, matrix functions) and linalg_norm.py (norms, cross, vecdot).
"""

from ._overrides import consult_in as _consult_in

from ._ops.linalg import matmul  # noqa: F401
from ._ops.linalg_contract import multi_dot  # noqa: F401
from ._ops.linalg_decomp import (  # noqa: F401
    LinAlgError,
    cholesky,
    cholesky_ex,
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    inv,
    inv_ex,
    qr,
    slogdet,
    solve,
    solve_ex,
    solve_triangular,
    svd,
    svdvals,
)
from ._ops.linalg_func import (  # noqa: F401
    householder_product,
    lstsq,
    lu,
    lu_factor,
    lu_solve,
    matrix_exp,
    matrix_power,
    matrix_rank,
    pinv,
)
from ._ops.linalg_norm import linalg_cross as cross  # noqa: F401
from ._ops.linalg_norm import matrix_norm, norm, vecdot, vector_norm  # noqa: F401

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cross", "det", "eig", "eigh", "eigvals",
    "eigvalsh", "householder_product", "inv", "inv_ex", "lstsq", "lu", "lu_factor",
    "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank",
    "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular",
    "svd", "svdvals", "vecdot", "vector_norm",
]


# every public function here consults __torch_function__ first (NOTE [ __torch_function__ ])
_consult_in(globals())
