"""Ready-made parametrizations: weight_norm, spectral_norm, orthogonal."""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ..functional import normalize
from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


def _norm_except_dim(v, dim):
    if dim == -1 or dim is None:
        return v.norm()
    dims = [d for d in range(v.dim()) if d != dim % v.dim()]
    return v.norm(dim=dims, keepdim=True) if dims else v.abs()


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        g = _norm_except_dim(weight, self.dim)
        return g, weight


def weight_norm(module, name="weight", dim=0):
    """Parametrize ``name`` as ``g * v / ||v||`` (Salimans & Kingma, 2016): the
    originals are ``parametrizations.<name>.original0`` (g) and ``original1`` (v).

    Args:
        module (Module): the module.
        name (str): the parameter. Default: ``"weight"``.
        dim (int or None): the dimension kept by the norm (None: the whole tensor).
            Default: 0.

    Returns:
        Module: ``module``.

    Example:
        >>> import ember
        >>> m = weight_norm(ember.nn.Linear(4, 3))
        >>> tuple(m.parametrizations.weight.original0.shape)
        (3, 1)
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape(weight)
            h, w = mat.shape
            u = normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=eps)
            v = normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(mat, 15)

    def _reshape(self, weight):
        if self.dim != 0:
            perm = [self.dim] + [d for d in range(weight.dim()) if d != self.dim]
            weight = weight.permute(perm)
        return weight.flatten(1)

    def _power_method(self, mat, n):
        with no_grad():
            for _ in range(n):
                self._u.copy_(normalize(mat @ self._v, dim=0, eps=self.eps))
                self._v.copy_(normalize(mat.t() @ self._u, dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.dot(mat @ v)
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Parametrize ``name`` as itself divided by its spectral norm (Miyato et al., 2018),
    estimated by power iteration in training mode.

    Args:
        module (Module): the module.
        name (str): the parameter. Default: ``"weight"``.
        n_power_iterations (int): power iterations per forward. Default: 1.
        eps (float): numerical floor of the norms. Default: 1e-12.
        dim (int, optional): the output dimension (1 for transposed convolutions, else 0).

    Returns:
        Module: ``module``.

    Example:
        >>> import ember
        >>> m = spectral_norm(ember.nn.Linear(4, 3))
        >>> bool(ember.linalg.matrix_norm(m.weight, 2) < 1.01)
        True
    """
    weight = getattr(module, name, None)
    if weight is None:
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) \
            else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


class _Orthogonal(Module):
    """Maps an unconstrained matrix to an orthogonal one: ``base @ map(X)`` with ``map`` the
    matrix exponential or Cayley transform of the skew part of X, or a product of
    Householder reflections; ``right_inverse`` stores a given orthogonal matrix in ``base``
    and resets X to the identity point of the map (the 'trivialization' trick)."""

    def __init__(self, weight, orthogonal_map, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x):
        from ... import cat, eye, linalg, zeros

        n, k = x.shape[-2:]
        transposed = n < k
        if transposed:
            x = x.transpose(-2, -1)
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                x = cat([x, zeros(x.shape[:-2] + (n, n - k), dtype=x.dtype, device=x.device)],
                        -1)
            a = x - x.transpose(-2, -1).conj()
            if self.orthogonal_map == "matrix_exp":
                q = linalg.matrix_exp(a)
            else:
                ident = eye(n, dtype=a.dtype, device=a.device)
                q = linalg.solve(ident - a / 2, ident + a / 2)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = _householder_product(a, tau)
            # each column's sign follows X's diagonal, so X = -I maps to the identity
            q = q * x.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)
        if hasattr(self, "base") and self.base is not None:
            q = self.base @ q
        if transposed:
            q = q.transpose(-2, -1)
        return q

    def right_inverse(self, q):
        from ... import cat, randn, zeros_like

        if tuple(q.shape) != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {tuple(q.shape)}.")
        if not hasattr(self, "base"):
            raise NotImplementedError(
                "It is not possible to assign to the matrix exponential or the Cayley "
                "parametrizations when use_trivialization=False.")
        q_init = q
        n, k = q.shape[-2:]
        if n < k:
            q = q.transpose(-2, -1)
            n, k = k, n
        if n == k:
            gram = q.transpose(-2, -1).conj() @ q
            from ... import eye

            if not bool((gram - eye(n, dtype=q.dtype)).abs().max() < 1e-5):
                q = _make_orthogonal(q)
            else:
                q = q.clone()
        else:
            extra = randn(q.shape[:-2] + (n, n - k), dtype=q.dtype, device=q.device)
            q = _make_orthogonal(cat([q, extra], -1))
        self.base = q.detach()
        neg_id = zeros_like(q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def _make_orthogonal(a):
    """Q of A's QR decomposition, with column signs making R's diagonal positive."""
    from ... import linalg

    q, r = linalg.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _householder_product(a, tau):
    """Q = H_1 ... H_k (first k columns), H_i = I - tau_i v_i v_i^T where v_i is 1 at row i,
    a[i+1:, i] below it and 0 above."""
    from ... import arange, eye

    n, k = a.shape[-2:]
    rows = arange(n, device=a.device)
    q = eye(n, dtype=a.dtype, device=a.device).expand(a.shape[:-2] + (n, n))
    for i in range(k - 1, -1, -1):
        below = (rows > i).to(a.dtype)
        at = (rows == i).to(a.dtype)
        v = a[..., :, i] * below + at
        t = tau[..., i].unsqueeze(-1).unsqueeze(-1)
        q = q - t * (v.unsqueeze(-1) @ (v.unsqueeze(-2) @ q))
    return q[..., :, :k]


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Parametrize ``name`` as an orthogonal (or semi-orthogonal) matrix, through the
    matrix exponential, the Cayley map or Householder reflections of an unconstrained
    original.

    Args:
        module (Module): the module.
        name (str): the parameter. Default: ``"weight"``.
        orthogonal_map (str, optional): ``"matrix_exp"``, ``"cayley"`` or
            ``"householder"`` (default: matrix_exp for square or complex, else householder).
        use_trivialization (bool): keep a base and optimise in the tangent space.
            Default: True.

    Returns:
        Module: ``module``.

    Example:
        >>> import ember
        >>> m = orthogonal(ember.nn.Linear(4, 3))
        >>> w = m.weight
        >>> bool(ember.allclose(w @ w.T, ember.eye(3), atol=1e-5))
        True
    """
    weight = getattr(module, name, None)
    if weight is None:
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.dim()} dimensions.")
    if orthogonal_map is None:
        n, k = weight.shape[-2:]
        orthogonal_map = "matrix_exp" if n == k or weight.is_complex() else "householder"
    if orthogonal_map not in ("matrix_exp", "cayley", "householder"):
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    parametrize.register_parametrization(
        module, name, _Orthogonal(weight, orthogonal_map, use_trivialization), unsafe=True)
    return module
