"""``torch._custom_ops``: PyTorch's first custom-op API, kept for libraries that still import
it (torchvision's fake kernels call its ``get_ctx``). New code uses :mod:`ember.library`."""

from __future__ import annotations

from .library import get_ctx, impl_abstract

__all__ = ["get_ctx", "impl_abstract"]
