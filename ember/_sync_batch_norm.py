"""The primitives synchronized batch norm is built from: per-process statistics, their
combination across processes, the element-wise normalization, and the two halves of its
backward pass (``torch.batch_norm_stats``, ``batch_norm_gather_stats_with_counts``, ...).

NOTE [ Batch-norm primitives ]
``SyncBatchNorm`` splits batch norm so that only per-channel vectors cross process
boundaries: each process computes ``(mean, invstd)`` of its own part of the batch
(``batch_norm_stats``; ``invstd = 1 / sqrt(biased var + eps)``), all of them are gathered and
merged into the statistics of the whole batch, weighted by each part's element count
(``batch_norm_gather_stats_with_counts``, which also moves the running statistics by
``momentum``, the running variance unbiased by the whole count), and every process
normalizes its own part (``batch_norm_elemt``). Backward: each process reduces its
``grad_out`` to two per-channel sums (``batch_norm_backward_reduce``), these are summed
across processes, and each process forms its input gradient from the global sums and the
global element count (``batch_norm_backward_elemt``).

Channels are dimension 1 of an input of shape ``(N, C, *)``; the statistics run over every
other dimension. Everything is composed of ember ops, so it runs on any device and is
differentiable. (PyTorch implements these for its GPU backends only; on CPU it raises
NotImplementedError except for ``batch_norm_update_stats``. ember gives the same results on
every device.)
"""

from __future__ import annotations

from ._core import dtype as _dt
from ._core.tensor import Tensor
from .autograd.grad_mode import no_grad

__all__ = [
    "batch_norm_backward_elemt", "batch_norm_backward_reduce", "batch_norm_elemt",
    "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts", "batch_norm_stats",
    "batch_norm_update_stats",
]


def _channel_dims(input: Tensor, op: str) -> tuple[int, ...]:
    if input.dim() < 2:
        raise IndexError(f"{op}: expected an input of shape (N, C, *) with at least 2 "
                         f"dimensions, but got {tuple(input.shape)}")
    return (0,) + tuple(range(2, input.dim()))


def _per_channel(v: Tensor, input: Tensor) -> Tensor:
    """A (C,) vector shaped to broadcast against an (N, C, *) input."""
    return v.reshape((1, -1) + (1,) * (input.dim() - 2))


def _stat_dtype(input: Tensor):
    # low-precision inputs keep their statistics in float32, as PyTorch's kernels accumulate
    return _dt.float32 if input.dtype in (_dt.float16, _dt.bfloat16) else input.dtype


def batch_norm_stats(input: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """The per-channel mean and inverse standard deviation of this process's batch.

    See NOTE [ Batch-norm primitives ].

    Args:
        input (Tensor): of shape ``(N, C, *)``.
        eps (float): added to the (biased) variance before the square root.

    Returns:
        (Tensor, Tensor): ``mean`` and ``invstd = 1 / sqrt(var + eps)``, each of shape
        ``(C,)`` (float32 for float16/bfloat16 inputs).

    Example::

        >>> x = ember.tensor([[1., 2.], [3., 6.]])
        >>> ember.batch_norm_stats(x, 0.0)
        (tensor([2., 4.]), tensor([1.0000, 0.5000]))
    """
    dims = _channel_dims(input, "batch_norm_stats")
    x = input.to(_stat_dtype(input))
    mean = x.mean(dims)
    var = x.var(dims, unbiased=False)
    return mean, (var + eps).rsqrt()


def batch_norm_elemt(input: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor,
                     invstd: Tensor, eps: float, *, out: Tensor | None = None) -> Tensor:
    """Normalize with given statistics: ``(input - mean) * invstd * weight + bias``.

    Args:
        input (Tensor): of shape ``(N, C, *)``.
        weight (Tensor, optional): ``(C,)`` scale; 1 if None.
        bias (Tensor, optional): ``(C,)`` shift; 0 if None.
        mean (Tensor): ``(C,)`` means.
        invstd (Tensor): ``(C,)`` inverse standard deviations.
        eps (float): unused (``invstd`` already includes it); kept for PyTorch's signature.
        out (Tensor, optional): where to write the result.

    Returns:
        Tensor: of ``input``'s shape and dtype.

    Example::

        >>> x = ember.tensor([[1., 2.], [3., 6.]])
        >>> mean, invstd = ember.batch_norm_stats(x, 0.0)
        >>> ember.batch_norm_elemt(x, None, None, mean, invstd, 0.0)
        tensor([[-1., -1.],
                [ 1.,  1.]])
    """
    _channel_dims(input, "batch_norm_elemt")
    y = (input - _per_channel(mean, input)) * _per_channel(invstd, input)
    if weight is not None:
        y = y * _per_channel(weight, input)
    if bias is not None:
        y = y + _per_channel(bias, input)
    y = y.to(input.dtype)
    if out is not None:
        return out.copy_(y)
    return y


def batch_norm_gather_stats_with_counts(input: Tensor, mean: Tensor, invstd: Tensor,
                                        running_mean: Tensor | None,
                                        running_var: Tensor | None, momentum: float,
                                        eps: float, counts: Tensor) -> tuple[Tensor, Tensor]:
    """Merge the statistics of several processes into those of the whole batch.

    Each row of ``mean``/``invstd`` is one process's :func:`batch_norm_stats`; ``counts``
    holds how many elements per channel each process saw (rows with count 0 are ignored).
    The running statistics, when given, move in place by ``momentum`` towards the merged
    mean and the merged *unbiased* variance.

    Args:
        input (Tensor): this process's input (only its dtype and device are used).
        mean (Tensor): ``(world, C)`` means.
        invstd (Tensor): ``(world, C)`` inverse standard deviations.
        running_mean (Tensor, optional): ``(C,)``, updated in place.
        running_var (Tensor, optional): ``(C,)``, updated in place.
        momentum (float): the weight of the new statistics in the running ones.
        eps (float): the epsilon each ``invstd`` was computed with.
        counts (Tensor): ``(world,)`` element counts per channel.

    Returns:
        (Tensor, Tensor): the merged ``mean`` and ``invstd``, each ``(C,)``.

    Example::

        >>> x = ember.tensor([[1.], [3.], [5.], [7.]])
        >>> m0, s0 = ember.batch_norm_stats(x[:2], 0.0)
        >>> m1, s1 = ember.batch_norm_stats(x[2:], 0.0)
        >>> mean, invstd = ember.batch_norm_gather_stats_with_counts(
        ...     x, ember.stack([m0, m1]), ember.stack([s0, s1]), None, None, 0.1, 0.0,
        ...     ember.tensor([2., 2.]))
        >>> mean, 1 / invstd**2
        (tensor([4.]), tensor([5.0000]))
    """
    dtype = mean.dtype
    n = counts.to(dtype).reshape(-1, 1)
    seen = n > 0  # a process with no elements may report any statistics: leave it out
    var = 1.0 / (invstd * invstd) - eps
    total = n.sum(0)
    merged_mean = (n * mean).where(seen, 0.0).sum(0) / total
    merged_var = (n * (var + (mean - merged_mean) ** 2)).where(seen, 0.0).sum(0) / total
    with no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(momentum * merged_mean.to(running_mean.dtype))
        if running_var is not None:
            unbiased = merged_var * total / (total - 1)
            running_var.mul_(1 - momentum).add_(momentum * unbiased.to(running_var.dtype))
    return merged_mean, (merged_var + eps).rsqrt()


def batch_norm_gather_stats(input: Tensor, mean: Tensor, invstd: Tensor,
                            running_mean: Tensor | None, running_var: Tensor | None,
                            momentum: float, eps: float, count: int) -> tuple[Tensor, Tensor]:
    """:func:`batch_norm_gather_stats_with_counts` with the same ``count`` for every process.

    Args:
        input, mean, invstd, running_mean, running_var, momentum, eps: as for
            :func:`batch_norm_gather_stats_with_counts`.
        count (int): the element count per channel of every process.

    Returns:
        (Tensor, Tensor): the merged ``mean`` and ``invstd``.

    Example::

        >>> m = ember.tensor([[1.], [3.]]); s = ember.tensor([[1.], [1.]])
        >>> ember.batch_norm_gather_stats(ember.ones(2, 1), m, s, None, None, 0.1, 0.0, 4)
        (tensor([2.]), tensor([0.7071]))
    """
    counts = mean.new_full((mean.shape[0],), float(count))
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                               momentum, eps, counts)


def batch_norm_update_stats(input: Tensor, running_mean: Tensor | None,
                            running_var: Tensor | None,
                            momentum: float) -> tuple[Tensor, Tensor]:
    """The per-channel mean and biased variance of ``input``, moving the running ones.

    Args:
        input (Tensor): of shape ``(N, C, *)``.
        running_mean (Tensor, optional): ``(C,)``, updated in place by ``momentum``.
        running_var (Tensor, optional): ``(C,)``, updated in place with the unbiased variance.
        momentum (float): the weight of the new statistics.

    Returns:
        (Tensor, Tensor): ``mean`` and biased ``var``, each ``(C,)`` in ``input``'s dtype.

    Example::

        >>> rm, rv = ember.zeros(2), ember.ones(2)
        >>> ember.batch_norm_update_stats(ember.tensor([[1., 2.], [3., 6.]]), rm, rv, 0.5)
        (tensor([2., 4.]), tensor([1., 4.]))
        >>> rm, rv
        (tensor([1., 2.]), tensor([1.5000, 4.5000]))
    """
    dims = _channel_dims(input, "batch_norm_update_stats")
    n = input.numel() // input.shape[1]
    mean = input.mean(dims)
    var = input.var(dims, unbiased=False)
    with no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(momentum * mean.to(running_mean.dtype))
        if running_var is not None:
            unbiased = var * (n / (n - 1)) if n > 1 else var * float("inf")
            running_var.mul_(1 - momentum).add_(momentum * unbiased.to(running_var.dtype))
    return mean, var


def batch_norm_backward_reduce(grad_out: Tensor, input: Tensor, mean: Tensor, invstd: Tensor,
                               weight: Tensor | None, input_g: bool, weight_g: bool,
                               bias_g: bool):
    """The per-channel sums batch norm's backward pass needs from this process.

    Args:
        grad_out (Tensor): the gradient of the output, of ``input``'s shape ``(N, C, *)``.
        input (Tensor): the forward input.
        mean (Tensor): ``(C,)`` means used in the forward pass.
        invstd (Tensor): ``(C,)`` inverse standard deviations used in the forward pass.
        weight (Tensor, optional): ``(C,)`` scale (only its dtype matters here).
        input_g (bool): compute ``sum_dy`` and ``sum_dy_xmu`` (for the input gradient).
        weight_g (bool): compute ``grad_weight``.
        bias_g (bool): compute ``grad_bias``.

    Returns:
        tuple: ``(sum_dy, sum_dy_xmu, grad_weight, grad_bias)``: ``sum(grad_out)``,
        ``sum(grad_out * (input - mean))``, ``sum_dy_xmu * invstd`` and ``sum_dy``, each
        ``(C,)``, or None where not asked for.

    Example::

        >>> x = ember.tensor([[1., 2.], [3., 6.]]); g = ember.ones(2, 2)
        >>> mean, invstd = ember.batch_norm_stats(x, 0.0)
        >>> ember.batch_norm_backward_reduce(g, x, mean, invstd, None, True, True, True)
        (tensor([2., 2.]), tensor([0., 0.]), tensor([0., 0.]), tensor([2., 2.]))
    """
    dims = _channel_dims(input, "batch_norm_backward_reduce")
    sum_dy = grad_out.sum(dims).to(mean.dtype)
    sum_dy_xmu = (grad_out * (input - _per_channel(mean, input))).sum(dims).to(mean.dtype)
    wdtype = weight.dtype if weight is not None else input.dtype
    grad_weight = (sum_dy_xmu * invstd).to(wdtype) if weight_g else None
    grad_bias = sum_dy.to(wdtype) if bias_g else None
    if not input_g:
        sum_dy = sum_dy_xmu = None
    return sum_dy, sum_dy_xmu, grad_weight, grad_bias


def batch_norm_backward_elemt(grad_out: Tensor, input: Tensor, mean: Tensor, invstd: Tensor,
                              weight: Tensor | None, sum_dy: Tensor, sum_dy_xmu: Tensor,
                              count: Tensor) -> Tensor:
    """The input gradient of batch norm from the sums of all processes.

    ``grad_input = (grad_out - sum_dy / n - (input - mean) * invstd**2 * sum_dy_xmu / n)
    * invstd * weight`` with ``n = count.sum()``, the element count per channel of the whole
    batch.

    Args:
        grad_out (Tensor): the gradient of the output, ``(N, C, *)``.
        input (Tensor): the forward input.
        mean (Tensor): ``(C,)`` global means.
        invstd (Tensor): ``(C,)`` global inverse standard deviations.
        weight (Tensor, optional): ``(C,)`` scale; 1 if None.
        sum_dy (Tensor): ``(C,)`` ``sum(grad_out)`` over all processes.
        sum_dy_xmu (Tensor): ``(C,)`` ``sum(grad_out * (input - mean))`` over all processes.
        count (Tensor): the element counts of the processes (summed).

    Returns:
        Tensor: the input gradient, of ``input``'s shape and dtype.

    Example::

        >>> x = ember.tensor([[1.], [3.]]); g = ember.tensor([[1.], [0.]])
        >>> mean, invstd = ember.batch_norm_stats(x, 0.0)
        >>> s = ember.batch_norm_backward_reduce(g, x, mean, invstd, None, True, False, False)
        >>> ember.batch_norm_backward_elemt(g, x, mean, invstd, None, s[0], s[1],
        ...                                 ember.tensor([2]))
        tensor([[0.],
                [0.]])
    """
    _channel_dims(input, "batch_norm_backward_elemt")
    n = count.to(mean.dtype).sum()
    xmu = input - _per_channel(mean, input)
    inv = _per_channel(invstd, input)
    grad = (grad_out - _per_channel(sum_dy / n, input)
            - xmu * inv * inv * _per_channel(sum_dy_xmu / n, input)) * inv
    if weight is not None:
        grad = grad * _per_channel(weight, input)
    return grad.to(input.dtype)


# -- SyncBatchNorm's forward and backward across processes ---------------------------------------
#
# NOTE [ Synchronized batch norm ]
# In training under a process group of more than one process, ``SyncBatchNorm`` normalizes
# each process's part of the batch with the statistics of the whole batch:
#
# - forward: this process's ``(mean, invstd, count)`` travel as one vector of 2C + 1 values
#   in one ``all_gather_into_tensor``; every process merges the rows by their counts
#   (``batch_norm_gather_stats_with_counts``, which also moves the running statistics, so
#   they agree on every process) and normalizes its own part;
# - backward: the two per-channel sums of ``batch_norm_backward_reduce`` travel as one
#   vector of 2C values in one ``all_reduce``; the input gradient follows from the global
#   sums and counts. The weight and bias gradients stay local: DistributedDataParallel
#   averages them with the other parameters' gradients.
#
# A process with an empty part still takes part in both collectives (with zeros and a count
# of 0, left out of the merge), or the others would wait for it. Nothing reads a device value
# on the host: the steps of a GPU run ahead of its kernels as with plain batch norm.


def _sync_function():
    fn = _cache.get("function")
    if fn is not None:
        return fn
    from . import distributed as dist
    from ._ops.creation import zeros
    from ._ops.join import cat
    from .autograd.function import Function

    class SyncBatchNorm(Function):  # (its nodes: SyncBatchNormBackward, as in torch)
        @staticmethod
        def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum,
                    process_group, world_size):
            c = input.shape[1]
            size = input.numel() // c if c else 0
            if size == 1 and world_size < 2:
                raise ValueError("Expected more than 1 value per channel when training, got "
                                 f"input size {input.shape}")
            dtype = _stat_dtype(input)
            if input.numel() > 0:
                mean, invstd = batch_norm_stats(input, eps)
                count = mean.new_full((1,), float(size))
                combined = cat([mean, invstd, count])
            else:  # (takes part with a count of 0)
                combined = zeros(2 * c + 1, dtype=dtype, device=input.device)
            gathered = combined.new_empty((world_size * combined.numel(),))
            dist.all_gather_single(gathered, combined, process_group)
            rows = gathered.view(world_size, 2 * c + 1)
            mean_all, invstd_all, counts = rows[:, :c], rows[:, c:2 * c], rows[:, 2 * c]
            mean, invstd = batch_norm_gather_stats_with_counts(
                input, mean_all, invstd_all, running_mean, running_var, momentum, eps, counts)
            ctx.save_for_backward(input, weight, mean, invstd, counts)
            ctx.process_group = process_group
            if input.numel() > 0:
                return batch_norm_elemt(input, weight, bias, mean, invstd, eps)
            return input.new_empty(input.shape)

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, mean, invstd, counts = ctx.saved_tensors
            need_input, need_weight, need_bias = ctx.needs_input_grad[:3]
            grad_input = grad_weight = grad_bias = None
            c = input.shape[1]
            if input.numel() > 0:
                sum_dy, sum_dy_xmu, grad_weight, grad_bias = batch_norm_backward_reduce(
                    grad_output, input, mean, invstd, weight, need_input, need_weight,
                    need_bias)
                if need_input:
                    combined = cat([sum_dy, sum_dy_xmu])
                    dist.all_reduce(combined, dist.ReduceOp.SUM, ctx.process_group)
                    grad_input = batch_norm_backward_elemt(
                        grad_output, input, mean, invstd, weight, combined[:c], combined[c:],
                        counts)
            elif need_input:  # nothing of ours to add, but the others wait for the sums
                dist.all_reduce(zeros(2 * c, dtype=mean.dtype, device=input.device),
                                dist.ReduceOp.SUM, ctx.process_group)
            if weight is None or not need_weight:
                grad_weight = None
            if weight is None or not need_bias:
                grad_bias = None
            return grad_input, grad_weight, grad_bias, None, None, None, None, None, None

    _cache["function"] = SyncBatchNorm
    return SyncBatchNorm


_cache: dict = {}


def sync_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                    running_mean: Tensor | None, running_var: Tensor | None, eps: float,
                    momentum: float, process_group, world_size: int) -> Tensor:
    """Batch norm of this process's part of a batch with the whole batch's statistics,
    gathered from every process of ``process_group`` (NOTE [ Synchronized batch norm ]);
    differentiable, its backward sums the per-channel reductions across the group.

    Args:
        input (Tensor): this process's ``(N, C, *)`` part of the batch.
        weight, bias (Tensor, optional): ``(C,)`` affine parameters.
        running_mean, running_var (Tensor, optional): ``(C,)``, moved in place by
            ``momentum`` towards the whole batch's mean and unbiased variance.
        eps (float): added to the variance. momentum (float): the new statistics' weight.
        process_group: the group (None: the default one). world_size (int): its size.

    Returns:
        Tensor: the normalized part, of ``input``'s shape and dtype.

    Example::

        >>> import ember.distributed as dist  # doctest: +SKIP
        >>> y = sync_batch_norm(x, w, b, rm, rv, 1e-5, 0.1, None, dist.get_world_size())
        ... # doctest: +SKIP
    """
    return _sync_function().apply(input, weight, bias, running_mean, running_var, eps,
                                  momentum, process_group, world_size)
