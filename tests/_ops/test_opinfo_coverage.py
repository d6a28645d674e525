"""The OpInfo table declares every form an op has, so the generic tests cover all of them.

test_variants checks an entry's in-place (``Tensor.<name>_``) and ``out=`` forms only when
its ``inplace`` / ``supports_out`` flag is set, so a flag left unset leaves a form untested.
These tests compare each entry's flags with the forms that both ember and PyTorch have. An
entry whose same-named form is a different op (``Tensor.bernoulli_(p)`` fills ``self`` with
draws of probability ``p``) says so in ``skips["inplace"]`` or ``skips["out"]``.
"""

from __future__ import annotations

import inspect
import re

import pytest

import ember
from ember.testing._opinfo import load_op_db
from tests._ops.test_opinfo import _results, _samples, _torch_value
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")

op_db = load_op_db()


def _ember_accepts_out(info):
    # the public function the entry is named after: an entry's own ``op`` may wrap it
    fn = ember
    for part in info.name.split("."):
        fn = getattr(fn, part, None)
    try:
        return "out" in inspect.signature(fn or info.get_op()).parameters
    except (TypeError, ValueError):  # a callable without a signature declares no out=
        return False


def _torch_accepts_out(info, torch):
    """Whether PyTorch's counterpart takes ``out=``: its builtins carry no signature, so call
    it on the first sample it accepts, once plainly and once writing into fresh tensors."""
    top = info.get_torch_op(torch)
    if top is None:
        return False
    for dtype in info.dtypes:
        for s in _samples(info, dtype):
            try:
                want = top(*_torch_value(s.all_args()), **_torch_value(s.kwargs))
            except Exception:  # noqa: BLE001 -- a sample torch rejects tells nothing
                continue
            results = _results(want)
            if not all(isinstance(r, torch.Tensor) for r in results):
                return False  # lists, bools and numbers have nothing to write into
            out = [torch.empty(0, dtype=r.dtype) for r in results]
            try:
                top(*_torch_value(s.all_args()), **_torch_value(s.kwargs),
                    out=out[0] if isinstance(want, torch.Tensor) else tuple(out))
            except TypeError:  # the argument parser knows no out=
                return False
            except Exception:  # noqa: BLE001 -- out= was parsed; the sample failed later
                return True
            return True
    return False


def _declared(info, form):
    return form in info.skips


def test_inplace_forms_are_declared():
    import torch

    # the in-place form is the method's: an entry without a method form (special.erf,
    # polygamma(n, input), normal(mean, std)) has no Tensor.<name>_ of its own
    missing = [info.id for info in op_db
               if info.method and not info.inplace and not _declared(info, "inplace")
               and hasattr(ember.Tensor, info.name.split(".")[-1] + "_")
               and hasattr(torch.Tensor, info.name.split(".")[-1] + "_")]
    assert not missing, ("these entries have a Tensor.<name>_ form in ember and in torch but "
                         "not inplace=True (or skips['inplace'] with the reason): "
                         + ", ".join(missing))


def test_out_forms_are_declared():
    import torch

    missing = [info.id for info in op_db
               if not info.supports_out and not _declared(info, "out")
               and _ember_accepts_out(info) and _torch_accepts_out(info, torch)]
    assert not missing, ("these entries take out= in ember and in torch but do not set "
                         "supports_out=True (or skips['out'] with the reason): "
                         + ", ".join(missing))


def test_out_flags_come_from_the_registry():
    """No entry states a supports_out= flag its declaration contradicts: the flag is read
    off the public function's signature and its ``out_overloads`` declaration."""
    differ = [info.id for info in op_db
              if info.supports_out != ("out" not in info.skips and info._accepts_out())]
    assert not differ, "supports_out= differs from the registry for: " + ", ".join(differ)


@pytest.mark.parametrize("name,kwargs", [("median", {}), ("nanmedian", {}),
                                         ("nonzero", {"as_tuple": True})])
def test_overload_without_out_refuses_it_as_torch(name, kwargs):
    import torch

    def call(lib):
        x = lib.tensor([[1.0, 0.0], [3.0, 4.0]])
        getattr(lib, name)(x, **kwargs, out=lib.empty(0))

    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(want.type, match=re.escape(str(want.value).split("\n")[0][:40])) as got:
        call(ember)
    assert got.type is want.type
