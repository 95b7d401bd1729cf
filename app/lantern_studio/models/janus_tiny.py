"""A tiny random Janus-Pro folder, built offline: what tests, demos and screenshots load when no
Hub is reachable.

It is the real architecture (transformers' ``JanusForConditionalGeneration``: a Llama language model,
Janus's generation embeddings / aligner / head and its VQ decoder) at toy sizes, saved the way
``save_pretrained`` saves a downloaded one (model + processor), so it loads through exactly the same
path as ``deepseek-community/Janus-Pro-1B``. The tokenizer is a word-level one over a few dozen words
with the special tokens Janus's processor and chat template need (``<begin_of_image>`` among them);
unknown words become ``<unk>``. The weights are random but spread widely enough (``spread``) that
the image head's distributions differ from token to token, so greedy and sampled decodes are not
one repeated code.
"""

from __future__ import annotations

from pathlib import Path

import torch

SPECIAL = ("<unk>", "<pad>", "<bos>", "<eos>", "<|User|>", "<|Assistant|>", "<begin_of_image>",
           "<end_of_image>", "<image_placeholder>")
WORDS = ("a", "an", "the", "of", "in", "on", "with", "and", "photo", "picture", "painting", "red", "blue", "green",
         "yellow", "black", "white", "heart", "cat", "dog", "bird", "tree", "house", "car", "sky", "sea", "star",
         "flower", "sun", "moon", "face", "smiling", "big", "small", ":", ",", ".")
# Janus's own template has the same shape: "<|User|>: {prompt}\n\n<|Assistant|>:" then <begin_of_image>
CHAT_TEMPLATE = ("{% for message in messages %}{% if message['role'] == 'user' %}<|User|>: {% else %}"
                 "<|Assistant|>: {% endif %}{% for c in message['content'] %}{% if c['type'] == 'text' %}"
                 "{{ c['text'] }}{% endif %}{% endfor %}\n\n{% endfor %}"
                 "{% if add_generation_prompt %}<|Assistant|>:{% endif %}")


def tiny_janus(grid: int = 4, codes: int = 64, hidden: int = 32, layers: int = 2, seed: int = 0,
               spread: float = 0.25):
    """(model, processor): a random ``JanusForConditionalGeneration`` of ``grid``×``grid`` image tokens over
    ``codes`` codebook entries (pictures of 16·grid pixels), and its processor."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors  # noqa: PLC0415 - only when one is built
    from transformers import (  # noqa: PLC0415 - seconds to import; only when one is built
        JanusConfig, JanusForConditionalGeneration, JanusImageProcessorPil, JanusProcessor, LlamaConfig,
        PreTrainedTokenizerFast)

    vocab = {t: i for i, t in enumerate(SPECIAL + WORDS)}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tk.add_special_tokens(list(SPECIAL))
    tk.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", vocab["<bos>"])])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>", bos_token="<bos>", eos_token="<eos>",
        extra_special_tokens={"image_token": "<image_placeholder>", "boi_token": "<begin_of_image>",
                              "eoi_token": "<end_of_image>"})
    size = 16 * grid
    processor = JanusProcessor(image_processor=JanusImageProcessorPil(size={"height": size, "width": size}),
                               tokenizer=tokenizer, chat_template=CHAT_TEMPLATE, num_image_tokens=grid * grid)
    text = LlamaConfig(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                       num_attention_heads=4, num_key_value_heads=2, vocab_size=len(vocab),
                       max_position_embeddings=256, pad_token_id=vocab["<pad>"], bos_token_id=vocab["<bos>"],
                       eos_token_id=vocab["<eos>"])
    vision = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, image_size=size, patch_size=16,
                  projection_dim=hidden, num_image_tokens=grid * grid, mlp_ratio=2.0)
    vq = dict(embed_dim=8, num_embeddings=codes, latent_channels=32, base_channels=32,
              channel_multiplier=[1, 1, 1, 1, 1], num_res_blocks=1, projection_dim=hidden,
              image_token_embed_dim=hidden, num_hidden_layers=2)
    config = JanusConfig(text_config=text.to_dict(), vision_config=vision, vq_config=vq,
                         image_token_id=vocab["<image_placeholder>"])
    torch.manual_seed(seed)
    model = JanusForConditionalGeneration(config).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim >= 2 and not name.startswith("model.vision_model"):
                p.copy_(torch.randn(p.shape, generator=g) * spread)
    gc = model.generation_config
    gc.bos_token_id, gc.pad_token_id, gc.eos_token_id = vocab["<bos>"], vocab["<pad>"], vocab["<eos>"]
    gc.guidance_scale = 5.0
    gc.generation_kwargs = {"boi_token_id": vocab["<begin_of_image>"]}
    return model, processor


def build_tiny_janus_dir(folder, **kw) -> Path:
    """Write a tiny random Janus folder (``save_pretrained`` of the model and its processor) → the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model, processor = tiny_janus(**kw)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
