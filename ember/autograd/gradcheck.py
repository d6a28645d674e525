"""``gradcheck`` / ``gradgradcheck``: analytical gradients against central finite differences.

Every output element ``o_k`` gives a real function ``Re(o_k)`` (and ``Im(o_k)`` for complex
outputs). Its gradient w.r.t. every input element comes from autograd (a backward with
``grad_output = e_k``, resp. ``1j * e_k``) and from central differences (perturbing the
input's real part, and its imaginary part for complex inputs -- PyTorch's convention: the
gradient of a real loss L w.r.t. z = x + iy is dL/dx + i dL/dy).
"""

from __future__ import annotations

import warnings

import numpy as np

from .._core.tensor import Tensor, wrap
from . import _engine


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when a check fails (and raise_exception=True)."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(func, inputs):
    out = _as_tuple(func(*inputs))
    return [o for o in out if isinstance(o, Tensor)]


def _numerical(func, inputs, diff_idx, outputs_meta, eps):
    """For each diff input i and output o: array [n_in_elems, n_out_elems] of d o / d x
    (complex when needed), from real (and imaginary) perturbations."""
    res = {}
    for i in diff_idx:
        x = inputs[i]
        a = x._data
        n = a.size
        per_out_re = [np.zeros((n, m[1]), dtype=np.complex128) for m in outputs_meta]
        per_out_im = [np.zeros((n, m[1]), dtype=np.complex128) for m in outputs_meta] \
            if a.dtype.kind == "c" else None
        for j in range(n):
            idx = np.unravel_index(j, a.shape)
            orig = a[idx].copy()
            for delta, target in ((eps, per_out_re), (1j * eps, per_out_im)):
                if target is None:
                    continue
                a[idx] = orig + delta
                plus = _eval(func, inputs)
                a[idx] = orig - delta
                minus = _eval(func, inputs)
                a[idx] = orig
                for k, (p, m) in enumerate(zip(plus, minus)):
                    target[k][j] = (p - m).reshape(-1) / (2 * eps)
        res[i] = (per_out_re, per_out_im)
    return res


def _eval(func, inputs):
    # not under no_grad: gradgradcheck's function itself differentiates
    outs = _outputs(func, inputs)
    return [np.asarray(o._data, dtype=np.complex128).copy() for o in outs]


def _check(func, inputs, eps, atol, rtol, raise_exception, check_undefined_grad, what):
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._rg]
    if not diff_idx:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of the "
            "them have requires_grad=True.")
    for i in diff_idx:
        if inputs[i]._data.dtype not in (np.float64, np.complex128):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                "complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex. ", stacklevel=3)
    outs = _outputs(func, inputs)
    diff_outs = [k for k, o in enumerate(outs)
                 if o._rg and o._data.dtype.kind in "fc"]
    meta = [(o._data.shape, o._data.size, o._data.dtype.kind == "c") for o in outs]
    numerical = _numerical(func, inputs, diff_idx, meta, eps)
    diff_inputs = [inputs[i] for i in diff_idx]
    for k, o in enumerate(outs):
        if diff_outs and k not in diff_outs:
            # as torch: outputs without a history (lstsq's rank and singular values) are not
            # checked beside differentiable ones; with none, every numerical gradient must be 0
            continue
        shape, m, is_c = meta[k]
        for part in ((0, 1) if is_c else (0,)):
            ana = {i: np.zeros((inputs[i]._data.size, m), dtype=np.complex128)
                   for i in diff_idx}
            if k in diff_outs:
                for e in range(m):
                    go = np.zeros(shape, dtype=o._data.dtype)
                    go.reshape(-1)[e] = 1j if part else 1
                    gs = _engine.grad((o,), diff_inputs, (wrap(go),), retain_graph=True,
                                      allow_unused=True)
                    for i, g in zip(diff_idx, gs):
                        if g is not None:
                            ana[i][:, e] = np.asarray(g._data, np.complex128).reshape(-1)
            for i in diff_idx:
                re, im = numerical[i]
                num_k = re[k].imag if part else re[k].real
                num = num_k.astype(np.complex128)
                if im is not None:
                    num = num + 1j * (im[k].imag if part else im[k].real)
                a_k = ana[i]
                if inputs[i]._data.dtype.kind != "c":
                    a_k = a_k.real.astype(np.complex128)
                if not np.allclose(a_k, num, rtol=rtol, atol=atol, equal_nan=True):
                    diff = np.abs(a_k - num)
                    w = np.unravel_index(int(np.nanargmax(diff)), diff.shape)
                    msg = (f"{what}Jacobian mismatch for output {k} with respect to input {i}"
                           f"{' (imaginary part of the output)' if part else ''},\n"
                           f"numerical:{_fmt(num)}\nanalytical:{_fmt(a_k)}\n"
                           f"worst element: input element {w[0]}, output element {w[1]}: "
                           f"numerical {num[w]} vs analytical {a_k[w]} "
                           f"(|diff| {diff[w]:.3g}, atol {atol}, rtol {rtol})\n")
                    if raise_exception:
                        raise GradcheckError(msg)
                    return False
    if check_undefined_grad and diff_outs:
        # as torch: each output's node must cope with undefined (None) output gradients
        for k in diff_outs:
            node = outs[k]._grad_fn
            if node is None:
                continue
            try:
                res = node._apply([None] * node._n_outputs())
            except Exception as e:  # noqa: BLE001 (reported, as torch does)
                if raise_exception:
                    raise GradcheckError(
                        f"{what}Backward of output {k} ({node.name()}) failed with undefined "
                        f"output gradients: {e}") from e
                return False
            for g in res:
                if g is not None and np.any(np.asarray(g._data) != 0):
                    if raise_exception:
                        raise GradcheckError(
                            f"{what}Expected backward of output {k} ({node.name()}) with "
                            "undefined output gradients to give zero or undefined gradients")
                    return False
    return True


def _fmt(a):
    real = not np.iscomplexobj(a) or not np.any(a.imag)
    arr = a.real if real else a
    return "\n" + np.array2string(arr.T if arr.ndim == 2 else arr, precision=4,
                                  suppress_small=True, threshold=200)


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked=None) -> bool:
    """Check ``func``'s gradients against central finite differences (use float64 inputs).

    Returns True when every analytical Jacobian entry is within ``atol + rtol * |numerical|``;
    otherwise raises ``GradcheckError`` naming the output, the input and the worst element
    (or returns False with ``raise_exception=False``).

    Args:
        func (callable): takes the inputs, returns a tensor or a tuple of tensors.
        inputs (Tensor or tuple): the inputs; those requiring grad are checked.
        eps (float): the finite-difference step. Keyword-only, as the rest.
        atol (float): the absolute tolerance.
        rtol (float): the relative tolerance.
        raise_exception (bool): raise ``GradcheckError`` on failure (else return False).
        nondet_tol (float): the tolerance for non-determinism between two backward runs.
        check_undefined_grad (bool): check that undefined output gradients are handled.
        check_grad_dtypes (bool): check that gradients have their inputs' dtypes.
        check_batched_grad (bool): also check the gradients computed with ``vmap``.
        check_batched_forward_grad (bool): also check batched forward-mode gradients.
        check_forward_ad (bool): also check forward-mode derivatives (``jvp``).
        check_backward_ad (bool): check reverse-mode derivatives.
        fast_mode (bool): check a random projection of the Jacobian instead of all of it.
        masked (bool, optional): accepted for PyTorch compatibility.

    Returns:
        bool: True when the check passes.

    Example::

        >>> import ember
        >>> x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
        >>> ember.autograd.gradcheck(lambda t: t * t, (x,))
        True
    """
    if check_forward_ad and not _check_forward(func, inputs, eps, atol, rtol,
                                                raise_exception):
        return False
    if not check_backward_ad:
        return True
    return _check(func, inputs, eps, atol, rtol, raise_exception, check_undefined_grad, "")


def _check_forward(func, inputs, eps, atol, rtol, raise_exception):
    """``check_forward_ad``: every output's tangent for a one-hot input tangent (and ``1j``
    times it for complex inputs) against the same central differences."""
    from . import _forward

    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._rg
                and x._data.dtype.kind in "fc"]
    if not diff_idx:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of the "
            "them have requires_grad=True.")
    outs = _outputs(func, inputs)
    meta = [(o._data.shape, o._data.size, o._data.dtype.kind == "c") for o in outs]
    numerical = _numerical(func, inputs, diff_idx, meta, eps)
    for i in diff_idx:
        x = inputs[i]
        a = x._data
        re, im = numerical[i]
        for part, num_parts in ((0, re), (1, im)):
            if num_parts is None:
                continue
            for j in range(a.size):
                t = np.zeros(a.shape, a.dtype)
                t.reshape(-1)[j] = 1j if part else 1
                lvl = _forward.enter(nested_ok=True)
                try:
                    d = x.view_as(x)
                    _forward.set_tangent(d, lvl, wrap(t))
                    args = tuple(d if k == i else v for k, v in enumerate(inputs))
                    tans = [_forward.get_tangent(o, lvl) for o in _outputs(func, args)]
                finally:
                    _forward.exit_level(lvl)
                for k, tan in enumerate(tans):
                    num = num_parts[k][j]
                    ana = np.zeros(meta[k][1], np.complex128) if tan is None else \
                        np.asarray(tan._data, np.complex128).reshape(-1)
                    if not np.allclose(ana, num, rtol=rtol, atol=atol, equal_nan=True):
                        msg = (f"Jacobian computed with forward mode mismatch for output {k} "
                               f"with respect to input {i}, input element {j}"
                               f"{' (imaginary direction)' if part else ''},\n"
                               f"numerical:{_fmt(num)}\nanalytical:{_fmt(ana)}\n")
                        if raise_exception:
                            raise GradcheckError(msg)
                        return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """Check second derivatives: gradcheck of the function ``(inputs, v) -> vjp(v)``.

    ``grad_outputs`` default to random tensors in [-1, 1) drawn from the default generator,
    shaped and typed like the outputs (as PyTorch draws them).

    Args:
        func (callable): takes the inputs, returns a tensor or a tuple of tensors.
        inputs (Tensor or tuple): the inputs (float64, requiring grad).
        grad_outputs (tuple of Tensors, optional): the vectors ``v``.
        eps (float): the finite-difference step, as in ``gradcheck``. Keyword-only, as the
            rest.
        atol (float): the absolute tolerance.
        rtol (float): the relative tolerance.
        raise_exception (bool): raise on failure (else return False).
        nondet_tol (float): the tolerance for non-determinism.
        check_undefined_grad (bool): as in ``gradcheck``.
        check_grad_dtypes (bool): as in ``gradcheck``.
        check_batched_grad (bool): as in ``gradcheck``.
        fast_mode (bool): as in ``gradcheck``.
        masked (bool): accepted for PyTorch compatibility.
        gen_non_contig_grad_outputs (bool): use non-contiguous random ``grad_outputs``.
        check_fwd_over_rev (bool): also check forward-over-reverse derivatives.
        check_rev_over_rev (bool): check reverse-over-reverse derivatives.

    Returns:
        bool: True when the check passes.

    Example:
        >>> x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
        >>> ember.autograd.gradgradcheck(lambda t: t ** 3, (x,))
        True
    """
    inputs = _as_tuple(inputs)
    outs = _outputs(func, inputs)
    diff_outs = [o for o in outs if o._rg and o._data.dtype.kind in "fc"]
    if grad_outputs is None:
        # drawn from the default generator in [-1, 1), as PyTorch draws them (the same
        # values after the same manual_seed)
        from ..testing import make_tensor

        grad_outputs = [make_tensor(tuple(o.shape), dtype=o.dtype, device=o.device, low=-1,
                                    high=1, requires_grad=True,
                                    noncontiguous=gen_non_contig_grad_outputs)
                        for o in diff_outs]
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._rg]

    def new_func(*args):
        ins, gos = args[:n_in], args[n_in:]
        o = [t for t in _outputs(func, ins) if t._rg and t._data.dtype.kind in "fc"]
        if not o:
            return ()
        gs = _engine.grad(tuple(o), [ins[i] for i in diff_idx], gos, create_graph=True,
                          allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return _check(new_func, inputs + grad_outputs, eps, atol, rtol, raise_exception,
                  check_undefined_grad, "Gradgradcheck: ")
