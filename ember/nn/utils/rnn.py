"""Variable-length sequences: PackedSequence, pack/pad helpers."""

from __future__ import annotations

from collections import namedtuple

import numpy as np



_PackedBase = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices",
                                            "unsorted_indices"])


class PackedSequence(_PackedBase):
    """A batch of variable-length sequences packed time step by time step, as the RNN
    modules accept it: ``data`` holds the batch's elements at step 0, then step 1..., and
    ``batch_sizes[t]`` says how many sequences are still running at step t.

    Args:
        data (Tensor): the packed elements, ``(sum of lengths, *)``.
        batch_sizes (Tensor): int64, one count per time step.
        sorted_indices (Tensor, optional): the order the sequences were packed in (longest
            first).
        unsorted_indices (Tensor, optional): its inverse permutation.

    Returns:
        A named tuple ``(data, batch_sizes, sorted_indices, unsorted_indices)``.

    Example:
        >>> import ember
        >>> packed = pack_sequence([ember.ones(3), ember.ones(2)])
        >>> packed.batch_sizes
        tensor([2, 2, 1])
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=_ember().float64)

    def float(self):
        return self.to(dtype=_ember().float32)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _ember():
    import ember

    return ember


def _invert_permutation(perm):
    if perm is None:
        return None
    ember = _ember()
    out = ember.empty_like(perm)
    out[perm] = ember.arange(perm.numel(), device=perm.device)
    return out


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch of variable-length sequences for an RNN.

    Args:
        input (Tensor): ``(T, B, *)``, or ``(B, T, *)`` with ``batch_first``.
        lengths (Tensor or list of int): each sequence's length (on the CPU).
        batch_first (bool): the batch dimension comes first. Default: False.
        enforce_sorted (bool): require lengths in decreasing order; with False the batch is
            sorted here and the order restored on unpacking. Default: True.

    Returns:
        PackedSequence.

    Example:
        >>> import ember
        >>> packed = pack_padded_sequence(ember.zeros(2, 4, 1), [4, 2], batch_first=True)
        >>> packed.data.shape
        ember.Size([6, 1])
    """
    ember = _ember()
    lengths = ember.as_tensor(lengths, dtype=ember.int64).cpu() if not isinstance(
        lengths, ember.Tensor) else lengths.to("cpu", ember.int64)
    if enforce_sorted:
        if lengths.numel() > 1 and bool((lengths[:-1] < lengths[1:]).any()):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability.")
        sorted_indices = None
    else:
        lengths, sorted_indices = ember.sort(lengths, descending=True)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    ln = lengths.tolist()
    if any(v <= 0 for v in ln):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if ln and ln[0] > input.shape[0]:
        raise RuntimeError(
            f"Expected sequence length to be larger than or equal to {ln[0]}, got "
            f"{input.shape[0]}")
    max_len = ln[0] if ln else 0
    batch_sizes = [sum(1 for v in ln if v > t) for t in range(max_len)]
    data = ember.cat([input[t, :b] for t, b in enumerate(batch_sizes)]) if batch_sizes else \
        input[:0].reshape((0,) + tuple(input.shape[2:]))
    return PackedSequence(data, ember.tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Unpack a PackedSequence into a padded batch and the lengths.

    Args:
        sequence (PackedSequence): the packed batch.
        batch_first (bool): return ``(B, T, *)`` instead of ``(T, B, *)``. Default: False.
        padding_value (float): the value of the padding. Default: 0.
        total_length (int, optional): pad to this many steps (at least the longest).

    Returns:
        tuple: ``(padded, lengths)``, lengths an int64 tensor in the original batch order.

    Example:
        >>> import ember
        >>> padded, lengths = pad_packed_sequence(pack_sequence([ember.ones(3), ember.ones(1)]))
        >>> tuple(padded.shape), lengths
        ((3, 2), tensor([3, 1]))
    """
    ember = _ember()
    data, batch_sizes = sequence.data, sequence.batch_sizes.tolist()
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_len}")
        max_len = total_length
    b = batch_sizes[0] if batch_sizes else 0
    steps = []
    offset = 0
    for t in range(max_len):
        n = batch_sizes[t] if t < len(batch_sizes) else 0
        rows = data[offset:offset + n]
        offset += n
        if n < b:
            pad = ember.full((b - n,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype)
            rows = ember.cat([rows, pad])
        steps.append(rows)
    out = ember.stack(steps) if steps else data.new_zeros((0, b) + tuple(data.shape[1:]))
    lengths = np.zeros(b, dtype=np.int64)
    for n in batch_sizes:
        lengths[:n] += 1
    lengths = ember.from_numpy(lengths)
    # NOTE [ Padded layout ]: PyTorch transposes to batch-first before restoring the
    # original order, so an unsorted batch comes back contiguous in (B, T, *) and a sorted
    # one as a transposed view. Programs see the difference: the strides decide the order
    # in which ``empty_like(...).bernoulli_`` (dropout) draws its mask.
    if batch_first:
        out = out.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        out = out.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices]
    return out, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack variable-length tensors into one, padding the shorter ones.

    Args:
        sequences (list of Tensor): each ``(L_i, *)``.
        batch_first (bool): return ``(B, T, *)`` instead of ``(T, B, *)``. Default: False.
        padding_value (float): the value of the padding. Default: 0.
        padding_side (str): ``"right"`` or ``"left"``. Default: ``"right"``.

    Returns:
        Tensor: the padded batch.

    Example:
        >>> import ember
        >>> pad_sequence([ember.ones(2), ember.ones(1)], batch_first=True)
        tensor([[1., 1.],
                [1., 0.]])
    """
    ember = _ember()
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, ember.Tensor):
        sequences = sequences.unbind(0)
    max_len = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        gap = max_len - s.shape[0]
        if gap:
            pad = ember.full((gap,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype,
                             device=s.device)
            s = ember.cat([s, pad] if padding_side == "right" else [pad, s])
        rows.append(s)
    # stacked along the batch dimension itself, so the result is contiguous either way, as
    # PyTorch's is: programs call ``.view(-1)`` on the time-major batch (or a slice of it)
    return ember.stack(rows, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of variable-length tensors (``pad_sequence`` then
    ``pack_padded_sequence``).

    Args:
        sequences (list of Tensor): each ``(L_i, *)``.
        enforce_sorted (bool): require decreasing lengths. Default: True.

    Returns:
        PackedSequence.

    Example:
        >>> import ember
        >>> pack_sequence([ember.ones(1), ember.ones(2)], enforce_sorted=False).batch_sizes
        tensor([2, 1])
    """
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into its variable-length tensors.

    Args:
        padded_sequences (Tensor): ``(T, B, *)`` or ``(B, T, *)``.
        lengths (Tensor): each sequence's length.
        batch_first (bool): the batch dimension comes first. Default: False.

    Returns:
        list of Tensor.

    Example:
        >>> import ember
        >>> [t.shape[0] for t in unpad_sequence(ember.zeros(2, 3), ember.tensor([3, 1]), True)]
        [3, 1]
    """
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    # copies, contiguous, as torch's (it selects each sequence's rows by a mask)
    return [padded_sequences[i, :int(n)].clone(memory_format=_ember().contiguous_format)
            for i, n in enumerate(lengths)]


def unpack_sequence(packed_sequences):
    """Split a PackedSequence back into its variable-length tensors, in the original
    order.

    Args:
        packed_sequences (PackedSequence): the packed batch.

    Returns:
        list of Tensor.

    Example:
        >>> import ember
        >>> seqs = unpack_sequence(pack_sequence([ember.ones(1), ember.ones(3)], False))
        >>> [t.shape[0] for t in seqs]
        [1, 3]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
