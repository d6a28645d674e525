"""torch.cuda's smaller namespaces: tunable, jiterator, gds, green_contexts, sparse and the
compute-capability tables, against PyTorch where it can answer without a GPU."""

import os

import numpy as np
import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs PyTorch")
no_gpu = pytest.mark.skipif(ember.cuda.is_available(), reason="checks the answers without a GPU")
needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")


@needs_torch
def test_public_names_of_torch_cuda_are_here():
    names = [n for n in dir(torch.cuda) if not n.startswith("_")
             and not isinstance(getattr(torch.cuda, n), type(os))]
    missing = [n for n in names if not hasattr(ember.cuda, n)]
    # what is left are typing helpers (Any, Optional, cast, ...) and imported modules
    assert len(missing) / len(names) < 0.1, missing
    for sub in ("tunable", "jiterator", "gds", "green_contexts", "sparse"):
        assert hasattr(ember.cuda, sub)


@needs_torch
def test_device_requirement_matches_pytorch_rule():
    for code, rule in torch.cuda.DEVICE_REQUIREMENT.items():
        ours = ember.cuda.DEVICE_REQUIREMENT[code]
        assert str(ours) == str(rule)
        assert [cc in ours for cc in range(30, 140)] == [cc in rule for cc in range(30, 140)]
    assert ember.cuda.PYTORCH_RELEASES_CODE_CC == torch.cuda.PYTORCH_RELEASES_CODE_CC


def test_tunable_settings_and_results_file(tmp_path):
    t = ember.cuda.tunable
    before = (t.is_enabled(), t.tuning_is_enabled(), t.get_max_tuning_duration(),
              t.get_max_tuning_iterations(), t.get_filename(), t.record_untuned_is_enabled(),
              t.get_rotating_buffer_size())
    try:
        t.enable(True)
        t.tuning_enable(False)
        t.set_max_tuning_duration(7)
        t.set_max_tuning_iterations(11)
        t.set_rotating_buffer_size(64)
        t.record_untuned_enable(True)
        assert (t.is_enabled(), t.tuning_is_enabled(), t.get_max_tuning_duration(),
                t.get_max_tuning_iterations(), t.get_rotating_buffer_size(),
                t.record_untuned_is_enabled()) == (True, False, 7, 11, 64, True)
        t.set_filename(str(tmp_path / "res.csv"), insert_device_ordinal=True)
        assert t.get_filename() == str(tmp_path / "res0.csv")
        t.set_filename(str(tmp_path / "res.csv"))
        assert t.get_filename() == str(tmp_path / "res.csv")
        (tmp_path / "in.csv").write_text(
            "Validator,PT_VERSION,2.13.0\nValidator,ROCBLAS_VERSION,4.0\n"
            "GemmTunableOp_float_NT,nt_25088_4096_64,Gemm_Hipblaslt_1219,1.262\n"
            "GemmTunableOp_float_TN,tn_1_4096_4096,Default,0.031\n")
        assert t.read_file(str(tmp_path / "in.csv")) is True
        assert ("GemmTunableOp_float_NT", "nt_25088_4096_64", "Gemm_Hipblaslt_1219", 1.262) \
            in t.get_results()
        assert ("PT_VERSION", "2.13.0") in t.get_validators()
        assert t.write_file(str(tmp_path / "out.csv"))
        text = (tmp_path / "out.csv").read_text()
        assert "GemmTunableOp_float_TN,tn_1_4096_4096,Default,0.031" in text
        assert t.read_file(str(tmp_path / "missing.csv")) is False
    finally:
        t.enable(before[0])
        t.tuning_enable(before[1])
        t.set_max_tuning_duration(before[2])
        t.set_max_tuning_iterations(before[3])
        t.set_filename(before[4])
        t.record_untuned_enable(before[5])
        t.set_rotating_buffer_size(before[6])
        t._state.results.clear()
        t._state.validators.clear()


def test_jiterator_parses_entry_function_and_scalars():
    j = ember.cuda.jiterator
    code = ("template <typename T> T util_fn(T x, T y) { return ::sin(x) + ::cos(y); }"
            "template <typename T> T my_kernel(T x, T y, T val) "
            "{ return ::min(val, util_fn(x, y)); }")
    fn = j._create_jit_fn(code, val=0.0)
    assert (fn.name, fn.num_inputs, fn.num_outputs) == ("my_kernel", 2, 1)
    assert fn.kernel_source() == ("T in0, T in1, T val", "T out0",
                                  "out0 = my_kernel<T>(in0, in1, val)")
    multi = j._create_multi_output_jit_fn(
        "template <typename T> void k(T x, T a, T& o1, T& o2) { o1 = x + a; o2 = x - a; }", 2,
        a=1.0)
    assert multi.num_inputs == 1
    assert multi.kernel_source()[2] == "k<T>(in0, a, out0, out1)"
    with pytest.raises(ValueError):
        j._create_jit_fn("int f(int x) { return x; }")
    with pytest.raises(ValueError):  # scalars named out of order
        j._create_jit_fn("template <typename T> T f(T x, T a, T b) { return x; }", b=1, a=2)


@no_gpu
@needs_torch
def test_jiterator_without_gpu_raises_as_pytorch():
    code = "template <typename T> T f(T x, T y) { return x + y; }"
    with pytest.raises(AssertionError) as theirs:
        torch.cuda.jiterator._create_jit_fn(code)(torch.ones(2), torch.ones(2))
    with pytest.raises(AssertionError) as ours:
        ember.cuda.jiterator._create_jit_fn(code)(ember.ones(2), ember.ones(2))
    assert str(ours.value) == str(theirs.value)


@needs_gpu
def test_jiterator_on_gpu_matches_the_expression():
    fn = ember.cuda.jiterator._create_jit_fn(
        "template <typename T> T axpy(T x, T y, T alpha) { return alpha * x + y; }", alpha=1.0)
    a = ember.rand(5, 3, device="cuda")
    b = ember.rand(3, device="cuda", dtype=ember.float64)
    out = fn(a, b, alpha=2.5)
    assert out.dtype == ember.float64 and out.shape == (5, 3)
    np.testing.assert_allclose(out.cpu().numpy(), (2.5 * a.double() + b).cpu().numpy())
    sc = ember.cuda.jiterator._create_multi_output_jit_fn(
        "template <typename T> void sc(T x, T& s, T& c) { s = sin(x); c = cos(x); }", 2)
    s, c = sc(a)
    np.testing.assert_allclose(s.cpu().numpy(), np.sin(a.cpu().numpy()), rtol=1e-5)
    np.testing.assert_allclose(c.cpu().numpy(), np.cos(a.cpu().numpy()), rtol=1e-5)


def test_gds_file_round_trip(tmp_path):
    gds = ember.cuda.gds
    f = gds.GdsFile(str(tmp_path / "w.bin"), os.O_CREAT | os.O_RDWR)
    x = ember.arange(6, dtype=ember.float32)
    f.save_storage(x.untyped_storage(), offset=0)
    f.save_storage(ember.tensor([7, 8], dtype=ember.int16).untyped_storage(), offset=24)
    y = ember.zeros(6)
    f.load_storage(y.untyped_storage(), offset=0)
    assert y.tolist() == x.tolist()
    z = ember.zeros(2, dtype=ember.int16)
    f.load_storage(z.untyped_storage(), offset=24)
    assert z.tolist() == [7, 8]
    with pytest.raises(RuntimeError):  # past the end: nothing is half-written
        f.load_storage(ember.zeros(10).untyped_storage(), offset=0)
    f.deregister_handle()
    with pytest.raises(AssertionError):
        f.save_storage(x.untyped_storage())
    s = x.untyped_storage()
    gds.gds_register_buffer(s)
    gds.gds_deregister_buffer(s)
    with pytest.raises(RuntimeError):
        gds.gds_deregister_buffer(s)


@needs_gpu
def test_gds_file_with_cuda_storages(tmp_path):
    f = ember.cuda.gds.GdsFile(str(tmp_path / "g.bin"), os.O_CREAT | os.O_RDWR)
    x = ember.randn(100, device="cuda")
    f.save_storage(x.untyped_storage())
    y = ember.zeros(100, device="cuda")
    f.load_storage(y.untyped_storage())
    assert ember.equal(x, y)


@needs_torch
def test_green_contexts_unsupported_as_pytorch_without_them():
    assert ember.cuda.green_contexts.SUPPORTED is False
    assert ember.cuda.GreenContext is ember.cuda.green_contexts.GreenContext
    with pytest.raises(RuntimeError, match="Green Context"):
        ember.cuda.green_contexts.GreenContext.create(num_sms=4)
    if not torch.cuda.green_contexts.SUPPORTED:
        with pytest.raises(RuntimeError, match="Green Context"):
            torch.cuda.green_contexts.GreenContext.create(num_sms=4)


@no_gpu
@needs_torch
def test_cuda_sparse_types_without_cuda():
    for name in torch.cuda.sparse.__all__ if hasattr(torch.cuda.sparse, "__all__") else \
            ["FloatTensor", "LongTensor"]:
        with pytest.raises(TypeError) as theirs:
            getattr(torch.cuda.sparse, name)()
        with pytest.raises(TypeError) as ours:
            getattr(ember.cuda.sparse, name)()
        assert str(ours.value) == str(theirs.value)
    s = ember.tensor([[0.0, 1.0]]).to_sparse()
    assert not isinstance(s, ember.cuda.sparse.FloatTensor)
    assert isinstance(s, ember.sparse.FloatTensor)
