"""How a traced call is written into its node: the arguments torch records for the same call
(NOTE [ How a Proxy records ] in ember/fx/proxy.py).

NOTE [ Recorded call forms ]
torch's recorded arguments come from two kinds of functions:

- functions written in C (``torch.cat``, ``F.linear``, ``F.conv2d``): the arguments exactly as
  the caller wrote them -- ``torch.cat([a, b], dim=1)`` records ``([a, b],)`` and
  ``{'dim': 1}``, ``torch.cat([a, b], 1)`` records ``([a, b], 1)``;
- functions written in Python (most of ``nn.functional``, ``torch.split``, ``torch.norm``):
  one fixed form per function whatever the call looked like -- the leading parameters
  positionally, every other parameter by keyword with its value or default:
  ``F.relu(x)`` records ``(x,)`` and ``{'inplace': False}``.

ember's public functions are all generated wrappers that hand every positional-or-keyword
parameter on positionally, so the way a call was written is read back from the caller's
bytecode (``_as_written``: the keyword names of the ``CALL`` instruction), and the fixed
forms come from ``_FORMS``, a table of (positional names, (keyword, default) pairs) measured
on torch 2.13 (tests/fx/test_fx_polish.py checks it against torch when installed). A keyword
the ember function does not accept is left out, so the recorded call still runs.

The same bytecode tells the name and namespace the caller used (``_callee_name``): torch's
aliases are functions of their own (``torch.arctan`` is not ``torch.atan``) and ``F.softmax``
is not ``torch.softmax``, while ember binds one function under several names. A call through
another name gets an ``_AliasFace`` -- the function under that name -- as the node's target,
so the node is named ``arctan`` and prints ``torch.arctan``; the namespace also picks the
form (``torch.softmax(x, 1)`` records ``(x, 1)``, ``F.softmax(x, 1)`` torch's fixed form).
Calls the bytecode cannot explain (``f(*args)``, a function reached through a variable of
another name) keep the function's own name and the arguments as handed on.
"""

from __future__ import annotations

import dis
import inspect
import sys

# (namespace, name) -> (positional parameters, ((keyword, default), ...)); ``F`` is
# nn.functional, ``torch`` the top level; ``*_with_indices`` also serve the plain name
_FORMS = {
    ('F', 'adaptive_max_pool1d_with_indices'): (('input', 'output_size'),
        (('return_indices', False),)),
    ('F', 'adaptive_max_pool2d_with_indices'): (('input', 'output_size'),
        (('return_indices', False),)),
    ('F', 'adaptive_max_pool3d_with_indices'): (('input', 'output_size'),
        (('return_indices', False),)),
    ('F', 'affine_grid'): (('theta', 'size'),
        (('align_corners', None),)),
    ('F', 'alpha_dropout'): (('input',),
        (('p', 0.5), ('training', False), ('inplace', False))),
    ('F', 'batch_norm'): (('input', 'running_mean', 'running_var'),
        (('weight', None), ('bias', None), ('training', False), ('momentum', 0.1),
         ('eps', 1e-05))),
    ('F', 'binary_cross_entropy'): (('input', 'target'),
        (('weight', None), ('size_average', None), ('reduce', None), ('reduction', 'mean'))),
    ('F', 'binary_cross_entropy_with_logits'): (('input', 'target'),
        (('weight', None), ('size_average', None), ('reduce', None), ('reduction', 'mean'),
         ('pos_weight', None))),
    ('F', 'celu'): (('input',),
        (('alpha', 1.0), ('inplace', False))),
    ('F', 'cosine_embedding_loss'): (('input1', 'input2', 'target'),
        (('margin', 0), ('size_average', None), ('reduce', None), ('reduction', 'mean'))),
    ('F', 'cross_entropy'): (('input', 'target'),
        (('weight', None), ('size_average', None), ('ignore_index', -100), ('reduce', None),
         ('reduction', 'mean'), ('label_smoothing', 0.0))),
    ('F', 'ctc_loss'): (('log_probs', 'targets', 'input_lengths', 'target_lengths'),
        (('blank', 0), ('reduction', 'mean'), ('zero_infinity', False))),
    ('F', 'dropout'): (('input',),
        (('p', 0.5), ('training', True), ('inplace', False))),
    ('F', 'dropout1d'): (('input',),
        (('p', 0.5), ('training', True), ('inplace', False))),
    ('F', 'dropout2d'): (('input',),
        (('p', 0.5), ('training', True), ('inplace', False))),
    ('F', 'dropout3d'): (('input',),
        (('p', 0.5), ('training', True), ('inplace', False))),
    ('F', 'elu'): (('input',),
        (('alpha', 1.0), ('inplace', False))),
    ('F', 'embedding'): (('input', 'weight'),
        (('padding_idx', None), ('max_norm', None), ('norm_type', 2.0),
         ('scale_grad_by_freq', False), ('sparse', False))),
    ('F', 'embedding_bag'): (('input', 'weight'),
        (('offsets', None), ('max_norm', None), ('norm_type', 2),
         ('scale_grad_by_freq', False), ('mode', 'mean'), ('sparse', False),
         ('per_sample_weights', None), ('include_last_offset', False), ('padding_idx', None))),
    ('F', 'feature_alpha_dropout'): (('input',),
        (('p', 0.5), ('training', False), ('inplace', False))),
    ('F', 'fold'): (('input', 'output_size', 'kernel_size'),
        (('dilation', 1), ('padding', 0), ('stride', 1))),
    ('F', 'fractional_max_pool2d_with_indices'): (('input', 'kernel_size'),
        (('output_size', None), ('output_ratio', None), ('return_indices', False),
         ('_random_samples', None))),
    ('F', 'fractional_max_pool3d_with_indices'): (('input', 'kernel_size'),
        (('output_size', None), ('output_ratio', None), ('return_indices', False),
         ('_random_samples', None))),
    ('F', 'gaussian_nll_loss'): (('input', 'target', 'var'),
        (('full', False), ('eps', 1e-06), ('reduction', 'mean'))),
    ('F', 'glu'): (('input',),
        (('dim', -1),)),
    ('F', 'grid_sample'): (('input', 'grid'),
        (('mode', 'bilinear'), ('padding_mode', 'zeros'), ('align_corners', None))),
    ('F', 'group_norm'): (('input', 'num_groups'),
        (('weight', None), ('bias', None), ('eps', 1e-05))),
    ('F', 'gumbel_softmax'): (('logits',),
        (('tau', 1), ('hard', False), ('eps', 1e-10), ('dim', -1))),
    ('F', 'hardsigmoid'): (('input',),
        (('inplace', False),)),
    ('F', 'hardswish'): (('input',),
        (('inplace', False),)),
    ('F', 'hardtanh'): (('input',),
        (('min_val', -1.0), ('max_val', 1.0), ('inplace', False))),
    ('F', 'hinge_embedding_loss'): (('input', 'target'),
        (('margin', 1.0), ('size_average', None), ('reduce', None), ('reduction', 'mean'))),
    ('F', 'huber_loss'): (('input', 'target'),
        (('reduction', 'mean'), ('delta', 1.0), ('weight', None))),
    ('F', 'instance_norm'): (('input',),
        (('running_mean', None), ('running_var', None), ('weight', None), ('bias', None),
         ('use_input_stats', True), ('momentum', 0.1), ('eps', 1e-05))),
    ('F', 'interpolate'): (('input',),
        (('size', None), ('scale_factor', None), ('mode', 'nearest'), ('align_corners', None),
         ('recompute_scale_factor', None), ('antialias', False))),
    ('F', 'kl_div'): (('input', 'target'),
        (('size_average', None), ('reduce', None), ('reduction', 'mean'), ('log_target', False))),
    ('F', 'l1_loss'): (('input', 'target'),
        (('size_average', None), ('reduce', None), ('reduction', 'mean'))),
    ('F', 'layer_norm'): (('input', 'normalized_shape'),
        (('weight', None), ('bias', None), ('eps', 1e-05))),
    ('F', 'leaky_relu'): (('input',),
        (('negative_slope', 0.01), ('inplace', False))),
    ('F', 'linear_cross_entropy'): (('input', 'linear_weight', 'target'),
        (('linear_bias', None), ('weight', None), ('reduction', 'mean'),
         ('ignore_index', None), ('label_smoothing', 0.0), ('options', None))),
    ('F', 'local_response_norm'): (('input', 'size'),
        (('alpha', 0.0001), ('beta', 0.75), ('k', 1.0))),
    ('F', 'log_softmax'): (('input',),
        (('dim', None), ('_stacklevel', 3), ('dtype', None))),
    ('F', 'lp_pool1d'): (('input', 'norm_type', 'kernel_size'),
        (('stride', None), ('ceil_mode', False))),
    ('F', 'lp_pool2d'): (('input', 'norm_type', 'kernel_size'),
        (('stride', None), ('ceil_mode', False))),
    ('F', 'lp_pool3d'): (('input', 'norm_type', 'kernel_size'),
        (('stride', None), ('ceil_mode', False))),
    ('F', 'margin_ranking_loss'): (('input1', 'input2', 'target'),
        (('margin', 0), ('size_average', None), ('reduce', None), ('reduction', 'mean'))),
    ('F', 'max_pool1d_with_indices'): (('input', 'kernel_size'),
        (('stride', None), ('padding', 0), ('dilation', 1), ('ceil_mode', False),
         ('return_indices', False))),
    ('F', 'max_pool2d_with_indices'): (('input', 'kernel_size'),
        (('stride', None), ('padding', 0), ('dilation', 1), ('ceil_mode', False),
         ('return_indices', False))),
    ('F', 'max_pool3d_with_indices'): (('input', 'kernel_size'),
        (('stride', None), ('padding', 0), ('dilation', 1), ('ceil_mode', False),
         ('return_indices', False))),
    ('F', 'max_unpool1d'): (('input', 'indices', 'kernel_size'),
        (('stride', None), ('padding', 0), ('output_size', None))),
    ('F', 'max_unpool2d'): (('input', 'indices', 'kernel_size'),
        (('stride', None), ('padding', 0), ('output_size', None))),
    ('F', 'max_unpool3d'): (('input', 'indices', 'kernel_size'),
        (('stride', None), ('padding', 0), ('output_size', None))),
    ('F', 'mish'): (('input',),
        (('inplace', False),)),
    ('F', 'mse_loss'): (('input', 'target'),
        (('size_average', None), ('reduce', None), ('reduction', 'mean'), ('weight', None))),
    ('F', 'multi_head_attention_forward'): (
        ('query', 'key', 'value', 'embed_dim_to_check', 'num_heads', 'in_proj_weight',
         'in_proj_bias', 'bias_k', 'bias_v', 'add_zero_attn', 'dropout_p', 'out_proj_weight',
         'out_proj_bias'),
        (('training', True), ('key_padding_mask', None), ('need_weights', True),
         ('attn_mask', None), ('is_causal', False), ('use_separate_proj_weight', False),
         ('q_proj_weight', None), ('k_proj_weight', None), ('v_proj_weight', None),
         ('static_k', None), ('static_v', None), ('average_attn_weights', True))),
    ('F', 'multi_margin_loss'): (('input', 'target'),
        (('p', 1), ('margin', 1.0), ('weight', None), ('size_average', None), ('reduce', None),
         ('reduction', 'mean'))),
    ('F', 'multilabel_margin_loss'): (('input', 'target'),
        (('size_average', None), ('reduce', None), ('reduction', 'mean'))),
    ('F', 'multilabel_soft_margin_loss'): (('input', 'target'),
        (('weight', None), ('size_average', None), ('reduce', None), ('reduction', 'mean'))),
    ('F', 'nll_loss'): (('input', 'target'),
        (('weight', None), ('size_average', None), ('ignore_index', -100), ('reduce', None),
         ('reduction', 'mean'))),
    ('F', 'normalize'): (('input',),
        (('p', 2.0), ('dim', 1), ('eps', 1e-12), ('out', None))),
    ('F', 'pad'): (('input', 'pad'),
        (('mode', 'constant'), ('value', None))),
    ('F', 'poisson_nll_loss'): (('input', 'target'),
        (('log_input', True), ('full', False), ('size_average', None), ('eps', 1e-08),
         ('reduce', None), ('reduction', 'mean'))),
    ('F', 'relu'): (('input',),
        (('inplace', False),)),
    ('F', 'relu6'): (('input',),
        (('inplace', False),)),
    ('F', 'rms_norm'): (('input', 'normalized_shape'),
        (('weight', None), ('eps', None))),
    ('F', 'rrelu'): (('input',),
        (('lower', 0.125), ('upper', 0.3333333333333333), ('training', False),
         ('inplace', False))),
    ('F', 'selu'): (('input',),
        (('inplace', False),)),
    ('F', 'silu'): (('input',),
        (('inplace', False),)),
    ('F', 'smooth_l1_loss'): (('input', 'target'),
        (('size_average', None), ('reduce', None), ('reduction', 'mean'), ('beta', 1.0))),
    ('F', 'soft_margin_loss'): (('input', 'target'),
        (('size_average', None), ('reduce', None), ('reduction', 'mean'))),
    ('F', 'softmax'): (('input',),
        (('dim', None), ('_stacklevel', 3), ('dtype', None))),
    ('F', 'softmin'): (('input',),
        (('dim', None), ('_stacklevel', 3), ('dtype', None))),
    ('F', 'threshold'): (('input', 'threshold', 'value'),
        (('inplace', False),)),
    ('F', 'triplet_margin_loss'): (('anchor', 'positive', 'negative'),
        (('margin', 1.0), ('p', 2), ('eps', 1e-06), ('swap', False), ('size_average', None),
         ('reduce', None), ('reduction', 'mean'))),
    ('F', 'triplet_margin_with_distance_loss'): (('anchor', 'positive', 'negative'),
        (('distance_function', None), ('margin', 1.0), ('swap', False), ('reduction', 'mean'))),
    ('F', 'unfold'): (('input', 'kernel_size'),
        (('dilation', 1), ('padding', 0), ('stride', 1))),
    ('torch', 'cdist'): (('x1', 'x2'),
        (('p', 2.0), ('compute_mode', 'use_mm_for_euclid_dist_if_necessary'))),
    ('torch', 'norm'): (('input',),
        (('p', 'fro'), ('dim', None), ('keepdim', False), ('out', None), ('dtype', None))),
    ('torch', 'pca_lowrank'): (('A',),
        (('q', None), ('center', True), ('niter', 2))),
    ('torch', 'split'): (('tensor', 'split_size_or_sections'),
        (('dim', 0),)),
    ('torch', 'stft'): (('input', 'n_fft'),
        (('hop_length', None), ('win_length', None), ('window', None), ('center', True),
         ('pad_mode', 'reflect'), ('normalized', False), ('onesided', None),
         ('return_complex', None), ('align_to_window', None))),
    ('torch', 'svd_lowrank'): (('A',),
        (('q', 6), ('niter', 2), ('M', None))),
    ('torch', 'tensordot'): (('a', 'b'),
        (('dims', 2), ('out', None))),
    ('torch', 'unravel_index'): (('indices',),
        (('shape', None),)),
}


def _form_of(func, space=None):
    """The fixed form of ``func`` (reached through namespace ``space``, when known) if torch
    records it so, else None."""
    import ember

    name = getattr(func, "__name__", None)
    if not name:
        return None
    if space is not None:
        return _FORMS.get((space, name)) or _FORMS.get((space, name + "_with_indices"))
    for ns, key in ((ember.nn.functional, "F"), (ember, "torch")):
        if getattr(ns, name, None) is func:
            form = _FORMS.get((key, name)) or _FORMS.get((key, name + "_with_indices"))
            if form is not None:
                return form
    return None


_kw_cache: dict = {}


def _call_keywords(frame):
    """The keyword names and positional count of the call instruction ``frame`` is executing,
    or None when they cannot be told (``f(*a, **k)``, an unknown Python)."""
    code, lasti = frame.f_code, frame.f_lasti
    key = (code, lasti)
    if key in _kw_cache:
        return _kw_cache[key]
    found = None
    insts = list(dis.get_instructions(code))
    # the frame's last instruction offset may fall within the call's inline cache entries
    at = max((i for i, ins in enumerate(insts) if ins.offset <= lasti), default=None)
    if at is not None:
        ins = insts[at]
        names: tuple = ()
        if ins.opname == "CALL":  # 3.11 / 3.12: KW_NAMES shortly before
            for prev in reversed(insts[max(0, at - 3):at]):
                if prev.opname == "KW_NAMES":
                    names = tuple(code.co_consts[prev.arg]) if sys.version_info < (3, 12) \
                        or not isinstance(prev.argval, tuple) else tuple(prev.argval)
                    break
            found = (ins.arg - len(names), names)
        elif ins.opname in ("CALL_KW", "CALL_FUNCTION_KW"):
            prev = insts[at - 1]
            if prev.opname == "LOAD_CONST" and isinstance(prev.argval, tuple):
                found = (ins.arg - len(prev.argval), tuple(prev.argval))
        elif ins.opname in ("CALL_FUNCTION", "PRECALL"):
            found = (ins.arg, ())
    _kw_cache[key] = found
    return found


def _as_written(func, args, kwargs):
    """``args, kwargs`` as the caller of ember's public wrapper ``func`` wrote them, or None
    when that cannot be told."""
    code = getattr(func, "__code__", None)
    if code is None or code.co_name != "_ember_w":
        return None
    frame = sys._getframe(1)
    for _ in range(16):
        if frame is None:
            return None
        if frame.f_code is code:
            break
        frame = frame.f_back
    else:
        return None
    caller = frame.f_back
    if caller is None:
        return None
    shape = _call_keywords(caller)
    if shape is None:
        return None
    npos, names = shape
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    params = sig.parameters
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)]
    if npos > len(positional) or len(args) > len(positional) or \
            any(n not in params for n in names):
        return None
    values = dict(kwargs)
    values.update((p.name, a) for p, a in zip(positional, args))

    def value(p):
        if p.name in values:
            return values[p.name]
        if p.default is p.empty:
            raise LookupError(p.name)
        return p.default

    try:
        new_args = tuple(value(p) for p in positional[:npos])
        new_kwargs = {n: value(params[n]) for n in names}
    except LookupError:
        return None
    return new_args, new_kwargs


def recorded_call(func, args: tuple, kwargs: dict, space: str | None = None):
    """The arguments a node for ``func(*args, **kwargs)`` records: torch's fixed form for the
    functions torch writes in Python, the call as written for the others (NOTE [ Recorded
    call forms ]); unchanged when neither can be told.

    Args:
        func: the ember public function called.
        args: the positional arguments it handed on.
        kwargs: the keyword arguments it handed on.
        space: the namespace the call went through (``recorded_target``), if known.

    Returns:
        ``(args, kwargs)`` for the node.
    """
    written = _as_written(func, args, kwargs)
    if written is not None:
        args, kwargs = written
    form = _form_of(func, space)
    if form is None:
        return args, kwargs
    try:
        sig = inspect.signature(func)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return args, kwargs
    given = bound.arguments
    pos_names, keywords = form
    if any(n not in given for n in pos_names):
        return args, kwargs
    accepts = sig.parameters
    any_kw = any(p.kind is p.VAR_KEYWORD for p in accepts.values())
    new_args = tuple(given[n] for n in pos_names)
    new_kwargs = {}
    for n, default in keywords:
        if n in given:
            new_kwargs[n] = given[n]
        elif n in accepts or any_kw:
            new_kwargs[n] = default
    # anything given that the form does not name stays as a keyword
    for n, v in given.items():
        if n not in pos_names and n not in new_kwargs:
            new_kwargs[n] = v
    return new_args, new_kwargs


# -- the name a call was written with -------------------------------------------------------------

_SKIP = frozenset({"PRECALL", "KW_NAMES", "CACHE", "EXTENDED_ARG"})
_LOADS = frozenset({"LOAD_ATTR", "LOAD_METHOD", "LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF",
                    "LOAD_FAST"})
_name_cache: dict = {}


def _callee_name(frame) -> str | None:
    """The attribute or variable name the call instruction ``frame`` is executing loaded its
    callable by (``arctan`` for ``torch.arctan(x)``), or None when it cannot be told."""
    code, lasti = frame.f_code, frame.f_lasti
    key = (code, lasti)
    if key in _name_cache:
        return _name_cache[key]
    found = None
    insts = list(dis.get_instructions(code))
    at = max((i for i, ins in enumerate(insts) if ins.offset <= lasti), default=None)
    if at is not None and insts[at].opname in ("CALL", "CALL_KW", "CALL_FUNCTION",
                                               "CALL_FUNCTION_KW", "CALL_METHOD"):
        call = insts[at]
        need = call.arg + (1 if call.opname in ("CALL_KW", "CALL_FUNCTION_KW") else 0)
        # walk back over the arguments' code: the first point where it has pushed ``need``
        # values is the start of the first argument; what comes before loaded the callable
        j, pushed = at - 1, 0
        while j >= 0 and insts[j].opname in _SKIP:
            j -= 1
        while j >= 0 and pushed < need:
            ins = insts[j]
            if ins.opname not in ("CACHE", "EXTENDED_ARG"):
                try:
                    pushed += dis.stack_effect(ins.opcode, ins.arg, jump=False) \
                        if ins.opcode >= dis.HAVE_ARGUMENT else dis.stack_effect(ins.opcode)
                except ValueError:
                    break
            j -= 1
        while j >= 0 and insts[j].opname in _SKIP:
            j -= 1
        if j >= 0 and pushed == need and insts[j].opname in _LOADS and \
                isinstance(insts[j].argval, str):
            owner = None
            if insts[j].opname in ("LOAD_ATTR", "LOAD_METHOD"):
                # the owner's load: a chain of names and attributes (``torch.nn.functional``)
                chain, k = [], j - 1
                while k >= 0 and insts[k].opname in ("LOAD_ATTR", "LOAD_METHOD"):
                    chain.append(insts[k].argval)
                    k -= 1
                if k >= 0 and insts[k].opname in ("LOAD_GLOBAL", "LOAD_FAST", "LOAD_NAME",
                                                  "LOAD_DEREF"):
                    owner = (insts[k].opname, insts[k].argval, tuple(reversed(chain)))
            found = (insts[j].argval, owner)
    _name_cache[key] = found
    return found


def _owner_value(frame, owner):
    """The object ``owner`` (from ``_callee_name``) names in ``frame``, or None."""
    if owner is None:
        return None
    import builtins

    op, name, chain = owner
    missing = object()
    if op == "LOAD_GLOBAL":
        v = frame.f_globals.get(name, getattr(builtins, name, missing))
    elif op == "LOAD_NAME":
        v = frame.f_locals.get(name, frame.f_globals.get(name, missing))
    else:
        v = frame.f_locals.get(name, missing)
    for attr in chain:
        if v is missing:
            break
        v = getattr(v, attr, missing)
    return None if v is missing else v


# the nn.functional names that are torch's top-level functions themselves (torch 2.13)
_F_IS_TOP_LEVEL = frozenset({
    "adaptive_avg_pool1d", "avg_pool1d", "bilinear", "celu_", "channel_shuffle", "conv1d",
    "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cosine_similarity", "hardshrink", "native_channel_shuffle", "pairwise_distance", "pdist",
    "pixel_shuffle", "pixel_unshuffle", "prelu", "relu_", "rrelu_", "selu_", "threshold_"})

# the nn.functional functions torch writes as a call of the Tensor method (``x.tanh()``)
F_AS_METHOD = frozenset({"tanh", "sigmoid"})


class _AliasFace:
    """A function of ember under another of its public names (``ember.arctan``, which is
    ``ember.atan``): a node's target, so the node is named and printed as the call was
    written, as torch (whose aliases are functions of their own) does."""

    def __init__(self, namespace: str, name: str, func):
        self.__module__ = namespace
        self.__name__ = self.__qualname__ = name
        self._func = func
        self.__doc__ = getattr(func, "__doc__", None)

    def __call__(self, *args, **kwargs):
        return self._func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<function {self.__name__}>"

    def __reduce__(self):
        return (_alias_face, (self.__module__, self.__name__))


_faces: dict = {}


def _alias_face(namespace: str, name: str):
    face = _faces.get((namespace, name))
    if face is None:
        func = getattr(sys.modules[namespace], name)
        face = _faces[(namespace, name)] = _AliasFace(namespace, name, func)
    return face


def _alias_namespaces():
    import ember

    return (("ember", ember), ("ember.nn.functional", ember.nn.functional))


def recorded_target(func):
    """The target a node for a call of ``func`` gets: ``func`` itself, or, when the caller
    reached it under another public name (``ember.arctan`` for ``ember.atan``, or
    ``F.softmax`` for ``ember.softmax``), a function by that name; with the namespace the
    call went through.

    Args:
        func: the ember public function called.

    Returns:
        ``(target, space)``: the node's target, and ``"F"`` (nn.functional), ``"torch"``
        (the top level) or None when the namespace cannot be told.
    """
    name = getattr(func, "__name__", None)
    code = getattr(func, "__code__", None)
    if name is None or code is None:
        return func, None
    frame = sys._getframe(1)
    for _ in range(16):
        if frame is None:
            return func, None
        if frame.f_code is code:
            break
        frame = frame.f_back
    else:
        return func, None
    if frame.f_back is None:
        return func, None
    callee = _callee_name(frame.f_back)
    if callee is None:
        return func, None
    written, owner = callee
    owner = _owner_value(frame.f_back, owner)
    spaces = _alias_namespaces()
    if written in _F_IS_TOP_LEVEL and owner is spaces[1][1]:
        owner = spaces[0][1]  # torch's F.conv2d is torch.conv2d: recorded as that
    for ns_name, ns in spaces:
        if ns is owner and getattr(ns, written, None) is func:
            # reached through a namespace: named as that namespace's function (``F.softmax``
            # is ``ember.softmax``, but torch records ``torch.nn.functional.softmax``)
            first = next((n for n, m in spaces if getattr(m, written, None) is func), None)
            space = "F" if ns_name == "ember.nn.functional" else "torch"
            if written == name and first == ns_name:
                return func, space
            return _alias_face(ns_name, written), space
    if written == name:
        return func, None
    for ns_name, ns in spaces:
        if getattr(ns, written, None) is func:
            return _alias_face(ns_name, written), None
    return func, None
