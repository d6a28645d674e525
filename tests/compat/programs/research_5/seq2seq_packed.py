"""A seq2seq model in the style of bentrevett/pytorch-seq2seq's "packed padded sequences,
masking" notebook: a bidirectional GRU encoder over packed batches, additive attention that
masks padding, teacher forcing chosen by random.random(), and greedy decoding."""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

SEED = 1234
random.seed(SEED)
torch.manual_seed(SEED)
PAD, SOS, EOS = 0, 1, 2
V = 12


def make_pair():
    n = random.randint(2, 6)
    src = [random.randint(3, V - 1) for _ in range(n)]
    return torch.tensor(src + [EOS]), torch.tensor([SOS] + src[::-1] + [EOS])


def collate(batch):
    src, trg = zip(*batch)
    lens = torch.tensor([len(s) for s in src])
    return pad_sequence(src, padding_value=PAD), lens, pad_sequence(trg, padding_value=PAD)


class Encoder(nn.Module):
    def __init__(self, emb, enc_hid, dec_hid, dropout):
        super().__init__()
        self.embedding = nn.Embedding(V, emb)
        self.rnn = nn.GRU(emb, enc_hid, bidirectional=True)
        self.fc = nn.Linear(enc_hid * 2, dec_hid)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, src_len):
        embedded = self.dropout(self.embedding(src))
        packed = pack_padded_sequence(embedded, src_len.to("cpu"), enforce_sorted=False)
        packed_outputs, hidden = self.rnn(packed)
        outputs, _ = pad_packed_sequence(packed_outputs)
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
        return outputs, hidden


class Attention(nn.Module):
    def __init__(self, enc_hid, dec_hid):
        super().__init__()
        self.attn = nn.Linear(enc_hid * 2 + dec_hid, dec_hid)
        self.v = nn.Linear(dec_hid, 1, bias=False)

    def forward(self, hidden, encoder_outputs, mask):
        src_len = encoder_outputs.shape[0]
        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        attention = self.v(energy).squeeze(2)
        attention = attention.masked_fill(mask == 0, -1e10)
        return F.softmax(attention, dim=1)


class Decoder(nn.Module):
    def __init__(self, emb, enc_hid, dec_hid, dropout, attention):
        super().__init__()
        self.attention = attention
        self.embedding = nn.Embedding(V, emb)
        self.rnn = nn.GRU(enc_hid * 2 + emb, dec_hid)
        self.fc_out = nn.Linear(enc_hid * 2 + dec_hid + emb, V)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, encoder_outputs, mask):
        input = input.unsqueeze(0)
        embedded = self.dropout(self.embedding(input))
        a = self.attention(hidden, encoder_outputs, mask).unsqueeze(1)
        weighted = torch.bmm(a, encoder_outputs.permute(1, 0, 2)).permute(1, 0, 2)
        output, hidden = self.rnn(torch.cat((embedded, weighted), dim=2), hidden.unsqueeze(0))
        assert (output == hidden).all()
        prediction = self.fc_out(torch.cat((output.squeeze(0), weighted.squeeze(0),
                                            embedded.squeeze(0)), dim=1))
        return prediction, hidden.squeeze(0), a.squeeze(1)


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def create_mask(self, src):
        return (src != PAD).permute(1, 0)

    def forward(self, src, src_len, trg, teacher_forcing_ratio=0.5):
        trg_len, batch_size = trg.shape
        outputs = torch.zeros(trg_len, batch_size, V)
        encoder_outputs, hidden = self.encoder(src, src_len)
        input = trg[0, :]
        mask = self.create_mask(src)
        for t in range(1, trg_len):
            output, hidden, _ = self.decoder(input, hidden, encoder_outputs, mask)
            outputs[t] = output
            teacher_force = random.random() < teacher_forcing_ratio
            input = trg[t] if teacher_force else output.argmax(1)
        return outputs


def init_weights(m):
    for name, param in m.named_parameters():
        if "weight" in name:
            nn.init.normal_(param.data, mean=0, std=0.01)
        else:
            nn.init.constant_(param.data, 0)


attn = Attention(16, 16)
model = Seq2Seq(Encoder(8, 16, 16, 0.1), Decoder(8, 16, 16, 0.1, attn))
model.apply(init_weights)
print(f"The model has {sum(p.numel() for p in model.parameters() if p.requires_grad):,} "
      "trainable parameters")
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss(ignore_index=PAD)
train = [make_pair() for _ in range(96)]
loader = torch.utils.data.DataLoader(train, batch_size=16, shuffle=True, collate_fn=collate)
for epoch in range(3):
    model.train()
    epoch_loss = 0
    for src, src_len, trg in loader:
        optimizer.zero_grad()
        output = model(src, src_len, trg)
        output = output[1:].view(-1, output.shape[-1])
        loss = criterion(output, trg[1:].view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1)
        optimizer.step()
        epoch_loss += loss.item()
    print(f"Epoch: {epoch + 1:02} | Train Loss: {epoch_loss / len(loader):.3f}")


def translate(src):
    model.eval()
    with torch.no_grad():
        src_t = src.unsqueeze(1)
        enc, hidden = model.encoder(src_t, torch.tensor([len(src)]))
        mask = model.create_mask(src_t)
        trg, attns = [SOS], torch.zeros(10, 1, len(src))
        for i in range(10):
            out, hidden, a = model.decoder(torch.tensor([trg[-1]]), hidden, enc, mask)
            attns[i] = a
            trg.append(out.argmax(1).item())
            if trg[-1] == EOS:
                break
    return trg, attns[:i + 1]


for src, _ in train[:3]:
    trg, a = translate(src)
    print(src.tolist(), "->", trg, "attn", a.shape, f"{a.max().item():.4f}")
