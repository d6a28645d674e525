"""Random ``torch.optim`` programs for tests/differential/programs.py.

NOTE [ Differential optimizer programs ]
tests/optim checks each optimizer against torch on a few fixed configurations; what it
reaches thinly is the product of the options (``amsgrad`` with ``maximize`` and weight
decay, ``nesterov`` with dampening, ``centered`` with momentum, ``foreach`` on or off,
``decoupled_weight_decay``), per-group overrides, the constructors' refusals of bad
hyper-parameters (their class and words), and schedulers stepped past their milestones or
chained. A program here builds a few float64 (now and then float32) parameters with
deterministic values in one or two param groups, draws an optimizer and its
hyper-parameters (some out of range on purpose), takes a few steps on a fixed smooth loss
that depends on the step, and, half of the time, steps a random ``lr_scheduler`` after each
optimizer step. It leaves ``(parameters, the learning rates the scheduler reported, the
optimizer's state tensors, its param groups without the params)`` in ``out``.

State entries are compared with their kind (a tensor, a Python float, a list) and values,
except L-BFGS's last step ``t``: after a strong-Wolfe search torch's is a 0-dim tensor, a
float or the int 0 depending on which branch of its interpolation produced it, and ember's
search computes in floats, so only its value is compared. L-BFGS programs run in float64,
with a few iterations and steps (once converged, its curvature pairs are differences of
nearly equal gradients and either library's rounding decides the next step).
"""

from __future__ import annotations

#: shared by every optimizer program: deterministic parameters and a loss that changes
#: with the step (so that momentum terms and second moments differ by step)
_PROLOGUE = """\
def param(shape, i, dtype):
    n = 1
    for s in shape:
        n *= s
    v = T.sin(T.arange(n, dtype=T.float64) * 0.37 + i) * 0.8
    return T.nn.Parameter(v.reshape(shape).to(dtype))
def loss_of(ps, step):
    L = 0
    for i, p in enumerate(ps):
        w = T.cos(T.arange(p.numel(), dtype=p.dtype) * 0.91 + step + i).reshape(p.shape)
        L = L + ((p - w) ** 2 * (1 + 0.5 * w)).sum() + (p * w).sum() * 0.1
    return L
def groups_view(opt):
    return repr([{k: v for k, v in sorted(g.items()) if k != 'params'}
                 for g in opt.param_groups])
def entry_view(v):
    if isinstance(v, T.Tensor):
        return ('tensor', v.detach().clone())
    if isinstance(v, float):
        return ('float', T.tensor(v, dtype=T.float64))
    if isinstance(v, (list, tuple)):
        return ('list', [entry_view(x) for x in v])
    return ('other', repr(v))
def state_view(opt, ps):
    out = []
    for p in ps:
        st = opt.state.get(p, {})
        for k in sorted(st):
            if k == 't':  # L-BFGS's step: compared by value only (see the note)
                out.append((k, ('scalar', T.tensor(float(st[k]), dtype=T.float64))))
            else:
                out.append((k, entry_view(st[k])))
    return out
"""


def _pick(rng, *options):
    return options[int(rng.integers(len(options)))]


def _val(rng, valid, invalid=()):
    """One of ``valid``, or now and then (one draw in twelve) one of ``invalid``, so that
    constructors' refusals are compared without crowding out the steps."""
    if invalid and rng.random() < 1 / 12:
        return _pick(rng, *invalid)
    return _pick(rng, *valid)


def _lr(rng):
    if rng.random() < 0.05:  # a tensor learning rate (refused with foreach by some)
        return "T.tensor(0.05, dtype=T.float64)"
    return _val(rng, (0.1, 0.01, 0.5, 1e-3, 0.0), (-0.01,))


def _maybe(rng, p, text):
    return text if rng.random() < p else ""


def _common(rng, names):
    """Keyword arguments most optimizers share, each drawn or left to its default."""
    out = ""
    if "weight_decay" in names:
        out += _maybe(rng, 0.5, f", weight_decay={_val(rng, (0.0, 0.1, 0.5), (-0.1,))!r}")
    if "maximize" in names:
        out += _maybe(rng, 0.4, f", maximize={bool(rng.random() < 0.5)}")
    if "foreach" in names:
        out += _maybe(rng, 0.4, f", foreach={_pick(rng, True, False, None)}")
    return out


def _betas(rng):
    return _val(rng, ((0.9, 0.999), (0.5, 0.9), (0.0, 0.99), (0.95, 0.0)),
                ((1.0, 0.9), (0.9, -0.1)))


def _sgd(rng):
    args = f"lr={_lr(rng)}"
    mom = _val(rng, (0.0, 0.9, 0.5), (-0.5,))
    args += f", momentum={mom}"
    args += _maybe(rng, 0.4, f", dampening={_pick(rng, 0.0, 0.1, 0.5)}")
    args += _maybe(rng, 0.5, f", nesterov={bool(rng.random() < 0.6)}")
    return "SGD", args + _common(rng, ("weight_decay", "maximize", "foreach")), "momentum"


def _adam(rng, name):
    args = f"lr={_lr(rng)}"
    args += _maybe(rng, 0.6, f", betas={_betas(rng)!r}")
    args += _maybe(rng, 0.3, f", eps={_val(rng, (1e-8, 1e-3, 0.0), (-1e-8,))!r}")
    args += _maybe(rng, 0.6, f", amsgrad={bool(rng.random() < 0.6)}")
    if name == "Adam":
        args += _maybe(rng, 0.3, f", decoupled_weight_decay={bool(rng.random() < 0.6)}")
    return name, args + _common(rng, ("weight_decay", "maximize", "foreach")), "betas"


def _adamax(rng):
    args = f"lr={_lr(rng)}" + _maybe(rng, 0.6, f", betas={_betas(rng)!r}")
    args += _maybe(rng, 0.3, f", eps={_val(rng, (1e-8, 1e-3), (-1e-8,))!r}")
    return "Adamax", args + _common(rng, ("weight_decay", "maximize", "foreach")), "betas"


def _nadam(rng):
    args = f"lr={_lr(rng)}" + _maybe(rng, 0.6, f", betas={_betas(rng)!r}")
    args += _maybe(rng, 0.4, f", momentum_decay={_val(rng, (0.004, 0.1), (-0.1,))!r}")
    args += _maybe(rng, 0.4, f", decoupled_weight_decay={bool(rng.random() < 0.6)}")
    return "NAdam", args + _common(rng, ("weight_decay", "maximize", "foreach")), "betas"


def _radam(rng):
    args = f"lr={_lr(rng)}" + _maybe(rng, 0.6, f", betas={_betas(rng)!r}")
    args += _maybe(rng, 0.4, f", decoupled_weight_decay={bool(rng.random() < 0.6)}")
    return "RAdam", args + _common(rng, ("weight_decay", "maximize", "foreach")), "betas"


def _rmsprop(rng):
    args = f"lr={_lr(rng)}"
    args += _maybe(rng, 0.5, f", alpha={_val(rng, (0.99, 0.5, 0.0), (-0.1,))!r}")
    args += _maybe(rng, 0.5, f", momentum={_val(rng, (0.0, 0.9), (-0.5,))!r}")
    args += _maybe(rng, 0.5, f", centered={bool(rng.random() < 0.6)}")
    args += _maybe(rng, 0.3, f", eps={_val(rng, (1e-8, 1e-2), (-1.0,))!r}")
    return "RMSprop", args + _common(rng, ("weight_decay", "maximize", "foreach")), "momentum"


def _adagrad(rng):
    args = f"lr={_lr(rng)}"
    args += _maybe(rng, 0.4, f", lr_decay={_val(rng, (0.0, 0.1), (-0.1,))!r}")
    args += _maybe(rng, 0.4, f", initial_accumulator_value={_val(rng, (0.0, 0.5), (-1.0,))!r}")
    args += _maybe(rng, 0.3, f", eps={_val(rng, (1e-10, 1e-2), (-1.0,))!r}")
    return "Adagrad", args + _common(rng, ("weight_decay", "maximize", "foreach")), None


def _adadelta(rng):
    args = f"lr={_val(rng, (1.0, 0.5, 0.0), (-1.0,))}"
    args += _maybe(rng, 0.5, f", rho={_val(rng, (0.9, 0.5, 0.0, 1.0), (1.5,))!r}")
    args += _maybe(rng, 0.3, f", eps={_val(rng, (1e-6, 1e-2), (-1.0,))!r}")
    return "Adadelta", args + _common(rng, ("weight_decay", "maximize", "foreach")), None


def _asgd(rng):
    args = f"lr={_lr(rng)}"
    args += _maybe(rng, 0.5, f", lambd={_pick(rng, 1e-4, 0.1)!r}")
    args += _maybe(rng, 0.5, f", alpha={_pick(rng, 0.75, 0.5)!r}")
    args += _maybe(rng, 0.5, f", t0={_pick(rng, 1e6, 1.0, 2.0, 0.0)!r}")
    # no foreach: torch's multi-tensor ASGD rounds differently from its own single-tensor
    # one (about 1e-7 relative in float64, its eta applied through a float32 addcmul), and
    # ember follows the single-tensor one
    return "ASGD", args + _common(rng, ("weight_decay", "maximize")), None


def _rprop(rng):
    args = f"lr={_lr(rng)}"
    args += _maybe(rng, 0.5, f", etas={_val(rng, ((0.5, 1.2), (0.3, 1.5)), ((1.2, 0.5),))!r}")
    args += _maybe(rng, 0.4, f", step_sizes={_pick(rng, (1e-6, 50), (0.01, 0.2))!r}")
    return "Rprop", args + _common(rng, ("maximize", "foreach")), None


def _adafactor(rng):
    args = f"lr={_lr(rng)}"
    args += _maybe(rng, 0.4, f", beta2_decay={_val(rng, (-0.8, -0.5), (0.5,))!r}")
    args += _maybe(rng, 0.3, f", d={_val(rng, (1.0, 2.0), (0.5, -1.0))!r}")
    args += _maybe(rng, 0.3, f", eps={_pick(rng, (None, 1e-3), (1e-30, 1e-3))!r}")
    return "Adafactor", args + _common(rng, ("weight_decay", "maximize", "foreach")), None


def _lbfgs(rng):
    # few iterations: once L-BFGS has converged its curvature pairs are differences of
    # nearly equal gradients, and rounding (either library's) decides the next steps
    args = f"lr={_val(rng, (1, 0.5, 0.1), (-1,))}"
    args += f", max_iter={_pick(rng, 1, 2, 3, 4)}"
    args += _maybe(rng, 0.3, f", max_eval={_pick(rng, 2, 4)}")
    args += _maybe(rng, 0.4, f", history_size={_pick(rng, 1, 2, 10)}")
    args += _maybe(rng, 0.3, f", tolerance_grad={_pick(rng, 1e-7, 1e-2)!r}")
    args += _maybe(rng, 0.5, f", line_search_fn={_val(rng, (None, 'strong_wolfe'), ('x',))!r}")
    return "LBFGS", args, None


def _muon(rng):
    args = f"lr={_val(rng, (0.02, 1e-3), (-0.1,))}"
    args += _maybe(rng, 0.5, f", momentum={_val(rng, (0.95, 0.5, 0.0), (-0.5,))}")
    args += _maybe(rng, 0.5, f", nesterov={bool(rng.random() < 0.5)}")
    args += _maybe(rng, 0.5, f", weight_decay={_val(rng, (0.1, 0.0), (-0.1,))}")
    args += _maybe(rng, 0.4, f", ns_steps={_val(rng, (5, 1, 3), (0, 101))}")
    args += _maybe(rng, 0.4, f", adjust_lr_fn={_val(rng, (None, 'original', 'match_rms_adamw'), ('x',))!r}")  # noqa: E501
    return "Muon", args, "momentum"


_OPTIMIZERS = (_sgd, _sgd, lambda rng: _adam(rng, "Adam"), lambda rng: _adam(rng, "Adam"),
               lambda rng: _adam(rng, "AdamW"), _adamax, _nadam, _radam, _rmsprop, _adagrad,
               _adadelta, _asgd, _rprop, _adafactor)


#: a learning rate for every group, as one number or a list
_LRS = ("1e-3", "[1e-3 * (i + 1) for i in range(len(opt.param_groups))]")

_MAX_LRS = ("0.1", "[0.1 * (i + 1) for i in range(len(opt.param_groups))]")


def _scheduler(rng, kind):
    """Source building a scheduler ``sched`` on ``opt`` and whether its step takes a
    metric."""
    r = int(rng.integers(14))
    if r == 0:
        return f"StepLR(opt, step_size={_pick(rng, 1, 2, 3)}, gamma={_pick(rng, 0.5, 0.1)})"
    if r == 1:
        return (f"MultiStepLR(opt, milestones={_pick(rng, [1, 3], [2, 2, 4], [3, 1])!r}, "
                f"gamma={_pick(rng, 0.5, 0.1)})")
    if r == 2:
        return (f"ConstantLR(opt, factor={_val(rng, (0.5, 1.0 / 3, 1.0), (1.5, 0.0))!r}, "
                f"total_iters={_pick(rng, 2, 5)})")
    if r == 3:
        return (f"LinearLR(opt, start_factor={_val(rng, (0.25, 1.0), (0.0,))!r}, "
                f"end_factor={_val(rng, (1.0, 0.5), (1.5,))!r}, total_iters={_pick(rng, 2, 4)})")
    if r == 4:
        return f"ExponentialLR(opt, gamma={_pick(rng, 0.9, 0.5)})"
    if r == 5:
        return (f"PolynomialLR(opt, total_iters={_pick(rng, 2, 4, 6)}, "
                f"power={_pick(rng, 1.0, 2.0, 0.5)})")
    if r == 6:
        return (f"CosineAnnealingLR(opt, T_max={_pick(rng, 2, 3, 10)}, "
                f"eta_min={_pick(rng, 0.0, 1e-3)})")
    if r == 7:
        return (f"CosineAnnealingWarmRestarts(opt, T_0={_val(rng, (1, 2, 3), (0,))}, "
                f"T_mult={_val(rng, (1, 2), (0,))}, eta_min={_pick(rng, 0.0, 1e-3)})")
    if r == 8:
        mom = kind is not None and rng.random() < 0.6
        return (f"CyclicLR(opt, base_lr={_val(rng, _LRS, ('[1e-3, 2e-3, 3e-3]',))}, max_lr=0.1, "
                f"step_size_up={_pick(rng, 1, 2, 3)}, mode={_pick(rng, 'triangular', 'triangular2', 'exp_range')!r}, "  # noqa: E501
                f"gamma=0.9, cycle_momentum={mom})")
    if r == 9:
        mom = kind is not None and rng.random() < 0.6
        return (f"OneCycleLR(opt, max_lr={_val(rng, _MAX_LRS, ('[0.1, 0.2, 0.3]',))}, "
                "total_steps=8, "
                f"pct_start={_pick(rng, 0.3, 0.5)}, "
                f"anneal_strategy={_pick(rng, 'cos', 'linear')!r}, "
                f"three_phase={bool(rng.random() < 0.3)}, cycle_momentum={mom})")
    if r == 10:
        return f"LambdaLR(opt, lr_lambda=lambda e: {_pick(rng, '0.9 ** e', '1.0 / (e + 1)')})"
    if r == 11:
        return f"MultiplicativeLR(opt, lr_lambda=lambda e: {_pick(rng, '0.9', '0.5')})"
    if r == 12:
        return ("SequentialLR(opt, schedulers=[T.optim.lr_scheduler.ConstantLR(opt, "
                "factor=0.5, total_iters=2), T.optim.lr_scheduler.ExponentialLR(opt, "
                f"gamma=0.9)], milestones=[{_pick(rng, 1, 2, 3)}])")
    return ("ChainedScheduler([T.optim.lr_scheduler.ConstantLR(opt, factor=0.5, "
            "total_iters=2), T.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)])")


def optim(rng):
    """One ``torch.optim`` optimizer with random hyper-parameters, a few steps, and maybe
    a scheduler."""
    r = rng.random()
    special = "LBFGS" if r < 0.07 else "Muon" if r < 0.14 else None
    name, args, kind = (_lbfgs(rng) if special == "LBFGS" else _muon(rng) if special else
                        _OPTIMIZERS[int(rng.integers(len(_OPTIMIZERS)))](rng))
    dtype = "float64" if rng.random() < 0.8 or special == "LBFGS" else "float32"
    shapes = [(2, 3), (4,), ()][:int(rng.integers(1, 4))]
    if special == "Muon":  # 2-D parameters only (a 1-D one now and then, refused)
        shapes = [(2, 3), (3, 3), (4,) if rng.random() < 0.1 else (4, 2)][
            :int(rng.integers(1, 4))]
    lines = [_PROLOGUE, "ps = [" + ", ".join(
        f"param({s!r}, {i}, T.{dtype})" for i, s in enumerate(shapes)) + "]"]
    if len(shapes) > 1 and rng.random() < 0.5:
        override = _pick(rng, "'lr': 0.05", "'weight_decay': 0.2", "'lr': 0.3, 'eps': 1e-4",
                         "'maximize': True")
        if name == "SGD" and rng.random() < 0.5:
            override = "'momentum': 0.5, 'nesterov': False"
        lines.append(f"params = [{{'params': ps[:1]}}, {{'params': ps[1:], {override}}}]")
    else:
        lines.append("params = ps")
    lines.append(f"opt = T.optim.{name}(params, {args})")
    sched = rng.random() < 0.5
    plateau = sched and rng.random() < 0.15
    if plateau:
        lines.append("sched = T.optim.lr_scheduler.ReduceLROnPlateau(opt, "
                     f"mode={_pick(rng, 'min', 'max')!r}, factor={_pick(rng, 0.5, 0.1)}, "
                     f"patience={_pick(rng, 0, 1, 2)}, "
                     f"threshold_mode={_pick(rng, 'rel', 'abs')!r}, "
                     f"cooldown={_pick(rng, 0, 1)})")
    elif sched:
        lines.append(f"sched = T.optim.lr_scheduler.{_scheduler(rng, kind)}")
    steps = int(rng.integers(1, 3 if special == "LBFGS" else 6))
    # now and then the last parameter takes no part in the loss: its grad stays None
    used = "ps[:-1]" if len(shapes) > 1 and rng.random() < 0.15 else "ps"
    lines += ["lrs = []", f"for step in range({steps}):"]
    if special == "LBFGS":
        lines += ["    def closure():",
                  "        opt.zero_grad()",
                  f"        L = loss_of({used}, step)",
                  "        L.backward()",
                  "        return L",
                  "    L = opt.step(closure)"]
    else:
        lines += ["    opt.zero_grad()",
                  f"    L = loss_of({used}, step)",
                  "    L.backward()",
                  "    opt.step()"]
    if plateau:
        lines += ["    sched.step(float(L))", "    lrs.append(sched.get_last_lr())"]
    elif sched:
        lines += ["    sched.step()", "    lrs.append(sched.get_last_lr())"]
    elif special != "LBFGS" and rng.random() < 0.3:
        # resume: a fresh optimizer takes the state dict and one more step
        lines += [f"opt2 = T.optim.{name}(params, {args})",
                  "opt2.load_state_dict(opt.state_dict())",
                  "opt = opt2",
                  "opt.zero_grad()",
                  f"loss_of({used}, {steps}).backward()",
                  "opt.step()"]
    lines.append("out = (tuple(p.detach() for p in ps), repr(lrs), state_view(opt, ps), "
                 "groups_view(opt))")
    return "\n".join(lines)
