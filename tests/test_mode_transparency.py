"""A mode that only passes calls on changes no result: the paths taken below a mode (the
element-wise direct paths included) agree with the paths taken with no mode on."""

import numpy as np
import pytest

import ember
from ember import _dispatch
from ember.testing._opinfo import load_op_db


class _PassThrough(_dispatch.Mode):
    level = 40

    def dispatch(self, handle, args, kwargs):
        return handle(*args, **kwargs)


_DB = [i for i in load_op_db() if not i.nondeterministic]


def _results(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("info", _DB, ids=lambda i: i.id)
def test_pass_through_mode_changes_no_result(info):
    for dt in info.dtypes[:3]:
        for s in list(info.sample_inputs(dt, np.random.default_rng(0)))[:2]:
            try:
                want = info.get_op()(s.input, *s.args, **s.kwargs)
            except Exception as e:  # the mode must raise the same error
                with pytest.raises(type(e)):
                    m = _PassThrough()
                    _dispatch.push_mode(m)
                    try:
                        info.get_op()(s.input, *s.args, **s.kwargs)
                    finally:
                        _dispatch.pop_mode(m)
                continue
            m = _PassThrough()
            _dispatch.push_mode(m)
            try:
                got = info.get_op()(s.input, *s.args, **s.kwargs)
            finally:
                _dispatch.pop_mode(m)
            for a, b in zip(_results(want), _results(got)):
                if isinstance(a, ember.Tensor):
                    assert isinstance(b, ember.Tensor), (s, b)
                    assert a.dtype == b.dtype and a.shape == b.shape, (s, a.dtype, b.dtype)
                    if a.dtype.is_complex or a.dtype.is_floating_point:
                        np.testing.assert_allclose(a.to(ember.complex128).numpy(),
                                                   b.to(ember.complex128).numpy(),
                                                   equal_nan=True)
                    else:
                        assert a.tolist() == b.tolist()
