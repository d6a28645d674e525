"""Text classification with nn.EmbeddingBag and offsets, after the torchtext tutorial
(our own tokenizer and vocabulary, a synthetic four-topic news corpus)."""
import random
import time
from collections import Counter, OrderedDict

import torch
from torch import nn
from torch.utils.data import DataLoader
from torch.utils.data.dataset import random_split

TOPICS = {
    1: "game team season win player coach score league",
    2: "market stock price bank trade profit shares economy",
    3: "computer software chip internet phone data network code",
    4: "election minister vote party government law court policy",
}


def make_corpus(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        label = rng.randint(1, 4)
        words = TOPICS[label].split() + "the a of and to in".split()
        out.append((label, " ".join(rng.choice(words) for _ in range(rng.randint(4, 12)))))
    return out


def basic_english(line):
    return line.lower().replace(",", " , ").split()


class Vocab:
    def __init__(self, counter, specials=("<unk>",)):
        ordered = OrderedDict(sorted(counter.items(), key=lambda x: (-x[1], x[0])))
        self.itos = list(specials) + list(ordered)
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        self.default = 0

    def __len__(self):
        return len(self.itos)

    def __call__(self, tokens):
        return [self.stoi.get(t, self.default) for t in tokens]


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_iter = make_corpus(400, 1)
    test_iter = make_corpus(100, 2)
    counter = Counter()
    for _, text in train_iter:
        counter.update(basic_english(text))
    vocab = Vocab(counter)
    text_pipeline = lambda x: vocab(basic_english(x))
    label_pipeline = lambda x: int(x) - 1
    print(len(vocab), text_pipeline("the market, unknownword"))

    def collate_batch(batch):
        label_list, text_list, offsets = [], [], [0]
        for _label, _text in batch:
            label_list.append(label_pipeline(_label))
            processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
            text_list.append(processed_text)
            offsets.append(processed_text.size(0))
        label_list = torch.tensor(label_list, dtype=torch.int64)
        offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
        text_list = torch.cat(text_list)
        return label_list.to(device), text_list.to(device), offsets.to(device)

    num_class = len(set([label for (label, text) in train_iter]))
    model = TextClassificationModel(len(vocab), 16, num_class).to(device)
    EPOCHS = 5
    LR = 5
    BATCH_SIZE = 16
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    total_accu = None
    num_train = int(len(train_iter) * 0.95)
    split_train_, split_valid_ = random_split(train_iter, [num_train, len(train_iter) - num_train])
    print('split', len(split_train_), len(split_valid_), type(split_train_).__name__)
    train_dataloader = DataLoader(split_train_, batch_size=BATCH_SIZE, shuffle=True,
                                  collate_fn=collate_batch)
    valid_dataloader = DataLoader(split_valid_, batch_size=BATCH_SIZE, shuffle=True,
                                  collate_fn=collate_batch)
    test_dataloader = DataLoader(test_iter, batch_size=BATCH_SIZE, shuffle=True,
                                 collate_fn=collate_batch)
    labels, text, offsets = next(iter(DataLoader(train_iter[:3], batch_size=3,
                                                 collate_fn=collate_batch)))
    print(labels.tolist(), offsets.tolist(), text.dtype, text.shape[0] == sum(
        len(basic_english(t)) for _, t in train_iter[:3]))

    def train(dataloader):
        model.train()
        total_acc, total_count = 0, 0
        for idx, (label, text, offsets) in enumerate(dataloader):
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
        return total_acc / total_count

    def evaluate(dataloader):
        model.eval()
        total_acc, total_count = 0, 0
        with torch.no_grad():
            for idx, (label, text, offsets) in enumerate(dataloader):
                predicted_label = model(text, offsets)
                total_acc += (predicted_label.argmax(1) == label).sum().item()
                total_count += label.size(0)
        return total_acc / total_count

    for epoch in range(1, EPOCHS + 1):
        epoch_start_time = time.time()
        train(train_dataloader)
        accu_val = evaluate(valid_dataloader)
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
    print("test accuracy above 0.5:", evaluate(test_dataloader) > 0.5)
    ag_news_label = {1: "World", 2: "Sports", 3: "Business", 4: "Sci/Tec"}

    def predict(text, text_pipeline):
        with torch.no_grad():
            text = torch.tensor(text_pipeline(text))
            output = model(text, torch.tensor([0]))
            return output.argmax(1).item() + 1

    model = model.to("cpu")
    print("This is a %s news" % ag_news_label[predict("stock market bank profit", text_pipeline)])
    bag = nn.EmbeddingBag.from_pretrained(torch.arange(12.).view(4, 3), mode='max')
    print(bag(torch.tensor([0, 2, 1, 3]), torch.tensor([0, 1])).tolist())
    bag = nn.EmbeddingBag(4, 3, mode='sum', padding_idx=0)
    with torch.no_grad():
        bag.weight.copy_(torch.arange(12.).view(4, 3))
    print(bag(torch.tensor([[0, 2], [1, 3]])).tolist())
    print(bag(torch.tensor([1, 2, 3]), torch.tensor([0, 1]),
              per_sample_weights=torch.tensor([1., 2., 0.5])).tolist())


if __name__ == '__main__':
    main()
