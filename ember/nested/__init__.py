"""``ember.nested``: batches of tensors of different lengths (PyTorch's ``torch.nested``).

A nested tensor holds sequences of different lengths as one tensor, so that a model runs on
them without padding: ``nn.Linear``, layer norm, elementwise ops, softmax and attention
(``F.scaled_dot_product_attention``) accept it. NOTE [ Nested tensors ] in
``ember/nested/_tensor.py`` describes the two layouts and how ops run.

Example:
    >>> import ember
    >>> seqs = [ember.randn(3, 8), ember.randn(5, 8)]
    >>> nt = ember.nested.nested_tensor(seqs, layout=ember.jagged)
    >>> out = ember.nn.Linear(8, 4)(nt).relu()
    >>> [c.shape for c in out.unbind()]
    [ember.Size([3, 4]), ember.Size([5, 4])]
"""

from __future__ import annotations

import warnings

from .._core.device import device as Device
from .._core.dtype import dtype as DType
from .._core.layout import jagged as _jagged, strided as _strided
from .._core.tensor import Tensor
from ._tensor import NestedInt, NestedTensor, _make, _offsets_of, from_components
from ._tensor import to_padded_tensor as _to_padded
from ..types import SymInt  # noqa: F401  (names torch.nested carries, as torch's does)

__all__ = ["nested_tensor", "as_nested_tensor", "nested_tensor_from_jagged", "to_padded_tensor",
           "narrow", "masked_select", "NestedTensor", "NestedInt"]


def _layout(layout):
    if layout is None or layout is _strided:
        return _strided
    if layout is _jagged:
        return _jagged
    raise RuntimeError(f"Specified layout is unsupported for nested tensors: {layout}")


def _components(tensor_list, dtype, device):
    import ember

    if isinstance(tensor_list, Tensor) and not isinstance(tensor_list, NestedTensor):
        tensor_list = list(tensor_list.unbind(0))
    if not isinstance(tensor_list, (list, tuple)):
        raise TypeError("nested_tensor(): expected a list of tensors (or of nested lists)")
    out = []
    for t in tensor_list:
        if not isinstance(t, Tensor):
            t = ember.tensor(t, dtype=dtype, device=device)
        if dtype is not None or device is not None:
            t = t.to(device=device, dtype=dtype)
        out.append(t)
    if out:
        dtypes = {t.dtype for t in out}
        if len(dtypes) > 1 and dtype is None:
            promoted = out[0].dtype
            for t in out[1:]:
                promoted = ember.promote_types(promoted, t.dtype)
            out = [t.to(promoted) for t in out]
        if len({t.dim() for t in out}) > 1:
            raise RuntimeError("When constructing a nested tensor, all tensors in list must "
                               "have the same dim")
    return out


_warned = [False]


def _prototype_warning():
    if not _warned[0]:
        _warned[0] = True
        warnings.warn(
            "The strided layout of nested tensors is the older of the two and has fewer ops; "
            "specify layout=torch.jagged when constructing a nested tensor (as PyTorch also "
            "recommends).", UserWarning, stacklevel=3)


def nested_tensor(tensor_list, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """A nested tensor holding copies of ``tensor_list``'s tensors (a new autograd leaf).

    Args:
        tensor_list (list of Tensors or of nested lists of numbers): the components, all of
            the same number of dimensions.
        dtype (ember.dtype, optional): the elements' type. Default: the components' (promoted).
        layout (ember.layout, optional): ``ember.strided`` (the default; components may
            differ in every dimension) or ``ember.jagged`` (one ragged dimension, the first).
        device (ember.device, optional): where the result lives. Default: the components'.
        requires_grad (bool): whether autograd records ops on the result. Default: False.
        pin_memory (bool): accepted for PyTorch's signature (pinned host memory is a CUDA
            concern). Default: False.

    Returns:
        NestedTensor: with ``len(tensor_list)`` components.

    Example:
        >>> import ember
        >>> nt = ember.nested.nested_tensor([ember.ones(2), ember.ones(3)], layout=ember.jagged)
        >>> nt.offsets()
        tensor([0, 2, 5])
    """
    layout = _layout(layout)
    if layout is _strided:
        _prototype_warning()
    comps = _components(tensor_list, dtype, device)
    nt = from_components(comps, layout, keep_graph=False)
    if requires_grad:
        nt.requires_grad_(True)
    return nt


def as_nested_tensor(ts, dtype=None, device=None, layout=None):
    """A nested tensor of ``ts`` that keeps autograd history back to them.

    Args:
        ts (list of Tensors, a Tensor or a NestedTensor): the components; a dense tensor's
            first dimension is the batch (each of its rows is a component, all of one length).
        dtype (ember.dtype, optional): convert to this type. Default: unchanged.
        device (ember.device, optional): move to this device. Default: unchanged.
        layout (ember.layout, optional): ``ember.strided`` (default) or ``ember.jagged``.

    Returns:
        NestedTensor: gradients flow back to ``ts``.

    Example:
        >>> import ember
        >>> x = ember.ones(2, 3, requires_grad=True)
        >>> nt = ember.nested.as_nested_tensor([x, ember.ones(1, 3)], layout=ember.jagged)
        >>> nt.values().sum().backward(); x.grad.shape
        ember.Size([2, 3])
    """
    layout = _layout(layout)
    if isinstance(ts, NestedTensor):
        if ts.layout is layout and dtype is None and device is None:
            return ts
        comps = [c.to(device=device, dtype=dtype) for c in ts.unbind()]
        return from_components(comps, layout)
    if isinstance(ts, Tensor):
        if ts.dim() < 2 and layout is _jagged:
            raise RuntimeError("as_nested_tensor(): a dense tensor needs at least two "
                               "dimensions to become a jagged nested tensor")
        t = ts.to(device=device, dtype=dtype) if (dtype or device) else ts
        if layout is _jagged:
            B, L = int(t.shape[0]), int(t.shape[1])
            values = t.reshape((B * L,) + tuple(t.shape[2:]))
            return _make(values, _offsets_of([L] * B, values.device), min_seqlen=L,
                         max_seqlen=L)
        return from_components(list(t.unbind(0)), layout)
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError("as_nested_tensor(): expected a tensor or a list of tensors")
    comps = [t.to(device=device, dtype=dtype) if (dtype or device) else t for t in ts]
    return from_components(comps, layout)


def nested_tensor_from_jagged(values, offsets=None, lengths=None, jagged_dim=None,
                              min_seqlen=None, max_seqlen=None):
    """A jagged nested tensor viewing ``values``, cut at ``offsets`` (and ``lengths``).

    Args:
        values (Tensor): the components concatenated along ``jagged_dim - 1``.
        offsets (Tensor, optional): ``B + 1`` int64 boundaries; from ``lengths`` when omitted.
        lengths (Tensor, optional): each component's length, for components that do not fill
            the gap to the next offset.
        jagged_dim (int, optional): the ragged dimension's index in the nested shape.
            Default: 1.
        min_seqlen, max_seqlen (int, optional): cached extreme lengths.

    Returns:
        NestedTensor: sharing memory and autograd history with ``values``.

    Example:
        >>> import ember
        >>> nt = ember.nested.nested_tensor_from_jagged(ember.arange(5.), ember.tensor([0, 2, 5]))
        >>> [c.tolist() for c in nt.unbind()]
        [[0.0, 1.0], [2.0, 3.0, 4.0]]
    """
    import ember

    if offsets is None:
        if lengths is None:
            raise RuntimeError("nested_tensor_from_jagged(): give offsets or lengths")
        offsets = ember.cat([ember.zeros(1, dtype=ember.int64, device=lengths.device),
                             lengths.to(ember.int64).cumsum(0)])
        lengths = None
    r = 1 if jagged_dim is None else int(jagged_dim)
    if not 1 <= r <= values.dim():
        raise RuntimeError(f"nested_tensor_from_jagged(): jagged_dim={r} is out of range for "
                           f"values of {values.dim()} dims")
    return _make(values, offsets.to(ember.int64) if offsets.dtype != ember.int64 else offsets,
                 lengths, r, min_seqlen=min_seqlen, max_seqlen=max_seqlen)


def to_padded_tensor(input, padding, output_size=None):
    """A dense tensor of ``input``'s components, each padded with ``padding``.

    Args:
        input (NestedTensor): the nested tensor.
        padding (float): the fill value.
        output_size (tuple of ints, optional): the result's shape. Default: the smallest
            shape holding every component.

    Returns:
        Tensor: of shape ``(B, *max_sizes)``.

    Example:
        >>> import ember
        >>> nt = ember.nested.nested_tensor([ember.ones(1), ember.ones(2)])
        >>> ember.nested.to_padded_tensor(nt, -1.0)
        tensor([[ 1., -1.],
                [ 1.,  1.]])
    """
    return _to_padded(input, padding, output_size)


def narrow(tensor, dim, start, length, layout=_strided):
    """A nested tensor of one window per row of the dense ``tensor`` (jagged layout: a view).

    Args:
        tensor (Tensor): a dense tensor whose first dimension is the batch.
        dim (int): the dimension windowed; 1 for the jagged layout, 0 for strided.
        start (int or Tensor): each row's window start (one int for all rows).
        length (int or Tensor): each row's window length.
        layout (ember.layout): ``ember.jagged`` (a non-contiguous view of ``tensor``) or
            ``ember.strided`` (only ``dim=0``, as in PyTorch). Default: ``ember.strided``.

    Returns:
        NestedTensor.

    Example:
        >>> import ember
        >>> x = ember.arange(10.).reshape(2, 5)
        >>> nt = ember.nested.narrow(x, 1, ember.tensor([0, 1]), ember.tensor([2, 3]),
        ...                          layout=ember.jagged)
        >>> [c.tolist() for c in nt.unbind()]
        [[0.0, 1.0], [6.0, 7.0, 8.0]]
    """
    import ember

    layout = _layout(layout)
    if layout is _strided:
        if dim != 0:
            raise RuntimeError(f"narrow(): only dim=0 supported for nested tensors, but got: "
                               f"{dim}")
        rows = tensor.narrow(0, int(start), int(length)) if not isinstance(tensor, NestedTensor) \
            else None
        if rows is None:
            return from_components(list(tensor.unbind())[int(start):int(start) + int(length)],
                                   _strided)
        return from_components(list(rows.unbind(0)), _strided)
    if dim != 1:
        raise RuntimeError("narrow(): the jagged layout narrows dim 1 only")
    if tensor.dim() < 2:
        raise RuntimeError("narrow(): expected a dense tensor of at least two dimensions")
    B, L = int(tensor.shape[0]), int(tensor.shape[1])
    starts = start.tolist() if isinstance(start, Tensor) else [int(start)] * B
    lens = length.tolist() if isinstance(length, Tensor) else [int(length)] * B
    if isinstance(starts, int):
        starts = [starts] * B
    if isinstance(lens, int):
        lens = [lens] * B
    for s, n in zip(starts, lens):
        if s < 0 or n < 0 or s + n > L:
            raise RuntimeError(f"narrow(): window start {s} length {n} is outside 0..{L}")
    offs = [i * L + int(starts[i]) for i in range(B)]
    offs.append(offs[-1] + int(lens[-1]) if B else 0)
    values = tensor.reshape((B * L,) + tuple(tensor.shape[2:]))
    return _make(values, ember.tensor(offs, dtype=ember.int64, device=tensor.device),
                 ember.tensor([int(n) for n in lens], dtype=ember.int64, device=tensor.device),
                 1, min_seqlen=min(lens) if lens else 0, max_seqlen=max(lens) if lens else 0)


def masked_select(tensor, mask):
    """A jagged nested tensor of the elements ``mask`` selects, one component per row.

    Rows are all dimensions but the last, flattened; each component holds the row's
    selected elements.

    Args:
        tensor (Tensor): a dense tensor.
        mask (Tensor): a bool tensor broadcastable to ``tensor``.

    Returns:
        NestedTensor of shape ``(rows, j)``.

    Example:
        >>> import ember
        >>> x = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
        >>> nt = ember.nested.masked_select(x, x > 2.5)
        >>> [c.tolist() for c in nt.unbind()]
        [[3.0], [4.0, 5.0, 6.0]]
    """
    import ember

    if isinstance(tensor, NestedTensor):
        raise RuntimeError("masked_select(): expected a dense tensor")
    if mask.dtype != ember.bool:
        raise RuntimeError(f"masked_select(): expected a bool mask, got {mask.dtype}")
    mask = mask.expand_as(tensor) if mask.shape != tensor.shape else mask
    rows = mask.reshape(-1, tensor.shape[-1]) if tensor.dim() else mask.reshape(1, 1)
    values = tensor.masked_select(mask)
    lens = rows.sum(1)
    offsets = ember.cat([ember.zeros(1, dtype=ember.int64, device=tensor.device),
                         lens.cumsum(0)])
    return _make(values, offsets, None, 1)
