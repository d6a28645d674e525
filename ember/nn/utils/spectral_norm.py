"""Spectral normalisation, the hook-based form (``nn.utils.spectral_norm``)."""

from __future__ import annotations

from ..parameter import Parameter

__all__ = ["spectral_norm", "remove_spectral_norm", "SpectralNorm"]


class SpectralNorm:
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim = name, dim
        self.n_power_iterations, self.eps = n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            perm = [self.dim] + [d for d in range(weight.dim()) if d != self.dim]
            weight = weight.permute(perm)
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        from ...autograd.grad_mode import no_grad
        from ..functional import normalize

        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(mat.t() @ u, dim=0, eps=self.eps))
                    u.copy_(normalize(mat @ v, dim=0, eps=self.eps))
                u = u.clone()
                v = v.clone()
        sigma = u.dot(mat @ v)
        return weight / sigma

    def remove(self, module):
        from ...autograd.grad_mode import no_grad

        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        from ...autograd.grad_mode import no_grad
        from ..functional import normalize

        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            mat = fn.reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide the parameter ``name`` by its spectral norm (Miyato et al., 2018), estimated
    by power iteration at every training forward (the hook-based form; see also
    ``nn.utils.parametrizations.spectral_norm``).

    Args:
        module (Module): the module to change.
        name (str): the parameter. Default: ``"weight"``.
        n_power_iterations (int): power iterations per forward. Default: 1.
        eps (float): numerical floor of the norms. Default: 1e-12.
        dim (int, optional): the output dimension (1 for transposed convolutions, else 0).

    Returns:
        Module: ``module``, with ``name_orig``, ``name_u`` and ``name_v``.

    Example:
        >>> import ember
        >>> m = spectral_norm(ember.nn.Linear(4, 3))
        >>> sorted(name for name, _ in m.named_parameters())
        ['bias', 'weight_orig']
    """
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) \
            else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo :func:`spectral_norm`: ``name`` becomes a plain parameter again.

    Args:
        module (Module): the module.
        name (str): the parameter. Default: ``"weight"``.

    Returns:
        Module: ``module``.

    Example:
        >>> import ember
        >>> m = remove_spectral_norm(spectral_norm(ember.nn.Linear(4, 3)))
        >>> sorted(name for name, _ in m.named_parameters())
        ['bias', 'weight']
    """
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
