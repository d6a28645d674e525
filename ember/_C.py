"""``ember._C``: the few names of PyTorch's ``torch._C`` that Python programs use directly
(Tensor subclasses opt out of ``__torch_function__`` with ``_disabled_torch_function_impl``
and run code without it under ``DisableTorchFunctionSubclass``)."""

from ._overrides import (  # noqa: F401  (re-exported)
    DisableTorchFunction, DisableTorchFunctionSubclass, _disabled_torch_function_impl,
)

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass",
           "_disabled_torch_function_impl"]
