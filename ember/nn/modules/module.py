"""``nn.Module``: the base class of every layer and model.

A Module owns three ordered registries -- parameters, buffers and submodules -- filled by
attribute assignment, and everything else (state_dict, device/dtype moves, train/eval,
hooks, repr) walks them. The names and orders of state_dict keys, the hook calling
conventions and the error messages follow PyTorch, because checkpoints and user code depend
on them.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections import OrderedDict, namedtuple

from ..._core.tensor import Tensor
from ...autograd._engine import zero_grad_in_place
from ...autograd._base import RemovableHandle  # noqa: F401  (one handle class for all hooks)
from ..parameter import Buffer, Parameter, UninitializedTensorMixin, is_lazy

__all__ = ["Module", "register_module_forward_hook", "register_module_forward_pre_hook",
           "register_module_full_backward_hook", "register_module_full_backward_pre_hook",
           "register_module_backward_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]

# hooks every module runs (NOTE [ Global module hooks ] below)
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
_global_is_full_backward_hook = None
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()
_global_parameter_registration_hooks: OrderedDict = OrderedDict()

# the state-dict key (after the module's prefix) of ``get_extra_state()``'s value; libraries
# that load state dicts themselves (transformers) skip or route it by this name
_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` did not match."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


# NOTE [ Global module hooks ]
# A hook registered with a register_module_*_hook function runs for every module, before the
# module's own hooks of the same kind, as in PyTorch. They are meant for debugging and
# profiling; each adds a dictionary check to every module call or registration.


def _add_global(hooks, hook):
    h = RemovableHandle(hooks)
    hooks[h.id] = hook
    return h


def register_module_forward_pre_hook(hook):
    """Register ``hook(module, args)`` to run before every module's forward.

    Args:
        hook (callable): may return replacement args (a tuple, or one value).

    Returns:
        RemovableHandle: ``remove()`` unregisters the hook.

    Example:
        >>> import ember
        >>> seen = []
        >>> h = ember.nn.modules.module.register_module_forward_pre_hook(
        ...     lambda m, args: seen.append(type(m).__name__))
        >>> _ = ember.nn.ReLU()(ember.ones(1))
        >>> h.remove()
        >>> seen
        ['ReLU']
    """
    return _add_global(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """Register ``hook(module, args, output)`` to run after every module's forward.

    Args:
        hook (callable): may return a replacement output.
        with_kwargs (bool): call ``hook(module, args, kwargs, output)`` instead.
        always_call (bool): accepted for compatibility.

    Returns:
        RemovableHandle: ``remove()`` unregisters the hook.

    Example:
        >>> import ember
        >>> h = ember.nn.modules.module.register_module_forward_hook(
        ...     lambda m, args, out: out * 2)
        >>> ember.nn.Identity()(ember.ones(1))
        tensor([2.])
        >>> h.remove()
    """
    h = RemovableHandle(_global_forward_hooks, _global_forward_hooks_with_kwargs)
    _global_forward_hooks[h.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[h.id] = True
    return h


def register_module_full_backward_pre_hook(hook):
    """Register ``hook(module, grad_output)`` to run for every module before the gradients
    of its inputs are computed.

    Args:
        hook (callable): may return a replacement grad_output.

    Returns:
        RemovableHandle: ``remove()`` unregisters the hook.

    Example:
        >>> import ember
        >>> seen = []
        >>> h = ember.nn.modules.module.register_module_full_backward_pre_hook(
        ...     lambda m, g: seen.append(type(m).__name__))
        >>> ember.nn.Tanh()(ember.ones(1, requires_grad=True)).sum().backward()
        >>> h.remove()
        >>> seen
        ['Tanh']
    """
    return _add_global(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """Register ``hook(module, grad_input, grad_output)`` to run for every module when the
    gradients of its inputs are computed.

    Args:
        hook (callable): may return a replacement grad_input.

    Returns:
        RemovableHandle: ``remove()`` unregisters the hook.

    Example:
        >>> import ember
        >>> seen = []
        >>> h = ember.nn.modules.module.register_module_full_backward_hook(
        ...     lambda m, gin, gout: seen.append(type(m).__name__))
        >>> ember.nn.Tanh()(ember.ones(1, requires_grad=True)).sum().backward()
        >>> h.remove()
        >>> seen
        ['Tanh']
    """
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as "
                           "a global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = True
    return _add_global(_global_backward_hooks, hook)


def register_module_backward_hook(hook):
    """Deprecated global backward hook; use ``register_module_full_backward_hook``. It runs
    for every module as ``register_backward_hook``'s hooks do, on the autograd node that makes
    the module's first output (NOTE [ Legacy module backward hooks ]).

    Args:
        hook (callable): ``hook(module, grad_input, grad_output)``.

    Returns:
        RemovableHandle: ``remove()`` unregisters the hook.

    Example:
        >>> import ember
        >>> # registering one fixes the process-wide kind to legacy, as in PyTorch
        >>> callable(ember.nn.modules.module.register_module_backward_hook)
        True
    """
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as "
                           "a global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = False
    return _add_global(_global_backward_hooks, hook)


def register_module_buffer_registration_hook(hook):
    """Register ``hook(module, name, buffer)`` to run whenever any module registers a
    buffer.

    Args:
        hook (callable): may return a replacement buffer.

    Returns:
        RemovableHandle: ``remove()`` unregisters the hook.

    Example:
        >>> import ember
        >>> names = []
        >>> h = ember.nn.modules.module.register_module_buffer_registration_hook(
        ...     lambda m, name, b: names.append(name))
        >>> _ = ember.nn.BatchNorm1d(2)
        >>> h.remove()
        >>> names
        ['running_mean', 'running_var', 'num_batches_tracked']
    """
    return _add_global(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    """Register ``hook(module, name, submodule)`` to run whenever any module registers a
    submodule.

    Args:
        hook (callable): may return a replacement submodule.

    Returns:
        RemovableHandle: ``remove()`` unregisters the hook.

    Example:
        >>> import ember
        >>> names = []
        >>> h = ember.nn.modules.module.register_module_module_registration_hook(
        ...     lambda m, name, sub: names.append(name))
        >>> _ = ember.nn.Sequential(ember.nn.ReLU())
        >>> h.remove()
        >>> names
        ['0']
    """
    return _add_global(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    """Register ``hook(module, name, param)`` to run whenever any module registers a
    parameter.

    Args:
        hook (callable): may return a replacement parameter.

    Returns:
        RemovableHandle: ``remove()`` unregisters the hook.

    Example:
        >>> import ember
        >>> names = []
        >>> h = ember.nn.modules.module.register_module_parameter_registration_hook(
        ...     lambda m, name, p: names.append(name))
        >>> _ = ember.nn.Linear(2, 2)
        >>> h.remove()
        >>> names
        ['weight', 'bias']
    """
    return _add_global(_global_parameter_registration_hooks, hook)


def _run_registration_hooks(hooks, module, name, value):
    for hook in hooks.values():
        out = hook(module, name, value)
        if out is not None:
            value = out
    return value


def _addindent(text, n):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


def _typename(obj):
    """``torch.typename(obj)``, as PyTorch's refusals to assign name what they got
    ('torch.FloatTensor' for a plain tensor)."""
    from ..._top_level import typename

    return typename(obj)


class Module:
    """Base class for all neural network modules.

    Subclasses create their parameters and submodules in ``__init__`` (after calling
    ``super().__init__()``) and compute in ``forward``. Calling the module runs its hooks
    around ``forward``. Assigning a Parameter, a Module or a Buffer as an attribute registers
    it, so ``parameters()``, ``state_dict()``, ``to()`` and ``train()/eval()`` reach it.

    Args:
        (none): subclasses define their own.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> class TwoLayer(ember.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc1 = ember.nn.Linear(4, 8)
        ...         self.fc2 = ember.nn.Linear(8, 2)
        ...     def forward(self, x):
        ...         return self.fc2(self.fc1(x).relu())
        >>> net = TwoLayer()
        >>> tuple(net(ember.randn(3, 4)).shape), len(list(net.parameters()))
        ((3, 2), 4)
    """

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() takes no arguments beyond self "
                f"(got {len(args)} positional and {sorted(kwargs)} keyword)")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = OrderedDict()
        d["_forward_hooks_always_called"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_is_full_backward_hook"] = None
        d["_state_dict_hooks"] = OrderedDict()
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()

    forward = None  # set by subclasses; see _forward_unimplemented

    # -- registration -----------------------------------------------------------------------------

    def register_buffer(self, name, tensor, persistent=True):
        """Register ``tensor`` as a buffer: state that is saved and moved but not trained."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                "(torch Tensor or None required)")
        if _global_buffer_registration_hooks:
            tensor = _run_registration_hooks(_global_buffer_registration_hooks, self, name,
                                             tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Register ``param`` (a Parameter or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must "
                "be created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method.")
        if _global_parameter_registration_hooks:
            param = _run_registration_hooks(_global_parameter_registration_hooks, self, name,
                                            param)
        self._parameters[name] = param

    def add_module(self, name, module):
        """Register ``module`` (or None) as a submodule called ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        if _global_module_registration_hooks:
            module = _run_registration_hooks(_global_module_registration_hooks, self, name,
                                             module)
        self._modules[name] = module

    register_module = add_module

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put ``module`` at the dotted path ``target``, replacing what is there.

        Args:
            target (str): e.g. ``"encoder.layers.0"``; every prefix must name a submodule.
            module (Module): the module to install.
            strict (bool): only replace an existing submodule (AttributeError otherwise).
                Default: False.

        Returns:
            None.

        Example:
            >>> import ember
            >>> net = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU())
            >>> net.set_submodule("1", ember.nn.Tanh())
            >>> net[1]
            Tanh()
        """
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        *path, name = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self.get_submodule(".".join(path))
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def compile(self, *args, **kwargs):
        """Compile this module's forward with ``ember.compile`` (same arguments); later calls
        of the module run the compiled forward.

        PyTorch compiles the whole call, hooks included; ember compiles ``forward`` and runs
        the hooks around it, which keeps the plain module call free of a compiled-or-not
        check (the result is the same, since ember's compile runs eagerly).

        Args:
            *args, **kwargs: passed to ``ember.compile``.

        Returns:
            None.

        Example:
            >>> import ember
            >>> m = ember.nn.Linear(2, 2)
            >>> if hasattr(ember, "compile"):
            ...     m.compile()
            >>> tuple(m(ember.ones(1, 2)).shape)
            (1, 2)
        """
        from ... import compile as compile_fn

        self.__dict__["forward"] = compile_fn(type(self).forward.__get__(self), *args,
                                              **kwargs)

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` ('' is self)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    # -- attribute protocol -----------------------------------------------------------------------

    def __getattr__(self, name):
        d = self.__dict__
        if "_parameters" in d:
            p = d["_parameters"]
            if name in p:
                return p[name]
        if "_buffers" in d:
            b = d["_buffers"]
            if name in b:
                return b[name]
        if "_modules" in d:
            m = d["_modules"]
            if name in m:
                return m[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")

        def remove_from(*dicts_or_sets):
            for ds in dicts_or_sets:
                if name in ds:
                    if isinstance(ds, dict):
                        del ds[name]
                    else:
                        ds.discard(name)

        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' "
                    "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(d, self._parameters, self._buffers,
                            self._non_persistent_buffers_set)
                if _global_module_registration_hooks:
                    value = _run_registration_hooks(_global_module_registration_hooks, self,
                                                    name, value)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(
                        f"cannot assign '{_typename(value)}' as child module '{name}' "
                        "(torch.nn.Module or None expected)")
                if _global_module_registration_hooks:
                    value = _run_registration_hooks(_global_module_registration_hooks, self,
                                                    name, value)
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if isinstance(value, Buffer) or buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(
                            f"cannot assign '{_typename(value)}' as buffer '{name}' "
                            "(torch.nn.Buffer, torch.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.__dict__.get("persistent", True)
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    remove_from(d)
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)
        for attr, default in [("_forward_pre_hooks_with_kwargs", OrderedDict()),
                              ("_forward_hooks_with_kwargs", OrderedDict()),
                              ("_forward_hooks_always_called", OrderedDict()),
                              ("_state_dict_pre_hooks", OrderedDict()),
                              ("_load_state_dict_post_hooks", OrderedDict()),
                              ("_backward_pre_hooks", OrderedDict())]:
            self.__dict__.setdefault(attr, default)

    # -- iteration --------------------------------------------------------------------------------

    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        """The parameters of this module (and, with ``recurse``, its submodules), once each."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                   remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                   remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Every module in the tree, depth first, with its dotted name ('' for self)."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from m.named_modules(memo, sub, remove_duplicate)

    def __hash__(self):
        return id(self)

    # -- modes ------------------------------------------------------------------------------------

    def train(self, mode=True):
        """Set training mode on this module and all submodules (Dropout, BatchNorm care)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all parameters (to None by default)."""
        for p in self.parameters():
            g = p.grad
            if g is not None:
                if set_to_none:
                    p.grad = None
                elif not zero_grad_in_place(g):  # NOTE [ Resetting gradients in place ]
                    # (the same tensor stays ``.grad``, detached in place, as in PyTorch)
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def share_memory(self):
        return self._apply(lambda t: t.share_memory_())

    # -- device and dtype moves -----------------------------------------------------------------

    def _apply(self, fn, recurse=True):
        """Apply ``fn`` to every parameter, gradient and buffer, keeping Parameter identity."""
        if recurse:
            for m in self.children():
                m._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            from ...autograd.grad_mode import no_grad

            with no_grad():
                new = fn(param)
            if new is not param:
                # keep the Parameter object (optimizers hold references to it)
                param._data = new._data
                param._vc = [0]
            g = param.grad
            if g is not None:
                with no_grad():
                    ng = fn(g)
                if ng is not g:
                    param._grad = ng
        for key, buf in self._buffers.items():
            if buf is not None:
                new = fn(buf)
                if isinstance(buf, UninitializedTensorMixin) and type(new) is not type(buf):
                    # a lazy module's placeholder stays one, with the new dtype and device,
                    # until its first call gives it a shape (PyTorch's to() keeps the class)
                    new = Tensor._make_subclass(type(buf), new)
                self._buffers[key] = new
        return self

    def apply(self, fn):
        """Call ``fn`` on every submodule (children first) and self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers: ``to(device)``, ``to(dtype)``,
        ``to(tensor)``, ``to(device, dtype)``. Only floating/complex tensors change dtype."""
        from ..._ops.conversion import _parse_to

        kwargs = dict(kwargs)
        kwargs.pop("non_blocking", None)
        memory_format = kwargs.pop("memory_format", None)
        dev, dtype, _, _ = _parse_to(args, kwargs)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype}")
        # as PyTorch: a memory format applies to the 4-d (5-d for channels_last_3d) tensors
        rank = {"channels_last": 4, "channels_last_3d": 5}.get(str(memory_format).split(".")[-1])

        def convert(t):
            d = dtype if dtype is not None and (t.is_floating_point() or t.is_complex()) \
                else None
            if rank is not None and t.dim() == rank:
                return t.to(device=dev, dtype=d, memory_format=memory_format)
            return t.to(device=dev, dtype=d)

        return self._apply(convert)

    def to_empty(self, *, device, recurse=True):
        """Move the parameters and buffers to ``device`` without copying their data: each
        becomes an uninitialised tensor of its shape and dtype there (parameters stay the
        same ``Parameter`` objects, with their ``requires_grad``).

        The way to materialise a module built on the meta device: build it under
        ``with ember.device("meta"):`` (no memory, no initialisation), call
        ``to_empty(device="cpu")``, then ``load_state_dict(...)`` or ``reset_parameters()``.

        Args:
            device: the device to move to.
            recurse: whether submodules' parameters and buffers move too.

        Returns:
            Module: self.

        Example::

            >>> import ember
            >>> with ember.device("meta"):
            ...     layer = ember.nn.Linear(4, 2)
            >>> layer.to_empty(device="cpu").weight.device
            device(type='cpu')
        """
        from ..._ops.creation import empty_like

        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def _cast_floating(self, dtype):
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self):
        from ... import float32

        return self._cast_floating(float32)

    def double(self):
        from ... import float64

        return self._cast_floating(float64)

    def half(self):
        from ... import float16

        return self._cast_floating(float16)

    def bfloat16(self):
        from ... import bfloat16

        return self._cast_floating(bfloat16)

    # -- state_dict -------------------------------------------------------------------------------

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        extra = getattr(type(self), "get_extra_state", None)
        if extra is not None and extra is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of every parameter and persistent buffer, keyed by dotted name."""
        if args:
            # legacy positional form: state_dict(destination, prefix, keep_vars)
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.state_dict for details.", FutureWarning, stacklevel=2)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is None:
                continue
            # NOTE [ State-dict post-hooks edit in place ]
            if getattr(hook, "_from_public_api", False):
                raise RuntimeError("state_dict post-hook must return None")
            destination = result
        return destination

    def get_extra_state(self):
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called.")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # (``load_state_dict(assign=True)`` says so in the metadata: NOTE [ Assignment
        # travels in the checkpoint's metadata ])
        assign = local_metadata.get("assign_to_params_buffers", False)
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent_buffers = {k: v for k, v in self._buffers.items()
                              if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                        persistent_buffers.items())
                       if v is not None}
        from ...autograd.grad_mode import no_grad

        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(input_param)}")
                continue
            if not is_lazy(param) and input_param.shape != param.shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {input_param.shape} "
                    f"from checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with no_grad():
                    if is_lazy(param):
                        param.materialize(input_param.shape)
                    if assign:
                        if isinstance(param, Parameter):
                            new = Parameter(input_param, requires_grad=param.requires_grad) \
                                if not isinstance(input_param, Parameter) else input_param
                            setattr(self, name, new)
                        else:
                            setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as e:
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the '
                    f"model are {param.shape} and whose dimensions in the checkpoint are "
                    f"{input_param.shape}, an exception occurred : {e.args}.")
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        has_extra = getattr(type(self), "set_extra_state", None) is not Module.set_extra_state
        if has_extra:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from ``state_dict``; returns the missing and unexpected
        keys. With ``strict`` any mismatch raises RuntimeError (and nothing is half-loaded
        by a shape mismatch: shapes are checked per tensor before copying)."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        # NOTE [ Assignment travels in the checkpoint's metadata ]
        # ``assign`` reaches each module's ``_load_from_state_dict`` as the metadata entry
        # ``assign_to_params_buffers``, not as an argument: programs override that method
        # with PyTorch's seven parameters and call ``super()`` with them. As on PyTorch the
        # entry is written into the state dict's own ``_metadata`` (a later load of the same
        # dict assigns too, and a checkpoint saved from it carries the entry).
        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_sd = {k: v for k, v in local_state_dict.items()
                                if k.startswith(child_prefix)}
                    load(child, child_sd, child_prefix)
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def register_state_dict_pre_hook(self, hook):
        h = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[h.id] = hook
        return h

    # NOTE [ State-dict post-hooks edit in place ]
    # A post-hook registered through the public ``register_state_dict_post_hook`` edits the
    # state dict it is given and must return None (returning anything raises, as on
    # PyTorch); one registered through the older private ``_register_state_dict_hook`` may
    # return a replacement, which only the module whose ``state_dict`` was called returns
    # (its parent keeps filling its own dict). The hook carries the mark itself, as
    # PyTorch's does: both kinds share the one ordered table.

    def register_state_dict_post_hook(self, hook):
        """Register ``hook(module, state_dict, prefix, local_metadata)`` to run after
        ``state_dict`` has filled this module's entries; it edits ``state_dict`` in place
        and must return None (NOTE [ State-dict post-hooks edit in place ]).

        Args:
            hook: the callable.

        Returns:
            a ``RemovableHandle``; ``handle.remove()`` unregisters the hook.

        Example:
            >>> m = ember.nn.Linear(2, 2)
            >>> def drop_bias(module, state_dict, prefix, local_metadata):
            ...     del state_dict[prefix + "bias"]
            >>> h = m.register_state_dict_post_hook(drop_bias)
            >>> list(m.state_dict())
            ['weight']
        """
        hook._from_public_api = True
        return self._register_state_dict_hook(hook)

    def _register_state_dict_hook(self, hook):
        """The older post-hook registration: ``hook`` may return a state dict that replaces
        this module's result (NOTE [ State-dict post-hooks edit in place ])."""
        h = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[h.id] = hook
        return h

    def register_load_state_dict_pre_hook(self, hook):
        h = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[h.id] = functools.partial(_with_module, hook, self)
        return h

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        h = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[h.id] = (functools.partial(hook, self) if with_module
                                                 else hook)
        return h

    def register_load_state_dict_post_hook(self, hook):
        h = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[h.id] = hook
        return h

    # -- forward and hooks ------------------------------------------------------------------------

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``hook(module, args, kwargs)``) runs before forward and
        may return replacement args (and kwargs)."""
        h = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[h.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[h.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """``hook(module, args, output)`` (or with kwargs) runs after forward and may return
        a replacement output."""
        h = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs,
                            self._forward_hooks_always_called)
        self._forward_hooks[h.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[h.id] = True
        if always_call:
            self._forward_hooks_always_called[h.id] = True
        if prepend:
            self._forward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` runs before the module's gradients are computed."""
        h = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[h.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` runs when the gradients with respect to
        the module's inputs are computed; it may return replacement grad_input."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a single "
                "Module. Please use only one of them.")
        self._is_full_backward_hook = True
        h = RemovableHandle(self._backward_hooks)
        self._backward_hooks[h.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(h.id, last=False)
        return h

    def register_backward_hook(self, hook):
        """Deprecated: use ``register_full_backward_hook``. ``hook(module, grad_input,
        grad_output)`` runs as a hook of the autograd node that makes the module's first output
        (NOTE [ Legacy module backward hooks ]).

        Args:
            hook (callable): may return a tuple replacing ``grad_input``.

        Returns:
            RemovableHandle: ``remove()`` stops the hook being attached on later calls.

        Example::

            >>> seen = []
            >>> lin = ember.nn.Linear(3, 2)
            >>> h = lin.register_backward_hook(lambda m, gin, gout: seen.append(gout[0].shape))
            >>> lin(ember.randn(4, 3)).sum().backward()  # doctest: +SKIP
            >>> seen  # doctest: +SKIP
            [ember.Size([4, 2])]
        """
        if self._is_full_backward_hook is True:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a single "
                "Module. Please use only one of them.")
        self._is_full_backward_hook = False
        h = RemovableHandle(self._backward_hooks)
        self._backward_hooks[h.id] = hook
        return h

    def _call_impl(self, *args, **kwargs):
        forward = self.forward
        if forward is None:
            raise NotImplementedError(
                f'Module [{type(self).__name__}] is missing the required "forward" function')
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_forward_hooks
                or _global_forward_pre_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            return forward(*args, **kwargs)
        return self._call_with_hooks(forward, args, kwargs)

    __call__ = _call_impl

    def _call_with_hooks(self, forward, args, kwargs):
        for hook_id, hook in itertools.chain(_global_forward_pre_hooks.items(),
                                             self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, "
                            f"new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        bw = None
        if (_full_backward_hooks(self) or self._backward_pre_hooks
                or _global_backward_pre_hooks):
            from ._backward_hooks import ModuleBackwardHook

            bw = ModuleBackwardHook(self)
            args = bw.setup_input_hook(args)
        result = forward(*args, **kwargs)
        for hook_id, hook in itertools.chain(_global_forward_hooks.items(),
                                             self._forward_hooks.items()):
            if (hook_id in self._forward_hooks_with_kwargs
                    or hook_id in _global_forward_hooks_with_kwargs):
                out = hook(self, args, kwargs, result)
            else:
                out = hook(self, args, result)
            if out is not None:
                result = out
        if bw is not None:
            result = bw.setup_output_hook(result)
        legacy = _legacy_backward_hooks(self)
        if legacy:
            _attach_legacy_backward_hooks(self, legacy, args, result)
        return result

    # -- repr -------------------------------------------------------------------------------------

    def extra_repr(self) -> str:
        """Extra text shown inside the module's repr, e.g. ``in_features=2``."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for key, module in self._modules.items():
            lines.append("(" + key + "): " + _addindent(repr(module), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _with_module(hook, module, *args):
    return hook(module, *args)


# NOTE [ Legacy module backward hooks ]: the hooks of ``register_backward_hook`` run as hooks of
# the autograd node that made the module's first output tensor (as PyTorch's do), so they see
# that one node's input and output gradients: for a module of several ops, ``grad_input`` is
# only the last op's. Each call registers them on the new node, and a FutureWarning says when
# the graph shows the hook will miss gradients (PyTorch's four cases, with its words).

def _full_backward_hooks(module):
    """The full backward hooks that apply to ``module``: the global ones when they are full,
    its own when they are."""
    hooks = []
    if _global_is_full_backward_hook is True:
        hooks += _global_backward_hooks.values()
    if module._is_full_backward_hook is True:
        hooks += module._backward_hooks.values()
    return hooks


def _legacy_backward_hooks(module):
    """The legacy (``register_backward_hook``) hooks that apply to ``module``, global ones
    first (NOTE [ Legacy module backward hooks ])."""
    hooks = []
    if _global_is_full_backward_hook is False:
        hooks += _global_backward_hooks.values()
    if module._is_full_backward_hook is False:
        hooks += module._backward_hooks.values()
    return hooks


def _attach_legacy_backward_hooks(module, hooks, args, result):
    var = result
    while not isinstance(var, Tensor):
        if isinstance(var, dict):
            var = next(v for v in var.values() if isinstance(v, Tensor))
        else:
            var = var[0]
    grad_fn = var.grad_fn
    if grad_fn is None:
        return
    for hook in hooks:
        grad_fn.register_hook(functools.partial(_with_module, hook, module))
    _warn_legacy_backward_hook(args, result, grad_fn)


# the warnings point at the module's call: past _attach_legacy_backward_hooks, _call_with_hooks
# and _call_impl
_SKIP = 4


def _warn_legacy_backward_hook(inputs, result, grad_fn):
    """See NOTE [ Legacy module backward hooks ]."""
    from ..._settings import warn_at_caller

    full = " Please use register_full_backward_hook to get the documented behavior."
    if isinstance(result, Tensor):
        result = (result,)
    elif not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
        return warn_at_caller(
            "Using non-full backward hooks on a Module that does not return a single Tensor or "
            "a tuple of Tensors is deprecated and will be removed in future versions. This "
            "hook will be missing some of the grad_output." + full, FutureWarning, skip=_SKIP)
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    elif not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
        return warn_at_caller(
            "Using non-full backward hooks on a Module that does not take as input a single "
            "Tensor or a tuple of Tensors is deprecated and will be removed in future versions. "
            "This hook will be missing some of the grad_input." + full, FutureWarning, skip=_SKIP)
    out_fns = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_fns or (len(out_fns) == 1 and grad_fn not in out_fns):
        warn_at_caller(
            "Using a non-full backward hook when outputs are nested in python data structure is "
            "deprecated and will be removed in future versions. This hook will be missing some "
            "grad_output.", FutureWarning, skip=_SKIP)
    elif len(out_fns) > 1:
        warn_at_caller(
            "Using a non-full backward hook when outputs are generated by different autograd "
            "Nodes is deprecated and will be removed in future versions. This hook will be "
            "missing some grad_output." + full, FutureWarning, skip=_SKIP)
    elif {i.grad_fn for i in inputs if i.grad_fn is not None} != \
            {edge[0] for edge in grad_fn.next_functions}:
        warn_at_caller(
            "Using a non-full backward hook when the forward contains multiple autograd Nodes is "
            "deprecated and will be removed in future versions. This hook will be missing some "
            "grad_input." + full, FutureWarning, skip=_SKIP)


def _check_name(name, what):
    if not isinstance(name, str):
        raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{what} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{what} name can\'t be empty string ""')
