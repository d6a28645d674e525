"""Publishing and loading models through ``torch.hub`` from a local checkout, the way
repositories ship a ``hubconf.py`` (``dependencies``, entry points with docstrings and a
``pretrained`` flag, a helper module imported from the repository) and users call
``torch.hub.load`` with ``source="local"`` (and ``_load_local``): weights saved beside the code
and fetched with ``load_state_dict_from_url`` on a ``file://`` URL with ``check_hash`` and
``file_name`` into a ``set_dir`` cache (the ``checkpoints`` subfolder), a second load
served from the cache, ``download_url_to_file`` with a hash prefix, ``get_dir``, the errors
for an unknown entry point and a bad hash, and ``sys.path`` restored afterwards."""
import contextlib
import hashlib
import io
import os
import sys
import tempfile
import textwrap

import torch
import torch.nn as nn

torch.manual_seed(0)
work = tempfile.mkdtemp(dir=os.getcwd())
repo = os.path.join(work, "tiny_models")
os.makedirs(repo)
with open(os.path.join(repo, "tiny_blocks.py"), "w") as f:
    f.write(textwrap.dedent('''
        import torch.nn as nn

        class TinyNet(nn.Module):
            def __init__(self, width=8, num_classes=3):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(4, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU())
                self.fc = nn.Linear(width, num_classes)

            def forward(self, x):
                return self.fc(self.body(x))
    '''))

weights_path = os.path.join(work, "tinynet_w8.pth")
torch.manual_seed(123)
with open(os.path.join(repo, "tiny_blocks.py")) as f:
    namespace = {}
    exec(f.read(), namespace)
reference = namespace["TinyNet"]()
torch.save(reference.state_dict(), weights_path)
with open(weights_path, "rb") as f:
    digest = hashlib.sha256(f.read()).hexdigest()
named = os.path.join(work, f"tinynet_w8-{digest[:8]}.pth")
os.rename(weights_path, named)
url = "file://" + named

with open(os.path.join(repo, "hubconf.py"), "w") as f:
    f.write(textwrap.dedent(f'''
        dependencies = ["torch"]

        import torch
        from tiny_blocks import TinyNet

        def tinynet(pretrained=False, progress=True, **kwargs):
            """TinyNet, width 8.

            pretrained (bool): load the weights published with this repository
            """
            model = TinyNet(**kwargs)
            if pretrained:
                state_dict = torch.hub.load_state_dict_from_url({url!r}, progress=progress, check_hash=True)
                model.load_state_dict(state_dict)
            return model

        def tinynet_wide(**kwargs):
            """TinyNet, width 16."""
            return TinyNet(width=16, **kwargs)

        def _private_helper():
            return None
    '''))



def logged(fn, *args, **kwargs):
    """Run ``fn`` and print what it wrote to stdout with this run's paths and hash masked."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = fn(*args, **kwargs)
    for line in buf.getvalue().splitlines():
        print("  |", line.replace(work, "<work>").replace(digest[:8], "<hash>"))
    return out


previous_hub_dir = torch.hub.get_dir()
torch.hub.set_dir(os.path.join(work, "hub_cache"))
print("hub dir set:", torch.hub.get_dir() == os.path.join(work, "hub_cache"))
path_before = list(sys.path)
sys.path.insert(0, repo)
import hubconf  # noqa: E402  (what ``torch.hub.list`` reads, for a local checkout)

sys.path.remove(repo)
print("entry points:", sorted(n for n, f in vars(hubconf).items() if callable(f) and not n.startswith("_")
                              and n not in ("TinyNet",)))
print("help:", hubconf.tinynet.__doc__.strip().splitlines())
del sys.modules["hubconf"], sys.modules["tiny_blocks"]
path_before = list(sys.path)
model = logged(torch.hub.load, repo, "tinynet", source="local", pretrained=True, progress=False)
cached = os.listdir(os.path.join(torch.hub.get_dir(), "checkpoints"))
print("cached files:", [c.replace(digest[:8], "<hash>") for c in cached])
x = torch.randn(5, 4)
print("pretrained equals reference:", torch.equal(model(x), reference(x)))
print(model)
wide = torch.hub._load_local(repo, "tinynet_wide", num_classes=5)
print("wide output", tuple(wide(x).shape), "params", sum(p.numel() for p in wide.parameters()))
again = logged(torch.hub.load, repo, "tinynet", source="local", pretrained=True, progress=False)
print("second load from cache equal:", all(torch.equal(a, b) for a, b in zip(again.parameters(), model.parameters())))
print("sys.path restored:", sys.path == path_before)

try:
    torch.hub.load(repo, "resnet1000", source="local")
except RuntimeError as e:
    print("RuntimeError:", str(e).replace(repo, "<repo>"))

sd = logged(torch.hub.load_state_dict_from_url, url, model_dir=os.path.join(work, "elsewhere"), file_name="renamed.pth",
                                        map_location="cpu", weights_only=True)
print("file_name honoured:", os.listdir(os.path.join(work, "elsewhere")), sorted(sd)[:2])
dst = os.path.join(work, "copy.pth")
torch.hub.download_url_to_file(url, dst, hash_prefix=digest[:10], progress=False)
print("download with hash prefix ok:", os.path.getsize(dst) == os.path.getsize(named))
try:
    torch.hub.download_url_to_file(url, os.path.join(work, "bad.pth"), hash_prefix="deadbeef", progress=False)
except RuntimeError as e:
    print("RuntimeError:", str(e).replace(digest, "<digest>"))
print("bad download left behind:", os.path.exists(os.path.join(work, "bad.pth")))
torch.hub.set_dir(previous_hub_dir)
print("hub dir restored:", torch.hub.get_dir() == previous_hub_dir)
