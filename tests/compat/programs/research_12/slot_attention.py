"""Object-centric learning the way lucidrains/slot-attention and the google-research port
write Slot Attention: slots drawn from a learned Gaussian (``mu + sigma * randn``),
iterative attention with ``softmax`` over the slot axis and a weighted mean over inputs,
a ``GRUCell`` update plus residual MLP, a ``SoftPositionEmbed`` over a ``meshgrid`` built
with ``indexing="ij"``, a spatial-broadcast decoder whose per-slot alpha masks are
``softmax``-ed over slots, and a warm-up times exponential-decay ``LambdaLR``."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import init

torch.manual_seed(0)
H = W = 8


def build_grid(resolution):
    ranges = [torch.linspace(0.0, 1.0, steps=res) for res in resolution]
    grid = torch.meshgrid(*ranges, indexing="ij")
    grid = torch.stack(grid, dim=-1).reshape(resolution[0], resolution[1], -1).unsqueeze(0)
    return torch.cat([grid, 1.0 - grid], dim=-1)


class SoftPositionEmbed(nn.Module):
    def __init__(self, hidden_size, resolution):
        super().__init__()
        self.dense = nn.Linear(4, hidden_size)
        self.register_buffer("grid", build_grid(resolution))

    def forward(self, inputs):
        return inputs + self.dense(self.grid)


class SlotAttention(nn.Module):
    def __init__(self, num_slots, dim, iters=3, eps=1e-8, hidden_dim=32):
        super().__init__()
        self.num_slots, self.iters, self.eps = num_slots, iters, eps
        self.scale = dim ** -0.5
        self.slots_mu = nn.Parameter(torch.randn(1, 1, dim))
        self.slots_logsigma = nn.Parameter(torch.zeros(1, 1, dim))
        init.xavier_uniform_(self.slots_logsigma)
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)
        self.gru = nn.GRUCell(dim, dim)
        hidden_dim = max(dim, hidden_dim)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden_dim), nn.ReLU(inplace=True), nn.Linear(hidden_dim, dim))
        self.norm_input = nn.LayerNorm(dim)
        self.norm_slots = nn.LayerNorm(dim)
        self.norm_pre_ff = nn.LayerNorm(dim)

    def forward(self, inputs, num_slots=None):
        b, n, d, device, dtype = *inputs.shape, inputs.device, inputs.dtype
        n_s = num_slots if num_slots is not None else self.num_slots
        mu = self.slots_mu.expand(b, n_s, -1)
        sigma = self.slots_logsigma.exp().expand(b, n_s, -1)
        slots = mu + sigma * torch.randn(mu.shape, device=device, dtype=dtype)
        inputs = self.norm_input(inputs)
        k, v = self.to_k(inputs), self.to_v(inputs)
        for _ in range(self.iters):
            slots_prev = slots
            slots = self.norm_slots(slots)
            q = self.to_q(slots)
            dots = torch.einsum("bid,bjd->bij", q, k) * self.scale
            attn = dots.softmax(dim=1) + self.eps
            attn = attn / attn.sum(dim=-1, keepdim=True)
            updates = torch.einsum("bjd,bij->bid", v, attn)
            slots = self.gru(updates.reshape(-1, d), slots_prev.reshape(-1, d))
            slots = slots.reshape(b, -1, d)
            slots = slots + self.mlp(self.norm_pre_ff(slots))
        return slots, attn


class SlotAutoEncoder(nn.Module):
    def __init__(self, num_slots=3, dim=16):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, dim, 3, padding=1), nn.ReLU(), nn.Conv2d(dim, dim, 3, padding=1))
        self.enc_pos = SoftPositionEmbed(dim, (H, W))
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.slot_attention = SlotAttention(num_slots, dim, iters=3)
        self.dec_pos = SoftPositionEmbed(dim, (H, W))
        self.decoder = nn.Sequential(nn.Conv2d(dim, dim, 1), nn.ReLU(), nn.Conv2d(dim, 4, 1))

    def forward(self, image):
        x = self.encoder(image).permute(0, 2, 3, 1)
        x = self.enc_pos(x)
        x = torch.flatten(x, 1, 2)
        x = self.mlp(nn.LayerNorm(x.shape[1:], elementwise_affine=False)(x))
        slots, attn = self.slot_attention(x)
        b, k, d = slots.shape
        x = slots.reshape(-1, 1, 1, d).repeat(1, H, W, 1)
        x = self.dec_pos(x).permute(0, 3, 1, 2)
        x = self.decoder(x).reshape(b, k, 4, H, W)
        recons, masks = x.split([3, 1], dim=2)
        masks = F.softmax(masks, dim=1)
        recon = (recons * masks).sum(dim=1)
        return recon, recons, masks, slots, attn


def make_scene(n):
    img = torch.zeros(n, 3, H, W)
    for i in range(n):
        for _ in range(2):
            color = torch.rand(3)
            r, c = torch.randint(0, H - 3, (2,)).tolist()
            img[i, :, r:r + 3, c:c + 3] = color[:, None, None]
    return img


data = make_scene(16)
model = SlotAutoEncoder()
print(model.slot_attention)
print("grid", tuple(model.enc_pos.grid.shape), model.enc_pos.grid[0, 1, 2].tolist())
opt = torch.optim.Adam(model.parameters(), lr=4e-3)
warmup, decay_steps = 3, 20
sched = torch.optim.lr_scheduler.LambdaLR(
    opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 ** (s / decay_steps))
for step in range(12):
    batch = data[(step * 4) % 16:(step * 4) % 16 + 4]
    recon, recons, masks, slots, attn = model(batch)
    loss = F.mse_loss(recon, batch)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    if step % 3 == 0:
        print(f"step {step} loss {loss.item():.5f} lr {sched.get_last_lr()[0]:.5f} "
              f"mask-sum {masks.sum(1).mean().item():.4f} attn-max {attn.max().item():.4f}")
model.eval()
with torch.no_grad():
    torch.manual_seed(5)
    recon, _, masks, slots, attn = model(data[:2])
    print("eval mse", round(F.mse_loss(recon, data[:2]).item(), 5), "slots", tuple(slots.shape))
    print("mask entropy", (-(masks * masks.clamp_min(1e-8).log()).sum(1)).mean().item())
    more, _ = model.slot_attention(torch.randn(2, 10, 16), num_slots=5)
    print("5 slots", tuple(more.shape), more.std().item())
