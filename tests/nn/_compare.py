"""Run the same layer in ember and PyTorch from the same weights; compare values and grads."""

import numpy as np

import ember
from ember.testing import assert_close


def to_torch(x, requires_grad=False):
    import torch

    t = torch.from_numpy(np.array(x.detach().numpy(), copy=True))
    return t.requires_grad_(requires_grad) if t.is_floating_point() else t


def copy_weights(ember_module, torch_module):
    sd = {k: ember.from_numpy(v.detach().numpy().copy())
          for k, v in torch_module.state_dict().items()}
    ember_module.load_state_dict(sd)


def compare(ember_fn, torch_fn, inputs, *, grad=True, rtol=1e-4, atol=1e-5, ember_params=(),
            torch_params=(), seed=0, grad_args=None, device=None):
    """Call both with the same inputs (ember tensors; converted for torch); compare outputs,
    then backprop the same random cotangent and compare input and parameter gradients.
    ``grad_args`` picks the inputs that require grad (default: every floating input).
    ``device``: ember runs there (inputs copied to it; ``ember_fn``'s parameters must be
    there already), and its outputs and gradients must stay there."""

    def wants(i, x):
        return grad and x.is_floating_point() and (grad_args is None or i in grad_args)

    def on(x):
        return x if device is None else x.to(device)

    e_in = [on(x.detach().clone()).requires_grad_(wants(i, x))
            if isinstance(x, ember.Tensor) else x for i, x in enumerate(inputs)]
    t_in = [to_torch(x, wants(i, x)) if isinstance(x, ember.Tensor) else x
            for i, x in enumerate(inputs)]
    e_out = ember_fn(*e_in)
    t_out = torch_fn(*t_in)
    e_list = e_out if isinstance(e_out, (tuple, list)) else [e_out]
    t_list = t_out if isinstance(t_out, (tuple, list)) else [t_out]
    for a, b in zip(e_list, t_list):
        if device is not None and isinstance(a, ember.Tensor):
            assert a.device.type == ember.device(device).type, f"output on {a.device}"
        assert_close(a, b, rtol=rtol, atol=atol)
    if not grad:
        return e_out
    rng = np.random.default_rng(seed)
    e_loss, t_loss = 0, 0
    for a, b in zip(e_list, t_list):
        if isinstance(a, ember.Tensor) and a.is_floating_point() and a.requires_grad:
            g = rng.standard_normal(tuple(a.shape)).astype(a.numpy(force=True).dtype)
            e_loss = e_loss + (a * on(ember.from_numpy(g))).sum()
            t_loss = t_loss + (b * to_torch(ember.from_numpy(g))).sum()
    e_loss.backward()
    t_loss.backward()
    for a, b in zip(e_in, t_in):
        if isinstance(a, ember.Tensor) and a.requires_grad:
            assert device is None or a.grad.device == a.device, "input grad off the device"
            assert_close(a.grad, b.grad, rtol=rtol, atol=atol, msg="input grad")
    for p, q in zip(ember_params, torch_params):
        assert device is None or p.grad.device == p.device, "parameter grad off the device"
        assert_close(p.grad, q.grad, rtol=rtol, atol=atol, msg="parameter grad")
    return e_out
