"""A Conformer speech encoder the way sooftware/conformer and the ESPnet/NeMo-style recipes
write it (our own code after their pattern): SpecAugment on log-mel-like features (frequency
and time masks by ``torch.randint`` and ``masked_fill`` over an ``arange``), a 2-D conv
subsampler, macaron half-step feed-forward modules with ``SiLU`` (Swish) and ``Dropout``,
multi-head self-attention with relative sinusoidal positions added to queries
(Transformer-XL ``u``/``v`` biases and the ``_relative_shift`` pad-and-view trick), the
convolution module (pointwise ``Conv1d`` + ``GLU``, depthwise ``Conv1d(groups=channels)``,
``BatchNorm1d``), lengths through ``key_padding_mask``, CTC on ``log_softmax(-1).transpose(0,
1)`` with ``zero_infinity``, greedy CTC decoding by ``unique_consecutive`` and a Noam warmup
``LambdaLR``."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SpecAugment(nn.Module):
    def __init__(self, freq_mask_para=4, time_mask_num=2, freq_mask_num=1, time_mask_max=4):
        super().__init__()
        self.freq_mask_para, self.time_mask_num = freq_mask_para, time_mask_num
        self.freq_mask_num, self.time_mask_max = freq_mask_num, time_mask_max

    def forward(self, x):
        b, t, f = x.shape
        for _ in range(self.freq_mask_num):
            width = torch.randint(0, self.freq_mask_para + 1, (b, 1))
            start = (torch.rand(b, 1) * (f - width)).long()
            idx = torch.arange(f)[None]
            x = x.masked_fill(((idx >= start) & (idx < start + width))[:, None, :], 0.0)
        for _ in range(self.time_mask_num):
            width = torch.randint(0, self.time_mask_max + 1, (b, 1))
            start = (torch.rand(b, 1) * (t - width)).long()
            idx = torch.arange(t)[None]
            x = x.masked_fill(((idx >= start) & (idx < start + width))[:, :, None], 0.0)
        return x


class Conv2dSubampling(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.sequential = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=2), nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=2), nn.ReLU())

    def forward(self, inputs, input_lengths):
        outputs = self.sequential(inputs.unsqueeze(1))
        batch_size, channels, subsampled_lengths, sumsampled_dim = outputs.size()
        outputs = outputs.permute(0, 2, 1, 3)
        outputs = outputs.contiguous().view(batch_size, subsampled_lengths, channels * sumsampled_dim)
        output_lengths = ((input_lengths - 1) // 2 - 1) // 2
        return outputs, output_lengths


class RelPositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        pe = torch.zeros(max_len, d_model, requires_grad=False)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0), persistent=False)

    def forward(self, length):
        return self.pe[:, :length]


class RelativeMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout_p=0.1):
        super().__init__()
        self.d_model, self.d_head, self.num_heads = d_model, d_model // num_heads, num_heads
        self.sqrt_dim = math.sqrt(d_model)
        self.query_proj = nn.Linear(d_model, d_model)
        self.key_proj = nn.Linear(d_model, d_model)
        self.value_proj = nn.Linear(d_model, d_model)
        self.pos_proj = nn.Linear(d_model, d_model, bias=False)
        self.dropout = nn.Dropout(p=dropout_p)
        self.u_bias = nn.Parameter(torch.Tensor(self.num_heads, self.d_head))
        self.v_bias = nn.Parameter(torch.Tensor(self.num_heads, self.d_head))
        torch.nn.init.xavier_uniform_(self.u_bias)
        torch.nn.init.xavier_uniform_(self.v_bias)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, pos_embedding, mask=None):
        batch_size = value.size(0)
        query = self.query_proj(query).view(batch_size, -1, self.num_heads, self.d_head)
        key = self.key_proj(key).view(batch_size, -1, self.num_heads, self.d_head).permute(0, 2, 1, 3)
        value = self.value_proj(value).view(batch_size, -1, self.num_heads, self.d_head).permute(0, 2, 1, 3)
        pos_embedding = self.pos_proj(pos_embedding).view(batch_size, -1, self.num_heads, self.d_head)
        content_score = torch.matmul((query + self.u_bias).transpose(1, 2), key.transpose(2, 3))
        pos_score = torch.matmul((query + self.v_bias).transpose(1, 2), pos_embedding.permute(0, 2, 3, 1))
        pos_score = self._relative_shift(pos_score)
        score = (content_score + pos_score) / self.sqrt_dim
        if mask is not None:
            score.masked_fill_(mask, -1e9)
        attn = F.softmax(score, -1)
        attn = self.dropout(attn)
        context = torch.matmul(attn, value).transpose(1, 2)
        context = context.contiguous().view(batch_size, -1, self.d_model)
        return self.out_proj(context)

    def _relative_shift(self, pos_score):
        batch_size, num_heads, seq_length1, seq_length2 = pos_score.size()
        zeros = pos_score.new_zeros(batch_size, num_heads, seq_length1, 1)
        padded_pos_score = torch.cat([zeros, pos_score], dim=-1)
        padded_pos_score = padded_pos_score.view(batch_size, num_heads, seq_length2 + 1, seq_length1)
        return padded_pos_score[:, :, 1:].view_as(pos_score)


class FeedForwardModule(nn.Module):
    def __init__(self, dim, expansion=2, dropout_p=0.1):
        super().__init__()
        self.sequential = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * expansion), nn.SiLU(),
                                        nn.Dropout(dropout_p), nn.Linear(dim * expansion, dim),
                                        nn.Dropout(dropout_p))

    def forward(self, x):
        return self.sequential(x)


class ConformerConvModule(nn.Module):
    def __init__(self, in_channels, kernel_size=7, expansion_factor=2, dropout_p=0.1):
        super().__init__()
        assert (kernel_size - 1) % 2 == 0, "kernel_size should be a odd number for 'SAME' padding"
        self.layer_norm = nn.LayerNorm(in_channels)
        self.pointwise1 = nn.Conv1d(in_channels, in_channels * expansion_factor, 1)
        self.glu = nn.GLU(dim=1)
        self.depthwise = nn.Conv1d(in_channels, in_channels, kernel_size, groups=in_channels,
                                   padding=(kernel_size - 1) // 2, bias=False)
        self.bn = nn.BatchNorm1d(in_channels)
        self.swish = nn.SiLU()
        self.pointwise2 = nn.Conv1d(in_channels, in_channels, 1)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, inputs):
        x = self.layer_norm(inputs).transpose(1, 2)
        x = self.glu(self.pointwise1(x))
        x = self.swish(self.bn(self.depthwise(x)))
        return self.dropout(self.pointwise2(x)).transpose(1, 2)


class ConformerBlock(nn.Module):
    def __init__(self, dim, heads=2):
        super().__init__()
        self.ff1, self.ff2 = FeedForwardModule(dim), FeedForwardModule(dim)
        self.norm_attn = nn.LayerNorm(dim)
        self.pos = RelPositionalEncoding(dim)
        self.attn = RelativeMultiHeadAttention(dim, heads)
        self.conv = ConformerConvModule(dim)
        self.norm_out = nn.LayerNorm(dim)

    def forward(self, x, mask):
        x = x + 0.5 * self.ff1(x)
        pos = self.pos(x.size(1)).repeat(x.size(0), 1, 1)
        h = self.norm_attn(x)
        x = x + self.attn(h, h, h, pos, mask)
        x = x + self.conv(x)
        x = x + 0.5 * self.ff2(x)
        return self.norm_out(x)


class Conformer(nn.Module):
    def __init__(self, num_classes, input_dim=16, dim=16, blocks=2):
        super().__init__()
        self.subsample = Conv2dSubampling(1, 4)
        self.proj = nn.Linear(4 * (((input_dim - 1) // 2 - 1) // 2), dim)
        self.blocks = nn.ModuleList([ConformerBlock(dim) for _ in range(blocks)])
        self.fc = nn.Linear(dim, num_classes, bias=False)

    def forward(self, inputs, input_lengths):
        x, lengths = self.subsample(inputs, input_lengths)
        x = self.proj(x)
        t = x.size(1)
        pad = torch.arange(t)[None, :] >= lengths[:, None]
        mask = pad[:, None, None, :]
        for block in self.blocks:
            x = block(x, mask)
        return self.fc(x).log_softmax(dim=-1), lengths


def greedy_decode(log_probs, lengths, blank=0):
    out = []
    for lp, n in zip(log_probs, lengths.tolist()):
        best = torch.unique_consecutive(lp[:n].argmax(-1))
        out.append([t for t in best.tolist() if t != blank])
    return out


shift_demo = RelativeMultiHeadAttention(4, 1)._relative_shift(torch.arange(9.).view(1, 1, 3, 3))
print("relative shift:", shift_demo[0, 0].tolist())
spec = SpecAugment()
feats = torch.randn(3, 40, 16)
aug = spec(feats)
print("specaugment zeroed:", int((aug == 0).sum()), tuple(aug.shape))
model = Conformer(num_classes=6)
print("params:", sum(p.numel() for p in model.parameters()), model.blocks[0].conv.depthwise)
lengths = torch.tensor([40, 33, 27])
targets = torch.randint(1, 6, (3, 4))
target_lengths = torch.tensor([4, 3, 2])
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
opt = torch.optim.AdamW(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, weight_decay=1e-3)
d_model, warmup = 16, 4
sched = torch.optim.lr_scheduler.LambdaLR(
    opt, lambda step: 0.1 * d_model ** -0.5 * min((step + 1) ** -0.5, (step + 1) * warmup ** -1.5))
for step in range(6):
    model.train()
    log_probs, out_lengths = model(spec(feats), lengths)
    loss = ctc(log_probs.transpose(0, 1), targets, out_lengths, target_lengths)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    print(f"step {step} ctc {loss.item():.5f} lr {sched.get_last_lr()[0]:.6f} T' {out_lengths.tolist()}")
model.eval()
with torch.no_grad():
    log_probs, out_lengths = model(feats, lengths)
    log_probs2, _ = model(torch.cat([feats[2:], torch.zeros(1, 40, 16)], 0)[:1], lengths[2:])
print("padding ignored:", torch.allclose(log_probs[2, :out_lengths[2]], log_probs2[0, :out_lengths[2]], atol=1e-4))
print("decoded lengths:", [len(d) for d in greedy_decode(log_probs, out_lengths)])
