"""A tiny NeRF the way nerf-pytorch writes it: an Embedder of sin/cos frequency bands, an
MLP with a skip connection and view-direction branch, rays from a pinhole camera, stratified
samples along each ray, raw2outputs (alpha compositing through an exclusive cumprod),
hierarchical sampling by inverse-CDF with torch.searchsorted, trained with Adam and an
exponential learning-rate decay set by hand in param_groups."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Embedder:
    def __init__(self, multires, include_input=True):
        self.freq_bands = 2.0 ** torch.linspace(0.0, multires - 1, steps=multires)
        self.include_input = include_input
        self.out_dim = 3 * (2 * multires + int(include_input))

    def embed(self, x):
        outs = [x] if self.include_input else []
        for freq in self.freq_bands:
            for fn in (torch.sin, torch.cos):
                outs.append(fn(x * freq))
        return torch.cat(outs, -1)


class NeRF(nn.Module):
    def __init__(self, D=4, W=32, input_ch=27, input_ch_views=15, skips=(2,)):
        super().__init__()
        self.skips = skips
        self.input_ch, self.input_ch_views = input_ch, input_ch_views
        self.pts_linears = nn.ModuleList(
            [nn.Linear(input_ch, W)] +
            [nn.Linear(W + input_ch, W) if i in skips else nn.Linear(W, W) for i in range(1, D)])
        self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
        self.feature_linear = nn.Linear(W, W)
        self.alpha_linear = nn.Linear(W, 1)
        self.rgb_linear = nn.Linear(W // 2, 3)

    def forward(self, x):
        input_pts, input_views = torch.split(x, [self.input_ch, self.input_ch_views], dim=-1)
        h = input_pts
        for i, layer in enumerate(self.pts_linears):
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
            h = F.relu(layer(h))
        alpha = self.alpha_linear(h)
        h = torch.cat([self.feature_linear(h), input_views], -1)
        for layer in self.views_linears:
            h = F.relu(layer(h))
        return torch.cat([self.rgb_linear(h), alpha], -1)


def get_rays(H, W, focal, c2w):
    i, j = torch.meshgrid(torch.linspace(0, W - 1, W), torch.linspace(0, H - 1, H), indexing="ij")
    i, j = i.t(), j.t()
    dirs = torch.stack([(i - W * .5) / focal, -(j - H * .5) / focal, -torch.ones_like(i)], -1)
    rays_d = torch.sum(dirs[..., None, :] * c2w[:3, :3], -1)
    rays_o = c2w[:3, -1].expand(rays_d.shape)
    return rays_o, rays_d


def raw2outputs(raw, z_vals, rays_d, raw_noise_std=0.0):
    raw2alpha = lambda raw, dists, act_fn=F.relu: 1. - torch.exp(-act_fn(raw) * dists)  # noqa: E731
    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = torch.cat([dists, torch.tensor([1e10]).expand(dists[..., :1].shape)], -1)
    dists = dists * torch.norm(rays_d[..., None, :], dim=-1)
    rgb = torch.sigmoid(raw[..., :3])
    noise = torch.randn(raw[..., 3].shape) * raw_noise_std if raw_noise_std > 0 else 0.
    alpha = raw2alpha(raw[..., 3] + noise, dists)
    weights = alpha * torch.cumprod(
        torch.cat([torch.ones((alpha.shape[0], 1)), 1. - alpha + 1e-10], -1), -1)[:, :-1]
    rgb_map = torch.sum(weights[..., None] * rgb, -2)
    depth_map = torch.sum(weights * z_vals, -1)
    disp_map = 1. / torch.max(1e-10 * torch.ones_like(depth_map), depth_map / torch.sum(weights, -1))
    acc_map = torch.sum(weights, -1)
    return rgb_map, disp_map, acc_map, weights, depth_map


def sample_pdf(bins, weights, N_samples, det=False):
    weights = weights + 1e-5
    pdf = weights / torch.sum(weights, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)
    if det:
        u = torch.linspace(0., 1., steps=N_samples).expand(list(cdf.shape[:-1]) + [N_samples])
    else:
        u = torch.rand(list(cdf.shape[:-1]) + [N_samples])
    u = u.contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.max(torch.zeros_like(inds - 1), inds - 1)
    above = torch.min((cdf.shape[-1] - 1) * torch.ones_like(inds), inds)
    inds_g = torch.stack([below, above], -1)
    matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = torch.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
    bins_g = torch.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    t = (u - cdf_g[..., 0]) / denom
    return bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])


embed_fn, embeddirs_fn = Embedder(4), Embedder(2)
coarse = NeRF(input_ch=embed_fn.out_dim, input_ch_views=embeddirs_fn.out_dim)
fine = NeRF(input_ch=embed_fn.out_dim, input_ch_views=embeddirs_fn.out_dim)
grad_vars = list(coarse.parameters()) + list(fine.parameters())
optimizer = torch.optim.Adam(params=grad_vars, lr=5e-3, betas=(0.9, 0.999))


def run_network(inputs, viewdirs, fn):
    inputs_flat = torch.reshape(inputs, [-1, inputs.shape[-1]])
    embedded = embed_fn.embed(inputs_flat)
    input_dirs = viewdirs[:, None].expand(inputs.shape)
    embedded = torch.cat([embedded, embeddirs_fn.embed(torch.reshape(input_dirs, [-1, 3]))], -1)
    out = fn(embedded)
    return torch.reshape(out, list(inputs.shape[:-1]) + [out.shape[-1]])


def render_rays(rays_o, rays_d, near=2., far=6., N_samples=16, N_importance=16, perturb=1.):
    viewdirs = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
    t_vals = torch.linspace(0., 1., steps=N_samples)
    z_vals = near * (1. - t_vals) + far * t_vals
    z_vals = z_vals.expand([rays_o.shape[0], N_samples])
    if perturb > 0.:
        mids = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
        upper = torch.cat([mids, z_vals[..., -1:]], -1)
        lower = torch.cat([z_vals[..., :1], mids], -1)
        z_vals = lower + (upper - lower) * torch.rand(z_vals.shape)
    pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
    raw = run_network(pts, viewdirs, coarse)
    rgb0, disp0, acc0, weights, _ = raw2outputs(raw, z_vals, rays_d)
    z_vals_mid = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
    z_samples = sample_pdf(z_vals_mid, weights[..., 1:-1], N_importance, det=(perturb == 0.))
    z_samples = z_samples.detach()
    z_vals, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)
    pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
    raw = run_network(pts, viewdirs, fine)
    rgb, disp, acc, _, depth = raw2outputs(raw, z_vals, rays_d)
    return {"rgb_map": rgb, "disp_map": disp, "acc_map": acc, "rgb0": rgb0, "depth": depth}


img2mse = lambda x, y: torch.mean((x - y) ** 2)  # noqa: E731
mse2psnr = lambda x: -10. * torch.log(x) / torch.log(torch.tensor([10.]))  # noqa: E731

H = W = 8
focal = 10.0
c2w = torch.tensor([[1., 0., 0., 0.], [0., 1., 0., 0.], [0., 0., 1., 4.]])
rays_o, rays_d = get_rays(H, W, focal, c2w)
rays_o, rays_d = rays_o.reshape(-1, 3), rays_d.reshape(-1, 3)
target = torch.sigmoid(torch.randn(H * W, 3))
lrate, lrate_decay = 5e-3, 50
for global_step in range(12):
    select = torch.randperm(H * W)[:32]
    out = render_rays(rays_o[select], rays_d[select])
    optimizer.zero_grad()
    img_loss = img2mse(out["rgb_map"], target[select])
    loss = img_loss + img2mse(out["rgb0"], target[select])
    psnr = mse2psnr(img_loss)
    loss.backward()
    optimizer.step()
    new_lrate = lrate * (0.1 ** (global_step / lrate_decay))
    for param_group in optimizer.param_groups:
        param_group["lr"] = new_lrate
    if global_step % 3 == 0:
        print(f"[TRAIN] Iter: {global_step} Loss: {loss.item():.6f}  PSNR: {psnr.item():.5f}")

with torch.no_grad():
    out = render_rays(rays_o, rays_d, perturb=0.)
print("render", tuple(out["rgb_map"].shape), f"{out['rgb_map'].mean().item():.6f}",
      f"{out['depth'].mean().item():.5f}", f"{out['acc_map'].mean().item():.6f}")
