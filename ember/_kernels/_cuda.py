"""The fused kernels of NOTE [ Fused kernels ] for CuPy arrays: CUDA C compiled by NVRTC.

NOTE [ Fused CUDA rows ]
CuPy runs a composite such as softmax as one kernel launch per step, each a full pass over
memory; PyTorch runs it as one. These kernels take one thread block per row (the
normalised axes flattened, made contiguous), hold the row's statistics in float32 whatever
the storage type, and reduce with warp shuffles and one shared-memory step: softmax and
log-softmax (one read for the max and sum, one to write), layer norm forward (two reads:
mean, then the centred variance, as the NumPy path computes it) and backward (the input
gradient per row; the weight and bias gradients as column sums over row chunks, then one
CuPy sum over the chunks).

Storage types are float32, float16 and bfloat16; half types convert through PTX
instructions and bit shifts, so no CUDA header is needed at compile time. float64 and
anything else return None (the generic CuPy kernels run). The module compiles once per
process on first use, and CuPy caches the binary on disk.
"""

from __future__ import annotations

import math
import struct
import threading

import numpy as np

from .._core import dtype as _dt

_SOURCE = r"""
#define NEG_INF __int_as_float(0xff800000)
struct F32 {
    typedef float S;
    static __device__ __forceinline__ float ld(S v) { return v; }
    static __device__ __forceinline__ S st(float v) { return v; }
};
struct F16 {
    typedef unsigned short S;
    static __device__ __forceinline__ float ld(S v) {
        float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v)); return f;
    }
    static __device__ __forceinline__ S st(float v) {
        unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v)); return h;
    }
};
struct BF16 {
    typedef unsigned short S;
    static __device__ __forceinline__ float ld(S v) {
        return __uint_as_float(((unsigned int)v) << 16);
    }
    static __device__ __forceinline__ S st(float v) {
        unsigned int u = __float_as_uint(v);
        if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
        u += 0x7fffu + ((u >> 16) & 1u);
        return (unsigned short)(u >> 16);
    }
};

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// every thread of the block gets the block's sum (max); sh holds 32 floats
__device__ float block_sum(float v, float* sh) {
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    v = (threadIdx.x < nw) ? sh[threadIdx.x] : 0.0f;
    if (wid == 0) { v = warp_sum(v); if (lane == 0) sh[0] = v; }
    __syncthreads();
    return sh[0];
}
__device__ float block_max(float v, float* sh) {
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    v = (threadIdx.x < nw) ? sh[threadIdx.x] : NEG_INF;
    if (wid == 0) { v = warp_max(v); if (lane == 0) sh[0] = v; }
    __syncthreads();
    return sh[0];
}

template <class K>
__global__ void softmax_rows(const typename K::S* x, typename K::S* y, long long n, int take_log) {
    __shared__ float sh[32];
    x += blockIdx.x * n; y += blockIdx.x * n;
    float m = NEG_INF;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, K::ld(x[i]));
    m = block_max(m, sh);
    float s = 0.0f;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) s += expf(K::ld(x[i]) - m);
    s = block_sum(s, sh);
    if (take_log) {
        float ls = logf(s);
        for (long long i = threadIdx.x; i < n; i += blockDim.x) y[i] = K::st(K::ld(x[i]) - m - ls);
    } else {
        float inv = 1.0f / s;
        for (long long i = threadIdx.x; i < n; i += blockDim.x)
            y[i] = K::st(expf(K::ld(x[i]) - m) * inv);
    }
}

// y = softmax'(g): g*y - y*sum(g*y)   (log: g - exp(y)*sum(g))
template <class K>
__global__ void softmax_backward_rows(const typename K::S* g, const typename K::S* y,
                                      typename K::S* gx, long long n, int take_log) {
    __shared__ float sh[32];
    g += blockIdx.x * n; y += blockIdx.x * n; gx += blockIdx.x * n;
    float s = 0.0f;
    if (take_log) {
        for (long long i = threadIdx.x; i < n; i += blockDim.x) s += K::ld(g[i]);
    } else {
        for (long long i = threadIdx.x; i < n; i += blockDim.x) s += K::ld(g[i]) * K::ld(y[i]);
    }
    s = block_sum(s, sh);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        float yi = K::ld(y[i]), gi = K::ld(g[i]);
        gx[i] = K::st(take_log ? gi - expf(yi) * s : yi * (gi - s));
    }
}

template <class K>
__global__ void layer_norm_rows(const typename K::S* x, const typename K::S* w,
                                const typename K::S* b, typename K::S* y, float* mean_out,
                                float* rstd_out, long long n, float eps) {
    __shared__ float sh[32];
    x += blockIdx.x * n; y += blockIdx.x * n;
    float s = 0.0f, inf = 0.0f;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        float v = K::ld(x[i]);
        s += v;
        if (isinf(v)) inf = 1.0f;
    }
    float mean = block_sum(s, sh) / (float)n;
    // a row holding an infinity: the centred values meet inf - inf, as in PyTorch's kernel
    // (a mean that overflowed from finite values stays infinite)
    if (isinf(mean) && block_max(inf, sh) > 0.0f) mean = __int_as_float(0x7fc00000);
    float v = 0.0f;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        float d = K::ld(x[i]) - mean;
        v += d * d;
    }
    float rstd = rsqrtf(block_sum(v, sh) / (float)n + eps);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        float r = (K::ld(x[i]) - mean) * rstd;
        if (w) r *= K::ld(w[i]);
        if (b) r += K::ld(b[i]);
        y[i] = K::st(r);
    }
    if (threadIdx.x == 0) { mean_out[blockIdx.x] = mean; rstd_out[blockIdx.x] = rstd; }
}

template <class K>
__global__ void layer_norm_backward_rows(const typename K::S* g, const typename K::S* x,
                                         const typename K::S* w, const float* mean,
                                         const float* rstd, typename K::S* gx, long long n) {
    __shared__ float sh[32];
    g += blockIdx.x * n; x += blockIdx.x * n; gx += blockIdx.x * n;
    float mu = mean[blockIdx.x], rs = rstd[blockIdx.x];
    float s1 = 0.0f, s2 = 0.0f;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        float gh = K::ld(g[i]) * (w ? K::ld(w[i]) : 1.0f);
        s1 += gh;
        s2 += gh * (K::ld(x[i]) - mu) * rs;
    }
    s1 = block_sum(s1, sh) / (float)n;
    s2 = block_sum(s2, sh) / (float)n;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        float gh = K::ld(g[i]) * (w ? K::ld(w[i]) : 1.0f);
        float xh = (K::ld(x[i]) - mu) * rs;
        gx[i] = K::st(rs * (gh - s1 - xh * s2));
    }
}

// partial column sums of g * xhat and g over a chunk of rows: out (chunks, n) each
template <class K>
__global__ void layer_norm_param_grads(const typename K::S* g, const typename K::S* x,
                                       const float* mean, const float* rstd, float* gw_part,
                                       float* gb_part, long long m, long long n,
                                       long long rows_per_chunk) {
    long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (j >= n) return;
    long long r0 = blockIdx.y * rows_per_chunk, r1 = min(m, r0 + rows_per_chunk);
    float aw = 0.0f, ab = 0.0f;
    for (long long r = r0; r < r1; ++r) {
        float gv = K::ld(g[r * n + j]);
        aw += gv * (K::ld(x[r * n + j]) - mean[r]) * rstd[r];
        ab += gv;
    }
    gw_part[blockIdx.y * n + j] = aw;
    gb_part[blockIdx.y * n + j] = ab;
}

// cross entropy over rows of logits: probabilities and each row's weighted loss
template <class K>
__global__ void cross_entropy_rows(const typename K::S* x, const long long* target,
                                   const typename K::S* weight, typename K::S* probs,
                                   float* losses, long long n) {
    __shared__ float sh[32];
    x += blockIdx.x * n; probs += blockIdx.x * n;
    float m = NEG_INF;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, K::ld(x[i]));
    m = block_max(m, sh);
    float s = 0.0f;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) s += expf(K::ld(x[i]) - m);
    s = block_sum(s, sh);
    float inv = 1.0f / s;
    for (long long i = threadIdx.x; i < n; i += blockDim.x)
        probs[i] = K::st(expf(K::ld(x[i]) - m) * inv);
    if (threadIdx.x == 0) {
        float w = K::ld(weight[blockIdx.x]);
        losses[blockIdx.x] = w == 0.0f ? 0.0f : (logf(s) + m - K::ld(x[target[blockIdx.x]])) * w;
    }
}

// gx = scale[row] * (probs - onehot(target[row]))
template <class K>
__global__ void cross_entropy_backward_rows(const typename K::S* probs, const long long* target,
                                            const typename K::S* scale, typename K::S* gx,
                                            long long total, long long n) {
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < total;
         j += (long long)gridDim.x * blockDim.x) {
        long long r = j / n, i = j - r * n;
        float sc = K::ld(scale[r]);
        gx[j] = K::st(sc * (K::ld(probs[j]) - (i == target[r] ? 1.0f : 0.0f)));
    }
}

// element-wise activations over flat contiguous arrays, computed in float32
#define ELEMENTS(j, n) for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; \
                            j < n; j += (long long)gridDim.x * blockDim.x)
#define GELU_C 0.7978845608028654f
#define GELU_K 0.044715f
template <class K>
__global__ void gelu_tanh_fwd(const typename K::S* x, typename K::S* y, long long n) {
    ELEMENTS(j, n) {
        float v = K::ld(x[j]);
        y[j] = K::st(0.5f * v * (1.0f + tanhf(GELU_C * (v + GELU_K * v * v * v))));
    }
}
template <class K>
__global__ void gelu_tanh_bwd(const typename K::S* g, const typename K::S* x,
                              typename K::S* gx, long long n) {
    ELEMENTS(j, n) {
        float v = K::ld(x[j]);
        float th = tanhf(GELU_C * (v + GELU_K * v * v * v));
        float d = 0.5f * (1.0f + th) +
                  0.5f * v * (1.0f - th * th) * GELU_C * (1.0f + 3.0f * GELU_K * v * v);
        gx[j] = K::st(K::ld(g[j]) * d);
    }
}
// relu's backward: g where out > threshold (a NaN out lets g through), else 0
template <class K>
__global__ void threshold_bwd(const typename K::S* g, const typename K::S* out,
                              typename K::S* gx, float threshold, long long n) {
    ELEMENTS(j, n) {
        gx[j] = K::ld(out[j]) <= threshold ? K::st(0.0f) : g[j];
    }
}
// exact gelu: x Phi(x), and its derivative Phi(x) + x phi(x) (float32) for the backward
template <class K>
__global__ void gelu_erf_fwd(const typename K::S* x, typename K::S* y, float* der, long long n) {
    ELEMENTS(j, n) {
        float v = K::ld(x[j]);
        float cdf = 0.5f * (1.0f + erff(v * 0.7071067811865476f));
        y[j] = K::st(v * cdf);
        der[j] = cdf + v * expf(-0.5f * v * v) * 0.3989422804014327f;
    }
}
// relu: 0 where x <= 0 (-0.0 gives +0.0, as torch's CUDA kernel), x elsewhere (NaN passes)
template <class K>
__global__ void relu_fwd(const typename K::S* x, typename K::S* y, long long n) {
    ELEMENTS(j, n) {
        y[j] = K::ld(x[j]) <= 0.0f ? K::st(0.0f) : x[j];
    }
}
template <class K>
__global__ void silu_fwd(const typename K::S* x, typename K::S* y, long long n) {
    ELEMENTS(j, n) {
        float v = K::ld(x[j]);
        y[j] = K::st(v / (1.0f + expf(-v)));
    }
}
template <class K>
__global__ void silu_bwd(const typename K::S* g, const typename K::S* x, typename K::S* gx,
                         long long n) {
    ELEMENTS(j, n) {
        float v = K::ld(x[j]);
        float s = 1.0f / (1.0f + expf(-v));
        gx[j] = K::st(K::ld(g[j]) * s * (1.0f + v * (1.0f - s)));
    }
}

// batch norm over NCHW planes: channel c's values are x[(n*C + c)*HW + i]. Grid (C, S):
// segment s of channel c sums its share of the N*HW values (partial sums, finished by the
// caller), so few-channel layers with large planes still fill the GPU. A thread walks its
// values keeping (n, i) by additions: no 64-bit division per element.
template <class K>
__global__ void bn_partial_sums(const typename K::S* x, const float* center, float* out,
                                long long N, long long C, long long HW, int squares) {
    __shared__ float sh[32];
    long long c = blockIdx.x, total = N * HW;
    long long per = (total + gridDim.y - 1) / gridDim.y;
    long long j0 = blockIdx.y * per, j1 = min(total, j0 + per);
    float mu = squares ? center[c] : 0.0f, acc = 0.0f;
    long long j = j0 + threadIdx.x;
    long long n = j / HW, i = j - n * HW;
    long long sn = blockDim.x / HW, si = blockDim.x - sn * HW;
    for (; j < j1; j += blockDim.x) {
        float v = K::ld(x[(n * C + c) * HW + i]) - mu;
        acc += squares ? v * v : v;
        i += si; n += sn;
        if (i >= HW) { i -= HW; ++n; }
    }
    acc = block_sum(acc, sh);
    if (threadIdx.x == 0) out[c * gridDim.y + blockIdx.y] = acc;
}

// partial sums of g and of g * (x - mean) per channel segment
template <class K>
__global__ void bn_backward_partial_sums(const typename K::S* g, const typename K::S* x,
                                         const float* mean, float* sum_g, float* sum_gxc,
                                         long long N, long long C, long long HW) {
    __shared__ float sh[32];
    long long c = blockIdx.x, total = N * HW;
    long long per = (total + gridDim.y - 1) / gridDim.y;
    long long j0 = blockIdx.y * per, j1 = min(total, j0 + per);
    float mu = mean[c], a = 0.0f, b = 0.0f;
    long long j = j0 + threadIdx.x;
    long long n = j / HW, i = j - n * HW;
    long long sn = blockDim.x / HW, si = blockDim.x - sn * HW;
    for (; j < j1; j += blockDim.x) {
        long long at = (n * C + c) * HW + i;
        float gv = K::ld(g[at]);
        a += gv;
        b += gv * (K::ld(x[at]) - mu);
        i += si; n += sn;
        if (i >= HW) { i -= HW; ++n; }
    }
    a = block_sum(a, sh);
    b = block_sum(b, sh);
    if (threadIdx.x == 0) {
        sum_g[c * gridDim.y + blockIdx.y] = a;
        sum_gxc[c * gridDim.y + blockIdx.y] = b;
    }
}

// one thread per channel: finish the partial sums of a (C, S) array
extern "C" __global__ void bn_finalize_mean(const float* part, float* mean, long long C, int S,
                                 float inv_count) {
    long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0.0f;
    for (int i = 0; i < S; ++i) s += part[c * S + i];
    mean[c] = s * inv_count;
}
// from the centred squares: rstd, and the forward's per-channel a = w * rstd, b = bias - mean * a
extern "C" __global__ void bn_finalize(const float* part, const float* mean, const float* w,
                            const float* b, float* rstd, float* a, float* shift, long long C, int S,
                            float inv_count, float eps) {
    long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0.0f;
    for (int i = 0; i < S; ++i) s += part[c * S + i];
    float r = 1.0f / sqrtf(s * inv_count + eps);
    float ac = w ? w[c] * r : r;
    rstd[c] = r; a[c] = ac; shift[c] = (b ? b[c] : 0.0f) - mean[c] * ac;
}
// evaluation: the running statistics give rstd, a and the shift
extern "C" __global__ void bn_finalize_eval(const float* mean, const float* var, const float* w,
                                 const float* b, float* rstd, float* a, float* shift,
                                 long long C, float eps) {
    long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (c >= C) return;
    float r = 1.0f / sqrtf(var[c] + eps);
    float ac = w ? w[c] * r : r;
    rstd[c] = r; a[c] = ac; shift[c] = (b ? b[c] : 0.0f) - mean[c] * ac;
}
// backward: the input gradient's per-channel factors and the parameters' gradients
extern "C" __global__ void bn_backward_finalize(const float* pg, const float* pgx,
                                     const float* rstd, const float* w, float* kg,
                                     float* kx, float* kc,
                                     float* gw, float* gb, long long C, int S, float inv_count) {
    long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (c >= C) return;
    float sg = 0.0f, sgx = 0.0f;
    for (int i = 0; i < S; ++i) { sg += pg[c * S + i]; sgx += pgx[c * S + i]; }
    float r = rstd[c], k = (w ? w[c] : 1.0f) * r;
    kg[c] = k; kx[c] = -k * r * r * sgx * inv_count; kc[c] = -k * sg * inv_count;
    gw[c] = sgx * r; gb[c] = sg;
}

// out = x * a[c] + b[c]   (the forward), or with g: out = g * a[c] + (x - m[c]) * b[c] + d[c].
// One element per thread and iteration: its channel is (j / HW) % C, in 32-bit unsigned
// arithmetic while the array has fewer than 2^32 elements (a 64-bit division per element
// made these kernels compute-bound).
#define BN_CHANNEL(j) (total < 4294967296LL ? (long long)(((unsigned int)(j) / hw32) % c32) \
                                            : ((j) / HW) % C)
template <class K>
__global__ void bn_apply(const typename K::S* x, const float* a, const float* b,
                         typename K::S* out, long long total, long long C, long long HW) {
    unsigned int hw32 = (unsigned int)HW, c32 = (unsigned int)C;
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < total;
         j += (long long)gridDim.x * blockDim.x) {
        long long c = BN_CHANNEL(j);
        out[j] = K::st(K::ld(x[j]) * a[c] + b[c]);
    }
}
template <class K>
__global__ void bn_backward_apply(const typename K::S* g, const typename K::S* x,
                                  const float* mean, const float* kg, const float* kx,
                                  const float* kc, typename K::S* out, long long total,
                                  long long C, long long HW) {
    unsigned int hw32 = (unsigned int)HW, c32 = (unsigned int)C;
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < total;
         j += (long long)gridDim.x * blockDim.x) {
        long long c = BN_CHANNEL(j);
        out[j] = K::st(K::ld(g[j]) * kg[c] + (K::ld(x[j]) - mean[c]) * kx[c] + kc[c]);
    }
}
"""

_KINDS = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}
#: the same by dtype object: ``dtype.name`` is a Python-level property of NumPy's, a
#: microsecond a call on the launch path
_KIND_OF = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
            np.dtype(_dt.bfloat16.np): "BF16"}
_NAMES = ("softmax_rows", "softmax_backward_rows", "layer_norm_rows",
          "layer_norm_backward_rows", "layer_norm_param_grads", "bn_partial_sums",
          "bn_backward_partial_sums", "bn_apply", "bn_backward_apply", "cross_entropy_rows",
          "cross_entropy_backward_rows", "gelu_tanh_fwd", "gelu_tanh_bwd", "gelu_erf_fwd",
          "silu_fwd", "silu_bwd", "threshold_bwd", "relu_fwd")
_module = None
_NULL = np.uint64(0)  # a null pointer argument


#: why the kernels could not be compiled ("" while they can)
compile_error = ""


def _compiled():
    """Compile the module once; False (with ``compile_error`` set and one warning) when
    NVRTC refuses it, so that every caller falls back to the generic kernels."""
    global _module, compile_error
    if _module is None:
        import cupy as cp

        exprs = [f"{n}<{k}>" for n in _NAMES for k in _KINDS.values()]
        try:
            _module = cp.RawModule(code=_SOURCE, options=("--std=c++14",),
                                   name_expressions=exprs)
            _module.get_function(exprs[0])  # compiles now, not at the first launch
        except Exception as e:  # noqa: BLE001 - a toolkit without NVRTC, an old driver
            import warnings

            _module = False
            compile_error = f"{type(e).__name__}: {e}"
            warnings.warn(f"ember: the fused CUDA kernels did not compile ({compile_error}); "
                          f"using the generic CuPy kernels", RuntimeWarning, stacklevel=3)
    return bool(_module)


_functions: dict = {}


# NOTE [ Launching with one driver call ]
# CuPy's call of a raw kernel turns each argument into a C++ object and packs them: on an
# H100 this cost about 25 us of host time for batch norm's kernels of nine to twelve
# arguments, five of them per layer, against ~5 us for PyTorch's launch. ember's kernels
# take device pointers and NumPy scalars only, so ``_Launch`` writes each argument into an
# 8-byte slot of a per-thread buffer and hands the slots' addresses to cuLaunchKernel
# (``cupy.cuda.driver.launchKernel``) in one call on the current stream; the driver copies
# the values at the launch, so the buffer is free again when the call returns. A call with
# an argument of any other type goes through CuPy's own launch.

#: each argument type's 8-byte slot in ``struct`` notation (4-byte values padded)
_SLOT = {np.int64: "q", np.uint64: "Q", np.float32: "f4x", np.int32: "i4x", np.float64: "d"}
_formats: dict = {}  # the argument types of a call -> its struct format (None: CuPy's path)
#: (cupy.ndarray, driver.launchKernel, cupy.cuda.get_current_stream, runtime.getDevice)
_launch_env: list = []


def _format(types, ndarray):
    codes = []
    for t in types:
        code = "Q" if t is ndarray else _SLOT.get(t)
        if code is None:
            return None
        codes.append(code)
    return struct.Struct("<" + "".join(codes))


class _Launch:
    """A compiled kernel launched as NOTE [ Launching with one driver call ] describes;
    called as CuPy's ``Function``: ``f(grid, block, args, shared_mem=0)``."""

    __slots__ = ("function", "ptrs", "local")

    def __init__(self, function):
        self.function = function  # a RawKernel: compiled per device (``.kernel``)
        self.ptrs = {}  # device -> CUfunction
        self.local = threading.local()
        if not _launch_env:
            import cupy as cp
            from cupy.cuda import driver

            _launch_env.extend((cp.ndarray, driver.launchKernel, cp.cuda.get_current_stream,
                                cp.cuda.runtime.getDevice))

    def _buffer(self, n):
        """This thread's argument slots (a ctypes buffer: ``struct`` writes into it at a
        third of the cost of a NumPy array's buffer), the array of their addresses and its
        address (cuLaunchKernel's ``kernelParams``)."""
        buf = getattr(self.local, "buf", None)
        if buf is None or len(buf[0]) < 8 * n:
            import ctypes

            count = max(n, 16)
            slots = ctypes.create_string_buffer(8 * count)
            base = ctypes.addressof(slots)
            addresses = (ctypes.c_uint64 * count)(*(base + 8 * i for i in range(count)))
            buf = self.local.buf = (slots, addresses, ctypes.addressof(addresses))
        return buf

    def __call__(self, grid, block, args, shared_mem=0):
        ndarray, launch, current_stream, device = _launch_env
        types = tuple(map(type, args))
        fmt = _formats.get(types, 0)
        if fmt == 0:
            fmt = _formats[types] = _format(types, ndarray)
        if fmt is None:
            return self.function(grid, block, args, shared_mem=shared_mem)
        dev = device()
        ptr = self.ptrs.get(dev)
        if ptr is None:
            ptr = self.ptrs[dev] = self.function.kernel.ptr
        slots, _, params = self._buffer(len(args))
        fmt.pack_into(slots, 0, *[a.data.ptr if t is ndarray else a
                                  for a, t in zip(args, types)])
        gx, gy, gz = (grid, 1, 1) if type(grid) is int else (*grid, 1, 1)[:3]
        bx, by, bz = (block, 1, 1) if type(block) is int else (*block, 1, 1)[:3]
        launch(ptr, gx, gy, gz, bx, by, bz, shared_mem, current_stream().ptr, params, 0)


def _function(name, dtype):
    """The compiled kernel ``name`` for ``dtype`` (None: the float32 helpers, not
    templated), looked up in the module once."""
    key = (name, dtype)
    f = _functions.get(key)
    if f is None:
        f = _functions[key] = _Launch(_module.get_function(
            name if dtype is None else f"{name}<{_KIND_OF[dtype]}>"))
    return f


# -- the training-step kernels: a module of their own --------------------------------------------
#
# NOTE [ Training-step CUDA kernels ]
# Kernels that replace a chain of CuPy launches in a training step, compiled as a module of
# their own (so that a toolkit refusing one of them leaves the row kernels above working):
#
# - ``max_pool2d_fwd``: one thread per output, the window's taps in order, the first maximal
#   tap kept (a NaN wins and the last NaN tap is reported, as in PyTorch), taps outside the
#   input skipped; where the generic kernel makes ~40 CuPy launches and reads a NaN flag
#   back to the host (a device synchronisation in every forward).
# - ``bn_update_running``: batch norm's running mean and variance, both in one launch from
#   the batch statistics (mean, 1/std) the forward kernel already made, where composing it
#   took ten launches per layer (a third of a ResNet-50 step's dispatches).

_TRAIN_SOURCE = _SOURCE[:_SOURCE.index("__device__ __forceinline__ float warp_sum")] + r"""
template <class K>
__global__ void max_pool2d_fwd(const typename K::S* x, typename K::S* y, long long* idx,
                               long long total, int H, int W, int OH, int OW, int kh, int kw,
                               int sh, int sw, int ph, int pw, int dh, int dw) {
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < total;
         j += (long long)gridDim.x * blockDim.x) {
        int ow = (int)(j % OW);
        long long t = j / OW;
        int oh = (int)(t % OH);
        long long plane = t / OH;
        const typename K::S* xp = x + plane * (long long)H * W;
        int h0 = oh * sh - ph, w0 = ow * sw - pw;
        int hs = h0, ws = w0;
        while (hs < 0) hs += dh;
        while (ws < 0) ws += dw;
        float best = NEG_INF;
        long long at = (long long)hs * W + ws;
        for (int a = 0; a < kh; ++a) {
            int ih = h0 + a * dh;
            if (ih < 0 || ih >= H) continue;
            for (int b = 0; b < kw; ++b) {
                int iw = w0 + b * dw;
                if (iw < 0 || iw >= W) continue;
                float v = K::ld(xp[ih * W + iw]);
                if (v > best || v != v) { best = v; at = (long long)ih * W + iw; }
            }
        }
        y[j] = K::st(best);
        idx[j] = at;
    }
}

// a dtype conversion of a contiguous array (float32 <-> float16/bfloat16), rounding to
// nearest even as NumPy, ml_dtypes and CuPy's astype do
template <class A, class B>
__global__ void convert(const typename A::S* x, typename B::S* y, long long n) {
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n;
         j += (long long)gridDim.x * blockDim.x)
        y[j] = B::st(A::ld(x[j]));
}

extern "C" __global__ void bn_update_running(float* rm, float* rv, const float* mean,
                                             const float* rstd, long long C, float keep,
                                             float momentum, double eps, float ratio) {
    long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (c >= C) return;
    rm[c] = __fadd_rn(__fmul_rn(rm[c], keep), __fmul_rn(mean[c], momentum));
    if (rv) {
        double r = (double)rstd[c];
        float var = (float)(1.0 / (r * r) - eps);
        rv[c] = __fadd_rn(__fmul_rn(rv[c], keep), __fmul_rn(__fmul_rn(var, ratio), momentum));
    }
}
"""
_TRAIN_NAMES = ("max_pool2d_fwd",)
#: the conversions ``convert`` compiles: float32 to and from each half type
_CONVERSIONS = (("F32", "F16"), ("F32", "BF16"), ("F16", "F32"), ("BF16", "F32"))
_TRAIN_EXPRS = [f"{n}<{k}>" for n in _TRAIN_NAMES for k in _KINDS.values()] + \
    [f"convert<{a}, {b}>" for a, b in _CONVERSIONS]
_train_module = None
_EXTRA_MODULES = (("ember/_kernels/_cuda.py (training-step kernels)", _TRAIN_SOURCE,
                   _TRAIN_EXPRS),)


def _train_function(name, dtype=None):
    """A kernel of the training-step module (NOTE [ Training-step CUDA kernels ]), or None
    when that module did not compile (one warning)."""
    global _train_module
    key = ("train", name, dtype)
    f = _functions.get(key)
    if f is not None:
        return f
    if _train_module is None:
        import cupy as cp

        exprs = _TRAIN_EXPRS
        try:
            _train_module = cp.RawModule(code=_TRAIN_SOURCE, options=("--std=c++14",),
                                         name_expressions=exprs)
            _train_module.get_function(exprs[0])
        except Exception as e:  # noqa: BLE001 - as _compiled
            import warnings

            _train_module = False
            warnings.warn(f"ember: the training-step CUDA kernels did not compile "
                          f"({type(e).__name__}: {e}); using the generic CuPy kernels",
                          RuntimeWarning, stacklevel=3)
    if not _train_module:
        return None
    f = _functions[key] = _Launch(_train_module.get_function(
        name if dtype is None else f"{name}<{_KIND_OF[dtype]}>"))
    return f


def convert(a, dtype):
    """A contiguous CuPy array cast between float32 and float16/bfloat16 by one kernel
    launch (CuPy's ``astype`` costs several times the host time), or None where not
    covered (other dtypes, other layouts, empty)."""
    src, dst = _KIND_OF.get(a.dtype), _KIND_OF.get(dtype)
    if src is None or dst is None or (src == "F32") == (dst == "F32") or a.size == 0 or \
            not a.flags.c_contiguous:
        return None
    key = ("convert", a.dtype, dtype)
    f = _functions.get(key)
    if f is None:
        if _train_function("max_pool2d_fwd", np.dtype(np.float32)) is None:
            return None
        f = _functions[key] = _Launch(_train_module.get_function(f"convert<{src}, {dst}>"))
    import cupy as cp

    out = cp.ndarray(a.shape, dtype)
    grid, block = _elementwise_grid(a.size)
    f(grid, block, (a, out, np.int64(a.size)))
    return out


def max_pool2d(x, kernel_size, stride, padding, dilation, out_size):
    """(values, int64 indices) of 2-d max pooling of an (N, C, H, W) CuPy array, indices
    flat in each input plane, as PyTorch's; None where not covered."""
    if x.ndim != 4 or not covers(x):
        return None
    f = _train_function("max_pool2d_fwd", x.dtype)
    if f is None:
        return None
    import cupy as cp

    x = cp.ascontiguousarray(x)
    n, c, h, w = x.shape
    oh, ow = out_size
    y = cp.empty((n, c, oh, ow), x.dtype)
    idx = cp.empty((n, c, oh, ow), cp.int64)
    total = y.size
    if total:
        grid, block = _elementwise_grid(total)
        i32 = np.int32
        f(grid, block, (x, y, idx, np.int64(total), i32(h), i32(w), i32(oh), i32(ow),
                        i32(kernel_size[0]), i32(kernel_size[1]), i32(stride[0]),
                        i32(stride[1]), i32(padding[0]), i32(padding[1]), i32(dilation[0]),
                        i32(dilation[1])))
    return y, idx


def batch_norm_update_running(running_mean, running_var, mean, rstd, momentum, eps, count):
    """Update batch norm's running statistics in place from a training batch's ``mean`` and
    ``rstd`` (float32 CuPy arrays of C values), over ``count`` values per channel: one
    launch (NOTE [ Training-step CUDA kernels ]). Returns False, having changed nothing,
    unless every array is a contiguous float32 CuPy array of C values (running_var may be
    None)."""
    c = mean.size
    for a in (running_mean, running_var, mean, rstd):
        if a is None and a is not running_var:
            return False
        if a is not None and (a.dtype != np.float32 or a.size != c or
                              not a.flags.c_contiguous or not type(a).__module__.startswith(
                                  "cupy")):
            return False
    f = _train_function("bn_update_running")
    if f is None or c == 0:
        return f is not None
    grid, block = _per_channel(c)
    f(grid, block, (running_mean, _NULL if running_var is None else running_var, mean, rstd,
                    np.int64(c), np.float32(1 - momentum), np.float32(momentum),
                    np.float64(eps), np.float32(count / max(count - 1, 1))))
    return True


def covers(*arrays):
    """Whether these arrays (None allowed) are float32/float16/bfloat16 CuPy arrays of one
    dtype, each non-empty."""
    dt = None
    for a in arrays:
        if a is None:
            continue
        if a.dtype not in _KIND_OF or a.size == 0 or (dt is not None and a.dtype != dt):
            return False
        dt = a.dtype
    return dt is not None and _compiled()


def _threads(n):
    return int(min(1024, max(32, 1 << math.ceil(math.log2(max(n, 1)) - 2))))


def _rows(a, ndim):
    import cupy as cp

    n = math.prod(a.shape[a.ndim - ndim:])
    return cp.ascontiguousarray(a).reshape(-1, n), n


def softmax(a, dim, log=False):
    """Softmax (log-softmax) of a CuPy array along its last axis, or None where not covered."""
    if dim != a.ndim - 1 or not covers(a):
        return None
    import cupy as cp

    rows, n = _rows(a, 1)
    out = cp.empty_like(rows)
    _function("softmax_rows", a.dtype)((rows.shape[0],), (_threads(n),),
                                       (rows, out, np.int64(n), np.int32(log)))
    return out.reshape(a.shape)


def softmax_backward(g, y, dim, log=False):
    """The gradient of softmax (log-softmax) from its output ``y``, or None."""
    if dim != y.ndim - 1 or not covers(g, y):
        return None
    import cupy as cp

    gr, n = _rows(g, 1)
    yr, _ = _rows(y, 1)
    out = cp.empty_like(yr)
    _function("softmax_backward_rows", y.dtype)((yr.shape[0],), (_threads(n),),
                                                (gr, yr, out, np.int64(n), np.int32(log)))
    return out.reshape(y.shape)


def cross_entropy(rows, target, weight):
    """(probabilities, losses) of softmax and weighted NLL over (M, C) rows, or None; the
    losses are float32."""
    if rows.ndim != 2 or not covers(rows, weight):
        return None
    import cupy as cp

    rows = cp.ascontiguousarray(rows)
    m, n = rows.shape
    probs = cp.empty_like(rows)
    losses = cp.empty(m, cp.float32)
    _function("cross_entropy_rows", rows.dtype)((m,), (_threads(n),), (
        rows, cp.ascontiguousarray(target, cp.int64), cp.ascontiguousarray(weight), probs,
        losses, np.int64(n)))
    return probs, losses


def cross_entropy_backward(probs, target, scale):
    """``scale[:, None] * (probs - onehot(target))`` over (M, C) rows, or None."""
    if probs.ndim != 2 or not covers(probs, scale):
        return None
    import cupy as cp

    probs = cp.ascontiguousarray(probs)
    out = cp.empty_like(probs)
    grid, block = _elementwise_grid(probs.size)
    _function("cross_entropy_backward_rows", probs.dtype)(grid, block, (
        probs, cp.ascontiguousarray(target, cp.int64), cp.ascontiguousarray(scale), out,
        np.int64(probs.size), np.int64(probs.shape[1])))
    return out


def _flat_param(p, n):
    import cupy as cp

    return None if p is None else cp.ascontiguousarray(p).reshape(n)


def layer_norm(x, w, b, ndim, eps):
    """(y, mean, rstd) of layer norm over the last ``ndim`` axes, or None."""
    if not covers(x, w, b):
        return None
    import cupy as cp

    rows, n = _rows(x, ndim)
    m = rows.shape[0]
    y = cp.empty_like(rows)
    mean = cp.empty(m, cp.float32)
    rstd = cp.empty(m, cp.float32)
    wf, bf = _flat_param(w, n), _flat_param(b, n)
    _function("layer_norm_rows", x.dtype)((m,), (_threads(n),), (
        rows, wf if wf is not None else _NULL, bf if bf is not None else _NULL, y, mean, rstd,
        np.int64(n), np.float32(eps)))
    kept = x.shape[:x.ndim - ndim] + (1,) * ndim
    return y.reshape(x.shape), mean.reshape(kept), rstd.reshape(kept)


def layer_norm_backward(g, x, w, mean, rstd, ndim):
    """(gx, gw, gb) of layer norm, gw None when ``w`` is, or None where not covered."""
    if not covers(g, x, w):
        return None
    import cupy as cp

    rows, n = _rows(x, ndim)
    gr, _ = _rows(g, ndim)
    m = rows.shape[0]
    mu = cp.ascontiguousarray(mean, dtype=cp.float32).reshape(m)
    rs = cp.ascontiguousarray(rstd, dtype=cp.float32).reshape(m)
    wf = _flat_param(w, n)
    gx = cp.empty_like(rows)
    _function("layer_norm_backward_rows", x.dtype)((m,), (_threads(n),), (
        gr, rows, wf if wf is not None else _NULL, mu, rs, gx, np.int64(n)))
    per = max(1, min(m, 64))
    chunks = (m + per - 1) // per
    gw_part = cp.empty((chunks, n), cp.float32)
    gb_part = cp.empty((chunks, n), cp.float32)
    _function("layer_norm_param_grads", x.dtype)(((n + 255) // 256, chunks), (256,), (
        gr, rows, mu, rs, gw_part, gb_part, np.int64(m), np.int64(n), np.int64(per)))
    shape = x.shape[x.ndim - ndim:]
    gw = gw_part.sum(axis=0).astype(x.dtype).reshape(shape) if w is not None else \
        cp.zeros((0,), x.dtype)  # no weight: an empty gw (NOTE [ Portable array code ])
    gb = gb_part.sum(axis=0).astype(x.dtype).reshape(shape)
    return gx.reshape(x.shape), gw, gb


# -- batch norm ---------------------------------------------------------------------------------


def _planes(x):
    import cupy as cp

    x = cp.ascontiguousarray(x)
    return x, x.shape[0], x.shape[1], math.prod(x.shape[2:])


def _segments(c, count):
    """Segments per channel: enough blocks for the GPU, at least 4096 values each."""
    return int(max(1, min(max(1, 512 // max(c, 1)), count // 4096)))


def _elementwise_grid(total):
    return (int(min(65535 * 4, (total + 255) // 256)),), (256,)


def _f32(a, c):
    import cupy as cp

    return _NULL if a is None else cp.ascontiguousarray(a, dtype=cp.float32).reshape(c)


def _per_channel(c):
    return ((c + 127) // 128,), (128,)


def batch_norm(x, w, b, mean, var, training, eps):
    """(y, mean, rstd) of batch norm over (N, C, ...) channel planes, statistics float32
    (from the batch when ``training``, else from ``mean``/``var``), or None."""
    if x.ndim < 2 or not covers(x):
        return None
    import cupy as cp

    x, n, c, hw = _planes(x)
    count = n * hw
    if count == 0:
        return None
    # the per-channel float32 results in one allocation (each is a launch's worth of host
    # time otherwise); rstd and m are the op's outputs, a and shift its scratch
    stats = cp.ndarray((4, c), cp.float32)
    rstd, a, shift = stats[0], stats[1], stats[2]
    wf, bf = _f32(w, c), _f32(b, c)
    grid_c, block_c = _per_channel(c)
    if training:
        seg = _segments(c, count)
        part = cp.ndarray((c, seg), cp.float32)
        m = stats[3]
        sums = _function("bn_partial_sums", x.dtype)
        dims = (np.int64(n), np.int64(c), np.int64(hw))
        sums((c, seg), (512,), (x, _NULL, part) + dims + (np.int32(0),))
        _function("bn_finalize_mean", None)(grid_c, block_c, (
            part, m, np.int64(c), np.int32(seg), np.float32(1.0 / count)))
        sums((c, seg), (512,), (x, m, part) + dims + (np.int32(1),))
        _function("bn_finalize", None)(grid_c, block_c, (
            part, m, wf, bf, rstd, a, shift, np.int64(c), np.int32(seg),
            np.float32(1.0 / count), np.float32(eps)))
    else:
        m = _f32(mean, c)
        _function("bn_finalize_eval", None)(grid_c, block_c, (
            m, _f32(var, c), wf, bf, rstd, a, shift, np.int64(c), np.float32(eps)))
    y = cp.empty_like(x)
    grid, block = _elementwise_grid(x.size)
    _function("bn_apply", x.dtype)(grid, block, (
        x, a, shift, y, np.int64(x.size), np.int64(c), np.int64(hw)))
    return y, m, rstd


def batch_norm_backward(g, x, w, mean, rstd):
    """Training-mode batch norm gradients (gx, gw, gb) over channel planes, or None."""
    if x.ndim < 2 or not covers(g, x):
        return None
    import cupy as cp

    x, n, c, hw = _planes(x)
    g = cp.ascontiguousarray(g)
    count = n * hw
    if count == 0:
        return None
    m, r = _f32(mean, c), _f32(rstd, c)
    seg = _segments(c, count)
    parts = cp.ndarray((2, c, seg), cp.float32)
    pg, pgx = parts[0], parts[1]
    _function("bn_backward_partial_sums", x.dtype)((c, seg), (512,), (
        g, x, m, pg, pgx, np.int64(n), np.int64(c), np.int64(hw)))
    factors = cp.ndarray((3, c), cp.float32)
    kg, kx, kc = factors[0], factors[1], factors[2]
    gw, gb = cp.ndarray(c, cp.float32), cp.ndarray(c, cp.float32)  # owned: .grad keeps them
    grid_c, block_c = _per_channel(c)
    _function("bn_backward_finalize", None)(grid_c, block_c, (
        pg, pgx, r, _f32(w, c), kg, kx, kc, gw, gb, np.int64(c), np.int32(seg),
        np.float32(1.0 / count)))
    gx = cp.empty_like(x)
    grid, block = _elementwise_grid(x.size)
    _function("bn_backward_apply", x.dtype)(grid, block, (
        g, x, m, kg, kx, kc, gx, np.int64(x.size), np.int64(c), np.int64(hw)))
    pdt = x.dtype if w is None else w.dtype  # the parameters' gradients in their dtype
    # no weight: an empty gw, as a kernel returns arrays only (NOTE [ Portable array code ])
    gw = gw[:0] if w is None else gw
    return gx, gw.astype(pdt, copy=False), gb.astype(pdt, copy=False)


# -- activations --------------------------------------------------------------------------------


def _flat_call(name, dtype, arrays, outs):
    grid, block = _elementwise_grid(outs[0].size)
    _function(name, dtype)(grid, block, tuple(arrays) + tuple(outs) +
                           (np.int64(outs[0].size),))


def _c_order(a):
    """``a`` itself when it is in C order, else a C-order copy of the same shape (CuPy's
    ``ascontiguousarray``, like NumPy's, turns a 0-d array into a 1-d one)."""
    if a.flags.c_contiguous:
        return a
    import cupy as cp

    return cp.ascontiguousarray(a)


def _one_pass(kernel, x):
    """``kernel`` applied to each element of ``x`` into a new array, or None."""
    if not covers(x):
        return None
    import cupy as cp

    x = _c_order(x)
    y = cp.empty_like(x)
    _flat_call(kernel, x.dtype, (x,), (y,))
    return y


def _one_pass_backward(kernel, g, x):
    """``g`` times the derivative ``kernel`` computes at ``x``, or None (shapes must match)."""
    if g.shape != x.shape or not covers(g, x):
        return None
    import cupy as cp

    g, x = _c_order(g), _c_order(x)
    gx = cp.empty_like(x)
    _flat_call(kernel, x.dtype, (g, x), (gx,))
    return gx


def gelu_tanh(x):
    """GELU with the tanh approximation of a CuPy array, or None."""
    return _one_pass("gelu_tanh_fwd", x)


def gelu_tanh_backward(g, x):
    """``g * gelu_tanh'(x)``, or None (shapes must match)."""
    return _one_pass_backward("gelu_tanh_bwd", g, x)


def gelu(x):
    """(exact GELU of x, its derivative in float32), or None."""
    if not covers(x):
        return None
    import cupy as cp

    x = _c_order(x)
    y = cp.empty_like(x)
    der = cp.empty(x.shape, cp.float32)
    _flat_call("gelu_erf_fwd", x.dtype, (x,), (y, der))
    return y, der


def silu(x):
    """``x * sigmoid(x)`` of a CuPy array, or None."""
    return _one_pass("silu_fwd", x)


def relu(x):
    """``max(x, 0)`` of a CuPy array in one launch (NaN kept, -0.0 made +0.0 as torch's CUDA
    kernel does), or None."""
    return _one_pass("relu_fwd", x)


def silu_backward(g, x):
    """``g * silu'(x)``, or None (shapes must match)."""
    return _one_pass_backward("silu_bwd", g, x)


def threshold_backward(g, out, threshold):
    """relu's backward ``g * (out > threshold)`` in one pass, or None."""
    if g.shape != out.shape or not covers(g, out):
        return None
    import cupy as cp

    g, out = _c_order(g), _c_order(out)
    gx = cp.empty_like(g)
    grid, block = _elementwise_grid(g.size)
    _function("threshold_bwd", g.dtype)(grid, block, (g, out, gx, np.float32(threshold),
                                                       np.int64(g.size)))
    return gx
