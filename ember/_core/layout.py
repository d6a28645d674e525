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
    __slots__ = ()


class memory_format(_Named):
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
