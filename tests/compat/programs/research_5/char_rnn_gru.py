"""A character-level GRU language model as spro/char-rnn.pytorch writes it: random chunks of a
text, an Embedding -> GRU -> Linear model stepped one character at a time, gradient clipping,
temperature sampling with torch.multinomial, and the whole model saved with torch.save."""
import io
import string

import torch
import torch.nn as nn

torch.manual_seed(7)
all_characters = string.printable
n_characters = len(all_characters)
text = ("the quick brown fox jumps over the lazy dog. " * 8 +
        "pack my box with five dozen liquor jugs! " * 6)
file_len = len(text)


def char_tensor(s):
    tensor = torch.zeros(len(s)).long()
    for c in range(len(s)):
        tensor[c] = all_characters.index(s[c])
    return tensor


def random_training_set(chunk_len, batch_size):
    inp = torch.LongTensor(batch_size, chunk_len)
    target = torch.LongTensor(batch_size, chunk_len)
    for bi in range(batch_size):
        start_index = torch.randint(0, file_len - chunk_len - 1, ()).item()
        chunk = text[start_index:start_index + chunk_len + 1]
        inp[bi] = char_tensor(chunk[:-1])
        target[bi] = char_tensor(chunk[1:])
    return inp, target


class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, model="gru", n_layers=1):
        super().__init__()
        self.model = model.lower()
        self.hidden_size, self.n_layers = hidden_size, n_layers
        self.encoder = nn.Embedding(input_size, hidden_size)
        if self.model == "gru":
            self.rnn = nn.GRU(hidden_size, hidden_size, n_layers)
        else:
            self.rnn = nn.LSTM(hidden_size, hidden_size, n_layers)
        self.decoder = nn.Linear(hidden_size, output_size)

    def forward(self, input, hidden):
        batch_size = input.size(0)
        encoded = self.encoder(input)
        output, hidden = self.rnn(encoded.view(1, batch_size, -1), hidden)
        output = self.decoder(output.view(batch_size, -1))
        return output, hidden

    def init_hidden(self, batch_size):
        if self.model == "lstm":
            return (torch.zeros(self.n_layers, batch_size, self.hidden_size),
                    torch.zeros(self.n_layers, batch_size, self.hidden_size))
        return torch.zeros(self.n_layers, batch_size, self.hidden_size)


def generate(decoder, prime_str="th", predict_len=30, temperature=0.8):
    hidden = decoder.init_hidden(1)
    prime_input = char_tensor(prime_str).unsqueeze(0)
    predicted = prime_str
    for p in range(len(prime_str) - 1):
        _, hidden = decoder(prime_input[:, p], hidden)
    inp = prime_input[:, -1]
    for p in range(predict_len):
        output, hidden = decoder(inp, hidden)
        output_dist = output.data.view(-1).div(temperature).exp()
        top_i = torch.multinomial(output_dist, 1)[0]
        predicted_char = all_characters[top_i]
        predicted += predicted_char
        inp = char_tensor(predicted_char).unsqueeze(0)
    return predicted


for kind in ("gru", "lstm"):
    torch.manual_seed(7)
    decoder = CharRNN(n_characters, 32, n_characters, model=kind, n_layers=2)
    decoder_optimizer = torch.optim.Adam(decoder.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()
    chunk_len, batch_size = 20, 8
    for epoch in range(1, 13):
        inp, target = random_training_set(chunk_len, batch_size)
        hidden = decoder.init_hidden(batch_size)
        decoder.zero_grad()
        loss = 0
        for c in range(chunk_len):
            output, hidden = decoder(inp[:, c], hidden)
            loss += criterion(output.view(batch_size, -1), target[:, c])
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(decoder.parameters(), 0.5)
        decoder_optimizer.step()
        if epoch % 4 == 0:
            print(f"[{kind} {epoch}] loss {loss.item() / chunk_len:.4f} norm {norm.item():.4f}")
    print(repr(generate(decoder, "th", 30)))
    buf = io.BytesIO()
    torch.save(decoder, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    torch.manual_seed(3)
    a = generate(loaded, "pa", 20, temperature=0.5)
    torch.manual_seed(3)
    b = generate(decoder, "pa", 20, temperature=0.5)
    print(type(loaded).__name__, a == b, repr(a))
