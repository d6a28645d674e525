"""Variable-length sequences: PackedSequence, pack/pad helpers."""

from __future__ import annotations

from collections import namedtuple

import numpy as np



_PackedBase = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices",
                                            "unsorted_indices"])


class PackedSequence(_PackedBase):
    """Sequences of different lengths packed time-step-major: ``data`` holds, for each time
    step, the rows of the sequences still running (longest first); ``batch_sizes[t]`` says
    how many."""

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
    """Pack a padded batch (T, B, *) (or (B, T, *) with ``batch_first``) of sequences with
    the given lengths."""
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
    """Undo ``pack_padded_sequence``: (padded batch, lengths)."""
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
    if sequence.unsorted_indices is not None:
        out = out.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices]
    if batch_first:
        out = out.transpose(0, 1)
    return out, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of different first sizes into one padded tensor."""
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
            pad = ember.full((gap,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype)
            s = ember.cat([s, pad] if padding_side == "right" else [pad, s])
        rows.append(s)
    out = ember.stack(rows, 0)
    return out if batch_first else out.transpose(0, 1)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors of decreasing (or any, without ``enforce_sorted``) lengths."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :int(n)] for i, n in enumerate(lengths)]


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
