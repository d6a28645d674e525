"""Helpers shared by the optimizer implementations."""

from __future__ import annotations


#: the types of hyper-parameters a step may hand to a compiled kernel as plain numbers (a
#: tuple: ``float | int`` would build a union object at every test)
NUMBERS = (float, int)


def closure_loss(closure):
    """Evaluate ``closure`` with gradients enabled (steps themselves run under no_grad)."""
    if closure is None:
        return None
    from ..autograd.grad_mode import enable_grad

    with enable_grad():
        return closure()


def check_range(name, value, low=0.0, high=None, *, low_open=False, high_open=True):
    """PyTorch's 'Invalid <name>: <value>' ValueError for out-of-range hyper-parameters."""
    bad = value < low or (low_open and value == low)
    if high is not None:
        bad = bad or value > high or (high_open and value == high)
    if bad:
        raise ValueError(f"Invalid {name}: {value}")


def check_fused(fused, foreach, differentiable):
    """PyTorch's checks on ``fused=True`` (which ember runs as its flat step)."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def state_step(state):
    """The 'step' entry (a float32 0-dim tensor, as PyTorch keeps it)."""
    from .. import tensor

    if "step" not in state:
        state["step"] = tensor(0.0)
    return state["step"]


def check_tensor_lr(lr, foreach, capturable):
    """PyTorch's refusals of a Tensor ``lr`` that Adam and AdamW make at construction."""
    from .. import Tensor

    if isinstance(lr, Tensor):
        if foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and "
                             "foreach=True")
        if lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")


def check_adam_hparams(lr, eps, betas, weight_decay):
    """The hyper-parameter checks every Adam-family optimizer makes."""
    check_range("learning rate", lr)
    check_range("epsilon value", eps)
    check_range("beta parameter at index 0", betas[0], 0.0, 1.0)
    check_range("beta parameter at index 1", betas[1], 0.0, 1.0)
    check_range("weight_decay value", weight_decay)


def zeros_state(*names):
    """A state initialiser: a 'step' counter and zero tensors like the parameter."""
    def init(p, state):
        from .. import zeros_like

        state_step(state)
        for name in names:
            state[name] = zeros_like(p)

    return init


def step_group(optimizer, group, init, keys, update, **hparams):
    """Gather the group's parameters with gradients and their state ``keys`` (in the order
    ``update`` takes them) and run the update, flat where it pays (NOTE [ Flat optimizer
    step ] in _flat.py)."""
    from ._flat import apply_update

    # NOTE [ Tensor learning rates ]
    # PyTorch takes lr as a one-element Tensor (schedulers then fill_ it in place, and
    # optimizer-in-backward recipes share one). The update kernels take Python numbers, so
    # a Tensor lr that needs no gradient is read as its value here, each step; one that
    # requires grad (a differentiable optimizer learning its lr) is passed through.
    lr = hparams.get("lr")
    if lr is not None and not isinstance(lr, (int, float)) and not getattr(
            lr, "requires_grad", True):
        hparams["lr"] = lr.item()
    params, grads, *columns = gather(optimizer, group, init, *keys)
    apply_update(optimizer, group, params, grads, columns, keys, update, **hparams)


def gather(optimizer, group, init, *keys):
    """(params, grads, *state columns) for the parameters of ``group`` that have gradients;
    ``init(param, state)`` fills a parameter's state the first time it is seen. An optimizer
    class with a ``_sparse_refusal`` message raises it as a RuntimeError for a sparse
    gradient, before that parameter's state is made (PyTorch's words, class by class)."""
    params, grads = [], []
    columns = [[] for _ in keys]
    refusal = getattr(optimizer, "_sparse_refusal", None)
    for p in group["params"]:
        if p.grad is None:
            continue
        if refusal is not None and p.grad.is_sparse:
            raise RuntimeError(refusal)
        st = optimizer.state[p]
        if not st and init is not None:
            init(p, st)
        params.append(p)
        grads.append(p.grad)
        for col, key in zip(columns, keys):
            col.append(st.get(key))
    return (params, grads, *columns)
