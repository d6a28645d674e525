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
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy

from .._core.tensor import Tensor
from ..autograd.grad_mode import no_grad

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()

_global_pre_hooks: OrderedDict = OrderedDict()
_global_post_hooks: OrderedDict = OrderedDict()
_hook_ids = itertools.count()


class _Handle:
    def __init__(self, d):
        self._d = d
        self.id = next(_hook_ids)

    def remove(self):
        self._d.pop(self.id, None)


def register_optimizer_step_pre_hook(hook):
    """``hook(optimizer, args, kwargs)`` runs before every optimizer's step."""
    h = _Handle(_global_pre_hooks)
    _global_pre_hooks[h.id] = hook
    return h


def register_optimizer_step_post_hook(hook):
    """``hook(optimizer, args, kwargs)`` runs after every optimizer's step."""
    h = _Handle(_global_post_hooks)
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
        params: an iterable of tensors, or of dicts defining parameter groups (each with a
            ``params`` entry and any per-group hyper-parameters).
        defaults: the hyper-parameters used by groups that do not set them.
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
                f"dicts, but got {type(params).__name__}")
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
        """Add a group of parameters (a dict with ``params``) with its own hyper-parameters."""
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
        """Reset the gradients of all optimized parameters (to None by default)."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g = g.detach()
                        p.grad = g
                    g.requires_grad_(False)
                    g.zero_()

    def step(self, closure=None):
        raise NotImplementedError(f"{type(self).__name__} must implement step()")

    # -- hooks ------------------------------------------------------------------------------------

    def register_step_pre_hook(self, hook):
        h = _Handle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[h.id] = hook
        return h

    def register_step_post_hook(self, hook):
        h = _Handle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[h.id] = hook
        return h

    def register_state_dict_pre_hook(self, hook, prepend=False):
        h = _Handle(self._optimizer_state_dict_pre_hooks)
        self._optimizer_state_dict_pre_hooks[h.id] = hook
        if prepend:
            self._optimizer_state_dict_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_state_dict_post_hook(self, hook, prepend=False):
        h = _Handle(self._optimizer_state_dict_post_hooks)
        self._optimizer_state_dict_post_hooks[h.id] = hook
        if prepend:
            self._optimizer_state_dict_post_hooks.move_to_end(h.id, last=False)
        return h

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        h = _Handle(self._optimizer_load_state_dict_pre_hooks)
        self._optimizer_load_state_dict_pre_hooks[h.id] = hook
        if prepend:
            self._optimizer_load_state_dict_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        h = _Handle(self._optimizer_load_state_dict_post_hooks)
        self._optimizer_load_state_dict_post_hooks[h.id] = hook
        if prepend:
            self._optimizer_load_state_dict_post_hooks.move_to_end(h.id, last=False)
        return h

    @staticmethod
    def _with_hooks(step):
        """Wrap a subclass's ``step`` so global and per-optimizer step hooks run around it."""

        @functools.wraps(step)
        def wrapper(self, *args, **kwargs):
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
        """``{"state": {index: per-parameter state}, "param_groups": [...]}`` (PyTorch's
        format: parameters replaced by their index in group order)."""
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
        """Load a state_dict made by ``state_dict()`` (here or in PyTorch)."""
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
            new_groups.append(sg)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)
