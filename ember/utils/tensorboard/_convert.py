"""Arrays for the summaries: ember tensors to NumPy, images to HWC, grids, videos, figures.

Everything the summaries consume goes through ``make_np`` first, so the summary builders
work on NumPy arrays only and never touch the dispatcher.
"""

from __future__ import annotations

import numpy as np

__all__ = ["make_np", "convert_to_HWC", "make_grid", "figure_to_image"]


def make_np(x) -> np.ndarray:
    """A NumPy array holding ``x``: an ember tensor, a NumPy array or a Python number.

    Args:
        x: an ember ``Tensor`` (detached and copied to the CPU; bfloat16 becomes float32,
            which NumPy can hold), a ``numpy.ndarray`` (returned as is) or a number (a
            one-element array).

    Returns:
        numpy.ndarray

    Raises:
        NotImplementedError: for any other type, as PyTorch does.

    Example::

        >>> make_np(ember.tensor([1.0, 2.0]))
        array([1., 2.], dtype=float32)
        >>> make_np(3)
        array([3])
    """
    from ..._core.tensor import Tensor

    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        x = x.detach()
        if str(x.dtype) == "ember.bfloat16":
            x = x.float()
        return np.asarray(x.cpu().numpy())
    raise NotImplementedError(f"Got {type(x)}, but numpy array or ember tensor are expected.")


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """Tile a batch of images ``(N, C, H, W)`` into one CHW image, row-major, ``ncols`` wide.

    One-channel images become three-channel (gray); empty cells stay zero.

    Args:
        images: array ``(N, 1 or 3, H, W)``.
        ncols: the most images per row.

    Returns:
        numpy.ndarray of shape ``(3, H * rows, W * min(N, ncols))``.

    Example::

        >>> make_grid(np.ones((3, 1, 2, 2)), ncols=2).shape
        (3, 4, 4)
    """
    if images.ndim != 4:
        raise ValueError(f"make_grid: expected a 4-D (N, C, H, W) array, got shape "
                         f"{images.shape}")
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, axis=1)
    if images.shape[1] != 3:
        raise ValueError(f"make_grid: expected 1 or 3 channels, got {images.shape[1]}")
    n, _, h, w = images.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        r, c = divmod(i, ncols)
        canvas[:, r * h:(r + 1) * h, c * w:(c + 1) * w] = images[i]
    return canvas


def convert_to_HWC(tensor: np.ndarray, input_format: str) -> np.ndarray:  # noqa: N802
    """Rearrange an image array described by ``input_format`` into ``(H, W, 3 or 4)``.

    ``input_format`` names the axes with the letters N, C, H, W: four letters tile the batch
    into a grid (``make_grid``); ``HW`` and one-channel images become gray RGB.

    Args:
        tensor: the image array.
        input_format: e.g. ``"CHW"``, ``"HWC"``, ``"HW"``, ``"NCHW"``, ``"NHWC"``.

    Returns:
        numpy.ndarray in HWC layout.

    Example::

        >>> convert_to_HWC(np.zeros((3, 4, 5)), "CHW").shape
        (4, 5, 3)
        >>> convert_to_HWC(np.zeros((4, 5)), "HW").shape
        (4, 5, 3)
    """
    fmt = input_format.upper()
    if len(set(fmt)) != len(fmt):
        raise ValueError(f"You can not use the same dimension shorthand twice. "
                         f"input_format: {input_format}")
    if tensor.ndim != len(fmt):
        raise ValueError(f"size of input tensor and input format are different. tensor shape: "
                         f"{tensor.shape}, input_format: {input_format}")
    if len(fmt) == 4:
        nchw = tensor.transpose([fmt.find(c) for c in "NCHW"])
        return make_grid(nchw).transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = tensor.transpose([fmt.find(c) for c in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.concatenate([hwc] * 3, axis=2)
        return hwc
    if len(fmt) == 2:
        hw = tensor.transpose([fmt.find(c) for c in "HW"])
        return np.stack([hw] * 3, axis=2)
    raise ValueError(f"input_format must have 2, 3 or 4 letters, got {input_format!r}")


def prepare_video(v: np.ndarray) -> np.ndarray:
    """A batch of videos ``(N, T, C, H, W)`` as one ``(T, H', W', C)`` float video.

    The batch is tiled into a grid of a power-of-two number of cells (missing cells are
    black), as PyTorch does; uint8 input is scaled to [0, 1].
    """
    if v.ndim != 5:
        raise ValueError(f"add_video: expected a 5-D (N, T, C, H, W) tensor, got shape {v.shape}")
    b, t, c, h, w = v.shape
    if v.dtype == np.uint8:
        v = v.astype(np.float32) / 255.0
    if b & (b - 1):
        pad = (1 << b.bit_length()) - b
        v = np.concatenate([v, np.zeros((pad, t, c, h, w), dtype=v.dtype)], axis=0)
    nrows = 2 ** ((b.bit_length() - 1) // 2)
    ncols = v.shape[0] // nrows
    v = v.reshape(nrows, ncols, t, c, h, w).transpose(2, 0, 4, 1, 5, 3)
    return v.reshape(t, nrows * h, ncols * w, c)


def figure_to_image(figures, close: bool = True) -> np.ndarray:
    """Render matplotlib figures to uint8 arrays: one ``(3, H, W)``, or ``(N, 3, H, W)`` for a list.

    Args:
        figures: a ``matplotlib.figure.Figure`` or a list of them.
        close: close each figure after rendering it.

    Returns:
        numpy.ndarray (uint8, CHW or NCHW).

    Example::

        >>> import matplotlib; matplotlib.use("Agg")  # doctest: +SKIP
        >>> import matplotlib.pyplot as plt  # doctest: +SKIP
        >>> figure_to_image(plt.figure(figsize=(1, 1), dpi=10)).shape  # doctest: +SKIP
        (3, 10, 10)
    """
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    def render(fig):
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        rgba = np.asarray(canvas.buffer_rgba(), dtype=np.uint8)
        if close:
            plt.close(fig)
        return np.ascontiguousarray(rgba[:, :, :3].transpose(2, 0, 1))

    if isinstance(figures, list):
        return np.stack([render(f) for f in figures])
    return render(figures)
