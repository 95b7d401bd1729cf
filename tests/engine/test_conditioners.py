"""The typed seams of engine/conditioners.py: each conditioner is what it says it is, and the
studio and the scorer ask through them (an object with only some of a Snapper's parts is not one)."""

import types

from lantern_studio.engine.conditioners import CaptionSnapper, Conditioner, NamedClasses, Snapper
from lantern_studio.engine.snap import IdentityConditioner
from lantern_studio.engine.text import CaptionConditioner, ClassConditioner, HashEncoder
from lantern_studio.models.classes import TONES
from lantern_studio.studio.engine_host import _class_names, _snaps


def test_each_conditioner_declares_what_it_can_do_and_accepts_its_warm_prompt():
    enc = HashEncoder(64)
    rows = [{"identity": "A", "name": "red heart", "styles": ["x"]}, {"identity": "B", "name": "dog face"}]
    ident = IdentityConditioner(enc, rows, ["x", "y"], list(TONES), enc.pooled([r["name"] for r in rows]),
                                offered_styles=["x"])
    named = ClassConditioner(["goldfish", "tabby cat"])
    caption = CaptionConditioner(enc, 8, ["a red heart", "a dog"], enc.pooled(["a red heart", "a dog"]))
    plain = CaptionConditioner(enc, 8)
    for c in (ident, named, caption, plain):
        assert isinstance(c, Conditioner)
        c(c.warm_prompt)  # the pipeline's warm-up prompt is always accepted
    assert isinstance(ident, Snapper) and isinstance(ident, NamedClasses)  # it names its classes for a picker too
    assert isinstance(named, NamedClasses) and not isinstance(named, Snapper)
    assert isinstance(caption, CaptionSnapper) and not isinstance(caption, Snapper)
    # what the studio's worker concludes from them
    assert _snaps(types.SimpleNamespace(conditioner=ident)) and _class_names(types.SimpleNamespace(conditioner=ident)) is None
    assert _class_names(types.SimpleNamespace(conditioner=named)) == ("goldfish", "tabby cat")
    # a look-alike with identities but no match/styles (what the old attribute probe accepted) is not a Snapper
    fake = types.SimpleNamespace(identities=rows, match=lambda *a, **k: None)
    assert not _snaps(types.SimpleNamespace(conditioner=fake))
