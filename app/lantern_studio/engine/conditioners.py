"""What the rest of the app may ask of a prompt's conditioner: typed seams, no torch.

Every conditioner turns a prompt into a :class:`~.text.Conditioning` and names a prompt it
always accepts (``warm_prompt``: the pipeline's warm-up conditions on it). Some can do more,
and the studio, the scorer and the bench ask for that by these protocols (``isinstance``),
never by probing attributes one by one:

* :class:`Snapper` — free text snapped to one of the model's emoji identities in a style
  (``engine/snap.py``'s ``IdentityConditioner``): the match line, the Style selector,
  the class list a bench validates on.
* :class:`NamedClasses` — one of a list of named classes (``engine/text.py``'s
  ``ClassConditioner``: ImageNet names): the studio's class picker.
* :class:`CaptionSnapper` — a caption model that first replaces the prompt by its nearest
  known caption (``engine/text.py``'s ``CaptionConditioner`` with snap captions).

Torch-free so the GUI, which never imports torch, can ask too.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable


@runtime_checkable
class Conditioner(Protocol):
    warm_prompt: str  # a prompt this conditioner always accepts (ImagePipeline.warm_up)

    # settings: the GenerationSettings of the run (a factorised class model reads its style and seed)
    def __call__(self, prompt: str, settings=None) -> Any: ...  # -> text.Conditioning


@runtime_checkable
class Snapper(Protocol):
    identities: Sequence[dict]  # the model's classes in class order: identity, name, subgroup, styles, tones
    styles: Sequence[str]  # every style the model has a vector for
    offered_styles: Sequence[str]  # the styles it draws well enough to offer (the Style selector's list)
    default_style: str

    def match(self, prompt: str, style: str = "", seed: int = 0, alternatives: int = 3) -> Any: ...  # -> snap.Match

    def nearest(self, prompt: str, n: int = 4) -> list: ...  # [(class row, name, similarity)] best first


@runtime_checkable
class NamedClasses(Protocol):
    names: Sequence[str]  # class names in class order


@runtime_checkable
class CaptionSnapper(Protocol):
    def nearest_captions(self, prompt: str, n: int = 5) -> list: ...  # [(caption, similarity)] best first
