"""``ember._inductor.config``: Inductor settings, checked by name and kept (NOTE [ Compiler
config ] in ember/_dynamo/_config_module.py); ember has no Inductor, so they change nothing.

Example::

    >>> ember._inductor.config.triton.cudagraphs
    False
"""

from .._dynamo._config_module import install

_DEFAULTS = {
    "debug": False,
    "verbose_progress": False,
    "fx_graph_cache": True,
    "fx_graph_remote_cache": None,
    "autotune_local_cache": True,
    "freezing": False,
    "max_autotune": False,
    "max_autotune_pointwise": False,
    "max_autotune_gemm": False,
    "max_autotune_gemm_backends": "ATEN,TRITON,CPP",
    "coordinate_descent_tuning": False,
    "coordinate_descent_check_all_directions": False,
    "epilogue_fusion": True,
    "pattern_matcher": True,
    "cpp_wrapper": False,
    "force_fuse_int_mm_with_mul": False,
    "use_mixed_mm": True,
    "conv_1x1_as_mm": False,
    "shape_padding": True,
    "comprehensive_padding": True,
    "compile_threads": 1,
    "fallback_random": False,
    "implicit_fallbacks": True,
    "aggressive_fusion": False,
    "benchmark_kernel": False,
    "emulate_precision_casts": False,
    "size_asserts": True,
    "layout_optimization": True,
    "keep_output_stride": True,
    "split_reductions": True,
    "unroll_reductions_threshold": 8,
    "triton.cudagraphs": False,
    "triton.cudagraph_trees": True,
    "triton.unique_kernel_names": True,
    "triton.descriptive_names": "original_aten",
    "triton.autotune_pointwise": True,
    "triton.cudagraph_skip_dynamic_graphs": False,
    "triton.store_cubin": False,
    "triton.use_block_ptr": False,
    "cpp.threads": -1,
    "cpp.simdlen": None,
    "cpp.enable_kernel_profile": False,
    "trace.enabled": False,
    "trace.debug_dir": None,
}

install(__name__, "torch._inductor.config", _DEFAULTS)
