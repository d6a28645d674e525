"""Anomaly detection: forward tracebacks for failing backward nodes, and NaN checks.

While enabled, every node records the Python stack of the forward call that created it.
When a node's backward raises, the engine warns with that traceback and re-raises; with
``check_nan`` it raises as soon as a node returns a gradient containing NaN.
"""

from __future__ import annotations

import warnings

_enabled = False
_check_nan = True


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (``ember.autograd.detect_anomaly`` or
    ``set_detect_anomaly(True)``).

    Returns:
        bool: True while it is on.

    Example:
        >>> with ember.autograd.detect_anomaly():
        ...     print(ember.is_anomaly_enabled())
        True
    """
    return _enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection, when on, also checks backward results for NaN.

    Returns:
        bool: the ``check_nan`` flag of the active ``detect_anomaly`` (True by default).

    Example:
        >>> ember.is_anomaly_check_nan_enabled()
        True
    """
    return _check_nan


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly detection on for its block: a
    backward error names the forward op that created the failing node, and (``check_nan``)
    a backward function returning NaN raises.

    Args:
        check_nan (bool): raise when a backward function returns NaN. Default: True.

    Example:
        >>> import warnings
        >>> x = ember.tensor([0.0], requires_grad=True)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with ember.autograd.detect_anomaly():
        ...         try:
        ...             (x.sqrt() * 0).sum().backward()
        ...         except RuntimeError as e:
        ...             print("returned nan" in str(e))
        True
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        global _enabled, _check_nan
        self.prev = (_enabled, _check_nan)
        _enabled, _check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc):
        global _enabled, _check_nan
        _enabled, _check_nan = self.prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off: at once when called, restored on exit of a block.

    Args:
        mode (bool): on (True) or off.
        check_nan (bool): raise when a backward function returns NaN. Default: True.

    Example:
        >>> with ember.autograd.set_detect_anomaly(True):
        ...     print(ember.is_anomaly_enabled())
        True
        >>> ember.is_anomaly_enabled()
        False
    """

    def __init__(self, mode: bool, check_nan: bool = True):
        global _enabled, _check_nan
        self.prev = (_enabled, _check_nan)
        _enabled, _check_nan = bool(mode), bool(check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global _enabled, _check_nan
        _enabled, _check_nan = self.prev
        return False


def forward_trace():
    """The stack of the forward call that is making a node, as anomaly mode keeps it: the
    frames up to the first one outside ember's internals (the user's call, or a public
    module such as ``ember.nn.modules.linear`` whose Python PyTorch's trace shows too).

    Returns:
        list of str: formatted frames, outermost first (``traceback.format_stack``'s form).

    Example::

        >>> trace = forward_trace()
        >>> trace[-1].lstrip().startswith("File")  # the innermost frame: this caller's
        True
    """
    import sys
    import traceback

    from .._settings import _internal_frame

    frame = sys._getframe(1)
    while frame.f_back is not None and (
            _internal_frame(frame)
            or frame.f_globals.get("__name__") in ("ember.autograd.function", __name__)):
        frame = frame.f_back
    return traceback.format_stack(frame)


def report(node):
    """Warn with the forward traceback of ``node`` (called when its backward failed).

    Args:
        node: the autograd node (a ``grad_fn``) whose backward raised.

    Returns:
        None; the warning says which node failed and, when anomaly mode recorded it during
        the forward pass, where that node was made.

    Example::

        >>> import warnings
        >>> y = ember.ones(1, requires_grad=True).exp()
        >>> with warnings.catch_warnings(record=True) as w:
        ...     warnings.simplefilter("always")
        ...     ember.autograd.anomaly_mode.report(y.grad_fn)
        >>> "Error detected in ExpBackward0" in str(w[0].message)
        True
    """
    trace = getattr(node, "_trace", None)
    if trace is None:
        msg = (f"Error detected in {node.name()}. No forward pass information available. "
               "Enable detect anomaly during forward pass for more information.")
    else:
        msg = (f"Error detected in {node.name()}. Traceback of forward call that caused the "
               "error:\n" + "".join(trace))
    from .._settings import warn_at_caller

    warn_at_caller(msg, skip=1)
