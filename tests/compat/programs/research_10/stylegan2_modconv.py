"""StyleGAN2 the way rosinality/stylegan2-pytorch writes it, in pure PyTorch (its ``op``
CUDA kernels replaced by their reference forms): ``EqualLinear``/``EqualConv2d`` scaling
weights at run time (``lr_mul``), ``PixelNorm`` in the mapping network, ``ModulatedConv2d``
with demodulation by the grouped-convolution trick (``groups=batch``) and the
``upfirdn2d`` blur written with ``F.pad`` and a flipped depthwise kernel, noise injection,
``fused_leaky_relu`` (bias, slope 0.2, gain sqrt 2), ``ToRGB`` skips with upsampling, a
residual discriminator with the minibatch standard-deviation layer, the non-saturating
logistic losses, lazy R1 regularisation through ``autograd.grad(create_graph=True)``,
path-length regularisation with its moving mean, style mixing, the truncation trick, and
the ``accumulate`` EMA of the generator."""
import math
import random

import torch
from torch import autograd, nn
from torch.nn import functional as F

torch.manual_seed(0)
random.seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"


def make_kernel(k):
    k = torch.tensor(k, dtype=torch.float32)
    if k.ndim == 1:
        k = k[None, :] * k[:, None]
    k /= k.sum()
    return k


def upfirdn2d(input, kernel, up=1, down=1, pad=(0, 0)):
    pad_x0, pad_x1, pad_y0, pad_y1 = pad[0], pad[1], pad[0], pad[1]
    _, channel, in_h, in_w = input.shape
    input = input.reshape(-1, in_h, in_w, 1)
    _, in_h, in_w, minor = input.shape
    kernel_h, kernel_w = kernel.shape
    out = input.view(-1, in_h, 1, in_w, 1, minor)
    out = F.pad(out, [0, 0, 0, up - 1, 0, 0, 0, up - 1])
    out = out.view(-1, in_h * up, in_w * up, minor)
    out = F.pad(out, [0, 0, max(pad_x0, 0), max(pad_x1, 0), max(pad_y0, 0), max(pad_y1, 0)])
    out = out[:, max(-pad_y0, 0): out.shape[1] - max(-pad_y1, 0),
              max(-pad_x0, 0): out.shape[2] - max(-pad_x1, 0), :]
    out = out.permute(0, 3, 1, 2)
    out = out.reshape([-1, 1, in_h * up + pad_y0 + pad_y1, in_w * up + pad_x0 + pad_x1])
    w = torch.flip(kernel, [0, 1]).view(1, 1, kernel_h, kernel_w)
    out = F.conv2d(out, w)
    out = out.reshape(-1, minor, in_h * up + pad_y0 + pad_y1 - kernel_h + 1,
                      in_w * up + pad_x0 + pad_x1 - kernel_w + 1)
    out = out.permute(0, 2, 3, 1)
    out = out[:, ::down, ::down, :]
    out_h = (in_h * up + pad_y0 + pad_y1 - kernel_h) // down + 1
    out_w = (in_w * up + pad_x0 + pad_x1 - kernel_w) // down + 1
    return out.view(-1, channel, out_h, out_w)


def fused_leaky_relu(input, bias, negative_slope=0.2, scale=2 ** 0.5):
    rest_dim = [1] * (input.ndim - bias.ndim - 1)
    return F.leaky_relu(input + bias.view(1, bias.shape[0], *rest_dim),
                        negative_slope=negative_slope) * scale


class PixelNorm(nn.Module):
    def forward(self, input):
        return input * torch.rsqrt(torch.mean(input ** 2, dim=1, keepdim=True) + 1e-8)


class Blur(nn.Module):
    def __init__(self, kernel, pad, upsample_factor=1):
        super().__init__()
        kernel = make_kernel(kernel)
        if upsample_factor > 1:
            kernel = kernel * (upsample_factor ** 2)
        self.register_buffer("kernel", kernel)
        self.pad = pad

    def forward(self, input):
        return upfirdn2d(input, self.kernel, pad=self.pad)


class Upsample(nn.Module):
    def __init__(self, kernel, factor=2):
        super().__init__()
        self.factor = factor
        self.register_buffer("kernel", make_kernel(kernel) * (factor ** 2))
        p = self.kernel.shape[0] - factor
        self.pad = ((p + 1) // 2 + factor - 1, p // 2)

    def forward(self, input):
        return upfirdn2d(input, self.kernel, up=self.factor, pad=self.pad)


class EqualConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, stride=1, padding=0, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channel, in_channel, kernel_size, kernel_size))
        self.scale = 1 / math.sqrt(in_channel * kernel_size ** 2)
        self.stride, self.padding = stride, padding
        self.bias = nn.Parameter(torch.zeros(out_channel)) if bias else None

    def forward(self, input):
        return F.conv2d(input, self.weight * self.scale, bias=self.bias, stride=self.stride,
                        padding=self.padding)

    def __repr__(self):
        return (f"{self.__class__.__name__}({self.weight.shape[1]}, {self.weight.shape[0]},"
                f" {self.weight.shape[2]}, stride={self.stride}, padding={self.padding})")


class EqualLinear(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True, bias_init=0, lr_mul=1, activation=None):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))
        self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init)) if bias else None
        self.activation = activation
        self.scale = (1 / math.sqrt(in_dim)) * lr_mul
        self.lr_mul = lr_mul

    def forward(self, input):
        if self.activation:
            out = F.linear(input, self.weight * self.scale)
            return fused_leaky_relu(out, self.bias * self.lr_mul)
        return F.linear(input, self.weight * self.scale, bias=self.bias * self.lr_mul)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.weight.shape[1]}, {self.weight.shape[0]})"


class ModulatedConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, demodulate=True,
                 upsample=False, blur_kernel=[1, 3, 3, 1]):
        super().__init__()
        self.eps = 1e-8
        self.kernel_size, self.in_channel, self.out_channel = kernel_size, in_channel, out_channel
        self.upsample = upsample
        if upsample:
            factor = 2
            p = (len(blur_kernel) - factor) - (kernel_size - 1)
            self.blur = Blur(blur_kernel, pad=((p + 1) // 2 + factor - 1, p // 2 + 1),
                             upsample_factor=factor)
        self.scale = 1 / math.sqrt(in_channel * kernel_size ** 2)
        self.padding = kernel_size // 2
        self.weight = nn.Parameter(torch.randn(1, out_channel, in_channel, kernel_size,
                                               kernel_size))
        self.modulation = EqualLinear(style_dim, in_channel, bias_init=1)
        self.demodulate = demodulate

    def forward(self, input, style):
        batch, in_channel, height, width = input.shape
        style = self.modulation(style).view(batch, 1, in_channel, 1, 1)
        weight = self.scale * self.weight * style
        if self.demodulate:
            demod = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
            weight = weight * demod.view(batch, self.out_channel, 1, 1, 1)
        weight = weight.view(batch * self.out_channel, in_channel, self.kernel_size,
                             self.kernel_size)
        if self.upsample:
            input = input.view(1, batch * in_channel, height, width)
            weight = weight.view(batch, self.out_channel, in_channel, self.kernel_size,
                                 self.kernel_size)
            weight = weight.transpose(1, 2).reshape(batch * in_channel, self.out_channel,
                                                    self.kernel_size, self.kernel_size)
            out = F.conv_transpose2d(input, weight, padding=0, stride=2, groups=batch)
            _, _, height, width = out.shape
            out = out.view(batch, self.out_channel, height, width)
            out = self.blur(out)
        else:
            input = input.view(1, batch * in_channel, height, width)
            out = F.conv2d(input, weight, padding=self.padding, groups=batch)
            _, _, height, width = out.shape
            out = out.view(batch, self.out_channel, height, width)
        return out


class NoiseInjection(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))

    def forward(self, image, noise=None):
        if noise is None:
            batch, _, height, width = image.shape
            noise = image.new_empty(batch, 1, height, width).normal_()
        return image + self.weight * noise


class StyledConv(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, upsample=False):
        super().__init__()
        self.conv = ModulatedConv2d(in_channel, out_channel, kernel_size, style_dim,
                                    upsample=upsample)
        self.noise = NoiseInjection()
        self.bias = nn.Parameter(torch.zeros(out_channel))

    def forward(self, input, style, noise=None):
        out = self.noise(self.conv(input, style), noise=noise)
        return fused_leaky_relu(out, self.bias)


class ToRGB(nn.Module):
    def __init__(self, in_channel, style_dim, upsample=True):
        super().__init__()
        if upsample:
            self.upsample = Upsample([1, 3, 3, 1])
        self.conv = ModulatedConv2d(in_channel, 3, 1, style_dim, demodulate=False)
        self.bias = nn.Parameter(torch.zeros(1, 3, 1, 1))

    def forward(self, input, style, skip=None):
        out = self.conv(input, style) + self.bias
        if skip is not None:
            out = out + self.upsample(skip)
        return out


class Generator(nn.Module):
    def __init__(self, size=8, style_dim=16, n_mlp=2, ch=8, lr_mlp=0.01):
        super().__init__()
        self.style_dim = style_dim
        layers = [PixelNorm()]
        for i in range(n_mlp):
            layers.append(EqualLinear(style_dim, style_dim, lr_mul=lr_mlp,
                                      activation="fused_lrelu"))
        self.style = nn.Sequential(*layers)
        self.input = nn.Parameter(torch.randn(1, ch, 4, 4))
        self.conv1 = StyledConv(ch, ch, 3, style_dim)
        self.to_rgb1 = ToRGB(ch, style_dim, upsample=False)
        self.log_size = int(math.log(size, 2))
        self.num_layers = (self.log_size - 2) * 2 + 1
        self.convs, self.to_rgbs = nn.ModuleList(), nn.ModuleList()
        for i in range(3, self.log_size + 1):
            self.convs.append(StyledConv(ch, ch, 3, style_dim, upsample=True))
            self.convs.append(StyledConv(ch, ch, 3, style_dim))
            self.to_rgbs.append(ToRGB(ch, style_dim))
        self.n_latent = self.log_size * 2 - 2

    def mean_latent(self, n_latent):
        latent_in = torch.randn(n_latent, self.style_dim, device=self.input.device)
        return self.style(latent_in).mean(0, keepdim=True)

    def forward(self, styles, return_latents=False, inject_index=None, truncation=1,
                truncation_latent=None, noise=None):
        styles = [self.style(s) for s in styles]
        if truncation < 1:
            styles = [truncation_latent + truncation * (s - truncation_latent) for s in styles]
        if len(styles) < 2:
            latent = styles[0].unsqueeze(1).repeat(1, self.n_latent, 1)
        else:
            if inject_index is None:
                inject_index = random.randint(1, self.n_latent - 1)
            latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
            latent2 = styles[1].unsqueeze(1).repeat(1, self.n_latent - inject_index, 1)
            latent = torch.cat([latent, latent2], 1)
        if noise is None:
            noise = [None] * self.num_layers
        out = self.conv1(self.input.repeat(latent.shape[0], 1, 1, 1), latent[:, 0],
                         noise=noise[0])
        skip = self.to_rgb1(out, latent[:, 1])
        i = 1
        for conv1, conv2, noise1, noise2, to_rgb in zip(self.convs[::2], self.convs[1::2],
                                                        noise[1::2], noise[2::2], self.to_rgbs):
            out = conv1(out, latent[:, i], noise=noise1)
            out = conv2(out, latent[:, i + 1], noise=noise2)
            skip = to_rgb(out, latent[:, i + 2], skip)
            i += 2
        if return_latents:
            return skip, latent
        return skip, None


class Discriminator(nn.Module):
    def __init__(self, size=8, ch=8):
        super().__init__()
        self.conv0 = EqualConv2d(3, ch, 1)
        self.down = EqualConv2d(ch, ch, 3, stride=2, padding=1)
        self.skip = EqualConv2d(ch, ch, 1, stride=2, bias=False)
        self.stddev_group, self.stddev_feat = 4, 1
        self.final_conv = EqualConv2d(ch + 1, ch, 3, padding=1)
        self.final_linear = nn.Sequential(EqualLinear(ch * 4 * 4, ch, activation="fused_lrelu"),
                                          EqualLinear(ch, 1))

    def forward(self, input):
        out = F.leaky_relu(self.conv0(input), 0.2) * math.sqrt(2)
        res = F.leaky_relu(self.down(out), 0.2) * math.sqrt(2)
        out = (res + self.skip(out)) / math.sqrt(2)
        batch, channel, height, width = out.shape
        group = min(batch, self.stddev_group)
        stddev = out.view(group, -1, self.stddev_feat, channel // self.stddev_feat, height, width)
        stddev = torch.sqrt(stddev.var(0, unbiased=False) + 1e-8)
        stddev = stddev.mean([2, 3, 4], keepdims=True).squeeze(2)
        stddev = stddev.repeat(group, 1, height, width)
        out = torch.cat([out, stddev], 1)
        out = F.leaky_relu(self.final_conv(out), 0.2) * math.sqrt(2)
        return self.final_linear(out.view(batch, -1))


def d_logistic_loss(real_pred, fake_pred):
    return F.softplus(-real_pred).mean() + F.softplus(fake_pred).mean()


def d_r1_loss(real_pred, real_img):
    grad_real, = autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
    return grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()


def g_nonsaturating_loss(fake_pred):
    return F.softplus(-fake_pred).mean()


def g_path_regularize(fake_img, latents, mean_path_length, decay=0.01):
    noise = torch.randn_like(fake_img) / math.sqrt(fake_img.shape[2] * fake_img.shape[3])
    grad, = autograd.grad(outputs=(fake_img * noise).sum(), inputs=latents, create_graph=True)
    path_lengths = torch.sqrt(grad.pow(2).sum(2).mean(1))
    path_mean = mean_path_length + decay * (path_lengths.mean() - mean_path_length)
    path_penalty = (path_lengths - path_mean).pow(2).mean()
    return path_penalty, path_mean.detach(), path_lengths


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def accumulate(model1, model2, decay=0.999):
    par1 = dict(model1.named_parameters())
    par2 = dict(model2.named_parameters())
    for k in par1.keys():
        par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


def mixing_noise(batch, latent_dim, prob, device):
    if prob > 0 and random.random() < prob:
        return list(torch.randn(2, batch, latent_dim, device=device).unbind(0))
    return [torch.randn(batch, latent_dim, device=device)]


generator, discriminator = Generator().to(device), Discriminator().to(device)
g_ema = Generator().to(device)
g_ema.eval()
accumulate(g_ema, generator, 0)
print(discriminator)
print(generator.convs[0])
print("G params", sum(p.numel() for p in generator.parameters()),
      "D params", sum(p.numel() for p in discriminator.parameters()))
g_reg_every, d_reg_every, r1 = 2, 2, 10.0
g_reg_ratio, d_reg_ratio = g_reg_every / (g_reg_every + 1), d_reg_every / (d_reg_every + 1)
g_optim = torch.optim.Adam(generator.parameters(), lr=0.002 * g_reg_ratio,
                           betas=(0 ** g_reg_ratio, 0.99 ** g_reg_ratio))
d_optim = torch.optim.Adam(discriminator.parameters(), lr=0.002 * d_reg_ratio,
                           betas=(0 ** d_reg_ratio, 0.99 ** d_reg_ratio))
data = torch.tanh(torch.randn(32, 3, 8, 8))
batch, latent, mean_path_length = 4, 16, 0
for i in range(6):
    real_img = data[(i * batch) % 32:(i * batch) % 32 + batch]
    requires_grad(generator, False)
    requires_grad(discriminator, True)
    noise = mixing_noise(batch, latent, 0.9, device)
    fake_img, _ = generator(noise)
    fake_pred, real_pred = discriminator(fake_img), discriminator(real_img)
    d_loss = d_logistic_loss(real_pred, fake_pred)
    discriminator.zero_grad()
    d_loss.backward()
    d_optim.step()
    r1_val = torch.tensor(0.0)
    if i % d_reg_every == 0:
        real_img.requires_grad = True
        real_pred = discriminator(real_img)
        r1_loss = d_r1_loss(real_pred, real_img)
        discriminator.zero_grad()
        (r1 / 2 * r1_loss * d_reg_every + 0 * real_pred[0]).backward()
        d_optim.step()
        r1_val = r1_loss
    requires_grad(generator, True)
    requires_grad(discriminator, False)
    fake_img, _ = generator(mixing_noise(batch, latent, 0.9, device))
    g_loss = g_nonsaturating_loss(discriminator(fake_img))
    generator.zero_grad()
    g_loss.backward()
    g_optim.step()
    path_loss = torch.tensor(0.0)
    if i % g_reg_every == 0:
        path_batch_size = max(1, batch // 2)
        noise = mixing_noise(path_batch_size, latent, 0.9, device)
        fake_img, latents = generator(noise, return_latents=True)
        path_loss, mean_path_length, path_lengths = g_path_regularize(fake_img, latents,
                                                                      mean_path_length)
        generator.zero_grad()
        weighted_path_loss = 2 * g_reg_every * path_loss
        weighted_path_loss += 0 * fake_img[0, 0, 0, 0]
        weighted_path_loss.backward()
        g_optim.step()
    accumulate(g_ema, generator, 0.5 ** (32 / (10 * 1000)))
    print(f"iter {i} d: {d_loss.item():.4f}; g: {g_loss.item():.4f}; r1: {r1_val.item():.4f}; "
          f"path: {path_loss.item():.4f}; mean path: {float(mean_path_length):.4f}; "
          f"real {real_pred.mean().item():.4f} fake {fake_pred.mean().item():.4f}")

with torch.no_grad():
    g_ema.eval()
    mean_latent = g_ema.mean_latent(64)
    sample_z = torch.randn(4, latent)
    sample, _ = g_ema([sample_z], truncation=0.7, truncation_latent=mean_latent,
                      noise=[torch.zeros(4, 1, 2 ** (2 + (j + 1) // 2), 2 ** (2 + (j + 1) // 2))
                             for j in range(g_ema.num_layers)])
    mixed, lat = g_ema([sample_z, sample_z.flip(0)], inject_index=2, return_latents=True)
print("sample", tuple(sample.shape), sample.mean().item(), sample.std().item())
print("mixed", tuple(mixed.shape), tuple(lat.shape), (lat[:, 0] - lat[:, -1]).abs().sum().item())
print("normalized range", ((sample.clamp(-1, 1) + 1) / 2).amin().item(),
      ((sample.clamp(-1, 1) + 1) / 2).amax().item())
