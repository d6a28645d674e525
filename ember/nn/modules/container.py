"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from __future__ import annotations

import operator
from collections import OrderedDict
from itertools import chain

from ..._core.tensor import Tensor
from ..parameter import Parameter
from .module import Module, _addindent

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict"]


def _index(idx, n, what):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx % n


class Container(Module):
    """Deprecated: a module holding the keyword-argument modules it is given. Subclass
    ``Module`` instead; constructing one warns (FutureWarning).

    Args:
        **kwargs: name -> module, registered as submodules.

    Returns:
        The module.

    Example:
        >>> import ember, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     c = ember.nn.Container(fc=ember.nn.Linear(2, 2))
        >>> [name for name, _ in c.named_children()]
        ['fc']
    """

    def __init__(self, **kwargs):
        import warnings

        super().__init__()
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.", FutureWarning,
                      stacklevel=2)
        for name, module in kwargs.items():
            self.add_module(name, module)


class Sequential(Module):
    """Modules called in order, each on the previous one's output.

    ``Sequential(m1, m2)`` names them '0', '1'; ``Sequential(OrderedDict(name=m))`` keeps
    the given names. Indexing, slicing, ``append``, ``insert``, ``extend`` and ``+`` work as on
    a list.

    Args:
        *args (Module or OrderedDict): the modules.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> net = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(),
        ...                           ember.nn.Linear(8, 2))
        >>> tuple(net(ember.randn(3, 4)).shape), type(net[1]).__name__
        ((3, 2), 'ReLU')
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        keys = list(self._modules)
        return self._modules[keys[_index(idx, len(keys), "Sequential")]]

    def __setitem__(self, idx, module):
        keys = list(self._modules)
        setattr(self, keys[_index(idx, len(keys), "Sequential")], module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        if isinstance(idx, slice):
            for key in keys[idx]:
                delattr(self, key)
        else:
            delattr(self, keys[_index(idx, len(keys), "Sequential")])
        # renumber so indices stay contiguous
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(
                "add operator supports only objects of Sequential class, but "
                f"{type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(
                "add operator supports only objects of Sequential class, but "
                f"{type(other)} is given.")
        for m in other:
            self.append(m)
        return self

    def __mul__(self, other):
        if not isinstance(other, int) or other <= 0:
            raise ValueError(
                f"Non-positive multiplication factor {other} for {type(self)}")
        return Sequential(*(list(self) * other))

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(mods))
        return self

    def extend(self, sequential):
        for m in sequential:
            self.append(m)
        return self

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered so their parameters belong to the owner.

    Args:
        modules (iterable of Module, optional): the initial modules.

    Returns:
        The module (it has no ``forward``; iterate over it).

    Example:
        >>> import ember
        >>> layers = ember.nn.ModuleList([ember.nn.Linear(4, 4) for _ in range(3)])
        >>> x = ember.randn(2, 4)
        >>> for layer in layers:
        ...     x = layer(x)
        >>> len(layers), len(list(layers.parameters()))
        (3, 6)
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx, module):
        setattr(self, str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_index(idx, len(self), "ModuleList")))
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        combined = ModuleList()
        for i, m in enumerate(chain(self, other)):
            combined.add_module(str(i), m)
        return combined

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules = OrderedDict()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def extend(self, modules):
        if not hasattr(modules, "__iter__"):
            raise TypeError(
                "ModuleList.extend should be called with an iterable, but got "
                + type(modules).__name__)
        offset = len(self)
        for i, m in enumerate(modules):
            self.add_module(str(offset + i), m)
        return self

    def __repr__(self):
        if not self._modules:
            return self._get_name() + "()"
        # PyTorch groups runs of identical reprs: "(0-2): 3 x Linear(...)"
        lines = []
        mods = list(self._modules.values())
        reprs = [repr(m) for m in mods]
        start = 0
        for i in range(1, len(reprs) + 1):
            if i == len(reprs) or reprs[i] != reprs[start]:
                if i - start == 1:
                    lines.append(f"({start}): " + _addindent(reprs[start], 2))
                else:
                    lines.append(f"({start}-{i - 1}): {i - start} x " +
                                 _addindent(reprs[start], 2))
                start = i
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules, registered so their parameters belong to the owner.

    Args:
        modules (mapping or iterable of (str, Module), optional): the initial modules.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> heads = ember.nn.ModuleDict({"cls": ember.nn.Linear(4, 3),
        ...                              "reg": ember.nn.Linear(4, 1)})
        >>> tuple(heads["reg"](ember.randn(2, 4)).shape)
        (2, 1)
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        if isinstance(modules, (OrderedDict, ModuleDict, dict)):
            for k, m in modules.items():
                self[k] = m
        else:
            for j, m in enumerate(modules):
                if not isinstance(m, (list, tuple)) or len(m) != 2:
                    raise ValueError(
                        f"ModuleDict update sequence element #{j} should be Iterable of "
                        "length 2")
                self[m[0]] = m[1]


class ParameterList(Module):
    """A list of parameters, registered on the owner (plain tensors are wrapped into
    Parameters).

    Args:
        values (iterable, optional): the initial parameters.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> params = ember.nn.ParameterList([ember.nn.Parameter(ember.ones(2)) for _ in range(3)])
        >>> len(list(params.parameters()))
        3
    """

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([getattr(self, str(i)) for i in range(self._size)[idx]])
        return getattr(self, str(_index(idx, self._size, "ParameterList")))

    def __setitem__(self, idx, param):
        idx = _index(idx, self._size, "ParameterList")
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(self._size))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value):
        i = self._size
        self._size += 1
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, str(i), value)
        return self

    def extend(self, values):
        if not hasattr(values, "__iter__") or isinstance(values, Tensor):
            raise TypeError(
                "ParameterList.extend should be called with an iterable, but got "
                + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        lines = []
        for i, p in enumerate(self):
            if isinstance(p, Tensor):
                size = "x".join(str(s) for s in p.size())
                kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
                lines.append(f"  ({i}): {kind} containing: [{p.dtype} of size {size}]")
            else:
                lines.append(f"  ({i}): Object of type: {type(p).__name__}")
        return "\n".join(lines)


class ParameterDict(Module):
    """An ordered dict of parameters, registered on the owner (plain tensors are wrapped
    into Parameters).

    Args:
        parameters (mapping or iterable of (str, Tensor), optional): the initial parameters.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> params = ember.nn.ParameterDict({"scale": ember.nn.Parameter(ember.ones(1))})
        >>> [name for name, _ in params.named_parameters()]
        ['scale']
    """

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, key, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def update(self, parameters):
        if isinstance(parameters, (dict, ParameterDict)):
            for k, v in parameters.items():
                self[k] = v
        else:
            for j, kv in enumerate(parameters):
                if not isinstance(kv, (list, tuple)) or len(kv) != 2:
                    raise ValueError(
                        f"ParameterDict update sequence element #{j} should be Iterable of "
                        "length 2")
                self[kv[0]] = kv[1]

    def extra_repr(self):
        lines = []
        for k, p in self.items():
            if isinstance(p, Tensor):
                size = "x".join(str(s) for s in p.size())
                kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
                # PyTorch names the legacy tensor type here ("torch.FloatTensor"), not dtype
                lines.append(f"  ({k}): {kind} containing: [{p.type()} of size {size}]")
            else:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
        return "\n".join(lines)
