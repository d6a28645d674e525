"""Speech separation the way kaituoxu/Conv-TasNet and asteroid write it: a learned
``Conv1d`` encoder with ReLU, a temporal convolutional separator of 1x1-conv / ``PReLU`` /
global layer norm (``gLN`` by hand and ``GroupNorm(1, C)`` checked equal) / dilated depthwise
``Conv1d`` blocks with residual and skip paths, sigmoid masks, an overlap-add decoder by
``ConvTranspose1d``, the scale-invariant SNR with zero-mean signals, utterance-level
permutation invariant training over ``itertools.permutations`` (``torch.einsum`` of
one-hot permutation matrices as upstream does), the reordered estimates, ``clip_grad_norm_``
and ``ReduceLROnPlateau`` driven by validation SI-SNR, and a checkpoint of ``package``
style ``serialize``/``load_model_from_package``."""
import math
from itertools import permutations

import torch
import torch.nn as nn
import torch.nn.functional as F

EPS = 1e-8
torch.manual_seed(7)


class Encoder(nn.Module):
    def __init__(self, L, N):
        super(Encoder, self).__init__()
        self.L, self.N = L, N
        self.conv1d_U = nn.Conv1d(1, N, kernel_size=L, stride=L // 2, bias=False)

    def forward(self, mixture):
        mixture = torch.unsqueeze(mixture, 1)
        return F.relu(self.conv1d_U(mixture))


class Decoder(nn.Module):
    def __init__(self, N, L):
        super(Decoder, self).__init__()
        self.basis = nn.ConvTranspose1d(N, 1, kernel_size=L, stride=L // 2, bias=False)

    def forward(self, mixture_w, est_mask):
        source_w = torch.unsqueeze(mixture_w, 1) * est_mask  # [M, C, N, K]
        M, C, N, K = source_w.size()
        return self.basis(source_w.view(M * C, N, K)).view(M, C, -1)


class GlobalLayerNorm(nn.Module):
    def __init__(self, channel_size):
        super(GlobalLayerNorm, self).__init__()
        self.gamma = nn.Parameter(torch.Tensor(1, channel_size, 1))
        self.beta = nn.Parameter(torch.Tensor(1, channel_size, 1))
        self.reset_parameters()

    def reset_parameters(self):
        self.gamma.data.fill_(1)
        self.beta.data.zero_()

    def forward(self, y):
        mean = y.mean(dim=1, keepdim=True).mean(dim=2, keepdim=True)
        var = (torch.pow(y - mean, 2)).mean(dim=1, keepdim=True).mean(dim=2, keepdim=True)
        return self.gamma * (y - mean) / torch.pow(var + EPS, 0.5) + self.beta


class TemporalBlock(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, dilation):
        super(TemporalBlock, self).__init__()
        padding = (kernel_size - 1) * dilation // 2
        self.net = nn.Sequential(
            nn.Conv1d(in_channels, out_channels, 1, bias=False), nn.PReLU(),
            GlobalLayerNorm(out_channels),
            nn.Conv1d(out_channels, out_channels, kernel_size, padding=padding,
                      dilation=dilation, groups=out_channels, bias=False),
            nn.PReLU(), GlobalLayerNorm(out_channels),
            nn.Conv1d(out_channels, in_channels, 1, bias=False))

    def forward(self, x):
        return x + self.net(x)


class TemporalConvNet(nn.Module):
    def __init__(self, N, B, H, P, X, R, C):
        super(TemporalConvNet, self).__init__()
        self.C = C
        layer_norm = nn.GroupNorm(1, N, eps=EPS)
        bottleneck_conv1x1 = nn.Conv1d(N, B, 1, bias=False)
        repeats = [nn.Sequential(*[TemporalBlock(B, H, P, 2 ** x) for x in range(X)])
                   for r in range(R)]
        mask_conv1x1 = nn.Conv1d(B, C * N, 1, bias=False)
        self.network = nn.Sequential(layer_norm, bottleneck_conv1x1, nn.Sequential(*repeats),
                                     mask_conv1x1)

    def forward(self, mixture_w):
        M, N, K = mixture_w.size()
        score = self.network(mixture_w).view(M, self.C, N, K)
        return torch.sigmoid(score)


class ConvTasNet(nn.Module):
    def __init__(self, N, L, B, H, P, X, R, C):
        super(ConvTasNet, self).__init__()
        self.N, self.L, self.B, self.H, self.P, self.X, self.R, self.C = N, L, B, H, P, X, R, C
        self.encoder = Encoder(L, N)
        self.separator = TemporalConvNet(N, B, H, P, X, R, C)
        self.decoder = Decoder(N, L)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_normal_(p)

    def forward(self, mixture):
        mixture_w = self.encoder(mixture)
        est_mask = self.separator(mixture_w)
        est_source = self.decoder(mixture_w, est_mask)
        T_origin, T_conv = mixture.size(-1), est_source.size(-1)
        return F.pad(est_source, (0, T_origin - T_conv))

    @classmethod
    def load_model_from_package(cls, package):
        model = cls(package["N"], package["L"], package["B"], package["H"], package["P"],
                    package["X"], package["R"], package["C"])
        model.load_state_dict(package["state_dict"])
        return model

    @staticmethod
    def serialize(model, optimizer, epoch, tr_loss=None, cv_loss=None):
        package = {k: getattr(model, k) for k in "NLBHPXRC"}
        package.update({"state_dict": model.state_dict(), "optim_dict": optimizer.state_dict(),
                        "epoch": epoch})
        if tr_loss is not None:
            package["tr_loss"], package["cv_loss"] = tr_loss, cv_loss
        return package


def cal_si_snr_with_pit(source, estimate_source, source_lengths):
    B, C, T = source.size()
    mask = (torch.arange(T)[None, :] < source_lengths[:, None]).unsqueeze(1).float()
    estimate_source = estimate_source * mask
    num_samples = source_lengths.view(-1, 1, 1).float()
    mean_target = torch.sum(source, dim=2, keepdim=True) / num_samples
    mean_estimate = torch.sum(estimate_source, dim=2, keepdim=True) / num_samples
    zero_mean_target = (source - mean_target) * mask
    zero_mean_estimate = (estimate_source - mean_estimate) * mask
    s_target = torch.unsqueeze(zero_mean_target, dim=1)
    s_estimate = torch.unsqueeze(zero_mean_estimate, dim=2)
    pair_wise_dot = torch.sum(s_estimate * s_target, dim=3, keepdim=True)
    s_target_energy = torch.sum(s_target ** 2, dim=3, keepdim=True) + EPS
    pair_wise_proj = pair_wise_dot * s_target / s_target_energy
    e_noise = s_estimate - pair_wise_proj
    pair_wise_si_snr = torch.sum(pair_wise_proj ** 2, dim=3) / (torch.sum(e_noise ** 2, dim=3) + EPS)
    pair_wise_si_snr = 10 * torch.log10(pair_wise_si_snr + EPS)
    perms = source.new_tensor(list(permutations(range(C))), dtype=torch.long)
    index = torch.unsqueeze(perms, 2)
    perms_one_hot = source.new_zeros((*perms.size(), C)).scatter_(2, index, 1)
    snr_set = torch.einsum("bij,pij->bp", [pair_wise_si_snr, perms_one_hot])
    max_snr_idx = torch.argmax(snr_set, dim=1)
    max_snr, _ = torch.max(snr_set, dim=1, keepdim=True)
    max_snr /= C
    return max_snr, perms, max_snr_idx


def reorder_source(source, perms, max_snr_idx):
    max_snr_perm = torch.index_select(perms, dim=0, index=max_snr_idx)
    reorder = torch.zeros_like(source)
    for b, c in enumerate(max_snr_perm):
        for c_ in range(source.size(1)):
            reorder[b, c_] = source[b, c[c_]]
    return reorder


def make_batch(n, T, g):
    t = torch.arange(T).float()
    f1 = 0.05 + 0.2 * torch.rand(n, 1, generator=g)
    f2 = 0.02 + 0.1 * torch.rand(n, 1, generator=g)
    s1 = torch.sin(2 * math.pi * f1 * t)
    s2 = torch.sign(torch.sin(2 * math.pi * f2 * t)) * 0.5
    sources = torch.stack([s1, s2], 1)
    lengths = torch.full((n,), T, dtype=torch.long)
    lengths[0] = T - 16
    return sources.sum(1), sources, lengths


g = torch.Generator().manual_seed(0)
model = ConvTasNet(N=16, L=8, B=8, H=16, P=3, X=3, R=1, C=2)
print(model.separator.network[2][0][1])
print("params", sum(p.numel() for p in model.parameters() if p.requires_grad))
gln, gn = GlobalLayerNorm(16), nn.GroupNorm(1, 16, eps=EPS)
x = torch.randn(2, 16, 30)
print("gLN == GroupNorm(1, C):", torch.allclose(gln(x), gn(x), atol=1e-5))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="max", factor=0.5,
                                                       patience=0)
cv_mix, cv_src, cv_len = make_batch(4, 128, g)
for epoch in range(3):
    model.train()
    tr = 0.0
    for it in range(3):
        mix, src, lens = make_batch(4, 128, g)
        est = model(mix)
        max_snr, perms, max_snr_idx = cal_si_snr_with_pit(src, est, lens)
        loss = 0 - torch.mean(max_snr)
        optimizer.zero_grad()
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        tr += loss.item()
    model.eval()
    with torch.no_grad():
        est = model(cv_mix)
        cv_snr, perms, idx = cal_si_snr_with_pit(cv_src, est, cv_len)
    scheduler.step(cv_snr.mean().item())
    print(f"epoch {epoch} train loss {tr / 3:.4f} grad norm {gnorm.item():.4f} "
          f"cv si-snr {cv_snr.mean().item():.4f} perm {idx.tolist()} "
          f"lr {optimizer.param_groups[0]['lr']:.5f}")
reordered = reorder_source(est, perms, idx)
print(perms.tolist(), tuple(reordered.shape), reordered[0, :, :4])
package = ConvTasNet.serialize(model, optimizer, 3, tr_loss=torch.tensor([tr]), cv_loss=cv_snr)
torch.save(package, "final.pth.tar")
loaded = ConvTasNet.load_model_from_package(torch.load("final.pth.tar"))
loaded.eval()
with torch.no_grad():
    print("reload equal", torch.equal(loaded(cv_mix), model(cv_mix)),
          package["optim_dict"]["param_groups"][0]["lr"])
