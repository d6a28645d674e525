"""Quantization-aware training and knowledge distillation the way the PyTorch quantization
tutorials and distillation repositories write them: a model with QuantStub/DeQuantStub,
fuse_modules_qat of conv-bn-relu, a qconfig from get_default_qat_qconfig, prepare_qat,
fake-quant observers disabled and BN frozen part-way through, fake_quantize_per_tensor_affine
by hand; the student is trained against a teacher with KLDivLoss(reduction="batchmean") on
temperature-softened log-probabilities scaled by T**2 plus label-smoothed cross-entropy."""
import torch
import torch.ao.quantization as tq
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.backends.quantized.engine = "qnnpack" if "qnnpack" in \
    torch.backends.quantized.supported_engines else torch.backends.quantized.engine


class Student(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv = nn.Conv2d(1, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.fc = nn.Linear(16, 3)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.relu(self.bn(self.conv(x)))
        x = torch.flatten(self.pool(x), 1)
        return self.dequant(self.fc(x))


teacher = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1),
                        nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(32, 3))
x = torch.randn(48, 1, 6, 6)
y = (x.mean((1, 2, 3)) * 3).round().clamp(-1, 1).long() + 1
topt = torch.optim.Adam(teacher.parameters(), lr=1e-2)
for _ in range(25):
    tloss = F.cross_entropy(teacher(x), y)
    topt.zero_grad()
    tloss.backward()
    topt.step()
teacher.eval()
print("teacher", f"{tloss.item():.5f}", (teacher(x).argmax(1) == y).sum().item())


def distillation_loss(student_logits, teacher_logits, labels, T=4.0, alpha=0.7):
    soft = nn.KLDivLoss(reduction="batchmean")(F.log_softmax(student_logits / T, dim=1),
                                              F.softmax(teacher_logits / T, dim=1)) * T * T
    hard = F.cross_entropy(student_logits, labels, label_smoothing=0.1)
    return alpha * soft + (1 - alpha) * hard, soft


model = Student()
model.train()
model.qconfig = tq.get_default_qat_qconfig(torch.backends.quantized.engine)
tq.fuse_modules_qat(model, [["conv", "bn", "relu"]], inplace=True)
tq.prepare_qat(model, inplace=True)
print("fused", type(model.conv).__name__, type(model.fc).__name__)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(8):
    for i in range(0, 48, 16):
        xb, yb = x[i:i + 16], y[i:i + 16]
        with torch.no_grad():
            t_logits = teacher(xb)
        loss, soft = distillation_loss(model(xb), t_logits, yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if epoch == 4:
        model.apply(tq.disable_observer)
    if epoch == 5:
        model.apply(torch.ao.nn.intrinsic.qat.freeze_bn_stats)
    print(f"epoch {epoch} loss {loss.item():.5f} kd {soft.item():.5f}")
model.eval()
fq = model.fc.weight_fake_quant
print("fc fake-quant", f"{fq.scale.item():.6f}", fq.zero_point.item(),
      f"{model.quant.activation_post_process.scale.item():.6f}")
with torch.no_grad():
    out = model(x)
print("student acc", (out.argmax(1) == y).sum().item(), f"{out.abs().mean().item():.5f}")
quantized = tq.convert(model, inplace=False)
print("converted", type(quantized.conv).__name__, type(quantized.fc).__name__,
      quantized.fc.weight().dtype)
with torch.no_grad():
    qout = quantized(x)
print("int8 agrees", (qout.argmax(1) == out.argmax(1)).sum().item(),
      f"{(qout - out).abs().max().item():.4f}")

# the fake-quant arithmetic by hand, with its straight-through gradient
w = torch.randn(6, requires_grad=True)
scale = (w.max() - w.min()).item() / 255
zp = int(round(-w.min().item() / scale))
q = torch.fake_quantize_per_tensor_affine(w, scale, zp, 0, 255)
q.sum().backward()
manual = (torch.clamp(torch.round(w / scale) + zp, 0, 255) - zp) * scale
print("fake quant", torch.allclose(q, manual), w.grad.tolist(),
      f"{(q - w).abs().max().item():.6f}")
