"""More libraries built on torch run unchanged on ember under the alias: captum, opacus,
pyro, torchsde, gpytorch, skorch, MONAI and tensordict.

The drivers live together in ``_library_drivers.py``, one ``<library>_case`` function each;
every test runs that file once on PyTorch and once under ``python -m ember.compat.run``
(``_both`` of ``test_third_party_libs.py``) with the library's name, and compares the
``.npz`` files the two runs save. A test skips when its library, or PyTorch, is not
installed. What ember needed for these libraries is tested without them in
``test_library_regressions_6.py``.
"""

from pathlib import Path

from tests.compat.test_third_party_libs import _assert_same, _both, _needs

DRIVERS = (Path(__file__).parent / "_library_drivers.py").read_text()


def _compare(tmp_path, library, **tolerances):
    torch_out, ember_out = _both(tmp_path, DRIVERS, args=[library])
    _assert_same(torch_out, ember_out, **tolerances)


@_needs("captum", "matplotlib", "sklearn")
def test_captum_attributions_match_torch(tmp_path):
    _compare(tmp_path, "captum")


@_needs("opacus", "opt_einsum")
def test_opacus_per_sample_gradients_and_dp_sgd_match_torch(tmp_path):
    _compare(tmp_path, "opacus", rtol=1e-4, atol=1e-5)


@_needs("pyro", "pyroapi", "opt_einsum")
def test_pyro_svi_enumeration_and_nuts_match_torch(tmp_path):
    # NUTS' trajectories add float32 rounding over many leapfrog steps
    _compare(tmp_path, "pyro", rtol=1e-4, atol=1e-4)


@_needs("torchsde", "trampoline")
def test_torchsde_solvers_adjoint_and_brownian_motion_match_torch(tmp_path):
    # adaptive stepping accepts or rejects steps on float32 error estimates
    _compare(tmp_path, "torchsde", rtol=1e-4, atol=1e-4)


@_needs("gpytorch", "linear_operator")
def test_gpytorch_exact_gp_regression_matches_torch(tmp_path):
    # solves against a kernel matrix with 1e-2 jitter lose a few digits on both sides
    _compare(tmp_path, "gpytorch", rtol=1e-4, atol=1e-5)


@_needs("skorch", "sklearn")
def test_skorch_fit_pipeline_and_search_match_torch(tmp_path):
    _compare(tmp_path, "skorch")


@_needs("monai")
def test_monai_unet_steps_networks_and_transforms_match_torch(tmp_path):
    _compare(tmp_path, "monai")


@_needs("tensordict", "pyvers", "cloudpickle")
def test_tensordict_containers_tensorclass_and_modules_match_torch(tmp_path):
    _compare(tmp_path, "tensordict")
