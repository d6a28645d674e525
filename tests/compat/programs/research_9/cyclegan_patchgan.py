"""CycleGAN / pix2pix the way junyanz/pytorch-CycleGAN-and-pix2pix writes its networks and
training step (our own code after its pattern): a ResNet generator with
``nn.ReflectionPad2d``, ``nn.InstanceNorm2d`` (``functools.partial`` norm layers, bias only
when the norm is instance norm), ``ConvTranspose2d(output_padding=1)`` upsampling and
``Tanh``; the 70x70-style ``NLayerDiscriminator`` PatchGAN; ``init_weights`` by
``net.apply`` with ``init.normal_(0, 0.02)``; ``GANLoss`` in LSGAN mode with target tensors
as registered buffers ``expand_as``-ed; an ``ImagePool`` history buffer; ``set_requires_grad``
to freeze discriminators during the generator step; cycle and identity L1 losses; a linear
decay ``LambdaLR``; and a U-Net skip generator for pix2pix with ``Dropout`` and L1."""
import functools
import random

import torch
import torch.nn as nn
from torch.nn import init
from torch.optim import lr_scheduler

random.seed(0)
torch.manual_seed(0)


def get_norm_layer(norm_type="instance"):
    if norm_type == "batch":
        return functools.partial(nn.BatchNorm2d, affine=True, track_running_stats=True)
    if norm_type == "instance":
        return functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
    raise NotImplementedError("normalization layer [%s] is not found" % norm_type)


def init_weights(net, init_type="normal", init_gain=0.02):
    def init_func(m):
        classname = m.__class__.__name__
        if hasattr(m, "weight") and (classname.find("Conv") != -1 or classname.find("Linear") != -1):
            if init_type == "normal":
                init.normal_(m.weight.data, 0.0, init_gain)
            elif init_type == "xavier":
                init.xavier_normal_(m.weight.data, gain=init_gain)
            if hasattr(m, "bias") and m.bias is not None:
                init.constant_(m.bias.data, 0.0)
        elif classname.find("BatchNorm2d") != -1:
            init.normal_(m.weight.data, 1.0, init_gain)
            init.constant_(m.bias.data, 0.0)
    net.apply(init_func)
    return net


class ResnetBlock(nn.Module):
    def __init__(self, dim, norm_layer, use_bias):
        super().__init__()
        self.conv_block = nn.Sequential(
            nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, kernel_size=3, bias=use_bias), norm_layer(dim),
            nn.ReLU(True),
            nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, kernel_size=3, bias=use_bias), norm_layer(dim))

    def forward(self, x):
        return x + self.conv_block(x)


class ResnetGenerator(nn.Module):
    def __init__(self, input_nc, output_nc, ngf=8, norm_layer=nn.BatchNorm2d, n_blocks=2):
        super().__init__()
        if type(norm_layer) == functools.partial:
            use_bias = norm_layer.func == nn.InstanceNorm2d
        else:
            use_bias = norm_layer == nn.InstanceNorm2d
        model = [nn.ReflectionPad2d(3), nn.Conv2d(input_nc, ngf, kernel_size=7, padding=0, bias=use_bias),
                 norm_layer(ngf), nn.ReLU(True)]
        n_downsampling = 2
        for i in range(n_downsampling):
            mult = 2 ** i
            model += [nn.Conv2d(ngf * mult, ngf * mult * 2, kernel_size=3, stride=2, padding=1, bias=use_bias),
                      norm_layer(ngf * mult * 2), nn.ReLU(True)]
        mult = 2 ** n_downsampling
        for i in range(n_blocks):
            model += [ResnetBlock(ngf * mult, norm_layer=norm_layer, use_bias=use_bias)]
        for i in range(n_downsampling):
            mult = 2 ** (n_downsampling - i)
            model += [nn.ConvTranspose2d(ngf * mult, int(ngf * mult / 2), kernel_size=3, stride=2,
                                         padding=1, output_padding=1, bias=use_bias),
                      norm_layer(int(ngf * mult / 2)), nn.ReLU(True)]
        model += [nn.ReflectionPad2d(3), nn.Conv2d(ngf, output_nc, kernel_size=7, padding=0), nn.Tanh()]
        self.model = nn.Sequential(*model)

    def forward(self, input):
        return self.model(input)


class UnetSkipConnectionBlock(nn.Module):
    def __init__(self, outer_nc, inner_nc, input_nc=None, submodule=None, outermost=False,
                 innermost=False, norm_layer=nn.BatchNorm2d, use_dropout=False):
        super().__init__()
        self.outermost = outermost
        use_bias = norm_layer == nn.InstanceNorm2d
        if input_nc is None:
            input_nc = outer_nc
        downconv = nn.Conv2d(input_nc, inner_nc, kernel_size=4, stride=2, padding=1, bias=use_bias)
        downrelu = nn.LeakyReLU(0.2, True)
        downnorm = norm_layer(inner_nc)
        uprelu = nn.ReLU(True)
        upnorm = norm_layer(outer_nc)
        if outermost:
            upconv = nn.ConvTranspose2d(inner_nc * 2, outer_nc, kernel_size=4, stride=2, padding=1)
            model = [downconv] + [uprelu, upconv, nn.Tanh()]
            model = [downconv, submodule, uprelu, upconv, nn.Tanh()]
        elif innermost:
            upconv = nn.ConvTranspose2d(inner_nc, outer_nc, kernel_size=4, stride=2, padding=1, bias=use_bias)
            model = [downrelu, downconv, uprelu, upconv, upnorm]
        else:
            upconv = nn.ConvTranspose2d(inner_nc * 2, outer_nc, kernel_size=4, stride=2, padding=1, bias=use_bias)
            model = [downrelu, downconv, downnorm, submodule, uprelu, upconv, upnorm]
            if use_dropout:
                model = model + [nn.Dropout(0.5)]
        self.model = nn.Sequential(*model)

    def forward(self, x):
        if self.outermost:
            return self.model(x)
        return torch.cat([x, self.model(x)], 1)


class NLayerDiscriminator(nn.Module):
    def __init__(self, input_nc, ndf=8, n_layers=2, norm_layer=nn.BatchNorm2d):
        super().__init__()
        use_bias = norm_layer.func == nn.InstanceNorm2d if type(norm_layer) == functools.partial \
            else norm_layer == nn.InstanceNorm2d
        kw, padw = 4, 1
        sequence = [nn.Conv2d(input_nc, ndf, kernel_size=kw, stride=2, padding=padw), nn.LeakyReLU(0.2, True)]
        nf_mult = 1
        for n in range(1, n_layers):
            nf_mult_prev, nf_mult = nf_mult, min(2 ** n, 8)
            sequence += [nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=2,
                                   padding=padw, bias=use_bias),
                         norm_layer(ndf * nf_mult), nn.LeakyReLU(0.2, True)]
        nf_mult_prev, nf_mult = nf_mult, min(2 ** n_layers, 8)
        sequence += [nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=1, padding=padw,
                               bias=use_bias), norm_layer(ndf * nf_mult), nn.LeakyReLU(0.2, True)]
        sequence += [nn.Conv2d(ndf * nf_mult, 1, kernel_size=kw, stride=1, padding=padw)]
        self.model = nn.Sequential(*sequence)

    def forward(self, input):
        return self.model(input)


class GANLoss(nn.Module):
    def __init__(self, gan_mode, target_real_label=1.0, target_fake_label=0.0):
        super().__init__()
        self.register_buffer("real_label", torch.tensor(target_real_label))
        self.register_buffer("fake_label", torch.tensor(target_fake_label))
        self.gan_mode = gan_mode
        self.loss = nn.MSELoss() if gan_mode == "lsgan" else nn.BCEWithLogitsLoss()

    def __call__(self, prediction, target_is_real):
        target_tensor = (self.real_label if target_is_real else self.fake_label).expand_as(prediction)
        return self.loss(prediction, target_tensor)


class ImagePool:
    def __init__(self, pool_size):
        self.pool_size, self.num_imgs, self.images = pool_size, 0, []

    def query(self, images):
        return_images = []
        for image in images:
            image = torch.unsqueeze(image.data, 0)
            if self.num_imgs < self.pool_size:
                self.num_imgs = self.num_imgs + 1
                self.images.append(image)
                return_images.append(image)
            else:
                p = random.uniform(0, 1)
                if p > 0.5:
                    random_id = random.randint(0, self.pool_size - 1)
                    tmp = self.images[random_id].clone()
                    self.images[random_id] = image
                    return_images.append(tmp)
                else:
                    return_images.append(image)
        return torch.cat(return_images, 0)


def set_requires_grad(nets, requires_grad=False):
    if not isinstance(nets, list):
        nets = [nets]
    for net in nets:
        if net is not None:
            for param in net.parameters():
                param.requires_grad = requires_grad


norm = get_norm_layer("instance")
netG_A = init_weights(ResnetGenerator(3, 3, norm_layer=norm))
netG_B = init_weights(ResnetGenerator(3, 3, norm_layer=norm))
netD_A = init_weights(NLayerDiscriminator(3, norm_layer=norm))
netD_B = init_weights(NLayerDiscriminator(3, norm_layer=norm))
print(netG_A.model[1], netG_A.model[4])
print("generator params:", sum(p.numel() for p in netG_A.parameters()),
      "patch output:", tuple(netD_A(torch.zeros(1, 3, 16, 16)).shape))
criterionGAN, criterionCycle, criterionIdt = GANLoss("lsgan"), nn.L1Loss(), nn.L1Loss()
optimizer_G = torch.optim.Adam(list(netG_A.parameters()) + list(netG_B.parameters()), lr=2e-3, betas=(0.5, 0.999))
optimizer_D = torch.optim.Adam(list(netD_A.parameters()) + list(netD_B.parameters()), lr=2e-3, betas=(0.5, 0.999))
n_epochs, n_epochs_decay, epoch_count = 2, 2, 1


def lambda_rule(epoch):
    return 1.0 - max(0, epoch + epoch_count - n_epochs) / float(n_epochs_decay + 1)


schedulers = [lr_scheduler.LambdaLR(o, lr_lambda=lambda_rule) for o in (optimizer_G, optimizer_D)]
fake_A_pool, fake_B_pool = ImagePool(4), ImagePool(4)
g = torch.Generator().manual_seed(2)
for epoch in range(4):
    real_A = torch.rand(2, 3, 16, 16, generator=g) * 2 - 1
    real_B = torch.flip(real_A, dims=[3]) * 0.5
    fake_B = netG_A(real_A)
    rec_A = netG_B(fake_B)
    fake_A = netG_B(real_B)
    rec_B = netG_A(fake_A)
    set_requires_grad([netD_A, netD_B], False)
    optimizer_G.zero_grad()
    loss_idt_A = criterionIdt(netG_A(real_B), real_B) * 10 * 0.5
    loss_idt_B = criterionIdt(netG_B(real_A), real_A) * 10 * 0.5
    loss_G_A = criterionGAN(netD_A(fake_B), True)
    loss_G_B = criterionGAN(netD_B(fake_A), True)
    loss_cycle_A = criterionCycle(rec_A, real_A) * 10
    loss_cycle_B = criterionCycle(rec_B, real_B) * 10
    loss_G = loss_G_A + loss_G_B + loss_cycle_A + loss_cycle_B + loss_idt_A + loss_idt_B
    loss_G.backward()
    optimizer_G.step()
    set_requires_grad([netD_A, netD_B], True)
    optimizer_D.zero_grad()
    losses_D = []
    for netD, real, fake_pool, fake in ((netD_A, real_B, fake_B_pool, fake_B), (netD_B, real_A, fake_A_pool, fake_A)):
        fake = fake_pool.query(fake)
        loss_D = (criterionGAN(netD(real), True) + criterionGAN(netD(fake.detach()), False)) * 0.5
        loss_D.backward()
        losses_D.append(loss_D.item())
    optimizer_D.step()
    for scheduler in schedulers:
        scheduler.step()
    print(f"epoch {epoch} G {loss_G.item():.5f} cycle {loss_cycle_A.item():.5f} D {losses_D[0]:.5f} "
          f"{losses_D[1]:.5f} lr {optimizer_G.param_groups[0]['lr']:.7f} pool {fake_A_pool.num_imgs}")

unet = UnetSkipConnectionBlock(4, 8, innermost=True)
unet = UnetSkipConnectionBlock(3, 4, input_nc=3, submodule=unet, outermost=True)
init_weights(unet)
opt = torch.optim.Adam(unet.parameters(), lr=1e-3, betas=(0.5, 0.999))
for it in range(3):
    out = unet(real_A)
    loss = nn.functional.l1_loss(out, real_B) * 100
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"pix2pix it {it} L1 {loss.item():.5f}", tuple(out.shape))
