"""``ember.device``: where a tensor's memory lives ('cpu', 'cuda:N', or an extension backend)."""

from __future__ import annotations

#: PyTorch's device-type names, in the order its error message lists them: each parses (a
#: program compares ``x.device == torch.device("mps")``), though ember computes on cpu, cuda,
#: meta and extension backends only (a transfer elsewhere raises).
torch_types = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
               "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
               "privateuseone")
#: device types ember recognises; extension backends add theirs through ember.library.
known_types = set(torch_types)

#: (enter, exit) for ``with ember.device(...)``, installed by ember/utils/_device.py
_context_hooks = None
#: other names of device types: 'privateuseone' names the renamed PrivateUse1 backend
#: (ember.utils.rename_privateuse1_backend)
type_aliases: dict = {}


class device:
    """A device: a type ('cpu', 'cuda', ...) and, optionally, an index.

    ``ember.device('cuda:1')``, ``ember.device('cuda', 1)`` and ``ember.device(1)`` (a CUDA
    index) name the same device. Objects are interned, so comparisons are cheap. Used as a
    context manager, it is the default device of the factories inside the block.

    Args:
        type_or_str (str, int or ember.device): ``"cpu"``, ``"cuda:0"``, ``"meta"``..., a CUDA
            index, or a device (returned as is).
        index (int, optional): the device index, when ``type_or_str`` is a bare type.

    Example:
        >>> ember.device("cuda:1") == ember.device("cuda", 1)
        True
        >>> d = ember.device("cpu")
        >>> d.type, d.index
        ('cpu', None)
        >>> with ember.device("meta"):
        ...     print(ember.ones(2).device)
        meta
    """

    __module__ = "ember"  # its public address (printed classes, pickles)

    __slots__ = ("type", "index")
    _cache: dict = {}

    def __new__(cls, type_or_str, index=None):
        key = (type_or_str, index)
        try:
            return cls._cache[key]
        except (KeyError, TypeError):
            pass
        if isinstance(type_or_str, device):
            if index is not None:
                raise ValueError("device(): an index cannot be given with a device object")
            return type_or_str
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            if type_or_str < 0:
                raise RuntimeError(f"Device index must not be negative, got {type_or_str}")
            # a bare index names the current accelerator's device, as in PyTorch: CUDA's
            # when a GPU is usable (ember's only accelerator), else an error
            from .. import cuda

            if not cuda.is_available():
                raise RuntimeError("Cannot access accelerator device when none is available.")
            typ, idx = "cuda", type_or_str
        elif isinstance(type_or_str, str):
            text = type_or_str.strip()
            typ, sep, rest = text.partition(":")
            idx = None
            if sep:
                if index is not None:
                    raise RuntimeError(
                        f"type (string) must not include an index because index was passed "
                        f"explicitly: {type_or_str}")
                if not rest.isdigit():
                    raise RuntimeError(f"Invalid device string: '{type_or_str}'")
                idx = int(rest)
            elif index is not None:
                if not isinstance(index, int) or isinstance(index, bool):
                    raise TypeError(f"device(): index must be an int, got {type(index).__name__}")
                if index < 0:
                    raise RuntimeError(f"Device index must not be negative, got {index}")
                idx = index
            typ = type_aliases.get(typ, typ)
            if typ not in known_types:
                names = torch_types + tuple(sorted(known_types.difference(torch_types)))
                raise RuntimeError(
                    f"Expected one of {', '.join(names)} device type at start of "
                    f"device string: {type_or_str}")
        else:
            raise TypeError(f"device(): expected a string or int, got {type(type_or_str).__name__}")
        self = object.__new__(cls)
        object.__setattr__(self, "type", typ)
        object.__setattr__(self, "index", idx)
        canonical = cls._cache.setdefault((typ, idx), self)
        try:
            cls._cache[key] = canonical
        except TypeError:
            pass
        return canonical

    def __setattr__(self, name, value):
        raise AttributeError("ember.device objects are immutable")

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        # a device equals devices only: ``torch.device("cpu") == "cpu"`` is False in PyTorch,
        # and programs written against it take the branch PyTorch takes
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self):
        """``with ember.device("meta"):`` -- factories that name no device use this one
        (NOTE [ Default device ] in ember/utils/_device.py)."""
        if _context_hooks is None:
            raise RuntimeError("using an ember.device as a context manager needs ember.utils")
        _context_hooks[0](self)
        return self

    def __exit__(self, *exc):
        _context_hooks[1](self)
        return False


cpu = device("cpu")


def as_device(spec) -> device:
    """Normalise a ``device=`` argument (None passes through)."""
    if spec is None or spec.__class__ is device:
        return spec
    return device(spec)
