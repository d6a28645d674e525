"""``_NamedOptimizer`` (``torch.distributed.optim._NamedOptimizer``): an optimizer whose
``state_dict`` is keyed by the parameters' fully qualified names instead of positions.

NOTE [ Named optimizer state ]
A plain optimizer numbers its parameters in the order of its groups; a checkpoint made
that way only loads into an optimizer built in the same order. Here every position is
mapped to the parameter's name (``ordered_param_keys``), so ``state_dict()["state"]`` is
``{name: state}`` and each group lists its names, sorted. ``load_state_dict`` goes the
other way and copies into the *existing* state tensors in place, so the state must exist
first (after a step, or ``init_state()``, which steps once with zero gradients). Groups
are matched by their set of names, not by position.
"""

from __future__ import annotations

import copy
import warnings

from ...optim.optimizer import Optimizer

__all__: list = []


def _group_key(names) -> str:
    return "/".join(sorted(names))


class _NamedOptimizer(Optimizer):
    """Wrap ``optimizer_class`` so its state dict is keyed by parameter names (NOTE
    [ Named optimizer state ]).

    Args:
        named_parameters: a mapping (or iterable of pairs) from name to parameter, e.g.
            ``model.named_parameters()``.
        optimizer_class: the optimizer to build (e.g. ``ember.optim.SGD``).
        param_groups: groups to build it with instead of all the named parameters (each
            a dict with ``"params"``); every parameter must be among the named ones.
        module: the module the parameters belong to (kept for reference).
        *args, **kwargs: the optimizer's arguments.

    Raises:
        ValueError: a grouped parameter is not among ``named_parameters``.
        TypeError: a group holds something other than tensors.

    Example::

        >>> net = ember.nn.Linear(2, 1)
        >>> opt = _NamedOptimizer(net.named_parameters(), ember.optim.SGD, lr=0.1)
        >>> opt.init_state()
        >>> sorted(opt.state_dict()["param_groups"][0]["params"])
        ['bias', 'weight']
    """

    def __init__(self, named_parameters, optimizer_class, param_groups=None, module=None,
                 *args, **kwargs):
        self.param_groups = param_groups
        self._param_groups_check()
        self.named_parameters = dict(named_parameters)
        self._optimizer = optimizer_class(
            self.named_parameters.values() if param_groups is None else param_groups,
            *args, **kwargs)
        self.module = module
        if param_groups is None:
            self.ordered_param_keys = list(self.named_parameters)
        else:
            warnings.warn("Since we pass in param_groups, we will use param_groups to "
                          "initialize the optimizer, not all parameters of the module.",
                          stacklevel=2)
            name_of = {id(p): k for k, p in self.named_parameters.items()}
            self.ordered_param_keys = []
            for group in param_groups:
                for p in group["params"]:
                    if id(p) not in name_of:
                        raise ValueError(f"Expect param name {p} found in param group but is "
                                         "missing.")
                    self.ordered_param_keys.append(name_of[id(p)])
        self.param_groups = self._optimizer.param_groups

    def _param_groups_check(self):
        from ... import Tensor, typename

        if self.param_groups is None:
            return
        for group in self.param_groups:
            if not isinstance(group, dict):
                raise AssertionError("param group must be a dict")
            if "params" not in group:
                raise AssertionError("param group must contain key params")
            params = group["params"]
            params = [params] if isinstance(params, Tensor) else list(params)
            for p in params:
                if not isinstance(p, Tensor):
                    raise TypeError("optimizer can only optimize Tensors, but one of the "
                                    "params is " + typename(p))
            group["params"] = params

    @property
    def state(self):
        """The wrapped optimizer's per-parameter state."""
        return self._optimizer.state

    def state_dict(self) -> dict:
        """The wrapped optimizer's state dict with names in place of positions.

        Returns:
            dict with ``"state"`` (``{name: state}``) and ``"param_groups"`` (each group's
            sorted ``"params"`` names and copies of its hyper-parameters).
        """
        sd = self._optimizer.state_dict()
        state = {self.ordered_param_keys[k]: v for k, v in sd["state"].items()}
        groups = []
        for group in sd["param_groups"]:
            out = {"params": sorted(self.ordered_param_keys[k] for k in group["params"])}
            for k, v in group.items():
                if k != "params":
                    out[k] = copy.deepcopy(v)
            groups.append(out)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict) -> None:
        """Load a named state dict (from ``state_dict()``) into the existing state, in
        place; names or groups absent from it are left alone.

        Args:
            state_dict (dict): ``{"state": {name: ...}, "param_groups": [...]}``.

        Raises:
            ValueError: the optimizer has no state yet, or a parameter's state or a
                group's keys do not match.
        """
        from ... import Tensor

        current = self._optimizer.state_dict()
        src_state, new_state = state_dict["state"], current["state"]
        if len(new_state) == 0:
            raise ValueError("Expects the optim to be initialized before load but found not "
                             "initialized.")
        for idx, name in enumerate(self.ordered_param_keys):
            if name not in src_state:
                continue
            src = src_state[name]
            if len(src) != len(new_state[idx]):
                raise ValueError(f"Expects equal length as {len(new_state[idx])} for parameter "
                                 f"{name} but found: {len(src)}")
            for key, value in new_state[idx].items():
                if key not in src:
                    raise ValueError(f"Expects state {key} for parameter {name} but not "
                                     "found.")
                if isinstance(value, Tensor):
                    if not isinstance(src[key], Tensor):
                        raise AssertionError(f"state {key} of {name} should be a tensor")
                    value.detach().copy_(src[key])
                else:
                    new_state[idx][key] = copy.deepcopy(src[key])
        src_groups = {_group_key(g["params"]): g for g in state_dict["param_groups"]}
        for group in current["param_groups"]:
            key = _group_key(self.ordered_param_keys[k] for k in group["params"])
            src = src_groups.get(key)
            if src is None:
                continue
            if len(src) != len(group):
                raise ValueError(f"Expects equal param_group size as {len(group)} for group "
                                 f"{key} but found {len(src)}.")
            for k in src:
                if k not in group:
                    raise ValueError(f"Expects group key {k} to be in group {key} in "
                                     "`state_dict` but is missing.")
                if k != "params":
                    group[k] = copy.deepcopy(src[k])
        self._optimizer.load_state_dict(current)
        # the wrapped optimizer made new group dicts: expose them (PyTorch keeps the old)
        self.param_groups = self._optimizer.param_groups

    def add_param_group(self, param_group) -> None:
        """Add a group of named parameters to the wrapped optimizer.

        Args:
            param_group (dict): ``params`` (parameters among ``named_parameters``) and
                optional hyper-parameters.

        Raises:
            ValueError: a parameter is not among ``named_parameters``.
        """
        from ... import Tensor

        if not isinstance(param_group, dict):
            raise AssertionError("param group must be a dict")
        params = param_group["params"]
        param_group["params"] = [params] if isinstance(params, Tensor) else list(params)
        name_of = {id(p): k for k, p in self.named_parameters.items()}
        for p in param_group["params"]:
            if id(p) not in name_of:
                raise ValueError("some parameters are not in the module")
            self.ordered_param_keys.append(name_of[id(p)])
        self._optimizer.add_param_group(param_group)
        self.param_groups = self._optimizer.param_groups

    def init_state(self) -> None:
        """Create the optimizer state with one step on zero gradients (so a checkpoint
        can be loaded in place)."""
        from ... import zeros_like

        for p in self.named_parameters.values():
            if p.requires_grad:
                p.grad = zeros_like(p)
        self.step(closure=None)


def _step(self, closure=None):
    """One step of the wrapped optimizer.

    Args:
        closure: re-evaluates the model and returns the loss (optional).

    Returns:
        the closure's loss, or None.
    """
    return self._optimizer.step(closure=closure)


# set after the class is made, so ``Optimizer.__init_subclass__`` does not wrap it: the
# step hooks run once, around the wrapped optimizer's step
_step.__name__, _step.__qualname__ = "step", "_NamedOptimizer.step"
_NamedOptimizer.step = _step
