"""Docstrings of ``ember.nn.functional``'s functions that are defined elsewhere without one.

Many functions of ``ember.nn.functional`` are registry ops declared in ``ember/_ops/nn_*.py``
or short compositions, whose declarations carry a one-line summary at most. The full
documentation a user reads (summary, Args, Returns, shapes, example) lives here, keyed by
name, and ``apply`` attaches it when ``ember.nn.functional`` is imported -- to functions
whose own docstring has no ``Args:`` section, so a fuller docstring written at the
declaration always wins. Every example runs as a doctest (tests/test_docs.py).
"""

from __future__ import annotations

_RED = ("reduction: ``'none'`` (one loss per element), ``'mean'`` (default) or ``'sum'``.\n"
        "    size_average, reduce: deprecated spellings of ``reduction``.")
_RED_ONLY = "reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``."
_INPLACE = "inplace: write the result into ``input`` and return it."
#: appended to what random functions return (NOTE [ Differences from PyTorch ] in
#: ember/_ops/_docs.py)
_RANDOM = ("\n\nDifferences from PyTorch:\n    Random numbers: on the CPU, seeded streams are "
           "PyTorch's (see :func:`ember.manual_seed`): a seed gives the numbers PyTorch draws "
           "from it. On CUDA devices they are ember's own.")


def _d(summary, args, returns, example, shape=None):
    text = summary.strip() + "\n\nArgs:\n"
    text += "".join(f"    {a}\n" for a in args)
    text += f"\nReturns:\n    {returns}\n"
    if shape:
        text += f"\nShape:\n    {shape}\n"
    text += "\nExample:\n" + "".join(f"    {ln}\n" for ln in example.strip().split("\n"))
    return text


DOCS: dict[str, str] = {}

# -- pooling --------------------------------------------------------------------------------

_SPATIAL = {1: "(N, C, L) or (C, L)", 2: "(N, C, H, W) or (C, H, W)",
            3: "(N, C, D, H, W) or (C, D, H, W)"}
_SHAPE_IN = {1: (1, 1, 4), 2: (1, 1, 4, 4), 3: (1, 1, 4, 4, 4)}


def _shape(nd, size):
    return ", ".join(str(s) for s in _SHAPE_IN[nd][:2] + (size,) * nd)


for _nd in (1, 2, 3):
    _in = _SPATIAL[_nd]
    _x = f"x = ember.arange(float({4 ** _nd})).reshape({_shape(_nd, 4)})"
    DOCS[f"max_pool{_nd}d"] = _d(
        f"{_nd}-d max pooling: the largest value of each window.",
        [f"input: {_in}.",
         f"kernel_size: the window, an int or a tuple of {_nd}.",
         "stride: the step between windows (default: ``kernel_size``).",
         "padding: implicit -inf padding on each side.",
         "dilation: the spacing between window elements.",
         "ceil_mode: round the output size up rather than down.",
         "return_indices: also return the flat positions of the maxima (for ``max_unpool``)."],
        "The pooled tensor, or ``(values, indices)`` with ``return_indices``.",
        f">>> import ember\n>>> {_x}\n"
        f">>> ember.nn.functional.max_pool{_nd}d(x, 2).shape\n"
        f"ember.Size([{_shape(_nd, 2)}])",
        f"input {_in}; output with each spatial size "
        "``floor((size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1)``.")
    DOCS[f"max_pool{_nd}d_with_indices"] = _d(
        f"``max_pool{_nd}d`` returning ``(values, indices)``.",
        ["input, kernel_size, stride, padding, dilation, ceil_mode: as for "
         f"``max_pool{_nd}d``."],
        "``(values, indices)``, indices holding the flat position of each maximum in its plane.",
        f">>> import ember\n>>> {_x}\n"
        f">>> v, i = ember.nn.functional.max_pool{_nd}d_with_indices(x, 2)\n"
        ">>> v.shape == i.shape\nTrue")
    DOCS[f"avg_pool{_nd}d"] = _d(
        f"{_nd}-d average pooling: the mean of each window.",
        [f"input: {_in}.",
         f"kernel_size: the window, an int or a tuple of {_nd}.",
         "stride: the step between windows (default: ``kernel_size``).",
         "padding: implicit zero padding on each side.",
         "ceil_mode: round the output size up rather than down.",
         "count_include_pad: count the padding zeros in the mean's divisor."]
        + (["divisor_override: divide by this instead of the window size."] if _nd > 1 else []),
        "The pooled tensor.",
        f">>> import ember\n>>> {_x}\n"
        f">>> ember.nn.functional.avg_pool{_nd}d(x, 2).shape\n"
        f"ember.Size([{_shape(_nd, 2)}])")
    DOCS[f"max_unpool{_nd}d"] = _d(
        f"Partial inverse of ``max_pool{_nd}d``: puts each value back at its index, zeros "
        "elsewhere.",
        [f"input: the pooled values, {_in}.",
         f"indices: the indices ``max_pool{_nd}d(..., return_indices=True)`` gave.",
         "kernel_size, stride, padding: those of the pooling.",
         "output_size: the size to restore (default: computed from the pooling's)."],
        "The unpooled tensor, zeros where no maximum came from.",
        f">>> import ember\n>>> import ember.nn.functional as F\n>>> {_x}\n"
        f">>> v, i = F.max_pool{_nd}d(x, 2, return_indices=True)\n"
        f">>> F.max_unpool{_nd}d(v, i, 2).shape\nember.Size([{_shape(_nd, 4)}])")
    DOCS[f"adaptive_avg_pool{_nd}d"] = _d(
        f"{_nd}-d adaptive average pooling: windows chosen so the output has ``output_size``.",
        [f"input: {_in}.",
         f"output_size: the output's spatial size, an int or a tuple of {_nd} (None keeps "
         "that dim)."],
        "The pooled tensor.\n\nDifferences from PyTorch:\n    NaN, infinite and near-overflow "
        "inputs: a window's mean can be infinite where PyTorch's is NaN.",
        f">>> import ember\n>>> {_x}\n"
        f">>> ember.nn.functional.adaptive_avg_pool{_nd}d(x, 1).shape\n"
        f"ember.Size([{_shape(_nd, 1)}])")
    DOCS[f"adaptive_max_pool{_nd}d"] = _d(
        f"{_nd}-d adaptive max pooling: windows chosen so the output has ``output_size``.",
        [f"input: {_in}.",
         f"output_size: the output's spatial size, an int or a tuple of {_nd}.",
         "return_indices: also return the positions of the maxima."],
        "The pooled tensor, or ``(values, indices)`` with ``return_indices``.",
        f">>> import ember\n>>> {_x}\n"
        f">>> ember.nn.functional.adaptive_max_pool{_nd}d(x, 1).flatten().tolist()\n"
        f"[{float(4 ** _nd - 1)}]")
    DOCS[f"adaptive_max_pool{_nd}d_with_indices"] = _d(
        f"``adaptive_max_pool{_nd}d`` returning ``(values, indices)``.",
        [f"input: {_in}.", "output_size: the output's spatial size.",
         "return_indices: ignored (the indices are always returned)."],
        "``(values, indices)``.",
        f">>> import ember\n>>> {_x}\n"
        f">>> v, i = ember.nn.functional.adaptive_max_pool{_nd}d_with_indices(x, 1)\n"
        f">>> i.flatten().tolist()\n[{4 ** _nd - 1}]")
    DOCS[f"lp_pool{_nd}d"] = _d(
        f"{_nd}-d power-average pooling: ``(sum of x**p over each window) ** (1/p)``.",
        [f"input: {_in}.", "norm_type: the power ``p`` (1 sums, large ``p`` nears max "
         "pooling).", f"kernel_size: the window, an int or a tuple of {_nd}.",
         "stride: the step between windows (default: ``kernel_size``).",
         "ceil_mode: round the output size up rather than down."],
        "The pooled tensor.",
        f">>> import ember\n>>> x = ember.ones({_shape(_nd, 2)})\n"
        f">>> ember.nn.functional.lp_pool{_nd}d(x, 1, 2).flatten().tolist()\n"
        f"[{float(2 ** _nd)}]")

for _nd in (2, 3):
    _in = _SPATIAL[_nd]
    DOCS[f"fractional_max_pool{_nd}d"] = _d(
        f"{_nd}-d fractional max pooling: max over windows of ``kernel_size`` at "
        "pseudo-random starts that shrink the input to ``output_size`` (or ``output_ratio`` of "
        "its size).",
        [f"input: {_in}.", "kernel_size: the window.",
         "output_size: the output's spatial size.",
         "output_ratio: the output's size as a fraction of the input's (instead of "
         "``output_size``).", "return_indices: also return the positions of the maxima.",
         "_random_samples: the window offsets to use, in [0, 1) (default: drawn)."],
        "The pooled tensor, or ``(values, indices)`` with ``return_indices``.",
        f">>> import ember\n>>> x = ember.randn({_shape(_nd, 8)})\n"
        f">>> ember.nn.functional.fractional_max_pool{_nd}d(x, 2, output_size=4).shape\n"
        f"ember.Size([{_shape(_nd, 4)}])")
    DOCS[f"fractional_max_pool{_nd}d_with_indices"] = _d(
        f"``fractional_max_pool{_nd}d`` returning ``(values, indices)``.",
        ["input, kernel_size, output_size, output_ratio, _random_samples: as for "
         f"``fractional_max_pool{_nd}d``.", "return_indices: ignored (always returned)."],
        "``(values, indices)``.",
        f">>> import ember\n>>> x = ember.randn({_shape(_nd, 8)})\n"
        f">>> v, i = ember.nn.functional.fractional_max_pool{_nd}d_with_indices(x, 2, "
        "output_size=4)\n>>> v.shape == i.shape\nTrue")

# -- activations ----------------------------------------------------------------------------

_X = ">>> import ember\n>>> x = ember.tensor([-2.0, 0.0, 2.0])\n"


def _act(name, summary, extra_args, out, call=None, inplace=True):
    args = ["input: any shape."] + extra_args + ([_INPLACE] if inplace else [])
    DOCS[name] = _d(summary, args, "A tensor of ``input``'s shape.",
                    _X + f">>> ember.nn.functional.{call or name + '(x)'}\n{out}",
                    "output has the shape of ``input``.")


_act("celu", "CELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.",
     ["alpha: the negative side's scale (default 1)."], "tensor([-0.8647,  0.0000,  2.0000])")
_act("elu", "ELU: ``x`` for positive ``x``, ``alpha * (exp(x) - 1)`` otherwise.",
     ["alpha: the negative side's scale (default 1)."], "tensor([-0.8647,  0.0000,  2.0000])")
_act("elu_", "In-place ``elu``.", ["alpha: the negative side's scale (default 1)."],
     "tensor([-0.8647,  0.0000,  2.0000])", inplace=False)
_act("glu", "Gated linear unit: splits ``input`` in halves ``a, b`` along ``dim`` and returns "
     "``a * sigmoid(b)``.", ["dim: the dim to split (its size must be even)."],
     "tensor([-1.7616])", call="glu(ember.tensor([-2.0, 2.0]))", inplace=False)
DOCS["glu"] = DOCS["glu"].replace("A tensor of ``input``'s shape.",
                                  "A tensor with ``dim`` halved.").replace(
    "output has the shape of ``input``.", "output is ``input`` with ``dim`` halved.")
_act("hardsigmoid", "Hard sigmoid: ``clamp(x / 6 + 1 / 2, 0, 1)``.", [],
     "tensor([0.1667, 0.5000, 0.8333])")
_act("hardswish", "Hard swish: ``x * hardsigmoid(x)``.", [],
     "tensor([-0.3333,  0.0000,  1.6667])")
_act("hardtanh", "Hard tanh: ``clamp(x, min_val, max_val)``.",
     ["min_val, max_val: the range (default -1, 1)."], "tensor([-1.,  0.,  1.])")
_act("hardtanh_", "In-place ``hardtanh``.", ["min_val, max_val: the range (default -1, 1)."],
     "tensor([-1.,  0.,  1.])", inplace=False)
_act("leaky_relu", "Leaky ReLU: ``x`` for positive ``x``, ``negative_slope * x`` otherwise.",
     ["negative_slope: the slope for negative inputs (default 0.01)."],
     "tensor([-0.0200,  0.0000,  2.0000])")
_act("leaky_relu_", "In-place ``leaky_relu``.",
     ["negative_slope: the slope for negative inputs (default 0.01)."],
     "tensor([-0.0200,  0.0000,  2.0000])", inplace=False)
_act("logsigmoid", "``log(sigmoid(x))``, computed without overflow.", [],
     "tensor([-2.1269, -0.6931, -0.1269])", inplace=False)
_act("mish", "Mish: ``x * tanh(softplus(x))``.", [], "tensor([-0.2525,  0.0000,  1.9440])")
_act("relu6", "ReLU6: ``clamp(x, 0, 6)``.", [], "tensor([0., 0., 2.])")
_act("rrelu", "Randomized leaky ReLU: in training the negative slope is drawn uniformly "
     "from ``[lower, upper]`` per element; in evaluation it is ``(lower + upper) / 2``."
     + _RANDOM,
     ["lower, upper: the slope's range (default 1/8, 1/3).",
      "training: draw the slopes (default False)."], "tensor([-0.4583,  0.0000,  2.0000])")
_act("selu", "SELU: ``scale * elu(x, alpha)`` with the self-normalising constants "
     "(alpha 1.6733, scale 1.0507).", [], "tensor([-1.5202,  0.0000,  2.1014])")
_act("sigmoid", "Logistic sigmoid: ``1 / (1 + exp(-x))``.", [],
     "tensor([0.1192, 0.5000, 0.8808])", inplace=False)
_act("silu", "SiLU (swish): ``x * sigmoid(x)``.", [], "tensor([-0.2384,  0.0000,  1.7616])")
_act("softplus", "Softplus: ``log(1 + exp(beta * x)) / beta``, linear above ``threshold``.",
     ["beta: the sharpness (default 1).",
      "threshold: above ``beta * x > threshold`` the result is ``x`` (default 20)."],
     "tensor([0.1269, 0.6931, 2.1269])", inplace=False)
_act("softshrink", "Soft shrinkage: ``x - lambd`` above ``lambd``, ``x + lambd`` below "
     "``-lambd``, 0 between.", ["lambd: the threshold (default 0.5)."],
     "tensor([-1.5000,  0.0000,  1.5000])", inplace=False)
_act("softsign", "Softsign: ``x / (1 + |x|)``.", [], "tensor([-0.6667,  0.0000,  0.6667])",
     inplace=False)
_act("tanh", "Hyperbolic tangent.", [], "tensor([-0.9640,  0.0000,  0.9640])", inplace=False)
_act("tanhshrink", "``x - tanh(x)``.", [], "tensor([-1.0360,  0.0000,  1.0360])",
     inplace=False)
_act("threshold", "``x`` where ``x > threshold``, else ``value``.",
     ["threshold: the cut-off.", "value: what replaces the elements at or below it."],
     "tensor([-1., -1.,  2.])", call="threshold(x, 0.0, -1.0)")
_act("gelu", "GELU: ``x * Phi(x)`` with ``Phi`` the standard normal CDF "
     "(``approximate='tanh'``: the tanh approximation).",
     ["approximate: ``'none'`` (exact, default) or ``'tanh'``."],
     "tensor([-0.0455,  0.0000,  1.9545])", inplace=False)

for _name, _what in (("softmax", "``exp(x) / exp(x).sum(dim)``: rows that sum to 1"),
                     ("log_softmax", "``log(softmax(x, dim))``, computed stably"),
                     ("softmin", "``softmax(-x, dim)``")):
    _outs = {"softmax": "tensor([0.0900, 0.2447, 0.6652])",
             "log_softmax": "tensor([-2.4076, -1.4076, -0.4076])",
             "softmin": "tensor([0.6652, 0.2447, 0.0900])"}
    DOCS[_name] = _d(
        f"{_what}, along ``dim``.",
        ["input: any shape.", "dim: the dim to normalise over.",
         "dtype: cast ``input`` to this dtype first (for accuracy in low precision)."],
        "A tensor of ``input``'s shape.",
        f">>> import ember\n>>> ember.nn.functional.{_name}(ember.tensor([1.0, 2.0, 3.0]), "
        f"dim=0)\n{_outs[_name]}", "output has the shape of ``input``.")

# -- dropout --------------------------------------------------------------------------------

_DROP_SHAPE = {"dropout1d": "2, 4, 3", "dropout2d": "2, 4, 3, 3"}

for _name, _what in (
        ("dropout", "Zero each element with probability ``p`` and scale the rest by "
                    "``1 / (1 - p)`` (during training only)"),
        ("dropout1d", "Zero whole channels of (N, C, L) input with probability ``p``, scaling "
                      "the rest by ``1 / (1 - p)``"),
        ("dropout2d", "Zero whole channels (planes) of (N, C, H, W) input with probability "
                      "``p``, scaling the rest by ``1 / (1 - p)``"),
        ("dropout3d", "Zero whole channels (volumes) of (N, C, D, H, W) input with probability "
                      "``p``, scaling the rest by ``1 / (1 - p)``"),
        ("alpha_dropout", "Dropout that keeps a SELU network's mean and variance: dropped "
                          "elements take SELU's negative saturation value"),
        ("feature_alpha_dropout", "Alpha dropout of whole channels")):
    _default = "False" if "alpha" in _name else "True"
    DOCS[_name] = _d(
        f"{_what}.",
        ["input: any shape (channels second for the channel forms).",
         "p: the drop probability, in [0, 1].",
         f"training: apply dropout (default {_default}); when False, ``input`` is returned "
         "unchanged.", _INPLACE],
        "A tensor of ``input``'s shape." + _RANDOM,
        f">>> import ember\n>>> x = ember.ones({_DROP_SHAPE.get(_name, '2, 4, 3, 3, 3')})\n"
        f">>> ember.nn.functional.{_name}(x, 0.5, training=False).equal(x)\nTrue")

# -- losses ---------------------------------------------------------------------------------


def _loss(name, summary, args, example, shape=None, reduction=_RED):
    DOCS[name] = _d(summary, args + [reduction],
                    "The loss: a 0-d tensor, or per-element losses with ``reduction='none'``.",
                    ">>> import ember\n>>> import ember.nn.functional as F\n" + example,
                    shape)


_loss("binary_cross_entropy",
      "Binary cross entropy between probabilities ``input`` and targets in [0, 1]: "
      "``-(t * log(x) + (1 - t) * log(1 - x))``, logs clamped at -100.",
      ["input: probabilities, any shape.", "target: same shape, values in [0, 1].",
       "weight: a per-element rescaling, broadcast to ``input``."],
      ">>> F.binary_cross_entropy(ember.tensor([0.5, 0.9]), ember.tensor([1.0, 1.0]))\n"
      "tensor(0.3993)")
_loss("binary_cross_entropy_with_logits",
      "``binary_cross_entropy(sigmoid(input), target)``, computed stably from logits.",
      ["input: logits, any shape.", "target: same shape, values in [0, 1].",
       "weight: a per-element rescaling, broadcast to ``input``.",
       "pos_weight: a weight on the positive term per class (broadcast along the last dim)."],
      ">>> F.binary_cross_entropy_with_logits(ember.zeros(2), ember.ones(2))\ntensor(0.6931)")
_loss("cosine_embedding_loss",
      "``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos(x1, x2) - margin)`` where it "
      "is -1.",
      ["input1, input2: (N, D) or (D,).", "target: (N,) or (), values 1 or -1.",
       "margin: in [-1, 1] (default 0)."],
      ">>> a = ember.tensor([[1.0, 0.0]])\n"
      ">>> F.cosine_embedding_loss(a, a, ember.tensor([1.0]))\ntensor(0.)")
_loss("cross_entropy",
      "Cross entropy between logits ``input`` and class indices or class probabilities "
      "``target``: ``log_softmax`` then the negative log-likelihood, in one fused op.",
      ["input: logits (N, C), (C,) or (N, C, d1, ...).",
       "target: int64 (or uint8) class indices (N,), () or (N, d1, ...); or float class "
       "probabilities of ``input``'s shape.",
       "weight: (C,) per-class weights.",
       "ignore_index: a target value that contributes nothing (class indices only).",
       "label_smoothing: in [0, 1]: mix the targets with the uniform distribution."],
      ">>> logits = ember.tensor([[2.0, 0.5, 0.1], [0.1, 0.2, 3.0]])\n"
      ">>> F.cross_entropy(logits, ember.tensor([0, 2]))\ntensor(0.2132)",
      "input (N, C) and target (N,) give per-sample losses (N,) before reduction.")
_loss("nll_loss",
      "Negative log-likelihood of class indices ``target`` under log-probabilities ``input``: "
      "``-input[n, target[n]]``, weighted.",
      ["input: log-probabilities (N, C), (C,) or (N, C, d1, ...).",
       "target: int64 (or uint8) class indices (N,), () or (N, d1, ...).",
       "weight: (C,) per-class weights; the mean divides by the weights' sum.",
       "ignore_index: a target value that contributes nothing."],
      ">>> logp = ember.tensor([[-0.1, -2.3], [-1.6, -0.2]])\n"
      ">>> F.nll_loss(logp, ember.tensor([0, 1]))\ntensor(0.1500)")
_loss("ctc_loss",
      "Connectionist temporal classification loss: the negative log-likelihood of the target "
      "sequences summed over all their alignments to the input frames.",
      ["log_probs: (T, N, C) or (T, C) log-probabilities over C classes (``blank`` included).",
       "targets: (N, S) padded, or the concatenated 1-d targets.",
       "input_lengths: (N,) frames used per sequence.",
       "target_lengths: (N,) target length per sequence.",
       "blank: the blank class (default 0).",
       "zero_infinity: replace infinite losses (impossible alignments) and their gradients "
       "by 0."],
      ">>> lp = ember.full((4, 1, 3), 1 / 3).log()\n"
      ">>> F.ctc_loss(lp, ember.tensor([[1, 2]]), ember.tensor([4]), ember.tensor([2])).shape\n"
      "ember.Size([])",
      reduction="reduction: ``'none'``, ``'mean'`` (default: each loss divided by its target "
                "length, then averaged) or ``'sum'``.")
_loss("gaussian_nll_loss",
      "Gaussian negative log-likelihood: ``0.5 * (log(var) + (input - target)**2 / var)`` "
      "(plus ``0.5 * log(2 pi)`` with ``full``).",
      ["input: the predicted means.", "target: samples, broadcastable to ``input``.",
       "var: the predicted variances (positive), broadcastable to ``input``.",
       "full: add the constant term.", "eps: clamp ``var`` below at this."],
      ">>> F.gaussian_nll_loss(ember.zeros(2), ember.zeros(2), ember.ones(2))\ntensor(0.)",
      reduction=_RED_ONLY)
_loss("hinge_embedding_loss",
      "``x`` where ``target`` is 1, ``max(0, margin - x)`` where it is -1.",
      ["input: distances, any shape.", "target: same shape, values 1 or -1.",
       "margin: default 1."],
      ">>> F.hinge_embedding_loss(ember.tensor([0.3, 0.2]), ember.tensor([1.0, -1.0]))\n"
      "tensor(0.5500)")
_loss("huber_loss",
      "Huber loss: ``0.5 * d**2`` where ``|d| < delta``, ``delta * (|d| - 0.5 * delta)`` "
      "elsewhere, ``d = input - target``.",
      ["input, target: same shape.", "delta: where the loss turns linear (default 1).",
       "weight: a per-element rescaling."],
      ">>> F.huber_loss(ember.tensor([0.5, 3.0]), ember.zeros(2))\ntensor(1.3125)",
      reduction=_RED_ONLY)
_loss("kl_div",
      "Kullback-Leibler divergence ``target * (log(target) - input)`` with ``input`` given as "
      "log-probabilities.",
      ["input: log-probabilities.", "target: probabilities (log-probabilities with "
       "``log_target``), same shape.",
       "log_target: ``target`` is given in log space."],
      ">>> p = ember.tensor([[0.5, 0.5]])\n"
      ">>> F.kl_div(p.log(), p, reduction='batchmean')\ntensor(0.)",
      reduction="reduction: ``'none'``, ``'batchmean'`` (the sum over the batch size: the "
                "true KL divergence), ``'sum'`` or ``'mean'`` (default; the mean over all "
                "elements).\n    size_average, reduce: deprecated spellings of "
                "``reduction``.")
_loss("l1_loss", "Mean absolute error: ``|input - target|``.",
      ["input, target: same shape (broadcast).", "weight: a per-element rescaling."],
      ">>> F.l1_loss(ember.tensor([1.0, 3.0]), ember.zeros(2))\ntensor(2.)")
_loss("mse_loss", "Mean squared error: ``(input - target)**2``.",
      ["input, target: same shape (broadcast).", "weight: a per-element rescaling."],
      ">>> F.mse_loss(ember.tensor([1.0, 3.0]), ember.zeros(2))\ntensor(5.)")
_loss("margin_ranking_loss",
      "``max(0, -target * (input1 - input2) + margin)``: ranks ``input1`` above ``input2`` "
      "where ``target`` is 1, below where it is -1.",
      ["input1, input2: scores, same shape.", "target: 1 or -1 per pair.",
       "margin: default 0."],
      ">>> F.margin_ranking_loss(ember.tensor([1.0]), ember.tensor([2.0]), "
      "ember.tensor([1.0]))\ntensor(1.)")
_loss("multi_margin_loss",
      "Multi-class hinge loss: for each sample, the mean over the other classes ``i`` of "
      "``max(0, margin - x[y] + x[i]) ** p``.",
      ["input: (N, C) or (C,) scores.", "target: (N,) or () class indices.",
       "p: 1 or 2.", "margin: default 1.", "weight: (C,) per-class weights."],
      ">>> F.multi_margin_loss(ember.tensor([[0.1, 0.2, 0.4, 0.8]]), ember.tensor([3]))\n"
      "tensor(0.3250)")
_loss("multilabel_margin_loss",
      "Multi-label hinge loss: for each sample, the sum over its target classes ``j`` and "
      "other classes ``i`` of ``max(0, 1 - (x[j] - x[i]))``, divided by C.",
      ["input: (N, C) or (C,) scores.",
       "target: same shape, int64: the target classes, then -1 for the rest."],
      ">>> x = ember.tensor([[0.1, 0.2, 0.4, 0.8]])\n"
      ">>> F.multilabel_margin_loss(x, ember.tensor([[3, 0, -1, 1]]))\ntensor(0.8500)")
_loss("multilabel_soft_margin_loss",
      "Multi-label one-versus-all loss: binary cross entropy with logits per class, averaged "
      "over classes.",
      ["input: (N, C) logits.", "target: (N, C) of 0 and 1.",
       "weight: (C,) per-class weights."],
      ">>> F.multilabel_soft_margin_loss(ember.zeros(1, 2), ember.ones(1, 2))\ntensor(0.6931)")
_loss("poisson_nll_loss",
      "Poisson negative log-likelihood: ``exp(input) - target * input`` with ``log_input``, "
      "else ``input - target * log(input + eps)``.",
      ["input: the predicted rate (its log with ``log_input``).", "target: counts.",
       "log_input: ``input`` is the log of the rate (default True).",
       "full: add Stirling's approximation of ``log(target!)``.",
       "eps: keeps the log finite when ``log_input`` is False."],
      ">>> F.poisson_nll_loss(ember.zeros(2), ember.ones(2))\ntensor(1.)")
_loss("smooth_l1_loss",
      "Smooth L1: ``0.5 * d**2 / beta`` where ``|d| < beta``, ``|d| - 0.5 * beta`` elsewhere.",
      ["input, target: same shape.", "beta: where the loss turns linear (default 1)."],
      ">>> F.smooth_l1_loss(ember.tensor([0.5, 3.0]), ember.zeros(2))\ntensor(1.3125)")
_loss("soft_margin_loss", "Two-class logistic loss: ``log(1 + exp(-target * input))``.",
      ["input: scores, any shape.", "target: same shape, 1 or -1."],
      ">>> F.soft_margin_loss(ember.zeros(2), ember.ones(2))\ntensor(0.6931)")
_loss("triplet_margin_loss",
      "Triplet loss: ``max(0, d(a, p) - d(a, n) + margin)`` with ``d`` the p-norm distance.",
      ["anchor, positive, negative: (N, D) or (D,).", "margin: default 1.",
       "p: the norm's degree (default 2).", "eps: added inside the norm for stability.",
       "swap: use ``d(p, n)`` when it is smaller than ``d(a, n)``."],
      ">>> a = ember.zeros(1, 2)\n"
      ">>> F.triplet_margin_loss(a, a, ember.tensor([[3.0, 4.0]]))\ntensor(0.)")
_loss("triplet_margin_with_distance_loss",
      "Triplet loss with a distance function of your choice: "
      "``max(0, d(a, p) - d(a, n) + margin)``.",
      ["anchor, positive, negative: tensors ``distance_function`` accepts.",
       "distance_function: ``(x, y) -> distances`` (default ``pairwise_distance``).",
       "margin: default 1.", "swap: use ``d(p, n)`` when it is smaller than ``d(a, n)``."],
      ">>> a = ember.zeros(1, 2)\n"
      ">>> F.triplet_margin_with_distance_loss(a, a, ember.tensor([[3.0, 4.0]]))\ntensor(0.)",
      reduction=_RED_ONLY)

# -- layers as functions ----------------------------------------------------------------------

DOCS["linear"] = _d(
    "Affine map ``input @ weight.T + bias``.",
    ["input: ``(*, in_features)``.", "weight: (out_features, in_features).",
     "bias: (out_features,) or None."],
    "A tensor of shape ``(*, out_features)``.",
    ">>> import ember\n>>> ember.nn.functional.linear(ember.ones(2, 3), ember.ones(4, 3)).shape\n"
    "ember.Size([2, 4])")
DOCS["embedding"] = _d(
    "Look up rows of ``weight`` by the indices in ``input``.",
    ["input: int64 indices, any shape.", "weight: (num_embeddings, dim).",
     "padding_idx: the row whose gradient stays zero.",
     "max_norm: renormalise looked-up rows (in ``weight``, in place) to at most this norm.",
     "norm_type: the norm for ``max_norm`` (default 2).",
     "scale_grad_by_freq: divide gradients by each index's count in the batch.",
     "sparse: sparse gradients (accepted; gradients are dense in ember)."],
    "A tensor of shape ``input.shape + (dim,)``.",
    ">>> import ember\n>>> w = ember.arange(6.0).reshape(3, 2)\n"
    ">>> ember.nn.functional.embedding(ember.tensor([2, 0]), w)\n"
    "tensor([[4., 5.],\n        [0., 1.]])")
DOCS["embedding_bag"] = _d(
    "Sums, means or maxima of bags of embedding rows, without materialising the rows.",
    ["input: 2-d (B, L) indices (one bag a row), or 1-d indices split by ``offsets``.",
     "weight: (num_embeddings, dim).", "offsets: (B,) start of each bag in 1-d ``input``.",
     "max_norm, norm_type, scale_grad_by_freq, sparse: as for ``embedding``.",
     "mode: ``'sum'``, ``'mean'`` (default) or ``'max'``.",
     "per_sample_weights: weights of the looked-up rows (``mode='sum'``).",
     "include_last_offset: ``offsets`` has one more entry, the end of the last bag.",
     "padding_idx: an index left out of the bags."],
    "A tensor of shape (B, dim).",
    ">>> import ember\n>>> w = ember.arange(6.0).reshape(3, 2)\n"
    ">>> ember.nn.functional.embedding_bag(ember.tensor([[0, 2]]), w, mode='sum')\n"
    "tensor([[4., 6.]])")
_GROUP_NORM_DIFFERS = (
    "\n\nDifferences from PyTorch:\n    NaN, infinite and near-overflow inputs: a group's "
    "statistics can come out infinite where PyTorch's are NaN (and the reverse), so results "
    "differ in which non-finite value they hold; a group whose values overflow can even give a "
    "finite result where PyTorch's is NaN.")
for _name, _summary, _args, _call in (
        ("batch_norm", "Batch normalisation: normalise each channel by the batch's statistics "
         "(training) or the running ones (evaluation), then scale and shift.",
         ["input: (N, C, ...).", "running_mean, running_var: (C,) running statistics, "
          "updated in place when ``training``; may be None in training.",
          "weight, bias: (C,) affine parameters.", "training: use the batch's statistics.",
          "momentum: the running statistics' update rate.",
          "eps: added to the variance."], "batch_norm(x, None, None, training=True)"),
        ("group_norm", "Group normalisation: normalise over groups of channels (and the "
         "spatial dims) per sample, then scale and shift per channel.",
         ["input: (N, C, ...).", "num_groups: divides C.", "weight, bias: (C,).",
          "eps: added to the variance."], "group_norm(x, 2)"),
        ("instance_norm", "Instance normalisation: normalise each channel of each sample over "
         "its spatial dims.",
         ["input: (N, C, ...).", "running_mean, running_var: (C,) running statistics or None.",
          "weight, bias: (C,).", "use_input_stats: use each instance's statistics.",
          "momentum: the running statistics' update rate.", "eps: added to the variance."],
         "instance_norm(x)"),
        ("layer_norm", "Layer normalisation: normalise over the last ``len(normalized_shape)`` "
         "dims, then scale and shift elementwise.",
         ["input: ``(*, normalized_shape)``.", "normalized_shape: the trailing shape.",
          "weight, bias: of ``normalized_shape``.", "eps: added to the variance."],
         "layer_norm(x, (4, 4))"),
        ("local_response_norm", "Local response normalisation across neighbouring channels: "
         "``x / (k + alpha / size * sum of x**2 over size channels) ** beta``.",
         ["input: (N, C, ...).", "size: the number of neighbouring channels.",
          "alpha, beta, k: the formula's constants."], "local_response_norm(x, 2)")):
    DOCS[_name] = _d(_summary, _args, "A tensor of ``input``'s shape." + (
                         _GROUP_NORM_DIFFERS if _name == "group_norm" else ""),
                     ">>> import ember\n>>> x = ember.randn(2, 4, 4, 4)\n"
                     f">>> ember.nn.functional.{_call}.shape\nember.Size([2, 4, 4, 4])",
                     "output has the shape of ``input``.")
DOCS["normalize"] = _d(
    "``input / max(||input||_p, eps)`` along ``dim``.",
    ["input: any shape.", "p: the norm's degree (default 2).",
     "dim: the dim to normalise (default 1).", "eps: avoids division by zero.",
     "out: the output tensor."],
    "A tensor of ``input``'s shape.",
    ">>> import ember\n>>> ember.nn.functional.normalize(ember.tensor([[3.0, 4.0]]))\n"
    "tensor([[0.6000, 0.8000]])")
DOCS["one_hot"] = _d(
    "One-hot rows: ``(*,)`` int64 class indices to ``(*, num_classes)`` int64 rows.",
    ["tensor: int64 class indices.",
     "num_classes: the number of classes (-1: one more than the largest index)."],
    "An int64 tensor with a trailing dim of size ``num_classes``.",
    ">>> import ember\n>>> ember.nn.functional.one_hot(ember.tensor([0, 2]), 3)\n"
    "tensor([[1, 0, 0],\n        [0, 0, 1]])")
DOCS["gumbel_softmax"] = _d(
    "Samples from the Gumbel-softmax (Concrete) distribution: a differentiable relaxation of "
    "sampling a category from ``logits``.",
    ["logits: unnormalised log-probabilities.", "tau: the temperature (> 0).",
     "hard: return one-hot samples whose gradient is the soft sample's "
     "(straight-through).", "eps: unused (kept for PyTorch's signature).",
     "dim: the category dim."],
    "A tensor of ``logits``' shape, rows summing to 1." + _RANDOM,
    ">>> import ember\n>>> y = ember.nn.functional.gumbel_softmax(ember.zeros(2, 3), hard=True)\n"
    ">>> y.sum(-1).tolist()\n[1.0, 1.0]")
DOCS["pad"] = _d(
    "Pad the last ``len(pad) // 2`` dims: ``pad = (left_last, right_last, left_prev, "
    "right_prev, ...)``.",
    ["input: any shape.", "pad: an even-length sequence of ints; negative values crop "
     "(``'constant'`` mode).",
     "mode: ``'constant'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.",
     "value: the fill value for ``'constant'`` (default 0)."],
    "The padded tensor.",
    ">>> import ember\n>>> ember.nn.functional.pad(ember.tensor([[1.0, 2.0]]), (1, 1))\n"
    "tensor([[0., 1., 2., 0.]])")
DOCS["scaled_dot_product_attention"] = _d(
    "Attention: ``softmax(query @ key.T * scale + mask) @ value``, with optional causal "
    "masking and dropout.",
    ["query: (..., L, E).", "key: (..., S, E).", "value: (..., S, Ev).",
     "attn_mask: a boolean mask (True: attend) or an additive float mask, broadcastable to "
     "(..., L, S).", "dropout_p: dropout on the attention weights.",
     "is_causal: mask out positions after each query's (not with ``attn_mask``).",
     "scale: the logits' scale (default ``1 / sqrt(E)``).",
     "enable_gqa: allow fewer key/value heads than query heads (grouped-query attention)."],
    "A tensor of shape (..., L, Ev).\n\nDifferences from PyTorch:\n    NaN, infinite and "
    "near-overflow inputs: ember can return NaN where PyTorch returns a finite value (ember's "
    "softmax of overflowing scores).",
    ">>> import ember\n>>> q = k = v = ember.ones(1, 2, 3, 4)\n"
    ">>> ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).shape\n"
    "ember.Size([1, 2, 3, 4])")
DOCS["multi_head_attention_forward"] = _d(
    "The forward pass of ``nn.MultiheadAttention`` as a function: project, split into heads, "
    "attend, merge and project out.",
    ["query, key, value: (L, N, E) (or unbatched (L, E)).",
     "embed_dim_to_check: E.", "num_heads: the number of heads (divides E).",
     "in_proj_weight, in_proj_bias: the packed (3E, E) projection and (3E,) bias.",
     "bias_k, bias_v: biases appended to the keys and values, or None.",
     "add_zero_attn: append a zero key/value position.",
     "dropout_p: dropout on the attention weights.",
     "out_proj_weight, out_proj_bias: the output projection.",
     "training: apply dropout.", "key_padding_mask: (N, S) positions to ignore.",
     "need_weights: also return the attention weights.",
     "attn_mask: (L, S) or (N * heads, L, S) mask.",
     "use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight: separate "
     "projections instead of the packed one.", "static_k, static_v: precomputed keys/values.",
     "average_attn_weights: average the returned weights over heads.",
     "is_causal: a hint that ``attn_mask`` is causal."],
    "``(output, weights)``: output (L, N, E); weights (N, L, S) or None.",
    ">>> import ember\n>>> m = ember.nn.MultiheadAttention(4, 2)\n>>> x = ember.ones(3, 1, 4)\n"
    ">>> out, w = ember.nn.functional.multi_head_attention_forward(\n"
    "...     x, x, x, 4, 2, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0,\n"
    "...     m.out_proj.weight, m.out_proj.bias)\n>>> out.shape, w.shape\n"
    "(ember.Size([3, 1, 4]), ember.Size([1, 3, 3]))")

# -- resampling ---------------------------------------------------------------------------------

DOCS["interpolate"] = _d(
    "Resize the spatial dims of ``input`` (to ``size``, or by ``scale_factor``).",
    ["input: (N, C, L), (N, C, H, W) or (N, C, D, H, W).",
     "size: the output's spatial size.", "scale_factor: multiplier(s) of the spatial size.",
     "mode: ``'nearest'``, ``'nearest-exact'``, ``'linear'``, ``'bilinear'``, "
     "``'bicubic'``, ``'trilinear'``, ``'lanczos'`` (4-D input, with ``antialias=True``) "
     "or ``'area'``.",
     "align_corners: for the linear modes, map corner pixels' centres onto each other.",
     "recompute_scale_factor: compute the scale used from the output size.",
     "antialias: low-pass filter when downsampling (bilinear, bicubic and lanczos)."],
    "The resized tensor.",
    ">>> import ember\n>>> x = ember.tensor([[[1.0, 2.0]]])\n"
    ">>> ember.nn.functional.interpolate(x, scale_factor=2)\ntensor([[[1., 1., 2., 2.]]])")
for _name, _mode in (("upsample", None), ("upsample_nearest", "nearest"),
                     ("upsample_bilinear", "bilinear")):
    _args = ["input: (N, C, ...) (4-d for ``upsample_bilinear``).",
             "size: the output's spatial size.", "scale_factor: multiplier of the size."]
    if _mode is None:
        _args += ["mode: as for ``interpolate``.", "align_corners: as for ``interpolate``."]
    DOCS[_name] = _d(
        "Resize by ``interpolate`` (an older name)"
        + (f", mode ``'{_mode}'``" if _mode else "")
        + (" with ``align_corners=True``" if _mode == "bilinear" else "") + ".",
        _args, "The resized tensor.",
        ">>> import ember\n>>> x = ember.ones(1, 1, 2, 2)\n"
        f">>> ember.nn.functional.{_name}(x, scale_factor=2).shape\n"
        "ember.Size([1, 1, 4, 4])")
DOCS["affine_grid"] = _d(
    "Sampling grid of an affine transform, for ``grid_sample``: each output position's "
    "(x, y[, z]) source coordinate in [-1, 1].",
    ["theta: (N, 2, 3) or (N, 3, 4) affine matrices.",
     "size: the output's size (N, C, H, W) or (N, C, D, H, W).",
     "align_corners: -1 and 1 are the corner pixels' centres (True) or edges (False)."],
    "A grid (N, H, W, 2) or (N, D, H, W, 3).",
    ">>> import ember\n>>> theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])\n"
    ">>> ember.nn.functional.affine_grid(theta, (1, 1, 2, 2), align_corners=False).shape\n"
    "ember.Size([1, 2, 2, 2])")
DOCS["grid_sample"] = _d(
    "Sample ``input`` at the normalised coordinates of ``grid`` (spatial transformers).",
    ["input: (N, C, H, W) or (N, C, D, H, W).",
     "grid: (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3), coordinates in [-1, 1].",
     "mode: ``'bilinear'``, ``'nearest'`` or ``'bicubic'``.",
     "padding_mode: ``'zeros'``, ``'border'`` or ``'reflection'`` for points outside.",
     "align_corners: as for ``affine_grid``."],
    "A tensor (N, C, H_out, W_out) (or (N, C, D_out, H_out, W_out)).",
    ">>> import ember\n>>> x = ember.arange(4.0).reshape(1, 1, 2, 2)\n"
    ">>> g = ember.zeros(1, 1, 1, 2)  # the centre\n"
    ">>> ember.nn.functional.grid_sample(x, g, align_corners=True)\n"
    "tensor([[[[1.5000]]]])")
DOCS["unfold"] = _d(
    "Extract sliding local blocks (im2col): each column holds one window's values.",
    ["input: (N, C, H, W).", "kernel_size: the window.", "dilation: spacing in the window.",
     "padding: zero padding on each side.", "stride: the step between windows."],
    "A tensor (N, C * prod(kernel_size), L) with L the number of windows.",
    ">>> import ember\n>>> ember.nn.functional.unfold(ember.ones(1, 2, 3, 3), 2).shape\n"
    "ember.Size([1, 8, 4])")
DOCS["fold"] = _d(
    "Combine sliding local blocks into a tensor (col2im), summing overlaps: ``unfold``'s "
    "adjoint.",
    ["input: (N, C * prod(kernel_size), L).", "output_size: the spatial size (H, W).",
     "kernel_size, dilation, padding, stride: those of the ``unfold``."],
    "A tensor (N, C, H, W).",
    ">>> import ember\n>>> F = ember.nn.functional\n"
    ">>> F.fold(F.unfold(ember.ones(1, 1, 3, 3), 2), (3, 3), 2)\n"
    "tensor([[[[1., 2., 1.],\n          [2., 4., 2.],\n          [1., 2., 1.]]]])")

# -- protocol helpers -----------------------------------------------------------------------------

DOCS["reduction_enum"] = _d(
    "The reduction a loss applies, from ``reduction`` or the deprecated ``size_average`` and "
    "``reduce`` (which warn and take precedence when given).",
    ["reduction: ``'none'``, ``'mean'`` or ``'sum'``.",
     "size_average, reduce: the deprecated flags, or None."],
    "The reduction's name.",
    ">>> import ember\n>>> ember.nn.functional.reduction_enum('sum')\n'sum'")


def apply(namespace):
    """Attach ``DOCS`` to the functions of ``namespace`` whose docstring has no Args section.

    Args:
        namespace: the module's ``globals()``.

    Returns:
        The names documented here.

    Example:
        >>> import ember.nn.functional as F
        >>> "Args:" in F.l1_loss.__doc__
        True
    """
    done = []
    for name, doc in DOCS.items():
        fn = namespace.get(name)
        if fn is None or "Args:" in (getattr(fn, "__doc__", None) or ""):
            continue
        try:
            fn.__doc__ = doc
        except (AttributeError, TypeError):  # a builtin or a slotted object
            continue
        done.append(name)
    return done
