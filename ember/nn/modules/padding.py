"""Padding layers: Zero, Constant, Reflection, Replication and Circular, in 1-3 dims."""

from __future__ import annotations

from .. import functional as F
from .module import Module


def _pads(padding, n):
    return (padding,) * (2 * n) if isinstance(padding, int) else tuple(padding)


class _PadNd(Module):
    _nd = 1
    _mode = "constant"
    _shows_value = True

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = _pads(padding, self._nd)
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        if self._mode == "constant" and self._shows_value:  # ZeroPad*d print the padding only
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _make(name, nd, mode, has_value):
    if has_value:
        def __init__(self, padding, value):
            _PadNd.__init__(self, padding, value)
    else:
        def __init__(self, padding):
            _PadNd.__init__(self, padding, 0.0)
    return type(name, (_PadNd,), {"_nd": nd, "_mode": mode, "__init__": __init__,
                                  "_shows_value": has_value,
                                  "__module__": __name__, "__doc__": _doc(name, nd, has_value)})


_WHAT = {"Constant": "a constant ``value``", "Zero": "zeros",
         "Reflection": "the reflection of the input (the edge not repeated)",
         "Replication": "copies of the edge value", "Circular": "wrap-around (circular) values"}


def _doc(name, nd, has_value):
    sides = "(left, right" + ", top, bottom" * (nd > 1) + ", front, back" * (nd > 2) + ")"
    spatial = ("L",) if nd == 1 else ("H", "W") if nd == 2 else ("D", "H", "W")
    dims = ", ".join(spatial)
    shape_in = ", ".join(["4"] * nd)
    shape_out = ", ".join(["6"] * nd)
    call = f"ember.nn.{name}(1{', 0.5' if has_value else ''})"
    value = "\n        value (float): the fill value." if has_value else ""
    return f"""Pad the last {nd} dimension{'s' * (nd > 1)} with {_WHAT[name.split('Pad')[0]]}.

    Args:
        padding (int or tuple): the same on every side, or ``{sides}``.{value}

    Shape:
        ``(N, C, {dims})`` or ``(C, {dims})``; each padded dim grows by its two paddings.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> tuple({call}(ember.randn(1, 2, {shape_in})).shape)
        (1, 2, {shape_out})
    """


ConstantPad1d = _make("ConstantPad1d", 1, "constant", True)
ConstantPad2d = _make("ConstantPad2d", 2, "constant", True)
ConstantPad3d = _make("ConstantPad3d", 3, "constant", True)
ZeroPad1d = _make("ZeroPad1d", 1, "constant", False)
ZeroPad2d = _make("ZeroPad2d", 2, "constant", False)
ZeroPad3d = _make("ZeroPad3d", 3, "constant", False)
ReflectionPad1d = _make("ReflectionPad1d", 1, "reflect", False)
ReflectionPad2d = _make("ReflectionPad2d", 2, "reflect", False)
ReflectionPad3d = _make("ReflectionPad3d", 3, "reflect", False)
ReplicationPad1d = _make("ReplicationPad1d", 1, "replicate", False)
ReplicationPad2d = _make("ReplicationPad2d", 2, "replicate", False)
ReplicationPad3d = _make("ReplicationPad3d", 3, "replicate", False)
CircularPad1d = _make("CircularPad1d", 1, "circular", False)
CircularPad2d = _make("CircularPad2d", 2, "circular", False)
CircularPad3d = _make("CircularPad3d", 3, "circular", False)
