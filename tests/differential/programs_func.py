"""Random programs for tests/differential/programs.py: ``torch.func`` transforms and
forward-mode AD over random compositions of differentiable ops.

NOTE [ Differential transform programs ]
The OpInfo cases (harness.py) compare values and first reverse-mode gradients; forward-mode
AD, ``vmap`` and the transforms composed (``vmap(grad)``, ``jacrev(jacfwd)``, ``hessian``,
``jvp`` of ``grad``) go through other rules (a jvp rule per op, a batching rule per op)
that nothing random reached. A program here draws a function ``f(x, y)``: an element-wise
expression of ``x`` (3, 4) and ``y`` (one of a few shapes broadcasting to it) two or three
ops deep, now and then an in-place write into a view of a view of its clone, and a final
reduction, scan, shape op or small product over the (3, 4) result; then it applies one
transform (or a composition) to ``f`` and leaves the result in ``out``. Inputs are
float64 values away from the ops' kinks and poles (a domain-limited op gets ``u ** 2 + c``),
so two libraries can differ only in their rules, not in a tie's choice. Values compare to
(1e-7, 1e-7): a second derivative is a sum of products whose order is each library's own,
torch's celu derivative takes ``1 / alpha`` rounded to float32 (a 1e-8 relative difference)
and its polygamma is good to about 1e-8.
"""

from __future__ import annotations

import numpy as np


def _pick(rng, options):
    return options[int(rng.integers(len(options)))]


#: element-wise ops of one operand; ``{0}`` is the operand (it may appear twice)
_UNARY = (
    "T.sin({0})", "T.cos({0})", "T.tanh({0})", "T.sigmoid({0})", "T.exp(0.5 * {0})",
    "T.log(({0}) ** 2 + 1)", "T.sqrt(({0}) ** 2 + 0.5)", "T.atan({0})", "T.erf({0})",
    "T.erfc({0})", "T.asinh({0})", "T.expm1({0})", "T.rsqrt(({0}) ** 2 + 1)",
    "T.reciprocal(({0}) ** 2 + 2)", "T.lgamma(({0}) ** 2 + 0.5)", "T.digamma(({0}) ** 2 + 1)",
    "T.square({0})", "({0}).pow(3)", "T.abs({0})", "T.relu({0})", "T.clamp({0}, -0.5, 0.7)",
    "T.nn.functional.softplus({0})", "T.nn.functional.gelu({0})",
    "T.nn.functional.gelu({0}, approximate='tanh')", "T.nn.functional.silu({0})",
    "T.nn.functional.elu({0})", "T.nn.functional.logsigmoid({0})",
    "T.nn.functional.leaky_relu({0}, 0.1)", "T.nn.functional.mish({0})",
    "T.nn.functional.softsign({0})", "T.nn.functional.celu({0}, 0.7)",
    "T.nn.functional.selu({0})", "T.nn.functional.hardswish({0})",
    "T.nn.functional.tanhshrink({0})", "T.sinc({0})", "T.log1p(({0}) ** 2)",
    "T.special.ndtr({0})", "T.special.log_ndtr({0})", "T.special.i0({0})",
    "T.special.i1e({0})", "T.special.entr(({0}) ** 2 + 0.1)", "T.logit(T.sigmoid({0}))",
    "T.where({0} > 0, {0}, 0.3 * {0})", "T.fmod({0}, 1.3)", "T.remainder({0}, 1.1)",
    "T.deg2rad({0})", "T.cosh({0})", "T.asin(T.tanh({0}) * 0.9)", "T.nan_to_num({0})",
)
#: element-wise ops of two operands
_BINARY = (
    "({0} + {1})", "({0} - {1})", "({0} * {1})", "({0} / (({1}) ** 2 + 1))",
    "T.maximum({0}, {1})", "T.minimum({0}, {1})", "T.atan2({0}, {1})", "T.hypot({0}, {1})",
    "T.logaddexp({0}, {1})", "T.pow(({0}) ** 2 + 0.5, {1})", "T.copysign({0}, {1})",
    "T.fmax({0}, {1})", "T.lerp({0}, {1}, 0.3)", "T.xlogy({0}, ({1}) ** 2 + 1)",
    "T.special.xlog1py({0}, ({1}) ** 2)", "T.addcmul({0}, {0}, {1}, value=0.5)",
    "T.addcdiv({0}, {1}, ({0}) ** 2 + 1, value=-2)", "T.logaddexp2({0}, {1})",
    "T.lerp({0}, {1}, T.sigmoid({1}))", "T.float_power(({0}) ** 2 + 1, {1})",
)
#: the function's last step, over ``r`` of shape (3, 4)
_FINAL = (
    "r", "r.sum()", "r.sum(0)", "r.sum(-1, keepdim=True)", "r.mean(1)", "r.prod(0)",
    "T.logsumexp(r, 1)", "r.norm()", "T.linalg.vector_norm(r, 3, dim=0)", "r.var(1)",
    "r.std(0, correction=0)", "T.softmax(r, 1)", "T.log_softmax(r, 0)", "T.cumsum(r, 1)",
    "T.cumprod(r, 0)", "r.amax(1)", "r.max(0).values", "r.sort(1).values",
    "T.topk(r, 2, 1).values", "r.t() @ r", "r @ r.t()", "r.transpose(0, 1).reshape(-1)",
    "T.flip(r, (0,))", "T.roll(r, 1, 1)", "r[:, 1:]", "r.diagonal()", "T.trace(r)",
    "T.cat([r, r * 2], 1)", "T.stack([r, T.sin(r)], 0)", "r.unfold(1, 2, 1)",
    "T.linalg.det(r[:, :3])", "T.einsum('ij,ij->i', r, r)",
    "T.nn.functional.normalize(r, dim=1)", "T.nn.functional.layer_norm(r, (4,))",
    "T.linalg.matrix_norm(r)", "T.cummax(r, 1).values", "T.logcumsumexp(r, 0)",
    "r.index_select(1, T.tensor([2, 0, 2]))", "r.gather(1, T.tensor([[0, 3], [1, 1], [2, 0]]))",
    "r[T.tensor([2, 0])]", "T.kron(r[:2, :2], r[1:, 2:])", "T.outer(r[0], r[:, 1])",
    "T.linalg.inv(r[:, :3] + 3 * T.eye(3, dtype=r.dtype))", "r.expand(2, 3, 4).sum(0)",
    "T.diff(r, dim=1)", "T.tril(r)", "r.narrow(1, 1, 2)", "T.clamp(r, max=0.4).sum(1)",
    "T.nn.functional.pad(r, (1, 2), mode='reflect')", "T.dist(r[0], r[1])",
    "T.nn.functional.cosine_similarity(r[0:1], r[1:2])", "r.median(1).values",
    "T.where(r > 0.1, r, T.zeros_like(r))", "T.take_along_dim(r, T.tensor([[1], [0], [3]]), 1)",
)
#: in-place writes into views of views of a clone (torch.func functionalizes them); the
#: last reads a view of the tensor it writes, which autograd refuses at backward in both
_MUTATE = (
    "    r = r.clone()\n    r.t()[1:, ::2].mul_(1.5)",
    "    r = r.clone()\n    r[:, 1].add_(x[:, 0] ** 2)",
    "    r = r.clone()\n    r.diagonal().copy_(T.cos(x.diagonal()))",
    "    r = r.clone()\n    r[1:][:, ::2] = T.sin(x[:2, 1::2])",
    "    r = r.clone()\n    r.unfold(1, 2, 2).select(-1, 0).div_(3)",
    "    r = r.clone()\n    r.transpose(0, 1)[0].mul_(x[:, 2])",
    "    r = r.clone()\n    r.view(12)[::5].sigmoid_()",
    "    r = r.clone()\n    r.t()[0].mul_(r[:, 2])",
)
#: shapes of ``y`` (all broadcast to x's (3, 4))
_Y_SHAPES = ((3, 4), (4,), (1, 4), (3, 1), ())


def _values(rng, shape):
    """Source of a float64 tensor of ``shape`` with values away from 0 (kinks)."""
    n = int(np.prod(shape)) if shape else 1
    v = np.round(rng.normal(0, 0.9, size=n), 4)
    v[np.abs(v) < 0.05] = 0.37
    data = v.reshape(shape).tolist() if shape else float(v[0])
    return f"T.tensor({data!r}, dtype=T.float64)"


#: torch 2.13's linearize (make_fx) crashes the process (SIGSEGV) tracing these with a
#: captured tensor
_BINARY_LINEARIZE = tuple(b for b in _BINARY if "addc" not in b)


def _expr(rng, depth, binary=_BINARY):
    if depth == 0:
        return _pick(rng, ("x", "x", "y", "x"))
    if rng.random() < 0.45:
        a = _expr(rng, depth - 1, binary)
        return _pick(rng, binary).format(a, _pick(rng, ("x", "y")))
    return _pick(rng, _UNARY).format(_expr(rng, depth - 1, binary))


def _function(rng, final=None, mutate=True):
    """Source of ``def f(x, y)`` and its final step (no in-place writes and no
    addcmul/addcdiv without ``mutate``: linearize's)."""
    binary = _BINARY if mutate else _BINARY_LINEARIZE
    body = f"    r = {_expr(rng, int(rng.integers(1, 4)), binary)} + 0 * x"
    if rng.random() < 0.2 and mutate:
        body += "\n" + _pick(rng, _MUTATE)
    final = final or _pick(rng, _FINAL)
    return f"def f(x, y):\n{body}\n    return {final}\n", final


def _cotangent(name):
    return (f"(T.arange({name}.numel(), dtype=T.float64) % 5 - 2).reshape({name}.shape)"
            " * 0.5")


def func(rng):
    """One transform (or two composed) of a random function of two tensors."""
    ys = _Y_SHAPES[int(rng.integers(len(_Y_SHAPES)))]
    kind = _pick(rng, ("grad", "jvp", "vjp", "jacfwd", "jacrev", "hessian", "vmap",
                       "vmap_grad", "jacrev_jacfwd", "jvp_grad", "forward_ad", "vmap_jvp",
                       "double_backward", "vmap_jacrev", "linearize"))
    scalar = kind in ("grad", "hessian", "vmap_grad", "jvp_grad", "double_backward")
    # torch's linearize traces ``f`` (make_fx) and replays an in-place write through
    # ``unfold`` wrongly: its tangents differ from its own jvp's, so it gets no writes
    src, final = _function(rng, "r.sum()" if scalar and rng.random() < 0.5 else None,
                           mutate=kind != "linearize")
    if scalar and final != "r.sum()":
        src = src.replace(f"return {final}", f"return ({final}).sum()")
    lines = [src, f"x = {_values(rng, (3, 4))}", f"y = {_values(rng, ys)}",
             f"tx = {_values(rng, (3, 4))}", f"ty = {_values(rng, ys)}"]
    argnums = _pick(rng, (0, 1, (0, 1)))
    if kind == "grad":
        lines.append(f"out = T.func.grad(f, argnums={argnums!r})(x, y)")
    elif kind == "jvp":
        lines.append("out = T.func.jvp(f, (x, y), (tx, ty))")
    elif kind == "vjp":
        lines += ["o, fn = T.func.vjp(f, x, y)", f"out = (o, fn({_cotangent('o')}))"]
    elif kind in ("jacfwd", "jacrev"):
        lines.append(f"out = T.func.{kind}(f, argnums={argnums!r})(x, y)")
    elif kind == "hessian":
        lines.append(f"out = T.func.hessian(f, argnums={_pick(rng, (0, 1))})(x, y)")
    elif kind in ("vmap", "vmap_grad", "vmap_jvp", "vmap_jacrev"):
        xd, yd = _pick(rng, ((0, None), (1, 0), (None, 0), (0, 0), (2, None), (0, -1)))
        if ys == () and yd not in (None, 0):
            yd = 0
        if xd is None and yd is None:
            xd = 0
        lines.append(f"xb = T.stack([x, T.cos(x) * 1.3], {xd if xd is not None else 0})")
        lines.append(f"yb = T.stack([y, y * -0.7], {yd if yd is not None else 0})")
        xa = "xb" if xd is not None else "x"
        ya = "yb" if yd is not None else "y"
        inner = {"vmap": "f", "vmap_grad": "T.func.grad(lambda a, b: f(a, b).sum())",
                 "vmap_jacrev": "T.func.jacrev(f)",
                 "vmap_jvp": "lambda a, b: T.func.jvp(f, (a, b), (T.ones_like(a), "
                             "T.zeros_like(b)))"}[kind]
        chunk = ", chunk_size=1" if rng.random() < 0.2 else ""
        lines.append(f"out = T.func.vmap({inner}, in_dims=({xd}, {yd}){chunk})({xa}, {ya})")
    elif kind == "jacrev_jacfwd":
        lines.append("out = T.func.jacrev(T.func.jacfwd(f))(x, y)")
    elif kind == "jvp_grad":
        lines.append("out = T.func.jvp(lambda a: T.func.grad(f)(a, y), (x,), (tx,))")
    elif kind == "forward_ad":
        lines += ["fwAD = T.autograd.forward_ad",
                  "with fwAD.dual_level():",
                  "    o = f(fwAD.make_dual(x, tx), fwAD.make_dual(y, ty))",
                  "    p, t = fwAD.unpack_dual(o)",
                  "    out = (p.clone(), t.clone() if t is not None else p * 0)"]
    elif kind == "double_backward":
        lines += ["x.requires_grad_()", "y.requires_grad_()",
                  "g, = T.autograd.grad(f(x, y), x, create_graph=True)",
                  "h = T.autograd.grad((g * T.cos(g)).sum(), (x, y), allow_unused=True)",
                  "out = (g.detach(),) + tuple(v if v is not None else 'none' for v in h)"]
    else:  # linearize
        lines += ["o, jvp_fn = T.func.linearize(lambda a: f(a, y), x)",
                  "out = (o, jvp_fn(tx), jvp_fn(tx * 2))"]
    return "\n".join(lines)
