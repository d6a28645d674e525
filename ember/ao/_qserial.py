"""Quantized tensors in checkpoints: what ``ember.save`` writes for one and what
``ember.load`` rebuilds from PyTorch's record of one.

NOTE [ Quantized tensors in checkpoints ]
PyTorch records a quantized tensor as a call
``torch._utils._rebuild_qtensor(storage, offset, size, stride, qparams, requires_grad,
hooks)``: the storage holds the integers (a ``QInt8Storage``/``QUInt8Storage``/
``QInt32Storage``, byte-for-byte the int8/uint8/int32 values) and ``qparams`` is
``(torch.per_tensor_affine, scale, zero_point)`` for a per-tensor tensor, or
``(torch.per_channel_affine, scales, zero_points, axis)`` per channel, the scales
(float64) and zero points (int64) being ordinary tensors. ember writes exactly that (the
serializer asks :func:`reduce_args` for the tuple and writes the scheme as the global
``torch.<name>``), so its files load in PyTorch, and reads it back with
:func:`rebuild_qtensor`; both names are on the ``weights_only`` allow-list, as in PyTorch.
"""

import numpy as np

from .._core.tensor import Tensor, wrap
from . import _qscheme as _qs
from ._qtensor import QArray

__all__ = ["qparams", "rebuild_qtensor", "TorchScriptObject", "cell_params_from_weights",
           "weights_from_cell_params"]

# the schemes a checkpoint can hold (PyTorch refuses to rebuild the symmetric ones too)
_PER_CHANNEL = (_qs.per_channel_affine, _qs.per_channel_affine_float_qparams)


def qparams(a: QArray) -> tuple:
    """The quantizer parameters of a quantized array, as PyTorch pickles them.

    Args:
        a (QArray): the data of a quantized tensor.

    Returns:
        tuple: ``(qscheme, scale, zero_point)`` per tensor, ``(qscheme, scales,
        zero_points, axis)`` per channel (scales and zero points as tensors).

    Example:
        >>> q = ember.quantize_per_tensor(ember.tensor([1.0]), 0.5, 2, ember.quint8)
        >>> qparams(q._data)
        (ember.per_tensor_affine, 0.5, 2)
    """
    if a.axis is None:
        return (a.qscheme, float(a.scale), int(a.zero_point))
    return (a.qscheme, wrap(np.array(a.scale, np.float64)),
            wrap(np.array(a.zero_point)), int(a.axis))


def _array_of(x, np_dtype):
    if isinstance(x, Tensor):
        return np.array(x.detach().numpy(), np_dtype).reshape(-1)
    return np.array(x, np_dtype).reshape(-1)


def rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params,
                    requires_grad=False, backward_hooks=None):
    """``torch._utils._rebuild_qtensor``: a quantized tensor over a saved integer storage
    (see NOTE [ Quantized tensors in checkpoints ]).

    Args:
        storage: the typed storage of the integers (``QUInt8Storage``...).
        storage_offset (int), size (tuple), stride (tuple): the view of it.
        quantizer_params (tuple): the scheme and its parameters.
        requires_grad (bool): as saved (PyTorch saves False).
        backward_hooks: ignored, as PyTorch does.

    Returns:
        Tensor: the quantized tensor.

    Example:
        >>> import io
        >>> buf = io.BytesIO()
        >>> ember.save(ember.quantize_per_tensor(ember.tensor([1.0]), 0.5, 2, ember.quint8), buf)
        >>> _ = buf.seek(0)
        >>> ember.load(buf).int_repr()
        tensor([4], dtype=ember.uint8)
    """
    from ..serialization import _rebuild

    qdtype = storage.dtype
    ints = _rebuild._as_strided(_rebuild._elements(storage), storage_offset, size, stride)
    scheme = quantizer_params[0]
    if scheme is _qs.per_tensor_affine:
        _, scale, zero_point = quantizer_params
        data = QArray(ints, qdtype, _qs.per_tensor_affine, float(scale), int(zero_point))
    elif scheme in _PER_CHANNEL:
        _, scales, zero_points, axis = quantizer_params
        zp_type = np.float64 if scheme is _qs.per_channel_affine_float_qparams else np.int64
        data = QArray(ints, qdtype, scheme, _array_of(scales, np.float64),
                      _array_of(zero_points, zp_type), int(axis))
    else:
        raise RuntimeError(f"Can't deserialize quantized tensor with qscheme {scheme}")
    t = wrap(data)
    if requires_grad:
        t._rg = True
    return t


# NOTE [ Packed RNN weights in checkpoints ]
# PyTorch keeps a dynamically quantized LSTM layer's weights in TorchScript custom-class
# objects and pickles each as ``torch.ScriptObject`` (NEWOBJ, then BUILD with ``(state,
# class name)``): a ``rnn.CellParamsBase`` whose state is ``("quantized_dynamic", [b_ih,
# b_hh], [], [1], [packed_ih, packed_hh])``, each packed one a
# ``quantized.LinearPackedParamsBase`` with state ``((qweight, bias), name)``. ember's layer
# holds ``(w_ih, w_hh, b_ih, b_hh)``; its state dict carries the same objects PyTorch's does
# (a :class:`TorchScriptObject`, written by the serializer as PyTorch writes one), so
# checkpoints go both ways.
_CELL_PARAMS = "__torch__.torch.classes.rnn.CellParamsBase"
_LINEAR_PACKED = "__torch__.torch.classes.quantized.LinearPackedParamsBase"


class TorchScriptObject:
    """A TorchScript custom-class object as a checkpoint holds it (``torch.ScriptObject``):
    its pickled state and class name. Only the quantized RNN layers read one (see NOTE
    [ Packed RNN weights in checkpoints ]).

    Args:
        state: the object's state, as its class's ``__getstate__`` gives it.
        qualified_name (str): the TorchScript class, ``"__torch__.torch.classes...."``.

    Example:
        >>> TorchScriptObject((1, 2), "__torch__.torch.classes.x.Y").qualified_name
        '__torch__.torch.classes.x.Y'
    """

    def __init__(self, state=None, qualified_name=None):
        self.state = state
        self.qualified_name = qualified_name

    def __setstate__(self, state):  # BUILD with (state, class name), as PyTorch pickles it
        self.state, self.qualified_name = state

    def __repr__(self):
        return f"TorchScriptObject({self.qualified_name})"


def cell_params_from_weights(w_ih, w_hh, b_ih, b_hh) -> TorchScriptObject:
    """The ``rnn.CellParamsBase`` object PyTorch saves for one dynamically quantized LSTM
    layer and direction.

    Args:
        w_ih, w_hh (Tensor): the qint8 weights.
        b_ih, b_hh (Tensor): the float biases.

    Returns:
        TorchScriptObject: what the checkpoint holds.

    Example:
        >>> w = ember.quantize_per_tensor(ember.ones(4, 1), 0.1, 0, ember.qint8)
        >>> p = cell_params_from_weights(w, w, ember.zeros(4), ember.zeros(4))
        >>> weights_from_cell_params(p)[0] is w
        True
    """
    packed = [TorchScriptObject((w, b), _LINEAR_PACKED) for w, b in ((w_ih, b_ih), (w_hh, b_hh))]
    return TorchScriptObject(("quantized_dynamic", [b_ih, b_hh], [], [1], packed),
                             _CELL_PARAMS)


def weights_from_cell_params(obj) -> tuple:
    """``(w_ih, w_hh, b_ih, b_hh)`` from a saved ``rnn.CellParamsBase`` object.

    Args:
        obj (TorchScriptObject): as loaded from a checkpoint.

    Returns:
        tuple: the quantized weights and float biases.

    Example:
        >>> w = ember.quantize_per_tensor(ember.ones(4, 1), 0.1, 0, ember.qint8)
        >>> p = cell_params_from_weights(w, w, ember.zeros(4), ember.ones(4))
        >>> weights_from_cell_params(p)[3]
        tensor([1., 1., 1., 1.])
    """
    if not isinstance(obj, TorchScriptObject) or obj.qualified_name != _CELL_PARAMS:
        raise RuntimeError(f"expected the packed weights of a quantized LSTM layer "
                           f"({_CELL_PARAMS}), got {obj!r}")
    kind, biases, _, _, packed = obj.state
    if kind != "quantized_dynamic":
        raise RuntimeError(f"ember loads dynamically quantized qint8 LSTM weights; this "
                           f"checkpoint holds {kind!r} ones")
    w_ih, w_hh = (p.state[0] for p in packed)
    return (w_ih, w_hh, biases[0], biases[1])
