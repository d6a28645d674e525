"""Masked autoencoders the way facebookresearch/mae's ``models_mae.py`` writes them (our own
code after its pattern): fixed 2-D sin-cos position embeddings built in NumPy and copied in
with ``torch.from_numpy(...).float().unsqueeze(0)``, ``patchify``/``unpatchify`` by
``reshape`` and ``torch.einsum('nchpwq->nhwpqc')``, per-sample random masking by
``argsort`` of uniform noise with ``ids_restore`` and ``torch.gather``, mask tokens
scattered back by gathering, a normalised-pixel loss on masked patches only, the
layer-wise ``param_groups_lrd``-style weight-decay split, a half-cycle cosine warmup
schedule set by hand each iteration, and ``misc.save_model``-style checkpoints."""
import math
import os

import numpy as np
import torch
import torch.nn as nn


def get_1d_sincos_pos_embed_from_grid(embed_dim, pos):
    omega = np.arange(embed_dim // 2, dtype=np.float64)
    omega /= embed_dim / 2.0
    omega = 1.0 / 10000 ** omega
    pos = pos.reshape(-1)
    out = np.einsum("m,d->md", pos, omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def get_2d_sincos_pos_embed(embed_dim, grid_size, cls_token=False):
    grid_h = np.arange(grid_size, dtype=np.float32)
    grid_w = np.arange(grid_size, dtype=np.float32)
    grid = np.meshgrid(grid_w, grid_h)
    grid = np.stack(grid, axis=0).reshape([2, 1, grid_size, grid_size])
    emb_h = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[0])
    emb_w = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[1])
    pos_embed = np.concatenate([emb_h, emb_w], axis=1)
    if cls_token:
        pos_embed = np.concatenate([np.zeros([1, embed_dim]), pos_embed], axis=0)
    return pos_embed


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_ratio=2.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, int(dim * mlp_ratio)), nn.GELU(),
                                 nn.Linear(int(dim * mlp_ratio), dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class MaskedAutoencoderViT(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=16, depth=2, num_heads=2,
                 decoder_embed_dim=12, decoder_depth=1, decoder_num_heads=2, norm_pix_loss=True):
        super().__init__()
        self.patch_size = patch_size
        self.patch_embed = nn.Conv2d(in_chans, embed_dim, patch_size, patch_size)
        num_patches = (img_size // patch_size) ** 2
        self.num_patches = num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim), requires_grad=False)
        self.blocks = nn.ModuleList([Block(embed_dim, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.decoder_embed = nn.Linear(embed_dim, decoder_embed_dim, bias=True)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, decoder_embed_dim))
        self.decoder_pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, decoder_embed_dim),
                                              requires_grad=False)
        self.decoder_blocks = nn.ModuleList([Block(decoder_embed_dim, decoder_num_heads)
                                             for _ in range(decoder_depth)])
        self.decoder_norm = nn.LayerNorm(decoder_embed_dim, eps=1e-6)
        self.decoder_pred = nn.Linear(decoder_embed_dim, patch_size ** 2 * in_chans, bias=True)
        self.norm_pix_loss = norm_pix_loss
        self.initialize_weights()

    def initialize_weights(self):
        grid = int(self.num_patches ** .5)
        pos_embed = get_2d_sincos_pos_embed(self.pos_embed.shape[-1], grid, cls_token=True)
        self.pos_embed.data.copy_(torch.from_numpy(pos_embed).float().unsqueeze(0))
        dec = get_2d_sincos_pos_embed(self.decoder_pos_embed.shape[-1], grid, cls_token=True)
        self.decoder_pos_embed.data.copy_(torch.from_numpy(dec).float().unsqueeze(0))
        w = self.patch_embed.weight.data
        torch.nn.init.xavier_uniform_(w.view([w.shape[0], -1]))
        torch.nn.init.normal_(self.cls_token, std=.02)
        torch.nn.init.normal_(self.mask_token, std=.02)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    def patchify(self, imgs):
        p = self.patch_size
        h = w = imgs.shape[2] // p
        x = imgs.reshape(shape=(imgs.shape[0], 3, h, p, w, p))
        x = torch.einsum("nchpwq->nhwpqc", x)
        return x.reshape(shape=(imgs.shape[0], h * w, p ** 2 * 3))

    def unpatchify(self, x):
        p = self.patch_size
        h = w = int(x.shape[1] ** .5)
        x = x.reshape(shape=(x.shape[0], h, w, p, p, 3))
        x = torch.einsum("nhwpqc->nchpwq", x)
        return x.reshape(shape=(x.shape[0], 3, h * p, h * p))

    def random_masking(self, x, mask_ratio):
        N, L, D = x.shape
        len_keep = int(L * (1 - mask_ratio))
        noise = torch.rand(N, L, device=x.device)
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        ids_keep = ids_shuffle[:, :len_keep]
        x_masked = torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, D))
        mask = torch.ones([N, L], device=x.device)
        mask[:, :len_keep] = 0
        mask = torch.gather(mask, dim=1, index=ids_restore)
        return x_masked, mask, ids_restore

    def forward_encoder(self, x, mask_ratio):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = x + self.pos_embed[:, 1:, :]
        x, mask, ids_restore = self.random_masking(x, mask_ratio)
        cls_token = self.cls_token + self.pos_embed[:, :1, :]
        cls_tokens = cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x), mask, ids_restore

    def forward_decoder(self, x, ids_restore):
        x = self.decoder_embed(x)
        mask_tokens = self.mask_token.repeat(x.shape[0], ids_restore.shape[1] + 1 - x.shape[1], 1)
        x_ = torch.cat([x[:, 1:, :], mask_tokens], dim=1)
        x_ = torch.gather(x_, dim=1, index=ids_restore.unsqueeze(-1).repeat(1, 1, x.shape[2]))
        x = torch.cat([x[:, :1, :], x_], dim=1)
        x = x + self.decoder_pos_embed
        for blk in self.decoder_blocks:
            x = blk(x)
        x = self.decoder_norm(x)
        return self.decoder_pred(x)[:, 1:, :]

    def forward_loss(self, imgs, pred, mask):
        target = self.patchify(imgs)
        if self.norm_pix_loss:
            mean = target.mean(dim=-1, keepdim=True)
            var = target.var(dim=-1, keepdim=True)
            target = (target - mean) / (var + 1.e-6) ** .5
        loss = (pred - target) ** 2
        loss = loss.mean(dim=-1)
        return (loss * mask).sum() / mask.sum()

    def forward(self, imgs, mask_ratio=0.75):
        latent, mask, ids_restore = self.forward_encoder(imgs, mask_ratio)
        pred = self.forward_decoder(latent, ids_restore)
        return self.forward_loss(imgs, pred, mask), pred, mask


def param_groups_weight_decay(model, weight_decay=0.05, no_weight_decay_list=()):
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias") or name in no_weight_decay_list:
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": no_decay, "weight_decay": 0.}, {"params": decay, "weight_decay": weight_decay}]


def adjust_learning_rate(optimizer, epoch, lr, min_lr, warmup_epochs, epochs):
    if epoch < warmup_epochs:
        lr = lr * epoch / warmup_epochs
    else:
        lr = min_lr + (lr - min_lr) * 0.5 * \
            (1. + math.cos(math.pi * (epoch - warmup_epochs) / (epochs - warmup_epochs)))
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr * param_group.get("lr_scale", 1.0)
    return lr


torch.manual_seed(0)
np.random.seed(0)
pe = get_2d_sincos_pos_embed(8, 2, cls_token=True)
print("pos embed:", pe.shape, np.round(pe[3], 4).tolist())
model = MaskedAutoencoderViT()
print("frozen pos_embed:", model.pos_embed.requires_grad, tuple(model.pos_embed.shape))
groups = param_groups_weight_decay(model, 0.05, {"cls_token", "mask_token"})
print("groups:", [len(g["params"]) for g in groups])
optimizer = torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.95))
imgs = torch.rand(4, 3, 16, 16)
x = model.patchify(imgs)
print("patchify roundtrip:", tuple(x.shape), torch.equal(model.unpatchify(x), imgs))
steps, accum_iter = 8, 2
for data_iter_step in range(steps):
    if data_iter_step % accum_iter == 0:
        lr = adjust_learning_rate(optimizer, data_iter_step / steps * 4, 1e-3, 1e-5, 1, 4)
    loss, pred, mask = model(imgs, mask_ratio=0.75)
    loss_value = loss.item()
    if not math.isfinite(loss_value):
        raise SystemExit(f"Loss is {loss_value}, stopping training")
    (loss / accum_iter).backward()
    if (data_iter_step + 1) % accum_iter == 0:
        optimizer.step()
        optimizer.zero_grad()
    print(f"it {data_iter_step} lr {lr:.6f} loss {loss_value:.5f} masked {int(mask.sum())}")

model.eval()
with torch.no_grad():
    torch.manual_seed(5)
    loss, pred, mask = model(imgs[:1], mask_ratio=0.5)
    y = model.unpatchify(pred)
    m = model.unpatchify(mask.unsqueeze(-1).repeat(1, 1, model.patch_size ** 2 * 3))
    im_paste = imgs[:1] * (1 - m) + y * m
print("mask:", mask[0].int().tolist())
print(f"eval loss {loss.item():.5f} paste {im_paste.mean().item():.5f}")
os.makedirs("output_dir", exist_ok=True)
to_save = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 0}
torch.save(to_save, os.path.join("output_dir", "checkpoint-0.pth"))
ckpt = torch.load(os.path.join("output_dir", "checkpoint-0.pth"), map_location="cpu")
msg = MaskedAutoencoderViT().load_state_dict(ckpt["model"], strict=False)
print("resume:", msg, sorted(ckpt["optimizer"]["state"])[:3], ckpt["epoch"])
