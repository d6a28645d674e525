"""Adaptive softmax (Grave et al., 2017): a cheap softmax over a large, skewed vocabulary."""

from __future__ import annotations

from collections import namedtuple

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities of targets under an adaptive softmax, and their mean NLL.

    Classes are split by ``cutoffs`` into a frequent shortlist and rarer clusters. The head
    scores the shortlist plus one entry per cluster; each cluster has a two-layer tail
    whose hidden size shrinks by ``div_value`` per cluster. ``log p(class) = log p(cluster
    | head) + log p(class | cluster)``, so a rare class costs one small tail, not the full
    vocabulary. Sort classes by frequency, most frequent first.

    Args:
        in_features (int): features of each input.
        n_classes (int): number of classes.
        cutoffs (sequence of int): increasing cluster boundaries in ``[1, n_classes - 1]``.
        div_value (float): hidden-size divisor between clusters. Default: 4.0.
        head_bias (bool): give the head a bias. Default: False.
        device, dtype: where and how to create the parameters.

    Shape:
        ``forward(input, target)``: input ``(N, in_features)`` or ``(in_features,)``, target
        ``(N,)`` or ``()``; returns ``(output, loss)`` with output the target log-probs
        shaped like target and loss a scalar.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> asm = ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 8])
        >>> out, loss = asm(ember.randn(5, 8), ember.tensor([0, 3, 5, 9, 7]))
        >>> tuple(out.shape), loss.dim()
        ((5,), 0)
    """

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        factory = dict(device=device, dtype=dtype)
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, size, bias=False, **factory)))

    def reset_parameters(self):
        """Re-initialise the head and every tail layer.

        Returns:
            None.

        Example:
            >>> import ember
            >>> ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4]).reset_parameters()
        """
        self.head.reset_parameters()
        for tail in self.tail:
            for layer in tail:
                layer.reset_parameters()

    def forward(self, input_, target_):
        from ... import zeros_like

        if target_.dim() == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.dim() != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)

        in_range = (target >= 0) & (target < self.n_classes)
        if not bool(in_range.all()):
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{target.min().item()}, {target.max().item()}] were found. ")
        # the head entry each row is scored by: its class, or its cluster's slot
        head_index = target.clone()
        tail_logprob = zeros_like(input[:, 0])
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            in_cluster = (target >= low) & (target < high)
            rows = in_cluster.nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            head_index = head_index.masked_fill(in_cluster, self.shortlist_size + i)
            logprob = F.log_softmax(self.tail[i](input.index_select(0, rows)), dim=1)
            local = logprob.gather(1, (target.index_select(0, rows) - low).unsqueeze(1))
            tail_logprob = tail_logprob.index_add(0, rows, local.squeeze(1))
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = tail_logprob + head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input, head_output):
        from ... import cat

        head_logprob = F.log_softmax(head_output, dim=1)
        pieces = [head_logprob[:, :self.shortlist_size]]
        for i, tail in enumerate(self.tail):
            cluster = F.log_softmax(tail(input), dim=1)
            pieces.append(cluster + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(pieces, dim=1)

    def log_prob(self, input):
        """Log-probabilities of every class.

        Args:
            input (Tensor): ``(N, in_features)`` or ``(in_features,)``.

        Returns:
            Tensor ``(N, n_classes)`` (or ``(n_classes,)``).

        Example:
            >>> import ember
            >>> asm = ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])
            >>> round(asm.log_prob(ember.randn(2, 8)).exp().sum(1)[0].item(), 4)
            1.0
        """
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each input (cheaper than ``log_prob(input).argmax(1)``
        when the head's favourite is a shortlist class).

        Args:
            input (Tensor): ``(N, in_features)`` or ``(in_features,)``.

        Returns:
            Tensor of class indices, ``(N,)`` (or a scalar).

        Example:
            >>> import ember
            >>> asm = ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])
            >>> tuple(asm.predict(ember.randn(3, 8)).shape)
            (3,)
        """
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        head_output = self.head(x)
        output = head_output.argmax(dim=1)
        outside = output >= self.shortlist_size
        if bool(outside.any()):
            rows = outside.nonzero().squeeze(1)
            full = self._get_full_log_prob(x.index_select(0, rows),
                                           head_output.index_select(0, rows))
            output = output.index_copy(0, rows, full.argmax(dim=1))
        return output if batched else output.squeeze(0)
