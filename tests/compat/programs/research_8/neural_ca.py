"""Growing neural cellular automata the way the PyTorch ports of Mordvintsev et al. write
them: a fixed Sobel/identity perception kernel applied as a depthwise ``F.conv2d`` with
``groups`` and circular ``F.pad``, a 1x1-conv update rule whose last layer starts at zero,
stochastic per-cell fire masks, the alive mask from ``F.max_pool2d`` on the alpha channel,
a sample pool with loss-sorted reseeding and damage, per-parameter gradient normalisation
before ``optimizer.step``, ``MultiStepLR``; deterministic flags set the way such repos set
them, a guarded ``torch.compile``, and RGBA frames converted to uint8 images."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
torch.manual_seed(42)
np.random.seed(42)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
torch.use_deterministic_algorithms(True, warn_only=True)
print("deterministic:", torch.are_deterministic_algorithms_enabled(),
      torch.is_deterministic_algorithms_warn_only_enabled())

CHANNEL_N = 8
TARGET_PADDING = 2
TARGET_SIZE = 10
BATCH_SIZE = 4
POOL_SIZE = 16
CELL_FIRE_RATE = 0.5
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


def make_target():
    yy, xx = torch.meshgrid(torch.arange(TARGET_SIZE), torch.arange(TARGET_SIZE), indexing="ij")
    r = ((yy - 4.5) ** 2 + (xx - 4.5) ** 2).float().sqrt()
    alpha = (r < 4).float()
    rgb = torch.stack([alpha * (xx.float() / 9), alpha * (yy.float() / 9), alpha * 0.5])
    img = torch.cat([rgb, alpha[None]], 0)
    return F.pad(img, [TARGET_PADDING] * 4)


def to_rgba(x):
    return x[..., :4, :, :]


def to_alpha(x):
    return torch.clamp(x[:, 3:4, :, :], 0.0, 1.0)


def to_rgb(x):
    rgb, a = x[:, :3, :, :], to_alpha(x)
    return 1.0 - a + rgb


class CAModel(nn.Module):
    def __init__(self, channel_n, fire_rate, device, hidden_size=32):
        super().__init__()
        self.device = device
        self.channel_n = channel_n
        self.fire_rate = fire_rate
        self.fc0 = nn.Conv2d(channel_n * 3, hidden_size, kernel_size=1)
        self.fc1 = nn.Conv2d(hidden_size, channel_n, kernel_size=1, bias=False)
        with torch.no_grad():
            self.fc1.weight.zero_()
        ident = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
        sobel_x = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 8.0
        kernel = torch.stack([ident, sobel_x, sobel_x.T])  # 3, 3, 3
        kernel = kernel.repeat(channel_n, 1, 1)[:, None]    # 3*C, 1, 3, 3
        self.register_buffer("kernel", kernel)
        self.to(self.device)

    def alive(self, x):
        return F.max_pool2d(x[:, 3:4, :, :], kernel_size=3, stride=1, padding=1) > 0.1

    def perceive(self, x, angle):
        c, s = np.cos(angle * np.pi / 180), np.sin(angle * np.pi / 180)
        k = self.kernel.clone()
        dx, dy = k[1::3].clone(), k[2::3].clone()
        k[1::3] = c * dx - s * dy
        k[2::3] = s * dx + c * dy
        x = F.pad(x, (1, 1, 1, 1), mode="circular")
        return F.conv2d(x, k, groups=self.channel_n)

    def update(self, x, fire_rate, angle):
        pre_life_mask = self.alive(x)
        dx = self.perceive(x, angle)
        dx = self.fc1(F.relu(self.fc0(dx)))
        if fire_rate is None:
            fire_rate = self.fire_rate
        stochastic = torch.rand([dx.size(0), 1, dx.size(2), dx.size(3)], device=self.device)
        stochastic = (stochastic <= fire_rate).float()
        x = x + dx * stochastic
        post_life_mask = self.alive(x)
        life_mask = (pre_life_mask & post_life_mask).float()
        return x * life_mask

    def forward(self, x, steps=1, fire_rate=None, angle=0.0):
        for step in range(steps):
            x = self.update(x, fire_rate, angle)
        return x


class SamplePool:
    def __init__(self, *, _parent=None, _parent_idx=None, **slots):
        self._parent = _parent
        self._parent_idx = _parent_idx
        self._slot_names = slots.keys()
        self._size = None
        for k, v in slots.items():
            if self._size is None:
                self._size = len(v)
            assert self._size == len(v)
            setattr(self, k, np.asarray(v))

    def sample(self, n):
        idx = np.random.choice(self._size, n, False)
        batch = {k: getattr(self, k)[idx] for k in self._slot_names}
        batch = SamplePool(**batch, _parent=self, _parent_idx=idx)
        return batch

    def commit(self):
        for k in self._slot_names:
            getattr(self._parent, k)[self._parent_idx] = getattr(self, k)


def make_circle_masks(n, h, w):
    x = np.linspace(-1.0, 1.0, w)[None, None, :]
    y = np.linspace(-1.0, 1.0, h)[None, :, None]
    center = np.random.random([2, n, 1, 1]) * 1.0 - 0.5
    r = np.random.random([n, 1, 1]) * 0.3 + 0.1
    x, y = (x - center[0]) / r, (y - center[1]) / r
    return (x * x + y * y < 1.0).astype(np.float32)


target_img = make_target()
p = TARGET_PADDING
h, w = target_img.shape[1:]
pad_target = target_img[None].repeat(BATCH_SIZE, 1, 1, 1).to(device)
seed = np.zeros([CHANNEL_N, h, w], np.float32)
seed[3:, h // 2, w // 2] = 1.0
pool = SamplePool(x=np.repeat(seed[None, ...], POOL_SIZE, 0))

ca = CAModel(CHANNEL_N, CELL_FIRE_RATE, device)
if hasattr(torch, "compile") and torch.cuda.is_available():
    ca = torch.compile(ca)
print(ca)
print("kernel:", tuple(ca.kernel.shape), "perception of the seed:",
      ca.perceive(torch.from_numpy(seed[None]), 0.0)[0, 9:12, h // 2, w // 2])
optimizer = torch.optim.Adam(ca.parameters(), lr=2e-3, betas=(0.5, 0.5))
scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, [6, 10], 0.3)


def loss_f(x, target):
    return torch.mean(torch.pow(x[..., :4, :, :] - target, 2), [-3, -2, -1])


def train(x, target, steps, optimizer, scheduler):
    x = ca(x, steps=steps)
    loss = F.mse_loss(x[:, :4, :, :], target)
    optimizer.zero_grad()
    loss.backward()
    for param in ca.parameters():
        param.grad.data = param.grad.data / (param.grad.data.norm() + 1e-8)
    optimizer.step()
    scheduler.step()
    return x, loss


for i in range(12):
    batch = pool.sample(BATCH_SIZE)
    x0 = torch.from_numpy(batch.x.astype(np.float32)).to(device)
    loss_rank = loss_f(x0, pad_target).detach().cpu().numpy().argsort()[::-1]
    x0 = batch.x[loss_rank.copy()]
    x0[:1] = seed
    if i >= 6:
        damage = 1.0 - make_circle_masks(1, h, w)[:, None, ...]
        x0[-1:] *= damage
    x0 = torch.from_numpy(x0.astype(np.float32)).to(device)

    steps = np.random.randint(8, 12)
    x, loss = train(x0, pad_target, steps, optimizer, scheduler)
    batch.x[:] = x.detach().cpu().numpy()
    batch.commit()
    print(f"{i} steps {steps} loss {loss.item():.6f} log10 {np.log10(loss.item()):.4f} "
          f"lr {scheduler.get_last_lr()[0]:.6f} alive {int(ca.alive(x).sum())}")

with torch.no_grad():
    x = torch.from_numpy(seed[None]).to(device)
    frames = []
    for k in range(3):
        x = ca(x, steps=5, angle=45.0 * k)
        frames.append(x)
    rgb = to_rgb(torch.cat(frames)).clamp(0, 1)
    img8 = (rgb.permute(0, 2, 3, 1) * 255).to(torch.uint8)
print("frames:", tuple(img8.shape), img8.dtype, "checksum", int(img8.long().sum()))
print("alpha:", to_alpha(frames[-1])[0, 0, h // 2, w // 2 - 2: w // 2 + 3])
print("pool mean", float(pool.x.mean()))
