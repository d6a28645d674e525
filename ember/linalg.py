"""``ember.linalg``: linear algebra, as ``torch.linalg``.

The ops are declared in ember/_ops/linalg.py (products), linalg_contract.py (multi_dot),
linalg_decomp.py (inverses, solvers, decompositions), linalg_func.py (least squares, pseudo-
inverse, matrix functions), linalg_householder.py (householder_product), linalg_norm.py
(norms, cross, vecdot) and linalg_extra.py (LDL, lu_factor_ex, cond, tensorinv/tensorsolve,
vander, diagonal).
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
from ._ops.linalg_extra import (  # noqa: F401
    cond,
    diagonal,
    ldl_factor,
    ldl_factor_ex,
    ldl_solve,
    lu_factor_ex,
    tensorinv,
    tensorsolve,
    vander,
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
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig",
    "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor",
    "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
    "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm",
    "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals",
    "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm",
]

# notes this namespace's docstrings share (torch.linalg keeps the same dictionary for its
# own docs)
common_notes = {
    "experimental_warning": "This function is experimental: it may change in a later release.",
    "sync_note": "On an accelerator this function waits for the device before returning.",
    "sync_note_ex": "On an accelerator this function waits for the device only when "
                    "check_errors=True.",
    "sync_note_has_ex": "On an accelerator this function waits for the device; the *_ex "
                        "variant does not (unless check_errors=True).",
}


# every public function here consults __torch_function__ first (NOTE [ __torch_function__ ])
_consult_in(globals())
