"""Prompt → (emoji identity, art style, skin tone): the text box of a factorised class model.

The bundled model draws classes, not sentences: :class:`IdentityConditioner`
snaps what a person types to the nearest identity the model knows, picks the
art style (the setting ``style``: the model's default, a style by name, or
``"any"`` for one drawn per seed among the styles that identity has art in)
and the skin tone the prompt names, and says in one line what will be drawn::

    dog face · fluent flat — matched from 'a happy dog', 0.83

How a prompt is read (:meth:`IdentityConditioner.match`):

1. **Modifiers are parsed apart** (:func:`parse_prompt`) before the subject is
   matched, so they cannot outweigh it ("thumbs up, darker skin" drew a face
   with sweat when "darker" was left in):

   * the skin tone (:func:`find_tone`: tone words next to "skin" or "tone",
     before or after it, "skin tone 4"), applied where the identity has tones;
   * a gender word ("woman", "girl", "guy", "male" …) modifying a person is
     matched as "person", then the identity's woman / man variant is drawn where
     the model has one (the bundled models have person, man and woman
     identities for their person gestures: "a frowning girl" → *woman
     frowning*); where it has none ("a woman waving" → *waving hand*) the note
     says this model draws no woman variant. A gender word that is part of a
     name the data knows ("old woman", "woman frowning") or that names a kind
     of thing ("female sign", "women's room") is the subject and kept;
   * filler ("please draw", "a picture of", "a", "the", "some", "cute",
     "little", "emoji", "icon" …; "big" / "small" unless a name has them there).

2. **score = (1 − w) · sentence similarity + w · keyword score**, w =
   :data:`KEYWORD_WEIGHT` (0.35). The sentence similarity is MiniLM's: the mean
   of the cosine to the identity's name and to its name with its emojibase
   keywords ("a fluffy sheep" finds "ewe"). The keyword score (:class:`KeywordIndex`)
   looks at the prompt's content words, stemmed ("laughing" = "laugh",
   "puppies" = "puppy"), each weighted by its rarity (idf over all identities:
   "face" counts little, "coffee" much; a word before "of" half: in "a cup of
   coffee" the thing is the coffee; a word no name or keyword has is read as
   the known words it is a letter or two off: "elefant"; a word people type
   for what names and keywords call otherwise is read as those words too,
   :data:`SYNONYMS`: "motorbike" is also *motorcycle*, "car" *automobile*,
   "half moon" *quarter moon*, "number" *keycap*; digits and number words are
   read as each other)::

       keyword score = explained · (1 − NAME_SHARE + NAME_SHARE · said)

   ``explained``: the share of the prompt's words the identity has, a word in
   its name counting 1 and one only among its keywords :data:`TAG_WEIGHT`
   (0.8; a keyword the word begins or ends counts too: "bolt" in
   "thunderbolt"); ``said``: the share of the identity's name words the prompt
   says (NAME_SHARE 0.25). So one shared keyword among many does not beat the
   identity that explains every word ("a cup of coffee" → *hot beverage*, not
   *cup with straw*; "laughing till i cry" → a face laughing with tears, not
   *loudly crying face*). An identity whose name the prompt says word for word
   (determiners and filler aside, words as written, not stemmed) gets
   :data:`NAME_BONUS` (0.1) on top: "a house" → *house*, not *houses*, whose name
   and one keyword MiniLM puts nearer. Tuned on tests/data/prompt_table.json (266
   prompts written the way people type them): 86.5 % snap right on the sentence
   similarity alone, 92.9 % with the keyword score (w 0.3-0.4, tag weights
   0.8-1 and name shares 0.25-0.5 all give 91.4-93.2 %: the gain is the keyword
   score's, not a lucky setting's), 96.6 % with the synonyms (+9 rows, one per
   entry that the table has a prompt for; they were written after reading the
   table's misses, so on this table they flatter) and the name bonus (+1;
   0.1-0.25 all give it). The sentence encoder still has the last word where it is sure of
   the wrong thing: "lightning bolt" → *nut and bolt*, "a bolt of lightning" →
   *cloud with lightning* (⚡ *high voltage* has the keywords, but MiniLM puts
   its name far from lightning); "rock on" → *rock*; "coffee mug" → *beer mug*.

3. A best score under :data:`WEAK_SCORE` (0.45) is a **weak match**: the note
   says the model draws the closest it can rather than asserting it ("the
   closest it can draw, ZZZ · fluent flat — matched from 'zxqv blorptastic',
   0.22: a weak match"). On the table, 1 of the 3 matches under 0.45 is wrong
   and 8 of the 263 above it.

Identities the model was not taught (``outside``) are scored too, so a prompt
whose best match is one of them is told so and gets the nearest identity the
model can draw.
"""

from __future__ import annotations

import difflib
import math
import random
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

import torch

from .settings import SettingsError
from .text import Conditioning, PromptError, TextEncoder, check_prompt

#: ``style`` setting values that are not style names
DEFAULT_STYLE, ANY_STYLE = "", "any"

#: the keyword score's share of a match's score (the sentence similarity has the rest)
KEYWORD_WEIGHT = 0.35
#: a prompt word found among an identity's keywords but not in its name counts this much (in its name: 1)
TAG_WEIGHT = 0.8
#: how much the keyword score rewards saying the identity's name words (the rest: explaining the prompt's)
NAME_SHARE = 0.25
#: added to the score of an identity whose name the prompt says word for word, filler aside ("a house" → *house*,
#: not *houses*)
NAME_BONUS = 0.1
#: a best score below this is a weak match: the note says the model draws the closest it can
WEAK_SCORE = 0.45

# words people use for the five Fitzpatrick tones (CLDR names first), light → dark; "-er": "darker skin"
_TONE_WORDS = (
    ("light", r"(?:very\s+)?(?:light|pale|fair|white)(?:e?r)?"),
    ("medium-light", r"medium[\s-]+light|light[\s-]+brown|olive"),
    ("medium", r"medium|brown|tan(?:ned)?"),
    ("medium-dark", r"medium[\s-]+dark|dark[\s-]+brown"),
    ("dark", r"(?:very\s+)?(?:dark|black)(?:er)?"),
)
_SKIN = r"(?:skin[\s-]+(?:tone|colou?r)|skin[\s-]+toned|skinned|skin|toned|tone)"


def find_tone(prompt: str) -> tuple:
    """(the skin tone a prompt names as an index into CLDR's five tones (0 light … 4 dark) or None,
    the prompt without those words) — "thumbs up, dark skin" → (4, "thumbs up").

    Only words next to "skin" or "tone" count, before ("dark-skinned", "darker skin", "dark tone") or after
    ("skin tone: dark", "skin tone 5"): "a white heart" is a colour, not a tone; the longest tone phrase wins
    ("medium-dark skin" is not "dark skin")."""
    best = None
    for i, (_name, words) in enumerate(_TONE_WORDS):
        for pattern in (rf"\b({words})[\s-]+{_SKIN}\b", rf"\b{_SKIN}\s*[:=]?\s*({words})\b"):
            for m in re.finditer(pattern, prompt, flags=re.IGNORECASE):
                if best is None or len(m.group(1)) > len(best[1].group(1)):
                    best = (i, m)
    if best is None:
        m = re.search(r"\bskin[\s-]+tone\s*[:=]?\s*([1-5])\b", prompt, flags=re.IGNORECASE)
        if m is None:
            return None, prompt
        best = (int(m.group(1)) - 1, m)
    i, m = best
    rest = (prompt[: m.start()] + " " + prompt[m.end() :]).replace("()", " ").replace("[]", " ")
    rest = " ".join(rest.replace(" ,", ",").split()).strip(" ,;-")
    rest = re.sub(r"\b(with|and|in|of)$", "", rest).strip(" ,;-")
    return i, rest or prompt


# ---------------------------------------------------------------- what people type around the subject

#: gender words → the word emoji names use; matched as "person" (see :func:`parse_prompt`)
GENDER_WORDS = {
    **dict.fromkeys(("woman", "women", "girl", "girls", "lady", "ladies", "female", "females", "gal"), "woman"),
    **dict.fromkeys(("man", "men", "boy", "boys", "guy", "guys", "male", "males", "gentleman", "dude"), "man"),
}
_GENDERED = ("woman", "man")
#: nouns a gender word names a kind of, not a person's gender ("female sign", "men room")
_GENDER_OF_THING = {"sign", "symbol", "room", "restroom", "toilet", "toilets", "bathroom"}
#: words that are never the subject
_FILLER = {"a", "an", "the", "some", "please", "pls", "plz", "cute", "little", "tiny", "adorable", "lovely",
           "emoji", "emojis", "icon", "icons"}
#: size words: filler unless a name has them next to the same word ("grinning face with big eyes")
_SIZE = {"big", "small", "large", "huge"}
_REQUEST = re.compile(r"^(?:please\s+)?(?:(?:can|could|would)\s+you\s+)?(?:please\s+)?"
                      r"(?:draw|make|show|give|generate|create|paint|sketch|i\s+want|i'd\s+like)(?:\s+(?:me|us))?\s+")
_PICTURE_OF = re.compile(r"\b(?:picture|image|drawing|emoji|icon|illustration|sticker|photo)s?\s+of\s+")
#: not content: never counted by the keyword score
STOPWORDS = frozenset(
    "a an the of with and or in on at to for from by my your his her its our their i im me we you it is are "
    "be being so very some this that these those what please pls just without feeling".split())


@dataclass(frozen=True)
class Parsed:
    """A prompt with its modifiers parsed apart (:func:`parse_prompt`)."""

    subject: str  # what is matched: no tone words, no filler; a modifying gender word reads "person"
    tone: Optional[int]  # index into CLDR's five tones, 0 light … 4 dark
    gender: Optional[str]  # "woman" / "man" where a gender word modifies a person ("a frowning girl"), else None
    dropped: tuple = ()  # the filler words left out


def words_of(text: str) -> list:
    """Lower-case words, apostrophes kept inside a word ("woman’s" → "woman's")."""
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower().replace("’", "'"))


def name_pairs(names: Iterable[str]) -> frozenset:
    """Adjacent content-word pairs of names ("old woman", "big eyes"): a modifier word in such a pair in a
    prompt is part of its subject."""
    pairs = set()
    for name in names:
        w = [x for x in words_of(name) if x not in STOPWORDS]
        pairs.update(zip(w, w[1:]))
    return frozenset(pairs)


def parse_prompt(prompt: str, keep_pairs: frozenset = frozenset()) -> Parsed:
    """Tone, gender and filler parsed apart from the subject a person typed.

    "please draw a cute puppy" → subject "puppy"; "a frowning girl, dark skin" → ("frowning person", tone 4,
    gender "woman"). ``keep_pairs`` (:func:`name_pairs` of the names the model knows): a gender or size word
    next to the word a name has it with is the subject, not a modifier ("old woman", "lady beetle", "face with
    big eyes"); so is a gender word naming a kind of thing ("female sign", "women's room") or the prompt's only
    word."""
    tone, rest = find_tone(prompt)
    text = _PICTURE_OF.sub("", _REQUEST.sub("", rest.lower().replace("’", "'")))
    words = words_of(text)
    content = [w for w in words if w not in STOPWORDS and w not in _FILLER]
    kept, dropped, gender = [], [], None
    for i, w in enumerate(words):
        prev, nxt = (words[i - 1] if i else ""), (words[i + 1] if i + 1 < len(words) else "")
        in_name = (prev, w) in keep_pairs or (w, nxt) in keep_pairs
        if w in _FILLER or (w in _SIZE and not in_name):
            dropped.append(w)
        elif w in GENDER_WORDS and not in_name and nxt not in _GENDER_OF_THING and content != [w]:
            gender = GENDER_WORDS[w]
            kept.append("person")
        else:
            kept.append(w)
    subject = " ".join(kept) or rest
    return Parsed(subject, tone, gender, tuple(dropped))


# ---------------------------------------------------------------- keywords


def stem(word: str) -> str:
    """A crude suffix stripper, the same on both sides of a comparison: "puppies" = "puppy", "laughing" =
    "laugh", "glasses" = "glass", "cookies" = "cookie", "smiling" = "smile" = "smiley"."""
    w = word.split("'")[0]
    if len(w) <= 3:
        return w
    for suffix, repl in (("ies", "i"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh")):
        if w.endswith(suffix):
            w = w[: -len(suffix)] + repl
            break
    else:
        if w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]  # "running" → "run"
            break
    if len(w) > 4 and w.endswith("ey"):
        w = w[:-2]  # "smiley" = "smil(e)"
    elif len(w) > 3 and w[-1] in "ey":
        w = w[:-1] + ("i" if w[-1] == "y" else "")  # "puppy" = "puppi(es)", "smile" = "smil(ing)"
    return w


#: words that do not change what a name names ("my house" says *house*; "rock on" does not say *rock*)
_DETERMINERS = frozenset("a an the my your his her its our their some this that these those".split())


def name_words(text: str) -> frozenset:
    """A text's words as written, but for determiners, possessives cut ("the men’s room" → {"men", "room"}):
    a prompt says a name word for word when the two are the same (:data:`NAME_BONUS`)."""
    return frozenset(w.split("'")[0] for w in words_of(text)) - _DETERMINERS


def content_stems(text: str) -> list:
    """The stems of a text's content words, hyphenated words also joined ("e-mail" → "e", "mail", "email")."""
    out = [stem(w) for w in words_of(text) if w not in STOPWORDS]
    out += [stem(j.replace("-", "")) for j in re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)+", text.lower())]
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class Word:
    """A prompt's content word as the keyword score reads it (:func:`read_words`)."""

    text: str  # as typed, lower case (a word typed twice counts once)
    stems: tuple  # its stem, then those SYNONYMS give it; for a typo, the known stems it is a letter or two off
    weight: float = 1.0  # OF_WEIGHT before "of": in "a cup of coffee" the thing is the coffee


#: a word before "of" counts this much ("a bolt of lightning", "a cup of coffee")
OF_WEIGHT = 0.5


#: what people type for a thing that emoji names and emojibase keywords call otherwise (typed word or phrase →
#: the words of the names it means, word for word): the keyword score reads the typed words as these too
#: (:func:`read_words`). A few common ones, each what a person means by it, not a table row's answer.
SYNONYMS = {
    "motorbike": "motorcycle",  # 🏍 (emojibase has neither "motorbike" nor "bike" for it)
    "car": "automobile",  # 🚗's name; "car" is only a keyword, of 16 identities
    "cuppa": "cup",  # British "a cuppa" (tea): 🍵 teacup has "cup"
    "x": "cross",  # "an x", "x mark" → ❌ cross mark
    "earth": "globe",  # 🌍 🌎 🌏 are named "globe showing …"
    "planet earth": "globe earth",  # the planet we live on, not 🪐 ringed planet
    "oak": "deciduous",  # 🌳 deciduous tree: the broad-leaved tree (🌲 is the evergreen)
    "number": "keycap",  # "number 7" → the digit 7️⃣ (named "keycap: 7"), not a clock
    "half moon": "quarter moon",  # 🌓 🌗 are named "first / last quarter moon"
    "ok sign": "ok hand",  # 👌, the OK sign made with the hand
    "exclamation point": "exclamation mark",  # US English for "!"
    "yum": "savoring",  # 😋 face savoring food, the "yum" face (🍴 fork and knife has "yum" too)
}
#: digits and number words are read as each other ("number 7" → *keycap: 7*, "seven" finds it too)
NUMBER_WORDS = "zero one two three four five six seven eight nine ten".split()
_ALSO = {**{str(i): w for i, w in enumerate(NUMBER_WORDS)}, **{w: str(i) for i, w in enumerate(NUMBER_WORDS)},
         **SYNONYMS}


def _also(words: Sequence[str]) -> list:
    """For each word, the stems :data:`SYNONYMS` (and the digit ↔ number-word table) read it as too."""
    out = [set() for _ in words]
    for key, value in _ALSO.items():
        key_words, value_words = key.split(), value.split()
        for k in range(len(words) - len(key_words) + 1):
            if list(words[k: k + len(key_words)]) == key_words:
                for j, v in enumerate(value_words):  # word for word; more words: the last one's
                    out[k + min(j, len(key_words) - 1)].add(stem(v))
    return out


def read_words(text: str, idf: dict) -> list:
    """A text's content words as :class:`Word` s, each read as its stem and the stems :data:`SYNONYMS` give it
    ("motorbike" is also "motorcycle"), weighted by its own stem's rarity where an identity has it, else by
    the rarest of the others. A word of 4 letters or more that neither it nor a synonym makes known is read as
    the known stems it is a letter or two off (difflib ratio ≥ 0.8: "elefant" → "elegant", "elephant"); the
    sentence similarity picks among those."""
    words = words_of(text)
    first_of = words.index("of") if "of" in words else -1
    also = _also(words)
    out = []
    for k, w in enumerate(words):
        if w in STOPWORDS or w in (x.text for x in out):
            continue
        s = stem(w)
        stems = (s, *sorted(also[k] - {s}))
        if not any(x in idf for x in stems) and len(s) >= 4:
            stems = tuple(difflib.get_close_matches(s, idf.keys(), n=3, cutoff=0.8)) or stems
        out.append(Word(w.split("'")[0], stems, OF_WEIGHT if k < first_of else 1.0))
    return out


class KeywordIndex:
    """The name words and emojibase keywords of identities, for :meth:`scores`; ``idf``
    (:func:`keyword_idf`) is shared by the indexes of one model's identities (inside and outside)."""

    def __init__(self, rows: Sequence[dict], idf: dict):
        self.idf = idf
        self.unseen_idf = max(idf.values(), default=1.0)
        self.name_rows: dict = {}  # stem → rows with it in their name
        self.tag_rows: dict = {}  # stem → rows with it among their keywords only
        name_weight = []
        self.by_name: dict = {}  # a name's content words as written → rows with that name
        for i, r in enumerate(rows):
            self.by_name.setdefault(name_words(r.get("name", "")), []).append(i)
            names = set(content_stems(r.get("name", "")))
            tags = {t for tag in r.get("tags") or () for t in content_stems(tag)} - names
            for w in names:
                self.name_rows.setdefault(w, []).append(i)
            for w in tags:
                self.tag_rows.setdefault(w, []).append(i)
            name_weight.append(sum(idf.get(w, self.unseen_idf) for w in names) or 1.0)
        self.name_weight = torch.tensor(name_weight)
        self.rows = len(rows)
        self._stems = sorted({*self.name_rows, *self.tag_rows})

    def scores(self, words: Sequence[Word]) -> torch.Tensor:
        """(N,) keyword scores in [0, 1] of a prompt's content words (module docstring): ``explained`` counts
        a word the identity's name has 1, one its keywords (or a longer word of either: "thunderbolt" for
        "bolt") have TAG_WEIGHT; ``said`` counts the name words the prompt has."""
        explained, said = torch.zeros(self.rows), torch.zeros(self.rows)
        total = 0.0
        for word in words:
            known = [self.idf[w] for w in word.stems if w in self.idf]
            weight = word.weight * (self.idf.get(word.stems[0]) or max(known, default=self.unseen_idf))
            total += weight
            named = {i for w in word.stems for i in self.name_rows.get(w, ())}
            tagged = {i for w in word.stems for i in (*self.tag_rows.get(w, ()), *self._compounds(w))} - named
            explained[sorted(named)] += weight
            explained[sorted(tagged)] += TAG_WEIGHT * weight
            said[sorted(named)] += weight
        if total == 0:
            return explained
        return explained / total * (1 - NAME_SHARE + NAME_SHARE * (said / self.name_weight).clamp(max=1))

    def named(self, said: frozenset) -> list:
        """Rows whose :func:`name_words` are ``said``, a prompt's :func:`name_words`."""
        return self.by_name.get(said, [])

    def _compounds(self, w: str) -> list:
        """Rows with a name word or keyword that ``w`` begins or ends, or that begins or ends ``w``, the shorter
        of 4 letters or more and the longer 3 more: "bolt" and "thunderbolt", "smartphone" and "phone"."""
        if len(w) < 4:
            return []
        return [i for t in self._stems if _compound(w, t)
                for i in (*self.name_rows.get(t, ()), *self.tag_rows.get(t, ()))]


def _compound(a: str, b: str) -> bool:
    """Whether one stem begins or ends the other, the shorter of 4 letters or more and the longer 3 more."""
    short, long = sorted((a, b), key=len)
    return len(short) >= 4 and len(long) >= len(short) + 3 and (long.startswith(short) or long.endswith(short))


def keyword_idf(*row_lists: Sequence[dict]) -> dict:
    """Each name or keyword stem → log(1 + identities / identities that have it)."""
    df: dict = {}
    n = 0
    for rows in row_lists:
        for r in rows:
            n += 1
            stems = set(content_stems(r.get("name", "")))
            stems.update(t for tag in r.get("tags") or () for t in content_stems(tag))
            for w in stems:
                df[w] = df.get(w, 0) + 1
    return {w: math.log(1 + n / c) for w, c in df.items()}


@dataclass
class Match:
    """What a prompt was understood as."""

    identity: int  # class row
    name: str
    similarity: float  # the match's score: sentence similarity and keyword score combined (module docstring)
    style: str
    tone: Optional[str]  # CLDR tone words, or None (the default yellow)
    prompt: str
    alternatives: list = field(default_factory=list)  # [(class row, name, score)] next best
    outside: Optional[str] = None  # the better-matching identity this model does not draw
    tone_note: str = ""
    weak: bool = False  # the best score is under WEAK_SCORE: the closest the model can draw, not a good match
    gender_note: str = ""

    def note(self) -> str:
        style = self.style.replace("-", " ")
        what = f"{self.name}{': ' + self.tone if self.tone else ''} · {style}"
        # the score (similarity and keywords, plus the exact-name bonus) is shown on the similarity's 0-1 scale
        line = f"{what} — matched from {self.prompt!r}, {min(self.similarity, 1.0):.2f}"
        if self.weak:
            line = f"the closest it can draw, {line}: a weak match"
        if self.outside:
            line += f" (nearest this model draws: it does not know {self.outside!r})"
        return line + "".join(f"; {n}" for n in (self.tone_note, self.gender_note) if n)


def default_style_problem(default: str, offered: Sequence[str], styles: Sequence[str]) -> Optional[str]:
    """Why ``default`` cannot be a model's default style, or None when it can: one of the named styles it
    offers, or "any" where the model was taught that row."""
    if default == ANY_STYLE:
        return None if ANY_STYLE in styles else ("default style 'any' needs a model taught the style 'any' "
                                                 "(train ar --style-dropout)")
    if default not in offered:
        return f"default style {default!r} is not one of {', '.join(s for s in offered if s != ANY_STYLE)}"
    return None


class IdentityConditioner:
    """Prompt → a (1, 3) class condition [identity, style, tone] and a note saying what it is.

    ``identities``: the model's classes in class order, each a dict with ``name`` and
    optionally ``styles`` (the styles it has art in) and ``tones`` (whether it has skin-tone
    variants); ``vectors`` / ``tag_vectors``: (N, D) l2-normalised sentence vectors of each
    name and of each name with its keywords; ``outside`` (+ its two vector sets): identities
    of the data the model was not taught. ``#12`` picks class row 12 directly. ``offered_styles``:
    the styles the model draws well enough to offer (default: all); the others keep their class
    rows (the embedding has them) but are refused by name and never chosen for "any".
    ``keyword_weight``: the keyword score's share of a match's score (:data:`KEYWORD_WEIGHT`; 0: the
    sentence similarity alone).
    """

    warm_prompt = "#0"

    def __init__(self, encoder: TextEncoder, identities: Sequence[dict], styles: Sequence[str],
                 tones: Sequence[str], vectors: torch.Tensor, tag_vectors: Optional[torch.Tensor] = None,
                 default_style: Optional[str] = None, outside: Sequence[dict] = (),
                 outside_vectors: Optional[torch.Tensor] = None, outside_tag_vectors: Optional[torch.Tensor] = None,
                 offered_styles: Optional[Sequence[str]] = None):
        self.encoder = encoder
        self.identities = list(identities)
        self.styles = list(styles)
        self.tones = list(tones)
        if not self.identities or not self.styles:
            raise ValueError("an identity conditioner needs at least one identity and one style")
        # the learned "any" row is a setting of its own, never a named style
        self.offered_styles = [s for s in (offered_styles or self.styles) if s != ANY_STYLE]
        unknown = [s for s in self.offered_styles if s not in self.styles]
        if unknown:
            raise ValueError(f"offered style {unknown[0]!r} is not one of {', '.join(self.styles)}")
        if not self.offered_styles:
            raise ValueError("an identity conditioner needs at least one named style")
        self.default_style = default_style or self.offered_styles[0]
        problem = default_style_problem(self.default_style, self.offered_styles, self.styles)
        if problem:
            raise ValueError(problem)
        self.vectors = _check_vectors(vectors, len(self.identities), "vectors")
        self.tag_vectors = _check_vectors(tag_vectors, len(self.identities), "tag_vectors")
        self.outside = list(outside)
        self.outside_vectors = _check_vectors(outside_vectors, len(self.outside), "outside_vectors")
        self.outside_tag_vectors = _check_vectors(outside_tag_vectors, len(self.outside), "outside_tag_vectors")
        self.names = [r["name"] for r in self.identities]  # what a class picker lists
        self.keyword_weight = KEYWORD_WEIGHT
        idf = keyword_idf(self.identities, self.outside)
        self.keywords = KeywordIndex(self.identities, idf)
        self.outside_keywords = KeywordIndex(self.outside, idf)
        self.keep_pairs = name_pairs([*self.names, *(r["name"] for r in self.outside)])
        self.variants = gender_variants(self.names)

    # ---------------------------------------------------------------- matching
    def _similarities(self, v: torch.Tensor, vectors, tag_vectors) -> torch.Tensor:
        sims = vectors @ v
        return 0.5 * (sims + tag_vectors @ v) if tag_vectors is not None else sims

    def _scores(self, v: torch.Tensor, words: Sequence[Word], said: frozenset, outside: bool = False) -> torch.Tensor:
        """Sentence similarity to sentence vector ``v`` and keyword score of ``words``, combined: each
        identity's score (the outside ones' with ``outside``)."""
        if outside:
            sims = self._similarities(v, self.outside_vectors, self.outside_tag_vectors)
        else:
            sims = self._similarities(v, self.vectors, self.tag_vectors)
        w = self.keyword_weight
        if not w:
            return sims
        index = self.outside_keywords if outside else self.keywords
        scores = (1 - w) * sims + w * index.scores(words)
        scores[index.named(said)] += NAME_BONUS
        return scores

    def parse(self, prompt: str) -> Parsed:
        """:func:`parse_prompt` with this model's names kept whole."""
        return parse_prompt(prompt, self.keep_pairs)

    def nearest(self, prompt: str, n: int = 4) -> list:
        """[(class row, name, score)] best first, for the prompt's subject (:meth:`parse`)."""
        text = check_prompt(prompt)
        return self._nearest(text if _direct(text) is not None else self.parse(text).subject, n)[0]

    def _nearest(self, text: str, n: int) -> tuple:
        """(:meth:`nearest` of checked text, (its sentence vector, its :class:`Word` s) or None for ``#N``):
        made once and reused for the outside check."""
        direct = _direct(text)
        if direct is not None:
            i = direct
            if not 0 <= i < len(self.identities):
                raise PromptError(f"prompt: class number must be in [0, {len(self.identities) - 1}], got {i}")
            return [(i, self.names[i], 1.0)], None
        v = self.encoder.pooled([text])[0].float()
        words = read_words(text, self.keywords.idf)
        said = name_words(text)
        return self._ranked(self._scores(v, words, said), n), (v, words, said)

    def _ranked(self, scores: torch.Tensor, n: int) -> list:
        top = torch.topk(scores, min(n, len(self.identities)))
        return [(int(i), self.names[int(i)], float(s)) for s, i in zip(top.values, top.indices)]

    def _outside_better(self, v: torch.Tensor, words: Sequence[Word], said: frozenset, score: float) -> Optional[int]:
        """The identity outside the repertoire that matches the prompt better than any inside."""
        if self.outside_vectors is None or not self.outside:
            return None
        scores = self._scores(v, words, said, outside=True)
        j = int(scores.argmax())
        return j if float(scores[j]) > score else None

    def _nearest_to_outside(self, v: torch.Tensor, words: Sequence[Word], said: frozenset, j: int, n: int) -> list:
        """Inside identities for a prompt whose best match is outside identity ``j``: ranked by the prompt and
        that identity's name together ("a happy dog" → *dog*, outside → *dog face*, not *grinning cat*)."""
        v = v + self.outside_vectors[j]
        return self._ranked(self._scores(v / v.norm().clamp(min=1e-8), words, said), n)

    def style_for(self, identity: int, style: str, seed: int) -> str:
        """The style drawn: ``style`` by name (an offered one), the default ("" — the model's default style,
        which may be its learned "any"; when the identity has no art in it, its first offered style, else its
        first style), or "any" (one of the
        identity's offered styles, chosen by the seed; the model's own learned "any" where it has one)."""
        if not isinstance(style, str):
            raise SettingsError("style", f"must be a style name, got {type(style).__name__}")
        offered = self.offered_styles
        have = [s for s in self.identities[identity].get("styles") or self.styles if s in self.styles]
        if style == ANY_STYLE:
            if ANY_STYLE in self.styles:  # a model taught the style "any" (train ar --style-dropout) draws it
                return ANY_STYLE
            return random.Random(seed).choice([s for s in have if s in offered] or offered)
        if style == DEFAULT_STYLE:
            if self.default_style == ANY_STYLE:  # a model that ships "any" as its default: its learned row
                return ANY_STYLE
            if self.default_style in have or not have:
                return self.default_style
            return next((s for s in offered if s in have), have[0])
        if style not in offered:
            raise SettingsError("style", f"unknown style {style!r}; choose from {', '.join(offered)} or 'any'")
        return style

    def match(self, prompt: str, style: str = DEFAULT_STYLE, seed: int = 0, alternatives: int = 3) -> Match:
        text = check_prompt(prompt)
        parsed = Parsed(text, None, None) if _direct(text) is not None else self.parse(text)
        near, made = self._nearest(parsed.subject, alternatives + 1)
        outside = None if made is None else self._outside_better(*made, near[0][2])
        if outside is not None:
            near = self._nearest_to_outside(*made, outside, alternatives + 1)
            outside = self.outside[outside]["name"]
        i, score = near[0][0], near[0][2]
        i, gender_note = self._gendered(i, None if outside else parsed.gender)  # outside: the note says so
        name = self.names[i]
        tone, tone_note = None, ""
        if parsed.tone is not None and parsed.tone < len(self.tones):
            if self.identities[i].get("tones", True):
                tone = self.tones[parsed.tone]
            else:
                tone_note = f"{name} has no skin tones"
        rest = [a for a in near if a[0] != i][:alternatives]
        return Match(i, name, score, self.style_for(i, style, seed), tone, text, rest, outside, tone_note,
                     made is not None and score < WEAK_SCORE, gender_note)

    def _gendered(self, i: int, gender: Optional[str]) -> tuple:
        """(class row ``i`` or its ``gender`` variant ("person frowning" → "woman frowning"), a note when
        the prompt names a gender the identity has no variant of)."""
        if gender is None:
            return i, ""
        key, own = gender_key(self.names[i])
        variant = self.variants.get(key, {}).get(gender)
        if variant is not None:
            return variant, ""
        if own in _GENDERED:
            return i, ""  # the prompt's own gendered name ("woman’s hat") or the nearest there is
        return i, f"this model draws no {gender} variant of {self.names[i]}"

    def condition_of(self, m: Match) -> torch.Tensor:
        tone = self.tones.index(m.tone) + 1 if m.tone else 0
        return torch.tensor([[m.identity, self.styles.index(m.style), tone]])

    def __call__(self, prompt: str, settings=None) -> Conditioning:
        style = getattr(settings, "style", DEFAULT_STYLE) if settings is not None else DEFAULT_STYLE
        seed = getattr(settings, "seed", 0) if settings is not None else 0
        m = self.match(prompt, style, seed)
        return Conditioning(self.condition_of(m), None, m.note(), match=m)


def gender_key(name: str) -> tuple:
    """(a name's words with its gender word read as "person", that word or None): "deaf woman" →
    (("deaf", "person"), "woman")."""
    words, own = [], None
    for w in words_of(name):
        if w in ("person", *_GENDERED):
            own, w = w, "person"
        words.append(w)
    return tuple(words), own


def gender_variants(names: Sequence[str]) -> dict:
    """{gender_key words: {"person" / "woman" / "man": class row}} of the names with a gender word."""
    out: dict = {}
    for i, name in enumerate(names):
        key, own = gender_key(name)
        if own is not None:
            out.setdefault(key, {})[own] = i
    return out


def _direct(text: str) -> Optional[int]:
    """The class row a ``#N`` prompt picks, or None."""
    m = re.fullmatch(r"#(\d+)", text)
    return int(m.group(1)) if m else None


def _check_vectors(v: Optional[torch.Tensor], rows: int, what: str) -> Optional[torch.Tensor]:
    if v is None:
        return None
    if v.ndim != 2 or v.shape[0] != rows or not v.is_floating_point():
        raise ValueError(f"{what}: need ({rows}, D) floating-point vectors, got {tuple(v.shape)} {v.dtype}")
    return v.float()
