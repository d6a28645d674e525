"""MultiheadAttention and the Transformer family (encoder/decoder layers and stacks)."""

from __future__ import annotations

import copy
import warnings

from ..._core.dtype import bool_, float32
from ..._ops.creation import empty, full
from .. import functional as F
from .. import init
from .._attention import _canonical_mask, multi_head_attention_forward
from ..parameter import Parameter
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm


class NonDynamicallyQuantizableLinear(Linear):
    """The output projection of MultiheadAttention (a Linear; the name matches PyTorch's)."""


class MultiheadAttention(Module):
    """Multi-head attention (Vaswani et al., 2017): ``forward(query, key, value,
    key_padding_mask=None, need_weights=True, attn_mask=None, average_attn_weights=True,
    is_causal=False)`` returns ``(output, weights)``.

    Args:
        embed_dim: total size of the model.
        num_heads: number of attention heads (must divide embed_dim).
        dropout: dropout probability. Default: 0 (0.1 in transformer layers).
        bias: learn an additive bias. Default: True.
        add_bias_kv: append learned bias vectors to the key and value sequences. Default: False.
        add_zero_attn: append a zero vector to the key and value sequences. Default: False.
        kdim: key feature size (default embed_dim).
        vdim: value feature size (default embed_dim).
        batch_first: inputs and outputs are ``(batch, seq, feature)``. Default: False.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        query ``(N, L, E)`` with batch_first (else ``(L, N, E)``).

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.MultiheadAttention(16, 4, batch_first=True)
        >>> x = ember.randn(2, 5, 16)
        >>> out, w = m(x, x, x)
        >>> tuple(out.shape), tuple(w.shape)
        ((2, 5, 16), (2, 5, 5))
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = dict(device=device, dtype=dtype)
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, **kw))
            self.bias_v = Parameter(empty(1, 1, embed_dim, **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def _fast_path(self, query, key, value):
        """Whether PyTorch's fused self-attention kernel would run this call (NOTE [ Rows
        with no key left ])."""
        from ...amp.autocast_mode import is_autocast_enabled
        from ...autograd.grad_mode import is_grad_enabled
        from ...backends import mha

        if (not mha.get_fastpath_enabled() or query.dim() != 3 or query is not key
                or key is not value or self.in_proj_bias is None or self.training
                or self.num_heads % 2 == 1 or not self.batch_first or self.bias_k is not None
                or self.bias_v is not None or self.add_zero_attn
                or not self._qkv_same_embed_dim or is_autocast_enabled("cuda")
                or self.in_proj_bias.dtype != query.dtype
                or query.device.type not in ("cpu", "cuda")):
            return False
        return not (is_grad_enabled() and any(
            t.requires_grad for t in (query, self.in_proj_weight, self.in_proj_bias,
                                      self.out_proj.weight, self.out_proj.bias)))

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        masks = [m for m in (key_padding_mask, attn_mask) if m is not None]
        if not need_weights and masks and all(m.dtype == bool_ for m in masks) \
                and self._fast_path(query, key, value):
            out, weights = self._forward(query, key, value, key_padding_mask, need_weights,
                                         attn_mask, average_attn_weights, is_causal)
            return _nan_rows_with_no_key(out, key_padding_mask, attn_mask), weights
        return self._forward(query, key, value, key_padding_mask, need_weights, attn_mask,
                             average_attn_weights, is_causal)

    def _forward(self, query, key, value, key_padding_mask, need_weights, attn_mask,
                 average_attn_weights, is_causal):
        batched = query.dim() == 3
        if self.batch_first and batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        extra = {}
        if not self._qkv_same_embed_dim:
            extra = dict(use_separate_proj_weight=True, q_proj_weight=self.q_proj_weight,
                         k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight)
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, average_attn_weights=average_attn_weights,
            is_causal=is_causal, **extra)
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights


# NOTE [ Rows with no key left ]
# A query whose every key is masked out has no attention weights to normalise. PyTorch's
# scaled_dot_product_attention gives such a row zeros, its explicit softmax NaN; its fused
# self-attention kernel, which MultiheadAttention runs in inference (not training, no
# gradient wanted, self-attention, need_weights=False, ...: ``_fast_path``), gives NaN too
# when the masks it is given are boolean (float masks give zeros there as in SDPA); so does
# TransformerEncoderLayer's fused kernel in inference, whatever the masks' dtype, for the
# whole output row. ember runs SDPA and puts the NaN back where those kernels would have.


def _nan_rows_with_no_key(out, key_padding_mask, attn_mask):
    """``out`` (batch, L, E) with NaN in the rows whose keys the masks all hide."""
    def blocked(m):  # boolean, or additive (-inf hides)
        return m if m.dtype == bool_ else m == float("-inf")

    n, length = out.shape[0], out.shape[1]
    dead = None
    if key_padding_mask is not None:
        dead = blocked(key_padding_mask).reshape(n, 1, -1)  # (N, 1, S)
    if attn_mask is not None:
        am = blocked(attn_mask)
        am = am.reshape(1, length, -1) if am.dim() == 2 else am.reshape(
            n, -1, length, am.shape[-1]).all(1)  # (N*H, L, S): dead for every head
        dead = am if dead is None else dead | am
    rows = dead.all(-1)  # (N or 1, L)
    if not bool(rows.any()):
        return out
    return out.masked_fill(rows.unsqueeze(-1), float("nan"))


def _no_fast_path(layer):
    """Why torch's fused encoder path would not take ``layer`` (its first reason), or ""."""
    from .activation import GELU, ReLU

    if not isinstance(layer, TransformerEncoderLayer):
        return "encoder_layer was not TransformerEncoderLayer"
    if layer.norm_first:
        return "encoder_layer.norm_first was True"
    if not layer.self_attn.batch_first:
        return ("encoder_layer.self_attn.batch_first was not True"
                "(use batch_first for better inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return "encoder_layer.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return "encoder_layer.self_attn was passed bias=False"
    act = layer.activation
    if not (act is F.relu or act is F.gelu or isinstance(act, (ReLU, GELU))):
        return "encoder_layer.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return "encoder_layer.norm1.eps was not equal to encoder_layer.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return "encoder_layer.self_attn.num_heads is odd"
    return ""


# NOTE [ Padded positions in inference ]
# In inference (a layer stack that qualifies, not training, no gradient wanted, a key padding
# mask that pads only at the ends, no attention mask) PyTorch's TransformerEncoder packs the
# valid positions into a nested tensor, runs the layers on those alone and pads the result
# with zeros: the padded positions of its output are 0 (the final norm's value of 0 when it
# has one), where training-mode semantics give them values. The valid positions attend to
# the same keys either way. ember runs the layers with the padding mask and zeroes the
# padded positions under the same conditions (``TransformerEncoder._packs``), so programs
# print the same numbers.

_packed_warned = [False]


def _warn_packed_once():
    if not _packed_warned[0]:
        _packed_warned[0] = True
        warnings.warn(
            "The PyTorch API of nested tensors is in prototype stage and will change in the "
            "near future. We recommend specifying layout=torch.jagged when constructing a "
            "nested tensor, as this layout receives active development, has better operator "
            "coverage, and works with torch.compile.", UserWarning, stacklevel=2)


def _fast_path_params(layer):
    attn = layer.self_attn
    return (attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight, attn.out_proj.bias,
            layer.norm1.weight, layer.norm1.bias, layer.norm2.weight, layer.norm2.bias,
            layer.linear1.weight, layer.linear1.bias, layer.linear2.weight, layer.linear2.bias)


def _compiling():
    from ... import compiler

    return compiler.is_compiling()


def _get_activation(activation):
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _get_activation_fn(activation):
    """The function a transformer layer's ``activation`` string names (``"relu"`` or
    ``"gelu"``); libraries building their own layers import it as from PyTorch.

    Args:
        activation (str): ``"relu"`` or ``"gelu"``.

    Returns:
        callable: ``F.relu`` or ``F.gelu``.

    Example::

        >>> from ember.nn.modules.transformer import _get_activation_fn
        >>> _get_activation_fn("gelu") is ember.nn.functional.gelu
        True
    """
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with residual and LayerNorm (post- or,
    with ``norm_first``, pre-norm). ``forward(src, src_mask=None, src_key_padding_mask=None,
    is_causal=False)``.

    Args:
        d_model (int): the model size.
        nhead (int): attention heads.
        dim_feedforward (int): hidden size of the feed-forward block. Default: 2048.
        dropout (float): dropout probability. Default: 0.1.
        activation (str or callable): ``"relu"`` (default), ``"gelu"`` or a callable.
        layer_norm_eps (float): LayerNorm epsilon. Default: 1e-5.
        batch_first (bool): ``(N, L, E)`` inputs. Default: False.
        norm_first (bool): pre-norm. Default: False.
        bias (bool): biases in the linear and norm layers. Default: True.
        device, dtype: where and how to create the parameters.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> layer = ember.nn.TransformerEncoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> tuple(layer(ember.randn(2, 5, 16)).shape)
        (2, 5, 16)
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _get_activation(activation)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        # as additive masks of the input's dtype from here on (so attention warns no more)
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               src.dtype, src_mask, "src_mask")
        src_mask = _canonical_mask(src_mask, "src_mask", src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        if (src_mask is not None or src_key_padding_mask is not None) and self._fast_path(src):
            x = _nan_rows_with_no_key(x, src_key_padding_mask, src_mask)
        return x

    def _fast_path(self, src):
        """Whether PyTorch's fused encoder-layer kernel would run this call (NOTE [ Rows with
        no key left ])."""
        from ...amp.autocast_mode import is_autocast_enabled
        from ...autograd.grad_mode import is_grad_enabled
        from ...backends import mha

        attn = self.self_attn
        if (not mha.get_fastpath_enabled() or src.dim() != 3 or self.training
                or not attn.batch_first or attn.in_proj_bias is None
                or not attn._qkv_same_embed_dim or attn.num_heads % 2 == 1
                or self.norm1.eps != self.norm2.eps or is_autocast_enabled("cuda")
                or src.device.type not in ("cpu", "cuda")):
            return False
        act = self.activation
        from .activation import GELU, ReLU

        if not (act is F.relu or act is F.gelu or isinstance(act, (ReLU, GELU))):
            return False
        if any(m._forward_hooks or m._forward_pre_hooks for m in self.modules()):
            return False
        return not (is_grad_enabled() and (src.requires_grad or any(
            p.requires_grad for p in _fast_path_params(self))))


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory`` and a feed-forward block, each with
    residual and LayerNorm. ``forward(tgt, memory, tgt_mask=None, memory_mask=None, ...)``.

    Args:
        d_model (int): the model size.
        nhead (int): attention heads.
        dim_feedforward (int): hidden size of the feed-forward block. Default: 2048.
        dropout (float): dropout probability. Default: 0.1.
        activation (str or callable): ``"relu"`` (default), ``"gelu"`` or a callable.
        layer_norm_eps (float): LayerNorm epsilon. Default: 1e-5.
        batch_first (bool): ``(N, L, E)`` inputs. Default: False.
        norm_first (bool): pre-norm. Default: False.
        bias (bool): biases in the linear and norm layers. Default: True.
        device, dtype: where and how to create the parameters.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> layer = ember.nn.TransformerDecoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> tuple(layer(ember.randn(2, 5, 16), ember.randn(2, 7, 16)).shape)
        (2, 5, 16)
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _get_activation(activation)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask,
                                              tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer`` (and an optional final norm).

    Args:
        encoder_layer (TransformerEncoderLayer): the layer to copy.
        num_layers (int): number of copies.
        norm (Module, optional): applied to the output.
        enable_nested_tensor (bool): accepted for compatibility.
        mask_check (bool): accepted for compatibility.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> layer = ember.nn.TransformerEncoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> encoder = ember.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        >>> tuple(encoder(ember.randn(2, 5, 16)).shape)
        (2, 5, 16)
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        # whether PyTorch's packed path would run (NOTE [ Padded positions in inference ]);
        # its warning about layers that cannot take it is given too, since programs print it
        why = _no_fast_path(encoder_layer)
        self.use_nested_tensor = bool(enable_nested_tensor) and not why
        if enable_nested_tensor and why:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why}", stacklevel=2)

    def _packs(self, src, mask, src_key_padding_mask):
        """Whether PyTorch would run this call on packed sequences (NOTE [ Padded positions
        in inference ]): the boolean mask of valid positions, or None."""
        from ...amp.autocast_mode import is_autocast_enabled
        from ...autograd.grad_mode import is_grad_enabled
        from ...backends import mha

        first = self.layers[0]
        if (not mha.get_fastpath_enabled() or not self.use_nested_tensor
                or first.training or src.dim() != 3 or src_key_padding_mask is None
                or mask is not None or is_autocast_enabled("cuda")):
            return None
        valid = src_key_padding_mask == 0  # (the canonical mask: 0 keeps, -inf pads)
        if getattr(self, "mask_check", True):
            if _compiling():
                return None
            # padding only at the ends: no valid position after a padded one
            if bool((valid[:, 1:] & ~valid[:, :-1]).any()):
                return None
        if src.device.type not in ("cpu", "cuda"):
            return None
        if is_grad_enabled() and (src.requires_grad or any(
                p.requires_grad for p in _fast_path_params(first))):
            return None
        return valid

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               src.dtype, mask, "mask")
        mask = _canonical_mask(mask, "mask", src.dtype)
        valid = self._packs(src, mask, src_key_padding_mask)
        if valid is not None:
            _warn_packed_once()
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        if valid is not None:  # the packed path pads its result with zeros
            out = out.masked_fill(~valid.unsqueeze(-1), 0.0)
        return self.norm(out) if self.norm is not None else out


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of ``decoder_layer`` (and an optional final norm).

    Args:
        decoder_layer (TransformerDecoderLayer): the layer to copy.
        num_layers (int): number of copies.
        norm (Module, optional): applied to the output.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> layer = ember.nn.TransformerDecoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> decoder = ember.nn.TransformerDecoder(layer, num_layers=2)
        >>> tuple(decoder(ember.randn(2, 5, 16), ember.randn(2, 7, 16)).shape)
        (2, 5, 16)
    """

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return self.norm(out) if self.norm is not None else out


class Transformer(Module):
    """The encoder-decoder Transformer (Vaswani et al., 2017). ``forward(src, tgt,
    src_mask=None, tgt_mask=None, memory_mask=None, ...)``; ``generate_square_subsequent_mask``
    builds a causal mask.

    Args:
        d_model (int): the model size. Default: 512.
        nhead (int): attention heads. Default: 8.
        num_encoder_layers, num_decoder_layers (int): Default: 6 each.
        dim_feedforward (int): Default: 2048.
        dropout (float): Default: 0.1.
        activation (str or callable): Default: ``"relu"``.
        custom_encoder, custom_decoder (Module, optional): used instead of the defaults.
        layer_norm_eps (float): Default: 1e-5.
        batch_first (bool): ``(N, L, E)`` inputs. Default: False.
        norm_first (bool): pre-norm. Default: False.
        bias (bool): Default: True.
        device, dtype: where and how to create the parameters.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> model = ember.nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1,
        ...                              num_decoder_layers=1, dim_feedforward=32)
        >>> tuple(model(ember.randn(7, 2, 16), ember.randn(5, 2, 16)).shape)
        (5, 2, 16)
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
                                            activation, layer_norm_eps, batch_first,
                                            norm_first, bias, **kw)
            self.encoder = TransformerEncoder(layer, num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps,
                                                        bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout,
                                            activation, layer_norm_eps, batch_first,
                                            norm_first, bias, **kw)
            self.decoder = TransformerDecoder(layer, num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps,
                                                        bias=bias, **kw))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """An additive causal mask: 0 on and below the diagonal, -inf above."""
        return full((sz, sz), float("-inf"), dtype=dtype or float32, device=device).triu(1)

