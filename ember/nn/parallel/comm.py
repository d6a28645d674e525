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

    Example:
        >>> from ember.nn.parallel import comm
        >>> comm.broadcast(ember.ones(2), [0, 1])  # doctest: +SKIP
        (tensor([1., 1.], device='cuda:0'), tensor([1., 1.], device='cuda:1'))
        >>> comm.broadcast(ember.ones(2), ["cpu"])
        Traceback (most recent call last):
        ...
        ValueError: Expected a non cpu device, but got: cpu
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

    Args:
        tensors: the tensors to copy.
        devices: where to copy them (GPU indices or devices).
        buffer_size (int): accepted for PyTorch compatibility (ember copies tensor by
            tensor). Default: 10485760.

    Returns:
        a tuple (one per device) of tuples of tensors.

    Raises:
        ValueError: a CPU device.

    Example:
        >>> from ember.nn.parallel import comm
        >>> tensors = [ember.ones(2), ember.zeros(3)]
        >>> copies = comm.broadcast_coalesced(tensors, [0, 1])  # doctest: +SKIP
        >>> [len(c) for c in copies]  # doctest: +SKIP
        [2, 2]
        >>> comm.broadcast_coalesced([ember.ones(2)], ["cpu"])
        Traceback (most recent call last):
        ...
        ValueError: Expected a non cpu device, but got: cpu
    """
    devs = _devices(devices)
    return tuple(tuple(t.to(d) for t in tensors) for d in devs)


def reduce_add(inputs, destination=None):
    """The sum of tensors that live on different GPUs, on ``destination``.

    Args:
        inputs: tensors of one shape, on GPUs.
        destination: the GPU (index or device) of the sum; default: the first input's.

    Returns:
        The sum, a tensor on ``destination``.

    Raises:
        AssertionError: an input is on the CPU.
        ValueError: the inputs' shapes differ.

    Example:
        >>> from ember.nn.parallel import comm
        >>> comm.reduce_add([ember.ones(2, device="cuda:0"),
        ...                  ember.ones(2, device="cuda:1")])  # doctest: +SKIP
        tensor([2., 2.], device='cuda:0')
        >>> comm.reduce_add([ember.ones(2)])
        Traceback (most recent call last):
        ...
        AssertionError: reduce_add expects all inputs to be on GPUs, but input 0 is on CPU
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
    device i; tensor j's sums, as a tuple.

    Args:
        inputs: one sequence of tensors per device, all in the same order.
        destination: the GPU (index or device) of the sums; default: the first inputs'.
        buffer_size (int): accepted for PyTorch compatibility (ember sums tensor by
            tensor). Default: 10485760.

    Returns:
        A tuple of the sums, one per tensor position.

    Raises:
        AssertionError: an input is on the CPU.

    Example:
        >>> from ember.nn.parallel import comm
        >>> on0 = [ember.ones(2, device="cuda:0"),
        ...        ember.zeros(1, device="cuda:0")]  # doctest: +SKIP
        >>> on1 = [ember.ones(2, device="cuda:1"),
        ...        ember.ones(1, device="cuda:1")]  # doctest: +SKIP
        >>> comm.reduce_add_coalesced([on0, on1])  # doctest: +SKIP
        (tensor([2., 2.], device='cuda:0'), tensor([1.], device='cuda:0'))
        >>> comm.reduce_add_coalesced([[ember.ones(2)]])
        Traceback (most recent call last):
        ...
        AssertionError: reduce_add expects all inputs to be on GPUs, but input 0 is on CPU
    """
    return tuple(reduce_add(list(col), destination) for col in zip(*inputs))


def scatter(tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
    """Split ``tensor`` along ``dim`` and put one piece on each device.

    Args:
        tensor: the tensor to split.
        devices: where to put the pieces (GPU indices or devices; or give ``out``).
        chunk_sizes: the pieces' sizes along ``dim``; default: as even as ``chunk`` makes
            them.
        dim (int): the dimension to split. Default: 0.
        streams: accepted for PyTorch compatibility.
        out: GPU tensors to copy the pieces into instead (their sizes choose the split).

    Returns:
        a tuple of the pieces.

    Raises:
        ValueError: a CPU device.

    Example:
        >>> from ember.nn.parallel import comm
        >>> comm.scatter(ember.arange(4.0), [0, 1])  # doctest: +SKIP
        (tensor([0., 1.], device='cuda:0'), tensor([2., 3.], device='cuda:1'))
        >>> comm.scatter(ember.arange(4.0), ["cpu"])
        Traceback (most recent call last):
        ...
        ValueError: Expected a non cpu device, but got: cpu
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

    Args:
        tensors: the GPU tensors.
        dim (int): the dimension to join along. Default: 0.
        destination: the device of the result; default: the first tensor's.
        out: a tensor to write the result into instead.

    Returns:
        The concatenation (``out`` when given).

    Raises:
        AssertionError: an input is on the CPU.

    Example:
        >>> from ember.nn.parallel import comm
        >>> comm.gather([ember.ones(1, device="cuda:0"),
        ...              ember.zeros(1, device="cuda:1")])  # doctest: +SKIP
        tensor([1., 0.], device='cuda:0')
        >>> comm.gather([ember.ones(1)])
        Traceback (most recent call last):
        ...
        AssertionError: gather expects all inputs to be on GPUs, but input 0 is on CPU
    """
    from ... import cat

    _check_gpu(tensors, "gather")
    dest = tensors[0].device if destination is None else destination
    result = cat([t.to(dest) for t in tensors], dim)
    if out is not None:
        out.copy_(result)
        return out
    return result
