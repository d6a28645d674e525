"""Tree-structured LSTMs the way dasguptar/treelstm.pytorch and the Tai et al. ports write
them: s-expression trees parsed into a ``Tree`` class, a child-sum TreeLSTM whose
``node_forward`` sums children's hidden states and gates each child's cell with its own
forget gate (``torch.split`` of one fused ``iou`` linear), post-order recursion,
per-node sentiment labels with ``NLLLoss`` over ``log_softmax``, ``Adagrad`` with weight
decay on all but the frozen embedding, and a checkpoint of model, optimizer and vocabulary
reloaded for evaluation."""
import io
import logging
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(levelname)s:%(message)s", level=logging.INFO,
                    handlers=[logging.StreamHandler(sys.stdout)], force=True)
logger = logging.getLogger("treelstm")
torch.manual_seed(123)


class Tree:
    def __init__(self):
        self.parent, self.children, self.num_children = None, [], 0
        self.word, self.gold_label, self.state = None, None, None

    def add_child(self, child):
        child.parent = self
        self.num_children += 1
        self.children.append(child)

    def size(self):
        return 1 + sum(c.size() for c in self.children)

    def depth(self):
        return 1 + max((c.depth() for c in self.children), default=0)


def parse(s):
    tokens = s.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def rec():
        nonlocal pos
        assert tokens[pos] == "("
        pos += 1
        node = Tree()
        node.gold_label = int(tokens[pos])
        pos += 1
        if tokens[pos] == "(":
            while tokens[pos] == "(":
                node.add_child(rec())
        else:
            node.word = tokens[pos]
            pos += 1
        assert tokens[pos] == ")"
        pos += 1
        return node

    return rec()


SENTENCES = [
    "(2 (2 the) (2 (2 movie) (2 was)))",
    "(2 (1 (1 not) (2 good)) (2 .))",
    "(2 (2 (2 a) (2 truly)) (2 (2 great) (2 film)))",
    "(0 (0 (0 awful) (2 acting)) (2 (2 and) (1 (1 dull) (2 plot))))",
    "(2 (2 (2 great) (2 plot)) (1 (1 awful) (2 film)))",
    "(1 (1 (2 the) (1 dull)) (2 movie))",
    "(2 (2 not) (1 (1 (2 a) (1 dull)) (2 film)))",
    "(2 (2 truly) (2 great))",
]
trees = [parse(s) for s in SENTENCES]
vocab = {"<unk>": 0}
for s in SENTENCES:
    for tok in s.replace("(", " ").replace(")", " ").split():
        if not tok.isdigit():
            vocab.setdefault(tok, len(vocab))
print(f"{len(trees)} trees, vocab {len(vocab)}, sizes {[t.size() for t in trees]}, depths {[t.depth() for t in trees]}")


class ChildSumTreeLSTM(nn.Module):
    def __init__(self, in_dim, mem_dim):
        super().__init__()
        self.in_dim, self.mem_dim = in_dim, mem_dim
        self.ioux = nn.Linear(in_dim, 3 * mem_dim)
        self.iouh = nn.Linear(mem_dim, 3 * mem_dim)
        self.fx = nn.Linear(in_dim, mem_dim)
        self.fh = nn.Linear(mem_dim, mem_dim)

    def node_forward(self, inputs, child_c, child_h):
        child_h_sum = torch.sum(child_h, dim=0, keepdim=True)
        iou = self.ioux(inputs) + self.iouh(child_h_sum)
        i, o, u = torch.split(iou, iou.size(1) // 3, dim=1)
        i, o, u = torch.sigmoid(i), torch.sigmoid(o), torch.tanh(u)
        f = torch.sigmoid(self.fh(child_h) + self.fx(inputs).repeat(len(child_h), 1))
        fc = torch.mul(f, child_c)
        c = torch.mul(i, u) + torch.sum(fc, dim=0, keepdim=True)
        h = torch.mul(o, torch.tanh(c))
        return c, h

    def forward(self, tree, inputs):
        for child in tree.children:
            self.forward(child, inputs)
        if tree.num_children == 0:
            child_c = inputs[0].detach().new(1, self.mem_dim).fill_(0.0).requires_grad_()
            child_h = inputs[0].detach().new(1, self.mem_dim).fill_(0.0).requires_grad_()
        else:
            child_c, child_h = zip(*(x.state for x in tree.children))
            child_c, child_h = torch.cat(child_c, dim=0), torch.cat(child_h, dim=0)
        tree.state = self.node_forward(inputs[tree.idx], child_c, child_h)
        return tree.state


class SentimentModel(nn.Module):
    def __init__(self, vocab_size, in_dim, mem_dim, num_classes, freeze_embed=True):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, in_dim, padding_idx=0)
        if freeze_embed:
            self.emb.weight.requires_grad = False
        self.childsumtreelstm = ChildSumTreeLSTM(in_dim, mem_dim)
        self.wh = nn.Linear(mem_dim, num_classes)

    def forward(self, tree, tokens):
        self.childsumtreelstm(tree, self.emb(tokens))
        return tree


def leaves_in_order(tree, out):
    if tree.num_children == 0:
        tree.idx = len(out)
        out.append(vocab.get(tree.word, 0))
    for c in tree.children:
        leaves_in_order(c, out)
    return out


def assign_internal(tree, n_leaves):
    # internal nodes read a zero input row past the leaves, as the constituency trees do
    if tree.num_children:
        tree.idx = n_leaves
    for c in tree.children:
        assign_internal(c, n_leaves)


def node_losses(model, tree, criterion):
    out = F.log_softmax(model.wh(tree.state[1]), dim=1)
    loss = criterion(out, torch.tensor([tree.gold_label]))
    correct = int(out.argmax(1).item() == tree.gold_label)
    n = 1
    for c in tree.children:
        l, k, m = node_losses(model, c, criterion)
        loss, correct, n = loss + l, correct + k, n + m
    return loss, correct, n


def prepare(tree):
    toks = leaves_in_order(tree, [])
    assign_internal(tree, len(toks))
    return torch.tensor(toks + [0], dtype=torch.long)


model = SentimentModel(len(vocab), 8, 12, 3)
logger.info("model:\n%s", model)
optimizer = torch.optim.Adagrad(filter(lambda p: p.requires_grad, model.parameters()), lr=0.05, weight_decay=1e-4)
criterion = nn.NLLLoss()
inputs = [prepare(t) for t in trees]
for epoch in range(5):
    total, correct, count = 0.0, 0, 0
    optimizer.zero_grad()
    for k, (tree, toks) in enumerate(zip(trees, inputs)):
        model(tree, toks)
        loss, c, n = node_losses(model, tree, criterion)
        total, correct, count = total + loss.item(), correct + c, count + n
        (loss / n).backward()
        if k % 4 == 3:
            optimizer.step()
            optimizer.zero_grad()
    logger.info("epoch %d loss %.5f node-acc %.4f", epoch, total / count, correct / count)

buf = io.BytesIO()
torch.save({"model": model.state_dict(), "optim": optimizer.state_dict(), "vocab": vocab, "epoch": 5}, buf)
buf.seek(0)
ckpt = torch.load(buf)
fresh = SentimentModel(len(ckpt["vocab"]), 8, 12, 3)
fresh.load_state_dict(ckpt["model"])
print("adagrad state keys", sorted(ckpt["optim"]["state"][0]), "sum", ckpt["optim"]["state"][0]["sum"].sum().item())
with torch.no_grad():
    for tree, toks in zip(trees[:3], inputs[:3]):
        fresh(tree, toks)
        print("root probs", [round(p, 4) for p in F.softmax(fresh.wh(tree.state[1]), 1)[0].tolist()])
