"""The window functions of ``torch.signal.windows``.

Every window is a function of ``M`` evenly spaced sample positions: it builds them with
``linspace`` (so ``requires_grad=True`` gives a result with a history, as PyTorch's does) and
applies one formula. ``sym=True`` (the default) gives a symmetric window, for filter design;
``sym=False`` a periodic one, for spectral analysis: the symmetric window of ``M + 1`` points
without its last point.

All windows take the same keyword arguments after their own ones:

- ``sym`` (bool): symmetric (True, default) or periodic (False).
- ``dtype`` (ember.dtype, optional): float32 or float64; the default dtype if None.
- ``layout`` (ember.layout): only ``ember.strided``.
- ``device`` (ember.device, optional): where the result lives.
- ``requires_grad`` (bool): whether autograd records operations on the result.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import ember

__all__ = [
    "bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
    "general_hamming", "hamming", "hann", "kaiser", "nuttall",
]

_BLACKMAN = (0.42, 0.5, 0.08)
_NUTTALL = (0.3635819, 0.4891775, 0.1365995, 0.0106411)


def _checked_dtype(name: str, M: int, dtype, layout):
    """The window's dtype, after PyTorch's checks on ``M``, ``layout`` and ``dtype``."""
    if dtype is None:
        dtype = ember.get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not ember.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (ember.float32, ember.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M: int, dtype, device, requires_grad, *, one_is_trivial: bool = True):
    """The window of 0 samples (empty), or of 1 sample (``[1.]``) where that is a special
    case; None otherwise."""
    if M == 0:
        return ember.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1 and one_is_trivial:
        return ember.ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def _positions(M: int, first: float, step: float, dtype, device, requires_grad):
    """``first, first + step, ..., first + (M - 1) * step`` as a tensor."""
    return ember.linspace(first, first + (M - 1) * step, M, dtype=dtype, device=device,
                          requires_grad=requires_grad)


def _span(M: int, sym: bool) -> int:
    """The number of intervals a window of ``M`` samples spreads over: ``M - 1`` for a
    symmetric one, ``M`` for a periodic one (whose last interval ends where the next period
    starts)."""
    return M - 1 if sym else M


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=ember.strided, device=None,
                requires_grad: bool = False) -> ember.Tensor:
    """The exponential (Poisson) window: ``w[n] = exp(-|n - center| / tau)``.

    Args:
        M (int): the number of samples.
        center (float, optional): where the window peaks; the middle if None. Only for
            periodic windows (``sym=False``).
        tau (float): the decay length, positive. Default: 1.
        sym, dtype, layout, device, requires_grad: see the module docstring.

    Returns:
        Tensor: the window, of shape ``(M,)``.

    Raises:
        ValueError: ``M < 0``, ``tau <= 0``, a ``center`` with ``sym=True``, a dtype other
            than float32/float64, or a layout other than strided.

    Example::

        >>> ember.signal.windows.exponential(5)
        tensor([0.1353, 0.3679, 1.0000, 0.3679, 0.1353])
    """
    dtype = _checked_dtype("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    n = _positions(M, -center / tau, 1 / tau, dtype, device, requires_grad)
    return ember.exp(-ember.abs(n))


def cosine(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
           requires_grad: bool = False) -> ember.Tensor:
    """The cosine (sine) window: ``w[n] = sin(pi * (n + 1/2) / M)``.

    Args:
        M (int): the number of samples.
        sym, dtype, layout, device, requires_grad: see the module docstring.

    Returns:
        Tensor: the window, of shape ``(M,)``.

    Raises:
        ValueError: ``M < 0``, a dtype other than float32/float64, or a non-strided layout.

    Example::

        >>> ember.signal.windows.cosine(4)
        tensor([0.3827, 0.9239, 0.9239, 0.3827])
    """
    dtype = _checked_dtype("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return ember.sin(_positions(M, 0.5 * step, step, dtype, device, requires_grad))


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=ember.strided,
             device=None, requires_grad: bool = False) -> ember.Tensor:
    """The Gaussian window: ``w[n] = exp(-(n - (M - 1) / 2)**2 / (2 * std**2))``.

    Args:
        M (int): the number of samples.
        std (float): the standard deviation, in samples; positive. Default: 1.
        sym, dtype, layout, device, requires_grad: see the module docstring.

    Returns:
        Tensor: the window, of shape ``(M,)``.

    Raises:
        ValueError: ``M < 0``, ``std <= 0``, a dtype other than float32/float64, or a
            non-strided layout.

    Example::

        >>> ember.signal.windows.gaussian(5, std=1.0)
        tensor([0.1353, 0.6065, 1.0000, 0.6065, 0.1353])
    """
    dtype = _checked_dtype("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    scale = 1 / (std * math.sqrt(2))
    first = -(M if not sym and M > 1 else M - 1) / 2.0
    n = _positions(M, first * scale, scale, dtype, device, requires_grad)
    return ember.exp(-(n**2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=ember.strided,
           device=None, requires_grad: bool = False) -> ember.Tensor:
    """The Kaiser window: ``w[n] = I0(beta * sqrt(1 - (2n / (M - 1) - 1)**2)) / I0(beta)``.

    ``I0`` is the modified Bessel function of the first kind of order 0; a larger ``beta``
    narrows the window.

    Args:
        M (int): the number of samples.
        beta (float): the shape parameter, non-negative. Default: 12.
        sym, dtype, layout, device, requires_grad: see the module docstring.

    Returns:
        Tensor: the window, of shape ``(M,)``.

    Raises:
        ValueError: ``M < 0``, ``beta < 0``, a dtype other than float32/float64, or a
            non-strided layout.

    Example::

        >>> ember.signal.windows.kaiser(5, beta=2.0)
        tensor([0.4387, 0.8348, 1.0000, 0.8348, 0.4387])
    """
    dtype = _checked_dtype("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    # beta as a tensor of the window's dtype, so that rounding cannot push a position past
    # +-beta and take the square root of a negative number
    b = ember.tensor(beta, dtype=dtype, device=device)
    step = 2.0 * b / _span(M, sym)
    last = ember.minimum(b, -b + (M - 1) * step)
    n = ember.linspace(-b, last, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return ember.i0(ember.sqrt(b * b - n**2)) / ember.i0(b)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
             requires_grad: bool = False) -> ember.Tensor:
    """The Bartlett (triangular, zero at both ends) window: ``w[n] = 1 - |2n / (M - 1) - 1|``.

    Args:
        M (int): the number of samples.
        sym, dtype, layout, device, requires_grad: see the module docstring.

    Returns:
        Tensor: the window, of shape ``(M,)``.

    Raises:
        ValueError: ``M < 0``, a dtype other than float32/float64, or a non-strided layout.

    Example::

        >>> ember.signal.windows.bartlett(5)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    dtype = _checked_dtype("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    n = _positions(M, -1, 2 / _span(M, sym), dtype, device, requires_grad)
    return 1 - ember.abs(n)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype=None, layout=ember.strided,
                   device=None, requires_grad: bool = False) -> ember.Tensor:
    """A sum of cosines: ``w[n] = sum_i (-1)**i * a[i] * cos(2 * pi * i * n / (M - 1))``.

    Hann, Hamming, Blackman and Nuttall windows are this sum with their own coefficients.

    Args:
        M (int): the number of samples.
        a (list or tuple of float): the coefficients ``a[0], a[1], ...``.
        sym, dtype, layout, device, requires_grad: see the module docstring.

    Returns:
        Tensor: the window, of shape ``(M,)``.

    Raises:
        TypeError: ``a`` is not iterable.
        ValueError: ``a`` is empty, ``M < 0``, a dtype other than float32/float64, or a
            non-strided layout.

    Example::

        >>> ember.signal.windows.general_cosine(5, a=[0.5, 0.5])
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    return _cosine_sum("general_cosine", M, a, sym, dtype, layout, device, requires_grad)


def _cosine_sum(name, M, a, sym, dtype, layout, device, requires_grad):
    dtype = _checked_dtype(name, M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    coeffs = [(-1) ** i * c for i, c in enumerate(a)]
    if not coeffs:
        raise ValueError("Coefficients cannot be empty")
    angle = _positions(M, 0, 2 * math.pi / _span(M, sym), dtype, device, requires_grad)
    weights = ember.tensor(coeffs, dtype=dtype, device=device, requires_grad=requires_grad)
    order = ember.arange(len(coeffs), dtype=dtype, device=device,
                         requires_grad=requires_grad)
    return (weights[:, None] * ember.cos(order[:, None] * angle)).sum(0)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype=None,
                    layout=ember.strided, device=None,
                    requires_grad: bool = False) -> ember.Tensor:
    """The generalized Hamming window: ``w[n] = alpha - (1 - alpha) * cos(2 * pi * n / (M - 1))``.

    Args:
        M (int): the number of samples.
        alpha (float): the window coefficient. Default: 0.54 (the Hamming window).
        sym, dtype, layout, device, requires_grad: see the module docstring.

    Returns:
        Tensor: the window, of shape ``(M,)``.

    Raises:
        ValueError: ``M < 0``, a dtype other than float32/float64, or a non-strided layout.

    Example::

        >>> ember.signal.windows.general_hamming(5, alpha=0.6)
        tensor([0.2000, 0.6000, 1.0000, 0.6000, 0.2000])
    """
    return _cosine_sum("general_hamming", M, [alpha, 1.0 - alpha], sym, dtype, layout, device,
                       requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
            requires_grad: bool = False) -> ember.Tensor:
    """The Hamming window: ``w[n] = 0.54 - 0.46 * cos(2 * pi * n / (M - 1))``.

    Args:
        M (int): the number of samples.
        sym, dtype, layout, device, requires_grad: see the module docstring.

    Returns:
        Tensor: the window, of shape ``(M,)``.

    Raises:
        ValueError: ``M < 0``, a dtype other than float32/float64, or a non-strided layout.

    Example::

        >>> ember.signal.windows.hamming(5)
        tensor([0.0800, 0.5400, 1.0000, 0.5400, 0.0800])
    """
    return _cosine_sum("hamming", M, [0.54, 1.0 - 0.54], sym, dtype, layout, device,
                       requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
         requires_grad: bool = False) -> ember.Tensor:
    """The Hann window: ``w[n] = 0.5 - 0.5 * cos(2 * pi * n / (M - 1))``.

    Args:
        M (int): the number of samples.
        sym, dtype, layout, device, requires_grad: see the module docstring.

    Returns:
        Tensor: the window, of shape ``(M,)``.

    Raises:
        ValueError: ``M < 0``, a dtype other than float32/float64, or a non-strided layout.

    Example::

        >>> ember.signal.windows.hann(5)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    return _cosine_sum("hann", M, [0.5, 0.5], sym, dtype, layout, device, requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
             requires_grad: bool = False) -> ember.Tensor:
    """The Blackman window: ``w[n] = 0.42 - 0.5 cos(2 pi n / (M-1)) + 0.08 cos(4 pi n / (M-1))``.

    Args:
        M (int): the number of samples.
        sym, dtype, layout, device, requires_grad: see the module docstring.

    Returns:
        Tensor: the window, of shape ``(M,)``.

    Raises:
        ValueError: ``M < 0``, a dtype other than float32/float64, or a non-strided layout.

    Example::

        >>> ember.signal.windows.blackman(5)
        tensor([-1.4901e-08,  3.4000e-01,  1.0000e+00,  3.4000e-01, -1.4901e-08])
    """
    return _cosine_sum("blackman", M, _BLACKMAN, sym, dtype, layout, device, requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
            requires_grad: bool = False) -> ember.Tensor:
    """The minimum 4-term Blackman-Harris window of Nuttall (1981).

    ``w[n] = a0 - a1 cos(2 pi n / (M - 1)) + a2 cos(4 pi n / (M - 1)) - a3 cos(6 pi n / (M - 1))``
    with ``a = (0.3635819, 0.4891775, 0.1365995, 0.0106411)``.

    Args:
        M (int): the number of samples.
        sym, dtype, layout, device, requires_grad: see the module docstring.

    Returns:
        Tensor: the window, of shape ``(M,)``.

    Raises:
        ValueError: ``M < 0``, a dtype other than float32/float64, or a non-strided layout.

    Example::

        >>> ember.signal.windows.nuttall(5)
        tensor([3.6280e-04, 2.2698e-01, 1.0000e+00, 2.2698e-01, 3.6280e-04])
    """
    return _cosine_sum("nuttall", M, _NUTTALL, sym, dtype, layout, device, requires_grad)
