"""Still more libraries built on torch run unchanged on ember under the alias: torchdiffeq,
torch-optimizer, pytorch-ignite and kornia.

As in ``test_third_party_libs.py`` (whose helpers these tests use), each test writes a driver
program, runs it once on PyTorch and once under ``python -m ember.compat.run``, each run
saving its numbers to its own ``.npz`` file, and compares the two. A test skips when its
library, or PyTorch, is not installed.
"""

from tests.compat.test_third_party_libs import _assert_same, _both, _needs

# -- torchdiffeq ----------------------------------------------------------------------------

TORCHDIFFEQ_DRIVER = """
    import sys
    import numpy as np
    import torch
    from torch import nn
    from torchdiffeq import odeint, odeint_adjoint

    class F(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 2))

        def forward(self, t, y):
            return self.net(y)

    out = {}
    torch.manual_seed(0)
    f = F().double()
    y0 = torch.randn(3, 2, dtype=torch.float64)
    t = torch.linspace(0.0, 1.0, 4, dtype=torch.float64)
    for method in ("dopri5", "rk4", "euler"):
        opts = {"step_size": 0.25} if method != "dopri5" else None
        ys = odeint(f, y0, t, method=method, options=opts, rtol=1e-7, atol=1e-9)
        out[f"ys_{method}"] = ys.detach().numpy()
        f.zero_grad()
        ys[-1].pow(2).sum().backward()
        for i, p in enumerate(f.parameters()):
            out[f"g_{method}_{i}"] = p.grad.numpy().copy()
    f.zero_grad()
    ya = odeint_adjoint(f, y0, t, rtol=1e-7, atol=1e-9)
    out["ys_adjoint"] = ya.detach().numpy()
    ya[-1].pow(2).sum().backward()
    for i, p in enumerate(f.parameters()):
        out[f"g_adjoint_{i}"] = p.grad.numpy().copy()
    np.savez(sys.argv[1], **out)
"""


@_needs("torchdiffeq")
def test_torchdiffeq_odeint_and_adjoint(tmp_path):
    t, e = _both(tmp_path, TORCHDIFFEQ_DRIVER)
    _assert_same(t, e, rtol=1e-6, atol=1e-8)


# -- torch-optimizer ------------------------------------------------------------------------

TORCH_OPTIMIZER_DRIVER = """
    import sys
    import numpy as np
    import torch
    from torch import nn
    import torch_optimizer as optim

    out = {}
    names = ["AdaBelief", "AdaBound", "DiffGrad", "Lamb", "Lookahead", "MADGRAD", "NovoGrad",
             "RAdam", "Ranger", "SWATS", "Yogi", "QHAdam", "AdamP", "SGDP", "Apollo", "AggMo",
             "Adafactor", "PID", "QHM", "AccSGD", "A2GradExp"]
    for name in names:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 1))
        x = torch.randn(16, 4)
        y = torch.randn(16, 1)
        if name == "Lookahead":
            opt = optim.Lookahead(torch.optim.SGD(model.parameters(), lr=0.05), k=2)
        elif name in ("PID", "QHM", "AccSGD", "AggMo"):
            opt = getattr(optim, name)(model.parameters(), lr=0.01)
        elif name == "A2GradExp":
            opt = optim.A2GradExp(model.parameters())
        else:
            opt = getattr(optim, name)(model.parameters(), lr=1e-2)
        losses = []
        for _ in range(4):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        out[f"{name}_loss"] = np.array(losses)
        out[f"{name}_w"] = np.concatenate([p.detach().numpy().ravel()
                                           for p in model.parameters()])
    np.savez(sys.argv[1], **out)
"""


@_needs("torch_optimizer")
def test_torch_optimizer_steps(tmp_path):
    t, e = _both(tmp_path, TORCH_OPTIMIZER_DRIVER)
    _assert_same(t, e, rtol=1e-4, atol=1e-5)


# -- pytorch-ignite -------------------------------------------------------------------------

IGNITE_DRIVER = """
    import sys
    import numpy as np
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
    from ignite.engine import Events, create_supervised_evaluator, create_supervised_trainer
    from ignite.metrics import Accuracy, Loss, Precision, Recall, ConfusionMatrix, RunningAverage

    out = {}
    torch.manual_seed(0)
    x = torch.randn(64, 5)
    y = (x[:, 0] + x[:, 1] > 0).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=False)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    trainer = create_supervised_trainer(model, opt, crit)
    RunningAverage(output_transform=lambda v: v).attach(trainer, "avg")
    losses = []
    trainer.add_event_handler(Events.ITERATION_COMPLETED, lambda e: losses.append(e.state.output))
    evaluator = create_supervised_evaluator(model, metrics={
        "acc": Accuracy(), "nll": Loss(crit), "prec": Precision(average=False),
        "rec": Recall(average=True), "cm": ConfusionMatrix(num_classes=2)})
    trainer.run(loader, max_epochs=3)
    evaluator.run(loader)
    m = evaluator.state.metrics
    out["losses"] = np.array(losses)
    out["avg"] = np.array(trainer.state.metrics["avg"])
    out["acc"] = np.array(m["acc"])
    out["nll"] = np.array(m["nll"])
    out["prec"] = np.asarray(m["prec"].numpy())
    out["rec"] = np.array(m["rec"])
    out["cm"] = np.asarray(m["cm"].numpy())
    out["w"] = model[0].weight.detach().numpy()
    np.savez(sys.argv[1], **out)
"""


@_needs("ignite")
def test_ignite_trainer_and_metrics(tmp_path):
    t, e = _both(tmp_path, IGNITE_DRIVER)
    _assert_same(t, e, rtol=1e-5, atol=1e-6)


# -- kornia ---------------------------------------------------------------------------------

KORNIA_DRIVER = """
    import sys
    import numpy as np
    import torch
    import kornia
    import kornia.augmentation as K

    out = {}
    torch.manual_seed(0)
    img = torch.rand(2, 3, 16, 16, requires_grad=True)
    gray = kornia.color.rgb_to_grayscale(img)
    out["gray"] = gray.detach().numpy()
    out["hsv"] = kornia.color.rgb_to_hsv(img).detach().numpy()
    out["lab"] = kornia.color.rgb_to_lab(img).detach().numpy()
    out["blur"] = kornia.filters.gaussian_blur2d(img, (5, 5), (1.5, 1.5)).detach().numpy()
    out["sobel"] = kornia.filters.sobel(img).detach().numpy()
    out["canny"] = kornia.filters.canny(gray)[1].detach().numpy()
    out["lap"] = kornia.filters.laplacian(img, 3).detach().numpy()
    out["median"] = kornia.filters.median_blur(img, (3, 3)).detach().numpy()
    ang = torch.tensor([30.0, -45.0])
    out["rot"] = kornia.geometry.transform.rotate(img, ang).detach().numpy()
    M = kornia.geometry.transform.get_rotation_matrix2d(
        torch.tensor([[8.0, 8.0], [7.0, 9.0]]), ang, torch.ones(2, 2))
    out["M"] = M.numpy()
    out["warp"] = kornia.geometry.transform.warp_affine(img, M, (16, 16)).detach().numpy()
    out["resize"] = kornia.geometry.transform.resize(img, (8, 12)).detach().numpy()
    out_blur = torch.tensor(out["blur"])
    out["ssim"] = kornia.metrics.ssim(img, out_blur, 5).detach().numpy()
    out["psnr"] = kornia.metrics.psnr(img, out_blur, 1.0).detach().numpy()
    loss = (kornia.losses.ssim_loss(img, out_blur, 5) + kornia.losses.total_variation(img).mean()
            + kornia.losses.focal_loss(img[:, :, 0, :3].reshape(-1, 3) * 4,
                                       torch.tensor([0, 1, 2, 1, 0, 2]), alpha=0.25,
                                       reduction="mean"))
    loss = loss + kornia.filters.gaussian_blur2d(img, (5, 5), (1.5, 1.5)).pow(2).mean()
    loss = loss + kornia.geometry.transform.rotate(img, ang).sum() * 1e-3
    loss.backward()
    out["loss"] = loss.detach().numpy()
    out["gimg"] = img.grad.numpy()
    torch.manual_seed(1)
    aug = torch.nn.Sequential(K.RandomHorizontalFlip(p=0.5),
                              K.ColorJitter(0.2, 0.2, 0.2, 0.1, p=1.0),
                              K.RandomAffine(degrees=15.0, p=1.0), K.Normalize(0.5, 0.5))
    out["aug"] = aug(img.detach()).numpy()
    np.savez(sys.argv[1], **out)
"""


@_needs("kornia")
def test_kornia_ops_losses_and_augmentation(tmp_path):
    t, e = _both(tmp_path, KORNIA_DRIVER)
    _assert_same(t, e, rtol=1e-4, atol=1e-5)
