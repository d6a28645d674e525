"""Pipeline schedules as tables (``ember.distributed.pipelining.schedules``): the action
strings, the table text, the generated orders, their lowering with messages and their
simulation equal PyTorch 2.13's for small pipelines (its schedules are built on stand-in
stages, as its own schedule visualizer does); checks and errors as PyTorch's; CSV tables;
and the runtime on a world of one process, where several stages on one rank hand their
tensors over directly (no mpi4py needed)."""

import re

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed.pipelining import PipelineStage, schedules as S
from ember.distributed.pipelining.schedules import (_Action, _add_send_recv,
                                                    _ComputationType, _format_pipeline_order,
                                                    _PipelineScheduleRuntime,
                                                    _simulate_comms_compute,
                                                    _validate_schedule, get_schedule_class)
from tests.distributed import _pipelining_workers as W
from tests.distributed.conftest import free_port, needs_mpi

MULTI = ["LoopedBFS", "Interleaved1F1B", "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"]


def _fake_stages(cls, pp: int, n_local: int, rank: int = 0):
    """Stages of ``rank`` for a schedule over ``pp`` ranks, without a process group."""
    num_stages = pp * n_local
    style = "v" if cls in (S.ScheduleZBVZeroBubble, S.ScheduleDualPipeV) else "loop"
    where = S.generate_rank_to_stage_mapping(pp, num_stages, style=style)[rank]
    stages = []
    for i in where:
        st = PipelineStage.__new__(PipelineStage)
        st.submod, st.stage_index, st.num_stages = None, i, num_stages
        st.group_rank, st.group_size, st.has_backward = rank, pp, False
        st.inputs_meta = st.outputs_meta = None
        st.clear_runtime_states()
        stages.append(st)
    return stages


def _ember_order(name, pp, n, n_local=2):
    cls = get_schedule_class(name)
    if issubclass(cls, S.PipelineScheduleSingle):
        return {r: cls(_fake_stages(cls, pp, 1, r)[0], n).pipeline_order[r] for r in range(pp)}
    return cls(_fake_stages(cls, pp, n_local), n).pipeline_order


def _torch_order(name, pp, n, n_local=2):
    pytest.importorskip("torch")
    from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops

    return dict(enumerate(get_schedule_ops(name, pp, n, n_local)))


def _text(order):
    return {r: [None if a is None else str(a) for a in acts] for r, acts in order.items()}


# -- actions ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["0F1", "1B0", "2W3", "12I0", "0SEND_F1", "3RECV_B0",
                                  "0UNSHARD", "1RESHARD", "2REDUCE_GRAD", "(0F3;3B1)OVERLAP_F_B"])
def test_action_string_round_trip(text):
    a = _Action.from_str(text)
    assert str(a) == repr(a) == text
    assert _Action.from_str(str(a)) == a


def test_action_from_str_matches_torch():
    torch = pytest.importorskip("torch")  # noqa: F841
    from torch.distributed.pipelining import schedules as T

    for text in ["0F1", "3SEND_B2", " 1I0 ", "0UNSHARD", "(0F3;3B1)OVERLAP_F_B", ""]:
        e, t = _Action.from_str(text), T._Action.from_str(text)
        assert (e is None) == (t is None)
        if e is not None:
            assert str(e) == str(t) and e.is_compute_op == t.is_compute_op
            assert e.computation_type.value == t.computation_type.value
            assert (e.stage_index, e.microbatch_index) == (t.stage_index, t.microbatch_index)
    assert S._action_regex.pattern == T._action_regex.pattern
    assert [c.value for c in _ComputationType] == [c.value for c in T._ComputationType]


def test_action_from_str_bad_input_raises_as_torch():
    with pytest.raises(RuntimeError, match=r"Invalid action string: 0X1, should be formatted "
                                           r"as \[stage\]\[action type\]\[\(microbatch\)\]"):
        _Action.from_str("0X1")
    with pytest.raises(RuntimeError, match="Invalid computation type X"):
        _ComputationType.from_str("X")


def test_action_is_compute_op():
    assert _Action.from_str("0W1").is_compute_op
    assert not _Action.from_str("0SEND_F1").is_compute_op


def test_format_pipeline_order_matches_torch():
    pytest.importorskip("torch")
    from torch.distributed.pipelining import schedules as T

    for name, pp, n in (("ZBVZeroBubble", 2, 4), ("DualPipeV", 2, 4), ("Interleaved1F1B", 4, 8)):
        order = _ember_order(name, pp, n)
        torch_order = {r: [None if a is None else T._Action.from_str(str(a)) for a in acts]
                       for r, acts in order.items()}
        assert _format_pipeline_order(order) == T._format_pipeline_order(torch_order)
        assert (_format_pipeline_order(order, error_step_number=3)
                == T._format_pipeline_order(torch_order, error_step_number=3))


# -- generated orders ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", MULTI)
@pytest.mark.parametrize("pp", [2, 3, 4])
def test_schedule_pipeline_order_matches_torch(name, pp):
    for n in range(1, 10):
        for n_local in ((2, 3) if name in MULTI[:3] else (2,)):
            try:
                expected = _text(_torch_order(name, pp, n, n_local))
            except ValueError:  # torch refuses it: so must we
                with pytest.raises(ValueError):
                    _ember_order(name, pp, n, n_local)
                continue
            assert _text(_ember_order(name, pp, n, n_local)) == expected, (name, pp, n)


def test_zbv_table_reads_as_torch():
    order = _format_pipeline_order(_ember_order("ZBVZeroBubble", 2, 4))
    assert order.splitlines()[:6] == ["         Rank 0  Rank 1 ",
                                      "Step 00: 0F0            ",
                                      "Step 01: 0F1     1F0    ",
                                      "Step 02: 0F2     2F0    ",
                                      "Step 03: 3F0     1F1    ",
                                      "Step 04: 3I0     2F1    "]


@pytest.mark.parametrize("name", MULTI + ["GPipe", "1F1B"])
def test_lowering_and_simulation_match_torch(name):
    pytest.importorskip("torch")
    from torch.distributed.pipelining import schedules as T

    pp, n = 2, 4
    n_local = 1 if name in ("GPipe", "1F1B") else 2
    order = _ember_order(name, pp, n)
    to_rank = S.generate_stage_to_rank_mapping(
        pp, pp * n_local, style="v" if name in ("ZBVZeroBubble", "DualPipeV") else "loop")
    torch_order = {r: [None if a is None else T._Action.from_str(str(a)) for a in acts]
                   for r, acts in order.items()}
    lowered = _add_send_recv(order, to_rank.__getitem__, pp * n_local)
    expected = T._add_send_recv({r: list(a) for r, a in torch_order.items()},
                                to_rank.__getitem__, pp * n_local)
    assert _text(lowered) == _text(expected)
    if name != "DualPipeV":  # torch's simulator does not take OVERLAP_F_B pairs
        assert (_text(_simulate_comms_compute(lowered, to_rank.__getitem__, pp * n_local))
                == _text(T._simulate_comms_compute(expected, to_rank.__getitem__,
                                                   pp * n_local)))


@pytest.mark.parametrize("defer", [False, True])
@pytest.mark.parametrize("name", MULTI)
def test_pipeline_order_with_comms_matches_torch(name, defer):
    pytest.importorskip("torch")
    from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops

    for pp, n in ((2, 4), (3, 6), (4, 8)):
        cls = get_schedule_class(name)
        ours = cls(_fake_stages(cls, pp, 2), n, defer_pp_recv=defer).pipeline_order_with_comms
        theirs = dict(enumerate(get_schedule_ops(name, pp, n, with_comms=True,
                                                 defer_pp_recv=defer)))
        assert _text(ours) == _text(theirs), (pp, n)


@pytest.mark.parametrize("name", ["InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"])
def test_merge_bw_matches_torch(name):
    pytest.importorskip("torch")
    from torch.distributed.pipelining import schedules as T

    for pp, n in ((2, 4), (3, 6)):
        theirs = _torch_order(name, pp, n)
        for r, acts in _ember_order(name, pp, n).items():
            ours = S._merge_bw(acts)
            assert [str(a) for a in ours] == [str(a) for a in T._merge_bw(list(theirs[r]))]
            assert len(ours) <= len([a for a in acts if a is not None])


def test_merge_bw_merges_only_adjacent_pairs_of_one_microbatch():
    acts = [_Action.from_str(a) for a in ["0I0", "0W1", "0I1", "0W1", "1I0", "0W0"]]
    acts.insert(3, None)
    assert [str(a) for a in S._merge_bw(acts)] == ["0I0", "0W1", "0B1", "1I0", "0W0"]
    assert len(acts) == 7  # the given list is left as it was


@pytest.mark.parametrize("name", ["ZBVZeroBubble", "Interleaved1F1B"])
def test_dump_chrometrace_matches_torch(tmp_path, name):
    pytest.importorskip("torch")
    import json

    from torch.distributed.pipelining import schedules as T
    from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops

    cls = get_schedule_class(name)
    table = cls(_fake_stages(cls, 2, 2), 4).pipeline_order_with_comms
    table[0] = [None] + table[0]  # an idle step keeps its time slot
    S._dump_chrometrace(table, str(tmp_path / "ember.json"))
    theirs = dict(enumerate(get_schedule_ops(name, 2, 4, with_comms=True)))
    theirs[0] = [None] + theirs[0]
    T._dump_chrometrace(theirs, str(tmp_path / "torch.json"))
    with open(tmp_path / "ember.json") as f, open(tmp_path / "torch.json") as g:
        assert json.load(f) == json.load(g)


def test_simulate_comms_compute_reports_a_deadlock():
    # rank 0 waits for a gradient before sending the activation that gradient needs
    table = {0: [_Action.from_str(s) for s in ("0RECV_B0", "0F0", "0SEND_F0", "0B0")],
             1: [_Action.from_str(s) for s in ("1RECV_F0", "1F0", "1B0", "1SEND_B0")]}
    with pytest.raises(ValueError, match="Schedule is not progressing"):
        _simulate_comms_compute(table, lambda s: s, 2)


# -- checks ----------------------------------------------------------------------------------------

def _table(*rows):
    return {r: [_Action.from_str(s) for s in row.split(",")] for r, row in enumerate(rows)}


def test_validate_schedule_returns_stage_placement():
    assert _validate_schedule(_table("0F0,3F0,3B0,0B0", "1F0,2F0,2B0,1B0"), 2, 4, 1) == \
        {0: 0, 3: 0, 1: 1, 2: 1}


@pytest.mark.parametrize("rows, n_mb, message", [
    (("0B0,0F0", "1F0,1B0"), 1, "Rank 0, step 0: Running Full Backward for stage 0, "
                                "microbatch 0 without first running Forward"),
    (("0F0,0W0,0I0", "1F0,1B0"), 1, "Rank 0, step 1: Running Backward Weight for stage 0, "
                                    "microbatch 0 without first running Backward Input"),
    (("0F0,0B0", "1F0,1B0,0F1"), 1, "Rank 1, step 2: Stage 0 is assigned to both rank 1 "
                                    "and rank 0"),
    (("0F0,0B0", "1F0,1B0"), 2, "microbatches for stage 0, expected 2"),
    (("0F0,0I0", "1F0,1B0"), 1, "I and W must have equal counts,"),
    (("0F0,0B0,0F1", "1F0,1B0,1F1,1B1"), 2, "expected 2 total backwards,"),
])
def test_validate_schedule_errors_match_torch(rows, n_mb, message):
    with pytest.raises(AssertionError) as got:
        _validate_schedule(_table(*rows), 2, 2, n_mb)
    assert message in str(got.value)
    torch = pytest.importorskip("torch")  # noqa: F841
    from torch.distributed.pipelining import schedules as T

    with pytest.raises(AssertionError) as want:
        T._validate_schedule({r: [T._Action.from_str(s) for s in row.split(",")]
                              for r, row in enumerate(rows)}, 2, 2, n_mb)
    assert str(got.value) == str(want.value)


def test_validate_schedule_wrong_rank_count_raises():
    with pytest.raises(AssertionError, match="expected 3, actual 2"):
        _validate_schedule(_table("0F0,0B0", "1F0,1B0"), 3, 2, 1)


def test_generate_stage_to_rank_mapping_matches_torch():
    pytest.importorskip("torch")
    from torch.distributed.pipelining import _utils as U

    for pp, stages, style in ((2, 4, "loop"), (2, 4, "v"), (3, 6, "v"), (2, 8, "v"),
                              (4, 8, "loop")):
        assert S.generate_stage_to_rank_mapping(pp, stages, style) == \
            U.generate_stage_to_rank_mapping(pp, stages, style)
        assert S.generate_rank_to_stage_mapping(pp, stages, style) == \
            U.generate_rank_to_stage_mapping(pp, stages, style)
    with pytest.raises(ValueError, match="Style x is not supported."):
        S.generate_stage_to_rank_mapping(2, 4, style="x")


@pytest.mark.parametrize("name, pp, n, n_local, message", [
    ("Interleaved1F1B", 2, 5, 2, "Interleaved 1F1B requires the number of microbatches to be "
                                 "a multiple of the number of rounds (2), but got 5."),
    ("InterleavedZeroBubble", 2, 5, 2, "Zero bubble requires the number of microbatches to be "
                                       "a multiple of the number of rounds (2), but got 5."),
    ("ZBVZeroBubble", 2, 4, 3, "ZBV requires exactly 2 stages per rank, but got 3."),
    ("DualPipeV", 2, 3, 2, "DualPipeV requires at least as many microbatches as stages, but "
                           "got 3 microbatches and 4 stages."),
])
def test_schedule_bad_configuration_raises_as_torch(name, pp, n, n_local, message):
    cls = get_schedule_class(name)
    stages = _fake_stages(cls, pp, n_local if n_local == 2 else 2)
    if n_local == 3:
        stages = stages + stages[:1]
    with pytest.raises(ValueError) as got:
        cls(stages, n)
    assert str(got.value) == message
    with pytest.raises(ValueError) as want:
        _torch_order(name, pp, n, n_local)
    assert str(want.value) == message


def test_1f1b_too_few_microbatches_raises_as_torch():
    stage = _fake_stages(S.Schedule1F1B, 4, 1)[0]
    with pytest.raises(ValueError, match=r"Number of microbatches \(2\) must be greater than "
                                         r"or equal to the number of stages \(4\)."):
        S.Schedule1F1B(stage, 2)


def test_get_schedule_class_knows_torch_names():
    torch = pytest.importorskip("torch")  # noqa: F841
    from torch.distributed.pipelining import schedules as T

    for name in ["1F1B", "Interleaved1F1B", "GPipe", "LoopedBFS", "InterleavedZeroBubble",
                 "PipelineScheduleSingle", "PipelineScheduleMulti", "ZBVZeroBubble",
                 "DualPipeV"]:
        for spelled in (name, name.lower(), name.upper()):
            assert get_schedule_class(spelled).__name__ == T.get_schedule_class(spelled).__name__
    with pytest.raises(ValueError) as got:
        get_schedule_class("zb")
    with pytest.raises(ValueError) as want:
        T.get_schedule_class("zb")
    assert str(got.value) == str(want.value)


def test_pipeline_schedule_single_is_abstract():
    with pytest.raises(TypeError, match="Can't instantiate abstract class"):
        S.PipelineScheduleSingle(_fake_stages(S.ScheduleGPipe, 2, 1)[0], 2)


# -- tables in CSV files ---------------------------------------------------------------------------

def test_csv_round_trip(tmp_path):
    zb = S.ScheduleInterleavedZeroBubble(_fake_stages(S.ScheduleInterleavedZeroBubble, 2, 2), 4)
    zb._dump_csv(tmp_path / "zb.csv", format="compute_only")
    rows = (tmp_path / "zb.csv").read_text().splitlines()
    assert rows[0].startswith("0F0,0F1,2F0,,2F1,2I0,2W0")
    rt = _PipelineScheduleRuntime(_fake_stages(S.ScheduleInterleavedZeroBubble, 2, 2), 4)
    rt._load_csv(tmp_path / "zb.csv")
    assert _text(rt.pipeline_order) == _text(zb.pipeline_order)
    assert _text(rt.pipeline_order_with_comms) == _text(zb.pipeline_order_with_comms)
    rt._dump_csv(tmp_path / "comms.csv")  # with its messages, by default
    again = _PipelineScheduleRuntime(_fake_stages(S.ScheduleInterleavedZeroBubble, 2, 2), 4)
    again._load_csv(tmp_path / "comms.csv", format="compute_comms")
    assert _text(again.pipeline_order_with_comms) == _text(zb.pipeline_order_with_comms)
    assert "RECV_B" in (tmp_path / "comms.csv").read_text()


def test_load_actions_refuses_messages_in_compute_only():
    rt = _PipelineScheduleRuntime(_fake_stages(S.ScheduleLoopedBFS, 2, 2), 1)
    with pytest.raises(ValueError, match="found communication action '0SEND_F0' at rank 0, "
                                         "position 1"):
        rt._load_actions({0: ["0F0", "0SEND_F0"], 1: ["1F0"]})


def test_load_actions_checks_the_table():
    rt = _PipelineScheduleRuntime(_fake_stages(S.ScheduleLoopedBFS, 2, 2), 1)
    with pytest.raises(AssertionError, match="microbatches for stage 2, expected 1"):
        rt._load_actions({0: ["0F0", "0B0"], 1: ["1F0", "1B0"]})


def test_multi_schedule_without_table_refuses_step():
    sched = S.PipelineScheduleMulti(_fake_stages(S.ScheduleLoopedBFS, 2, 2), 2)
    with pytest.raises(RuntimeError, match="no schedule to run"):
        sched.step(ember.ones(4, 4))


# -- the runtime on a world of one: both stages on this rank ---------------------------------------

@pytest.fixture
def world1():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def _whole_model_step():
    net = W.model(ember)
    x, y = (ember.tensor(a) for a in W.data())
    out = net(x)
    losses = [float(W.loss_fn(o, t)) for o, t in zip(ember.tensor_split(out.detach(), W.N_MB),
                                                     ember.tensor_split(y, W.N_MB))]
    W.loss_fn(out, y).backward()
    return out.detach().numpy(), losses, {n: p.grad.numpy() for n, p in net.named_parameters()}


@pytest.mark.parametrize("name", ["InterleavedZeroBubble", "ZBVZeroBubble", "LoopedBFS",
                                  "Interleaved1F1B"])
def test_two_local_stages_equal_whole_model(world1, name):
    want_out, want_losses, want_grads = _whole_model_step()
    net = W.model(ember)
    parts = W.manual_parts(ember, net, 2)
    stages = [PipelineStage(m, i, 2, ember.device("cpu")) for i, m in enumerate(parts)]
    sched = get_schedule_class(name)(stages, W.N_MB, loss_fn=W.loss_fn)
    x, y = (ember.tensor(a) for a in W.data())
    losses = []
    out = sched.step(x, target=y, losses=losses)
    np.testing.assert_allclose(out.detach().numpy(), want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([float(v.detach()) for v in losses], want_losses, rtol=1e-5)
    for n, p in net.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), want_grads[n], rtol=2e-5, atol=2e-6,
                                   err_msg=n)


def test_runtime_from_actions_equals_whole_model(world1):
    want_out, want_losses, want_grads = _whole_model_step()
    net = W.model(ember)
    stages = [PipelineStage(m, i, 2, ember.device("cpu"))
              for i, m in enumerate(W.manual_parts(ember, net, 2))]
    rt = _PipelineScheduleRuntime(stages, 2, loss_fn=W.loss_fn)
    rt._load_actions({0: "0F0,1F0,0F1,1I0,1F1,1I1,0B1,1W1,0I0,1W0,0W0".split(",")})
    x, y = (ember.tensor(a) for a in W.data())
    losses = []
    rt.step(x, target=y, losses=losses)
    halves = ember.tensor_split(ember.tensor(want_out), 2)
    targets = ember.tensor_split(y, 2)
    np.testing.assert_allclose([float(v.detach()) for v in losses],
                               [float(W.loss_fn(o, t)) for o, t in zip(halves, targets)],
                               rtol=1e-5)
    for n, p in net.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), want_grads[n], rtol=2e-5, atol=2e-6,
                                   err_msg=n)


def test_merged_table_equals_split_table(world1):
    # the same table with its adjacent I, W pairs merged into B gives the same gradients
    acts = "0F0,1F0,0F1,1I0,1W0,1F1,1I1,1W1,0I1,0W1,0I0,0W0".split(",")
    grads = []
    for table in (acts, [str(a) for a in S._merge_bw([_Action.from_str(a) for a in acts])]):
        net = W.model(ember)
        stages = [PipelineStage(m, i, 2, ember.device("cpu"))
                  for i, m in enumerate(W.manual_parts(ember, net, 2))]
        rt = _PipelineScheduleRuntime(stages, 2, loss_fn=W.loss_fn)
        rt._load_actions({0: table})
        x, y = (ember.tensor(a) for a in W.data())
        rt.step(x, target=y)
        grads.append({n: p.grad.numpy() for n, p in net.named_parameters()})
    assert "B" in "".join(table) and "I" not in "".join(table)
    for n in grads[0]:
        np.testing.assert_allclose(grads[0][n], grads[1][n], rtol=1e-5, atol=1e-7, err_msg=n)


def test_weight_backward_before_input_backward_raises(world1):
    stage = PipelineStage(W.model(ember), 0, 1, ember.device("cpu"))
    with pytest.raises(RuntimeError, match="before its input backward"):
        stage.backward_weight_one_chunk(0)


def test_forward_only_schedule_refuses_a_loss(world1):
    stage = PipelineStage(W.model(ember), 0, 1, ember.device("cpu"))
    sched = S._ScheduleForwardOnly(stage, 2)
    x = ember.tensor(W.data()[0])
    np.testing.assert_allclose(sched.step(x).detach().numpy(), _whole_model_step()[0],
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="Forward-only schedule does not support loss"):
        sched.step(x, target=x)


# -- 4 ranks, two stages each ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def four_ranks(tmp_path_factory):
    import os
    import pickle

    out = tmp_path_factory.mktemp("pp4")
    ember.multiprocessing.spawn(W.worker4, args=("ember", f"tcp://127.0.0.1:{free_port()}",
                                                 str(out)), nprocs=4)
    runs = []
    for r in range(4):
        with open(os.path.join(out, f"rank{r}.pkl"), "rb") as f:
            runs.append(pickle.load(f))
    return runs


@needs_mpi
@pytest.mark.parametrize("name", W.CASES4)
def test_four_ranks_equal_whole_model(four_ranks, name):
    net = W.chain(ember)
    x, y = (ember.tensor(a) for a in W.chain_data())
    out = net(x)
    want_losses = [float(W.loss_fn(o, t)) for o, t in
                   zip(ember.tensor_split(out.detach(), W.N_MB4), ember.tensor_split(y, W.N_MB4))]
    W.loss_fn(out, y).backward()
    got = {}
    for r in range(4):
        got.update(four_ranks[r][name]["grads"])
    want = {n: p.grad.numpy() for n, p in net.named_parameters()}
    assert got.keys() == want.keys()
    for n in want:
        np.testing.assert_allclose(got[n], want[n], rtol=2e-5, atol=2e-6, err_msg=n)
    last = 0 if name in ("ScheduleZBVZeroBubble", "ScheduleDualPipeV") else 3
    np.testing.assert_allclose(four_ranks[last][name]["losses"], want_losses, rtol=1e-5)


def _two_local_stages(net):
    return [PipelineStage(m, i, 2, ember.device("cpu"))
            for i, m in enumerate(W.manual_parts(ember, net, 2))]


def test_dualpipev_custom_overlap_function_equals_whole_model(world1):
    _, want_losses, want_grads = _whole_model_step()
    net = W.model(ember)
    sched = S.ScheduleDualPipeV(_two_local_stages(net), W.N_MB, loss_fn=W.loss_fn)
    pairs = []

    def run_pair(action, ctx):  # the two halves in turn, as the built-in step does
        pairs.append(str(action))
        for half in action.sub_actions:
            ctx.schedule_ref._perform_action(half, ctx)

    sched.register_custom_function(S.OVERLAP_F_B, run_pair)
    x, y = (ember.tensor(a) for a in W.data())
    losses = []
    sched.step(x, target=y, losses=losses)
    assert pairs == [str(a) for a in sched.pipeline_order[0] if a is not None
                     and a.computation_type is S.OVERLAP_F_B] != []
    np.testing.assert_allclose([float(v.detach()) for v in losses], want_losses, rtol=1e-5)
    for n, p in net.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), want_grads[n], rtol=2e-5, atol=2e-6,
                                   err_msg=n)


def test_register_custom_function_refuses_messages(world1):
    sched = S.ScheduleLoopedBFS(_two_local_stages(W.model(ember)), 2, loss_fn=W.loss_fn)
    with pytest.raises(ValueError, match="Invalid computation type .*SEND_F. Only FORWARD"):
        sched.register_custom_function(S.SEND_F, lambda a, c: None)
    sched.register_custom_function(S.W, lambda a, c: None)
    with pytest.warns(UserWarning, match="already registered"):
        sched.register_custom_function(S.W, lambda a, c: None)


def test_failing_action_notes_the_schedule(world1):
    sched = S.ScheduleLoopedBFS(_two_local_stages(W.model(ember)), 2, loss_fn=W.loss_fn)

    def broken(action, ctx):
        raise RuntimeError("boom")

    sched.register_custom_function(S.FULL_BACKWARD, broken)
    x, y = (ember.tensor(a) for a in W.data())
    with pytest.raises(RuntimeError, match="boom") as err:
        sched.step(x, target=y)
    note = "\n".join(err.value.__notes__)
    assert "rank 0 failed running 1B1 at step 6" in note
    assert re.search(r"Step 06: 1B1 +<-- ERROR HERE", note)
