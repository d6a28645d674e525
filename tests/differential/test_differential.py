"""The CI sample of the differential suite: a few seeded cases per OpInfo entry, each run in
ember and in real PyTorch and compared (see tests/differential/harness.py)."""

from __future__ import annotations

import functools

import pytest

from tests.conftest import HAS_TORCH
from tests.differential import harness as H
from tests.differential.known_mismatches import KNOWN, NO_SPECIALS_IN_CI

#: cases per op in CI; tools/difftest.py --long runs as many as asked
CASES_PER_OP = 6

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
OP_IDS = [e.id for e in H.load_db()]


@functools.cache
def _sample(op_id):
    """(kind -> first repro) for the CI sample of ``op_id``."""
    import torch

    ent = H.entry(op_id)
    found = {}
    for i in range(CASES_PER_OP):
        try:
            case = H.make_case(ent, H.case_seed(op_id, i), op_id not in NO_SPECIALS_IN_CI)
        except H.Skip:
            continue
        out = H.run_case(case, torch)
        for kind, detail in out.mismatches:
            found.setdefault(kind, f"{detail}\n    repro: {H.repro(case)}")
    return found


@pytest.mark.parametrize("op_id", OP_IDS)
def test_op_matches_torch(op_id):
    new = {k: v for k, v in _sample(op_id).items() if (op_id, k) not in KNOWN}
    assert not new, f"{op_id}: mismatches against torch:\n" + "\n".join(
        f"  {k}: {v}" for k, v in new.items())


@pytest.mark.parametrize("key", sorted(KNOWN), ids=[f"{o}:{k}" for o, k in sorted(KNOWN)])
def test_known_mismatch_still_reproduces(key):
    op_id, kind = key
    if kind not in _sample(op_id) and KNOWN[key].startswith("torch-specific"):
        # where inf-or-NaN follows the order of torch's vendor kernels (MKL, vectorized
        # Welford), which order a machine gets depends on its CPU: AVX-512 and AVX2 differ
        pytest.skip("kernel-order difference that this machine's torch kernels do not show")
    assert kind in _sample(op_id), (
        f"{op_id}: the known {kind} mismatch no longer reproduces; delete it from "
        "tests/differential/known_mismatches.py")


def test_known_mismatches_name_real_ops_and_kinds():
    for op_id, kind in KNOWN:
        assert op_id in OP_IDS and kind in H.KINDS, (op_id, kind)
