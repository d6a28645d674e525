"""More libraries built on torch run unchanged on ember under the alias: torchmetrics,
Lightning (``lightning.pytorch`` and Fabric) and Hugging Face accelerate.

As in ``test_third_party_libs.py`` (whose helpers these tests use), each test writes a driver
program, runs it once on PyTorch and once under ``python -m ember.compat.run``, each run
saving its numbers to its own ``.npz`` file, and compares the two. A test skips when its
library, or PyTorch, is not installed.

The tests at the end check, in process and without the libraries, the names these libraries
needed from ember: ``torch._C._log_api_usage_once``, ``torch._C._TensorMeta``,
``torch._C._nn._parse_to``, ``torch.ScriptModule``, ``ReduceOp.RedOpType``, the
DataLoader's iterator classes by PyTorch's names, ``_pytree.SUPPORTED_NODES`` and
``_get_node_type``, and optimizer subclasses that never run ``Optimizer.__init__``.
"""

import collections

import numpy as np
import pytest

import ember
from tests.compat.test_third_party_libs import _assert_same, _both, _needs, needs_torch

# -- torchmetrics ---------------------------------------------------------------------------

TORCHMETRICS_DRIVER = """
    import sys
    import numpy as np
    import torch
    import torchmetrics
    from torchmetrics.classification import (
        BinaryAccuracy, BinaryAUROC, BinaryF1Score, MulticlassAccuracy,
        MulticlassConfusionMatrix, MulticlassF1Score)
    from torchmetrics.regression import MeanAbsoluteError, MeanSquaredError, R2Score
    from torchmetrics import MetricCollection

    out = {}
    torch.manual_seed(0)
    logits = torch.randn(40, 5)
    target = torch.randint(0, 5, (40,))
    acc = torchmetrics.Accuracy(task="multiclass", num_classes=5)
    f1 = torchmetrics.F1Score(task="multiclass", num_classes=5, average="macro")
    cm = torchmetrics.ConfusionMatrix(task="multiclass", num_classes=5)
    au = torchmetrics.AUROC(task="multiclass", num_classes=5)
    for i in range(4):  # per-batch values from forward, epoch values from update/compute
        sl = slice(10 * i, 10 * i + 10)
        out[f"acc_step{i}"] = acc(logits[sl], target[sl]).numpy()
        f1.update(logits[sl], target[sl])
        cm.update(logits[sl], target[sl])
        au.update(logits[sl].softmax(-1), target[sl])
    out["acc"] = acc.compute().numpy()
    out["f1"] = f1.compute().numpy()
    out["cm"] = cm.compute().numpy()
    out["auroc"] = au.compute().numpy()
    p = torch.rand(50)
    t = torch.randint(0, 2, (50,))
    out["bauroc"] = BinaryAUROC()(p, t).numpy()
    out["bacc"] = BinaryAccuracy()(p, t).numpy()
    out["bf1"] = BinaryF1Score()(p, t).numpy()
    out["mcacc_none"] = MulticlassAccuracy(num_classes=5, average=None)(logits, target).numpy()
    mse, mae, r2 = MeanSquaredError(), MeanAbsoluteError(), R2Score()
    x = torch.randn(30)
    y = x + 0.1 * torch.randn(30)
    for m, k in ((mse, "mse"), (mae, "mae"), (r2, "r2")):
        m.update(x[:15], y[:15])
        m.update(x[15:], y[15:])
        out[k] = m.compute().numpy()
    coll = MetricCollection({"acc": MulticlassAccuracy(num_classes=5),
                             "f1": MulticlassF1Score(num_classes=5)})
    for k, v in coll(logits, target).items():
        out["coll_" + k] = v.numpy()
    mse.reset()
    out["mse_reset"] = mse(x, 2 * x).numpy()
    out["cm_norm"] = MulticlassConfusionMatrix(num_classes=5, normalize="true")(
        logits, target).numpy()
    np.savez(sys.argv[1], **out)
"""


@_needs("torchmetrics")
def test_torchmetrics_metrics_match_torch(tmp_path):
    t, e = _both(tmp_path, TORCHMETRICS_DRIVER)
    _assert_same(t, e)


TORCHMETRICS_MORE_DRIVER = """
    import copy, pickle, sys
    import numpy as np
    import torch
    from torchmetrics.functional import (
        accuracy, auroc, confusion_matrix, f1_score, mean_squared_error)
    from torchmetrics.functional.classification import (
        multiclass_precision, multiclass_recall)
    from torchmetrics.classification import (
        BinaryROC, MulticlassAccuracy, MulticlassPrecisionRecallCurve, MultilabelAccuracy)
    from torchmetrics.aggregation import CatMetric, MaxMetric, MeanMetric, SumMetric
    from torchmetrics.wrappers import ClasswiseWrapper, MetricTracker

    out = {}
    torch.manual_seed(1)
    logits = torch.randn(64, 4)
    target = torch.randint(0, 4, (64,))
    kw = dict(task="multiclass", num_classes=4)
    out["f_acc"] = accuracy(logits, target, **kw).numpy()
    out["f_acc_top2"] = accuracy(logits, target, top_k=2, **kw).numpy()
    out["f_f1_w"] = f1_score(logits, target, average="weighted", **kw).numpy()
    out["f_auroc"] = auroc(logits.softmax(-1), target, **kw).numpy()
    out["f_cm"] = confusion_matrix(logits, target, **kw).numpy()
    out["f_prec"] = multiclass_precision(logits, target, num_classes=4, average=None).numpy()
    out["f_rec"] = multiclass_recall(logits, target, num_classes=4, average="micro").numpy()
    out["f_mse"] = mean_squared_error(logits[:, 0], logits[:, 1]).numpy()
    out["ml_acc"] = MultilabelAccuracy(num_labels=3)(
        torch.rand(20, 3), torch.randint(0, 2, (20, 3))).numpy()
    # a metric's state: state_dict, pickling, deepcopy, arithmetic, dtype moves
    m = MulticlassAccuracy(num_classes=4)
    m.update(logits[:32], target[:32])
    out["sd_keys"] = np.array(sorted(m.state_dict()))
    m2 = pickle.loads(pickle.dumps(m))
    m2.update(logits[32:], target[32:])
    out["pickled"] = m2.compute().numpy()
    out["deepcopy"] = copy.deepcopy(m).compute().numpy()
    out["compositional"] = (MulticlassAccuracy(num_classes=4) + 1.0)(logits, target).numpy()
    mean, s, mx, cat = MeanMetric(), SumMetric(), MaxMetric(), CatMetric()
    for i in range(3):
        v = torch.randn(5)
        mean.update(v, weight=torch.rand(5))
        s.update(v)
        mx.update(v)
        cat.update(v)
    for k, metric in (("mean", mean), ("sum", s), ("max", mx), ("cat", cat)):
        out[k] = metric.compute().numpy()
    tr = MetricTracker(MulticlassAccuracy(num_classes=4))
    for ep in range(3):
        tr.increment()
        tr.update(logits[ep * 20:(ep + 1) * 20], target[ep * 20:(ep + 1) * 20])
    best, which = tr.best_metric(return_step=True)
    out["tracker_all"] = tr.compute_all().numpy()
    out["tracker_best"] = np.array([best, which])
    cw = ClasswiseWrapper(MulticlassAccuracy(num_classes=4, average=None), labels=list("abcd"))
    for k, v in sorted(cw(logits, target).items()):
        out["cw_" + k] = v.numpy()
    p, r, th = MulticlassPrecisionRecallCurve(num_classes=4, thresholds=5)(
        logits.softmax(-1), target)
    out["prc_p"], out["prc_r"], out["prc_t"] = p.numpy(), r.numpy(), th.numpy()
    fpr, tpr, thr = BinaryROC()(torch.rand(30), torch.randint(0, 2, (30,)))
    out["roc"] = np.concatenate([fpr.numpy(), tpr.numpy()])
    out["roc_t"] = thr.numpy()
    out["device"] = np.array(str(m.device))
    out["dtype"] = np.array(str(m.dtype))
    m.to(torch.float64)
    out["float64_state"] = np.array(str(m.tp.dtype))
    np.savez(sys.argv[1], **out)
"""


@_needs("torchmetrics")
def test_torchmetrics_functional_state_and_wrappers_match_torch(tmp_path):
    t, e = _both(tmp_path, TORCHMETRICS_MORE_DRIVER)
    _assert_same(t, e)


# -- Lightning ------------------------------------------------------------------------------

LIGHTNING_DRIVER = """
    import sys
    import numpy as np
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
    import lightning.pytorch as L

    class MLP(L.LightningModule):
        def __init__(self, hidden=16, lr=0.1):
            super().__init__()
            self.save_hyperparameters()
            self.net = nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, 3))
            self.losses, self.val_losses = [], []

        def forward(self, x):
            return self.net(x)

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = nn.functional.cross_entropy(self(x), y)
            self.log("train_loss", loss)
            self.losses.append(loss.item())
            return loss

        def validation_step(self, batch, batch_idx):
            x, y = batch
            loss = nn.functional.cross_entropy(self(x), y)
            self.log("val_loss", loss)
            self.log("val_acc", (self(x).argmax(-1) == y).float().mean(), prog_bar=True)
            self.val_losses.append(loss.item())

        def predict_step(self, batch, batch_idx):
            return self(batch[0])

        def configure_optimizers(self):
            opt = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
            return [opt], [sched]

    def trainer(epochs):
        return L.Trainer(max_epochs=epochs, accelerator="cpu", logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)

    L.seed_everything(0)
    x = torch.randn(64, 4)
    y = (x.sum(-1) > 0).long() + (x[:, 0] > 1).long()
    train = DataLoader(TensorDataset(x[:48], y[:48]), batch_size=8, shuffle=True)
    val = DataLoader(TensorDataset(x[48:], y[48:]), batch_size=8)
    model = MLP()
    tr = trainer(2)
    tr.fit(model, train, val)
    out = {"losses": np.array(model.losses), "val_losses": np.array(model.val_losses)}
    res = tr.validate(model, val, verbose=False)
    out["validate"] = np.array([res[0]["val_loss"], res[0]["val_acc"]])
    names = sorted(tr.callback_metrics)
    out["metric_names"] = np.array(names)
    out["metric_values"] = np.array([float(tr.callback_metrics[k]) for k in names])
    out["step_epoch"] = np.array([tr.global_step, tr.current_epoch])
    # a checkpoint round trip: hyper-parameters and weights come back
    ck = sys.argv[1] + ".ckpt"
    tr.save_checkpoint(ck)
    loaded = MLP.load_from_checkpoint(ck)
    out["hparams"] = np.array([loaded.hparams.hidden, loaded.hparams.lr])
    with torch.no_grad():
        out["pred"] = model(x).numpy()
        out["pred_loaded"] = loaded(x).numpy()
    saved = torch.load(ck, weights_only=False)
    out["ckpt_keys"] = np.array(sorted(saved))
    out["ckpt_lr"] = np.array(saved["optimizer_states"][0]["param_groups"][0]["lr"])
    preds = tr.predict(model, DataLoader(TensorDataset(x[48:]), batch_size=8))
    out["predict"] = torch.cat(preds).numpy()
    # resuming the fit from the checkpoint for a third epoch
    model2 = MLP()
    tr2 = trainer(3)
    tr2.fit(model2, train, val, ckpt_path=ck)
    out["resumed_losses"] = np.array(model2.losses)
    out["resumed_step"] = np.array(tr2.global_step)
    np.savez(sys.argv[1], **out)
"""


@_needs("lightning")
def test_lightning_fit_validate_checkpoint_match_torch(tmp_path):
    t, e = _both(tmp_path, LIGHTNING_DRIVER)
    assert len(t["losses"]) == 12 and len(t["resumed_losses"]) == 6
    _assert_same(t, e)


LIGHTNING_MORE_DRIVER = """
    import csv, os, sys
    import numpy as np
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
    import lightning.pytorch as L
    from lightning.fabric import Fabric
    from lightning.pytorch.callbacks import EarlyStopping, LearningRateMonitor, ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger

    root = sys.argv[1] + ".dir"

    class Data(L.LightningDataModule):
        def setup(self, stage):
            g = torch.Generator().manual_seed(3)
            x = torch.randn(80, 6, generator=g)
            y = (x[:, :3].sum(-1) > 0).long()
            self.tr, self.va = TensorDataset(x[:64], y[:64]), TensorDataset(x[64:], y[64:])

        def train_dataloader(self):
            return DataLoader(self.tr, batch_size=16, shuffle=True)

        def val_dataloader(self):
            return DataLoader(self.va, batch_size=16)

    class Net(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.save_hyperparameters()
            # no bias before the batch norm: its gradient is rounding noise, which Adam's
            # first steps would magnify into different running means
            self.l1 = nn.Linear(6, 12, bias=False)
            self.bn = nn.BatchNorm1d(12)
            self.l2 = nn.Linear(12, 2)
            self.seen = []

        def forward(self, x):
            return self.l2(torch.relu(self.bn(self.l1(x))))

        def training_step(self, batch, i):
            x, y = batch
            loss = nn.functional.cross_entropy(self(x), y)
            self.log("train_loss", loss, on_step=True, on_epoch=True)
            self.seen.append(loss.item())
            return loss

        def validation_step(self, batch, i):
            x, y = batch
            self.log("val_loss", nn.functional.cross_entropy(self(x), y))

        def configure_optimizers(self):
            opt = torch.optim.AdamW(self.parameters(), lr=0.05)
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 4)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    L.seed_everything(1)
    net = Net()
    best_cb = ModelCheckpoint(dirpath=root, monitor="val_loss", save_top_k=1, filename="best")
    tr = L.Trainer(max_epochs=4, accelerator="cpu", logger=CSVLogger(root, name="logs"),
                   callbacks=[EarlyStopping("val_loss", patience=1), best_cb,
                              LearningRateMonitor()],
                   enable_progress_bar=False, enable_model_summary=False,
                   gradient_clip_val=0.5, accumulate_grad_batches=2, deterministic=True,
                   log_every_n_steps=1)
    tr.fit(net, datamodule=Data())
    out = {"seen": np.array(net.seen), "stopped": np.array(tr.current_epoch),
           "best": np.array(float(best_cb.best_model_score)),
           "bn_mean": net.bn.running_mean.numpy()}
    out["best_w"] = Net.load_from_checkpoint(best_cb.best_model_path).l1.weight.detach().numpy()
    with open(os.path.join(tr.logger.log_dir, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    out["csv_cols"] = np.array(sorted(rows[0]))
    out["csv_lr"] = np.array([float(r["lr-AdamW"]) for r in rows if r.get("lr-AdamW")])
    # Fabric: set up a model, optimizer and loader by hand, train, save and load
    fab = Fabric(accelerator="cpu", devices=1)
    fab.seed_everything(2)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    o = torch.optim.SGD(m.parameters(), lr=0.1)
    m, o = fab.setup(m, o)
    dl = fab.setup_dataloaders(
        DataLoader(TensorDataset(torch.randn(32, 3), torch.randn(32, 1)), batch_size=8))
    losses = []
    for xb, yb in dl:
        o.zero_grad()
        loss = nn.functional.mse_loss(m(xb), yb)
        fab.backward(loss)
        o.step()
        losses.append(loss.item())
    out["fabric"] = np.array(losses)
    fab.save(root + "/fab.ckpt", {"model": m, "opt": o, "step": 4})
    out["fab_rest"] = np.array(fab.load(root + "/fab.ckpt", {"model": m, "opt": o})["step"])
    np.savez(sys.argv[1], **out)
"""


@_needs("lightning")
def test_lightning_callbacks_logger_and_fabric_match_torch(tmp_path):
    t, e = _both(tmp_path, LIGHTNING_MORE_DRIVER)
    assert len(t["csv_lr"]) > 0 and len(t["fabric"]) == 4
    _assert_same(t, e)


# -- accelerate -----------------------------------------------------------------------------

ACCELERATE_DRIVER = """
    import os, sys
    import numpy as np
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    set_seed(0)
    acc = Accelerator(cpu=True)
    x = torch.randn(64, 5)
    y = x @ torch.randn(5, 1) + 0.1 * torch.randn(64, 1)
    dl = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))
    model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
    out, losses = {}, []
    for epoch in range(2):
        for xb, yb in dl:
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            acc.backward(loss)
            acc.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(loss.item())
    out["losses"] = np.array(losses)
    out["lr"] = np.array(sched.get_last_lr())
    out["device"] = np.array(str(acc.device))
    out["procs"] = np.array([acc.num_processes, acc.process_index, int(acc.is_main_process)])
    out["gather"] = acc.gather(torch.tensor([1.0, 2.0])).numpy()
    out["reduce"] = acc.reduce(torch.tensor([3.0]), reduction="mean").numpy()
    out["sd_keys"] = np.array(sorted(acc.get_state_dict(model)))
    with torch.no_grad():
        out["pred"] = acc.unwrap_model(model)(x).numpy()
    # save_state / load_state bring back the weights zeroed in between
    d = sys.argv[1] + ".state"
    acc.save_state(d)
    before = [p.detach().clone() for p in model.parameters()]
    for p in model.parameters():
        p.data.zero_()
    acc.load_state(d)
    out["restored"] = np.array([bool(torch.equal(a, b))
                                for a, b in zip(before, model.parameters())])
    out["files"] = np.array(sorted(os.listdir(d)))
    acc.save_model(model, os.path.join(d, "m"))
    out["model_files"] = np.array(sorted(os.listdir(os.path.join(d, "m"))))
    # gradient accumulation: the optimizer steps every second batch
    acc2 = Accelerator(cpu=True, gradient_accumulation_steps=2)
    m2 = nn.Linear(5, 1)
    o2 = torch.optim.SGD(m2.parameters(), lr=0.1)
    m2, o2, dl2 = acc2.prepare(m2, o2, DataLoader(TensorDataset(x, y), batch_size=8))
    syncs = []
    for xb, yb in dl2:
        with acc2.accumulate(m2):
            acc2.backward(nn.functional.mse_loss(m2(xb), yb))
            o2.step()
            o2.zero_grad()
            syncs.append(int(acc2.sync_gradients))
    out["accum_sync"] = np.array(syncs)
    out["accum_w"] = acc2.unwrap_model(m2).weight.detach().numpy()
    np.savez(sys.argv[1], **out)
"""


@_needs("accelerate")
def test_accelerate_prepare_train_save_load_match_torch(tmp_path):
    t, e = _both(tmp_path, ACCELERATE_DRIVER)
    assert t["restored"].all() and t["accum_sync"].tolist() == [0, 1] * 4
    _assert_same(t, e)


# -- the names these libraries needed, in process ------------------------------------------


def test_log_api_usage_once_and_tensor_meta():
    assert ember._C._log_api_usage_once("tests.some_api") is None
    assert isinstance(ember.Tensor, ember._C._TensorMeta)
    assert isinstance(ember.nn.Parameter, ember._C._TensorMeta)


def test_script_module_is_the_compiled_type_not_jit_script_module():
    scripted = ember.jit.script(ember.nn.Linear(2, 2))
    assert not isinstance(scripted, ember.ScriptModule)
    assert isinstance(scripted, ember.jit.ScriptModule)
    with pytest.raises(TypeError):
        ember.ScriptModule()


@needs_torch
@pytest.mark.parametrize("case", [
    (("cpu",), {}), (("float64",), {}), (("cpu", "float16"), {}),
    ((), {"device": "cpu"}), ((), {"dtype": "float32", "non_blocking": True}),
    (("cpu",), {"memory_format": "channels_last"}), (("tensor",), {}),
])
def test_nn_parse_to_matches_torch(case):
    import torch

    def convert(lib, v):
        if v == "tensor":
            return lib.ones(2, dtype=lib.float16)
        return getattr(lib, v) if v in ("float64", "float16", "float32", "channels_last") else v

    args, kwargs = case
    results = []
    for lib in (torch, ember):
        a = [convert(lib, v) for v in args]
        kw = {k: convert(lib, v) if isinstance(v, str) else v for k, v in kwargs.items()}
        results.append([str(r) if r is not None else None for r in lib._C._nn._parse_to(*a, **kw)])
    theirs, ours = results
    assert [s and s.replace("ember.", "torch.") for s in ours] == theirs


def test_reduce_op_members_are_red_op_types():
    ReduceOp = ember.distributed.ReduceOp
    assert isinstance(ReduceOp.SUM, ReduceOp.RedOpType)
    assert ReduceOp.RedOpType.MAX is ReduceOp.MAX


def test_dataloader_iterators_by_torch_names():
    from ember.utils.data import dataloader as dl

    loader = ember.utils.data.DataLoader(ember.utils.data.TensorDataset(ember.arange(4)))
    it = iter(loader)
    assert isinstance(it, dl._BaseDataLoaderIter)
    assert isinstance(it, dl._SingleProcessDataLoaderIter)
    assert not isinstance(it, dl._MultiProcessingDataLoaderIter)


def test_pytree_supported_nodes_and_node_types():
    from ember.utils import _pytree as pt

    Pair = collections.namedtuple("Pair", "a b")
    assert pt._get_node_type(Pair(1, 2)) is collections.namedtuple
    assert pt._get_node_type([1]) is list and pt._get_node_type(3) is int
    assert int not in pt.SUPPORTED_NODES
    children, context = pt.SUPPORTED_NODES[collections.namedtuple].flatten_fn(Pair(1, [2]))
    assert children == [1, [2]] and context is Pair
    assert pt.SUPPORTED_NODES[dict].flatten_fn({"x": 1, "y": 2}) == ([1, 2], ["x", "y"])
    # a spec built by hand the way Lightning builds one rebuilds the namedtuple
    spec = pt.TreeSpec(collections.namedtuple, Pair, [pt.LeafSpec(), pt.LeafSpec()])
    assert pt.tree_unflatten([5, 6], spec) == Pair(5, 6)
    # tree_flatten's own specs are unchanged
    leaves, spec = pt.tree_flatten({"k": Pair(1, [2, 3])})
    assert leaves == [1, 2, 3] and pt.tree_unflatten([4, 5, 6], spec) == {"k": Pair(4, [5, 6])}


@needs_torch
def test_pytree_node_defs_match_torch():
    import torch.utils._pytree as tpt

    from ember.utils import _pytree as pt

    assert pt.NodeDef._fields == tpt.NodeDef._fields
    for tree in ([1, (2, 3)], {"b": 1, "a": 2}, collections.OrderedDict(z=1, y=2)):
        node = pt._get_node_type(tree)
        assert node is tpt._get_node_type(tree)
        assert (pt.SUPPORTED_NODES[node].flatten_fn(tree)
                == tpt.SUPPORTED_NODES[node].flatten_fn(tree))


def test_optimizer_subclass_without_base_init_steps_its_inner_optimizer():
    # accelerate's AcceleratedOptimizer wraps an optimizer and never runs
    # Optimizer.__init__; its step hands over to the wrapped optimizer's
    class Wrapper(ember.optim.Optimizer):
        def __init__(self, optimizer):
            self.optimizer = optimizer

        def step(self, closure=None):
            self.optimizer.step(closure)

    p = ember.nn.Parameter(ember.ones(2))
    p.grad = ember.ones(2)
    inner = ember.optim.SGD([p], lr=0.5)
    seen = []
    inner.register_step_pre_hook(lambda opt, args, kwargs: seen.append(opt))
    Wrapper(inner).step()
    assert seen == [inner]
    np.testing.assert_allclose(p.detach().numpy(), [0.5, 0.5])
