"""ember.fx records calls as torch.fx does: arguments as written or in torch's fixed form,
aliases under the name used, and the ``ops.profiler`` record-function ops."""

import inspect

import pytest

import ember
import ember.fx as fx
from ember.fx._recorded_calls import _FORMS

torch = pytest.importorskip("torch")
import torch.fx  # noqa: E402,F811  (torch.fx is a submodule to import)


def _calls(lib, fn):
    """(target name, args, kwargs) of each call node of ``fn`` traced with ``lib``; nodes
    print as their names."""
    gm = lib.fx.symbolic_trace(fn)
    return [(n.name, repr(n.args), repr(n.kwargs)) for n in gm.graph.nodes
            if n.op.startswith("call")]


# each: lib -> function of x (4 x 8), w (8 x 8), b (8), cw (1 x 1 x 3 x 3)
_CALLS = {
    "relu": lambda L: lambda x: L.nn.functional.relu(x),
    "gelu": lambda L: lambda x: L.nn.functional.gelu(x, approximate="tanh"),
    "linear": lambda L: lambda x, w, b: L.nn.functional.linear(x, w, bias=b),
    "conv2d": lambda L: lambda x, cw: L.nn.functional.conv2d(x.view(1, 1, 4, 8), cw,
                                                               padding=1),
    "cat_kw": lambda L: lambda x: L.cat([x, x], dim=1),
    "cat_pos": lambda L: lambda x: L.cat([x, x], 1),
    "softmax": lambda L: lambda x: L.nn.functional.softmax(x, dim=-1) * 2,
    "dropout": lambda L: lambda x: L.nn.functional.dropout(x, 0.1, training=False),
    "layer_norm": lambda L: lambda x: L.nn.functional.layer_norm(x, (8,), eps=1e-6),
    "max_pool2d": lambda L: lambda x: L.nn.functional.max_pool2d(x.view(1, 1, 4, 8), 2),
    "flatten": lambda L: lambda x: L.flatten(x, start_dim=1),
    "view_sum": lambda L: lambda x: x.view(-1, 2).sum(dim=1),
    "cross_entropy": lambda L: lambda x: L.nn.functional.cross_entropy(
        x, x.argmax(1), label_smoothing=0.1),
    "embedding": lambda L: lambda x, w: L.nn.functional.embedding(x.long(), w),
    "interpolate": lambda L: lambda x: L.nn.functional.interpolate(x.view(1, 4, 8),
                                                                    scale_factor=2),
    "leaky_relu": lambda L: lambda x: L.nn.functional.leaky_relu(x, 0.2),
    "split": lambda L: lambda x: L.split(x, 2, dim=1)[0],
    "add_alpha": lambda L: lambda x: L.add(x, 1, alpha=2),
}


@pytest.mark.parametrize("case", sorted(_CALLS))
def test_recorded_call_matches_torch(case):
    e_fn, t_fn = _CALLS[case](ember), _CALLS[case](torch)
    assert _calls(ember, e_fn) == _calls(torch, t_fn)


def test_recorded_call_keyword_given_by_position_is_recorded_so():
    calls = _calls(ember, lambda x: ember.nn.functional.softmax(x, 1))
    assert calls[0][1:] == ("(x,)", "{'dim': 1, '_stacklevel': 3, 'dtype': None}")


def test_recorded_call_splatted_arguments_still_run():
    def f(x):
        return ember.cat(*([x, x],), **{"dim": 1})

    gm = fx.symbolic_trace(f)
    x = ember.rand(2, 3)
    assert ember.equal(gm(x), f(x))


def test_recorded_call_alias_keeps_its_name():
    def f(x):
        return ember.arctan(x) + ember.atan(x) + ember.clip(x, 0, 1)

    def g(x):
        return torch.arctan(x) + torch.atan(x) + torch.clip(x, 0, 1)

    assert fx.symbolic_trace(f).code == torch.fx.symbolic_trace(g).code


def test_recorded_call_alias_graph_runs_pickles_and_retraces():
    import pickle

    def f(x):
        return ember.arctan(x) * 2

    gm = fx.symbolic_trace(f)
    x = ember.rand(3)
    again = pickle.loads(pickle.dumps(gm))
    assert ember.allclose(again(x), f(x))
    assert fx.symbolic_trace(gm).code == gm.code


class _Block:
    """A transformer block written with both libraries' everyday calls."""

    @staticmethod
    def make(L):
        F = L.nn.functional

        class Block(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = L.nn.Linear(8, 24)
                self.proj = L.nn.Linear(8, 8)
                self.ln = L.nn.LayerNorm(8)
                self.fc = L.nn.Linear(8, 16)
                self.fc2 = L.nn.Linear(16, 8)

            def forward(self, x):
                q, k, v = self.qkv(self.ln(x)).chunk(3, dim=-1)
                att = (q @ k.transpose(-2, -1)) / 8 ** 0.5
                att = att.softmax(dim=-1)
                att = F.dropout(att, p=0.1, training=self.training)
                x = x + self.proj(att @ v)
                h = F.silu(self.fc(F.layer_norm(x, (8,))))
                return x + F.dropout(self.fc2(h), 0.1)

        return Block()


def test_transformer_block_code_and_graph_match_torch():
    e, t = fx.symbolic_trace(_Block.make(ember)), torch.fx.symbolic_trace(_Block.make(torch))
    assert e.code == t.code
    assert str(e.graph) == str(t.graph)


def test_cnn_code_matches_torch():
    def make(L):
        F = L.nn.functional

        class CNN(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = L.nn.Conv2d(1, 4, 3)
                self.fc = L.nn.Linear(36, 10)

            def forward(self, x):
                x = F.max_pool2d(F.relu(self.conv(x)), 2)
                x = L.flatten(x, 1)
                return F.log_softmax(self.fc(x), dim=1)

        return CNN()

    want = torch.fx.symbolic_trace(make(torch)).code
    m = make(ember)
    gm = fx.symbolic_trace(m)
    assert gm.code == want
    x = ember.rand(2, 1, 8, 8)
    assert ember.allclose(gm(x), m(x))


class _Cap:
    """Raises with what torch hands ``__torch_function__``: its recorded form."""

    def __init__(self, name):
        self.name = name

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise _Got(args, kwargs or {})


class _Got(Exception):
    def __init__(self, args, kwargs):
        super().__init__()
        self.a, self.k = args, kwargs


def test_recorded_call_forms_match_torch():
    import torch.nn.functional as TF

    for (ns, name), (pos, kws) in sorted(_FORMS.items()):
        f = getattr(TF if ns == "F" else torch, name)
        sig = inspect.signature(f)
        caps = [_Cap(p.name) for p in sig.parameters.values()
                if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
        with pytest.raises(_Got) as got:
            f(*caps)
        assert tuple(c.name for c in got.value.a) == pos, name
        assert tuple(got.value.k) == tuple(k for k, _ in kws), name


def test_profiler_ops_record_a_block():
    from ember.profiler import profile

    with profile() as prof:
        h = ember.ops.profiler._record_function_enter("blk")
        _ = ember.ones(2) + 1
        ember.ops.profiler._record_function_exit(h)
    blk = next(e for e in prof.events() if e.name == "blk")
    assert "aten::add" in [c.name for c in blk.cpu_children]


def test_profiler_ops_exit_unknown_handle_raises():
    with pytest.raises(RuntimeError):
        ember.ops.profiler._record_function_exit(ember.tensor(-5))


def test_profiler_ops_in_graph_survive_dead_code_elimination():
    g = fx.Graph()
    x = g.placeholder("x")
    h = g.call_function(ember.ops.profiler._record_function_enter, ("foo",))
    g.call_function(ember.ops.profiler._record_function_exit, (h,))
    g.output(x)
    assert not g.eliminate_dead_code()
    tg = torch.fx.Graph()
    tx = tg.placeholder("x")
    th = tg.call_function(torch.ops.profiler._record_function_enter, ("foo",))
    tg.call_function(torch.ops.profiler._record_function_exit, (th,))
    tg.output(tx)
    assert str(g) == str(tg)
    gm = fx.GraphModule(ember.nn.Module(), g)
    assert gm.code == torch.fx.GraphModule(torch.nn.Module(), tg).code
    from ember.profiler import profile

    with profile() as prof:
        gm(ember.ones(2))
    assert "foo" in [e.name for e in prof.events()]


def test_profiling_tracer_records_the_with_block():
    class Foo(ember.nn.Module):
        def forward(self, x):
            with ember.profiler.record_function("foo"):
                return ember.relu(x)

    rf = ember.autograd.profiler.record_function

    class ProfilerTracer(fx.Tracer):
        def trace(self, root, concrete_args=None):
            enter, exit_ = rf.__enter__, rf.__exit__
            tracer = self

            def fake_enter(s):
                s._h = tracer.create_proxy("call_function",
                                           ember.ops.profiler._record_function_enter,
                                           (s.name,), {})
                return s._h

            def fake_exit(s, *exc):
                ember.ops.profiler._record_function_exit(s._h)

            rf.__enter__, rf.__exit__ = fake_enter, fake_exit
            try:
                return super().trace(root, concrete_args)
            finally:
                rf.__enter__, rf.__exit__ = enter, exit_

    t = ProfilerTracer()
    g = t.trace(Foo())
    assert [n.name for n in g.nodes] == ["x", "_record_function_enter", "relu",
                                         "_record_function_exit", "output"]


def test_recorded_call_namespace_picks_the_form():
    def f(L):
        F = L.nn.functional
        return lambda x: L.softmax(x, 1) + F.softmax(x, 1)

    want = torch.fx.symbolic_trace(f(torch)).code
    assert fx.symbolic_trace(f(ember)).code == want


def test_recorded_call_functional_spellings_match_torch():
    def f(L):
        F = L.nn.functional
        return lambda x, w: (F.conv2d(x, w) + F.pixel_shuffle(F.conv2d(x, w), 1)
                             + F.tanh(x) + F.sigmoid(x) + L.tanh(x))

    assert fx.symbolic_trace(f(ember)).code == torch.fx.symbolic_trace(f(torch)).code
