"""Which ops autocast changes, and how: the op lists, one table per device type.

NOTE [ Autocast op lists ]
Autocast is a layer of the mode stack (NOTE [ Dispatch ] in ember/_dispatch.py): it sees each
op call as ``(handle, args, kwargs)`` and looks the handle's name up here. The names are the
names the door shows -- ``aten.linear``, ``aten.convolution``, ``aten.pad`` -- which are
PyTorch's where the op is the same and ember's own where ember's op covers several of
PyTorch's (``convolution`` is conv1d/2d/3d, ``convolution_input_grad`` is the forward of
conv_transpose1d/2d/3d, ``avg_pool`` is every avg_poolNd, ``pad`` is every padding mode).

The lists were derived from PyTorch 2.13 in two ways and the two agree:

- the ops with a kernel under the ``AutocastCPU`` dispatch key
  (``torch._C._dispatch_has_kernel_for_dispatch_key(name, "AutocastCPU")``, 127 overloads);
- running every op of ``ember.list_ops()`` that torch also has under
  ``torch.autocast("cpu", torch.bfloat16)`` with float32 inputs, with bfloat16 inputs and
  with mixed inputs, and recording the output dtype. This adds the *composite* ops of
  PyTorch, which have no autocast kernel but decompose into ones that do: ``einsum`` (bmm)
  comes out in low precision, and so does ``linalg.pinv`` (an SVD in float32 followed by a
  matmul in low precision).

A policy is one of

- ``LOWER``: floating-point inputs (float16, bfloat16, float32 -- never float64) are cast to
  the autocast dtype;
- ``FP32``: floating-point inputs in a lower precision are cast to float32;
- ``PROMOTE``: the floating-point inputs are cast to the widest among them (float32 over the
  autocast dtype; float64 inputs do not take part);
- ``FP32_THEN_LOWER``: run in float32, cast the floating-point outputs to the autocast dtype
  (PyTorch's composite ``linalg.pinv``);
- ``FP32_IF_OPT_DTYPE`` (CUDA only): as ``FP32`` unless the call names an output ``dtype``;
- ``BANNED`` (CUDA only): the call raises (``binary_cross_entropy``, unsafe in float16);
- a function ``(handle, args, kwargs) -> policy or None``, for ember ops that are in PyTorch's list
  only for some of their forms (3-d pooling, reflection padding in 1-d and 2-d).

Ops in no list run on their inputs as they are. Out-of-place forms only: in-place (``addmm_``)
and ``out=`` forms are never cast, as in PyTorch. Names of PyTorch's list that ember computes
by composing other ops (``l1_loss``, ``binary_cross_entropy``, ``prelu``, ``grid_sampler``...)
are kept in the table so that they take effect when that op reaches the door under its name.
"""

from __future__ import annotations

LOWER = "lower"
FP32 = "fp32"
PROMOTE = "promote"
PLAIN = "plain"  # run as it is, with autocast suspended inside
FP32_THEN_LOWER = "fp32_then_lower"
FP32_IF_OPT_DTYPE = "fp32_if_opt_dtype"
BANNED = "banned"  # CUDA only: the op raises under autocast (binary_cross_entropy)

BANNED_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional."
    "binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")


def _when(n_spatial_key, ok):
    """A policy that applies FP32 when ``len(kwargs[n_spatial_key])`` is in ``ok``."""

    def policy(handle, args, kwargs):
        v = kwargs.get(n_spatial_key)
        return FP32 if v is not None and len(v) in ok else None

    return policy


def _pad_policy(handle, args, kwargs):
    # PyTorch: reflection_pad1d/2d and replication_pad1d/2d/3d run in float32;
    # reflection_pad3d, circular and constant padding run as they are
    mode, n = kwargs.get("mode"), kwargs.get("nspatial")
    if mode == "reflect" and n in (1, 2):
        return FP32
    if mode == "replicate" and n in (1, 2, 3):
        return FP32
    return None


# NOTE [ Autocast and matmul's names ]
# ``matmul`` is in PyTorch's list, ``dot`` and ``mv`` are not; but ember's ``matmul`` shows
# itself at the door under the name of the product it does (``mm``, ``bmm``, ``mv``, ``dot``,
# as PyTorch's decomposition would), while ``ember.dot`` and ``ember.mv`` reach the door as
# ``aten.matmul``. So: ``dot`` and ``mv`` handles are matmul's own (``linalg._matmul_handles``)
# when they come from ``matmul``, and a ``matmul`` handle with (1-D, 1-D) or (2-D, 1-D)
# operands comes from ``dot``/``mv``.


def _matmul_policy(handle, args, kwargs):
    if len(args) >= 2 and getattr(args[1], "ndim", 0) == 1 and getattr(args[0], "ndim", 0) <= 2:
        return None
    return LOWER


def _dot_mv_policy(handle, args, kwargs):
    from .._ops import linalg

    return LOWER if handle in linalg._matmul_handles.values() else None


_CPU_LOWER = """
    mm bmm addmm addbmm baddbmm linear linalg_vecdot einsum
    convolution convolution_input_grad conv1d conv2d conv3d conv_tbc
    conv_transpose1d conv_transpose2d conv_transpose3d _convolution
    prelu scaled_dot_product_attention _native_multi_head_attention _addmm_activation
    lstm_layer mkldnn_rnn_layer
"""

_CPU_FP32 = """
    binary_cross_entropy binary_cross_entropy_with_logits cosine_embedding_loss
    cross_entropy_loss ctc_loss hinge_embedding_loss huber_loss kl_div l1_loss
    margin_ranking_loss mse_loss multi_margin_loss multilabel_margin_loss nll_loss nll_loss2d
    poisson_nll_loss smooth_l1_loss soft_margin_loss triplet_margin_loss
    avg_pool3d max_pool3d adaptive_avg_pool3d adaptive_max_pool3d fractional_max_pool2d
    fractional_max_pool3d max_unpool2d max_unpool3d
    reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d replication_pad3d
    grid_sampler grid_sampler_2d grid_sampler_3d _grid_sampler_2d_cpu_fallback
    _fft_c2c _fft_r2c _fft_c2r fft_fft fft_ifft fft_fft2 fft_ifft2 fft_fftn fft_ifftn
    fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn fft_irfftn fft_hfft fft_ihfft stft
    polar view_as_complex prod trace cdist quantile nanquantile
    cholesky cholesky_inverse cholesky_solve inverse lu_solve orgqr ormqr pinverse geqrf
    _lu_with_info qr svd triangular_solve fake_quantize_per_tensor_affine
    linalg_cholesky linalg_cholesky_ex linalg_cond linalg_eig linalg_eigh linalg_eigvals
    linalg_eigvalsh linalg_householder_product linalg_inv linalg_inv_ex linalg_lstsq
    linalg_matrix_rank linalg_qr linalg_solve linalg_svd linalg_svdvals linalg_tensorinv
    linalg_tensorsolve
"""

_CPU_PROMOTE = "cat stack index_copy"

# ember's ops that cover several of PyTorch's, in the list for some forms only
_CPU_CONDITIONAL = {
    "avg_pool": _when("kernel_size", (3,)),
    "max_pool": _when("kernel_size", (3,)),
    "adaptive_avg_pool": _when("output_size", (3,)),
    "adaptive_max_pool": _when("output_size", (3,)),
    "pad": _pad_policy,
    "matmul": _matmul_policy,
    "dot": _dot_mv_policy,
    "mv": _dot_mv_policy,
}

# CUDA (PyTorch's AutocastCUDA kernels; used when ember runs on CuPy)
_CUDA_LOWER = """
    mm mv bmm addmm addmv addr addbmm baddbmm matmul linear linalg_vecdot einsum chain_matmul
    linalg_multi_dot convolution convolution_input_grad conv1d conv2d conv3d conv_tbc
    conv_transpose1d conv_transpose2d conv_transpose3d _convolution cudnn_convolution
    cudnn_convolution_transpose prelu lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell
    _thnn_fused_lstm_cell _thnn_fused_gru_cell lstm_layer scaled_dot_product_attention
    _scaled_dot_product_flash_attention
"""

_CUDA_FP32 = """
    acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow
    softplus layer_norm native_layer_norm group_norm rms_norm norm frobenius_norm
    nuclear_norm cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d
    hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss
    margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss
    multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp
    upsample_nearest1d upsample_nearest2d upsample_nearest3d upsample_linear1d
    upsample_bilinear2d upsample_bicubic2d upsample_trilinear3d _upsample_nearest_exact1d
    _upsample_nearest_exact2d _upsample_nearest_exact3d _upsample_bilinear2d_aa
    _upsample_bicubic2d_aa cross_entropy_loss
"""

_CUDA_FP32_IF_OPT_DTYPE = """
    prod softmax log_softmax cumprod cumsum linalg_vector_norm linalg_matrix_norm sum
"""

_CUDA_PROMOTE = """
    addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot
    scatter_add
"""


# NOTE [ Autocast round trip ]
# The CPU kernels of these ops return float32 for bfloat16/float16 inputs (they compute in
# float32 and do not round back, unlike mm's), and their backward then mixes dtypes. Until
# they do, autocast runs them the way ember's mm computes in low precision: inputs rounded
# to the autocast dtype and widened back to float32, the op in float32, the output rounded
# to the autocast dtype once. The values and dtypes are those of a low-precision kernel that
# accumulates in float32 (PyTorch's), and the gradients are rounded where PyTorch's are.
# CUDA's kernels (cuDNN convolutions, cuBLAS products) take the low precision directly: no
# round trip there, which would cost four casts per convolution.
ROUND_TRIP = frozenset(("linear", "convolution", "convolution_input_grad"))


def _table(*pairs, conditional=None):
    t = {}
    for policy, names in pairs:
        for n in names.split():
            t[n] = PLAIN if policy is None else policy
    t.update(conditional or {})
    return t


#: device type -> {op name -> policy}
POLICIES = {
    "cpu": _table((LOWER, _CPU_LOWER), (FP32, _CPU_FP32), (PROMOTE, _CPU_PROMOTE),
                  (FP32_THEN_LOWER, "linalg_pinv"), conditional=_CPU_CONDITIONAL),
    "cuda": _table((LOWER, _CUDA_LOWER), (FP32, _CUDA_FP32), (PROMOTE, _CUDA_PROMOTE),
                   (FP32_IF_OPT_DTYPE, _CUDA_FP32_IF_OPT_DTYPE),
                   (BANNED, "binary_cross_entropy")),
}
# (CUDA's list has matmul, mv and dot alike: nothing to tell apart there)


def _inner_policy(handle, args, kwargs):
    # PyTorch's inner is a matmul unless both operands are vectors (then a dot)
    dims = [getattr(a, "ndim", 0) for a in args[:2]]
    return LOWER if max(dims, default=0) >= 2 else PLAIN


def _tensordot_policy(handle, args, kwargs):
    # PyTorch's tensordot is an mm of the reshaped operands, a dot when it contracts all dims
    a, b = args[0], args[1]
    dims = args[2] if len(args) > 2 else kwargs.get("dims", 2)
    if isinstance(dims, int):
        full = dims == getattr(a, "ndim", -1) == getattr(b, "ndim", -1)
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else da
        db = [db] if isinstance(db, int) else db
        full = len(da) == getattr(a, "ndim", -1) and len(db) == getattr(b, "ndim", -1)
    return PLAIN if full else LOWER


# NOTE [ Autocast before validation ]
# Many of ember's public functions check their arguments -- same dtype for input and
# weight, no bfloat16 for an FFT or a factorisation -- or compose other ops *before* the call
# reaches the door, where PyTorch's autocast kernel runs before both. So autocast has a
# second, outer layer on the ``__torch_function__`` stack (ember/_overrides.py) that sees
# public calls by name and applies the same policies there, then runs the function with
# autocast suspended (as PyTorch's autocast kernel runs the op below itself): mixed float32
# and bfloat16 arguments are cast before the checks, and the ops a composite function is
# made of are not cast again. Names not in this table pass through both layers untouched
# except at the door.
FUNCTIONS = _table(
    (LOWER, """
        linear conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d
        conv_tbc mm bmm addmm addbmm baddbmm matmul __matmul__ __rmatmul__ einsum
        scaled_dot_product_attention prelu vecdot"""),
    (FP32, """
        fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft stft
        inv inv_ex inverse solve qr svd svdvals eig eigvals eigh eigvalsh cholesky
        cholesky_ex cholesky_solve cholesky_inverse pinverse lstsq matrix_rank cond
        householder_product tensorinv tensorsolve lu_solve triangular_solve
        polar view_as_complex prod trace cdist quantile nanquantile
        l1_loss smooth_l1_loss huber_loss mse_loss binary_cross_entropy
        binary_cross_entropy_with_logits kl_div poisson_nll_loss margin_ranking_loss
        soft_margin_loss hinge_embedding_loss cosine_embedding_loss triplet_margin_loss
        multi_margin_loss multilabel_margin_loss nll_loss cross_entropy ctc_loss
        grid_sample max_unpool2d max_unpool3d fractional_max_pool2d fractional_max_pool3d"""),
    (PROMOTE, "cat concat concatenate stack index_copy"),
    (FP32_THEN_LOWER, "pinv"),
    # not in PyTorch's CPU list, but composed in ember of ops that are: run as they are
    (None, "bilinear dot mv"),
    conditional={"inner": _inner_policy, "tensordot": _tensordot_policy},
)
#: public functions run as their low-precision op in float32 (NOTE [ Autocast round trip ])
FUNCTIONS_ROUND_TRIP = frozenset("""
    linear conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d
""".split())


def _interpolate_policy(func, args, kwargs):
    # PyTorch's upsample_* kernels run in float32 on CUDA; "area" is adaptive_avg_pool
    mode = kwargs.get("mode", args[3] if len(args) > 3 else "nearest")
    return PLAIN if mode == "area" else FP32


def _cuda_tensordot_policy(func, args, kwargs):
    return PROMOTE


# NOTE [ Autocast on CUDA ]
# PyTorch's CUDA lists differ from its CPU ones (the AutocastCUDA kernels of PyTorch 2.13;
# tests/amp/test_autocast_cuda.py checks the door table against them and the dtypes
# against torch.autocast("cuda") run on fake CUDA tensors): more ops run in float32
# (exp, log, pow, norms, layer/group norm, upsampling), reductions that accept an output
# ``dtype`` run in float32 only when none is given, binary_cross_entropy raises, and
# factorisations, FFTs, cat and stack run as they are. The function layer (NOTE [ Autocast
# before validation ]) therefore has its own table per device type: these are the public
# names that check their arguments, compose other ops or fill in ``dtype`` before the door.
FUNCTIONS_CUDA = _table(
    (LOWER, """
        linear conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d
        conv_tbc mm mv bmm addmm addmv addr addbmm baddbmm matmul __matmul__ __rmatmul__
        einsum chain_matmul multi_dot scaled_dot_product_attention prelu vecdot
        lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell"""),
    (FP32, """
        acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan
        pow __pow__ __rpow__ __rtruediv__ __rdiv__ softplus layer_norm group_norm rms_norm
        cosine_similarity normalize dist pdist cdist renorm logsumexp
        l1_loss smooth_l1_loss huber_loss mse_loss binary_cross_entropy_with_logits kl_div
        poisson_nll_loss margin_ranking_loss soft_margin_loss hinge_embedding_loss
        cosine_embedding_loss triplet_margin_loss multi_margin_loss multilabel_margin_loss
        nll_loss cross_entropy"""),
    (FP32_IF_OPT_DTYPE, """
        sum prod cumsum cumprod softmax log_softmax softmin vector_norm matrix_norm norm"""),
    (PROMOTE, "addcdiv addcmul atan2 arctan2 bilinear cross dot vdot grid_sample index_put "
              "scatter_add"),
    (BANNED, "binary_cross_entropy"),
    conditional={"interpolate": _interpolate_policy, "upsample": _interpolate_policy,
                 "tensordot": _cuda_tensordot_policy},
)

#: device type -> the function layer's table (NOTE [ Autocast before validation ])
FUNCTION_POLICIES = {"cpu": FUNCTIONS, "cuda": FUNCTIONS_CUDA}
FUNCTION_NAMES = frozenset(FUNCTIONS) | frozenset(FUNCTIONS_CUDA)
