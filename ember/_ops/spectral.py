"""Short-time Fourier transforms (``stft``/``istft``) and window functions.

Both transforms are compositions of ember ops (framing with ``unfold``, ``ember.fft``, and
overlap-add with ``fold``), so they are differentiable and run on any backend.
"""

from __future__ import annotations

import math

import numpy as np

from .._core import dtype as _dt
from .._core.tensor import Tensor
from ._registry import public


def _window(name, window_length, periodic, dtype, device, requires_grad, fn):
    from .from_data import from_numpy

    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    d = _dt.lookup(dtype) if dtype is not None else _dt.get_default_dtype()
    if not d.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d}")
    if window_length == 0:
        values = np.zeros(0)
    elif window_length == 1:
        values = np.ones(1)
    else:
        n = window_length + 1 if periodic else window_length
        values = fn(n)[:window_length]
    t = from_numpy(np.ascontiguousarray(values.astype(d.np)))
    if device is not None:
        t = t.to(device)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _cosine_sum(coeffs):
    def fn(n):
        k = np.arange(n)
        return sum(((-1) ** i) * a * np.cos(2 * math.pi * i * k / (n - 1))
                   for i, a in enumerate(coeffs))

    return fn


@public(method=False)
def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / N)`` (periodic: N = length)."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum([0.5, 0.5]))


@public(method=False)
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False):
    """The Hamming window ``alpha - beta cos(2 pi n / N)``."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum([alpha, beta]))


@public(method=False)
def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The Blackman window (three cosine terms)."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum([0.42, 0.5, 0.08]))


@public(method=False)
def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The triangular (Bartlett) window."""
    def fn(n):
        k = np.arange(n)
        return 1 - np.abs(2 * k / (n - 1) - 1)

    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   fn)


@public(method=False)
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False):
    """The Kaiser window ``I0(beta sqrt(1 - (2n/N - 1)^2)) / I0(beta)``."""
    def fn(n):
        k = np.arange(n)
        return np.i0(beta * np.sqrt(np.clip(1 - (2 * k / (n - 1) - 1) ** 2, 0, None))) / \
            np.i0(beta)

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   fn)


def _full_window(window, win_length, n_fft, like):
    from .creation import ones
    from .nn_pad import pad

    if window is None:
        window = ones(win_length, dtype=like.dtype.to_real(), device=like.device)
    if window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"stft: expected a 1D window tensor of size equal to win_length="
                           f"{win_length}, but got window with size {list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = pad(window, (left, n_fft - win_length - left))
    return window


@public
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None):
    """Fourier transforms of overlapping windowed frames: (freq, frames) per signal."""
    from .. import fft
    from .nn_pad import pad

    if not isinstance(input, Tensor):
        raise TypeError(f"stft(): argument 'input' must be Tensor, not {type(input).__name__}")
    if return_complex is None:
        if not input.is_complex() and (window is None or not window.is_complex()):
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and "
                "will further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D")
    hop = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if n_fft <= 0 or hop <= 0 or not 0 < win_length <= n_fft:
        raise RuntimeError(f"stft: expected 0 < n_fft, 0 < hop_length and 0 < win_length <= "
                           f"n_fft, but got n_fft={n_fft}, hop_length={hop}, "
                           f"win_length={win_length}")
    batched = input.dim() == 2
    x = input if batched else input.unsqueeze(0)
    if center:
        x = pad(x.unsqueeze(1), (n_fft // 2, n_fft // 2), mode=pad_mode).squeeze(1)
    if x.shape[-1] < n_fft:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]}, but got n_fft={n_fft}")
    if window is None:  # torch warns on every such call (Python shows it once per place)
        from .._settings import warn_at_caller

        warn_at_caller(
            "A window was not provided. A rectangular window will be applied,which is known "
            "to cause spectral leakage. Other windows such as torch.hann_window or "
            "torch.hamming_window are recommended to reduce spectral leakage.To suppress this "
            "warning and use a rectangular window, explicitly set `window=torch.ones(n_fft, "
            "device=<device>)`.", UserWarning)
    frames = x.unfold(-1, n_fft, hop)  # (B, n_frames, n_fft)
    frames = frames * _full_window(window, win_length, n_fft, x)
    onesided = (not x.is_complex()) if onesided is None else onesided
    spec = fft.rfft(frames, dim=-1) if onesided else fft.fft(frames, dim=-1)
    if normalized:
        spec = spec * (n_fft ** -0.5)
    spec = spec.transpose(-1, -2)
    if not batched:
        spec = spec.squeeze(0)
    if return_complex:
        return spec
    from .._settings import warn_at_caller
    from .shape import view_as_real

    warn_at_caller(
        "stft with return_complex=False is deprecated. In a future pytorch release, stft will "
        "return complex tensors for all inputs, and return_complex=False will raise an error.\n"
        "Note: you can still call torch.view_as_real on the complex output to recover the old "
        "return format.", UserWarning)
    return view_as_real(spec.contiguous())


@public
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """Invert ``stft`` by overlap-adding the inverse transforms of the frames."""
    from .. import fft
    from .nn_sampling import fold

    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor")
    hop = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    batched = input.dim() == 3
    spec = input if batched else input.unsqueeze(0)  # (B, freq, frames)
    n_frames = spec.shape[-1]
    onesided = (spec.shape[-2] != n_fft) if onesided is None else onesided
    if normalized:
        spec = spec * (n_fft ** 0.5)
    frames = spec.transpose(-1, -2)
    frames = fft.irfft(frames, n=n_fft, dim=-1) if onesided and not return_complex else \
        fft.ifft(frames, n=n_fft, dim=-1)
    if not return_complex and frames.is_complex():
        frames = frames.real
    w = _full_window(window, win_length, n_fft, frames)
    frames = frames * w  # (B, n_frames, n_fft)
    total = n_fft + hop * (n_frames - 1)
    y = fold(frames.transpose(1, 2), (1, total), (1, n_fft), stride=(1, hop))
    y = y.reshape(y.shape[0], total)
    env = fold((w * w).reshape(1, n_fft, 1).expand(1, n_fft, n_frames), (1, total),
               (1, n_fft), stride=(1, hop)).reshape(total)
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    y = y[:, start:end]
    env = env[start:end]
    if bool((env.abs() < 1e-11).any()):
        raise RuntimeError("istft: window overlap add min: the window's squared envelope is "
                           "(nearly) zero somewhere; choose a window and hop that overlap")
    y = y / env
    if length is not None and y.shape[-1] < length:
        from .nn_pad import pad

        y = pad(y, (0, length - y.shape[-1]))
    return y if batched else y.squeeze(0)
