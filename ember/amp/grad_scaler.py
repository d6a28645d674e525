"""``ember.amp.GradScaler``: loss scaling for training in float16.

Small float16 gradients underflow to zero. The scaler multiplies the loss by a large factor
before ``backward`` so that the gradients stay representable, divides the gradients by it
again before the optimizer uses them (``unscale_``), skips the step when a gradient came out
inf or NaN (the factor was too large), and adapts the factor (``update``): halved after an
overflowing step, doubled after ``growth_interval`` steps in a row without one.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable
from enum import Enum

from .._core import dtype as _dt
from .._core.tensor import Tensor
from ._scaler_kernels import _amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    """Where an optimizer is in the current iteration of a ``GradScaler``.

    Example:
        >>> from ember.amp.grad_scaler import OptState
        >>> [s.name for s in OptState]
        ['READY', 'UNSCALED', 'STEPPED']
    """

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _ember():
    import ember  # deferred: ember imports this module

    return ember


def _cuda_available() -> bool:
    import sys

    cuda = sys.modules.get("ember.cuda")
    try:
        return bool(cuda is not None and cuda.is_available())
    except Exception:  # a broken CuPy install counts as no CUDA
        return False


class GradScaler:
    """Scale the loss so that float16 gradients do not underflow, and adapt the scale.

    Args:
        device (str): the device type of the gradients, ``"cuda"`` (default) or ``"cpu"``.
            ``"cuda"`` without a GPU warns and disables the scaler, as in PyTorch.
        init_scale (float): the initial scale factor.
        growth_factor (float): the factor the scale grows by after ``growth_interval``
            steps without inf/NaN gradients; must be > 1.
        backoff_factor (float): the factor the scale shrinks by after a step with inf/NaN
            gradients; must be < 1.
        growth_interval (int): how many consecutive good steps grow the scale.
        enabled (bool): False makes every method a pass-through (``scale`` returns its
            input, ``step`` just steps).

    Returns:
        The scaler.

    Example::

        >>> model = ember.nn.Linear(3, 1)
        >>> opt = ember.optim.SGD(model.parameters(), lr=0.1)
        >>> scaler = ember.amp.GradScaler("cpu", init_scale=4.0)
        >>> loss = model(ember.ones(2, 3)).sum()
        >>> scaler.scale(loss).backward()
        >>> scaler.step(opt)
        >>> scaler.update()
        >>> scaler.get_scale()
        4.0
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and not _cuda_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available. "
                          " Disabling.", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if not backoff_factor < 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # -- scaling -------------------------------------------------------------------------

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        e = _ember()
        self._scale = e.full((), float(self._init_scale), dtype=e.float32, device=dev)
        self._growth_tracker = e.full((), self._init_growth_tracker, dtype=e.int32,
                                      device=dev)

    def scale(self, outputs):
        """Multiply ``outputs`` (a tensor, or an iterable of them) by the scale factor.

        Args:
            outputs: a Tensor or a (nested) list/tuple of Tensors.

        Returns:
            The scaled outputs, of the same structure (unchanged when disabled).

        Example::

            >>> s = ember.amp.GradScaler("cpu", init_scale=8.0)
            >>> s.scale(ember.tensor(0.5))
            tensor(4.)
        """
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)

        def apply_scale(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(device=val.device)
            if isinstance(val, Iterable):
                it = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(it)
                return it
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        """Multiply every gradient of ``optimizer`` by ``inv_scale`` in place and set
        ``found_inf`` to 1 when one of them held inf or NaN; returns {device: found_inf}."""
        e = _ember()
        per_device = {}
        groups = defaultdict(list)  # (device, dtype) -> gradients: one fused pass each
        with e.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    g = param.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype is _dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    dev = g.device
                    if dev not in per_device:
                        per_device[dev] = found_inf.to(dev)
                    if g.is_sparse:
                        if not bool(e.isfinite(g.coalesce().values()).all()):
                            per_device[dev].fill_(1.0)
                        if float(inv_scale) != 1.0:
                            g.mul_(inv_scale.to(dev))
                        continue
                    groups[(dev, g.dtype)].append(g)
            # NOTE [ Fused inf checks ] in _scaler_kernels.py
            for (dev, _), grads in groups.items():
                _amp_foreach_non_finite_check_and_unscale_(grads, per_device[dev],
                                                           inv_scale.to(dev))
        return per_device

    def _check_scale_growth_tracker(self, funcname):
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) "
               "earlier in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale factor, in place (call it before
        clipping gradients; ``step`` calls it when you did not).

        Args:
            optimizer: the optimizer whose parameters' gradients are unscaled.

        Returns:
            None.

        Example::

            >>> p = ember.nn.Parameter(ember.ones(2))
            >>> opt = ember.optim.SGD([p], lr=0.1)
            >>> s = ember.amp.GradScaler("cpu", init_scale=4.0)
            >>> s.scale(p.sum()).backward()
            >>> s.unscale_(opt)
            >>> p.grad
            tensor([1., 1.])
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        state["found_inf_per_device"] = self._unscale_found_inf(optimizer)
        state["stage"] = OptState.UNSCALED

    #: whether float16 gradients may be unscaled (the sharded scaler's are)
    _allow_fp16 = False

    def _unscale_found_inf(self, optimizer) -> dict:
        """Unscale ``optimizer``'s gradients in place; ``{device: found_inf}``."""
        e = _ember()
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = e.full((), 0.0, dtype=e.float32, device=self._scale.device)
        return self._unscale_grads_(optimizer, inv_scale, found_inf, self._allow_fp16)

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale the gradients (unless ``unscale_`` did) and run ``optimizer.step`` --
        skipped when a gradient holds inf or NaN.

        Args:
            optimizer: the optimizer.
            *args, **kwargs: passed to ``optimizer.step`` (a ``closure`` is not supported).

        Returns:
            What ``optimizer.step`` returned, or None when the step was skipped.

        Example::

            >>> p = ember.nn.Parameter(ember.ones(1))
            >>> opt = ember.optim.SGD([p], lr=1.0)
            >>> s = ember.amp.GradScaler("cpu")
            >>> s.scale(p * float("inf")).sum().backward()
            >>> s.step(opt)  # skipped: the gradient is inf
            >>> p
            Parameter containing:
            tensor([1.], requires_grad=True)
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError(
                "Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Adapt the scale factor for the next iteration: times ``backoff_factor`` if any
        optimizer found inf/NaN gradients this iteration, times ``growth_factor`` after
        ``growth_interval`` good iterations in a row; or set it to ``new_scale``.

        Args:
            new_scale (float or Tensor, optional): the new scale factor.

        Returns:
            None.

        Example::

            >>> s = ember.amp.GradScaler("cpu", init_scale=4.0)
            >>> _ = s.scale(ember.ones(1))
            >>> s.update(2.0)
            >>> s.get_scale()
            2.0
        """
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor "
                          "or torch.FloatTensor with requires_grad=False.")
                if not (isinstance(new_scale, Tensor)
                        and new_scale.device.type == self._scale.device.type
                        and new_scale.numel() == 1 and not new_scale.requires_grad):
                    raise AssertionError(reason)
                self._scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [fi.to(_scale.device)
                          for st in self._per_optimizer_states.values()
                          for fi in st["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            # summed on the device, no host synchronisation (NOTE [ Fused inf checks ])
            found_inf = found_infs[0]
            for more in found_infs[1:]:
                found_inf = found_inf + more
            _amp_update_scale_(_scale, _growth_tracker, found_inf, self._growth_factor,
                               self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # -- accessors -----------------------------------------------------------------------

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale factor (1.0 when disabled).

        Returns:
            float.

        Example::

            >>> ember.amp.GradScaler("cpu").get_scale()
            65536.0
        """
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self) -> float:
        """The growth factor.

        Returns:
            float.

        Example::

            >>> ember.amp.GradScaler("cpu").get_growth_factor()
            2.0
        """
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the growth factor.

        Args:
            new_factor (float): the new growth factor.

        Returns:
            None.

        Example::

            >>> s = ember.amp.GradScaler("cpu")
            >>> s.set_growth_factor(4.0)
        """
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The backoff factor.

        Returns:
            float.

        Example::

            >>> ember.amp.GradScaler("cpu").get_backoff_factor()
            0.5
        """
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the backoff factor.

        Args:
            new_factor (float): the new backoff factor.

        Returns:
            None.

        Example::

            >>> ember.amp.GradScaler("cpu").set_backoff_factor(0.25)
        """
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """The growth interval.

        Returns:
            int.

        Example::

            >>> ember.amp.GradScaler("cpu").get_growth_interval()
            2000
        """
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the growth interval.

        Args:
            new_interval (int): the new growth interval.

        Returns:
            None.

        Example::

            >>> ember.amp.GradScaler("cpu").set_growth_interval(100)
        """
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        """Whether the scaler is enabled.

        Returns:
            bool.

        Example::

            >>> ember.amp.GradScaler("cpu", enabled=False).is_enabled()
            False
        """
        return self._enabled

    def state_dict(self) -> dict:
        """The scaler's state: scale, growth and backoff factors, growth interval and the
        count of good steps (empty when disabled).

        Returns:
            dict.

        Example::

            >>> ember.amp.GradScaler("cpu").state_dict()["scale"]
            65536.0
        """
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the state saved by ``state_dict``.

        Args:
            state_dict (dict): a ``state_dict()`` of an enabled scaler.

        Returns:
            None.

        Example::

            >>> a = ember.amp.GradScaler("cpu", init_scale=8.0)
            >>> b = ember.amp.GradScaler("cpu")
            >>> b.load_state_dict(a.state_dict())
            >>> b.get_scale()
            8.0
        """
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError(
                    "A GradScaler instance may only be pickled at the beginning of an "
                    "iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer):
        e = _ember()
        _scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = e.full((), 1.0, dtype=e.float32, device=_scale.device)
        found_inf = e.full((), 0.0, dtype=e.float32, device=_scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = \
            self._unscale_grads_(optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer):
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
