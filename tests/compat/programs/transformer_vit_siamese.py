"""The nn.TransformerEncoder language-model tutorial (PositionalEncoding, batchify/get_batch, StepLR), nn.Transformer with masks, a small ViT (norm_first, gelu, AdamW, label smoothing) and pytorch/examples' siamese network."""
import math, os, time
import torch
from torch import nn, Tensor
import torch.nn.functional as F
from torch.nn import TransformerEncoder, TransformerEncoderLayer
from torch.utils.data import dataset, Dataset, DataLoader
import numpy as np
torch.manual_seed(0)
# transformer tutorial (language modeling with nn.TransformerEncoder)
class TransformerModel(nn.Module):
    def __init__(self, ntoken: int, d_model: int, nhead: int, d_hid: int, nlayers: int, dropout: float = 0.5):
        super().__init__()
        self.model_type = 'Transformer'
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = TransformerEncoder(encoder_layers, nlayers)
        self.embedding = nn.Embedding(ntoken, d_model); self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken); self.init_weights()
    def init_weights(self) -> None:
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange); self.linear.bias.data.zero_(); self.linear.weight.data.uniform_(-initrange, initrange)
    def forward(self, src: Tensor, src_mask: Tensor = None) -> Tensor:
        src = self.embedding(src) * math.sqrt(self.d_model); src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(src.device)
        output = self.transformer_encoder(src, src_mask); return self.linear(output)
class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model); pe[:, 0, 0::2] = torch.sin(position * div_term); pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe)
    def forward(self, x: Tensor) -> Tensor:
        x = x + self.pe[:x.size(0)]; return self.dropout(x)
def batchify(data: Tensor, bsz: int) -> Tensor:
    seq_len = data.size(0) // bsz; data = data[:seq_len * bsz]; return data.view(bsz, seq_len).t().contiguous()
train_data = batchify(torch.randint(0, 50, (2000,)), 20)
bptt = 35
def get_batch(source: Tensor, i: int):
    seq_len = min(bptt, len(source) - 1 - i); data = source[i:i+seq_len]; target = source[i+1:i+1+seq_len].reshape(-1); return data, target
model = TransformerModel(50, 32, 2, 32, 2, 0.2)
criterion = nn.CrossEntropyLoss(); optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)
print(nn.Transformer.generate_square_subsequent_mask(3))
model.train(); total = 0.
for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
    data, targets = get_batch(train_data, i)
    output = model(data); output_flat = output.view(-1, 50)
    loss = criterion(output_flat, targets)
    optimizer.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5); optimizer.step()
    total += loss.item()
scheduler.step(); print('lr', scheduler.get_last_lr(), math.isfinite(total), output.shape)
# nn.Transformer seq2seq
tr = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32, batch_first=True)
src = torch.rand(2, 5, 16); tgt = torch.rand(2, 4, 16)
out = tr(src, tgt, tgt_mask=tr.generate_square_subsequent_mask(4), src_key_padding_mask=torch.tensor([[False]*5, [False]*3 + [True]*2]))
print(out.shape)
# ViT
class PatchEmbed(nn.Module):
    def __init__(self, img=16, patch=4, dim=32):
        super().__init__(); self.proj = nn.Conv2d(3, dim, patch, patch)
    def forward(self, x): return self.proj(x).flatten(2).transpose(1, 2)
class ViT(nn.Module):
    def __init__(self, dim=32, depth=2, heads=4, classes=10):
        super().__init__()
        self.patch = PatchEmbed(dim=dim); self.cls = nn.Parameter(torch.zeros(1, 1, dim)); self.pos = nn.Parameter(torch.randn(1, 17, dim) * .02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, activation='gelu', batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False); self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, classes))
    def forward(self, x):
        x = self.patch(x); x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.enc(x)[:, 0])
vit = ViT(); opt = torch.optim.AdamW(vit.parameters(), lr=1e-3, weight_decay=0.05)
x = torch.randn(8, 3, 16, 16); y = torch.randint(0, 10, (8,)); l0 = None
for step in range(5):
    loss = F.cross_entropy(vit(x), y, label_smoothing=0.1); opt.zero_grad(); loss.backward(); opt.step(); l0 = l0 or loss.item()
print('vit decreased', loss.item() < l0, sum(p.numel() for p in vit.parameters()))
# siamese network (pytorch/examples style)
class SiameseNetwork(nn.Module):
    def __init__(self):
        super(SiameseNetwork, self).__init__()
        self.resnet = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))
        self.fc_in_features = 8
        self.fc = nn.Sequential(nn.Linear(self.fc_in_features * 2, 16), nn.ReLU(inplace=True), nn.Linear(16, 1))
        self.sigmoid = nn.Sigmoid(); self.resnet.apply(self.init_weights); self.fc.apply(self.init_weights)
    def init_weights(self, m):
        if isinstance(m, nn.Linear): torch.nn.init.xavier_uniform_(m.weight); m.bias.data.fill_(0.01)
    def forward_once(self, x):
        output = self.resnet(x); return output.view(output.size()[0], -1)
    def forward(self, input1, input2):
        output1 = self.forward_once(input1); output2 = self.forward_once(input2)
        output = torch.cat((output1, output2), 1); return self.sigmoid(self.fc(output))
net = SiameseNetwork(); crit = nn.BCELoss()
o = net(torch.randn(4, 1, 28, 28), torch.randn(4, 1, 28, 28)); l = crit(o, torch.ones(4, 1)); l.backward(); print(o.shape, l.dim())
from torch.optim.lr_scheduler import StepLR
sched = StepLR(torch.optim.Adadelta(net.parameters(), lr=1.0), step_size=1, gamma=0.7); print(sched.get_last_lr())
