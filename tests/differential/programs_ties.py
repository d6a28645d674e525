"""Random programs on tied values and exact zeros for tests/differential/programs.py.

NOTE [ Differential tie programs ]
Where several inputs share the largest value, the index a reduction or a pooling window
reports, and the input its gradient flows to, is a choice each library makes in its own
kernels (torch: the first in memory order for pooling windows and ``max(dim)``; NaN wins).
Where a ReLU zeroes most of its input, the gradients of the layers after it have entries
that are exact zeros in torch (a product by an exact 0), and they must stay exact zeros, not
``1e-17`` from a different summation. The OpInfo cases draw continuous values, which almost
never tie; a program here draws values from a handful of small integers (signed zeros and
now and then NaN among them), runs one op that picks by value (max/min/argmax/argmin over a
dim, max pooling 1-3d with indices, adaptive max pooling, kthvalue, mode, median, cummax,
cummin) or a ReLU-sparse input through linear/conv/avg pooling, and leaves the values, the
indices and the input gradient in ``out``. Values are float64, so only the choices can
differ.
"""

from __future__ import annotations


def _pick(rng, *options):
    return options[int(rng.integers(len(options)))]


def _data(rng, shape, nan):
    """Source of a float64 tensor of ``shape`` with values from a few integers (ties)."""
    n = 1
    for s in shape:
        n *= s
    pool = [-1.0, 0.0, 1.0, 2.0, 2.0] + (["float('nan')"] if nan else []) + ["-0.0"]
    vals = [pool[int(i)] for i in rng.integers(len(pool), size=n)]
    flat = ", ".join(str(v) for v in vals)
    return f"T.tensor([{flat}], dtype=T.float64).reshape({tuple(shape)!r})"


def _reduction(rng):
    nd = int(rng.integers(1, 4))
    shape = tuple(int(v) for v in rng.integers(1, 5, size=nd))
    dim = int(rng.integers(-nd, nd))
    keep = bool(rng.random() < 0.5)
    op = _pick(rng, "max", "min", "argmax", "argmin", "kthvalue", "mode", "median",
               "nanmedian", "cummax", "cummin", "amax", "amin")
    if op == "kthvalue":
        k = int(rng.integers(1, shape[dim] + 1))
        call = f"T.kthvalue(x, {k}, dim={dim}, keepdim={keep})"
    elif op in ("cummax", "cummin"):
        call = f"T.{op}(x, dim={dim})"
    elif op in ("amax", "amin"):
        dims = _pick(rng, dim, (0, -1) if nd > 1 else 0)
        call = f"T.{op}(x, dim={dims!r}, keepdim={keep})"
    else:
        call = f"T.{op}(x, dim={dim}, keepdim={keep})"
    return shape, call, op not in ("argmax", "argmin")


def _pool(rng):
    nd = int(rng.integers(1, 4))
    spatial = tuple(int(v) for v in rng.integers(2, 6, size=nd))
    shape = (1, 2) + spatial
    k = int(rng.integers(1, 4))
    kind = _pick(rng, "max", "max", "adaptive")
    if kind == "adaptive":
        size = tuple(int(v) for v in rng.integers(1, 4, size=nd))
        call = f"T.nn.functional.adaptive_max_pool{nd}d(x, {size!r}, return_indices=True)"
    else:
        stride = int(rng.integers(1, 3))
        pad = int(rng.integers(0, min(k // 2, 1) + 1))
        ceil = bool(rng.random() < 0.3)
        dil = _pick(rng, 1, 1, 2)
        call = (f"T.nn.functional.max_pool{nd}d(x, {k}, stride={stride}, padding={pad}, "
                f"dilation={dil}, ceil_mode={ceil}, return_indices=True)")
    return shape, call, True


def _sparse(rng):
    """A ReLU-sparse input into a linear, convolution or average pooling layer: its
    gradients' exact zeros."""
    kind = _pick(rng, "linear", "conv1d", "conv2d", "avg_pool2d")
    if kind == "linear":
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 6)))
        w = f"T.cos(T.arange({3 * shape[1]}, dtype=T.float64)).reshape(3, {shape[1]})"
        call = f"T.nn.functional.linear(T.relu(x), {w})"
    elif kind == "conv1d":
        shape = (1, 2, int(rng.integers(3, 8)))
        w = "T.cos(T.arange(12, dtype=T.float64)).reshape(3, 2, 2)"
        call = f"T.nn.functional.conv1d(T.relu(x), {w}, stride={_pick(rng, 1, 2)})"
    elif kind == "conv2d":
        shape = (1, 2, int(rng.integers(3, 6)), int(rng.integers(3, 6)))
        w = "T.cos(T.arange(24, dtype=T.float64)).reshape(3, 2, 2, 2)"
        call = f"T.nn.functional.conv2d(T.relu(x), {w}, padding={_pick(rng, 0, 1)})"
    else:
        shape = (1, 2, int(rng.integers(2, 6)), int(rng.integers(2, 6)))
        call = f"T.nn.functional.avg_pool2d(T.relu(x), 2, ceil_mode={bool(rng.random() < .5)})"
    return shape, call, True


def ties(rng):
    """One op that picks among tied values (or sums exact zeros), run forward and
    backward."""
    shape, call, grad = _pick(rng, _reduction, _reduction, _pool, _sparse)(rng)
    nan = call.split("(")[0] not in ("T.nn.functional.linear", "T.nn.functional.conv1d",
                                     "T.nn.functional.conv2d") and rng.random() < 0.2
    lines = [f"x = {_data(rng, shape, nan)}"]
    if grad:
        lines.append("x.requires_grad_()")
    lines += [f"y = {call}",
              "ys = [v for v in (y if isinstance(y, tuple) else (y,))]",
              "outs = [v.detach() for v in ys]"]
    if grad:
        lines += ["v = ys[0]",
                  "w = (T.arange(v.numel(), dtype=T.float64) % 5 - 2).reshape(v.shape)",
                  "g, = T.autograd.grad((v * w).sum(), x)",
                  "outs.append(g)",
                  # exact zeros stay exact zeros: compared as their own result
                  "outs.append(g == 0)"]
    lines.append("out = tuple(outs)")
    return "\n".join(lines)
