"""DataPipes: composable dataset stages. ``IterDataPipe`` (a stream) and ``MapDataPipe``
(indexable) register their stages as methods by name (``functional_datapipe``), so
``IterableWrapper(range(8)).map(f).batch(2)`` chains ``Mapper`` and ``Batcher``."""

from __future__ import annotations

from ..dataset import Dataset, IterableDataset

__all__ = ["DataChunk", "DFIterDataPipe", "IterDataPipe", "MapDataPipe"]


class DataChunk(list):
    """A batch from ``.batch()``: a list that ``unbatch`` knows to flatten.

    Args:
        items: the batch's elements.

    Example:
        >>> DataChunk([1, 2]).raw_iterator().__next__()
        1
    """

    def __init__(self, items=()):
        items = list(items)
        super().__init__(items)
        self.items = items

    def as_str(self, indent=""):
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def raw_iterator(self):
        yield from self.items


class _Functional:
    """The per-class registry of stages callable as methods (``dp.map(...)``)."""

    functions: dict

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register,
                                      enable_df_api_tracing=False):
        if function_name in cls.functions:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is "
                            "already taken")  # noqa: TRY002 - PyTorch raises a bare Exception

        def method(source, *args, **kwargs):
            return cls_to_register(source, *args, **kwargs)

        method.__name__ = function_name
        method.__doc__ = cls_to_register.__doc__
        cls.functions[function_name] = method

    def __getattr__(self, name):
        fn = type(self).functions.get(name)
        if fn is None:
            raise AttributeError(
                f"'{type(self).__name__}' object has no attribute '{name}'")
        return fn.__get__(self)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(type(self).functions))


class IterDataPipe(_Functional, IterableDataset):
    """A stage of an iterable data pipeline; subclasses define ``__iter__``.

    Example:
        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(IterableWrapper(range(5)).map(lambda x: x * 10).filter(lambda x: x > 10))
        [20, 30, 40]
    """

    functions: dict = {}

    def __repr__(self):
        return type(self).__qualname__


class DFIterDataPipe(IterDataPipe):
    """An ``IterDataPipe`` of data frames (PyTorch's marker class; ember has no frame
    stages of its own).

    Example::

        >>> issubclass(ember.utils.data.DFIterDataPipe, ember.utils.data.IterDataPipe)
        True
    """

    def _is_dfpipe(self):
        return True


class MapDataPipe(_Functional, Dataset):
    """A stage of an indexable data pipeline; subclasses define ``__getitem__`` and
    ``__len__``.

    Example:
        >>> from ember.utils.data.datapipes.map import SequenceWrapper
        >>> SequenceWrapper([1, 2, 3]).map(lambda x: -x)[2]
        -3
    """

    functions: dict = {}

    def __repr__(self):
        return type(self).__qualname__
