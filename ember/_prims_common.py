"""``torch._prims_common``: the one helper of PyTorch's primitive-op utilities that libraries
call directly -- ``alert_not_deterministic``, which torchvision's backward formulas call on
GPUs (where its native kernels accumulate with atomics)."""

from __future__ import annotations

import warnings

__all__ = ["alert_not_deterministic"]


def alert_not_deterministic(caller: str) -> None:
    """Report that ``caller`` has no deterministic implementation, as
    ``ember.use_deterministic_algorithms`` asks: an error while deterministic algorithms are
    required, a UserWarning with ``warn_only=True``, nothing otherwise.

    Args:
        caller (str): the name of the kernel or op.

    Returns:
        None.

    Raises:
        RuntimeError: while ``use_deterministic_algorithms(True)`` is in effect.

    Example::

        >>> from ember._prims_common import alert_not_deterministic
        >>> alert_not_deterministic("my_kernel")  # determinism not asked for: silent
    """
    from ._settings import (are_deterministic_algorithms_enabled,
                            is_deterministic_algorithms_warn_only_enabled)

    if not are_deterministic_algorithms_enabled():
        return
    if is_deterministic_algorithms_warn_only_enabled():
        warnings.warn(f"{caller} does not have a deterministic implementation, but you set "
                      "'torch.use_deterministic_algorithms(True, warn_only=True)'.",
                      UserWarning, stacklevel=2)
        return
    raise RuntimeError(
        f"{caller} does not have a deterministic implementation, but you set "
        "'torch.use_deterministic_algorithms(True)'. Turn determinism off around this "
        "operation, or pass warn_only=True to be warned instead.")
