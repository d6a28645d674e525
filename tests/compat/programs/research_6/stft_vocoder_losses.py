"""Audio front ends and vocoder losses the way ParallelWaveGAN/HiFi-GAN style repositories
write them: torch.stft with return_complex=True on a hann window, magnitudes clamped before
log, a triangular mel filterbank built by hand on the HTK scale, the multi-resolution STFT
loss (spectral convergence + log magnitude), pre-emphasis with F.conv1d, torch.istft round
trips, a few Griffin-Lim iterations, and a tiny 1-d conv generator trained on those losses."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
sr = 8000


def hz_to_mel(f):
    return 2595.0 * math.log10(1.0 + f / 700.0)


def mel_filterbank(n_fft, n_mels, fmin=0.0, fmax=None):
    fmax = fmax or sr / 2
    mels = torch.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2)
    hz = 700.0 * (10 ** (mels / 2595.0) - 1.0)
    bins = torch.linspace(0, sr / 2, n_fft // 2 + 1)
    lower, center, upper = hz[:-2, None], hz[1:-1, None], hz[2:, None]
    up = (bins[None] - lower) / (center - lower)
    down = (upper - bins[None]) / (upper - center)
    fb = torch.clamp(torch.minimum(up, down), min=0.0)
    enorm = 2.0 / (hz[2:] - hz[:-2])
    return fb * enorm[:, None]


def stft(x, fft_size, hop_size, win_length, window):
    x_stft = torch.stft(x, fft_size, hop_size, win_length, window, return_complex=True)
    real, imag = x_stft.real, x_stft.imag
    return torch.sqrt(torch.clamp(real ** 2 + imag ** 2, min=1e-7)).transpose(2, 1)


class STFTLoss(nn.Module):
    def __init__(self, fft_size, shift_size, win_length):
        super().__init__()
        self.fft_size, self.shift_size, self.win_length = fft_size, shift_size, win_length
        self.register_buffer("window", torch.hann_window(win_length))

    def forward(self, x, y):
        x_mag = stft(x, self.fft_size, self.shift_size, self.win_length, self.window)
        y_mag = stft(y, self.fft_size, self.shift_size, self.win_length, self.window)
        sc_loss = torch.norm(y_mag - x_mag, p="fro") / torch.norm(y_mag, p="fro")
        mag_loss = F.l1_loss(torch.log(y_mag), torch.log(x_mag))
        return sc_loss, mag_loss


class MultiResolutionSTFTLoss(nn.Module):
    def __init__(self, fft_sizes=(64, 128, 32), hop_sizes=(16, 32, 8), win_lengths=(48, 96, 24)):
        super().__init__()
        self.stft_losses = nn.ModuleList([STFTLoss(fs, ss, wl) for fs, ss, wl in
                                          zip(fft_sizes, hop_sizes, win_lengths)])

    def forward(self, x, y):
        sc_loss, mag_loss = 0.0, 0.0
        for f in self.stft_losses:
            sc_l, mag_l = f(x, y)
            sc_loss += sc_l
            mag_loss += mag_l
        return sc_loss / len(self.stft_losses), mag_loss / len(self.stft_losses)


t = torch.arange(2048) / sr
wave = (0.5 * torch.sin(2 * math.pi * 440 * t) + 0.3 * torch.sin(2 * math.pi * 1250 * t)
        + 0.02 * torch.randn(2048))[None]
emph = F.conv1d(F.pad(wave[:, None], (1, 0), "reflect"), torch.tensor([[[-0.97, 1.0]]]))[:, 0]
window = torch.hann_window(128)
spec = torch.stft(emph, n_fft=128, hop_length=32, window=window, center=True,
                  pad_mode="reflect", normalized=False, onesided=True, return_complex=True)
print("stft", tuple(spec.shape), spec.dtype, f"{spec.abs().mean().item():.5f}")
fb = mel_filterbank(128, 20)
mel = torch.matmul(fb, spec.abs() ** 2)
log_mel = torch.log(torch.clamp(mel, min=1e-5))
print("log-mel", tuple(log_mel.shape), f"{log_mel.mean().item():.5f}",
      f"{log_mel.std().item():.5f}", log_mel[0].mean(1).argmax().item())
rec = torch.istft(spec, n_fft=128, hop_length=32, window=window, length=emph.shape[-1])
print("istft", f"{(rec - emph).abs().max().item():.6f}")
peak = torch.fft.rfftfreq(2048, 1 / sr)[torch.fft.rfft(wave[0]).abs().argmax()]
print("rfft peak", f"{peak.item():.2f}")

# Griffin-Lim from magnitudes only
mag = spec.abs()
angles = torch.exp(2j * math.pi * torch.rand(mag.shape))
for it in range(8):
    inverse = torch.istft(mag * angles, 128, 32, window=window, length=2048)
    rebuilt = torch.stft(inverse, 128, 32, window=window, return_complex=True)
    angles = torch.exp(1j * torch.angle(rebuilt))
print("griffin-lim sc", f"{(torch.norm(rebuilt.abs() - mag) / torch.norm(mag)).item():.5f}")


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = nn.Conv1d(20, 16, 3, padding=1)
        self.up = nn.ConvTranspose1d(16, 8, 64, stride=32, padding=16)
        self.res = nn.ModuleList([nn.Conv1d(8, 8, 3, dilation=d, padding=d) for d in (1, 3)])
        self.post = nn.Conv1d(8, 1, 7, padding=3)

    def forward(self, mel):
        x = F.leaky_relu(self.pre(mel), 0.1)
        x = self.up(x)
        for conv in self.res:
            x = x + conv(F.leaky_relu(x, 0.1))
        return torch.tanh(self.post(F.leaky_relu(x)))[:, 0]


gen = Generator()
criterion = MultiResolutionSTFTLoss()
opt = torch.optim.AdamW(gen.parameters(), lr=5e-4, betas=(0.8, 0.99))
sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.999)
target = emph[:, :log_mel.shape[-1] * 32]
for step in range(4):
    fake = gen(log_mel)[:, :target.shape[-1]]
    sc, lm = criterion(fake, target)
    loss = sc + lm
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    if step % 2 == 1:
        print(f"gen step {step} sc {sc.item():.5f} mag {lm.item():.5f}")
