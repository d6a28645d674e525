"""L-BFGS with an optional strong-Wolfe line search (Nocedal & Wright, algorithms 7.4,
3.5 and 3.6). All parameters are handled as one flat vector."""

from __future__ import annotations

import math

from ._base import check_range
from .optimizer import Optimizer

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), kept within bounds."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square >= 0:
        d2 = math.sqrt(d2_square)
        if x1 <= x2:
            pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(pos, lo), hi)
    return (lo + hi) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """Find a step t satisfying the strong Wolfe conditions: bracket, then zoom."""
    d_norm = float(d.abs().max())
    g = g.clone()
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = float(g_new.dot(d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    it = 0
    while it < max_ls:
        if f_new > f + c1 * t * gtd or (it > 1 and f_new >= f_prev):
            bracket, bf = [t_prev, t], [f_prev, f_new]
            bg, bgtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bf, bg, bgtd = [t], [f_new], [g_new], [gtd_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bf = [t_prev, t], [f_prev, f_new]
            bg, bgtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        lo, hi = t + 0.01 * (t - t_prev), t * 10
        prev = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(lo, hi))
        t_prev, f_prev, g_prev, gtd_prev = prev, f_new, g_new.clone(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = float(g_new.dot(d))
        it += 1
    if it == max_ls:
        bracket, bf, bg, bgtd = [0.0, t], [f, f_new], [g, g_new], [gtd, gtd_new]

    insufficient = False
    low, high = (0, 1) if bf[0] <= bf[-1] else (1, 0)
    while not done and it < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bf[0], bgtd[0], bracket[1], bf[1], bgtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insufficient or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) \
                    else min(bracket) + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = float(g_new.dot(d))
        it += 1
        if f_new > f + c1 * t * gtd or f_new >= bf[low]:
            bracket[high], bf[high], bg[high], bgtd[high] = t, f_new, g_new.clone(), gtd_new
            low, high = (0, 1) if bf[0] <= bf[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bf[high] = bracket[low], bf[low]
                bg[high], bgtd[high] = bg[low], bgtd[low]
            bracket[low], bf[low], bg[low], bgtd[low] = t, f_new, g_new.clone(), gtd_new
    return bf[low], bg[low], bracket[low], evals


class LBFGS(Optimizer):
    """Limited-memory BFGS. ``step(closure)`` needs the closure (it re-evaluates the loss);
    only one parameter group is supported, as in PyTorch.

    Args:
        params: an iterable of parameters.
        lr (float): step length. Default: 1.
        max_iter (int): iterations per ``step``. Default: 20.
        max_eval (int, optional): function evaluations per ``step`` (default max_iter * 1.25).
        tolerance_grad (float): stop when the gradient's max-abs falls below. Default: 1e-7.
        tolerance_change (float): stop when the loss or step changes less. Default: 1e-9.
        history_size (int): number of curvature pairs kept. Default: 100.
        line_search_fn (str, optional): ``"strong_wolfe"`` or None.

    Returns:
        An optimizer; ``step(closure)`` returns the first loss.

    Example:
        >>> import ember
        >>> x = ember.nn.Parameter(ember.tensor([3.0]))
        >>> opt = ember.optim.LBFGS([x])
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = ((x - 1) ** 2).sum()
        ...     loss.backward()
        ...     return loss
        >>> _ = opt.step(closure)
        >>> round(x.item(), 4)
        1.0
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        check_range("learning rate", lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def _numel(self):
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self):
        from .. import cat

        # (a sparse gradient is read dense: the search direction is dense anyway)
        return cat([p.new_zeros(p.numel()) if p.grad is None else
                    (p.grad.to_dense() if p.grad.is_sparse else p.grad).reshape(-1)
                    for p in self._params])

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(update[offset:offset + n].view_as(p), alpha=float(step_size))
            offset += n

    def _clone_params(self):
        return [p.clone() for p in self._params]

    def _set_params(self, data):
        for p, d in zip(self._params, data):
            p.copy_(d)

    def _directional_evaluate(self, closure, x, t, d):
        from ..autograd.grad_mode import enable_grad

        self._add_grad(t, d)
        with enable_grad():
            loss = closure()
        loss = float(loss)  # read under no_grad, as PyTorch's (no requires-grad warning)
        flat_grad = self._gather_flat_grad()
        self._set_params(x)
        return loss, flat_grad

    def step(self, closure):
        """Run up to ``max_iter`` L-BFGS iterations; returns the first loss evaluated."""
        if closure is None:
            raise RuntimeError("LBFGS requires a closure")
        from ..autograd.grad_mode import enable_grad

        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history, line_search = group["history_size"], group["line_search_fn"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if float(flat_grad.abs().max()) <= tol_grad:
            return orig_loss
        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, al = state.get("H_diag"), state.get("al")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # NOTE [ L-BFGS scalars as 0-dim tensors ]
            # PyTorch keeps the curvature pairs' scalars (ys, ro, H_diag, al, and the first
            # step t when the gradient is large) as 0-dim tensors of the parameters' dtype:
            # they are what its state holds (state_dict, a resumed run), and in float32 they
            # round in float32. Here the same, each scalar used as a number where torch
            # passes it as an alpha.
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                h_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                # kept in the state, of the history's length, as PyTorch keeps it
                al = al or [None] * history
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q.add_(old_dirs[i], alpha=-al[i].item())
                r = q * h_diag
                for i in range(len(old_dirs)):
                    be = old_dirs[i].dot(r) * ro[i]
                    r.add_(old_stps[i], alpha=(al[i] - be).item())
                d = r
            prev_flat_grad = flat_grad.clone()
            prev_loss = loss
            if state["n_iter"] == 1:
                inv = 1.0 / flat_grad.abs().sum()
                t = (inv if inv < 1.0 else 1.0) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tol_change:
                break
            ls_evals = 0
            if line_search is not None:
                if line_search != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_params()

                def obj(x, step, direction):
                    return self._directional_evaluate(closure, x, step, direction)

                # the search may spend what is left of max_eval, as PyTorch's
                t_in = t
                loss, flat_grad, t, ls_evals = _strong_wolfe(
                    obj, x_init, float(t), d, loss, flat_grad, float(gtd),
                    max_ls=max_eval - evals)
                if not isinstance(t_in, (int, float)) or t != t_in:
                    # a step the search interpolated is a 0-dim tensor in PyTorch's state
                    # (NOTE [ L-BFGS scalars as 0-dim tensors ])
                    t = flat_grad.new_tensor(t)
                self._add_grad(t, d)
                opt_cond = float(flat_grad.abs().max()) <= tol_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    with enable_grad():
                        loss = closure()
                    loss = float(loss)
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(flat_grad.abs().max()) <= tol_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals
            if n_iter == max_iter or evals >= max_eval or opt_cond:
                break
            if float((d * t).abs().max()) <= tol_change:
                break
            if abs(loss - prev_loss) < tol_change:
                break
        if al is not None:
            state["al"] = al
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
