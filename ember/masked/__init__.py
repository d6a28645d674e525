"""``torch.masked``: masked reductions and normalizations, and :class:`MaskedTensor`.

See NOTE [ Masked operations ] (ember/masked/_ops.py) and NOTE [ MaskedTensor ]
(ember/masked/maskedtensor/core.py).

The MaskedTensor names load on first use: defining a Tensor subclass that takes part in
``__torch_function__`` turns the protocol's checks on for every later call
(NOTE [ __torch_function__ ]), which programs using only the masked reductions on plain
tensors should not pay for.

Example::

    >>> x = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
    >>> ember.masked.mean(x, 1, mask=x > 2)
    tensor([3., 5.])
"""

from ._ops import (
    amax, amin, argmax, argmin, cumprod, cumsum, log_softmax, logaddexp, logsumexp, mean,
    median, norm, normalize, prod, softmax, softmin, std, sum, var,
)

__all__ = [
    "amax", "amin", "argmax", "argmin", "as_masked_tensor", "cumprod", "cumsum",
    "is_masked_tensor", "log_softmax", "logaddexp", "logsumexp", "masked_tensor",
    "MaskedTensor", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin", "std",
    "sum", "var",
]

_ON_FIRST_USE = {"MaskedTensor": "core", "is_masked_tensor": "core",
                 "masked_tensor": "creation", "as_masked_tensor": "creation"}


def __getattr__(name):
    if name == "maskedtensor" or name in _ON_FIRST_USE:
        import importlib

        package = importlib.import_module(f"{__name__}.maskedtensor")
        return package if name == "maskedtensor" else getattr(package, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_ON_FIRST_USE) | {"maskedtensor"})
