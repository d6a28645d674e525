"""Workers for tests/distributed/test_fsdp_tp.py: 2-D parallelism written as PyTorch's
FSDP2 + tensor parallel tutorial writes it (a ``(dp, tp)`` mesh, ``parallelize_module`` on
``mesh["tp"]``, ``fully_shard`` on ``mesh["dp"]``), run by ember and by PyTorch (gloo); each
rank dumps its losses, the parameters' layouts and the trained parameters."""

import datetime
import importlib
import os
import pickle

import numpy as np


def _np(t):
    return t.detach().float().numpy().copy()


def _model(torch):
    nn = torch.nn

    class FeedForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = nn.Linear(8, 16)
            self.w2 = nn.Linear(16, 8)
            self.norm = nn.LayerNorm(8)

        def forward(self, x):
            return x + self.w2(torch.relu(self.w1(self.norm(x))))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(6, 8)
            self.layers = nn.ModuleList([FeedForward() for _ in range(2)])
            self.out = nn.Linear(8, 3)

        def forward(self, x):
            h = self.inp(x)
            for layer in self.layers:
                h = layer(h)
            return self.out(h)

    return Net()


def _init(torch, model):
    """The same starting values in every framework and process."""
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.copy_(torch.from_numpy(rng.standard_normal(tuple(p.shape)) * 0.3).float())


def _batch(torch, step, dp):
    rng = np.random.default_rng(10 + step)
    return (torch.from_numpy(rng.standard_normal((4 * dp, 6))).float(),
            torch.from_numpy(rng.standard_normal((4 * dp, 3))).float())


def single_process(torch, dp):
    """The same training in one process on the whole batch: the losses of each data-parallel
    rank's rows and the trained parameters."""
    model = _model(torch)
    _init(torch, model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for step in range(3):
        x, y = _batch(torch, step, dp)
        sq = (model(x) - y) ** 2
        losses.append([sq[4 * d:4 * d + 4].mean().item() for d in range(dp)])
        sq.mean().backward()
        opt.step()
        opt.zero_grad()
    return losses, {n: _np(p) for n, p in model.named_parameters()}


def run(rank, fw, init_method, out_dir, world, dp, tp_size):
    torch = importlib.import_module(fw)
    dist = importlib.import_module(fw + ".distributed")
    dt_mod = importlib.import_module(fw + ".distributed.tensor")
    tp = importlib.import_module(fw + ".distributed.tensor.parallel")
    fsdp = importlib.import_module(fw + ".distributed.fsdp")
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    mesh = dt_mod.init_device_mesh("cpu", (dp, tp_size), mesh_dim_names=("dp", "tp"))
    if fw == "ember":  # a DTensor parameter on a mesh not cut from the FSDP mesh's parent
        lone = torch.nn.Linear(4, 4)
        tp.parallelize_module(lone, mesh["tp"], tp.ColwiseParallel())
        before = [(type(p).__name__, [repr(q) for q in p.placements]) for p in lone.parameters()]
        try:
            fsdp.fully_shard(lone, mesh=dt_mod.init_device_mesh("cpu", (world,)))
            out_refused = None
        except ValueError:
            out_refused = before == [(type(p).__name__, [repr(q) for q in p.placements])
                                     for p in lone.parameters()]
    else:
        out_refused = None
    model = _model(torch)
    _init(torch, model)
    plan = {}
    for i in range(2):
        plan[f"layers.{i}.w1"] = tp.ColwiseParallel()
        plan[f"layers.{i}.w2"] = tp.RowwiseParallel()
    tp.parallelize_module(model, mesh["tp"], plan)
    for layer in model.layers:
        fsdp.fully_shard(layer, mesh=mesh["dp"])
    fsdp.fully_shard(model, mesh=mesh["dp"])
    out = {"refused_unchanged": out_refused,
           "layouts": [(n, type(p).__name__, [repr(q) for q in p.placements], list(p.shape),
                        list(p.to_local().shape)) for n, p in model.named_parameters()]}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    d = mesh["dp"].get_local_rank()
    losses = []
    for step in range(3):
        x, y = _batch(torch, step, dp)
        xs, ys = x[4 * d:4 * d + 4], y[4 * d:4 * d + 4]
        loss = ((model(xs) - ys) ** 2).mean()
        loss.backward()
        if step == 0:
            out["grad_layouts"] = [(n, [repr(q) for q in p.grad.placements])
                                   for n, p in model.named_parameters()]
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    out["losses"] = losses
    out["params"] = {n: _np(p.full_tensor()) for n, p in model.named_parameters()}
    sdm = importlib.import_module(fw + ".distributed.checkpoint.state_dict")
    opts = sdm.StateDictOptions(full_state_dict=True)
    full = sdm.get_model_state_dict(model, options=opts)
    out["full_sd"] = {k: _np(v) for k, v in full.items()}
    osd = sdm.get_optimizer_state_dict(model, opt, options=opts)
    out["full_osd_shapes"] = sorted((k, list(v["exp_avg"].shape))
                                    for k, v in osd["state"].items())
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    sdm.set_model_state_dict(model, full, options=opts)
    out["round_trip"] = {n: _np(p.full_tensor()) for n, p in model.named_parameters()}
    dcp = importlib.import_module(fw + ".distributed.checkpoint")
    dcp.save({"model": model.state_dict()}, checkpoint_id=os.path.join(out_dir, "ckpt"))
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(out, f)
    dist.destroy_process_group()


def spawn(tmp_path, fw, world, dp, tp_size):
    """Run ``run`` on ``world`` processes; the ranks' results."""
    from tests.distributed.conftest import free_port

    mp = importlib.import_module(fw + ".multiprocessing")
    out = tmp_path / f"{fw}_{dp}x{tp_size}"
    out.mkdir(exist_ok=True)
    mp.spawn(run, args=(fw, f"tcp://127.0.0.1:{free_port()}", str(out), world, dp, tp_size),
             nprocs=world)
    results = []
    for r in range(world):
        with open(os.path.join(out, f"rank{r}.pkl"), "rb") as f:
            results.append(pickle.load(f))
    results[0]["checkpoint"] = os.path.join(out, "ckpt")
    return results


if __name__ == "__main__":
    import pathlib
    import sys
    import tempfile

    fw, dp, tp_size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    got = spawn(pathlib.Path(tempfile.mkdtemp()), fw, dp * tp_size, dp, tp_size)
    for r, res in enumerate(got):
        print(r, res["losses"])
    ref_losses, ref_params = single_process(importlib.import_module(fw), dp)
    print("single", ref_losses)
    print("params equal single:", all(np.allclose(got[0]["params"][k], v, atol=1e-5)
                                      for k, v in ref_params.items()))
    print(got[0]["grad_layouts"])
    for row in got[0]["layouts"]:
        print(row)
    np.set_printoptions(precision=4)
    print(got[0]["params"]["layers.0.w1.weight"][:3])
