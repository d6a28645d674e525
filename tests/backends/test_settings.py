"""ember.backends: settings assigned and read back, flags blocks, queries, vs PyTorch."""

import warnings

import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")


def test_cudnn_benchmark_assign_reads_back():
    ember.backends.cudnn.benchmark = True
    try:
        assert ember.backends.cudnn.benchmark is True
    finally:
        ember.backends.cudnn.benchmark = False


def test_cudnn_setting_non_bool_raises_runtime_error():
    with pytest.raises(RuntimeError, match="expects a bool"):
        ember.backends.cudnn.deterministic = 1


@needs_torch
def test_cudnn_defaults_match_torch():
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(ember.backends.cudnn, name) == getattr(torch.backends.cudnn, name)
    assert ember.backends.cudnn.is_available() == torch.backends.cudnn.is_available()
    assert ember.backends.cudnn.version() == torch.backends.cudnn.version()


@needs_torch
def test_cudnn_flags_defaults_and_restore_match_torch():
    for lib in (ember, torch):
        lib.backends.cudnn.benchmark = True
    try:
        seen = []
        for lib in (ember, torch):
            with lib.backends.cudnn.flags():
                seen.append((lib.backends.cudnn.enabled, lib.backends.cudnn.benchmark))
            seen.append((lib.backends.cudnn.enabled, lib.backends.cudnn.benchmark))
        assert seen[:2] == seen[2:]
    finally:
        for lib in (ember, torch):
            lib.backends.cudnn.benchmark = False


def test_cudnn_set_flags_returns_previous_values():
    old = ember.backends.cudnn.set_flags(_benchmark=True)
    try:
        assert old[1] is False and ember.backends.cudnn.benchmark is True
    finally:
        ember.backends.cudnn.set_flags(*old)
    assert ember.backends.cudnn.benchmark is False


def test_matmul_allow_tf32_tied_to_float32_matmul_precision():
    try:
        ember.set_float32_matmul_precision("high")
        assert ember.backends.cuda.matmul.allow_tf32 is True
        ember.backends.cuda.matmul.allow_tf32 = False
        assert ember.get_float32_matmul_precision() == "highest"
    finally:
        ember.set_float32_matmul_precision("highest")


def test_matmul_unknown_attribute_raises_attribute_error():
    with pytest.raises(AttributeError, match="Unknown attribute"):
        ember.backends.cuda.matmul.not_a_setting = True


@needs_torch
def test_matmul_reduced_precision_defaults_match_torch():
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction"):
        assert getattr(ember.backends.cuda.matmul, name) == getattr(torch.backends.cuda.matmul,
                                                                     name)


@needs_torch
def test_sdp_switches_match_torch():
    for name in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled",
                 "cudnn_sdp_enabled", "fp16_bf16_reduction_math_sdp_allowed", "is_built"):
        assert getattr(ember.backends.cuda, name)() == getattr(torch.backends.cuda, name)()


def test_sdp_kernel_warns_and_restores():
    with pytest.warns(FutureWarning):
        with ember.backends.cuda.sdp_kernel(enable_flash=False):
            assert ember.backends.cuda.flash_sdp_enabled() is False
    assert ember.backends.cuda.flash_sdp_enabled() is True


@needs_torch
def test_cufft_plan_cache_without_cuda_raises_as_torch():
    with pytest.raises(AssertionError):
        _ = torch.backends.cuda.cufft_plan_cache.max_size
    with pytest.raises(AssertionError):
        _ = ember.backends.cuda.cufft_plan_cache.max_size
    with pytest.raises(RuntimeError, match="device index"):
        _ = ember.backends.cuda.cufft_plan_cache[0]


@needs_torch
def test_mps_queries_match_torch():
    assert ember.backends.mps.is_available() == torch.backends.mps.is_available()
    assert ember.backends.mps.is_built() == torch.backends.mps.is_built()
    with pytest.raises(RuntimeError):
        ember.backends.mps.is_macos13_or_newer()


def test_mkldnn_flags_restore_enabled():
    with ember.backends.mkldnn.flags(enabled=False):
        assert ember.backends.mkldnn.enabled is False
    assert ember.backends.mkldnn.enabled is True


def test_opt_einsum_enabled_follows_package_presence():
    available = ember.backends.opt_einsum.is_available()
    assert ember.backends.opt_einsum.enabled == available
    with ember.backends.opt_einsum.flags(enabled=False):
        assert ember.backends.opt_einsum.enabled is False


def test_mkl_and_openmp_report_bools():
    assert isinstance(ember.backends.mkl.is_available(), bool)
    assert isinstance(ember.backends.openmp.is_available(), bool)
    with ember.backends.mkl.verbose(ember.backends.mkl.VERBOSE_ON):
        pass


@needs_torch
def test_cpu_capability_matches_torch():
    assert ember.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()


def test_cpu_capability_env_lowers_level(monkeypatch):
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    assert ember.backends.cpu.get_cpu_capability() == "DEFAULT"


@needs_torch
def test_backends_submodules_present_as_in_torch():
    for name in ("cpu", "cuda", "cudnn", "cusparselt", "kleidiai", "mha", "miopen", "mkl",
                 "mkldnn", "mps", "nnpack", "openmp", "opt_einsum", "quantized"):
        assert hasattr(torch.backends, name)
        assert hasattr(ember.backends, name), name


def test_quantized_engine_unknown_raises_runtime_error():
    with pytest.raises(RuntimeError, match="foo is not a valid value for quantized engine"):
        ember.backends.quantized.engine = "foo"


def test_quantized_engines_are_the_cpu_builds():
    assert ember.backends.quantized.supported_engines == ["qnnpack", "onednn", "x86", "fbgemm"]
    assert ember.backends.quantized.engine == "x86"
    try:
        for name in ("qnnpack", "fbgemm", "onednn", "x86"):
            ember.backends.quantized.engine = name
            assert ember.backends.quantized.engine == name
        with pytest.raises(RuntimeError, match="NoQEngine is not supported"):
            ember.backends.quantized.engine = "none"
    finally:
        ember.backends.quantized.engine = "x86"


def test_mha_fastpath_switch_reads_back():
    ember.backends.mha.set_fastpath_enabled(False)
    try:
        assert ember.backends.mha.get_fastpath_enabled() is False
    finally:
        ember.backends.mha.set_fastpath_enabled(True)


def test_set_float32_matmul_precision_unknown_warns():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ember.set_float32_matmul_precision("bogus")
    assert w and ember.get_float32_matmul_precision() == "highest"


def test_opt_einsum_strategy_assignment_unchecked_set_flags_checked():
    # as PyTorch: timm's Kron optimizer assigns opt_einsum's own "auto-hq" directly
    oe = ember.backends.opt_einsum
    old = oe.strategy
    try:
        oe.strategy = "auto-hq"
        assert oe.strategy == "auto-hq"
        oe.strategy = old
        with pytest.raises(ValueError):
            oe.set_flags(None, "auto-hq")
        assert oe.strategy == old
    finally:
        oe.strategy = old
    torch = pytest.importorskip("torch")
    t_old = torch.backends.opt_einsum.strategy
    try:
        torch.backends.opt_einsum.strategy = "auto-hq"
        assert torch.backends.opt_einsum.strategy == "auto-hq"
        with pytest.raises(ValueError):
            torch.backends.opt_einsum.set_flags(None, "auto-hq")
    finally:
        torch.backends.opt_einsum.strategy = t_old
