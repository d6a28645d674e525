"""``Optimizer``: parameter groups, per-parameter state, state_dict and hooks.

Each algorithm subclasses ``Optimizer``, validates its hyper-parameters, and in ``step``
gathers the tensors of each group and calls its functional update (``ember.optim.sgd.sgd``,
``ember.optim.adam.adam``...), which holds the math and is tested on its own.

The state_dict format is PyTorch's: ``{"state": {index: {...}}, "param_groups": [{...,
"params": [indices]}]}`` with parameters numbered in group order, so checkpoints move
between ember and PyTorch.
"""

from __future__ import annotations

import functools
import itertools
import sys
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy

from .._core.tensor import Tensor
from ..autograd._base import RemovableHandle
from ..autograd._engine import zero_grad_in_place
from ..autograd.grad_mode import no_grad

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()

_global_pre_hooks: OrderedDict = OrderedDict()
_global_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """Register ``hook(optimizer, args, kwargs)`` to run before every optimizer's step.

    Args:
        hook (callable): may return ``(new_args, new_kwargs)`` for the step.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> handle = register_optimizer_step_pre_hook(lambda opt, args, kwargs: None)
        >>> handle.remove()
    """
    h = RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[h.id] = hook
    return h


def register_optimizer_step_post_hook(hook):
    """Register ``hook(optimizer, args, kwargs)`` to run after every optimizer's step.

    Args:
        hook (callable): its return value is ignored.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> handle = register_optimizer_step_post_hook(lambda opt, args, kwargs: None)
        >>> handle.remove()
    """
    h = RemovableHandle(_global_post_hooks)
    _global_post_hooks[h.id] = hook
    return h


def _use_grad(step):
    """Steps run without recording gradients, whatever the caller's grad mode."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with no_grad():
            return step(self, *args, **kwargs)

    return wrapper


class Optimizer:
    """Base class of all optimizers.

    Args:
        params: an iterable of tensors, of ``(name, tensor)`` pairs (``named_parameters()``;
            the names are kept as ``param_names``), or of dicts defining parameter groups
            (each with a ``params`` entry and any per-group hyper-parameters).
        defaults: the hyper-parameters used by groups that do not set them.

    Returns:
        The optimizer; subclasses implement ``step``.

    Example:
        >>> import ember
        >>> class Descent(ember.optim.Optimizer):
        ...     def __init__(self, params, lr=0.1):
        ...         super().__init__(params, dict(lr=lr))
        ...     def step(self, closure=None):
        ...         for group in self.param_groups:
        ...             for p in group["params"]:
        ...                 if p.grad is not None:
        ...                     p.add_(p.grad, alpha=-group["lr"])
        >>> w = ember.nn.Parameter(ember.ones(2))
        >>> opt = Descent([w])
        >>> w.grad = ember.ones(2)
        >>> opt.step()
        >>> w
        Parameter containing:
        tensor([0.9000, 0.9000], requires_grad=True)
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {params.type()}")  # (torch.typename's 'torch.FloatTensor')
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            self.__dict__.setdefault(name, OrderedDict())

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += "\n"
            text += f"Parameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    def add_param_group(self, param_group):
        """Add a group of parameters with its own hyper-parameters (missing ones come from
        the defaults); useful for unfreezing layers during training.

        Args:
            param_group (dict): ``{"params": [...], **hyper-parameters}``.

        Returns:
            None.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1)
            >>> opt.add_param_group({"params": [ember.nn.Parameter(ember.ones(1))], "lr": 0.01})
            >>> [g["lr"] for g in opt.param_groups]
            [0.1, 0.01]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list "
                "instead.")
        else:
            param_group["params"] = list(params)
        # named_parameters() pairs: the names ride along in the group as "param_names"
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p
                                 for p in param_group["params"]]
        if names:
            if len(names) != len(param_group["params"]):
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")
            param_group["param_names"] = names
        if self.param_groups and (("param_names" in param_group)
                                  != ("param_names" in self.param_groups[0])):
            current = "with names" if "param_names" in param_group else "without names"
            raise ValueError("all optimizer param groups should be with/without names. "
                             f"cannot add param group {current} to the optimizer")
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(p).__name__}")
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or
                                                                       p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization "
                    f"parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, "
                "this will cause an error", stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimized parameters.

        Args:
            set_to_none (bool): set ``.grad`` to None (True, the default) or zero it.

        Returns:
            None.

        Example:
            >>> import ember
            >>> w = ember.nn.Parameter(ember.zeros(1))
            >>> w.grad = ember.ones(1)
            >>> ember.optim.SGD([w], lr=0.1).zero_grad()
            >>> w.grad is None
            True
        """
        recorder = sys.modules.get("ember.profiler._recorder")
        session = recorder.current_session() if recorder is not None else None
        if session is not None and session.active:
            # PyTorch's profiler shows the reset as its own event
            ev = session.begin(f"Optimizer.zero_grad#{type(self).__name__}.zero_grad")
            try:
                self._zero_grads(set_to_none)
            finally:
                session.end(ev)
            return
        self._zero_grads(set_to_none)

    def _zero_grads(self, set_to_none):
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                elif not zero_grad_in_place(g):  # NOTE [ Resetting gradients in place ]
                    # (the same tensor stays ``.grad``, detached in place, as in PyTorch)
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure=None):
        raise NotImplementedError(f"{type(self).__name__} must implement step()")

    # -- hooks ------------------------------------------------------------------------------------

    def register_step_pre_hook(self, hook):
        """Register ``hook(optimizer, args, kwargs)``, to run before this optimizer's ``step``.

        Args:
            hook (callable): the hook; may return ``(new_args, new_kwargs)``.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1)
            >>> handle = opt.register_step_pre_hook(lambda o, args, kwargs: None)
            >>> handle.remove()
        """
        h = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[h.id] = hook
        return h

    def register_step_post_hook(self, hook):
        """Register ``hook(optimizer, args, kwargs)``, to run after this optimizer's ``step``.

        Args:
            hook (callable): the hook; its return value is ignored.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1)
            >>> handle = opt.register_step_post_hook(lambda o, args, kwargs: None)
            >>> handle.remove()
        """
        h = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[h.id] = hook
        return h

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """Register ``hook(optimizer)``, to run before ``state_dict()`` builds its result.

        Args:
            hook (callable): the hook; its return value is ignored.
            prepend (bool): run it before the hooks already registered. Default: False.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1)
            >>> handle = opt.register_state_dict_pre_hook(lambda o: None, prepend=False)
            >>> handle.remove()
        """
        h = RemovableHandle(self._optimizer_state_dict_pre_hooks)
        self._optimizer_state_dict_pre_hooks[h.id] = hook
        if prepend:
            self._optimizer_state_dict_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_state_dict_post_hook(self, hook, prepend=False):
        """Register ``hook(optimizer, state_dict)``, to run on ``state_dict()``'s result.

        Args:
            hook (callable): the hook; may return a replacement dict.
            prepend (bool): run it before the hooks already registered. Default: False.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1)
            >>> handle = opt.register_state_dict_post_hook(lambda o, sd: None, prepend=False)
            >>> handle.remove()
        """
        h = RemovableHandle(self._optimizer_state_dict_post_hooks)
        self._optimizer_state_dict_post_hooks[h.id] = hook
        if prepend:
            self._optimizer_state_dict_post_hooks.move_to_end(h.id, last=False)
        return h

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """Register ``hook(optimizer, state_dict)``, to run before ``load_state_dict`` loads.

        Args:
            hook (callable): the hook; may return a replacement dict to load.
            prepend (bool): run it before the hooks already registered. Default: False.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1)
            >>> handle = opt.register_load_state_dict_pre_hook(lambda o, sd: None, prepend=False)
            >>> handle.remove()
        """
        h = RemovableHandle(self._optimizer_load_state_dict_pre_hooks)
        self._optimizer_load_state_dict_pre_hooks[h.id] = hook
        if prepend:
            self._optimizer_load_state_dict_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """Register ``hook(optimizer)``, to run after ``load_state_dict`` has loaded.

        Args:
            hook (callable): the hook; its return value is ignored.
            prepend (bool): run it before the hooks already registered. Default: False.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1)
            >>> handle = opt.register_load_state_dict_post_hook(lambda o: None, prepend=False)
            >>> handle.remove()
        """
        h = RemovableHandle(self._optimizer_load_state_dict_post_hooks)
        self._optimizer_load_state_dict_post_hooks[h.id] = hook
        if prepend:
            self._optimizer_load_state_dict_post_hooks.move_to_end(h.id, last=False)
        return h

    @staticmethod
    def _with_hooks(step):
        """Wrap a subclass's ``step`` so global and per-optimizer step hooks run around it."""

        @functools.wraps(step)
        def wrapper(self, *args, **kwargs):
            if not hasattr(self, "_optimizer_step_pre_hooks"):
                # a wrapper class that never ran Optimizer.__init__ (accelerate's
                # AcceleratedOptimizer): PyTorch adds hooks to a step only in that __init__
                return step(self, *args, **kwargs)
            for hook in itertools.chain(_global_pre_hooks.values(),
                                        self._optimizer_step_pre_hooks.values()):
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            f"{hook} must return None or a tuple of (new_args, new_kwargs), "
                            f"but got {result}.")
                    args, kwargs = result
            out = step(self, *args, **kwargs)
            for hook in itertools.chain(self._optimizer_step_post_hooks.values(),
                                        _global_post_hooks.values()):
                hook(self, args, kwargs)
            return out

        return wrapper

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = Optimizer._with_hooks(_use_grad(cls.__dict__["step"]))

    # -- state_dict -------------------------------------------------------------------------------

    def state_dict(self):
        """The optimizer's state as ``{"state": {index: per-parameter state},
        "param_groups": [...]}``: PyTorch's format, parameters replaced by their index in
        group order, so checkpoints move between ember and PyTorch.

        Returns:
            dict (its tensors are the live state, not copies).

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1)
            >>> opt.state_dict()["param_groups"][0]["params"]
            [0]
        """
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index = {}
        counter = 0

        def pack_group(group):
            nonlocal counter
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                if id(p) not in index:
                    index[id(p)] = counter
                    counter += 1
                ids.append(index[id(p)])
            packed["params"] = ids
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {index[id(p)]: v for p, v in self.state.items()}
        sd = {"state": packed_state, "param_groups": param_groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, sd)
            if result is not None:
                sd = result
        return sd

    @staticmethod
    def _process_value_according_to_param_policy(param, value, key):
        if key == "step":
            return value
        if param.is_floating_point() and value.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict):
        """Load a state_dict made by ``state_dict()`` (here or in PyTorch): per-parameter
        state is matched by position and cast to each parameter's dtype and device.

        Args:
            state_dict (dict): as returned by ``state_dict()``.

        Returns:
            None.

        Example:
            >>> import ember
            >>> w = ember.nn.Parameter(ember.zeros(1))
            >>> opt = ember.optim.SGD([w], lr=0.1)
            >>> opt.load_state_dict({"state": {}, "param_groups": [
            ...     dict(opt.state_dict()["param_groups"][0], lr=0.5)]})
            >>> opt.param_groups[0]["lr"]
            0.5
        """
        state_dict = dict(state_dict)
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for g, sg in zip(groups, saved_groups):
            if len(g["params"]) != len(sg["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size "
                    "of optimizer's group")
        id_map = dict(zip(itertools.chain.from_iterable(g["params"] for g in saved_groups),
                          itertools.chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, key)
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v
        new_groups = []
        for g, sg in zip(groups, saved_groups):
            sg["params"] = g["params"]
            if "param_names" in g and "param_names" not in sg:
                sg["param_names"] = g["param_names"]
            new_groups.append(sg)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)


# ------------------------------------------------------------------------------------------------
# helpers optimizers written outside ember import from this module (timm's, for one)

#: what ``params`` may be: tensors, parameter-group dicts, or (name, tensor) pairs
ParamsT = "Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]"


def _foreach_types():
    from ..nn.parameter import Parameter

    return [Tensor, Parameter]


def _get_foreach_kernels_supported_devices() -> list:
    """Device types with multi-tensor (foreach) kernels: the accelerators (on the CPU the
    per-tensor loop is as fast).

    Returns:
        list of str.

    Example::

        >>> "cpu" in _get_foreach_kernels_supported_devices()
        False
    """
    return ["cuda", "xpu", "privateuseone"]


def _get_fused_kernels_supported_devices() -> list:
    """Device types with fused optimizer kernels (``fused=True``).

    Returns:
        list of str.

    Example::

        >>> "cpu" in _get_fused_kernels_supported_devices()
        True
    """
    return ["mps", "cuda", "xpu", "hpu", "cpu", "privateuseone"]


def _get_capturable_supported_devices(supports_xla: bool = True) -> list:
    """Device types whose optimizer steps may run inside a captured graph
    (``capturable=True``).

    Args:
        supports_xla (bool): include ``"xla"``. Default: True.

    Returns:
        list of str.

    Example::

        >>> _get_capturable_supported_devices(supports_xla=False)
        ['cuda', 'xpu', 'hpu', 'privateuseone']
    """
    devices = ["cuda", "xpu", "hpu", "privateuseone"]
    return devices + ["xla"] if supports_xla else devices


def _default_to_fused_or_foreach(params, differentiable: bool, use_fused: bool = False):
    """Whether a step over ``params`` should use the fused kernel and whether the foreach
    one, when the user chose neither: fused only when asked and every tensor is a floating
    one on a device with fused kernels; otherwise foreach when every tensor is on a device
    with foreach kernels. A differentiable step uses neither.

    Args:
        params (list of Tensors or None): the tensors the step updates.
        differentiable (bool): whether the step is recorded by autograd.
        use_fused (bool): whether fused kernels are wanted. Default: False.

    Returns:
        tuple of bool: ``(fused, foreach)``.

    Example::

        >>> _default_to_fused_or_foreach([ember.zeros(2)], False)
        (False, False)
    """
    if differentiable:
        return False, False
    types = _foreach_types()
    fused_devices = _get_fused_kernels_supported_devices()
    foreach_devices = _get_foreach_kernels_supported_devices()
    fused = use_fused and all(
        p is None or (type(p) in types and p.device.type in fused_devices
                      and p.is_floating_point()) for p in params)
    foreach = not fused and all(
        p is None or (type(p) in types and p.device.type in foreach_devices) for p in params)
    return fused, foreach


def _use_grad_for_differentiable(func):
    """Decorate an optimizer's ``step``: run it with gradient recording set to the
    optimizer's ``differentiable`` default (off unless asked), restoring the mode after.

    Args:
        func (callable): ``step(self, ...)``.

    Returns:
        callable: the wrapped step.

    Example::

        >>> class Plain(ember.optim.Optimizer):
        ...     @_use_grad_for_differentiable
        ...     def step(self, closure=None):
        ...         return ember.is_grad_enabled()
        >>> Plain([ember.zeros(1, requires_grad=True)], {"differentiable": False}).step()
        False
    """
    from ..autograd import grad_mode

    @functools.wraps(func)
    def step(self, *args, **kwargs):
        before = grad_mode.is_grad_enabled()
        try:
            grad_mode.set_grad_enabled(bool(self.defaults.get("differentiable", False)))
            return func(self, *args, **kwargs)
        finally:
            grad_mode.set_grad_enabled(before)

    return step


def _get_value(x):
    """A step count or hyperparameter as a Python number (a one-element tensor's item).

    Args:
        x (Tensor or number): the value.

    Returns:
        number.

    Example::

        >>> _get_value(ember.tensor(3.0))
        3.0
    """
    return x.item() if isinstance(x, Tensor) else x


def _get_scalar_dtype(is_fused=None):
    """The dtype of an optimizer's scalar state (step counts): float32 for fused kernels,
    else float64 when that is the default dtype, else float32.

    Args:
        is_fused (bool, optional): whether the fused kernel will read it.

    Returns:
        ember.dtype.

    Example::

        >>> _get_scalar_dtype()
        ember.float32
    """
    from .._core import dtype as _dt

    if is_fused:
        return _dt.float32
    return _dt.float64 if _dt.get_default_dtype() is _dt.float64 else _dt.float32


def _to_scalar(x):
    """A one-element hyperparameter tensor as a 0-dim tensor (numbers unchanged).

    Args:
        x (number or Tensor): the hyperparameter.

    Returns:
        number or Tensor.

    Example::

        >>> _to_scalar(ember.tensor([0.1])).shape
        ember.Size([])
    """
    if isinstance(x, Tensor) and x.dim() != 0:
        return x.squeeze()
    return x


def _stack_if_compiling(x):
    """``x`` unchanged (ember's compile runs eagerly, so values are never stacked for a
    graph).

    Args:
        x (list): the values.

    Returns:
        list: ``x``.

    Example::

        >>> _stack_if_compiling([1, 2])
        [1, 2]
    """
    return x
