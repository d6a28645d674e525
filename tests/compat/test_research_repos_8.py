"""Twenty-one more whole programs written the way public repositories and tutorials write
them, run unchanged on PyTorch and through ``python -m ember.compat.run``, printing the same.

The programs live in ``programs/research_8/`` (our own code, after the named repositories'
and tutorials' patterns):

- ``kan_bspline``: Blealtan/efficient-kan's ``KANLinear`` (Cox-de Boor B-splines over a
  grid buffer, ``curve2coeff`` by batched ``linalg.lstsq``, grid updates from sorted
  quantiles, the L1/entropy regulariser), AdamW then strong-Wolfe LBFGS;
- ``sam_lookahead``: davda54/sam's ``SAM`` optimizer wrapping a base optimizer class
  (shared ``param_groups``, ``first_step``/``second_step``, the closure form, adaptive SAM,
  BatchNorm momentum switched off), a timm-style ``Lookahead``, the gradient-clipping
  helpers (``get_total_norm``, ``clip_grads_with_norm_``, ``error_if_nonfinite``);
- ``deq_anderson``: the implicit-layers tutorial's DEQ (Anderson acceleration with a
  batched bordered ``linalg.solve``, the implicit backward as a fixed point in a
  ``register_hook``), checked against unrolled differentiation;
- ``bayes_uncertainty``: Bayes by Backprop with a scale-mixture prior, MC dropout with
  predictive entropy and mutual information, ECE and gpleiss's temperature scaling;
- ``neural_ca``: growing neural cellular automata (Sobel perception as a depthwise conv,
  stochastic fire masks, alive masks by max-pooling, a sample pool with damage, normalised
  gradients) under ``use_deterministic_algorithms``;
- ``fno_operator``: neuraloperator's FNO (``cfloat`` spectral weights, ``rfft``/``irfft``
  and ``rfft2``, complex ``einsum``, ``LpLoss``, ``UnitGaussianNormalizer``), Adam over
  complex parameters;
- ``quant_ptq_dynamic``: the eager-mode quantization tutorials (``quantize_dynamic`` of an
  LSTM word model, quantized tensors and observers by hand, static PTQ with stubs,
  ``FloatFunctional``, fusion, calibration and ``convert``);
- ``trainer_callbacks``: a hand-written ``Trainer`` (early stopping, best checkpoint,
  gradient accumulation, disabled autocast/GradScaler, OneCycleLR, tqdm) resumed from the
  middle of an epoch to the uninterrupted run's end, and ``detect_anomaly``;
- ``llama_gqa_cache``: a Llama-3-style decoder (``nn.RMSNorm``, complex rotary embeddings,
  ``enable_gqa`` attention against ``repeat_kv``, ``sdpa_kernel``, a KV cache checked
  against recomputation, nanoGPT's ``configure_optimizers`` with the fused check, top-p);
- ``egnn_schnet``: vgsatorras/egnn's equivariant layers (checked under rotation,
  translation and permutation) and a SchNet energy whose negative gradient is fitted as
  forces (``create_graph``);
- ``capsnet_routing``: CapsNet's squash, routing by agreement and margin/reconstruction
  losses;
- ``poincare_embeddings``: facebookresearch/poincare-embeddings' distance ``Function``,
  Riemannian SGD with ``renorm_``, negative sampling and rank/MAP evaluation;
- ``attention_tsp``: wouterkool/attention-learn-to-route's attention model with REINFORCE
  against a greedy rollout baseline updated by a paired t-test;
- ``cnf_score_langevin``: a continuous normalising flow with a hand RK4 and exact or
  Hutchinson traces (against ``jacrev``), denoising and sliced score matching, annealed
  Langevin dynamics and an EMA ``AveragedModel``;
- ``deepar_nbeats``: DeepAR with StudentT and NegativeBinomial heads, ancestral sampling
  and ``torch.quantile`` intervals, a ``LowRankMultivariateNormal`` across series, and
  N-BEATS trend/seasonality/generic blocks;
- ``svae_vmf``: nicola-decao/s-vae-pytorch's von Mises-Fisher VAE (Wood's sampler, a scipy
  Bessel ``Function``, ``register_kl``) with ContinuousBernoulli, VonMises, Kumaraswamy,
  LKJCholesky and Wishart;
- ``custom_ops_nested``: ``torch.library.custom_op`` with fake and autograd registrations
  and ``opcheck``, ``torch.cond``, jagged nested tensors, ``MaskedTensor``, and
  ``functional_call``/``stack_module_state`` ensembles under ``vmap``;
- ``autograd_graph_tools``: a torchviz-style ``next_functions`` walk with saved values,
  ``saved_tensors_hooks`` and ``save_on_cpu``, multi-grad, node and post-accumulate hooks
  (an optimizer in backward), ``is_grads_batched``, ``autograd.functional``, a
  ``__torch_function__`` subclass, a ``TorchFunctionMode`` and ``FlopCounterMode``;
- ``sngan_fid_ema``: an SN-GAN (parametrized and hook-based ``spectral_norm``, hinge
  losses, TTUR), an EMA generator by ``torch._foreach_lerp_``, ``parameters_to_vector``,
  an ``orthogonal`` projection for a Fréchet distance (``torch.cov``, ``sqrtm``,
  ``linalg.eigvals``) and ``fuse_conv_bn_eval``;
- ``data_pipeline_seeds``: ``random_split`` by fractions, ``Subset``/``StackDataset``/
  ``ChainDataset``, ``default_collate`` of namedtuples and dicts, a ``BatchSampler`` as
  ``sampler``, two seeded persistent workers drawing NumPy noise, ``WeightedRandomSampler``
  without replacement;
- ``wav2vec2_pretrain``: transformers' wav2vec 2.0 pre-training at toy size (conv feature
  encoder, span masks, ``weight_norm(dim=2)`` positional conv, the Gumbel quantizer,
  sampled negatives, contrastive and diversity losses) and CTC fine-tuning; expected to
  differ until small products give equal rows equal results (NOTE [ Equal rows of a small
  product ]).

With PyTorch installed each program runs on both (two processes each side, taking turns
among the programs) and the printed lines must agree: the text with its floats masked
exactly, the floats to a relative 1e-4. Without PyTorch each must run under ember and print
what PyTorch printed when ``<name>.expected`` was recorded (``python -m
tests.compat.test_research_repos_8`` with PyTorch installed records them again).

Some programs stop a solver at a fixed count rather than at convergence, where rounding
would grow into visible differences (on PyTorch too, between two runs perturbed by one
ulp); their comments say so. The tests after the folder's pin, in process, what these
programs found different in ember.
"""

import pytest

import ember
from tests.compat._program_folder import Folder

FOLDER = Folder("research_8")
PROGRAMS = FOLDER.programs
runs, _prints_what_torch_prints, test_every_program_has_its_recorded_output = FOLDER.tests()

# NOTE [ Equal rows of a small product ]
# transformers' wav2vec 2.0 masks negatives equal to the positive with
# ``(quantized == negatives).all(-1)``: rows gathered from one projection, equal bit for bit
# on PyTorch (its CPU GEMMs reduce every row in the same order) but not on ember, whose small
# float32 products run on NumPy's OpenBLAS, whose kernels round a row differently by its
# position in the block (and MLAS's matrix-vector path too); so fewer negatives are masked
# and the contrastive loss differs from the first step. A product engine question, left to
# the owner of ember/_kernels' products; the program stays as transformers writes it.
_KNOWN_DIFFERENT = {
    "wav2vec2_pretrain": "small float32 products round equal rows differently "
                         "(NOTE [ Equal rows of a small product ])",
}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=_KNOWN_DIFFERENT[n]))
    if n in _KNOWN_DIFFERENT else n for n in PROGRAMS])
def test_program_prints_what_torch_prints(name, runs):
    _prints_what_torch_prints(name, runs)


def _complex_run(fw, name, **kw):
    """Three steps of optimizer ``name`` on a complex and a real parameter of framework
    ``fw``; the parameters and the complex one's state, as Python values."""
    a = fw.nn.Parameter(fw.tensor([[1 + 2j, -0.5 + 0.25j]], dtype=fw.cfloat))
    b = fw.nn.Parameter(fw.tensor([0.5, -1.0]))
    opt = getattr(fw.optim, name)([a, b], lr=0.1, **kw)
    for k in range(3):
        a.grad = fw.tensor([[0.3 - 0.1j, 0.2 + 0.7j]], dtype=fw.cfloat) * (k + 1)
        b.grad = fw.tensor([0.1, -0.2])
        opt.step()
    state = {key: (str(v.dtype).split(".")[1], fw.view_as_real(v).flatten().tolist())
             for key, v in opt.state[a].items() if isinstance(v, fw.Tensor) and v.dim() > 0}
    return fw.view_as_real(a.detach()).flatten().tolist(), b.detach().tolist(), state


_COMPLEX_CASES = [
    ("Adam", {"amsgrad": True, "weight_decay": 0.1}), ("AdamW", {"foreach": False}),
    ("Adamax", {}), ("NAdam", {"decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("RAdam", {}), ("ASGD", {"t0": 1}), ("Rprop", {}), ("Adadelta", {}),
    ("Adagrad", {"lr_decay": 0.01}), ("RMSprop", {"centered": True, "momentum": 0.5}),
    ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
]


@pytest.mark.parametrize("name,kw", _COMPLEX_CASES, ids=[c[0] for c in _COMPLEX_CASES])
def test_optimizer_complex_parameter_steps_as_two_real_ones(name, kw):
    # fno_operator: a complex parameter is updated as view_as_real of itself (Adam's second
    # moment per part, Rprop's step size on both parts), its state kept complex
    torch = pytest.importorskip("torch")
    got, want = _complex_run(ember, name, **kw), _complex_run(torch, name, **kw)
    assert got[2].keys() == want[2].keys()
    for key in want[2]:
        assert got[2][key][0] == want[2][key][0] == "complex64", key
        assert got[2][key][1] == pytest.approx(want[2][key][1], rel=1e-5, abs=1e-7), key
    assert got[0] == pytest.approx(want[0], rel=1e-5, abs=1e-7)
    assert got[1] == pytest.approx(want[1], rel=1e-5, abs=1e-7)


def test_adam_complex_second_moment_is_per_part_without_torch():
    # the complex gradient 3+4j: per part v = (1-beta2) * (9, 16), not |g|**2 = 25
    p = ember.nn.Parameter(ember.tensor([1 + 1j]))
    opt = ember.optim.Adam([p], lr=0.1, betas=(0.9, 0.5), amsgrad=True)
    p.grad = ember.tensor([3 + 4j])
    opt.step()
    v = opt.state[p]["exp_avg_sq"]
    assert v.dtype == ember.complex64
    assert ember.view_as_real(v).tolist() == [[4.5, 8.0]]
    assert p.detach().tolist() == [pytest.approx(0.9 + 0.9j)]


def test_dynamic_quantized_lstm_draws_placeholder_weights_as_torch():
    # quant_ptq_dynamic: PyTorch's constructor draws randn placeholders for every layer and
    # direction, so data drawn after quantize_dynamic differs unless ember draws them too
    lstm = ember.ao.nn.quantized.dynamic.LSTM
    ember.manual_seed(0)
    q = lstm(3, 5, num_layers=2, bidirectional=True)
    after = ember.rand(3)
    ember.manual_seed(0)
    for layer_input in (3, 3, 10, 10):
        ember.randn(20, layer_input), ember.randn(20, 5), ember.randn(20), ember.randn(20)
    assert ember.equal(after, ember.rand(3))
    w_ih = q._all_weight_values[0].param[0]
    assert w_ih.dtype == ember.qint8 and w_ih.q_scale() == 0.1
    out, (h, c) = q(ember.ones(2, 1, 3))
    assert out.shape == (2, 1, 10) and h.shape == (4, 1, 5)


def test_quantize_dynamic_leaves_the_random_stream_where_torch_does():
    torch = pytest.importorskip("torch")
    draws = []
    for fw in (ember, torch):
        fw.manual_seed(0)
        model = fw.nn.Sequential(fw.nn.LSTM(3, 4, 2), fw.nn.Linear(4, 2))
        q = fw.ao.quantization.quantize_dynamic(model, {fw.nn.LSTM, fw.nn.Linear})
        draws.append(fw.rand(4).tolist())
        assert type(q[0]).__name__ == "LSTM" and len(q[0]._all_weight_values) == 2
    assert draws[0] == draws[1]


@pytest.mark.parametrize("op", ["allclose", "isclose"])
def test_close_refusals_say_what_torch_says(op):
    # svae_vmf prints the RuntimeError of comparing a float64 with a float32 tensor
    fn = getattr(ember, op)
    with pytest.raises(RuntimeError) as info:
        fn(ember.ones(2, dtype=ember.float64), ember.ones(2))
    assert str(info.value) == "Double did not match Float"
    with pytest.raises(RuntimeError) as info:
        fn(ember.ones(2), ember.ones(2), rtol=-1.0)
    assert str(info.value) == "rtol must be greater than or equal to zero, but got -1"
    with pytest.raises(RuntimeError) as info:
        fn(ember.ones(2), ember.ones(2), atol=-0.5)
    assert str(info.value) == "atol must be greater than or equal to zero, but got -0.5"


def test_saved_scalars_read_as_python_numbers():
    # autograd_graph_tools: torchviz-style walks read pow's exponent and clamp's bounds
    x = ember.randn(3, requires_grad=True)
    node = (x ** 2).grad_fn
    assert node._saved_exponent == 2 and type(node._saved_exponent) is int
    assert x.pow(3.5).grad_fn._saved_exponent == 3.5
    assert (2 ** x).grad_fn._saved_self == 2
    lo = x.clamp(min=0.5).grad_fn
    assert (type(lo).__name__, lo._saved_min, lo._saved_max) == ("ClampBackward1", 0.5, None)
    hi = x.clamp(max=0.5).grad_fn
    assert (hi._saved_min, hi._saved_max) == (None, 0.5)
    assert {"_saved_min", "_saved_max", "_saved_self"} <= set(dir(lo))
    assert ember.equal(lo._saved_self, x)


@pytest.mark.xfail(strict=True, reason="NOTE [ Equal rows of a small product ]")
@pytest.mark.parametrize("m,k,n", [(7, 16, 16), (156, 16, 16), (100, 64, 64)])
def test_linear_gives_equal_rows_for_equal_inputs(m, k, n):
    ember.manual_seed(0)
    layer = ember.nn.Linear(k, n)
    y = layer(ember.randn(k).expand(m, k).contiguous())
    assert bool((y == y[0]).all())


if __name__ == "__main__":  # record PyTorch's printouts as <name>.expected
    FOLDER.record()
