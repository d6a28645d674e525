"""A GRU encoder-decoder with Luong attention the way the PyTorch chatbot tutorial and
beam-search repositories write it: an embedding shared by encoder and decoder, a
bidirectional GRU whose directions are summed, "dot"/"general"/"concat" attention scores,
a masked NLL loss over padded targets, teacher forcing chosen per batch by random.random(),
GreedySearchDecoder, and a batched beam search keeping (score, tokens, hidden) with topk over
flattened beam x vocab scores and a length penalty."""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)
PAD, SOS, EOS = 0, 1, 2
V = 12


class EncoderRNN(nn.Module):
    def __init__(self, hidden_size, embedding, n_layers=1, dropout=0):
        super().__init__()
        self.n_layers, self.hidden_size, self.embedding = n_layers, hidden_size, embedding
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers,
                          dropout=(0 if n_layers == 1 else dropout), bidirectional=True)

    def forward(self, input_seq, input_lengths, hidden=None):
        embedded = self.embedding(input_seq)
        packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths, enforce_sorted=False)
        outputs, hidden = self.gru(packed, hidden)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs)
        outputs = outputs[:, :, :self.hidden_size] + outputs[:, :, self.hidden_size:]
        return outputs, hidden


class Attn(nn.Module):
    def __init__(self, method, hidden_size):
        super().__init__()
        self.method, self.hidden_size = method, hidden_size
        if self.method == "general":
            self.attn = nn.Linear(hidden_size, hidden_size)
        elif self.method == "concat":
            self.attn = nn.Linear(hidden_size * 2, hidden_size)
            self.v = nn.Parameter(torch.FloatTensor(hidden_size).uniform_(-0.1, 0.1))

    def forward(self, hidden, encoder_outputs, mask):
        if self.method == "general":
            energies = torch.sum(hidden * self.attn(encoder_outputs), dim=2)
        elif self.method == "concat":
            energy = self.attn(torch.cat((hidden.expand(encoder_outputs.size(0), -1, -1),
                                          encoder_outputs), 2)).tanh()
            energies = torch.sum(self.v * energy, dim=2)
        else:
            energies = torch.sum(hidden * encoder_outputs, dim=2)
        energies = energies.t().masked_fill(~mask, -1e10)
        return F.softmax(energies, dim=1).unsqueeze(1)


class LuongAttnDecoderRNN(nn.Module):
    def __init__(self, attn_model, embedding, hidden_size, output_size, n_layers=1, dropout=0.1):
        super().__init__()
        self.embedding = embedding
        self.embedding_dropout = nn.Dropout(dropout)
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers,
                          dropout=(0 if n_layers == 1 else dropout))
        self.concat = nn.Linear(hidden_size * 2, hidden_size)
        self.out = nn.Linear(hidden_size, output_size)
        self.attn = Attn(attn_model, hidden_size)

    def forward(self, input_step, last_hidden, encoder_outputs, mask):
        embedded = self.embedding_dropout(self.embedding(input_step))
        rnn_output, hidden = self.gru(embedded, last_hidden)
        attn_weights = self.attn(rnn_output, encoder_outputs, mask)
        context = attn_weights.bmm(encoder_outputs.transpose(0, 1))
        rnn_output, context = rnn_output.squeeze(0), context.squeeze(1)
        concat_output = torch.tanh(self.concat(torch.cat((rnn_output, context), 1)))
        return F.softmax(self.out(concat_output), dim=1), hidden


def maskNLLLoss(inp, target, mask):
    nTotal = mask.sum()
    crossEntropy = -torch.log(torch.gather(inp, 1, target.view(-1, 1)).squeeze(1))
    loss = crossEntropy.masked_select(mask).mean()
    return loss, nTotal.item()


def make_batch(n):
    seqs = [torch.randint(3, V, (random.randint(2, 5),)) for _ in range(n)]
    src = [s for s in seqs]
    tgt = [torch.cat([s.flip(0), torch.tensor([EOS])]) for s in seqs]
    lengths = torch.tensor([len(s) for s in src])
    src = nn.utils.rnn.pad_sequence(src)
    tgt = nn.utils.rnn.pad_sequence(tgt)
    return src, lengths, tgt, tgt != PAD


hidden_size = 24
embedding = nn.Embedding(V, hidden_size)
encoder = EncoderRNN(hidden_size, embedding)
decoder = LuongAttnDecoderRNN("general", embedding, hidden_size, V, dropout=0.0)
enc_opt = torch.optim.Adam(encoder.parameters(), lr=5e-3)
dec_opt = torch.optim.Adam(decoder.parameters(), lr=5e-3 * 5.0)
teacher_forcing_ratio, clip = 0.7, 50.0
for iteration in range(1, 41):
    src, lengths, tgt, mask = make_batch(16)
    enc_opt.zero_grad()
    dec_opt.zero_grad()
    encoder_outputs, encoder_hidden = encoder(src, lengths)
    src_mask = (src != PAD).t()
    decoder_input = torch.LongTensor([[SOS] * 16])
    decoder_hidden = encoder_hidden[:decoder.gru.num_layers]
    loss, print_losses, n_totals = 0, [], 0
    use_teacher_forcing = random.random() < teacher_forcing_ratio
    for t in range(tgt.size(0)):
        decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden,
                                                 encoder_outputs, src_mask)
        if use_teacher_forcing:
            decoder_input = tgt[t].view(1, -1)
        else:
            _, topi = decoder_output.topk(1)
            decoder_input = torch.LongTensor([[topi[i][0] for i in range(16)]])
        mask_loss, nTotal = maskNLLLoss(decoder_output, tgt[t], mask[t])
        loss += mask_loss
        print_losses.append(mask_loss.item() * nTotal)
        n_totals += nTotal
    loss.backward()
    nn.utils.clip_grad_norm_(encoder.parameters(), clip)
    nn.utils.clip_grad_norm_(decoder.parameters(), clip)
    enc_opt.step()
    dec_opt.step()
    if iteration % 10 == 0:
        print(f"Iteration: {iteration}; Average loss: {sum(print_losses) / n_totals:.4f}; "
              f"forced {use_teacher_forcing}")


class GreedySearchDecoder(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def forward(self, input_seq, input_length, max_length):
        encoder_outputs, encoder_hidden = self.encoder(input_seq, input_length)
        mask = (input_seq != PAD).t()
        decoder_hidden = encoder_hidden[:decoder.gru.num_layers]
        decoder_input = torch.ones(1, 1, dtype=torch.long) * SOS
        all_tokens, all_scores = torch.zeros([0], dtype=torch.long), torch.zeros([0])
        for _ in range(max_length):
            decoder_output, decoder_hidden = self.decoder(decoder_input, decoder_hidden,
                                                          encoder_outputs, mask)
            decoder_scores, decoder_input = torch.max(decoder_output, dim=1)
            all_tokens = torch.cat((all_tokens, decoder_input), dim=0)
            all_scores = torch.cat((all_scores, decoder_scores), dim=0)
            decoder_input = torch.unsqueeze(decoder_input, 0)
        return all_tokens, all_scores


def beam_search(src, length, beam_size=3, max_len=7, alpha=0.7):
    encoder_outputs, encoder_hidden = encoder(src, length)
    mask = (src != PAD).t()
    hidden = encoder_hidden[:1]
    beams = [(0.0, [SOS], hidden)]
    finished = []
    for _ in range(max_len):
        inputs = torch.tensor([[b[1][-1] for b in beams]])
        hid = torch.cat([b[2] for b in beams], 1)
        out, new_hidden = decoder(inputs, hid, encoder_outputs.expand(-1, len(beams), -1),
                                  mask.expand(len(beams), -1))
        scores = torch.tensor([b[0] for b in beams])[:, None] + out.log()
        top_scores, flat = scores.view(-1).topk(beam_size)
        beams_next = []
        for s, f in zip(top_scores.tolist(), flat.tolist()):
            b, tok = divmod(f, V)
            seq = beams[b][1] + [tok]
            if tok == EOS:
                finished.append((s / (len(seq) - 1) ** alpha, seq))
            else:
                beams_next.append((s, seq, new_hidden[:, b:b + 1]))
        if not beams_next:
            break
        beams = beams_next
    finished += [(s / (len(seq) - 1) ** alpha, seq) for s, seq, _ in beams]
    return sorted(finished, key=lambda x: -x[0])


encoder.eval()
decoder.eval()
searcher = GreedySearchDecoder(encoder, decoder)
src = torch.tensor([[5], [7], [3], [9]])
with torch.no_grad():
    tokens, scores = searcher(src, torch.tensor([4]), 6)
    ranked = beam_search(src, torch.tensor([4]))
print("greedy", tokens.tolist(), [round(s, 4) for s in scores.tolist()])
for score, seq in ranked[:3]:
    print("beam", seq, f"{score:.5f}")
