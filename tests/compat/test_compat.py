"""Running PyTorch scripts on ember: the import hook and the runner."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset
    from torch.optim.lr_scheduler import StepLR

    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = (x.sum(1) > 0).long()
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    sched = StepLR(opt, 5)
    for epoch in range(15):
        for xb, yb in DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True):
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
        sched.step()
    acc = (model(x).argmax(1) == y).float().mean().item()
    print(torch.__name__, acc > 0.9, sys.argv[1:])
""")


def _run(args, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    return subprocess.run([sys.executable, "-m", "ember.compat.run", str(script), *args],
                          capture_output=True, text=True, timeout=300)


def test_runner_runs_unmodified_pytorch_script(tmp_path):
    r = _run(["--lr", "3"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ember True ['--lr', '3']"


def test_missing_apis_are_named():
    code = textwrap.dedent("""
        import ember.compat
        ember.compat.install()
        import torch
        try:
            torch.not_a_real_api
        except AttributeError as e:
            print("attr:", e)
        try:
            import torch.distributed._symmetric_memory
        except ModuleNotFoundError as e:
            print("module:", e)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "torch.not_a_real_api is not implemented in ember" in r.stdout
    assert "torch.distributed._symmetric_memory is not available in ember" in r.stdout


def test_install_refuses_after_real_torch_and_uninstall_cleans_up():
    code = textwrap.dedent("""
        import ember.compat
        ember.compat.install()
        import torch.nn.functional as F
        import ember
        assert F is ember.nn.functional
        ember.compat.uninstall()
        import sys
        assert "torch" not in sys.modules and not ember.compat.is_installed()
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_runner_prints_dtypes_and_sizes_as_torch(tmp_path):
    # NOTE [ Printed module name ]: a program run as PyTorch prints what PyTorch prints
    script = tmp_path / "shapes.py"
    script.write_text("import torch\nx = torch.zeros(2, 3)\n"
                      "print(x.shape, x.dtype, x.type(), type(x).__module__)\n")
    r = subprocess.run([sys.executable, "-m", "ember.compat.run", str(script)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "torch.Size([2, 3]) torch.float32 torch.FloatTensor torch"


def test_plain_import_prints_ember_names():
    import ember

    assert repr(ember.zeros(2, 3).shape) == "ember.Size([2, 3])"
    assert str(ember.float32) == "ember.float32"
    assert repr(ember.Tensor) == "<class 'ember.Tensor'>"
