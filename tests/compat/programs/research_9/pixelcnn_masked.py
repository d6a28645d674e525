"""PixelCNN the way the classic PyTorch ports (jzbontar/pixelcnn-pytorch, the gated PixelCNN
repositories) write it: a ``MaskedConv2d`` subclass of ``nn.Conv2d`` with a registered
``mask`` buffer filled by slicing (type 'A' hides the centre pixel, type 'B' keeps it) and
``self.weight.data *= self.mask`` before each forward, ``nn.Sequential`` of masked convs with
``BatchNorm2d``, a 256-way (here 4-level) softmax over pixel values trained by
``F.cross_entropy`` on quantised images, the receptive field checked by the gradient of one
output pixel, the negative log-likelihood in bits per dimension, and autoregressive
sampling pixel by pixel with ``torch.multinomial`` under ``torch.no_grad``; checkpoints by
``torch.save(net.state_dict())``."""
import time

import torch
import torch.nn.functional as F
from torch import nn

LEVELS = 4


class MaskedConv2d(nn.Conv2d):
    def __init__(self, mask_type, *args, **kwargs):
        super(MaskedConv2d, self).__init__(*args, **kwargs)
        assert mask_type in {"A", "B"}
        self.register_buffer("mask", self.weight.data.clone())
        _, _, kH, kW = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kH // 2, kW // 2 + (mask_type == "B"):] = 0
        self.mask[:, :, kH // 2 + 1:] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super(MaskedConv2d, self).forward(x)


torch.manual_seed(0)
fm = 16
net = nn.Sequential(
    MaskedConv2d("A", 1, fm, 5, 1, 2, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
    MaskedConv2d("B", fm, fm, 3, 1, 1, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
    MaskedConv2d("B", fm, fm, 3, 1, 1, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
    nn.Conv2d(fm, LEVELS, 1))
print(net[0])
print("mask A centre row:", net[0].mask[0, 0, 2].tolist(), "mask B centre row:",
      net[3].mask[0, 0, 1].tolist())

# receptive field: the logits at (3, 3) must not see pixels at or after (3, 3)
net.eval()
x = torch.rand(1, 1, 8, 8, requires_grad=True)
net(x)[0, :, 3, 3].sum().backward()
seen = (x.grad[0, 0] != 0)
print("sees future pixels:", bool(seen[3, 3:].any() or seen[4:].any()),
      "sees past rows:", bool(seen[:3].any()))
net.train()


def make_images(n, g):
    # diagonal stripes with noise, quantised to LEVELS values
    i = torch.arange(8)
    base = ((i[:, None] + i[None, :]) % 4).float() / 3
    phase = torch.randint(0, 4, (n, 1, 1), generator=g).float() / 3
    img = (base[None] + phase) % 1.0
    img = img + 0.1 * torch.rand(n, 8, 8, generator=g)
    return (img.clamp(0, 0.999) * LEVELS).long().unsqueeze(1)


g = torch.Generator().manual_seed(1)
tr = make_images(32, g)
te = make_images(8, g)
optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
for epoch in range(4):
    err_tr = []
    time_tr = time.time()
    net.train(True)
    for i in range(0, 32, 8):
        target = tr[i:i + 8]
        inp = target.float() / (LEVELS - 1)
        loss = F.cross_entropy(net(inp), target[:, 0])
        err_tr.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    time_tr = time.time() - time_tr
    with torch.no_grad():
        net.train(False)
        target = te
        loss = F.cross_entropy(net(target.float() / (LEVELS - 1)), target[:, 0])
    bpd = loss.item() / torch.log(torch.tensor(2.0)).item()
    print(f"epoch={epoch}; nll_tr={sum(err_tr) / len(err_tr):.5f}; nll_te={loss.item():.5f}; "
          f"bits/dim={bpd:.5f}")
    torch.save(net.state_dict(), "pixelcnn.pt")
state = torch.load("pixelcnn.pt")
print("checkpoint keys with masks:", sorted(k for k in state if k.endswith("mask")))
print("weights stay masked:", bool((net[0].weight.data * (1 - net[0].mask) == 0).all()))

torch.manual_seed(5)
sample = torch.zeros(4, 1, 8, 8)
net.train(False)
with torch.no_grad():
    for i in range(8):
        for j in range(8):
            out = net(sample)
            probs = F.softmax(out[:, :, i, j], dim=1)
            sample[:, :, i, j] = torch.multinomial(probs, 1).float() / (LEVELS - 1)
print("samples:", tuple(sample.shape), (sample[0, 0, :2] * (LEVELS - 1)).long().tolist())
print(f"sample mean {sample.mean().item():.5f}")
