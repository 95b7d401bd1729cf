"""Decoding without guidance (CFG 1, the bundled model's default since v4.1) runs one row per position:
every prefill, vanilla step and speculative verify feeds the target a batch of one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from lantern_studio.engine.decode import generate_tokens
from lantern_studio.engine.drafters import JacobiDrafter
from lantern_studio.engine.runner import Runner
from lantern_studio.engine.settings import GenerationSettings
from support.tiny import tiny_gpt

BUNDLED = Path(__file__).resolve().parents[2] / "resources" / "models" / "emoji-64" / "model.json"


class CountingRunner(Runner):
    """A runner that records the rows of every forward it is asked for."""

    def __init__(self, model):
        super().__init__(model)
        self.rows: list[int] = []

    def prefill(self, cond):
        self.rows.append(cond.shape[0])
        return super().prefill(cond)

    def step(self, tokens, first_index):
        self.rows.append(tokens.shape[0])
        return super().step(tokens, first_index)


@pytest.mark.parametrize("drafter", ["none", "jacobi"])
@pytest.mark.parametrize("cfg, rows", [(1.0, 1), (1.5, 2)])
def test_without_guidance_every_forward_is_one_row(drafter, cfg, rows):
    runner = CountingRunner(tiny_gpt("c2i", seed=0, vocab=16, grid=4, dim=32, layers=1, heads=2))
    tokens = generate_tokens(runner, torch.tensor([1]),
                             GenerationSettings(seed=0, cfg_scale=cfg, drafter=drafter, draft_length=4),
                             drafter=JacobiDrafter() if drafter == "jacobi" else None)[0]
    assert tokens.numel() == 16 and runner.rows and set(runner.rows) == {rows}


def test_the_bundled_model_decodes_without_guidance_by_default():
    assert json.loads(BUNDLED.read_text())["defaults"]["cfg_scale"] == 1.0
