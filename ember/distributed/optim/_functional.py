"""Functional optimizers: an optimizer stepped with gradients passed in, not read from
``.grad`` (``torch.distributed.optim.functional_*``); DDP's and ZeRO's overlapped updates
and ``as_functional_optim`` use them.

Each ``_FunctionalX`` runs ember's ``optim.X`` with one optimizer per parameter: these
optimizers update each parameter from its own state only, so that equals one optimizer
over all of them, and ``step_param`` can step one parameter at a time with the same state.
"""

from __future__ import annotations

__all__: list = []


class _FunctionalOptimizer:
    """Base of the functional optimizers: ``step(gradients)`` and ``step_param(p, g)``."""

    _optim_name = ""

    def __init__(self, params, *args, _allow_empty_param_list: bool = False, **kwargs):
        params = list(params)
        if not params and not _allow_empty_param_list:
            raise ValueError("optimizer got an empty parameter list")
        for flag in ("foreach", "fused"):
            if kwargs.get(flag) is False:
                kwargs.pop(flag)
        self._args, self._kwargs = args, kwargs
        self.defaults = dict(kwargs)
        self.param_group = {"params": params}
        self._per_param: dict = {}

    def _optimizer(self, param):
        import ember

        opt = self._per_param.get(id(param))
        if opt is None:
            cls = getattr(ember.optim, self._optim_name)
            opt = self._per_param[id(param)] = cls([param], *self._args, **self._kwargs)
        return opt

    @property
    def state(self) -> dict:
        """Each stepped parameter's optimizer state, by parameter."""
        return {p: opt.state[p] for opt in self._per_param.values()
                for p in opt.param_groups[0]["params"] if p in opt.state}

    def step_param(self, param, grad) -> None:
        """Update one parameter with ``grad`` (None: leave it).

        Args:
            param (Tensor): the parameter.
            grad (Tensor or None): its gradient.
        """
        if grad is None:
            return
        import ember

        opt = self._optimizer(param)
        held = param.grad
        try:
            param.grad = grad
            with ember.no_grad():
                opt.step()
        finally:
            param.grad = held

    def step(self, gradients: list) -> None:
        """Update every parameter of ``param_group`` with its gradient (None: leave it).

        Args:
            gradients (list[Tensor or None]): one per parameter, in order.

        Raises:
            ValueError: not one gradient per parameter.
        """
        params = self.param_group["params"]
        if len(params) != len(gradients):
            raise ValueError("the gradients passed in does not equal to the size of the "
                             f"parameters!Params length: {len(params)}. Gradients length: "
                             f"{len(gradients)}")
        for p, g in zip(params, gradients):
            self.step_param(p, g)


def functional_class(optim_name: str, module: str):
    """The ``_Functional<optim_name>`` class, documented, living in ``module``."""
    cls = type(f"_Functional{optim_name}", (_FunctionalOptimizer,), {
        "_optim_name": optim_name, "__module__": module,
        "__doc__": f"""``ember.optim.{optim_name}`` stepped with gradients passed in.

    Args:
        params (list[Tensor]): the parameters.
        *args, **kwargs: ``ember.optim.{optim_name}``'s hyper-parameters.
        _allow_empty_param_list (bool): allow no parameters (then use ``step_param``).

    Example::

        >>> from {module} import _Functional{optim_name}
        >>> p = ember.ones(2)
        >>> _Functional{optim_name}([p]).step([ember.ones(2)])
        >>> bool((p != 1).all())
        True
    """})
    return cls
