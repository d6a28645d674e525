"""CTC forced alignment the way the "Forced Alignment with Wav2Vec2" tutorial first wrote
it (before ``torchaudio.functional.forced_align``): emissions from a small convolutional
acoustic model trained a few steps with ``nn.CTCLoss(zero_infinity=True)`` on synthetic
"speech", ``get_trellis`` filled by ``torch.maximum`` of stay/change paths, ``backtrack``
through ``@dataclass`` ``Point``s, ``merge_repeats`` into ``Segment``s with scores,
``merge_words`` at the ``|`` separator, frame-to-sample ratios; greedy CTC decoding with
``unique_consecutive`` and a prefix-free beam search over ``log_softmax`` outputs."""
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.random.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
labels = ("-", "|", "A", "B", "C", "D", "E")
dictionary = {c: i for i, c in enumerate(labels)}


def synth(transcript, g, frames_per_char=(3, 6)):
    """One feature frame pattern per label, each held for a random count of frames."""
    protos = torch.randn(len(labels), 12, generator=torch.Generator().manual_seed(42))
    feats, spans = [], []
    t = 0
    for ch in transcript:
        n = int(torch.randint(*frames_per_char, (1,), generator=g))
        feats.append(protos[dictionary[ch]].repeat(n, 1))
        spans.append((ch, t, t + n))
        t += n
        gap = int(torch.randint(0, 3, (1,), generator=g))
        if gap:
            feats.append(protos[0].repeat(gap, 1))
            t += gap
    x = torch.cat(feats)
    return x + 0.3 * torch.randn(x.shape, generator=g), spans


class AcousticModel(nn.Module):
    def __init__(self, n_feats=12, hidden=32, n_labels=len(labels)):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(n_feats, hidden, 3, padding=1), nn.GELU(),
                                  nn.Conv1d(hidden, hidden, 3, padding=1), nn.GELU())
        self.head = nn.Linear(hidden, n_labels)

    def forward(self, x):  # (B, T, F) -> (B, T, C)
        return self.head(self.conv(x.transpose(1, 2)).transpose(1, 2))


g = torch.Generator().manual_seed(1)
train = ["ABC|DE", "BAD|CAB", "ACE|BED", "DEAD|BEE", "CAB|ACE", "BE|AD|CE"]
batch = [synth(s, g) for s in train]
xs = nn.utils.rnn.pad_sequence([b[0] for b in batch], batch_first=True)
in_lens = torch.tensor([len(b[0]) for b in batch])
targets = torch.cat([torch.tensor([dictionary[c] for c in s]) for s in train])
tgt_lens = torch.tensor([len(s) for s in train])
model = AcousticModel().to(device)
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
# plain SGD: Adam's first steps turn rounding-level gradients into full-size updates
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for step in range(40):
    log_probs = model(xs).log_softmax(-1).transpose(0, 1)
    loss = ctc(log_probs, targets, in_lens, tgt_lens)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 9:
        print(f"step {step + 1} ctc {loss.item():.4f}")

transcript = "BAD|ACE"
waveform_frames, true_spans = synth(transcript, torch.Generator().manual_seed(9))
with torch.inference_mode():
    emissions = model(waveform_frames.unsqueeze(0))
    emissions = torch.log_softmax(emissions, dim=-1)
emission = emissions[0].cpu().detach()
print("emission", tuple(emission.shape))
tokens = [dictionary[c] for c in transcript]
print(list(zip(transcript, tokens)))


def get_trellis(emission, tokens, blank_id=0):
    num_frame = emission.size(0)
    num_tokens = len(tokens)
    trellis = torch.zeros((num_frame, num_tokens))
    trellis[1:, 0] = torch.cumsum(emission[1:, blank_id], 0)
    trellis[0, 1:] = -float("inf")
    trellis[-num_tokens + 1:, 0] = float("inf")
    for t in range(num_frame - 1):
        trellis[t + 1, 1:] = torch.maximum(
            trellis[t, 1:] + emission[t, blank_id],
            trellis[t, :-1] + emission[t, tokens[1:]])
    return trellis


trellis = get_trellis(emission, tokens)
print("trellis", tuple(trellis.shape), trellis[-1, -1].item(), trellis[:3, :3])


@dataclass
class Point:
    token_index: int
    time_index: int
    score: float


def backtrack(trellis, emission, tokens, blank_id=0):
    t, j = trellis.size(0) - 1, trellis.size(1) - 1
    path = [Point(j, t, emission[t, blank_id].exp().item())]
    while j > 0:
        assert t > 0
        p_stay = emission[t - 1, blank_id]
        p_change = emission[t - 1, tokens[j]]
        stayed = trellis[t - 1, j] + p_stay
        changed = trellis[t - 1, j - 1] + p_change
        t -= 1
        if changed > stayed:
            j -= 1
        prob = (p_change if changed > stayed else p_stay).exp().item()
        path.append(Point(j, t, prob))
    while t > 0:
        prob = emission[t - 1, blank_id].exp().item()
        path.append(Point(j, t - 1, prob))
        t -= 1
    return path[::-1]


path = backtrack(trellis, emission, tokens)
print(path[:3])


@dataclass
class Segment:
    label: str
    start: int
    end: int
    score: float

    def __repr__(self):
        return f"{self.label}\t({self.score:4.2f}): [{self.start:5d}, {self.end:5d})"

    @property
    def length(self):
        return self.end - self.start


def merge_repeats(path):
    i1, i2 = 0, 0
    segments = []
    while i1 < len(path):
        while i2 < len(path) and path[i1].token_index == path[i2].token_index:
            i2 += 1
        score = sum(path[k].score for k in range(i1, i2)) / (i2 - i1)
        segments.append(Segment(transcript[path[i1].token_index], path[i1].time_index,
                                path[i2 - 1].time_index + 1, score))
        i1 = i2
    return segments


segments = merge_repeats(path)
for seg in segments:
    print(seg)
print("true spans", true_spans)


def merge_words(segments, separator="|"):
    words = []
    i1, i2 = 0, 0
    while i1 < len(segments):
        if i2 >= len(segments) or segments[i2].label == separator:
            if i1 != i2:
                segs = segments[i1:i2]
                word = "".join([seg.label for seg in segs])
                score = sum(seg.score * seg.length for seg in segs) / sum(seg.length for seg in segs)
                words.append(Segment(word, segments[i1].start, segments[i2 - 1].end, score))
            i1 = i2 + 1
            i2 = i1
        else:
            i2 += 1
    return words


word_segments = merge_words(segments)
ratio = 320 / trellis.size(0)
for word in word_segments:
    x0, x1 = int(ratio * word.start), int(ratio * word.end)
    print(f"{word.label} ({word.score:.2f}): {x0 / 16000:.4f} - {x1 / 16000:.4f} sec")


def greedy_decode(emission, blank=0):
    indices = torch.argmax(emission, dim=-1)
    indices = torch.unique_consecutive(indices, dim=-1)
    indices = [i for i in indices if i != blank]
    return "".join([labels[i] for i in indices])


print("greedy:", greedy_decode(emission))


def ctc_beam_search(emission, beam=3, blank=0):
    beams = {(): (0.0, float("-inf"))}  # prefix -> (log p ending in blank, not blank)
    for t in range(emission.size(0)):
        lp = emission[t].tolist()
        nxt = {}
        for prefix, (pb, pnb) in beams.items():
            total = torch.logaddexp(torch.tensor(pb), torch.tensor(pnb)).item()
            b, nb = nxt.get(prefix, (float("-inf"), float("-inf")))
            nxt[prefix] = (torch.logaddexp(torch.tensor(b), torch.tensor(total + lp[blank])).item(), nb)
            for c in range(1, len(labels)):
                new = prefix + (c,)
                b2, nb2 = nxt.get(new, (float("-inf"), float("-inf")))
                add = (pb + lp[c]) if prefix and prefix[-1] == c else (total + lp[c])
                nxt[new] = (b2, torch.logaddexp(torch.tensor(nb2), torch.tensor(add)).item())
                if prefix and prefix[-1] == c:
                    b3, nb3 = nxt[prefix]
                    nxt[prefix] = (b3, torch.logaddexp(torch.tensor(nb3),
                                                       torch.tensor(pnb + lp[c])).item())
        scored = sorted(nxt.items(), key=lambda kv: -torch.logaddexp(
            torch.tensor(kv[1][0]), torch.tensor(kv[1][1])).item())
        beams = dict(scored[:beam])
    best = max(beams.items(), key=lambda kv: torch.logaddexp(torch.tensor(kv[1][0]),
                                                            torch.tensor(kv[1][1])).item())
    return "".join(labels[i] for i in best[0]), torch.logaddexp(
        torch.tensor(best[1][0]), torch.tensor(best[1][1])).item()


print("beam:", ctc_beam_search(emission[:20]))
print("ctc of transcript", F.ctc_loss(emission.unsqueeze(1), torch.tensor([tokens]),
                                       torch.tensor([emission.size(0)]),
                                       torch.tensor([len(tokens)]), reduction="sum").item(),
      "best path", trellis[-1, -1].item())
