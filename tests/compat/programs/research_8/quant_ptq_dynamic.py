"""Post-training quantization the way PyTorch's eager-mode tutorials write it: dynamic
quantization of an LSTM word model and its Linear layers with ``quantize_dynamic`` (model
size through a saved ``state_dict``, outputs against the float model), quantized tensors by
hand (``quantize_per_tensor``/``per_channel``, ``int_repr``, ``q_scale``, ``dequantize``,
``fake_quantize_per_tensor_affine``), observers' ``calculate_qparams``, and static
quantization of a small CNN: ``QuantStub``/``DeQuantStub``, ``FloatFunctional`` for the
skip addition, ``fuse_modules``, the engine's default qconfig, calibration, ``convert`` and
the printed quantized model."""
import os

import torch
import torch.ao.quantization as tq
import torch.nn as nn

torch.manual_seed(0)
torch.backends.quantized.engine = "x86" if "x86" in torch.backends.quantized.supported_engines \
    else "fbgemm"
print("engine:", torch.backends.quantized.engine)


def print_size_of_model(model, label=""):
    torch.save(model.state_dict(), "temp.p")
    size = os.path.getsize("temp.p")
    os.remove("temp.p")
    return size


# --- quantized tensors by hand ---------------------------------------------------------------
x = torch.tensor([[-1.0, -0.4, 0.0, 0.26], [0.5, 1.2, 2.0, -3.1]])
qx = torch.quantize_per_tensor(x, scale=0.05, zero_point=10, dtype=torch.quint8)
print(qx.dtype, qx.q_scale(), qx.q_zero_point(), qx.qscheme())
print("int_repr:", qx.int_repr())
print("dequantized:", qx.dequantize())
qs = torch.quantize_per_tensor(x, 0.02, 0, torch.qint8)
print("qint8:", qs.int_repr().tolist(), "max err", (qs.dequantize() - x).abs().max().item())
w = torch.randn(3, 4)
scales = w.abs().amax(dim=1) / 127
qw = torch.quantize_per_channel(w, scales, torch.zeros(3, dtype=torch.long), axis=0,
                                dtype=torch.qint8)
print("per-channel:", qw.qscheme(), qw.q_per_channel_axis(),
      f"{(qw.dequantize() - w).abs().max().item():.6f}")
fq = torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127)
print("fake-quantized:", fq)

for obs in (tq.MinMaxObserver(dtype=torch.quint8),
            tq.MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric),
            tq.MovingAverageMinMaxObserver(averaging_constant=0.5),
            tq.PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8,
                                        qscheme=torch.per_channel_symmetric)):
    for k in range(3):
        obs(torch.randn(3, 16) * (k + 1))
    scale, zp = obs.calculate_qparams()
    print(type(obs).__name__, [round(v, 6) for v in scale.flatten().tolist()], zp.tolist())


# --- dynamic quantization of a word language model ---------------------------------------------
class LSTMModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super(LSTMModel, self).__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.init_weights()
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        self.encoder.weight.data.uniform_(-initrange, initrange)
        self.decoder.bias.data.zero_()
        self.decoder.weight.data.uniform_(-initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        return decoded, hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


ntokens = 50
model = LSTMModel(ntoken=ntokens, ninp=32, nhid=48, nlayers=2)
model.eval()
quantized_model = torch.quantization.quantize_dynamic(
    model, {nn.LSTM, nn.Linear}, dtype=torch.qint8)
print(quantized_model)
f, q = print_size_of_model(model), print_size_of_model(quantized_model)
print("smaller:", q < f)

data = torch.randint(0, ntokens, (12, 4))
criterion = nn.CrossEntropyLoss()
with torch.no_grad():
    out_f, _ = model(data, model.init_hidden(4))
    out_q, hid = quantized_model(data, quantized_model.init_hidden(4))
    loss_f = criterion(out_f.view(-1, ntokens), data.view(-1))
    loss_q = criterion(out_q.view(-1, ntokens), data.view(-1))
print(f"loss float {loss_f.item():.4f} quantized close: {abs(loss_f - loss_q).item() < 0.01}")
print("agreement:", (out_f.argmax(-1) == out_q.argmax(-1)).float().mean().item() > 0.9)
print("hidden:", tuple(hid[0].shape), hid[0].dtype)


# --- static quantization of a small CNN ---------------------------------------------------------
class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)
        self.relu = nn.ReLU()
        self.skip_add = nn.quantized.FloatFunctional()

    def forward(self, x):
        return self.skip_add.add(x, self.relu(self.bn(self.conv(x))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu1 = nn.ReLU()
        self.block = Block(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.relu1(self.bn1(self.conv1(x)))
        x = self.block(x)
        x = self.pool(x).flatten(1)
        x = self.fc(x)
        return self.dequant(x)

    def fuse_model(self):
        tq.fuse_modules(self, [["conv1", "bn1", "relu1"]], inplace=True)
        tq.fuse_modules(self.block, [["conv", "bn", "relu"]], inplace=True)


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.05)
images, labels = torch.randn(32, 1, 8, 8), torch.randint(0, 4, (32,))
for _ in range(5):
    opt.zero_grad()
    nn.functional.cross_entropy(net(images), labels).backward()
    opt.step()
net.eval()
with torch.no_grad():
    float_out = net(images)
net.fuse_model()
print("fused:", net.conv1, net.bn1)
net.qconfig = tq.get_default_qconfig(torch.backends.quantized.engine)
print(net.qconfig.activation.p.func.__name__, net.qconfig.weight.p.func.__name__)
tq.prepare(net, inplace=True)
print("observer:", net.conv1.activation_post_process.__class__.__name__)
with torch.no_grad():
    for i in range(0, 32, 8):
        net(images[i:i + 8])
tq.convert(net, inplace=True)
print(net)
with torch.no_grad():
    q_out = net(images)
print("quantized weight:", net.conv1.weight().dtype, net.conv1.weight().qscheme())
print("close to float:", (q_out - float_out).abs().max().item() < 0.2,
      "same argmax:", (q_out.argmax(1) == float_out.argmax(1)).float().mean().item() >= 0.8)
