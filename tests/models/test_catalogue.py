"""The catalogue: official entries, ImageNet class names, loading tiny official-layout
checkpoints from the HF cache end to end (c2i and t2i, every drafter), devices."""

from __future__ import annotations

import pytest
import torch

from lantern_studio.engine.checkpoints import CheckpointError
from lantern_studio.engine.text import ClassConditioner, PromptError
from lantern_studio.models import catalogue
from support.hub import CAPTION_LEN, go_offline
from support.lantern_drafter import lantern_drafter_head

# --------------------------------------------------------------------------- official entries


def test_official_entries_match_the_llamagen_readme():
    c = catalogue.CATALOGUE
    c2i = {e.gpt.filename: e for e in c.values() if e.kind == "c2i"}
    assert set(c2i) == {"c2i_B_256.pt", "c2i_L_256.pt", "c2i_B_384.pt", "c2i_L_384.pt", "c2i_XL_384.pt",
                        "c2i_XXL_384.pt", "c2i_3B_384.pt"}
    for e in c2i.values():
        assert e.gpt.repo_id == "FoundationVision/LlamaGen" and e.vq.filename == "vq_ds16_c2i.pt"
        assert e.vq.repo_id == "FoundationVision/LlamaGen"
        a = e.args()
        assert a.block_size == (e.image_size // 16) ** 2 and a.cls_token_num == 1 and a.vocab_size == 16384
        assert a.model_type == "c2i" and a.num_classes == 1000
        d = e.defaults
        assert (d.cfg_scale, d.top_k, d.temperature, d.top_p) == (4.0, 2000, 1.0, 1.0)
    assert c2i["c2i_XL_384.pt"].args().block_size == 576 and c2i["c2i_B_256.pt"].args().block_size == 256
    assert c2i["c2i_3B_384.pt"].args().dim == 3200 and c2i["c2i_XXL_384.pt"].args().n_layer == 48
    t2i = {e.gpt.filename: e for e in c.values() if e.kind == "t2i"}
    assert set(t2i) == {"t2i_XL_stage1_256.pt", "t2i_XL_stage2_512.pt"}
    for e in t2i.values():
        assert e.gpt.repo_id == "peizesun/llamagen_t2i" and e.vq.filename == "vq_ds16_t2i.pt"
        assert e.text_encoder.repo_id == "google/flan-t5-xl" and e.text_encoder.length == 120
        a = e.args()
        assert (a.cls_token_num, a.caption_dim, a.model_type, a.dim) == (120, 2048, "t2i", 1280)
        d = e.defaults
        assert (d.cfg_scale, d.top_k, d.temperature) == (7.5, 1000, 1.0)
    assert t2i["t2i_XL_stage2_512.pt"].args().block_size == 1024
    for e in c.values():
        assert e.download_size > 0 and e.licence and e.describe()
        e.defaults.validate(16384)


def test_unknown_name_suggests():
    with pytest.raises(KeyError, match="llamagen-c2i-b-256"):
        catalogue.get_entry("llamagen-c2i-b256")
    assert catalogue.get_entry("LlamaGen-C2I-B-256").name == "llamagen-c2i-b-256"


def test_load_pipeline_says_how_to_download(hub_env):
    from lantern_studio.models import load_pipeline

    with pytest.raises(CheckpointError, match="not downloaded.*run lantern-studio models download llamagen-c2i-b-256"):
        load_pipeline("llamagen-c2i-b-256")


# --------------------------------------------------------------------------- ImageNet classes


@pytest.fixture(scope="module")
def imagenet():
    return ClassConditioner(catalogue.imagenet_class_names())


def test_imagenet_list(imagenet):
    names = catalogue.imagenet_class_names()
    assert len(names) == 1000
    # WordNet has two synsets named just "crane" (the bird, 134, and the machine, 517)
    assert [i for i, n in enumerate(names) if names.count(n) > 1] == [134, 517]
    assert names[0] == "tench, Tinca tinca" and names[207] == "golden retriever"
    assert names[999] == "toilet tissue, toilet paper, bathroom tissue"
    # LlamaGen's demo classes: 207 golden retriever, 360 otter, 387 lesser panda, 974 geyser, 88 macaw
    assert names[360] == "otter" and names[387].startswith("lesser panda") and names[974] == "geyser"
    assert names[88] == "macaw" and names[477].startswith("carpenter's kit")


def test_class_prompts_exact_fuzzy_and_ids(imagenet):
    assert imagenet.match("golden retriever") == 207
    assert imagenet.match("Golden Retriever") == 207
    assert imagenet.match("Tinca tinca") == 0  # a synonym
    assert imagenet.match("great white shark") == 2 and imagenet.match("man-eater") == 2
    assert imagenet.match("golden retreiver") == 207  # typo
    assert imagenet.match("#974") == 974
    c = imagenet("llama")
    assert int(c.cond) == 355 and "llama" in c.note


def test_unknown_class_gives_suggestions(imagenet):
    with pytest.raises(PromptError, match="not a known class name; did you mean") as err:
        imagenet.match("tigre")
    assert "tiger" in str(err.value)
    with pytest.raises(PromptError, match="labrador retriever"):
        imagenet.match("labrador")
    with pytest.raises(PromptError, match=r"\[0, 999\]"):
        imagenet.match("#1000")
    assert "golden retriever" in imagenet.suggestions("retriever")


# --------------------------------------------------------------------------- end to end


def _generate_every_way(pipe, prompt):
    from lantern_studio.engine.settings import GenerationSettings

    grid = pipe.grid
    out = {}
    for drafter in pipe.drafters:
        s = GenerationSettings(seed=3, cfg_scale=2.0, drafter=drafter, draft_length=4,
                               k=4 if drafter != "none" else 0, delta=0.2 if drafter != "none" else 0.0)
        r = pipe.generate(prompt, s)
        assert r.tokens.shape == (grid, grid) and r.image.shape == (grid * 4, grid * 4, 3)
        assert r.stats.tokens == grid * grid
        out[drafter] = r
    return out


def test_c2i_end_to_end_through_the_catalogue(hub_server, tiny_catalogue, monkeypatch):
    from lantern_studio.models import load_pipeline
    from lantern_studio.training.self_distill import train_drafter_for_model

    c2i, _ = tiny_catalogue
    catalogue.download(c2i.name)
    go_offline(monkeypatch)
    hub_server.log.clear()
    pipe = load_pipeline(c2i.name)  # models.load_pipeline dispatches catalogue names
    assert pipe.source.catalogue == c2i.name and pipe.drafters == ("none", "jacobi")
    res = _generate_every_way(pipe, "golden retriever")
    assert res["none"].note == "class 207: golden retriever"
    # same seed and settings: same image
    from lantern_studio.engine.settings import GenerationSettings

    s = GenerationSettings(seed=3, cfg_scale=2.0)
    assert (pipe.generate("golden retriever", s).tokens == res["none"].tokens).all()
    summary = train_drafter_for_model(pipe, steps=3, sequences=4, batch=2)
    assert summary["steps"] == 3 and summary["sequences"] == 4
    assert catalogue.drafter_path(c2i.name).is_file() and pipe.drafters == ("none", "jacobi", "eagle")
    fresh = load_pipeline(c2i.name)  # picks the self-distilled drafter up from disk
    assert fresh.eagle is not None
    res = _generate_every_way(fresh, "#88")
    assert set(res) == {"none", "jacobi", "eagle"}
    assert catalogue.status(c2i.name)["drafter"] is True
    assert hub_server.log == []  # loading and generating never touched the network


def test_t2i_end_to_end_with_flan_t5_layout(hub_server, tiny_catalogue, monkeypatch):
    from lantern_studio.engine.t5 import FlanT5Encoder, T5CaptionConditioner
    from lantern_studio.training.self_distill import train_drafter_for_model

    _, t2i = tiny_catalogue
    events = []
    catalogue.download(t2i.name, progress=events.append)
    assert events[-1].bytes_done == t2i.download_size
    go_offline(monkeypatch)
    pipe = catalogue.load_entry(t2i.name)
    assert isinstance(pipe.conditioner, T5CaptionConditioner)
    assert isinstance(pipe.conditioner.encoder, FlanT5Encoder) and pipe.conditioner.length == CAPTION_LEN
    c = pipe.conditioner("A red car")
    assert c.cond.shape == (1, CAPTION_LEN, 16) and c.mask.shape == (1, CAPTION_LEN)
    assert c.mask[0].tolist() == [False, False, True, True, True, True]  # 3 words + EOS, left-padded
    assert (c.cond[0, :2] == 0).all() and (c.cond[0, 2:] != 0).any()
    long = pipe.conditioner("a photo of a big red car on the sea")  # truncated to the prefix length
    assert long.mask.all()
    assert pipe.conditioner.memory_estimate() > 0
    _generate_every_way(pipe, "a blue house")
    summary = train_drafter_for_model(t2i.name, steps=2, sequences=3, batch=2, prompts=["a red car", "a cat"])
    assert summary["sequences"] == 3
    pipe = catalogue.load_entry(t2i.name)
    assert pipe.eagle is not None
    _generate_every_way(pipe, "a golden retriever sitting on the sea")


def test_t5_padding_matches_llamagens_flip(hub_server, tiny_catalogue, monkeypatch):
    """LlamaGen pads to 120 on the right, then moves the valid states to the end and zeroes the rest."""
    from lantern_studio.engine.t5 import FlanT5Encoder

    _, t2i = tiny_catalogue
    catalogue.download(t2i.name)
    folder = catalogue.local_files(t2i.name)[t2i.text_encoder.folder_file].parent
    enc = FlanT5Encoder(folder)
    prompts = ["a red heart", "a photo of a big green tree on the sea"]
    ours, our_mask = enc.caption_embeddings(prompts, 120)
    # LlamaGen's recipe (sample_t2i.py), with right padding to max_length
    tok = enc.load()._tok([p.lower() for p in prompts], max_length=120, padding="max_length", truncation=True,
                          return_tensors="pt")
    with torch.no_grad():
        embs = enc._model(input_ids=tok["input_ids"], attention_mask=tok["attention_mask"]).last_hidden_state
    masks = tok["attention_mask"]
    flipped = torch.flip(masks, dims=[-1])
    ref = []
    for e, m in zip(embs, masks):
        v = int(m.sum())
        ref.append(torch.cat([e[v:], e[:v]]))
    ref = torch.stack(ref) * flipped[:, :, None]
    assert torch.equal(our_mask, flipped.bool())
    assert torch.allclose(ours, ref.float(), atol=1e-5)


# --------------------------------------------------------------------------- devices


def test_devices():
    from lantern_studio import devices

    expected = "cuda" if torch.cuda.is_available() else ("mps" if devices._mps_available() else "cpu")
    assert devices.pick_device() == expected and devices.pick_device("CPU") == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(devices.DeviceError, match="CUDA is not available"):
            devices.pick_device("cuda")
    with pytest.raises(devices.DeviceError, match="must be one of"):
        devices.pick_device("tpu")
    c = catalogue.CATALOGUE
    est = {n: devices.estimate_memory(e, torch.bfloat16) for n, e in c.items()}
    assert est["llamagen-c2i-b-256"] < est["llamagen-c2i-l-256"] < est["llamagen-c2i-xl-384"] < est["llamagen-c2i-3b-384"]
    assert 1e8 < est["llamagen-c2i-b-256"] < 2e9 and 6e9 < est["llamagen-c2i-3b-384"] < 1.2e10
    assert devices.estimate_memory(c["llamagen-c2i-b-256"], torch.float32) > est["llamagen-c2i-b-256"]
    assert "text_encoder" in devices.memory_breakdown(c["llamagen-t2i-xl-512"])


# --------------------------------------------------------------------------- LANTERN's drafter layout


def test_lantern_drafter_keys_map_onto_eagle_head():
    """A state dict in the layout of LANTERN's cnets_llamagen.Model (EAGLE-1, one LLaMA layer whose
    input norm is the identity), mapped onto EagleHead: both compute the same function."""
    import torch.nn.functional as F

    from lantern_studio.engine.model import ModelArgs, apply_rope, rope_table

    args = ModelArgs(dim=32, n_layer=1, n_head=4, multiple_of=16, vocab_size=16, block_size=16)
    d, hid = 32, 96  # find_multiple(int(8*32/3)=85, 16) = 96
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g) * 0.2  # noqa: E731
    sd = {"embed_tokens.weight": r(16, d), "fc.weight": r(d, 2 * d), "fc.bias": r(d),
          "layers.0.self_attn.q_proj.weight": r(d, d), "layers.0.self_attn.k_proj.weight": r(d, d),
          "layers.0.self_attn.v_proj.weight": r(d, d), "layers.0.self_attn.o_proj.weight": r(d, d),
          "layers.0.mlp.gate_proj.weight": r(hid, d), "layers.0.mlp.up_proj.weight": r(hid, d),
          "layers.0.mlp.down_proj.weight": r(d, hid), "layers.0.post_attention_layernorm.weight": 1 + r(d)}
    head = lantern_drafter_head(sd, args, rms_norm_eps=1e-6)

    feat, emb = r(2, 5, d), r(2, 5, d)
    rope = rope_table(4, d // 4, 10000, 0)[:5]
    # LANTERN's forward: fc(cat(emb, feat)), attention without an input norm, post-attention norm + SwiGLU
    h = F.linear(torch.cat([emb, feat], -1), sd["fc.weight"], sd["fc.bias"])
    q = apply_rope(F.linear(h, sd["layers.0.self_attn.q_proj.weight"]).view(2, 5, 4, 8), rope).transpose(1, 2)
    k = apply_rope(F.linear(h, sd["layers.0.self_attn.k_proj.weight"]).view(2, 5, 4, 8), rope).transpose(1, 2)
    v = F.linear(h, sd["layers.0.self_attn.v_proj.weight"]).view(2, 5, 4, 8).transpose(1, 2)
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(2, 5, d)
    h = h + F.linear(a, sd["layers.0.self_attn.o_proj.weight"])
    n = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * sd["layers.0.post_attention_layernorm.weight"]
    ref = h + F.linear(F.silu(F.linear(n, sd["layers.0.mlp.gate_proj.weight"])) * F.linear(n, sd["layers.0.mlp.up_proj.weight"]),
                       sd["layers.0.mlp.down_proj.weight"])
    with torch.no_grad():
        ours = head(feat, emb, rope)
    assert torch.allclose(ours, ref, atol=1e-5)


def test_drafter_losses_prefix_mask_and_noise():
    """The one drafter loss (bundled recipe and self-distillation): an all-valid one-slot
    prefix mask is the same as no mask (self-distillation's class-conditional batches rely
    on it), the noise comes from the given CPU generator only, and noise 0 needs none."""
    from lantern_studio.engine.drafters import EagleHead
    from lantern_studio.engine.model import ModelArgs, Transformer
    from lantern_studio.training.drafter_loss import drafter_losses

    torch.manual_seed(0)
    args = ModelArgs(dim=32, n_layer=1, n_head=4, multiple_of=16, vocab_size=16, block_size=9, num_classes=10,
                     model_type="c2i", cls_token_num=1)
    gpt = Transformer(args).eval()
    with torch.no_grad():
        gpt.output.weight.normal_(0, 0.5)
    head = EagleHead(args).eval()  # no dropout: compare the arithmetic
    tok, emb = torch.randint(0, 16, (2, 9)), torch.tensor([3, 7])
    ones = torch.ones(2, 1, dtype=torch.bool)

    def losses(mask, noise, seed):
        gen = None if seed is None else torch.Generator().manual_seed(seed)
        return [float(x.detach()) for x in drafter_losses(gpt, head, tok, emb, mask, 2.0, noise, gen)]

    assert losses(None, 0.1, 5) == pytest.approx(losses(ones, 0.1, 5), abs=1e-6)
    assert losses(ones, 0.1, 5) == losses(ones, 0.1, 5)
    torch.manual_seed(123)  # the global RNG plays no part
    assert losses(ones, 0.1, 5) == losses(ones, 0.1, 5)
    assert losses(ones, 0.1, 5)[0] != losses(ones, 0.1, 6)[0]  # the noise reaches the feature loss
    assert losses(ones, 0.0, None) == losses(ones, 0.0, 9)
    lf, lp, agree = losses(ones, 0.0, None)
    assert lf > 0 and lp >= 0 and 0.0 <= agree <= 1.0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_bf16_end_to_end(hub_server, tiny_catalogue, monkeypatch):
    from lantern_studio.training.self_distill import train_drafter_for_model

    for entry in tiny_catalogue:
        catalogue.download(entry.name)
    go_offline(monkeypatch)
    for entry in tiny_catalogue:
        prompt = "golden retriever" if entry.kind == "c2i" else "a red car"
        pipe = catalogue.load_entry(entry.name, device="cuda")
        assert next(pipe.gpt.parameters()).dtype == torch.bfloat16 and pipe.gpt.rope.dtype == torch.float32
        assert pipe.device.type == "cuda"
        _generate_every_way(pipe, prompt)
        summary = train_drafter_for_model(pipe, steps=3, sequences=3, batch=2)
        assert summary["steps"] == 3 and next(pipe.eagle.parameters()).dtype == torch.bfloat16
        res = _generate_every_way(pipe, prompt)
        assert set(res) == {"none", "jacobi", "eagle"}
