"""A VAE (pytorch/examples/vae) and a DCGAN step (pytorch/examples/dcgan) on synthetic images."""
from __future__ import print_function

import argparse
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.parallel
import torch.optim as optim
import torch.utils.data
from torch import nn as nn_alias
from torch.nn import functional as F

parser = argparse.ArgumentParser(description='VAE / DCGAN')
parser.add_argument('--batch-size', type=int, default=16)
parser.add_argument('--epochs', type=int, default=2)
parser.add_argument('--seed', type=int, default=1)
parser.add_argument('--nz', type=int, default=8)
parser.add_argument('--ngf', type=int, default=8)
parser.add_argument('--ndf', type=int, default=8)
args = parser.parse_args()

random.seed(args.seed)
np.random.seed(args.seed)
torch.manual_seed(args.seed)
torch.cuda.manual_seed_all(args.seed)
torch.backends.cudnn.benchmark = True
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
assert nn is nn_alias

data = torch.rand(64, 1, 28, 28).round()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data),
                                     batch_size=args.batch_size, shuffle=True, drop_last=True)


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(784, 64)
        self.fc21 = nn.Linear(64, 4)
        self.fc22 = nn.Linear(64, 4)
        self.fc3 = nn.Linear(4, 64)
        self.fc4 = nn.Linear(64, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


model = VAE().to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-3)
epoch_losses = []
for epoch in range(1, args.epochs + 1):
    model.train()
    train_loss = 0
    for batch_idx, (x,) in enumerate(loader):
        x = x.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(x)
        loss = loss_function(recon_batch, x, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
    epoch_losses.append(train_loss / len(loader.dataset))
print('VAE loss decreased:', epoch_losses[-1] < epoch_losses[0])
with torch.no_grad():
    sample = torch.randn(4, 4).to(device)
    sample = model.decode(sample).cpu()
    print('VAE sample', sample.view(4, 1, 28, 28).shape, bool(((sample >= 0) & (sample <= 1)).all()))


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self, ngpu, nz, ngf, nc=1):
        super(Generator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh()
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output


class Discriminator(nn.Module):
    def __init__(self, ngpu, ndf, nc=1):
        super(Discriminator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


netG = Generator(1, args.nz, args.ngf).to(device)
netG.apply(weights_init)
netD = Discriminator(1, args.ndf).to(device)
netD.apply(weights_init)
print(netG.main[1])
print(netD)
criterion = nn.BCELoss()
fixed_noise = torch.randn(args.batch_size, args.nz, 1, 1, device=device)
real_label = 1
fake_label = 0
optimizerD = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
images = F.pad(data * 2 - 1, (2, 2, 2, 2), value=-1)[:, :, :16:2, :16:2]
images = F.interpolate(images, size=(16, 16), mode='nearest')
for i in range(3):
    netD.zero_grad()
    real_cpu = images[i * 8:(i + 1) * 8].to(device)
    batch_size = real_cpu.size(0)
    label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)
    output = netD(real_cpu)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()
    noise = torch.randn(batch_size, args.nz, 1, 1, device=device)
    fake = netG(noise)
    label.fill_(fake_label)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()
    netG.zero_grad()
    label.fill_(real_label)
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()
    assert 0 < D_x < 1 and 0 < D_G_z1 < 1 and 0 < D_G_z2 < 1
    print('[%d/%d] Loss_D finite: %s Loss_G finite: %s' % (
        i, 3, np.isfinite(errD.item()), np.isfinite(errG.item())))
fake = netG(fixed_noise)
print('fake', list(fake.shape), fake.dtype, round(float(fake.abs().max()), 6) <= 1.0)
print(netG.main[1].running_mean.shape, int(netG.main[1].num_batches_tracked))
