"""The fused loss-scaling kernels (NOTE [ Fused inf checks ] in ember/amp/_scaler_kernels.py)
against torch's ``_amp_foreach_non_finite_check_and_unscale_`` and ``_amp_update_scale_``,
on NumPy arrays and, with a GPU, on CuPy arrays."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")


def _grads(lib, device="cpu"):
    rng = np.random.default_rng(0)
    vals = [rng.standard_normal(7).astype(np.float32) * 1000 for _ in range(3)]
    out = [lib.tensor(vals[0], device=device),
           lib.tensor(vals[1], device=device).half(),
           lib.tensor(vals[2], device=device).double()]
    return out


def _check_unscale(device, poison=None):
    res = {}
    for lib in (ember, torch):
        dev = device if lib is ember or torch.cuda.is_available() else "cpu"
        gs = _grads(lib, dev)
        if poison is not None:
            gs[1][3] = poison
        found = lib.zeros((), device=dev)
        lib._amp_foreach_non_finite_check_and_unscale_(gs, found,
                                                       lib.tensor(1 / 1024, device=dev))
        res[lib] = ([g.cpu().numpy() for g in gs], [str(g.dtype)[-7:] for g in gs],
                    float(found))
    (eg, ed, ef), (tg, td, tf) = res[ember], res[torch]
    assert ed == td and ef == tf
    for a, b in zip(eg, tg):
        np.testing.assert_array_equal(a, b)


def test_unscale_finite_matches_torch():
    _check_unscale("cpu")


@pytest.mark.parametrize("poison", [float("inf"), float("nan")])
def test_unscale_nonfinite_sets_found_inf(poison):
    _check_unscale("cpu", poison)


def test_unscale_bfloat16_matches_torch():
    vals = np.array([3.0, -7.5, 1e30], np.float32)
    e, t = ember.tensor(vals).bfloat16(), torch.tensor(vals).bfloat16()
    ember._amp_foreach_non_finite_check_and_unscale_([e], ember.zeros(()), ember.tensor(0.1))
    torch._amp_foreach_non_finite_check_and_unscale_([t], torch.zeros(()), torch.tensor(0.1))
    np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())


def test_unscale_found_inf_is_left_when_all_finite():
    found = ember.ones(())
    ember._amp_foreach_non_finite_check_and_unscale_([ember.ones(3)], found, ember.tensor(1.0))
    assert float(found) == 1.0


@pytest.mark.parametrize("bad", ["found_shape", "found_dtype", "inv_shape", "inv_dtype"])
def test_unscale_bad_arguments_raise_as_torch(bad):
    msgs = []
    for lib in (ember, torch):
        found, inv = lib.zeros(()), lib.tensor(0.5)
        if bad == "found_shape":
            found = lib.zeros(2)
        elif bad == "found_dtype":
            found = lib.zeros((), dtype=lib.float64)
        elif bad == "inv_shape":
            inv = lib.ones(2)
        else:
            inv = lib.tensor(0.5, dtype=lib.float64)
        g = lib.ones(2)
        with pytest.raises(RuntimeError) as info:
            lib._amp_foreach_non_finite_check_and_unscale_([g], found, inv)
        msgs.append(str(info.value))
        assert float(g.sum()) == 2.0
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("found,tracker,scale", [
    (0.0, 0, 4.0), (0.0, 1, 4.0), (1.0, 1, 4.0), (0.0, 1, 3e38), (2.0, 0, 0.75)])
def test_update_scale_matches_torch(found, tracker, scale):
    res = []
    for lib in (ember, torch):
        s = lib.tensor(scale)
        t = lib.tensor(tracker, dtype=lib.int32)
        out = lib._amp_update_scale_(s, t, lib.tensor(found), 2.0, 0.5, 2)
        assert out is s
        res.append((float(s), int(t)))
    assert res[0] == res[1]


@pytest.mark.parametrize("which", ["scale_dtype", "tracker_dtype", "found_dtype", "scale_numel"])
def test_update_scale_bad_arguments_raise_as_torch(which):
    msgs = []
    for lib in (ember, torch):
        args = [lib.tensor(1.0), lib.tensor(0, dtype=lib.int32), lib.tensor(0.0)]
        if which == "scale_dtype":
            args[0] = lib.tensor(1.0, dtype=lib.float64)
        elif which == "tracker_dtype":
            args[1] = lib.tensor(0.0)
        elif which == "found_dtype":
            args[2] = lib.tensor(0.0, dtype=lib.float64)
        else:
            args[0] = lib.ones(2)
        with pytest.raises(RuntimeError) as info:
            lib._amp_update_scale_(*args, 2.0, 0.5, 2)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_grad_scaler_update_uses_device_values():
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([p], lr=0.1)
    s = ember.amp.GradScaler("cpu", init_scale=8.0, growth_interval=1)
    s.scale((p * float("inf")).sum()).backward()
    s.step(opt)
    s.update()
    assert s.get_scale() == 4.0 and s._growth_tracker.dtype == ember.int32
    assert p.tolist() == [1.0, 1.0]


# ---- on a GPU (CuPy arrays): the ElementwiseKernels ------------------------------------


@needs_gpu
def test_cuda_unscale_finite_matches_torch():
    _check_unscale("cuda")


@needs_gpu
@pytest.mark.parametrize("poison", [float("inf"), float("nan")])
def test_cuda_unscale_nonfinite_sets_found_inf(poison):
    _check_unscale("cuda", poison)


@needs_gpu
def test_cuda_unscale_bfloat16_matches_cpu():
    vals = np.array([3.0, -7.5, 1e30, float("inf")], np.float32)
    out = []
    for dev in ("cpu", "cuda"):
        g = ember.tensor(vals, device=dev).bfloat16()
        found = ember.zeros((), device=dev)
        ember._amp_foreach_non_finite_check_and_unscale_([g], found,
                                                         ember.tensor(0.1, device=dev))
        out.append((g.float().cpu().numpy(), float(found.cpu())))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    assert out[0][1] == out[1][1] == 1.0


@needs_gpu
@pytest.mark.parametrize("found,tracker,scale", [(0.0, 1, 4.0), (1.0, 1, 4.0), (0.0, 1, 3e38)])
def test_cuda_update_scale_matches_cpu(found, tracker, scale):
    res = []
    for dev in ("cpu", "cuda"):
        s = ember.tensor(scale, device=dev)
        t = ember.tensor(tracker, dtype=ember.int32, device=dev)
        ember._amp_update_scale_(s, t, ember.tensor(found, device=dev), 2.0, 0.5, 2)
        res.append((float(s.cpu()), int(t.cpu())))
    assert res[0] == res[1]


@needs_gpu
def test_cuda_grad_scaler_skips_step_on_inf():
    p = ember.nn.Parameter(ember.ones(2, device="cuda"))
    opt = ember.optim.SGD([p], lr=0.1)
    s = ember.amp.GradScaler("cuda", init_scale=8.0)
    s.scale((p * float("inf")).sum()).backward()
    s.step(opt)
    s.update()
    assert s.get_scale() == 4.0
    assert p.cpu().tolist() == [1.0, 1.0]
