"""Layouts and memory formats (``ember.strided``, ``ember.channels_last``, ...)."""


class _Named:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "ember." + self.name

    def __reduce__(self):
        return self.name


class layout(_Named):
    __slots__ = ()


class memory_format(_Named):
    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
