"""Random ``torch.nn.functional`` programs for tests/differential/programs.py.

NOTE [ Differential functional programs ]
The OpInfo samples call each functional with a few fixed keyword sets and the module
programs reach the functionals through constructors; keyword combinations a constructor
does not pass (``interpolate``'s ``recompute_scale_factor`` and ``antialias``,
``grid_sample``'s ``padding_mode`` with ``align_corners``, a loss's ``weight`` with
``ignore_index`` and ``label_smoothing``, ``embedding_bag``'s ``per_sample_weights`` with
``padding_idx``, ``pad``'s modes over one to three trailing dims, pooling's
``return_indices`` with ``ceil_mode`` and ``dilation``) stayed thin. A program here draws
one functional call with random keywords (some invalid on purpose, so refusals compare too)
over deterministic float64 inputs (float32 now and then) and leaves the outputs and the
gradients of every floating input in ``out``.
"""

from __future__ import annotations

_PROLOGUE = """\
def data(shape, dtype=T.float64, scale=2.0, shift=0.2, grad=True):
    n = 1
    for s in shape:
        n *= s
    x = (T.cos(T.arange(n, dtype=T.float64) * 0.713 + shift) * scale).reshape(shape).to(dtype)
    return x.requires_grad_() if grad else x
def finish(y, inputs):
    flat = [v for v in (y if isinstance(y, tuple) else (y,)) if v is not None]
    L = sum((v * T.sin(T.arange(v.numel(), dtype=T.float64) * 1.3 + 0.1).reshape(v.shape)
             .to(v.dtype)).sum() for v in flat if v.requires_grad)
    wrt = [t for t in inputs if t.requires_grad]
    grads = T.autograd.grad(L, wrt, allow_unused=True) if isinstance(L, T.Tensor) else ()
    return (tuple(flat), tuple(grads))
"""


def _pick(rng, *options):
    return options[int(rng.integers(len(options)))]


def _shape(rng, nd, lo=1, hi=6):
    return tuple(int(v) for v in rng.integers(lo, hi, size=nd))


def _interpolate(rng, dt):
    nd = int(rng.integers(1, 4))
    mode = _pick(rng, "nearest", "nearest-exact", "linear", "bilinear", "bicubic",
                 "trilinear", "area")
    if rng.random() < 0.8:  # mostly a mode that fits the dims
        mode = {1: _pick(rng, "nearest", "nearest-exact", "linear", "area"),
                2: _pick(rng, "nearest", "nearest-exact", "bilinear", "bicubic", "area"),
                3: _pick(rng, "nearest", "nearest-exact", "trilinear", "area")}[nd]
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) + _shape(rng, nd, 1, 6)
    kw = [f"mode={mode!r}"]
    if rng.random() < 0.5:
        sf = _pick(rng, 0.5, 1.5, 2, 0.7, 2.3, 1.0, 3)
        kw.append(f"scale_factor={sf!r}" if rng.random() < 0.6 else
                  f"scale_factor={tuple(_pick(rng, 0.5, 1.5, 2, 0.7, 2.3) for _ in range(nd))!r}")
        if rng.random() < 0.5:
            kw.append(f"recompute_scale_factor={_pick(rng, True, False, None)!r}")
    else:
        size = _shape(rng, nd, 1, 8)
        kw.append(f"size={size if rng.random() < 0.7 else size[0]!r}")
    if rng.random() < 0.5:
        kw.append(f"align_corners={_pick(rng, True, False, None)!r}")
    if rng.random() < 0.3:
        kw.append(f"antialias={_pick(rng, True, False)!r}")
    return [f"x = data({shape!r}, {dt})",
            f"y = T.nn.functional.interpolate(x, {', '.join(kw)})",
            "out = finish(y, [x])"]


def _grid_sample(rng, dt):
    nd = _pick(rng, 2, 2, 3)
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    spatial = _shape(rng, nd, 2, 5)
    out_sp = _shape(rng, nd, 1, 4)
    mode = _pick(rng, "bilinear", "nearest", "bicubic")
    pm = _pick(rng, "zeros", "border", "reflection")
    ac = _pick(rng, True, False)
    lines = [f"x = data({(n, c) + spatial!r}, {dt})"]
    if rng.random() < 0.5:
        theta = (n, nd, nd + 1)
        lines += [f"th = data({theta!r}, {dt}, scale=0.6, shift=1.1)",
                  f"g = T.nn.functional.affine_grid(th, {(n, c) + out_sp!r}, "
                  f"align_corners={ac!r})"]
        inputs = "[x, th]"
    else:
        lines.append(f"g = data({(n,) + out_sp + (nd,)!r}, {dt}, scale=1.2, shift=0.5)")
        inputs = "[x, g]"
    lines += [f"y = T.nn.functional.grid_sample(x, g, mode={mode!r}, padding_mode={pm!r}, "
              f"align_corners={ac!r})", f"out = finish(y, {inputs})"]
    return lines


def _pad(rng, dt):
    nd = int(rng.integers(1, 4))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) + _shape(rng, nd, 1, 5)
    mode = _pick(rng, "constant", "reflect", "replicate", "circular")
    npad = int(rng.integers(1, nd + 1)) * 2
    pads = tuple(int(v) for v in rng.integers(-1, 4, size=npad))
    kw = f"mode={mode!r}" + (f", value={_pick(rng, 0.0, 1.5, -2)!r}"
                             if mode == "constant" and rng.random() < 0.5 else "")
    return [f"x = data({shape!r}, {dt})", f"y = T.nn.functional.pad(x, {pads!r}, {kw})",
            "out = finish(y, [x])"]


def _pool(rng, dt):
    nd = int(rng.integers(1, 4))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) + _shape(rng, nd, 2, 7)
    kind = _pick(rng, "max", "avg", "lp", "fractional_max", "adaptive_max", "adaptive_avg")
    k = _pick(rng, 1, 2, 3, tuple(int(v) for v in rng.integers(1, 4, size=nd)))
    kw = []
    if kind in ("max", "avg", "lp"):
        if rng.random() < 0.5:
            kw.append(f"stride={_pick(rng, 1, 2, 3, None)!r}")
        if kind != "lp" and rng.random() < 0.5:
            kw.append(f"padding={_pick(rng, 0, 1)!r}")
        if kind != "lp" or rng.random() < 0.5:
            kw.append(f"ceil_mode={_pick(rng, True, False)!r}")
        if kind == "max":
            if rng.random() < 0.5:
                kw.append(f"dilation={_pick(rng, 1, 2)!r}")
            kw.append(f"return_indices={_pick(rng, True, False)!r}")
        if kind == "avg":
            if rng.random() < 0.5:
                kw.append(f"count_include_pad={_pick(rng, True, False)!r}")
            if nd > 1 and rng.random() < 0.3:
                kw.append(f"divisor_override={_pick(rng, 1, 2, 3)!r}")
        if kind == "lp":
            nd = min(nd, 3)
            call = f"T.nn.functional.lp_pool{nd}d(x, {_pick(rng, 1, 2, 3.5)!r}, {k!r}"
        else:
            call = f"T.nn.functional.{kind}_pool{nd}d(x, {k!r}"
    elif kind == "fractional_max":
        nd = min(max(nd, 2), 3)
        shape = shape[:2] + _shape(rng, nd, 3, 7)
        call = (f"T.nn.functional.fractional_max_pool{nd}d(x, 2, output_size={(2,) * nd!r}, "
                "_random_samples=T.full((x.shape[0], x.shape[1], " + str(nd) + "), 0.5, "
                "dtype=x.dtype)")
        kw.append(f"return_indices={_pick(rng, True, False)!r}")
    else:
        osz = _pick(rng, 1, 2, 3, tuple(_pick(rng, 1, 2, None) for _ in range(nd)))
        call = f"T.nn.functional.{kind}_pool{nd}d(x, {osz!r}"
        if kind == "adaptive_max":
            kw.append(f"return_indices={_pick(rng, True, False)!r}")
    call += "".join(", " + k_ for k_ in kw) + ")"
    return [f"x = data({shape!r}, {dt})", f"y = {call}", "out = finish(y, [x])"]


def _embedding_bag(rng, dt):
    num, dim = int(rng.integers(2, 6)), int(rng.integers(1, 4))
    mode = _pick(rng, "sum", "mean", "max")
    n = int(rng.integers(0, 7))
    idx = rng.integers(0, num, size=n).tolist()
    lines = [f"w = data({(num, dim)!r}, {dt})", f"i = T.tensor({idx!r})"]
    kw = [f"mode={mode!r}"]
    if rng.random() < 0.5:
        nb = int(rng.integers(1, 4))
        offs = sorted(int(v) for v in rng.integers(0, max(n, 1), size=nb))
        offs[0] = 0 if rng.random() < 0.9 else offs[0]
        lines.append(f"o = T.tensor({offs!r})")
        kw.insert(0, "o")
        if rng.random() < 0.3 and nb > 1:
            # (torch 2.13 crashes (SIGSEGV) on include_last_offset=True with one offset)
            kw.append(f"include_last_offset={_pick(rng, True, False)!r}")
    else:
        lines[-1] = f"i = T.tensor({idx!r}).reshape({_pick(rng, 1, n or 1)}, -1)" if n else \
            "i = T.zeros(1, 0, dtype=T.int64)"
    inputs = "[w]"
    if rng.random() < 0.4:
        lines.append(f"psw = data(tuple(i.shape), {dt}, scale=0.5, shift=0.9)")
        kw.append("per_sample_weights=psw")
        inputs = "[w, psw]"
    if rng.random() < 0.4:
        kw.append(f"padding_idx={int(rng.integers(-num, num))}")
    if rng.random() < 0.2:
        kw.append(f"max_norm={_pick(rng, 0.5, 1.0)!r}")
        lines[0] = f"w = data({(num, dim)!r}, {dt}, grad=False)"
        inputs = "[]" if inputs == "[w]" else "[psw]"
    lines += [f"y = T.nn.functional.embedding_bag(i, w, {', '.join(kw)})",
              f"out = finish(y, {inputs})"]
    return lines


def _loss(rng, dt):
    n, c = int(rng.integers(0, 4)), int(rng.integers(1, 5))
    kind = _pick(rng, "cross_entropy", "nll_loss", "cross_entropy_probs", "bce",
                 "bce_logits", "kl_div", "huber", "smooth_l1", "margin_ranking",
                 "soft_margin", "multilabel_soft_margin", "poisson_nll", "gaussian_nll",
                 "hinge_embedding", "cosine_embedding", "triplet_margin", "l1", "mse",
                 "multi_margin")
    red = _pick(rng, "mean", "sum", "none")
    extra = [f"x = data(({n}, {c}), {dt})"]
    tgt = rng.integers(0, c, size=n).tolist()
    inputs = "[x]"
    if kind in ("cross_entropy", "nll_loss", "multi_margin"):
        if rng.random() < 0.3 and n:
            tgt[0] = int(_pick(rng, -100, 1, c - 1))
        extra.append(f"t = T.tensor({tgt!r})")
        kw = [f"reduction={red!r}"]
        if rng.random() < 0.5:
            extra.append(f"wt = data(({c},), {dt}, scale=0.4, shift=2.0, grad=False).abs() + 0.1")
            kw.append("weight=wt")
        if kind != "multi_margin" and rng.random() < 0.5:
            kw.append(f"ignore_index={_pick(rng, -100, 0, 1)}")
        if kind == "cross_entropy" and rng.random() < 0.5:
            kw.append(f"label_smoothing={_pick(rng, 0.0, 0.1, 0.5, 1.0)!r}")
        if kind == "multi_margin" and rng.random() < 0.5:
            kw.append(f"p={_pick(rng, 1, 2)}, margin={_pick(rng, 0.5, 1.0)!r}")
        x = "x" if kind != "nll_loss" else "T.log_softmax(x, 1)"
        call = f"T.nn.functional.{kind}({x}, t, {', '.join(kw)})"
    elif kind == "cross_entropy_probs":
        extra.append(f"t = T.softmax(data(({n}, {c}), {dt}, shift=1.3, grad=False), 1)")
        kw = f"reduction={red!r}, label_smoothing={_pick(rng, 0.0, 0.2)!r}"
        call = f"T.nn.functional.cross_entropy(x, t, {kw})"
    elif kind in ("bce", "bce_logits"):
        extra.append(f"t = T.sigmoid(data(({n}, {c}), {dt}, shift=1.3, grad=False))")
        kw = [f"reduction={red!r}"]
        if rng.random() < 0.4:
            extra.append(f"wt = data(({c},), {dt}, scale=0.4, shift=2.0, grad=False).abs()")
            kw.append("weight=wt")
        if kind == "bce_logits" and rng.random() < 0.4:
            extra.append(f"pw = data(({c},), {dt}, scale=0.4, shift=0.3, grad=False).abs()")
            kw.append("pos_weight=pw")
        x = "T.sigmoid(x)" if kind == "bce" else "x"
        fn = "binary_cross_entropy" if kind == "bce" else "binary_cross_entropy_with_logits"
        call = f"T.nn.functional.{fn}({x}, t, {', '.join(kw)})"
    elif kind == "kl_div":
        extra.append(f"t = T.softmax(data(({n}, {c}), {dt}, shift=1.3, grad=False), 1)")
        lt = _pick(rng, True, False)
        if lt:
            extra.append("t = t.log()")
        red = _pick(rng, "mean", "sum", "none", "batchmean")
        call = (f"T.nn.functional.kl_div(T.log_softmax(x, 1), t, reduction={red!r}, "
                f"log_target={lt!r})")
    elif kind in ("huber", "smooth_l1", "l1", "mse", "soft_margin",
                  "multilabel_soft_margin", "poisson_nll", "gaussian_nll", "hinge_embedding"):
        extra.append(f"t = data(({n}, {c}), {dt}, shift=1.3)")
        inputs = "[x, t]"
        kw = [f"reduction={red!r}"]
        fn = kind + "_loss"
        if kind == "huber":
            kw.append(f"delta={_pick(rng, 0.5, 1.0, 2.0)!r}")
        elif kind == "smooth_l1":
            kw.append(f"beta={_pick(rng, 0.0, 0.5, 1.0)!r}")
        elif kind in ("soft_margin", "multilabel_soft_margin", "hinge_embedding"):
            extra[-1] = f"t = T.sign(data(({n}, {c}), {dt}, shift=1.3, grad=False))"
            inputs = "[x]"
        elif kind == "poisson_nll":
            kw.append(f"log_input={_pick(rng, True, False)!r}, full={_pick(rng, True, False)!r}")
            extra[-1] = f"t = data(({n}, {c}), {dt}, shift=1.3).abs()"
            if "log_input=False" in kw[-1]:
                extra[0] = f"x = data(({n}, {c}), {dt}).abs() + 0.1"
        elif kind == "gaussian_nll":
            extra.append(f"v = data(({n}, {c}), {dt}, shift=0.7).abs() + 0.1")
            inputs = "[x, t, v]"
            kw.append(f"full={_pick(rng, True, False)!r}")
            call = f"T.nn.functional.gaussian_nll_loss(x, t, v, {', '.join(kw)})"
        if kind != "gaussian_nll":
            call = f"T.nn.functional.{fn}(x, t, {', '.join(kw)})"
    elif kind == "margin_ranking":
        extra += [f"x2 = data(({n},), {dt}, shift=0.9)", f"x = data(({n},), {dt})",
                  f"t = T.sign(data(({n},), {dt}, shift=1.7, grad=False))"]
        inputs = "[x, x2]"
        call = (f"T.nn.functional.margin_ranking_loss(x, x2, t, "
                f"margin={_pick(rng, 0.0, 0.5)!r}, reduction={red!r})")
    elif kind == "cosine_embedding":
        extra += [f"x2 = data(({n}, {c}), {dt}, shift=0.9)",
                  f"t = T.sign(data(({n},), {dt}, shift=1.7, grad=False))"]
        inputs = "[x, x2]"
        call = (f"T.nn.functional.cosine_embedding_loss(x, x2, t, "
                f"margin={_pick(rng, 0.0, 0.5)!r}, reduction={red!r})")
    else:  # triplet_margin
        extra += [f"p = data(({n}, {c}), {dt}, shift=0.9)",
                  f"q = data(({n}, {c}), {dt}, shift=2.1)"]
        inputs = "[x, p, q]"
        call = (f"T.nn.functional.triplet_margin_loss(x, p, q, margin={_pick(rng, 0.5, 1.0)!r}, "
                f"p={_pick(rng, 1, 2)}, swap={_pick(rng, True, False)!r}, reduction={red!r})")
    return extra + [f"y = {call}", f"out = finish(y, {inputs})"]


_BUILDERS = (_interpolate, _grid_sample, _pad, _pool, _embedding_bag, _loss, _loss)


def functional(rng):
    """One ``torch.nn.functional`` call with random keywords, its outputs and gradients."""
    dt = "T.float64" if rng.random() < 0.8 else "T.float32"
    body = _BUILDERS[int(rng.integers(len(_BUILDERS)))](rng, dt)
    return _PROLOGUE + "\n".join(body)
