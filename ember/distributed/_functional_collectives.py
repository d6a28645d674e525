"""Collectives that return their result (``torch.distributed._functional_collectives``).

Each function here leaves its input alone and returns a new tensor, as PyTorch's functional
collectives do. PyTorch may hand back a tensor whose communication is still running, to be
finished by ``wait_tensor``; ember's collectives have finished when they return, so
``wait_tensor`` gives its argument back.

``group`` is a ``ProcessGroup``, ``None`` (the default group), a one-dimensional
``DeviceMesh``, or a ``(mesh, mesh_dim)`` pair.

Example::

    >>> from ember.distributed import _functional_collectives as funcol
    >>> t = ember.ones(2)
    >>> funcol.wait_tensor(t) is t
    True
"""

from __future__ import annotations

import ember

from . import _collectives as _c
from ._group import get_rank, get_world_size
from ._collectives import ReduceOp

__all__ = ["all_gather_tensor", "all_reduce", "all_to_all_single", "all_to_all_single_autograd",
           "broadcast", "reduce_scatter_tensor", "wait_tensor"]


def _pg(group):
    """The process group that a functional collective's ``group`` names."""
    if isinstance(group, tuple) and len(group) == 2:
        mesh, dim = group
        return mesh.get_group(dim)
    if hasattr(group, "get_group"):  # a DeviceMesh
        return group.get_group()
    if isinstance(group, (list, str)):
        raise NotImplementedError(
            "ember's functional collectives take a ProcessGroup, a DeviceMesh or (mesh, dim) "
            "as `group`, not rank lists or group names")
    return group


def _op(reduce_op):
    """A ``ReduceOp`` from the name PyTorch's functional collectives take ("sum", "avg"...)."""
    if isinstance(reduce_op, ReduceOp):
        return reduce_op
    return getattr(ReduceOp, str(reduce_op).upper())


def wait_tensor(tensor):
    """Wait for a functional collective's result (ember's results are always ready).

    Args:
        tensor (Tensor): a functional collective's result.

    Returns:
        Tensor: ``tensor`` itself.

    Example::

        >>> t = ember.zeros(3)
        >>> wait_tensor(t) is t
        True
    """
    return tensor


def all_reduce(self, reduceOp, group, tag=""):
    """The reduction of ``self`` over the ranks of ``group``, as a new tensor.

    Args:
        self (Tensor): this rank's term.
        reduceOp (str or ReduceOp): "sum", "avg", "product", "min", "max"...
        group: the ranks (see the module's docstring).
        tag (str): ignored (PyTorch's group tag).

    Returns:
        Tensor: the reduction, the same on every rank.

    Example::

        >>> all_reduce(ember.ones(2), "sum", None)  # doctest: +SKIP
        tensor([2., 2.])
    """
    out = self.detach().clone()
    _c.all_reduce(out, op=_op(reduceOp), group=_pg(group))
    return out


def all_gather_tensor(self, gather_dim, group, tag=""):
    """The ranks' tensors joined along ``gather_dim``, in rank order.

    Args:
        self (Tensor): this rank's piece (the same shape on every rank).
        gather_dim (int): the dimension to join along.
        group: the ranks (see the module's docstring).
        tag (str): ignored.

    Returns:
        Tensor: the joined tensor.

    Example::

        >>> all_gather_tensor(ember.ones(2), 0, None).shape  # doctest: +SKIP
        torch.Size([4])
    """
    pg = _pg(group)
    pieces = [ember.empty_like(self) for _ in range(get_world_size(pg))]
    _c.all_gather(pieces, self.detach().contiguous(), group=pg)
    return ember.cat(pieces, dim=gather_dim)


def reduce_scatter_tensor(self, reduceOp, scatter_dim, group, tag=""):
    """This rank's piece (cut along ``scatter_dim``) of the reduction over ``group``.

    Args:
        self (Tensor): this rank's term of the whole.
        reduceOp (str or ReduceOp): the reduction.
        scatter_dim (int): the dimension cut into one piece per rank.
        group: the ranks (see the module's docstring).
        tag (str): ignored.

    Returns:
        Tensor: this rank's piece of the reduction.

    Example::

        >>> reduce_scatter_tensor(ember.ones(4), "sum", 0, None)  # doctest: +SKIP
        tensor([2., 2.])
    """
    pg = _pg(group)
    pieces = [p.contiguous() for p in
              self.detach().chunk(get_world_size(pg), dim=scatter_dim)]
    out = ember.empty_like(pieces[get_rank(pg)])
    _c.reduce_scatter(out, pieces, op=_op(reduceOp), group=pg)
    return out


def all_to_all_single(self, output_split_sizes, input_split_sizes, group, tag=""):
    """Rows of ``self`` sent to the ranks, and the rows they send back, joined in rank order.

    Args:
        self (Tensor): the rows to send, cut along dimension 0 by ``input_split_sizes``.
        output_split_sizes (list of int or None): rows received from each rank (even when None).
        input_split_sizes (list of int or None): rows sent to each rank (even when None).
        group: the ranks (see the module's docstring).
        tag (str): ignored.

    Returns:
        Tensor: the received rows.

    Example::

        >>> all_to_all_single(ember.arange(2.0), None, None, None)  # doctest: +SKIP
        tensor([0., 0.])
    """
    rows = sum(output_split_sizes) if output_split_sizes is not None else self.shape[0]
    out = self.new_empty((rows,) + tuple(self.shape[1:]))
    _c.all_to_all_single(out, self.detach().contiguous(), output_split_sizes,
                         input_split_sizes, group=_pg(group))
    return out


class _AllToAllSingle(ember.autograd.Function):
    """``all_to_all_single`` with a gradient: the gradient rows travel back the same way."""

    @staticmethod
    def forward(ctx, x, output_split_sizes, input_split_sizes, group):
        ctx.sizes = (output_split_sizes, input_split_sizes)
        ctx.group = group
        return all_to_all_single(x, output_split_sizes, input_split_sizes, group)

    @staticmethod
    def backward(ctx, grad):
        out_sizes, in_sizes = ctx.sizes
        return (all_to_all_single(grad.contiguous(), in_sizes, out_sizes, ctx.group),
                None, None, None)


def all_to_all_single_autograd(self, output_split_sizes, input_split_sizes, group, tag=""):
    """``all_to_all_single`` that autograd differentiates (gradients return to their senders).

    Args:
        self (Tensor): the rows to send.
        output_split_sizes (list of int or None): rows received from each rank.
        input_split_sizes (list of int or None): rows sent to each rank.
        group: the ranks (see the module's docstring).
        tag (str): ignored.

    Returns:
        Tensor: the received rows, in the autograd graph.

    Example::

        >>> x = ember.ones(2, requires_grad=True)
        >>> all_to_all_single_autograd(x, None, None, None).sum().backward()  # doctest: +SKIP
    """
    return _AllToAllSingle.apply(self, output_split_sizes, input_split_sizes, group)


def broadcast(self, src, group, tag=""):
    """Rank ``src``'s tensor, on every rank of ``group``, as a new tensor.

    Args:
        self (Tensor): the tensor (its value matters on ``src`` only).
        src (int): the global rank that sends.
        group: the ranks (see the module's docstring).
        tag (str): ignored.

    Returns:
        Tensor: a copy of ``src``'s tensor.

    Example::

        >>> broadcast(ember.ones(2), 0, None)  # doctest: +SKIP
        tensor([1., 1.])
    """
    out = self.detach().clone()
    _c.broadcast(out, src=src, group=_pg(group))
    return out
