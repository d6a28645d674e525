"""Padding: constant, reflect, replicate and circular (``nn.functional.pad``)."""

from __future__ import annotations

import math

import numpy as np

from .. import _dispatch
from ._memory_format import keep_layout
from ._registry import Op, public, recorded_as
from .indexing import grad_linked_to, linear_jvp  # second derivatives, forward-mode rules
from ._scatter_planes import unpool_add_op
from .nn_checks import kernel_dtype, nonempty_input

_NP_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _constant_pad_kernel(xp, x, *, pads, value):
    """``pads`` is ((before, after), ...) per dim; negative entries crop."""
    grow = tuple((max(b, 0), max(a, 0)) for b, a in pads)
    y = xp.pad(x, grow, constant_values=value) if any(b or a for b, a in grow) else x
    crop = tuple(slice(-b if b < 0 else 0, (y.shape[i] + a) if a < 0 else None)
                 for i, (b, a) in enumerate(pads))
    return xp.ascontiguousarray(y[crop])


def _constant_pad_vjp(g, _x, *, pads, value):
    return _dispatch.apply(constant_pad_op, (g,), {
        "pads": tuple((-b, -a) for b, a in pads), "value": 0})


constant_pad_op = Op("constant_pad_nd", _constant_pad_kernel, vjp=_constant_pad_vjp)
linear_jvp(constant_pad_op, (0,), ("value",))
constant_pad_op.node_name = "ConstantPadNdBackward0"


def _index_map(spatial, pads, mode):
    """Flat input position read by each output position under ``mode``."""
    idx = np.arange(math.prod(spatial)).reshape(spatial)
    return np.pad(idx, pads, mode=_NP_MODES[mode])


def _mode_pad_kernel(xp, x, *, pads, mode, nspatial):
    lead = x.ndim - nspatial
    full = ((0, 0),) * lead + pads
    return xp.pad(x, full, mode=_NP_MODES[mode])


def _mode_pad_vjp(g, x, *, pads, mode, nspatial):
    from .from_data import from_numpy

    spatial = tuple(x.shape[x.dim() - nspatial:])
    lead = tuple(x.shape[:x.dim() - nspatial])
    index = _index_map(spatial, pads, mode)
    planes = math.prod(lead)
    # (a copy: with one plane, broadcast_to's read-only view is already contiguous)
    idx = from_numpy(np.array(np.broadcast_to(index, (planes,) + index.shape)))
    if type(g._data) is not np.ndarray:
        idx = idx.to(g.device)
    g2 = g.reshape((planes, 1) + tuple(g.shape[len(lead):]))
    gx = _dispatch.apply(unpool_add_op, (g2, idx.reshape((planes, 1) + index.shape)),
                         {"input_shape": (planes, 1) + spatial})
    gx = gx.reshape(x.shape)
    # (torch's reflect/replicate backward kernels take x; its circular pad is a composite)
    return gx if mode == "circular" else grad_linked_to(gx, x)


mode_pad_op = Op("pad", _mode_pad_kernel, vjp=_mode_pad_vjp)
linear_jvp(mode_pad_op, (0,))


@recorded_as("aten::pad", ("input", "pad", "mode", "value"))
def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left_last, right_last, left_prev, ...)``.

    Modes: 'constant' (``value``, default 0; negative pads crop), 'reflect', 'replicate',
    'circular'.
    """
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    n = len(pad) // 2
    if n > input.dim():
        raise RuntimeError(
            f"Padding length should be less than or equal to two times the input dimension "
            f"but got padding length {len(pad)} and input of dimension {input.dim()}")
    pairs = [(int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(n)][::-1]
    if mode == "constant":
        full = ((0, 0),) * (input.dim() - n) + tuple(pairs)
        for i, (b, a) in enumerate(full):
            # (torch first narrows away the negative pads alone: each must fit the input)
            if input.shape[i] + min(b, 0) + min(a, 0) < 0:
                raise RuntimeError(
                    f"The input size {input.shape[i]}, plus negative padding {b} and {a} "
                    f"resulted in a negative output size, which is invalid. Check dimension "
                    f"{i} of your input.")
        # the input's layout, as torch's constant_pad_nd (NOTE [ Result layout ])
        return keep_layout(_dispatch.apply(constant_pad_op, (input,), {
            "pads": full, "value": 0 if value is None else value}), input)
    if mode not in _NP_MODES:
        raise NotImplementedError(
            f"Unrecognised padding mode {mode}")
    if value not in (None, 0):
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if not 1 <= n <= 3 or input.dim() not in (n + 1, n + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode in ("reflect", "replicate"):
        nonempty_input(input, n, message=(
            f"Expected {n + 1}D or {n + 2}D (batch mode) tensor with possibly 0 batch size and "
            f"other non-zero dimensions for input, but got: {list(input.shape)}"))
        kind = "reflection" if mode == "reflect" else "replication"
        kernel_dtype(f"{kind}_pad", input, f"{kind}_pad{n}d")
    for i in reversed(range(n)):  # (torch checks the last dim first, its pads argument #4)
        b, a = pairs[i]
        size = input.shape[input.dim() - n + i]
        if mode == "reflect" and (b >= size or a >= size):
            raise RuntimeError(
                f"Argument #{4 + 2 * (n - 1 - i)}: Padding size should be less than the "
                f"corresponding input "
                f"dimension, but got: padding ({b}, {a}) at dimension "
                f"{input.dim() - n + i} of input {list(input.shape)}")
        if mode == "circular" and (b > size or a > size):
            raise RuntimeError(
                "Padding value causes wrapping around more than once.")
    if any(b < 0 or a < 0 for b, a in pairs):
        return _negative_mode_pad(input, pairs, mode, n)
    y = _dispatch.apply(mode_pad_op, (input,), {"pads": tuple(pairs), "mode": mode,
                                                "nspatial": n})
    # reflect and replicate keep a channels-last input's layout in torch; circular does not
    return y if mode == "circular" else keep_layout(y, input)


def _negative_mode_pad(input, pairs, mode, n):
    """Reflect, replicate or circular padding with negative entries (``pairs``: (before,
    after) per padded dim, outermost first), which crop.

    NOTE [ Negative padding of the non-constant modes ]
    torch reads output position ``j`` of a padded dim from input position ``j - before``
    mapped into the input by the mode (clamped for replicate, mirrored for reflect), so a
    negative ``before`` drops that many positions of the mapped sequence: the same as
    padding by the positive entries and then narrowing the negative ones away. Its circular
    mode is a composite that narrows first and wraps around what is left. An output size of
    0 gives an empty result, except for 1-D reflect and replicate, whose kernel refuses it.
    """
    spatial = tuple(input.shape[input.dim() - n:])
    outs = [s + b + a for s, (b, a) in zip(spatial, pairs)]
    if n == 1 and mode != "circular" and outs[0] <= 0:
        raise RuntimeError(f"input (W: {spatial[0]}) is too small. Calculated output W: "
                           f"{outs[0]}")
    if any(o < 0 for o in outs):
        raise RuntimeError("Negative padding value is resulting in an empty dimension")
    lead = input.dim() - n
    flat = []
    for b, a in pairs[::-1]:
        flat += [max(b, 0), max(a, 0)]
    x = input
    if mode == "circular":
        for i, (b, a) in enumerate(pairs):
            d = lead + i
            x = x.narrow(d, max(-b, 0), x.shape[d] + min(b, 0) + min(a, 0))
        return pad(x, flat, mode) if any(flat) else x.clone()
    y = pad(x, flat, mode) if any(flat) else x
    for i, (b, _a) in enumerate(pairs):
        y = y.narrow(lead + i, max(-b, 0), outs[i])
    return y if any(flat) else y.clone()


@public(method=False)
def constant_pad_nd(input, pad, value=0):
    """Pad (or, with negative entries, crop) the last ``len(pad) // 2`` dims with ``value``:
    ``pad = (left_last, right_last, left_second_last, ...)``.

    Args:
        input: a tensor.
        pad: an even-length sequence of ints.
        value: the fill value.

    Returns:
        The padded tensor.

    Example:
        >>> import ember
        >>> ember.constant_pad_nd(ember.ones(1, 2), [1, -1], 0.5)
        tensor([[0.5000, 1.0000]])
    """
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    return _pad(input, pad, "constant", value)


_pad = pad.__wrapped__  # (``torch.constant_pad_nd`` records no ``aten::pad`` event)
