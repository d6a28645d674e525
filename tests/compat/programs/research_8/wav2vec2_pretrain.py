"""Self-supervised speech pre-training the way fairseq's and transformers' wav2vec 2.0 write
it, at toy size: a strided ``Conv1d`` feature encoder with ``GroupNorm`` on the first layer
and GELU, a feature projection with ``LayerNorm``, span masking from numpy
(``compute_mask_indices``) filled with a learned ``masked_spec_embed``, a convolutional
relative position embedding through ``weight_norm(conv, name="weight", dim=2)`` with
``groups``, a Transformer encoder, the Gumbel-softmax product quantizer
(``F.gumbel_softmax(hard=True)`` in training, argmax at eval, codevector perplexity),
negatives sampled from the same utterance, the contrastive loss over
``F.cosine_similarity`` with a temperature and the diversity loss; then CTC fine-tuning
with a frozen feature encoder and greedy decoding."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)

conv_dim, conv_kernel, conv_stride = (16, 16, 16), (10, 3, 3), (5, 2, 2)
hidden, heads, layers, num_groups, num_vars, codevector_dim = 32, 4, 2, 2, 8, 16


class FeatureEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        blocks, in_c = [], 1
        for i, (c, k, s) in enumerate(zip(conv_dim, conv_kernel, conv_stride)):
            blocks.append(nn.Sequential(nn.Conv1d(in_c, c, k, s, bias=False),
                                        nn.GroupNorm(c, c, affine=True) if i == 0
                                        else nn.Identity(), nn.GELU()))
            in_c = c
        self.conv_layers = nn.ModuleList(blocks)
        self._requires_grad = True

    def _freeze_parameters(self):
        for param in self.parameters():
            param.requires_grad = False
        self._requires_grad = False

    def forward(self, input_values):
        hidden_states = input_values[:, None]
        for conv_layer in self.conv_layers:
            hidden_states = conv_layer(hidden_states)
        return hidden_states


class PositionalConvEmbedding(nn.Module):
    def __init__(self, kernel=8, groups=4):
        super().__init__()
        self.conv = nn.Conv1d(hidden, hidden, kernel_size=kernel, padding=kernel // 2,
                              groups=groups)
        self.conv = nn.utils.parametrizations.weight_norm(self.conv, name="weight", dim=2)
        self.remove = 1 if kernel % 2 == 0 else 0

    def forward(self, hidden_states):
        hidden_states = self.conv(hidden_states.transpose(1, 2))
        if self.remove > 0:
            hidden_states = hidden_states[:, :, :-self.remove]
        return F.gelu(hidden_states).transpose(1, 2)


class GumbelVectorQuantizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.codevectors = nn.Parameter(
            torch.FloatTensor(1, num_groups * num_vars, codevector_dim // num_groups))
        self.weight_proj = nn.Linear(conv_dim[-1], num_groups * num_vars)
        self.temperature = 2.0
        nn.init.uniform_(self.codevectors)

    @staticmethod
    def _compute_perplexity(probs, mask=None):
        marginal_probs = probs.mean(dim=0)
        return torch.exp(-torch.sum(marginal_probs * torch.log(marginal_probs + 1e-7),
                                    dim=-1)).sum()

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_size = hidden_states.shape
        hidden_states = self.weight_proj(hidden_states)
        hidden_states = hidden_states.view(batch_size * sequence_length * num_groups, -1)
        if self.training:
            codevector_probs = F.gumbel_softmax(hidden_states.float(), tau=self.temperature,
                                                hard=True).type_as(hidden_states)
            codevector_soft_dist = torch.softmax(
                hidden_states.view(batch_size * sequence_length, num_groups, -1).float(),
                dim=-1)
            perplexity = self._compute_perplexity(codevector_soft_dist)
        else:
            codevector_idx = hidden_states.argmax(dim=-1)
            codevector_probs = hidden_states.new_zeros(hidden_states.shape).scatter_(
                -1, codevector_idx.view(-1, 1), 1.0)
            codevector_probs = codevector_probs.view(batch_size * sequence_length,
                                                     num_groups, -1)
            perplexity = self._compute_perplexity(codevector_probs)
        codevector_probs = codevector_probs.view(batch_size * sequence_length, -1)
        codevectors_per_group = codevector_probs.unsqueeze(-1) * self.codevectors
        codevectors = codevectors_per_group.view(batch_size * sequence_length, num_groups,
                                                 num_vars, -1)
        codevectors = codevectors.sum(-2).view(batch_size, sequence_length, -1)
        return codevectors, perplexity


def compute_mask_indices(shape, mask_prob, mask_length, min_masks=1):
    batch_size, sequence_length = shape
    epsilon = np.random.rand(1).item()
    num_masked_span = int(mask_prob * sequence_length / mask_length + epsilon)
    num_masked_span = max(num_masked_span, min_masks)
    spec_aug_mask = np.zeros((batch_size, sequence_length), dtype=bool)
    for b in range(batch_size):
        starts = np.random.choice(sequence_length - (mask_length - 1), num_masked_span,
                                  replace=False)
        for s in starts:
            spec_aug_mask[b, s:s + mask_length] = True
    return spec_aug_mask


def sample_negative_indices(features_shape, num_negatives, mask_time_indices):
    batch_size, sequence_length = features_shape
    sequence_length_range = np.arange(sequence_length)
    sampled_negative_indices = np.zeros((batch_size, sequence_length, num_negatives),
                                        dtype=np.int32)
    for batch_idx in range(batch_size):
        high = mask_time_indices[batch_idx].sum() - 1
        mapped_masked_indices = sequence_length_range[mask_time_indices[batch_idx]]
        feature_indices = np.broadcast_to(np.arange(high + 1)[:, None],
                                          (high + 1, num_negatives))
        sampled_indices = np.random.randint(0, high, size=(high + 1, num_negatives))
        sampled_indices[sampled_indices >= feature_indices] += 1
        sampled_negative_indices[batch_idx][mask_time_indices[batch_idx]] = \
            mapped_masked_indices[sampled_indices]
        sampled_negative_indices[batch_idx] += batch_idx * sequence_length
    return sampled_negative_indices


class Wav2Vec2ForPreTraining(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature_extractor = FeatureEncoder()
        self.layer_norm = nn.LayerNorm(conv_dim[-1])
        self.projection = nn.Linear(conv_dim[-1], hidden)
        self.masked_spec_embed = nn.Parameter(torch.Tensor(hidden).uniform_())
        self.pos_conv_embed = PositionalConvEmbedding()
        enc_layer = nn.TransformerEncoderLayer(hidden, heads, 64, dropout=0.0,
                                               activation="gelu", batch_first=True,
                                               norm_first=True)
        self.encoder = nn.TransformerEncoder(enc_layer, layers, enable_nested_tensor=False)
        self.quantizer = GumbelVectorQuantizer()
        self.project_hid = nn.Linear(hidden, codevector_dim)
        self.project_q = nn.Linear(codevector_dim, codevector_dim)

    def encode(self, input_values, mask_time_indices=None):
        extract_features = self.feature_extractor(input_values).transpose(1, 2)
        norm_features = self.layer_norm(extract_features)
        hidden_states = self.projection(norm_features)
        if mask_time_indices is not None:
            hidden_states[mask_time_indices] = self.masked_spec_embed.to(hidden_states.dtype)
        hidden_states = hidden_states + self.pos_conv_embed(hidden_states)
        return self.encoder(hidden_states), extract_features

    @staticmethod
    def compute_contrastive_logits(target_features, negative_features, predicted_features,
                                   temperature=0.1):
        target_features = torch.cat([target_features, negative_features], dim=0)
        logits = torch.cosine_similarity(predicted_features.float(), target_features.float(),
                                         dim=-1).type_as(target_features)
        return logits / temperature

    def forward(self, input_values, mask_time_indices, sampled_negative_indices):
        hidden_states, extract_features = self.encode(input_values, mask_time_indices)
        transformer_features = self.project_hid(hidden_states)
        quantized_features, codevector_perplexity = self.quantizer(extract_features)
        quantized_features = self.project_q(quantized_features)
        batch_size, sequence_length, hidden_size = quantized_features.shape
        negative_quantized_features = quantized_features.view(-1, hidden_size)[
            sampled_negative_indices.long().view(-1)]
        negative_quantized_features = negative_quantized_features.view(
            batch_size, sequence_length, -1, hidden_size).permute(2, 0, 1, 3)
        logits = self.compute_contrastive_logits(quantized_features[None, :],
                                                 negative_quantized_features,
                                                 transformer_features, 0.1)
        neg_is_pos = (quantized_features == negative_quantized_features).all(-1)
        if neg_is_pos.any():
            logits[1:][neg_is_pos] = float("-inf")
        logits = logits.transpose(0, 2).reshape(-1, logits.size(0))
        target = ((1 - mask_time_indices.long()) * -100).transpose(0, 1).flatten()
        contrastive_loss = F.cross_entropy(logits.float(), target, reduction="sum")
        num_codevectors = num_groups * num_vars
        diversity_loss = ((num_codevectors - codevector_perplexity) / num_codevectors) * \
            mask_time_indices.sum()
        loss = contrastive_loss + 0.1 * diversity_loss
        return loss, contrastive_loss, diversity_loss, codevector_perplexity


def synth_audio(n, length, g):
    t = torch.arange(length) / 1600.0
    f = 80 + 300 * torch.rand(n, 1, generator=g)
    return torch.sin(2 * math.pi * f * t) * (0.5 + 0.5 * torch.rand(n, 1, generator=g)) + \
        0.05 * torch.randn(n, length, generator=g)


model = Wav2Vec2ForPreTraining()
print("encoder output frames for 800 samples:",
      model.feature_extractor(torch.zeros(1, 800)).shape[-1])
pc = model.pos_conv_embed.conv
print("weight_norm dim=2:", tuple(pc.parametrizations.weight.original0.shape),
      tuple(pc.parametrizations.weight.original1.shape))
g = torch.Generator().manual_seed(1)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
for step in range(5):
    audio = synth_audio(4, 800, g)
    seq_len = model.feature_extractor(audio).shape[-1]
    mask = compute_mask_indices((4, seq_len), mask_prob=0.4, mask_length=3)
    negs = sample_negative_indices((4, seq_len), 5, mask)
    model.train()
    loss, c_loss, d_loss, ppl = model(audio, torch.from_numpy(mask), torch.from_numpy(negs))
    optimizer.zero_grad()
    loss.backward()
    gn = nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    optimizer.step()
    model.quantizer.temperature = max(2.0 * 0.9 ** (step + 1), 0.5)
    print(f"step {step} loss {loss.item():.4f} contrastive {c_loss.item():.4f} "
          f"diversity {d_loss.item():.4f} perplexity {ppl.item():.4f} masked {mask.sum()} "
          f"grad {gn.item():.3f}")

model.eval()
with torch.no_grad():
    q, ppl = model.quantizer(model.feature_extractor(synth_audio(2, 800, g)).transpose(1, 2))
print("eval quantized:", tuple(q.shape), f"perplexity {ppl.item():.4f}")


# --- CTC fine-tuning with a frozen feature encoder ----------------------------------------------
class Wav2Vec2ForCTC(nn.Module):
    def __init__(self, pretrained, vocab=5):
        super().__init__()
        self.wav2vec2 = pretrained
        self.dropout = nn.Dropout(0.1)
        self.lm_head = nn.Linear(hidden, vocab)

    def forward(self, input_values):
        hidden_states, _ = self.wav2vec2.encode(input_values)
        return self.lm_head(self.dropout(hidden_states))


ctc = Wav2Vec2ForCTC(model)
ctc.wav2vec2.feature_extractor._freeze_parameters()
trainable = [n for n, p in ctc.named_parameters() if p.requires_grad]
print("frozen:", sum(not p.requires_grad for p in ctc.parameters()), "trainable:", len(trainable))
opt = torch.optim.Adam([p for p in ctc.parameters() if p.requires_grad], lr=1e-3)
labels = torch.tensor([[1, 2, 3, 0], [2, 2, 4, 1]])
label_lengths = (labels > 0).sum(-1)
for step in range(4):
    ctc.train()
    audio = synth_audio(2, 800, g)
    log_probs = F.log_softmax(ctc(audio), dim=-1, dtype=torch.float32).transpose(0, 1)
    input_lengths = torch.full((2,), log_probs.shape[0], dtype=torch.long)
    flat = labels[labels > 0]
    with torch.backends.cudnn.flags(enabled=False):
        loss = F.ctc_loss(log_probs, flat, input_lengths,
                          label_lengths, blank=0, reduction="mean",
                          zero_infinity=True)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"ctc step {step} loss {loss.item():.4f}")
ctc.eval()
with torch.no_grad():
    ids = ctc(synth_audio(1, 800, g)).argmax(-1)[0]
print("greedy ids:", torch.unique_consecutive(ids).tolist())
print("feature encoder unchanged grads:",
      all(p.grad is None for p in ctc.wav2vec2.feature_extractor.parameters()))
