"""`train retoken`: an AR model carried to a new tokenizer's codes keeps what it computes where codes agree."""

import argparse

import numpy as np
import pytest
import torch

from lantern_studio.engine.checkpoints import load_gpt, save_gpt
from lantern_studio.engine.model import ModelArgs, Transformer
from lantern_studio.engine.tokenizer import load_vq, save_vq
from lantern_studio.training import retoken
from lantern_studio.training.retoken import carried_rows, code_overlap
from support.dataset import class_dataset, tiny_vq_file

V = 32


def test_overlap_counts_codes_on_the_same_patch_and_rows_are_their_weighted_mean():
    new = np.array([[[0, 0], [1, 1]], [[0, 2], [1, 1]]])
    old = np.array([[[3, 3], [1, 1]], [[2, 3], [0, 1]]])
    o = code_overlap(new, old, 4, 4)
    assert o[0].tolist() == [0, 0, 1, 2] and o[1].tolist() == [1, 3, 0, 0] and o[2].tolist() == [0, 0, 0, 1]
    assert o.sum() == 8 and o[3].sum() == 0
    rows = torch.arange(8.0).reshape(4, 2)  # old code c's row is (2c, 2c + 1)
    got = carried_rows(rows, o)
    assert torch.allclose(got[0], (rows[2] + 2 * rows[3]) / 3)
    assert torch.allclose(got[2], rows[3])
    everywhere = (o.sum(0)[:, None] * rows.numpy()).sum(0) / o.sum()  # the unseen code: the mean over every patch
    assert np.allclose(got[3].numpy(), everywhere)
    with pytest.raises(Exception, match="cut a picture differently"):
        code_overlap(new, old[:, :1], 4, 4)


def tiny_gpt(path):
    torch.manual_seed(1)
    m = Transformer(ModelArgs(dim=32, n_layer=2, n_head=4, multiple_of=16, vocab_size=V, block_size=64,
                              model_type="c2i", num_classes=4, cls_token_num=1))
    for p in m.parameters():
        torch.nn.init.normal_(p, std=0.3)
    save_gpt(m, path)  # fp16, as every model is written
    return load_gpt(path).float()


def args(tmp_path, **kw):
    p = argparse.ArgumentParser()
    retoken.add_arguments(p)
    a = dict(gpt=tmp_path / "gpt.safetensors", from_vq=tmp_path / "old.safetensors",
             to_vq=tmp_path / "new.safetensors", out=tmp_path / "carried.safetensors", data=tmp_path / "data",
             images=8)
    a.update(kw)
    return p.parse_args([x for k, v in a.items() for x in (f"--{k.replace('_', '-')}", str(v))])


def test_a_tokenizer_with_its_codes_renumbered_carries_the_model_exactly(tmp_path, capsys):
    """The new tokenizer is the old one with its codebook rows permuted: every patch's new code is perm[old], so
    the carried model given perm[tokens] predicts perm of what the old model predicted (logits equal to 1e-5 on
    the codes the sample saw). Copying the rows unchanged (the mutant) does not."""
    class_dataset(tmp_path / "data", names=("dog face", "red heart", "fire", "rocket"), styles=("google", "twitter"))
    old_vq = load_vq(tiny_vq_file(tmp_path / "old.safetensors", codebook_size=V)).float()
    perm = torch.randperm(V, generator=torch.Generator().manual_seed(3))
    new_vq = load_vq(tmp_path / "old.safetensors").float()
    with torch.no_grad():
        new_vq.quantize.embedding.weight[perm] = old_vq.quantize.embedding.weight.clone()
    save_vq(new_vq, new_vq.args, tmp_path / "new.safetensors", dtype=torch.float32)
    old_gpt = tiny_gpt(tmp_path / "gpt.safetensors")
    assert retoken.run(args(tmp_path)) == 0
    assert "new codes seen" in capsys.readouterr().out
    carried = load_gpt(tmp_path / "carried.safetensors").float()

    images, _ = class_dataset(tmp_path / "data2", names=("dog face", "red heart"), styles=("google",))
    x = torch.from_numpy(images).permute(0, 3, 1, 2).float() / 127.5 - 1
    old_codes = old_vq.encode(x).flatten(1).long()
    new_codes = new_vq.encode(x).flatten(1).long()
    assert torch.equal(new_codes, perm[old_codes])
    seen = perm[old_codes.unique()]
    cond = torch.tensor([0, 1])
    old_gpt.eval()
    with torch.no_grad():
        before = old_gpt.teacher_forced_logits(old_codes[:, :-1], cond)
        after = carried.teacher_forced_logits(new_codes[:, :-1], cond)
        mutant = old_gpt.teacher_forced_logits(new_codes[:, :-1], cond)  # the rows left where they were
    cols = old_codes.unique()
    assert torch.allclose(after[..., perm][..., cols], before[..., cols], atol=1e-5)
    assert not torch.allclose(mutant[..., perm][..., cols], before[..., cols], atol=1e-2)
    assert len(seen) > 1


def test_a_model_of_another_vocabulary_is_one_line(tmp_path, capsys):
    class_dataset(tmp_path / "data")
    tiny_vq_file(tmp_path / "old.safetensors", codebook_size=V)
    tiny_vq_file(tmp_path / "new.safetensors", codebook_size=16)
    tiny_gpt(tmp_path / "gpt.safetensors")
    assert retoken.run(args(tmp_path)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "16 codes" in err[0] and "same size" in err[0]
    assert retoken.run(args(tmp_path, from_vq=tmp_path / "new.safetensors")) == 2
    assert "not the tokenizer it was taught on" in capsys.readouterr().err
    assert retoken.run(args(tmp_path, gpt=tmp_path / "missing.safetensors")) == 2
    assert "missing.safetensors" in capsys.readouterr().err
    assert not (tmp_path / "carried.safetensors").exists()
