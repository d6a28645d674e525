"""Workers for tests/distributed/test_pipelining.py: a small residual MLP cut into pipeline
stages over 2 ranks, trained 2 steps with each schedule the way PyTorch's pipelining
tutorial writes it; each rank dumps the losses, outputs, first-step gradients and final
parameters of its stages (named as in the whole model)."""

import os
import pickle

import numpy as np

from ._workers import fill_normal

N_MB = 4
STEPS = 2
LR = 0.005

# (name, how the model is cut, schedule, stages on each rank)
CASES = [("manual_gpipe", "manual", "ScheduleGPipe", 1),
         ("manual_1f1b_shapes", "manual_shapes", "Schedule1F1B", 1),
         ("traced_gpipe", "split_spec", "ScheduleGPipe", 1),
         ("traced_1f1b", "pipe_split", "Schedule1F1B", 1),
         ("interleaved", "manual", "ScheduleInterleaved1F1B", 2),
         ("looped_bfs", "manual", "ScheduleLoopedBFS", 2),
         ("forward_only", "manual", "ScheduleGPipe", 1),
         ("interleaved_zb", "manual", "ScheduleInterleavedZeroBubble", 2),
         ("interleaved_zb_defer", "manual", "ScheduleInterleavedZeroBubble", 2),
         ("zbv", "manual_v", "ScheduleZBVZeroBubble", 2),
         ("dualpipev", "manual_v", "ScheduleDualPipeV", 2),
         ("runtime_csv", "manual", "_PipelineScheduleRuntime", 2)]

# a hand-written table for 4 looped stages on 2 ranks, split backward on stages 1 and 2
CSV_TABLE = [
    "0F0,0F1,2F0,0F2,2F1,0F3,2F2,2F3,2B0,2B1,0B0,2B2,0B1,2B3,0B2,0B3",
    "1F0,1F1,3F0,3F1,3B0,1F2,3F2,3B1,1F3,1I0,3F3,3B2,1I1,3B3,1W0,1I2,1W1,1I3,1W2,1W3",
]


def model(torch, with_pipe_split=False):
    nn = torch.nn
    if with_pipe_split:
        from importlib import import_module
        pipe_split = import_module(torch.__name__ + ".distributed.pipelining").pipe_split

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(8)
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 8)

        def forward(self, x):
            return x + self.fc2(torch.tanh(self.fc1(self.ln(x))))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(4, 8)
            self.blocks = nn.ModuleList([Block() for _ in range(4)])
            self.head = nn.Linear(8, 3)

        def forward(self, x):
            h = self.inp(x)
            for i, b in enumerate(self.blocks):
                if i == 2 and with_pipe_split:
                    pipe_split()
                h = b(h)
            return self.head(h)

    net = Net()
    fill_normal(torch, net, 0.4)
    return net


def data():
    rng = np.random.default_rng(1)
    return (rng.standard_normal((8, 4)).astype(np.float32),
            rng.standard_normal((8, 3)).astype(np.float32))


def loss_fn(out, target):
    return ((out - target) ** 2).mean()


def manual_parts(torch, net, num_stages):
    """The whole model cut by hand into ``num_stages`` (2 or 4) modules."""
    seq = torch.nn.Sequential
    b = net.blocks
    if num_stages == 2:
        return [seq(net.inp, b[0], b[1]), seq(b[2], b[3], net.head)]
    return [seq(net.inp, b[0]), b[1], b[2], seq(b[3], net.head)]


def _np(t):
    return t.detach().float().numpy().copy()


def _run(torch, dist, case, cut, schedule_name, per_rank, rank, out_dir="."):
    pp = __import__(torch.__name__ + ".distributed.pipelining", fromlist=["x"])
    schedules = __import__(torch.__name__ + ".distributed.pipelining.schedules", fromlist=["x"])
    net = model(torch, with_pipe_split=(cut == "pipe_split"))
    names = {id(p): n for n, p in net.named_parameters()}
    x, y = (torch.tensor(a) for a in data())
    cpu = torch.device("cpu")
    num_stages = 2 * per_rank
    if cut in ("split_spec", "pipe_split"):
        spec = {"blocks.2": pp.SplitPoint.BEGINNING} if cut == "split_spec" else None
        pipe = pp.pipeline(net, mb_args=(x[:2],), split_spec=spec)
        assert pipe.num_stages == 2
        stages = [pipe.build_stage(rank, cpu)]
        mods = [pipe.get_stage_module(rank)]
        # the stage module keeps the model's names; its parameters are the model's own
        names = {id(p): n for n, p in mods[0].named_parameters()}
    else:
        parts = manual_parts(torch, net, num_stages)
        # looped: rank r holds r, r + 2; V: rank r holds r and 3 - r
        idx = [rank, 3 - rank] if cut == "manual_v" else [rank + 2 * k for k in range(per_rank)]
        mods = [parts[i] for i in idx]
        if cut == "manual_shapes":
            # example tensors of one microbatch; torch reads from their requires_grad
            # whether gradients travel, so they are made with autograd on
            h = x[:2]
            for m in parts[:idx[0]]:
                h = m(h)
            if idx[0] > 0:
                h = h.detach().requires_grad_(True)
            out = mods[0](h)
            stages = [pp.PipelineStage(mods[0], idx[0], num_stages, cpu, input_args=(h,),
                                       output_args=(out,))]
        else:
            stages = [pp.PipelineStage(m, i, num_stages, cpu) for m, i in zip(mods, idx)]
    # as torchtitan picks and builds a schedule: by name, a list of stages for the looped ones
    cls = (schedules.get_schedule_class(schedule_name.removeprefix("Schedule"))
           if schedule_name.startswith("Schedule") else getattr(schedules, schedule_name))
    looped = issubclass(cls, schedules.PipelineScheduleMulti)
    fn = None if case == "forward_only" else loss_fn
    extra = {"defer_pp_recv": True} if case.endswith("_defer") else {}
    sched = cls(stages if looped else stages[0], n_microbatches=N_MB, loss_fn=fn, **extra)
    if case == "runtime_csv":  # every rank reads the whole table, as a launcher would give it
        path = os.path.join(out_dir, f"table{rank}.csv")
        with open(path, "w") as f:
            f.write("\n".join(CSV_TABLE) + "\n")
        sched._load_csv(path)
    params = [p for m in mods for p in m.parameters()]
    opt = torch.optim.SGD(params, lr=LR)
    is_first = any(s.is_first for s in stages)
    is_last = any(s.is_last for s in stages)
    res = {"losses": [], "outputs": [], "grads": None}
    for _ in range(STEPS if fn is not None else 1):
        opt.zero_grad()
        losses = [] if is_last else None
        args = (x,) if is_first else ()
        kw = {"target": y, "losses": losses} if is_last and fn is not None else {}
        out = sched.step(*args, **kw)
        if is_last:
            res["outputs"].append(_np(out))
            if losses is not None:
                res["losses"].append([float(v.detach()) for v in losses])
        if fn is None:
            break
        if res["grads"] is None:
            res["grads"] = {names[id(p)]: _np(p.grad) for p in params}
        opt.step()
    res["params"] = {names[id(p)]: _np(p) for p in params}
    return res


# -- the tutorial's way: a GPT-like model whose stages delete what they do not run -------------

VOCAB, DIM, SEQ = 11, 8, 5


def gpt(torch):
    nn = torch.nn

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_embeddings = nn.Embedding(VOCAB, DIM)
            self.layers = nn.ModuleDict({str(i): nn.TransformerDecoderLayer(
                DIM, 2, dim_feedforward=16, dropout=0.0, batch_first=True) for i in range(4)})
            self.norm = nn.LayerNorm(DIM)
            self.output = nn.Linear(DIM, VOCAB)

        def forward(self, tokens):
            h = self.tok_embeddings(tokens) if self.tok_embeddings else tokens
            for layer in self.layers.values():
                h = layer(h, h)
            h = self.norm(h) if self.norm else h
            return self.output(h).float() if self.output else h

    torch.manual_seed(0)
    net = Transformer()
    fill_normal(torch, net, 0.3, seed=2)
    return net


def gpt_data():
    rng = np.random.default_rng(3)
    return rng.integers(0, VOCAB, (4, SEQ)), rng.integers(0, VOCAB, (4, SEQ))


def tokenwise_loss(torch):
    def fn(outputs, targets):
        return torch.nn.functional.cross_entropy(outputs.reshape(-1, VOCAB),
                                                 targets.reshape(-1))
    return fn


def run_tutorial(torch, rank):
    pp = __import__(torch.__name__ + ".distributed.pipelining", fromlist=["x"])
    net = gpt(torch)
    names = {id(p): n for n, p in net.named_parameters()}
    if rank == 0:  # the tutorial's manual split: each stage deletes the other's layers
        for i in (2, 3):
            del net.layers[str(i)]
        net.norm = None
        net.output = None
    else:
        for i in (0, 1):
            del net.layers[str(i)]
        net.tok_embeddings = None
    x, y = (torch.tensor(a) for a in gpt_data())
    # example microbatches given, as the tutorial does: with inferred shapes PyTorch 2.13
    # makes a gradient buffer for this stage that its gloo refuses ("has to be contiguous")
    example = x[:2] if rank == 0 else torch.zeros(2, SEQ, DIM, requires_grad=True)
    stage = pp.PipelineStage(net, rank, 2, torch.device("cpu"), input_args=(example,),
                             output_args=net(example))
    sched = pp.ScheduleGPipe(stage, n_microbatches=2, loss_fn=tokenwise_loss(torch))
    losses = []
    if rank == 0:
        sched.step(x)
    else:
        sched.step(target=y, losses=losses)
    return {"losses": [float(v.detach()) for v in losses],
            "grads": {names[id(p)]: _np(p.grad) for p in net.parameters()}}


def worker(rank, fw, init_method, out_dir, which=None):
    import importlib

    torch = importlib.import_module(fw)
    dist = importlib.import_module(fw + ".distributed")
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2)
    results = {}
    try:
        for case, cut, schedule, per_rank in CASES:
            if fw == "torch" and case.endswith("_defer"):
                # PyTorch 2.13's deferred receives on gloo come out in another order than
                # their sends, and gloo pairs one peer's messages in order: its gradients
                # are wrong there (max error ~6 on this model), so it is no oracle for it
                continue
            if which is None or case in which:
                results[case] = _run(torch, dist, case, cut, schedule, per_rank, rank,
                                     out_dir)
        if which is None or "tutorial" in which:
            results["tutorial"] = run_tutorial(torch, rank)
    finally:
        dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(results, f)


# -- 4 ranks, 8 stages: the schedules with two stages per rank ---------------------------------

CASES4 = ["ScheduleInterleaved1F1B", "ScheduleInterleavedZeroBubble", "ScheduleZBVZeroBubble",
          "ScheduleDualPipeV"]
N_MB4 = 8


def chain(torch):
    """Eight small tanh layers, one per stage."""
    nn = torch.nn
    net = nn.Sequential(*[nn.Sequential(nn.Linear(6, 6), nn.Tanh()) for _ in range(8)])
    fill_normal(torch, net, 0.5, seed=4)
    return net


def chain_data():
    rng = np.random.default_rng(5)
    return (rng.standard_normal((16, 6)).astype(np.float32),
            rng.standard_normal((16, 6)).astype(np.float32))


def worker4(rank, fw, init_method, out_dir):
    import importlib

    torch = importlib.import_module(fw)
    dist = importlib.import_module(fw + ".distributed")
    schedules = importlib.import_module(fw + ".distributed.pipelining.schedules")
    pp = importlib.import_module(fw + ".distributed.pipelining")
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=4)
    results = {}
    try:
        for name in CASES4:
            net = chain(torch)
            v = name in ("ScheduleZBVZeroBubble", "ScheduleDualPipeV")
            idx = [rank, 7 - rank] if v else [rank, rank + 4]
            stages = [pp.PipelineStage(net[i], i, 8, torch.device("cpu")) for i in idx]
            sched = getattr(schedules, name)(stages, n_microbatches=N_MB4, loss_fn=loss_fn)
            x, y = (torch.tensor(a) for a in chain_data())
            losses = [] if rank == 0 and v or rank == 3 and not v else None
            kw = {"target": y, "losses": losses} if losses is not None else {}
            sched.step(*((x,) if rank == 0 else ()), **kw)
            results[name] = {
                "losses": [float(v.detach()) for v in losses or []],
                "grads": {f"{i}.{n}": _np(p.grad) for i in idx
                          for n, p in net[i].named_parameters()}}
    finally:
        dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(results, f)
