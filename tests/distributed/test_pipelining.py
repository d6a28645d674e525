"""Pipeline parallelism (``ember.distributed.pipelining``): a model cut into stages by hand
or by ``pipeline`` and trained on 2 ranks with GPipe, 1F1B, interleaved 1F1B, looped BFS,
interleaved zero bubble, ZB-V, DualPipeV and a table loaded from CSV gives the losses,
gradients and parameters of single-process full-batch training, and those of PyTorch's
gloo run of the same worker (tests/distributed/_pipelining_workers.py); microbatch
splitting, tracing and a pipeline of one stage against PyTorch 2.13 without mpi4py. The
schedule tables themselves: test_pipelining_schedules.py."""

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed.pipelining import (pipe_split, pipeline, PipelineStage, Schedule1F1B,
                                          ScheduleGPipe, SplitPoint, TensorChunkSpec)
from ember.distributed.pipelining.microbatch import (merge_chunks, split_args_kwargs_into_chunks,
                                                     sum_reducer)
from ember.distributed.pipelining.schedules import get_schedule_class
from tests.distributed import _pipelining_workers as W
from tests.distributed.conftest import free_port, needs_mpi, spawn2

CASES = [c[0] for c in W.CASES]


def _reference():
    """Plain ember training on the whole batch: per-microbatch losses, first-step gradients,
    final parameters, the first output."""
    net = W.model(ember)
    opt = ember.optim.SGD(net.parameters(), lr=W.LR)
    x, y = (ember.tensor(a) for a in W.data())
    losses, grads, outputs = [], None, []
    for _ in range(W.STEPS):
        opt.zero_grad()
        out = net(x)
        outputs.append(out.detach().numpy().copy())
        chunks = ember.tensor_split(out, W.N_MB)
        targets = ember.tensor_split(y, W.N_MB)
        losses.append([float(W.loss_fn(o, t)) for o, t in zip(chunks, targets)])
        W.loss_fn(out, y).backward()
        if grads is None:
            grads = {n: p.grad.numpy().copy() for n, p in net.named_parameters()}
        opt.step()
    params = {n: p.detach().numpy().copy() for n, p in net.named_parameters()}
    return {"losses": losses, "grads": grads, "params": params, "outputs": outputs}


@pytest.fixture(scope="module")
def reference():
    return _reference()


@pytest.fixture(scope="module")
def ember_runs(tmp_path_factory):
    return spawn2(tmp_path_factory.mktemp("pp_ember"), W.worker, "ember")


@pytest.fixture(scope="module")
def torch_runs(tmp_path_factory):
    pytest.importorskip("torch")
    return spawn2(tmp_path_factory.mktemp("pp_torch"), W.worker, "torch")


def _merged(runs, case, key):
    out = {}
    for r in runs:
        if r[case][key]:
            out.update(r[case][key])
    return out


def _close(a, b, tol=2e-5):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=tol, atol=tol, err_msg=k)


@needs_mpi
@pytest.mark.parametrize("case", CASES)
def test_pipeline_schedule_equals_full_batch(ember_runs, reference, case):
    # the last stage is on rank 1, or on rank 0 with the V placement (stages 0 and 3)
    on_last = 0 if W.CASES[CASES.index(case)][1] == "manual_v" else 1
    last = ember_runs[on_last][case]
    assert ember_runs[1 - on_last][case]["outputs"] == []
    np.testing.assert_allclose(last["outputs"][0], reference["outputs"][0], rtol=1e-5,
                               atol=1e-5)
    if case == "forward_only":
        assert last["losses"] == [[]] and last["grads"] is None
        return
    np.testing.assert_allclose(last["losses"], reference["losses"], rtol=1e-5)
    _close(_merged(ember_runs, case, "grads"), reference["grads"])
    _close(_merged(ember_runs, case, "params"), reference["params"])


@needs_mpi
@pytest.mark.parametrize("case", [c for c in CASES if not c.endswith("_defer")])
def test_pipeline_schedule_equals_torch_gloo(ember_runs, torch_runs, case):
    # (the deferred-receive case has no PyTorch run: see worker in _pipelining_workers.py)
    for r in range(2):
        e, t = ember_runs[r][case], torch_runs[r][case]
        np.testing.assert_allclose(e["losses"], t["losses"], rtol=1e-5)
        assert len(e["outputs"]) == len(t["outputs"])
        for a, b in zip(e["outputs"], t["outputs"]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
        assert (e["grads"] is None) == (t["grads"] is None)
        if e["grads"] is not None:
            _close(e["grads"], t["grads"])
        _close(e["params"], t["params"])


# -- microbatches (no process group) --------------------------------------------------------------

def _np_tree(v):
    if isinstance(v, (tuple, list)):
        return type(v)(_np_tree(a) for a in v)
    if isinstance(v, dict):
        return {k: _np_tree(a) for k, a in v.items()}
    return v.numpy() if hasattr(v, "numpy") else v


def test_split_args_kwargs_into_chunks_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.distributed.pipelining import microbatch as tm

    a = np.arange(30, dtype=np.float32).reshape(5, 6)
    for spec, chunks in (((None,), 2), ((TensorChunkSpec(1),), 4), ((None,), 7)):
        tspec = None if spec[0] is None else (tm.TensorChunkSpec(spec[0].split_dim),)
        e = split_args_kwargs_into_chunks((ember.tensor(a), 3), {"m": ember.tensor(a[:, 0])},
                                          chunks, None if tspec is None else spec + (None,))
        tspec = None if tspec is None else tspec + (tm._Replicate,)
        t = tm.split_args_kwargs_into_chunks((torch.tensor(a), 3), {"m": torch.tensor(a[:, 0])},
                                             chunks, tspec)
        assert len(e[0]) == len(t[0])
        for x, y in zip(e[0], t[0]):
            np.testing.assert_array_equal(x[0].numpy(), y[0].numpy())
            assert x[1] == y[1] == 3
        for x, y in zip(e[1], t[1]):
            np.testing.assert_array_equal(x["m"].numpy(), y["m"].numpy())


def test_merge_chunks_concatenates_and_reduces():
    parts = [(ember.ones(2, 3), ember.tensor(1.0), 5), (ember.zeros(1, 3), ember.tensor(2.0), 5)]
    t, s, k = merge_chunks(parts, (TensorChunkSpec(0), sum_reducer, None))
    assert t.shape == (3, 3) and float(s) == 3.0 and k == 5
    assert merge_chunks([ember.ones(2, 1), ember.zeros(2, 2)], TensorChunkSpec(1)).shape == (2, 3)
    with pytest.raises(ValueError, match="replicated value differs"):
        merge_chunks([(ember.ones(1), 1), (ember.ones(1), 2)], (TensorChunkSpec(0), None))


def test_tensor_chunk_spec_reads_as_torch():
    spec = TensorChunkSpec(1)
    assert str(spec) == "TensorChunkSpec(1)"
    assert [s.split_dim for s in TensorChunkSpec.from_tuple((0, 2))] == [0, 2]
    assert TensorChunkSpec.from_dict({"mask": 1})["mask"].split_dim == 1


# -- tracing (no process group) -------------------------------------------------------------------

@pytest.mark.parametrize("cut", ["split_spec", "pipe_split"])
def test_pipeline_stage_modules_keep_names_as_torch(cut):
    torch = pytest.importorskip("torch")
    import torch.distributed.pipelining as tpp

    x = W.data()[0][:2]
    names = []
    for fw, pp in ((ember, None), (torch, tpp)):
        mod = pp or __import__("ember.distributed.pipelining", fromlist=["x"])
        net = W.model(fw, with_pipe_split=cut == "pipe_split")
        spec = {"blocks.2": mod.SplitPoint.BEGINNING} if cut == "split_spec" else None
        pipe = mod.pipeline(net, mb_args=(fw.tensor(x),), split_spec=spec)
        names.append([list(pipe.get_stage_module(i).state_dict())
                      for i in range(pipe.num_stages)])
    assert names[0] == names[1]


def test_pipeline_split_runs_as_the_model():
    net = W.model(ember)
    x = ember.tensor(W.data()[0])
    pipe = pipeline(net, mb_args=(x[:2],), split_spec={"blocks.1": SplitPoint.END,
                                                       "head": SplitPoint.BEGINNING})
    assert pipe.num_stages == 3
    np.testing.assert_allclose(pipe(x).detach().numpy(), net(x).detach().numpy(), rtol=1e-6)
    # stage modules share the model's parameters
    assert pipe.get_stage_module(2).head.weight is net.head.weight


def test_pipeline_passes_values_through_middle_stages():
    class Skip(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = (ember.nn.Linear(3, 3) for _ in range(3))

        def forward(self, x):
            h = self.a(x)
            pipe_split()
            h = self.b(h)
            pipe_split()
            return self.c(h) + x  # x reaches the third stage through the second

    net, x = Skip(), ember.randn(4, 3)
    pipe = pipeline(net, mb_args=(x,))
    assert pipe.num_stages == 3
    np.testing.assert_allclose(pipe(x).detach().numpy(), net(x).detach().numpy(), rtol=1e-6)


class _TiedLM:
    """An embedding tied to the LM head, cut after ``mid`` (the first and last stages hold
    the one weight); under ember or PyTorch."""

    @staticmethod
    def make(fw):
        class LM(fw.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = fw.nn.Embedding(10, 4)
                self.mid = fw.nn.Linear(4, 4)
                self.head = fw.nn.Linear(4, 10, bias=False)
                self.head.weight = self.emb.weight

            def forward(self, x):
                return self.head(fw.tanh(self.mid(self.emb(x))))

        fw.manual_seed(0)
        return LM()


def test_pipeline_replicates_a_parameter_tied_across_stages_as_torch():
    torch = pytest.importorskip("torch")
    import torch.distributed.pipelining as tpp

    names = {}
    for fw, pp in ((ember, None), (torch, tpp)):
        mod = pp or __import__("ember.distributed.pipelining", fromlist=["x"])
        net = _TiedLM.make(fw)
        x = fw.tensor([[1, 2, 3], [4, 5, 6]])
        pipe = mod.pipeline(net, mb_args=(x,), split_spec={"mid": mod.SplitPoint.END})
        s0, s1 = pipe.get_stage_module(0), pipe.get_stage_module(1)
        # each stage its own leaf with the tied values (NOTE [ Parameters of several stages ])
        assert s1.head.weight is not s0.emb.weight
        assert s1.head.weight.is_leaf and s1.head.weight.requires_grad
        assert bool((s1.head.weight == s0.emb.weight).all())
        names[fw.__name__] = [[n for n, _ in s.named_parameters()] for s in (s0, s1)]
        if fw is ember:
            out = pipe(x)
            np.testing.assert_allclose(out.detach().numpy(), net(x).detach().numpy(),
                                       rtol=1e-6)
            # one process, both stages: an optimizer over both sees no tensor twice
            both = list(s0.parameters()) + list(s1.parameters())
            assert len({id(p) for p in both}) == len(both) == 4
            # the two copies' gradients sum to the tied model's
            out.sum().backward()
            whole = _TiedLM.make(ember)
            whole(x).sum().backward()
            np.testing.assert_allclose((s0.emb.weight.grad + s1.head.weight.grad).numpy(),
                                       whole.emb.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
    # the last stage holds the head under its own name, as PyTorch's does (PyTorch's first
    # stage also lists an unused ``head.weight`` copy, left out here)
    assert names["ember"][1] == names["torch"][1] == ["head.weight"]
    assert names["ember"][0] == [n for n in names["torch"][0] if n != "head.weight"]


def test_pipeline_replicates_a_module_called_in_two_stages():
    class Twice(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = ember.nn.Linear(3, 3), ember.nn.Linear(3, 3)
            self.b.bias = self.a.bias  # tied to b (first stage only) as well

        def forward(self, x):
            h = self.b(self.a(x))
            pipe_split()
            return self.a(ember.relu(h))  # ``a`` again, in the second stage

    net, x = Twice(), ember.randn(4, 3)
    pipe = pipeline(net, mb_args=(x,))
    s0, s1 = pipe.get_stage_module(0), pipe.get_stage_module(1)
    assert s0.a.weight is net.a.weight and s1.a.weight is not net.a.weight
    assert s1.a.bias is not net.a.bias
    np.testing.assert_allclose(pipe(x).detach().numpy(), net(x).detach().numpy(), rtol=1e-6)


def test_pipeline_unknown_split_point_raises():
    with pytest.raises(ValueError, match="does not call"):
        pipeline(W.model(ember), mb_args=(ember.ones(2, 4),),
                 split_spec={"blocks.9": SplitPoint.BEGINNING})


def test_pipe_split_outside_tracing_does_nothing():
    assert pipe_split() is None


def test_get_schedule_class_names():
    assert get_schedule_class("1f1b") is Schedule1F1B
    assert get_schedule_class("GPipe") is ScheduleGPipe
    with pytest.raises(ValueError, match="Unknown schedule name .nope."):
        get_schedule_class("nope")


# -- a pipeline of one stage (a world of one, no mpi4py needed) -----------------------------------

@pytest.fixture
def world1():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def test_one_stage_gpipe_equals_full_batch(world1, reference):
    net = W.model(ember)
    x, y = (ember.tensor(a) for a in W.data())
    stage = PipelineStage(net, 0, 1, ember.device("cpu"))
    sched = ScheduleGPipe(stage, W.N_MB, loss_fn=W.loss_fn)
    losses = []
    out = sched.step(x, target=y, losses=losses)
    np.testing.assert_allclose(out.detach().numpy(), reference["outputs"][0], rtol=1e-6)
    np.testing.assert_allclose([float(v) for v in losses], reference["losses"][0], rtol=1e-6)
    _close({n: p.grad.numpy() for n, p in net.named_parameters()}, reference["grads"])


def test_1f1b_needs_enough_microbatches(world1):
    net = W.model(ember)
    stage = PipelineStage(net, 0, 1, ember.device("cpu"))
    with pytest.raises(ValueError, match="n_microbatches"):
        Schedule1F1B(stage, 0, loss_fn=W.loss_fn)


def test_step_needs_target_on_last_stage(world1):
    stage = PipelineStage(W.model(ember), 0, 1, ember.device("cpu"))
    with pytest.raises(RuntimeError, match="target="):
        ScheduleGPipe(stage, 2, loss_fn=W.loss_fn).step(ember.ones(4, 4))


def test_eval_gives_losses_without_gradients(world1, reference):
    net = W.model(ember)
    x, y = (ember.tensor(a) for a in W.data())
    sched = ScheduleGPipe(PipelineStage(net, 0, 1, ember.device("cpu")), W.N_MB,
                          loss_fn=W.loss_fn)
    losses = []
    out = sched.eval(x, target=y, losses=losses)
    np.testing.assert_allclose(out.numpy(), reference["outputs"][0], rtol=1e-6)
    np.testing.assert_allclose([float(v) for v in losses], reference["losses"][0], rtol=1e-6)
    assert all(p.grad is None for p in net.parameters())


# -- PyTorch's pipelining tutorial: a GPT-like model, stages made by deleting layers ---------------

def _tutorial_reference():
    net = W.gpt(ember)
    x, y = (ember.tensor(a) for a in W.gpt_data())
    fn = W.tokenwise_loss(ember)
    losses = [float(fn(net(x[i:i + 2]), y[i:i + 2])) for i in (0, 2)]
    fn(net(x), y).backward()
    return losses, {n: p.grad.numpy().copy() for n, p in net.named_parameters()}


@needs_mpi
def test_tutorial_gpt_equals_full_batch(ember_runs):
    losses, grads = _tutorial_reference()
    np.testing.assert_allclose(ember_runs[1]["tutorial"]["losses"], losses, rtol=1e-5)
    got = {**ember_runs[0]["tutorial"]["grads"], **ember_runs[1]["tutorial"]["grads"]}
    _close(got, grads, tol=1e-4)


@needs_mpi
def test_tutorial_gpt_equals_torch_gloo(ember_runs, torch_runs):
    for r in range(2):
        e, t = ember_runs[r]["tutorial"], torch_runs[r]["tutorial"]
        np.testing.assert_allclose(e["losses"], t["losses"], rtol=1e-5)
        _close(e["grads"], t["grads"], tol=1e-4)
