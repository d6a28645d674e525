"""The eager-mode quantization workflow (``torch.ao.quantization.quantize``):
``propagate_qconfig_`` → ``prepare`` / ``prepare_qat`` → calibrate or train → ``convert``.

NOTE [ Eager quantization workflow ]
1. ``propagate_qconfig_`` gives every module a ``qconfig`` attribute: its own if set, else the
   one a ``qconfig_dict`` names for its type or dotted name, else its parent's.
2. ``prepare`` adds an ``activation_post_process`` child (``qconfig.activation()``) to each
   leaf whose class a conversion knows (NOTE [ Which modules get observers ]) and to each
   fused module, and a forward hook (put first) that passes the output through it.
   ``prepare_qat`` first swaps modules for their QAT twins (``convert`` with the QAT mapping),
   whose weights are fake-quantized by ``qconfig.weight()``.
3. ``convert`` swaps, bottom up, each module with a qconfig whose class is in the mapping for
   ``mapping[type].from_float(module)``, keeping user hooks and dropping the observer hook;
   fused modules are swapped whole. Then it removes the qconfigs and observers left behind.
"""

import copy
import inspect
import warnings

from ... import nn
from ..nn.intrinsic.modules.fused import _FusedModule
from ..nn.quantized.modules.functional_modules import FloatFunctional, QFunctional
from .fake_quantize import FakeQuantizeBase
from .observer import ObserverBase
from .qconfig import _activation_is_memoryless, _assert_valid_qconfig
from .quantization_mappings import (
    _get_special_act_post_process, _has_special_act_post_process,
    get_default_qat_module_mappings, get_default_qconfig_propagation_list,
)
from .stubs import DeQuantStub, QuantWrapper

__all__ = ["propagate_qconfig_", "prepare", "prepare_qat", "convert", "swap_module",
           "quantize", "quantize_qat", "quantize_dynamic", "add_quant_dequant",
           "default_eval_fn"]


def _is_activation_post_process(module):
    return isinstance(module, (ObserverBase, FakeQuantizeBase))


def _propagate(module, qconfig_dict, parent_qconfig, prefix, custom):
    qconfig = qconfig_dict.get(type(module), parent_qconfig)
    qconfig = qconfig_dict.get(prefix, qconfig)
    qconfig = getattr(module, "qconfig", qconfig)
    _assert_valid_qconfig(qconfig, module)
    module.qconfig = qconfig
    skip_names = custom.get("non_traceable_module_name", [])
    skip_types = custom.get("non_traceable_module_class", [])
    for name, child in module.named_children():
        if name in skip_names or type(child) in skip_types:
            continue
        _propagate(child, qconfig_dict, qconfig, f"{prefix}.{name}" if prefix else name, custom)


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None):
    """Give every submodule a ``qconfig`` attribute, in place (see NOTE [ Eager quantization
    workflow ], step 1).

    Args:
        module (nn.Module): the model.
        qconfig_dict (dict, optional): module class or dotted name → QConfig (or None).
        prepare_custom_config_dict (dict, optional): ``non_traceable_module_name`` /
            ``non_traceable_module_class`` lists of submodules to leave alone.

    Example:
        >>> from ember.ao.quantization import default_qconfig
        >>> m = nn.Sequential(nn.Linear(2, 2)); m.qconfig = default_qconfig
        >>> propagate_qconfig_(m); m[0].qconfig is default_qconfig
        True
    """
    _propagate(module, qconfig_dict or {}, None, "", prepare_custom_config_dict or {})


def _observer_forward_hook(self, input, output):
    return self.activation_post_process(output)


def _observer_forward_pre_hook(self, input):
    return self.activation_post_process(input[0])


def _register_activation_post_process_hook(module, pre_hook=False):
    if not hasattr(module, "activation_post_process"):
        raise AssertionError("Expect activation_post_process attribute already attached to "
                             "the module")
    if pre_hook:
        module.register_forward_pre_hook(_observer_forward_pre_hook, prepend=True)
    else:
        module.register_forward_hook(_observer_forward_hook, prepend=True)


def _has_children(module):
    return len(module._modules) > 0


def _add_observer_(module, propagation_list, non_leaf_module_list, custom_module_class_mapping):
    def needs_observation(m):
        return getattr(m, "qconfig", None) is not None

    def insert(m, special=None):
        if needs_observation(m) and not isinstance(m, DeQuantStub):
            m.add_module("activation_post_process",
                         special() if special is not None else m.qconfig.activation())
            _register_activation_post_process_hook(m,
                                                   pre_hook=_activation_is_memoryless(m.qconfig))

    for name, child in module.named_children():
        if type(child) is nn.Dropout:
            continue
        if isinstance(child, (FloatFunctional, QFunctional)):
            if needs_observation(child):
                child.activation_post_process = child.qconfig.activation()
        elif isinstance(child, _FusedModule) or (non_leaf_module_list is not None
                                               and type(child) in non_leaf_module_list):
            if needs_observation(child):
                insert(child)
        elif _has_special_act_post_process(child):
            insert(child, _get_special_act_post_process(child))
        elif needs_observation(child) and type(child) in custom_module_class_mapping:
            observed = custom_module_class_mapping[type(child)].from_float(child)
            setattr(module, name, observed)
            insert(observed)
        else:
            _add_observer_(child, propagation_list, non_leaf_module_list,
                           custom_module_class_mapping)
    if not _has_children(module) and not isinstance(module, nn.Sequential) \
            and type(module) in propagation_list:
        insert(module)


def prepare(model, inplace=False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None):
    """Insert observers for post-training static quantization (see NOTE [ Eager quantization
    workflow ], step 2). Run calibration data through the result, then :func:`convert`.

    Args:
        model (nn.Module): the model, with ``qconfig`` set on it or on submodules.
        inplace (bool): change ``model`` itself rather than a deep copy.
        allow_list (set of type, optional): the classes that get observers (the default
            propagation list).
        observer_non_leaf_module_list (set of type, optional): non-leaf classes that also get
            an output observer.
        prepare_custom_config_dict (dict, optional): ``float_to_observed_custom_module_class``
            mapping for custom modules.

    Returns:
        nn.Module: the prepared model.

    Example:
        >>> from ember.ao.quantization import get_default_qconfig
        >>> m = nn.Sequential(nn.Linear(2, 2)).eval()
        >>> m.qconfig = get_default_qconfig("x86")
        >>> type(prepare(m)[0].activation_post_process).__name__
        'HistogramObserver'
    """
    custom = (prepare_custom_config_dict or {}).get("float_to_observed_custom_module_class", {})
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_dict=None)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct "
                      "configuration through `qconfig_dict` or by assigning the `.qconfig` "
                      "attribute directly on submodules", stacklevel=2)
    propagation_list = allow_list if allow_list is not None \
        else get_default_qconfig_propagation_list()
    _add_observer_(model, propagation_list, observer_non_leaf_module_list, custom)
    return model


def prepare_qat(model, mapping=None, inplace=False):
    """Prepare a model for quantization-aware training: swap modules for their QAT twins
    (fake-quantized weights) and insert fake-quantize modules on outputs (see NOTE [ Eager
    quantization workflow ], step 2). Train the result, then :func:`convert` it in eval mode.

    Args:
        model (nn.Module): the model, in training mode, with ``qconfig`` set.
        mapping (dict, optional): float class → QAT class (the default QAT mapping).
        inplace (bool): change ``model`` itself rather than a deep copy.

    Returns:
        nn.Module: the prepared model.

    Raises:
        AssertionError: if the model is in eval mode.

    Example:
        >>> from ember.ao.quantization import get_default_qat_qconfig
        >>> m = nn.Sequential(nn.Linear(2, 2)); m.qconfig = get_default_qat_qconfig("x86")
        >>> type(prepare_qat(m)[0]).__module__
        'ember.ao.nn.qat.modules.linear'
    """
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    if mapping is None:
        mapping = get_default_qat_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_dict=None)
    convert(model, mapping=mapping, inplace=True, remove_qconfig=False)
    prepare(model, observer_non_leaf_module_list=set(mapping.values()), inplace=True)
    return model


def _remove_activation_post_process(module):
    if hasattr(module, "activation_post_process") \
            and _is_activation_post_process(module.activation_post_process):
        delattr(module, "activation_post_process")
    for hooks, fn in ((module._forward_pre_hooks, _observer_forward_pre_hook),
                      (module._forward_hooks, _observer_forward_hook)):
        for key in [k for k, h in hooks.items() if h is fn]:
            hooks.pop(key)


def _remove_qconfig(module):
    for child in module.children():
        _remove_qconfig(child)
    if hasattr(module, "qconfig"):
        del module.qconfig
    _remove_activation_post_process(module)


def swap_module(mod, mapping, custom_module_class_mapping=None,
                use_precomputed_fake_quant=False):
    """The module that replaces ``mod`` under ``mapping``: ``mapping[type(mod)].from_float(mod)``
    when ``mod`` has a qconfig and its class is mapped, else ``mod`` itself. Forward hooks
    other than the observer's, and pre-hooks, carry over.

    Args:
        mod (nn.Module): the module.
        mapping (dict): class → class with a ``from_float`` classmethod.
        custom_module_class_mapping (dict, optional): observed custom class → quantized class
            (``from_observed``).
        use_precomputed_fake_quant (bool): passed to ``from_float`` where accepted.

    Returns:
        nn.Module: the new module, or ``mod``.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> lin = nn.Linear(2, 2); lin.qconfig = default_qat_qconfig
        >>> type(swap_module(lin, get_default_qat_module_mappings())).__name__
        'Linear'
    """
    custom_module_class_mapping = custom_module_class_mapping or {}
    if getattr(mod, "qconfig", None) is None:
        return mod
    if type(mod) in custom_module_class_mapping:
        new = custom_module_class_mapping[type(mod)].from_observed(mod)
    elif type(mod) in mapping:
        target = mapping[type(mod)]
        if "use_precomputed_fake_quant" in inspect.signature(target.from_float).parameters:
            new = target.from_float(mod, use_precomputed_fake_quant=use_precomputed_fake_quant)
        else:
            new = target.from_float(mod)
    else:
        return mod
    for hook in mod._forward_pre_hooks.values():
        new.register_forward_pre_hook(hook)
    for hook in mod._forward_hooks.values():
        if hook is not _observer_forward_hook:
            new.register_forward_hook(hook)
    return new


def _convert(module, mapping, custom_module_class_mapping, use_precomputed_fake_quant):
    swapped = {}
    for name, child in module.named_children():
        # fused modules (and observed custom modules) are swapped as one unit
        if not isinstance(child, _FusedModule) and type(child) not in custom_module_class_mapping:
            _convert(child, mapping, custom_module_class_mapping, use_precomputed_fake_quant)
        swapped[name] = swap_module(child, mapping, custom_module_class_mapping,
                                    use_precomputed_fake_quant)
    for name, new in swapped.items():
        module._modules[name] = new
    return module


def convert(module, mapping=None, inplace=False, remove_qconfig=True, is_reference=False,
            convert_custom_config_dict=None, use_precomputed_fake_quant=False):
    """Swap prepared (observed or QAT) modules for their quantized versions (see NOTE [ Eager
    quantization workflow ], step 3).

    Args:
        module (nn.Module): the prepared, calibrated or trained model (put it in eval mode).
        mapping (dict, optional): class → quantized class (the default static mapping).
        inplace (bool): change ``module`` itself rather than a deep copy.
        remove_qconfig (bool): remove the ``qconfig`` attributes and leftover observers.
        is_reference (bool): must be False (reference modules are not supported).
        convert_custom_config_dict (dict, optional): ``observed_to_quantized_custom_module_class``.
        use_precomputed_fake_quant (bool): passed to ``from_float`` where accepted.

    Returns:
        nn.Module: the converted model.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> m = nn.Sequential(nn.Linear(2, 2)); m[0].qconfig = default_qat_qconfig
        >>> q = convert(m, mapping=get_default_qat_module_mappings())
        >>> type(q[0]).__module__, hasattr(q[0], "qconfig")
        ('ember.ao.nn.qat.modules.linear', False)
    """
    if is_reference:
        raise ValueError("convert: is_reference=True (reference quantized modules) is not "
                         "supported by ember; use is_reference=False")
    if mapping is None:
        from .quantization_mappings import get_default_static_quant_module_mappings

        mapping = get_default_static_quant_module_mappings()
    custom = (convert_custom_config_dict or {}).get("observed_to_quantized_custom_module_class",
                                                    {})
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping, custom, use_precomputed_fake_quant)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def quantize(model, run_fn, run_args, mapping=None, inplace=False):
    """Post-training static quantization in one call: ``eval``, :func:`prepare`,
    ``run_fn(model, *run_args)`` to calibrate, :func:`convert`.

    Args:
        model (nn.Module): the model, with ``qconfig`` set.
        run_fn (callable): the calibration function.
        run_args (tuple): its extra arguments.
        mapping (dict, optional): for :func:`convert`.
        inplace (bool): change ``model`` itself.

    Returns:
        nn.Module: the quantized model.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> m = nn.Sequential(nn.Linear(2, 2)); m.qconfig = default_qat_qconfig
        >>> q = quantize(m, lambda mod: mod(ember.ones(1, 2)), (),
        ...              mapping=get_default_qat_module_mappings())
        >>> type(q[0]).__module__
        'ember.ao.nn.qat.modules.linear'
    """
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, mapping, inplace=True)
    return model


def quantize_qat(model, run_fn, run_args, inplace=False):
    """Quantization-aware training in one call: ``train``, :func:`prepare_qat`,
    ``run_fn(model, *run_args)`` to train, :func:`convert`.

    Args:
        model (nn.Module): the model, with ``qconfig`` set.
        run_fn (callable): the training function.
        run_args (tuple): its extra arguments.
        inplace (bool): change ``model`` itself.

    Returns:
        nn.Module: the quantized model.

    Example:
        >>> quantize_qat  # doctest: +ELLIPSIS
        <function quantize_qat at ...>
    """
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, inplace=True)
    return model


def quantize_dynamic(model, qconfig_spec=None, dtype=None, mapping=None, inplace=False):
    """Dynamic quantization: swap layers for versions with qint8 weights that quantize their
    float inputs on the fly (see NOTE [ Quantized kernel arithmetic ]); no calibration.

    Args:
        model (nn.Module): the float model.
        qconfig_spec (set of type, or dict, optional): the module classes (or a qconfig_dict
            of classes/names to qconfigs) to quantize; by default ``nn.Linear`` and
            ``nn.LSTM``.
        dtype: ``ember.qint8`` (the default).
        mapping (dict, optional): float class → dynamic quantized class.
        inplace (bool): change ``model`` itself rather than a deep copy.

    Returns:
        nn.Module: the quantized model (in eval mode).

    Example:
        >>> m = quantize_dynamic(nn.Sequential(nn.Linear(4, 2)), {nn.Linear})
        >>> type(m[0]).__name__, m(ember.ones(1, 4)).dtype
        ('Linear', ember.float32)
    """
    from ... import qint8
    from .qconfig import default_dynamic_qconfig
    from .quantization_mappings import get_default_dynamic_quant_module_mappings

    dtype = qint8 if dtype is None else dtype
    if dtype is not qint8:
        raise ValueError(f"quantize_dynamic: ember supports dtype=ember.qint8 only, got {dtype}")
    if qconfig_spec is None:
        qconfig_spec = {nn.Linear: default_dynamic_qconfig, nn.LSTM: default_dynamic_qconfig}
    elif isinstance(qconfig_spec, set):
        qconfig_spec = dict.fromkeys(qconfig_spec, default_dynamic_qconfig)
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model


def add_quant_dequant(module):
    """Wrap each leaf submodule that has a qconfig in a :class:`QuantWrapper`, in place (or
    wrap ``module`` itself if it is such a leaf).

    Args:
        module (nn.Module): a model after :func:`propagate_qconfig_`.

    Returns:
        nn.Module: the model (or the new wrapper).

    Example:
        >>> from ember.ao.quantization import default_qconfig
        >>> m = nn.Linear(2, 2); m.qconfig = default_qconfig
        >>> type(add_quant_dequant(m)).__name__
        'QuantWrapper'
    """
    if not _has_children(module) and getattr(module, "qconfig", None):
        return QuantWrapper(module)
    for name, child in module.named_children():
        module._modules[name] = add_quant_dequant(child)
    return module


def default_eval_fn(model, calib_data):
    """Run ``model`` on the inputs of ``(input, target)`` pairs: the calibration function
    :func:`quantize` is often given.

    Args:
        model (nn.Module): the prepared model.
        calib_data (iterable): ``(input, target)`` pairs (a Dataset or DataLoader).

    Example:
        >>> seen = []
        >>> default_eval_fn(seen.append, [(1, 0), (2, 0)]); seen
        [1, 2]
    """
    for data, _target in calib_data:
        model(data)
