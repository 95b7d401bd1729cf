"""Running a training command under ``torchrun`` (DistributedDataParallel).

``torchrun --nproc_per_node N -m lantern_studio train ar …`` starts N processes
with RANK / WORLD_SIZE / MASTER_ADDR set; :func:`setup` joins them into one
process group (gloo on CPU, NCCL on CUDA). Without torchrun everything here is
a no-op and the command runs as a single process, unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from .common import tensors_digest


@dataclass(frozen=True)
class Group:
    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world > 1


def setup() -> Group:
    """Join torchrun's process group (when WORLD_SIZE > 1); the single-process group otherwise."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Group()
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    return Group(dist.get_rank(), dist.get_world_size())


def barrier(group: Group) -> None:
    if group.active:
        dist.barrier()


def any_rank(group: Group, flag: bool) -> bool:
    """True on every rank when ``flag`` is true on any (so all ranks stop at the same step)."""
    if not group.active:
        return flag
    t = torch.tensor([1 if flag else 0])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def teardown(group: Group) -> None:
    if group.active and dist.is_initialized():
        dist.destroy_process_group()


def wrap(model: torch.nn.Module, group: Group) -> torch.nn.Module:
    """The module to call in the training step: DDP-wrapped (gradients all-reduced) when distributed."""
    if not group.active:
        return model
    return DistributedDataParallel(model)


def state_digest(module: torch.nn.Module) -> str:
    """sha256 over the state dict's names, dtypes, shapes and bytes: equal digests ⇔ identical weights."""
    return tensors_digest(module.state_dict())
