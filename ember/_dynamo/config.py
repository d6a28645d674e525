"""``ember._dynamo.config``: the graph-capture settings programs set.

See NOTE [ Compiler config ] in ember/_dynamo/_config_module.py: names are checked, and the
values are kept for the compiler to come (``ember.compile`` runs eagerly today).

Example::

    >>> ember._dynamo.config.cache_size_limit = 64
    >>> ember._dynamo.config.cache_size_limit
    64
    >>> ember._dynamo.config.cache_size_limit = 8
"""

from ._config_module import install

_DEFAULTS = {
    "verbose": False,
    "verify_correctness": False,
    "suppress_errors": False,
    "cache_size_limit": 8,
    "recompile_limit": 8,
    "accumulated_cache_size_limit": 256,
    "accumulated_recompile_limit": 256,
    "automatic_dynamic_shapes": True,
    "assume_static_by_default": True,
    "dynamic_shapes": True,
    "specialize_int": False,
    "specialize_float": False,
    "force_parameter_static_shapes": True,
    "force_nn_module_property_static_shapes": True,
    "capture_scalar_outputs": False,
    "capture_dynamic_output_shape_ops": False,
    "capture_autograd_function": True,
    "capture_func_transforms": True,
    "optimize_ddp": True,
    "guard_nn_modules": True,
    "inline_inbuilt_nn_modules": True,
    "skip_nnmodule_hook_guards": True,
    "allow_unspec_int_on_nn_module": False,
    "compiled_autograd": False,
    "error_on_recompile": False,
    "raise_on_ctx_manager_usage": True,
    "replay_record_enabled": False,
    "debug_dir_root": "/tmp/torch_compile_debug",
    "trace_numpy": True,
    "numpy_default_float": "float64",
    "numpy_default_complex": "complex128",
    "numpy_default_int": "int64",
    "use_numpy_random_stream": False,
    "cache_size_limit_warn": True,
    "report_guard_failures": True,
    "print_specializations": False,
    "rewrite_assert_with_torch_assert": True,
    "disable": False,
    "cprofile": False,
    "skip_fsdp_guards": True,
    "skip_tensor_guards_with_matching_dict_tags": True,
    "allow_rnn": False,
    "optimize_user_defined_triton_kernels": True,
    "enable_cpp_guard_manager": True,
    "inline_inbuilt_nn_modules_warn": True,
    "prefer_deferred_runtime_asserts_over_guards": False,
    "allow_complex_guards_as_runtime_asserts": False,
    "do_not_emit_runtime_asserts": False,
    "dont_skip_tracing": False,
    "graph_break_on_nn_param_ctor": True,
    "fail_on_recompile_limit_hit": False,
    "caching_precompile": False,
}

install(__name__, "torch._dynamo.config", _DEFAULTS)
