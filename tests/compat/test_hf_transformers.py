"""Hugging Face transformers, unchanged, on ember under the alias: what users do with it.

Each test writes a driver program that builds tiny random-initialised models (hidden size 32,
two layers, no downloads), runs it on PyTorch and then on ember (``python -m
ember.compat.run``) with ``_both`` from test_third_party_libs.py, and compares the saved
numbers. The PyTorch run saves each model's initial weights and the ember run loads them, so
both start from the same parameters. Covered: model families (encoder-decoder, encoder-only
with classification heads, vision, speech, rotary decoders with grouped-query attention,
sliding windows and mixture of experts) through forward, ``labels=`` losses, backward and
AdamW steps; ``generate()`` strategies with their caches; the ``Trainer`` (training,
evaluation, checkpoints, resuming); checkpoints written by one framework and read by the
other. Every test skips when PyTorch or transformers is not installed.

The tests at the end check, without transformers, the ember fixes these programs needed.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.compat.test_third_party_libs import ROOT, _assert_same, _both, _needs, _run

needs_hf = _needs("transformers", "safetensors")

# The drivers' shared preamble: the inputs, and ``start(name, model)``, which saves the
# model's initial weights (PyTorch's run, first) or loads them (ember's run).
PREAMBLE = """
    import os, sys
    import numpy as np
    import torch
    import transformers as T

    out_path, init_dir, specs = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    out = {}
    rng = np.random.default_rng(0)
    ids = torch.from_numpy(rng.integers(3, 97, (2, 9)))
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, :2] = 0  # a left-padded row
    D = dict(bos_token_id=0, eos_token_id=1, pad_token_id=2)
    A = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=64,
             vocab_size=97, max_position_embeddings=64)

    def start(name, model):
        f = os.path.join(init_dir, name.replace(":", "_") + ".npz")
        if os.path.exists(f):
            z = np.load(f)
            model.load_state_dict({k: torch.from_numpy(z[k]) for k in z.files}, strict=False)
        else:
            np.savez(f, **{k: v.detach().numpy() for k, v in model.state_dict().items()})
        return model

    def t5():
        return T.T5ForConditionalGeneration(T.T5Config(
            vocab_size=97, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
            decoder_start_token_id=0, pad_token_id=2, eos_token_id=1))

    def bart():
        return T.BartForConditionalGeneration(T.BartConfig(
            vocab_size=97, d_model=32, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
            decoder_ffn_dim=64, max_position_embeddings=64, decoder_start_token_id=0,
            forced_eos_token_id=None, **D))

    def whisper():
        return T.WhisperForConditionalGeneration(T.WhisperConfig(
            vocab_size=97, num_mel_bins=8, d_model=32, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
            decoder_ffn_dim=64, max_source_positions=16, max_target_positions=32,
            decoder_start_token_id=0, begin_suppress_tokens=None, suppress_tokens=None, **D))

    def llama(**kw):
        return T.LlamaForCausalLM(T.LlamaConfig(**A, num_key_value_heads=2, **D, **kw))
"""

FAMILY_DRIVER = PREAMBLE + """
    pix = torch.from_numpy(rng.standard_normal((2, 3, 16, 16)).astype(np.float32))
    mel = torch.from_numpy(rng.standard_normal((2, 8, 32)).astype(np.float32))
    dec = torch.from_numpy(rng.integers(3, 97, (2, 5)))
    tags = torch.from_numpy(rng.integers(0, 3, (2, 9)))
    two = torch.tensor([0, 2])

    def build(name):
        if name == "t5":
            return t5(), dict(input_ids=ids, attention_mask=mask, labels=dec)
        if name == "bart":
            return bart(), dict(input_ids=ids, attention_mask=mask, labels=dec)
        if name == "whisper":  # a convolutional front end over mel features
            return whisper(), dict(input_features=mel, labels=dec)
        if name == "roberta":
            cfg = T.RobertaConfig(**A, num_labels=3, pad_token_id=1)
            return (T.RobertaForTokenClassification(cfg),
                    dict(input_ids=ids, attention_mask=mask, labels=tags))
        if name == "distilbert":
            cfg = T.DistilBertConfig(vocab_size=97, dim=32, n_layers=2, n_heads=4,
                                     hidden_dim=64, max_position_embeddings=64, num_labels=3)
            return (T.DistilBertForSequenceClassification(cfg),
                    dict(input_ids=ids, attention_mask=mask, labels=two))
        if name == "vit":
            cfg = T.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=64, image_size=16, patch_size=4, num_labels=3)
            return T.ViTForImageClassification(cfg), dict(pixel_values=pix, labels=two)
        if name == "clip":  # text and vision towers, the contrastive loss
            tower = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64)
            cfg = T.CLIPConfig(
                text_config=dict(tower, vocab_size=97, max_position_embeddings=64, **D),
                vision_config=dict(tower, image_size=16, patch_size=4), projection_dim=16)
            return T.CLIPModel(cfg), dict(input_ids=ids, attention_mask=mask,
                                          pixel_values=pix, return_loss=True)
        if name == "llama_cls":  # the last non-pad token's logits
            cfg = T.LlamaConfig(**A, num_key_value_heads=2, num_labels=3, **D)
            return (T.LlamaForSequenceClassification(cfg),
                    dict(input_ids=ids, attention_mask=mask, labels=two))
        if name == "neox":  # partial rotary
            return (T.GPTNeoXForCausalLM(T.GPTNeoXConfig(**A, rotary_pct=0.5, **D)),
                    dict(input_ids=ids, attention_mask=mask, labels=ids))
        kw = dict(A, num_key_value_heads=2, **D)
        if name == "mistral":
            kw["sliding_window"] = 4
            model = T.MistralForCausalLM(T.MistralConfig(**kw))
        elif name == "qwen2":
            kw.update(sliding_window=4, use_sliding_window=True, max_window_layers=1)
            model = T.Qwen2ForCausalLM(T.Qwen2Config(**kw))
        elif name == "gemma":
            model = T.GemmaForCausalLM(T.GemmaConfig(**kw, head_dim=8))
        elif name == "mixtral":  # the loss adds the router's balancing loss in place
            kw.update(sliding_window=4, num_local_experts=4, num_experts_per_tok=2,
                      output_router_logits=True)
            model = T.MixtralForCausalLM(T.MixtralConfig(**kw))
        return model, dict(input_ids=ids, attention_mask=mask, labels=ids)

    for spec in specs:
        name, _, attn = spec.partition(":")
        torch.manual_seed(0)
        m, inputs = build(name)
        if attn:
            m.set_attn_implementation(attn)
        start(spec, m).train()
        for mod in m.modules():  # dropout draws differ; the rest must not
            if isinstance(mod, torch.nn.Dropout):
                mod.p = 0.0
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.01)
        for step in range(3):
            res = m(**inputs)
            out[f"{spec}_loss{step}"] = res.loss.detach().numpy()
            res.loss.backward()
            out[f"{spec}_gradnorm{step}"] = torch.nn.utils.clip_grad_norm_(
                m.parameters(), 1e9).numpy()
            opt.step()
            opt.zero_grad()
        logits = res.logits if "logits" in res else res.logits_per_image
        out[spec + "_logits"] = logits.detach().numpy()
    np.savez(out_path, **out)
"""


def _families(tmp_path, specs):
    init = tmp_path / "init"
    init.mkdir()
    t, e = _both(tmp_path, FAMILY_DRIVER, [init, specs])
    _assert_same(t, e, rtol=1e-4, atol=2e-5)


@needs_hf
def test_encoder_decoder_families_train_as_on_torch(tmp_path):
    _families(tmp_path, "t5,bart,whisper")


@needs_hf
def test_encoder_families_with_heads_train_as_on_torch(tmp_path):
    _families(tmp_path, "roberta,distilbert,vit,clip")


@needs_hf
def test_rotary_decoders_train_as_on_torch(tmp_path):
    _families(tmp_path, "mistral,qwen2:eager,gemma,neox")


@needs_hf
def test_mixture_of_experts_and_classifier_train_as_on_torch(tmp_path):
    # Mixtral's ``loss += coef * aux_loss`` writes into cross entropy's result in place
    _families(tmp_path, "mixtral,mistral:eager,llama_cls")


GENERATE_DRIVER = PREAMBLE + """
    ids, mask = ids[:, :7], mask[:, :7]
    for name in specs:
        torch.manual_seed(0)
        if name == "gpt2":
            m = T.GPT2LMHeadModel(T.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=97,
                                               n_positions=64, **D))
        else:
            m = dict(llama=llama, t5=t5, bart=bart)[name]()
        start(name, m).eval()
        kw = dict(attention_mask=mask, max_new_tokens=6, pad_token_id=2)
        out[name + "_greedy"] = m.generate(ids, do_sample=False, **kw).numpy()
        out[name + "_nocache"] = m.generate(ids, do_sample=False, use_cache=False, **kw).numpy()
        cache = T.DynamicCache() if name in ("llama", "gpt2") else \\
            T.EncoderDecoderCache(T.DynamicCache(), T.DynamicCache())
        out[name + "_dynamic"] = m.generate(ids, past_key_values=cache, **kw).numpy()
        if name == "llama":
            out[name + "_static"] = m.generate(ids, cache_implementation="static", **kw).numpy()
        torch.manual_seed(123)
        out[name + "_sample"] = m.generate(ids, do_sample=True, top_k=20, top_p=0.9,
                                           temperature=0.8, **kw).numpy()
        r = m.generate(ids, num_beams=3, num_return_sequences=2, output_scores=True,
                       return_dict_in_generate=True, **kw)
        out[name + "_beams"] = r.sequences.numpy()
        out[name + "_beam_scores"] = r.sequences_scores.numpy()
        torch.manual_seed(7)
        out[name + "_beam_sample"] = m.generate(ids, num_beams=2, do_sample=True, **kw).numpy()
    np.savez(out_path, **out)
"""


@needs_hf
@pytest.mark.parametrize("specs", ["llama,gpt2", "t5,bart"])
def test_generate_strategies_give_torchs_tokens(tmp_path, specs):
    # greedy with and without a cache, a DynamicCache passed in, a static cache, seeded
    # top-k/top-p sampling, beam search with scores, and beam sampling
    init = tmp_path / "init"
    init.mkdir()
    t, e = _both(tmp_path, GENERATE_DRIVER, [init, specs])
    _assert_same(t, e, rtol=1e-4, atol=2e-5)


TRAINER_DRIVER = PREAMBLE + """
    import json
    work = out_path[:-4] + "_run"
    X, Y = rng.integers(3, 97, (24, 8)), rng.integers(0, 3, 24)

    class Rows(torch.utils.data.Dataset):
        def __init__(self, lo, hi):
            self.lo, self.hi = lo, hi

        def __len__(self):
            return self.hi - self.lo

        def __getitem__(self, i):
            return {"input_ids": torch.tensor(X[self.lo + i]),
                    "labels": torch.tensor(int(Y[self.lo + i]))}

    cfg = T.BertConfig(**A, num_labels=3)  # dropout on: the RNG streams must agree too
    accumulate = 2 if specs[0] == "accumulate" else 1

    def trainer(model):
        args = T.TrainingArguments(
            output_dir=work, use_cpu=True, report_to=[], disable_tqdm=True, seed=0,
            per_device_train_batch_size=4, per_device_eval_batch_size=4, learning_rate=1e-2,
            num_train_epochs=2, logging_steps=1, save_steps=4 // accumulate, eval_strategy="steps",
            eval_steps=3, gradient_accumulation_steps=accumulate)
        return T.Trainer(model=model, args=args, train_dataset=Rows(0, 16),
                         eval_dataset=Rows(16, 24))

    torch.manual_seed(0)
    model = start("bert", T.BertForSequenceClassification(cfg))
    tr = trainer(model)
    out["train_loss"] = np.array(tr.train().training_loss)
    out["losses"] = np.array([h["loss"] for h in tr.state.log_history if "loss" in h])
    out["grad_norms"] = np.array([h["grad_norm"] for h in tr.state.log_history if "loss" in h])
    out["eval_losses"] = np.array([h["eval_loss"] for h in tr.state.log_history
                                   if "eval_loss" in h])
    out["evaluate"] = np.array(tr.evaluate()["eval_loss"])
    out["predict"] = tr.predict(Rows(16, 24)).predictions
    out["checkpoints"] = np.array(sorted(os.listdir(work)))
    first = os.path.join(work, sorted(os.listdir(work))[0])
    out["checkpoint_files"] = np.array(sorted(os.listdir(first)))
    with open(os.path.join(first, "trainer_state.json")) as f:
        out["checkpoint_step"] = np.array(json.load(f)["global_step"])
    # a fresh model resumes from the first checkpoint: weights, optimizer, scheduler and
    # RNG states come back, so it ends where the uninterrupted run ended
    torch.manual_seed(1)
    again = T.BertForSequenceClassification(cfg)
    trainer(again).train(resume_from_checkpoint=first)
    out["params"] = torch.cat([p.detach().flatten() for p in model.parameters()]).numpy()
    out["resumed"] = torch.cat([p.detach().flatten() for p in again.parameters()]).numpy()
    np.savez(out_path, **out)
"""


@needs_hf
@pytest.mark.parametrize("mode", ["plain", "accumulate"])
def test_trainer_trains_evaluates_and_resumes_as_on_torch(tmp_path, mode):
    init = tmp_path / "init"
    init.mkdir()
    t, e = _both(tmp_path, TRAINER_DRIVER, [init, mode])
    _assert_same(t, e, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(e["resumed"], e["params"], rtol=1e-5, atol=1e-6)


CROSS_DRIVER = PREAMBLE + """
    work = specs[0]
    X, Y = rng.integers(3, 97, (20, 8)), rng.integers(0, 3, 20)

    class Rows(torch.utils.data.Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            return {"input_ids": torch.tensor(X[i]), "labels": torch.tensor(int(Y[i]))}

    cfg = T.BertConfig(**A, num_labels=3)
    args = T.TrainingArguments(
        output_dir=os.path.join(work, "run"), use_cpu=True, report_to=[], disable_tqdm=True,
        per_device_train_batch_size=4, learning_rate=1e-2, num_train_epochs=1,
        logging_steps=1, save_steps=2, seed=0)
    probe = torch.tensor(X[16:])
    if init_dir == "save":
        torch.manual_seed(0)
        model = T.BertForSequenceClassification(cfg)
        T.Trainer(model=model, args=args, train_dataset=Rows()).train()
        model.save_pretrained(os.path.join(work, "pretrained"))
        model = model.eval()
    else:  # read what the other framework wrote
        model = T.BertForSequenceClassification.from_pretrained(
            os.path.join(work, "pretrained")).eval()
        torch.manual_seed(5)
        again = T.BertForSequenceClassification(cfg)
        tr = T.Trainer(model=again, args=args, train_dataset=Rows())
        tr.train(resume_from_checkpoint=os.path.join(work, "run", "checkpoint-2"))
        out["resumed_losses"] = np.array([h["loss"] for h in tr.state.log_history
                                          if "loss" in h])
        with torch.no_grad():
            out["resumed"] = again.eval()(input_ids=probe).logits.numpy()
    with torch.no_grad():
        out["logits"] = model(input_ids=probe).logits.numpy()
    np.savez(out_path, **out)
"""


@needs_hf
def test_checkpoints_cross_between_ember_and_torch(tmp_path):
    # safetensors weights from save_pretrained, and the Trainer's checkpoint (optimizer,
    # scheduler and RNG states saved with torch.save), written by one framework and read
    # by the other: the run resumed from the other's checkpoint ends as the saver's did
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(CROSS_DRIVER))
    prefix = {"torch": [], "ember": ["-m", "ember.compat.run"]}
    got = {}
    for saver, loader in (("torch", "ember"), ("ember", "torch")):
        work = tmp_path / saver
        for who, mode in ((saver, "save"), (loader, "load")):
            path = tmp_path / f"{saver}_{mode}.npz"
            _run([*prefix[who], str(driver), str(path), mode, str(work)], tmp_path)
            got[saver, mode] = dict(np.load(path))
    for saver in ("torch", "ember"):
        saved, loaded = got[saver, "save"], got[saver, "load"]
        np.testing.assert_allclose(loaded["logits"], saved["logits"], rtol=1e-4, atol=2e-5)
        np.testing.assert_allclose(loaded["resumed"], saved["logits"], rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(got["ember", "save"]["logits"], got["torch", "save"]["logits"],
                               rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(got["ember", "load"]["resumed_losses"],
                               got["torch", "load"]["resumed_losses"], rtol=1e-4, atol=2e-5)


MISC_DRIVER = PREAMBLE + """
    torch.manual_seed(0)
    m = start("llama", llama())
    m.gradient_checkpointing_enable()
    m.train()
    m(input_ids=ids, attention_mask=mask, labels=ids).loss.backward()
    out["checkpointed_grad"] = m.model.layers[0].self_attn.q_proj.weight.grad.numpy()
    m.gradient_checkpointing_disable()
    m.eval()
    r = m(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    out["hidden_states"] = torch.stack(r.hidden_states).detach().numpy()
    m.set_attn_implementation("eager")
    r = m(input_ids=ids, attention_mask=mask, output_attentions=True)
    out["attentions"] = torch.stack(r.attentions).detach().numpy()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out["autocast_dtype"] = np.array(str(m(input_ids=ids).logits.dtype))
    # new rows drawn from a MultivariateNormal of the old ones (torch.distributions)
    torch.manual_seed(3)
    m.resize_token_embeddings(101, pad_to_multiple_of=8)
    out["resized"] = m.get_input_embeddings().weight.detach().numpy()
    out["resized_head"] = m.get_output_embeddings().weight.detach().numpy()
    torch.manual_seed(0)
    w = start("whisper", whisper()).eval()
    mel = torch.from_numpy(rng.standard_normal((2, 8, 32)).astype(np.float32))
    out["whisper_generate"] = w.generate(mel, max_new_tokens=5, do_sample=False).numpy()
    np.savez(out_path, **out)
"""


@needs_hf
def test_checkpointing_resizing_and_outputs_as_on_torch(tmp_path):
    init = tmp_path / "init"
    init.mkdir()
    t, e = _both(tmp_path, MISC_DRIVER, [init, "-"])
    _assert_same(t, e, rtol=1e-4, atol=2e-5)


TOKENIZER_DRIVER = PREAMBLE + """
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = "the a cat dog sat on mat ran fast slow red blue".split()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {w: i for i, w in enumerate(specials + words)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = T.PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]",
                                    unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                                    mask_token="[MASK]")
    enc = tok(["the cat sat on the mat", "a dog ran"], padding=True, return_tensors="pt")
    out["ids"], out["mask"] = enc["input_ids"].numpy(), enc["attention_mask"].numpy()
    out["dtype"] = np.array(str(enc["input_ids"].dtype))
    torch.manual_seed(0)  # the masking draws
    mlm = T.DataCollatorForLanguageModeling(tok, mlm_probability=0.3)(
        [tok("the cat sat on the mat red blue"), tok("a dog ran fast")])
    out["mlm_ids"], out["mlm_labels"] = mlm["input_ids"].numpy(), mlm["labels"].numpy()
    out["padded"] = T.DataCollatorWithPadding(tok, return_tensors="pt")(
        [tok("the cat"), tok("a dog ran fast slow")])["input_ids"].numpy()
    torch.manual_seed(0)
    m = start("bert_mlm", T.BertForMaskedLM(T.BertConfig(**dict(A, vocab_size=len(vocab)))))
    filled = T.pipeline("fill-mask", model=m.eval(), tokenizer=tok, device="cpu")("the [MASK] sat")
    out["fill_tokens"] = np.array([x["token"] for x in filled])
    out["fill_scores"] = np.array([x["score"] for x in filled])
    np.savez(out_path, **out)
"""


@_needs("transformers", "tokenizers")
def test_tokenizer_tensors_collators_and_pipeline_as_on_torch(tmp_path):
    # return_tensors="pt", the masked-LM collator's seeded masking, padding, and a
    # fill-mask pipeline over a tiny word-level tokenizer built in place
    init = tmp_path / "init"
    init.mkdir()
    t, e = _both(tmp_path, TOKENIZER_DRIVER, [init, "-"])
    _assert_same(t, e, rtol=1e-4, atol=2e-5)


# -- the fixes, without transformers ----------------------------------------------------------


def test_lazy_torch_subpackage_imported_first_by_from_import_keeps_submodules():
    # ``from torch.distributions import constraints`` as the first use of the lazily loaded
    # ember.distributions used to run its code twice, leaving a second module object without
    # its submodules as attributes (transformers' resize_token_embeddings then failed on
    # ``torch.distributions.multivariate_normal``)
    code = textwrap.dedent("""
        import sys
        import ember.compat
        ember.compat.install()
        import torch
        from torch.distributions import constraints
        d = torch.distributions
        print(d is sys.modules["ember.distributions"] is sys.modules["torch.distributions"],
              d.multivariate_normal.MultivariateNormal is d.MultivariateNormal,
              d.constraints is constraints)
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["True", "True", "True"]


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_loss_changed_in_place_still_backpropagates_as_torch(fn):
    torch = pytest.importorskip("torch")
    import ember

    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    y = np.array([0, 3, 1, 4])
    grads = []
    for lib in (torch, ember):
        xt = lib.tensor(x, requires_grad=True)
        scores = xt if fn == "cross_entropy" else xt.log_softmax(1)
        loss = getattr(lib.nn.functional, fn)(scores, lib.tensor(y))
        loss += 0.5 * xt.pow(2).mean()  # an auxiliary loss added in place, as Mixtral does
        loss.backward()
        grads.append(xt.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=1e-7)
