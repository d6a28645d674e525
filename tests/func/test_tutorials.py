"""The ``torch.func`` tutorials' workloads, written as the tutorials write them, run in ember
and in PyTorch on the same weights and data: per-sample gradients, model ensembling,
Jacobians and Hessians of a small network, the neural tangent kernel."""

import copy

import numpy as np
import pytest

import ember
import ember.func as EF
from tests.conftest import HAS_TORCH
from tests.func.test_eager_transforms import assert_same

if HAS_TORCH:
    import torch
    import torch.func as TF

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _cnn(T):
    nn, F = T.nn, T.nn.functional

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.fc1 = nn.Linear(4 * 3 * 3, 5)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(x, 2)
            return F.log_softmax(self.fc1(T.flatten(x, 1)), dim=1)

    return SimpleCNN()


def _mlp(T, d_in=4, hidden=6, d_out=3):
    nn = T.nn
    return nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, d_out))


def _pair(make):
    """The same model in torch and ember (float64, ember's weights copied from torch's)."""
    torch.manual_seed(0)
    tm = make(torch).double()
    em = make(ember).double()
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return em, tm


def _data(*shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    return ember.tensor(a), torch.tensor(a)


def test_per_sample_gradients_cnn():
    em, tm = _pair(_cnn)
    data = _data(6, 1, 8, 8)
    targets = (ember.tensor([0, 1, 2, 3, 4, 0]), torch.tensor([0, 1, 2, 3, 4, 0]))

    def run(T, F, model, x, y):
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def compute_loss(params, buffers, sample, target):
            batch, targets = sample.unsqueeze(0), target.unsqueeze(0)
            predictions = F.functional_call(model, (params, buffers), (batch,))
            return T.nn.functional.nll_loss(predictions, targets)

        ft_compute_grad = F.grad(compute_loss)
        ft_compute_sample_grad = F.vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
        return ft_compute_sample_grad(params, buffers, x, y)

    ours = run(ember, EF, em, data[0], targets[0])
    theirs = run(torch, TF, tm, data[1], targets[1])
    assert_same(ours, theirs)


def test_per_sample_gradients_equal_loop():
    em, _ = _pair(_mlp)
    x, _ = _data(5, 4)
    params = {k: v.detach() for k, v in em.named_parameters()}

    def loss(params, sample):
        return EF.functional_call(em, params, (sample,)).pow(2).sum()

    batched = EF.vmap(EF.grad(loss), in_dims=(None, 0))(params, x)
    for i in range(5):
        one = EF.grad(loss)(params, x[i])
        for k in params:
            np.testing.assert_allclose(batched[k][i].numpy(), one[k].numpy())


def test_model_ensembling():
    pairs = []
    for seed in range(3):
        torch.manual_seed(seed)
        tm = _mlp(torch).double()
        em = _mlp(ember).double()
        em.load_state_dict({k: ember.tensor(v.detach().numpy())
                            for k, v in tm.state_dict().items()})
        pairs.append((em, tm))
    minibatches = _data(3, 5, 4)
    minibatch = _data(5, 4, seed=1)

    def run(F, models, minibatches, minibatch):
        params, buffers = F.stack_module_state(models)
        base_model = copy.deepcopy(models[0]).to("meta")

        def fmodel(params, buffers, x):
            return F.functional_call(base_model, (params, buffers), (x,))

        different = F.vmap(fmodel)(params, buffers, minibatches)
        same = F.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
        return different, same, params["0.weight"].requires_grad

    ours = run(EF, [p[0] for p in pairs], minibatches[0], minibatch[0])
    theirs = run(TF, [p[1] for p in pairs], minibatches[1], minibatch[1])
    assert_same(ours, theirs)


def test_jacobian_of_mlp_jacrev_and_jacfwd_agree_with_torch():
    em, tm = _pair(_mlp)
    x = _data(4)

    def run(F, model, x):
        return F.jacrev(model)(x), F.jacfwd(model)(x)

    ours, theirs = run(EF, em, x[0]), run(TF, tm, x[1])
    assert_same(ours, theirs)
    assert ours[0].requires_grad == theirs[0].requires_grad  # the weights require grad
    np.testing.assert_allclose(ours[0].detach().numpy(), ours[1].detach().numpy())


def test_jacobian_with_respect_to_weights_and_bias():
    def run(T, F):
        weight = T.tensor(np.arange(12.0).reshape(3, 4) / 10, dtype=T.float64)
        bias = T.tensor([0.1, -0.2, 0.3], dtype=T.float64)
        x = T.tensor([0.5, -1.0, 2.0, 0.25], dtype=T.float64)

        def predict(weight, bias, x):
            return T.nn.functional.linear(x, weight, bias).tanh()

        return F.jacrev(predict, argnums=(0, 1))(weight, bias, x)

    assert_same(run(ember, EF), run(torch, TF))


def test_hessian_of_small_network():
    em, tm = _pair(lambda T: _mlp(T, 3, 4, 1))
    x = _data(3)

    def run(F, model, x):
        f = lambda x: model(x).sum()  # noqa: E731
        return F.hessian(f)(x), F.jacfwd(F.jacrev(f))(x), F.jacrev(F.jacrev(f))(x)

    ours, theirs = run(EF, em, x[0]), run(TF, tm, x[1])
    assert_same(ours, theirs)


def test_batched_hessian_with_vmap():
    def run(T, F):
        x = T.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=T.float64)
        return F.vmap(F.hessian(lambda v: (v.sin() * v.prod()).sum()))(x)

    assert_same(run(ember, EF), run(torch, TF))


def test_hvp_forward_over_reverse():
    def run(T, F):
        x = T.tensor([0.3, -0.7, 1.1], dtype=T.float64)
        v = T.tensor([1.0, 2.0, -1.0], dtype=T.float64)
        f = lambda x: (x.exp() * x.cos()).sum()  # noqa: E731
        return F.jvp(F.grad(f), (x,), (v,))[1]

    assert_same(run(ember, EF), run(torch, TF))


def test_neural_tangent_kernel():
    em, tm = _pair(lambda T: _mlp(T, 4, 5, 2))
    x1, x2 = _data(3, 4), _data(2, 4, seed=3)

    def run(T, F, model, x1, x2):
        params = {k: v.detach() for k, v in model.named_parameters()}

        def fnet_single(params, x):
            return F.functional_call(model, params, (x.unsqueeze(0),)).squeeze(0)

        def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2):
            jac1 = F.vmap(F.jacrev(fnet_single), (None, 0))(params, x1)
            jac1 = [j.flatten(2) for j in jac1.values()]
            jac2 = F.vmap(F.jacrev(fnet_single), (None, 0))(params, x2)
            jac2 = [j.flatten(2) for j in jac2.values()]
            result = T.stack([T.einsum("Naf,Mbf->NMab", j1, j2) for j1, j2 in zip(jac1, jac2)])
            return result.sum(0)

        return empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2)

    ours = run(ember, EF, em, x1[0], x2[0])
    theirs = run(torch, TF, tm, x1[1], x2[1])
    assert_same(ours, theirs)


def test_replace_all_batch_norm_modules():
    def run(T, F):
        net = T.nn.Sequential(T.nn.Linear(3, 3), T.nn.BatchNorm1d(3))
        F.replace_all_batch_norm_modules_(net)
        bn = net[1]
        return bn.running_mean is None, bn.running_var is None, bn.track_running_stats

    assert run(ember, EF) == run(torch, TF)


def test_stack_module_state_requires_grad_mismatch():
    a, b = ember.nn.Linear(2, 2), ember.nn.Linear(2, 2)
    b.weight.requires_grad_(False)
    with pytest.raises(RuntimeError, match="Expected weight from each model to have the same "
                                           ".requires_grad"):
        EF.stack_module_state([a, b])


def test_stack_module_state_mixed_modes():
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        EF.stack_module_state([ember.nn.Linear(2, 2), ember.nn.Linear(2, 2).eval()])


def test_stack_module_state_empty():
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        EF.stack_module_state([])


def test_functionalize_same_result_and_mutation():
    x = ember.zeros(2)
    out = EF.functionalize(lambda x: x.add_(1) * 2)(x)
    assert out.tolist() == [2.0, 2.0] and x.tolist() == [1.0, 1.0]


def test_functionalize_invalid_remove():
    with pytest.raises(RuntimeError, match="received invalid argument for remove=x"):
        EF.functionalize(lambda x: x, remove="x")
