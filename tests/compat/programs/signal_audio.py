"""Audio- and signal-style code: STFT/iSTFT round trip with a Hann window, rfft peaks, complex helpers (polar, angle, view_as_real/complex), fftshift, window functions, Conv1d stacks over spectrograms, interpolate, unfold/fold, cumulative sums and trapezoids."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
sr = 800; t = torch.arange(0, 1, 1 / sr); wave = torch.sin(2 * math.pi * 50 * t) + 0.5 * torch.sin(2 * math.pi * 120 * t)
win = torch.hann_window(64); spec = torch.stft(wave, n_fft=64, hop_length=16, window=win, return_complex=True)
print(spec.shape, spec.dtype, torch.view_as_real(spec).shape)
mag = spec.abs(); print(int(mag.mean(dim=1).argmax()), mag.dtype)
rec = torch.istft(spec, n_fft=64, hop_length=16, window=win, length=wave.shape[0]); print(torch.allclose(rec, wave, atol=1e-4))
X = torch.fft.rfft(wave); freqs = torch.fft.rfftfreq(wave.shape[0], d=1 / sr); print(freqs[X.abs().argmax()].item(), X.shape)
print(torch.polar(torch.tensor([2.0]), torch.tensor([math.pi / 2])).real.abs() < 1e-6, torch.angle(torch.tensor([1j])))
z = torch.complex(torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0])); print(z, z.conj(), z * z.conj(), torch.view_as_complex(torch.view_as_real(z)))
print(torch.fft.fftshift(torch.arange(6)), torch.fft.ifft(torch.fft.fft(torch.tensor([1.0, 2.0, 3.0]))).real)
print(torch.signal.windows.gaussian(5, std=1.0), torch.hamming_window(4), torch.kaiser_window(4, periodic=False))
mel = torch.randn(1, 1, 16, 20)
conv = nn.Sequential(nn.Conv1d(16, 8, 3, padding=1), nn.BatchNorm1d(8), nn.GELU(), nn.Conv1d(8, 4, 3, dilation=2, padding=2))
print(conv(mel.squeeze(1)).shape, F.interpolate(mel, scale_factor=2, mode='bilinear', align_corners=False).shape)
print(F.unfold(torch.arange(16.).reshape(1, 1, 4, 4), kernel_size=2, stride=2).shape, F.fold(torch.ones(1, 4, 4), output_size=(4, 4), kernel_size=2, stride=2).sum())
print(torch.conv1d(torch.ones(1, 1, 5), torch.ones(1, 1, 3)), F.avg_pool1d(torch.arange(6.).view(1, 1, 6), 2))
print(torch.cumsum(torch.ones(4), 0), torch.diff(torch.tensor([1, 4, 9, 16])), torch.trapezoid(torch.tensor([1.0, 2.0, 3.0])), torch.cumulative_trapezoid(torch.tensor([1.0, 2.0, 3.0])))
