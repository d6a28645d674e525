"""Collectives with gradients (``torch.distributed.nn.functional``).

Each is an autograd Function over the process group's collective: the backward of a
collective is its adjoint collective -- ``all_gather``'s is a sum reduce-scatter of the
outputs' gradients, ``broadcast``'s a sum reduce to the source, ``all_reduce``'s (sum) an
all-reduce of the gradient, ``scatter``'s a gather, ``all_to_all``'s the all-to-all the
other way. Contrastive losses (CLIP-style) gather features from every rank with
``all_gather`` and need the gradient to reach each rank's own features.

Example::

    >>> import ember
    >>> import ember.distributed.nn.functional as dfn
    >>> # inside an initialised process group:
    >>> # feats = ember.cat(dfn.all_gather(local_feats))
"""

from __future__ import annotations

from ... import distributed as dist
from ...autograd import Function

__all__ = ["all_gather", "all_reduce", "all_to_all", "all_to_all_single", "broadcast", "gather",
           "reduce", "reduce_scatter", "scatter"]


def _group(group):
    return dist.group.WORLD if group is None else group


def _rank(group):
    return dist.get_rank(group=group)


class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src, ctx.group = src, group
        ctx.rank = _rank(group)
        tensor = tensor.clone()
        dist.broadcast(tensor, src, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad):
        g = _Reduce.apply(ctx.src, dist.ReduceOp.SUM, ctx.group, grad)
        if ctx.src != ctx.rank:
            g = g * 0
        return (None, None, g)


class _Gather(Function):
    @staticmethod
    def forward(ctx, dst, group, tensor):
        ctx.dst, ctx.group = dst, group
        n = dist.get_world_size(group=group)
        out = [tensor.new_zeros(tensor.shape) for _ in range(n)]
        tensor = tensor.contiguous()
        if _rank(group) == dst:
            dist.gather(tensor, out, dst, group=group)
        else:
            dist.gather(tensor, None, dst, group=group)
        return tuple(out)

    @staticmethod
    def backward(ctx, *grads):
        return (None, None, _Scatter.apply(ctx.dst, ctx.group, *grads))


class _Scatter(Function):
    @staticmethod
    def forward(ctx, src, group, *tensors):
        ctx.src, ctx.group = src, group
        out = tensors[0].new_empty(tensors[0].shape)
        if _rank(group) == src:
            dist.scatter(out, [t.contiguous() for t in tensors], src, group=group)
        else:
            dist.scatter(out, None, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad)


class _Reduce(Function):
    @staticmethod
    def forward(ctx, src, op, group, tensor):
        ctx.src, ctx.group = src, group
        tensor = tensor.clone()
        dist.reduce(tensor, src, op=op, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad):
        return (None, None, None, _Broadcast.apply(ctx.src, ctx.group, grad))


class _ReduceScatter(Function):
    @staticmethod
    def forward(ctx, op, group, tensor, *inputs):
        ctx.group = group
        tensor = tensor.contiguous()
        dist.reduce_scatter(tensor, [t.contiguous() for t in inputs], op=op, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad):
        return (None, None, None) + _AllGather.apply(ctx.group, grad)


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        n = dist.get_world_size(group=group)
        out = [tensor.new_empty(tensor.shape) for _ in range(n)]
        dist.all_gather(out, tensor.contiguous(), group=group)
        return tuple(out)

    @staticmethod
    def backward(ctx, *grads):
        like = next(g for g in grads if g is not None)
        grads = [like.new_zeros(like.shape) if g is None else g for g in grads]
        # a sum reduce-scatter of every output's gradient: this rank's input gradient
        gx = like.new_empty(like.shape)
        dist.reduce_scatter(gx, [g.contiguous() for g in grads], op=dist.ReduceOp.SUM,
                            group=ctx.group)
        return (None, gx)


class _AlltoAll(Function):
    @staticmethod
    def forward(ctx, group, out_tensor_list, *tensors):
        ctx.group = group
        ctx.input_tensor_size_list = [t.shape for t in tensors]
        out = [t.new_empty(t.shape) for t in out_tensor_list]
        dist.all_to_all(out, [t.contiguous() for t in tensors], group=group)
        return tuple(out)

    @staticmethod
    def backward(ctx, *grads):
        like = next(g for g in grads if g is not None)
        tensor_list = [like.new_empty(size) for size in ctx.input_tensor_size_list]
        grads = [g if g is not None else like.new_zeros(like.shape) for g in grads]
        return (None, None) + _AlltoAll.apply(ctx.group, tensor_list, *grads)


class _AlltoAllSingle(Function):
    @staticmethod
    def forward(ctx, group, output, output_split_sizes, input_split_sizes, input):
        ctx.group = group
        ctx.input_size = input.shape
        ctx.output_split_sizes = input_split_sizes
        ctx.input_split_sizes = output_split_sizes
        output = output.new_empty(output.shape)
        dist.all_to_all_single(output, input.contiguous(), output_split_sizes=output_split_sizes,
                               input_split_sizes=input_split_sizes, group=group)
        return output

    @staticmethod
    def backward(ctx, grad):
        tensor = grad.new_empty(ctx.input_size)
        return (None, None, None, None, _AlltoAllSingle.apply(
            ctx.group, tensor, ctx.output_split_sizes, ctx.input_split_sizes,
            grad.contiguous()))


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.group, ctx.op = group, op
        tensor = tensor.clone()
        dist.all_reduce(tensor, op=op, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad):
        if ctx.op not in (dist.ReduceOp.SUM, dist.ReduceOp.AVG):
            raise RuntimeError(f"all_reduce(): the gradient of {ctx.op} is not defined; "
                               "only SUM and AVG reductions are differentiable")
        return (None, None, _AllReduce.apply(ctx.op, ctx.group, grad))


def broadcast(tensor, src, group=None):
    """``tensor`` of rank ``src`` on every rank; the gradient sums back to ``src``.

    Args:
        tensor (Tensor): the value (used on ``src``; others give a tensor of its shape).
        src (int): the source rank.
        group (ProcessGroup, optional): the group. Default: the world.

    Returns:
        Tensor: the broadcast value.

    Example::

        >>> # y = ember.distributed.nn.functional.broadcast(x, src=0)
    """
    return _Broadcast.apply(src, _group(group), tensor)


def gather(tensor, dst=0, group=None):
    """Every rank's ``tensor``, collected on ``dst`` (as a tuple; other ranks get zeros);
    the gradient scatters back.

    Args:
        tensor (Tensor): this rank's value.
        dst (int): the destination rank. Default: 0.
        group (ProcessGroup, optional): the group. Default: the world.

    Returns:
        tuple of Tensors, one per rank.

    Example::

        >>> # parts = ember.distributed.nn.functional.gather(x, dst=0)
    """
    return _Gather.apply(dst, _group(group), tensor)


def scatter(tensors, src=0, group=None):
    """Rank ``i`` receives ``tensors[i]`` of rank ``src``; the gradient gathers back.

    Args:
        tensors (list of Tensors): one per rank (only ``src``'s values are sent).
        src (int): the source rank. Default: 0.
        group (ProcessGroup, optional): the group. Default: the world.

    Returns:
        Tensor: this rank's piece.

    Example::

        >>> # piece = ember.distributed.nn.functional.scatter(parts, src=0)
    """
    return _Scatter.apply(src, _group(group), *tensors)


def reduce(tensor, dst, op=dist.ReduceOp.SUM, group=None):
    """The reduction of every rank's ``tensor`` on ``dst``; the gradient broadcasts back.

    Args:
        tensor (Tensor): this rank's value.
        dst (int): the destination rank.
        op (ReduceOp): the reduction. Default: SUM.
        group (ProcessGroup, optional): the group. Default: the world.

    Returns:
        Tensor: the reduction on ``dst`` (other ranks: their own partial value).

    Example::

        >>> # total = ember.distributed.nn.functional.reduce(x, dst=0)
    """
    return _Reduce.apply(dst, op, _group(group), tensor)


def reduce_scatter(output, input_list, op=dist.ReduceOp.SUM, group=None):
    """Rank ``i`` receives the reduction over ranks of ``input_list[i]``; the gradient
    all-gathers back.

    Args:
        output (Tensor): the shape of this rank's result.
        input_list (list of Tensors): one per rank.
        op (ReduceOp): the reduction. Default: SUM.
        group (ProcessGroup, optional): the group. Default: the world.

    Returns:
        Tensor: this rank's reduced piece.

    Example::

        >>> # piece = ember.distributed.nn.functional.reduce_scatter(out, parts)
    """
    return _ReduceScatter.apply(op, _group(group), output, *input_list)


def all_gather(tensor, group=None):
    """Every rank's ``tensor``, on every rank; each rank's input gradient is the sum over
    ranks of the gradient its piece received.

    Args:
        tensor (Tensor): this rank's value.
        group (ProcessGroup, optional): the group. Default: the world.

    Returns:
        tuple of Tensors, one per rank.

    Example::

        >>> # feats = ember.cat(ember.distributed.nn.functional.all_gather(local))
    """
    return _AllGather.apply(_group(group), tensor)


def all_to_all(output_tensor_list, input_tensor_list, group=None):
    """Rank ``i`` sends ``input_tensor_list[j]`` to rank ``j``; the gradient goes the other
    way.

    Args:
        output_tensor_list (list of Tensors): the shapes of the pieces received.
        input_tensor_list (list of Tensors): the pieces sent, one per rank.
        group (ProcessGroup, optional): the group. Default: the world.

    Returns:
        tuple of Tensors: the pieces received.

    Example::

        >>> # got = ember.distributed.nn.functional.all_to_all(outs, ins)
    """
    return _AlltoAll.apply(_group(group), output_tensor_list, *input_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None):
    """:func:`all_to_all` of one tensor cut along its first dimension.

    Args:
        output (Tensor): the shape of the result.
        input (Tensor): the pieces to send, along dim 0.
        output_split_sizes (list of ints, optional): rows received from each rank.
        input_split_sizes (list of ints, optional): rows sent to each rank.
        group (ProcessGroup, optional): the group. Default: the world.

    Returns:
        Tensor: the rows received.

    Example::

        >>> # got = ember.distributed.nn.functional.all_to_all_single(out, x)
    """
    return _AlltoAllSingle.apply(_group(group), output, output_split_sizes, input_split_sizes,
                                 input)


def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None):
    """The reduction of every rank's ``tensor``, on every rank; the gradient (SUM or AVG)
    is all-reduced the same way.

    Args:
        tensor (Tensor): this rank's value.
        op (ReduceOp): the reduction. Default: SUM.
        group (ProcessGroup, optional): the group. Default: the world.

    Returns:
        Tensor: the reduction.

    Example::

        >>> # total = ember.distributed.nn.functional.all_reduce(x)
    """
    return _AllReduce.apply(op, _group(group), tensor)
