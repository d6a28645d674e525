"""Layouts and memory formats (``ember.strided``, ``ember.channels_last``, ...)."""


class _Named:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        from .dtype import printed_module  # NOTE [ Printed module name ] in dtype.py

        return printed_module[0] + "." + self.name

    def __reduce__(self):
        return self.name


class layout(_Named):
    """How a tensor's elements are laid out: ``ember.strided`` (dense, ember's only layout for
    ``Tensor``), the sparse layouts ``ember.sparse_coo``/``sparse_csr``/... (NOTE [ Sparse
    tensors ]) and ``ember.jagged``.

    Args:
        name (str): the layout's name (the instances above are the ones to use).

    Example:
        >>> ember.zeros(2).layout
        ember.strided
        >>> ember.strided.name
        'strided'
    """

    __module__ = "ember"  # its public address (printed classes, pickles)
    __slots__ = ()


class memory_format(_Named):
    """The order in which a dense tensor's elements are stored: ``ember.contiguous_format``,
    ``ember.channels_last`` (NHWC), ``ember.channels_last_3d``, and ``ember.preserve_format``
    (keep the input's, for ``clone``/``to``/``*_like``).

    Args:
        name (str): the format's name (the instances above are the ones to use).

    Example:
        >>> x = ember.zeros(1, 3, 2, 2).to(memory_format=ember.channels_last)
        >>> x.is_contiguous(memory_format=ember.channels_last), x.stride()
        (True, (12, 1, 6, 3))
    """

    __module__ = "ember"  # its public address (printed classes, pickles)
    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
