"""Moving tensors between GPUs for ``DataParallel`` (``torch.nn.parallel.comm``):
broadcast, scatter, gather and summing copies onto one device. Like PyTorch's, these work
on GPU tensors only and refuse CPU tensors.

Example::

    >>> from ember.nn.parallel import comm
    >>> comm.broadcast(ember.ones(2), ["cpu"])
    Traceback (most recent call last):
    ...
    ValueError: Expected a non cpu device, but got: cpu
"""

from __future__ import annotations

__all__ = ["broadcast", "broadcast_coalesced", "gather", "reduce_add", "reduce_add_coalesced",
           "scatter"]


def _devices(devices):
    from ... import device as Device

    out = []
    for d in devices:
        d = Device(f"cuda:{d}" if isinstance(d, int) else d)
        if d.type == "cpu":
            raise ValueError(f"Expected a non cpu device, but got: {d}")
        out.append(d)
    return out


def _check_gpu(tensors, name):
    for i, t in enumerate(tensors):
        if t.device.type == "cpu":
            raise AssertionError(f"{name} expects all inputs to be on GPUs, but input {i} is "
                                 "on CPU")


def broadcast(tensor, devices=None, *, out=None):
    """Copies of ``tensor`` on each of ``devices`` (GPU indices or devices).

    Args:
        tensor: the tensor to copy.
        devices: where to copy it (or give ``out``).
        out: tensors to copy into instead.

    Returns:
        a tuple of the copies.

    Raises:
        RuntimeError: both or neither of ``devices`` and ``out``.
        ValueError: a CPU device.
    """
    if (devices is None) == (out is None):
        raise RuntimeError("Exactly one of 'devices' and 'out' must be specified, but got "
                           f"devices={devices} and out={out}")
    if out is not None:
        _check_gpu(out, "broadcast")
        for o in out:
            o.copy_(tensor)
        return tuple(out)
    return tuple(tensor.to(d) for d in _devices(devices))


def broadcast_coalesced(tensors, devices, buffer_size=10485760):
    """``broadcast`` of several tensors: for each device, a tuple of copies.

    Returns:
        a tuple (one per device) of tuples of tensors.
    """
    devs = _devices(devices)
    return tuple(tuple(t.to(d) for t in tensors) for d in devs)


def reduce_add(inputs, destination=None):
    """The sum of tensors that live on different GPUs, on ``destination``.

    Raises:
        AssertionError: an input is on the CPU.
    """
    _check_gpu(inputs, "reduce_add")
    dest = inputs[0].device if destination is None else _devices([destination])[0]
    total = inputs[0].to(dest).clone()
    for t in inputs[1:]:
        if t.shape != inputs[0].shape:
            raise ValueError(f"input {inputs.index(t)} has invalid size: got {t.shape}, but "
                             f"expected {inputs[0].shape}")
        total += t.to(dest)
    return total


def reduce_add_coalesced(inputs, destination=None, buffer_size=10485760):
    """``reduce_add`` of several tensors per device: ``inputs[i][j]`` is tensor j on
    device i; tensor j's sums, as a tuple."""
    return tuple(reduce_add(list(col), destination) for col in zip(*inputs))


def scatter(tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
    """Split ``tensor`` along ``dim`` and put one piece on each device.

    Returns:
        a tuple of the pieces.
    """
    if out is not None:
        _check_gpu(out, "scatter")
        sizes = [o.shape[dim] for o in out]
        for o, piece in zip(out, tensor.split(sizes, dim)):
            o.copy_(piece)
        return tuple(out)
    devs = _devices(devices)
    if chunk_sizes is None:
        pieces = tensor.chunk(len(devs), dim)
    else:
        pieces = tensor.split(list(chunk_sizes), dim)
    return tuple(p.to(d) for p, d in zip(pieces, devs))


def gather(tensors, dim=0, destination=None, *, out=None):
    """Concatenate GPU tensors along ``dim`` on ``destination`` (or into ``out``).

    Raises:
        AssertionError: an input is on the CPU.
    """
    from ... import cat

    _check_gpu(tensors, "gather")
    dest = tensors[0].device if destination is None else destination
    result = cat([t.to(dest) for t in tensors], dim)
    if out is not None:
        out.copy_(result)
        return out
    return result
