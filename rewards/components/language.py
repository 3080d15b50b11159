"""Language consistency: the share of the completion written in the target language.

Reference: DeepSeek-R1 (2025, §2.3.4) adds a language-consistency reward, "the proportion of
target language words in the CoT", against language mixing. We identify language per sentence
with py3langid (Lui & Baldwin's langid.py model; :mod:`rewards.completions.langid_batch` runs it on
a whole batch at once, with identical results) and weigh sentences by their letters, which works for
scripts without spaces between words.

Text handling: tags such as ``<think>`` are removed; the text is split into sentences at
``. ! ? 。 ！ ？`` and line breaks (pieces longer than 500 characters are split at spaces); a
piece with fewer than ``min_letters`` letters is merged into the next one (the last into the one
before), because identifiers guess at random on a few letters. Letters are the word characters
of any script other than digits and ``_``. A completion with fewer than
``min_letters`` letters in all is not scored (``None``): digits and symbols have no language.

Modes: ``share`` (letters in target-language sentences / all letters) and ``all`` (1 if every
sentence is in the target language, else 0). ``candidates`` restricts which languages the
identifier may answer (empty: all it knows), which makes short sentences far more reliable
when the possible languages are known (e.g. ``["en", "zh"]``).
"""

from __future__ import annotations

import re
from typing import Any

from rewards.completions.langid_batch import classify_many
from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.params import ComponentInfo, ParamSpec, with_defaults
from rewards.verification.deadline import deadline_passed

#: Codes py3langid's model knows (checked against the model by the tests).
_CODES = (
    "af am an ar ary arz as az ba be bg bn br bs ca crh cs cy da de dz el en eo es et eu ext fa "
    "fi fo fr fuv fy ga gcf gcr gd gl gom grc gu gug guw ha hbo he hi hr ht hu hy id ig is it ja "
    "jv ka kab kik kk km kn ko ku ky la lb lg lij ln lo lt ltg lv mg mk ml mn mr ms mt my ne nl "
    "nn no nso oc om or pa pcm pl ps pt qu ro ru rw sa sdh se si sk sl sn so sq sr st sv sw ta te "
    "tg th tk tl tr tt ace bcl ug uk ur uz uzs vec vi vo wa wuu xh yo yue zh zu zxx"
)
LANGUAGES: tuple[str, ...] = tuple(_CODES.split())

_NAMES = {
    "ar": "Arabic", "de": "German", "en": "English", "es": "Spanish", "fr": "French",
    "hi": "Hindi", "id": "Indonesian", "it": "Italian", "ja": "Japanese", "ko": "Korean",
    "la": "Latin", "nl": "Dutch", "pl": "Polish", "pt": "Portuguese", "ru": "Russian",
    "sv": "Swedish", "th": "Thai", "tr": "Turkish", "uk": "Ukrainian", "vi": "Vietnamese",
    "zh": "Chinese",
}  # fmt: skip

_TAG_RE = re.compile(r"</?[A-Za-z][\w-]{0,39}>")
_SENTENCE_RE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_MAX_PIECE_CHARS = 500
_CHUNK_CHARS = 100_000  # characters identified between two looks at the call's deadline
_LETTERS_RE = re.compile(r"[^\W\d_]+")  # letters of any script: word characters but digits and _

PARAMS = (
    ParamSpec("language", "str", "en", "target language (ISO 639 code)", choices=LANGUAGES),
    ParamSpec("mode", "str", "share", "share of text, or all-or-nothing", choices=("share", "all")),
    ParamSpec(
        "min_letters", "int", 12, "sentences with fewer letters join the next", min=1, max=200
    ),
    ParamSpec(
        "candidates",
        "list",
        (),
        "languages the identifier may answer (empty: all)",
        choices=LANGUAGES,
        max_items=len(LANGUAGES),
    ),
)


def language_name(code: str) -> str:
    return _NAMES.get(code, code)


def _letters(text: str) -> int:
    return sum(map(len, _LETTERS_RE.findall(text)))


def sentences(text: str, min_letters: int) -> list[tuple[str, int]]:
    """The pieces a completion is judged by: ``(text, letter count)``, each >= ``min_letters``."""
    text = _TAG_RE.sub(" ", text)
    pieces: list[str] = []
    for match in _SENTENCE_RE.finditer(text):
        piece = match.group(0)
        while len(piece) > _MAX_PIECE_CHARS:
            cut = piece.rfind(" ", 0, _MAX_PIECE_CHARS)
            cut = cut if cut > 0 else _MAX_PIECE_CHARS
            pieces.append(piece[:cut])
            piece = piece[cut:]
        pieces.append(piece)
    merged: list[tuple[str, int]] = []
    carry, carry_letters = "", 0
    for piece in pieces:
        n = _letters(piece)
        if n == 0:
            continue
        carry, carry_letters = carry + piece, carry_letters + n
        if carry_letters >= min_letters:
            merged.append((carry.strip(), carry_letters))
            carry, carry_letters = "", 0
    if carry_letters:
        if merged:
            last, n = merged[-1]
            merged[-1] = (last + carry, n + carry_letters)
        elif carry_letters >= min_letters:
            merged.append((carry.strip(), carry_letters))
    return merged


class Language(RewardComponent):
    component = "language"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.language = p["language"]
        self.mode = p["mode"]
        self.min_letters = p["min_letters"]
        self.candidates = tuple(p["candidates"])

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        # Identification costs time in proportion to the text: within a scoring call's time
        # budget (rewards.verification.deadline), chunks left when it runs out are not scored.
        out: list[Judgement] = []
        start = 0
        while start < len(texts):
            end, chars = start, 0
            while end < len(texts) and (end == start or chars < _CHUNK_CHARS):
                chars += len(texts[end])
                end += 1
            if deadline_passed():
                out += [Judgement(None, "not identified: the request ran out of time")] * (
                    len(texts) - start
                )
                break
            out += self._judge_chunk(texts[start:end])
            start = end
        return out

    def _judge_chunk(self, texts: list[str]) -> list[Judgement]:
        split = [sentences(t, self.min_letters) for t in texts]
        flat = [s for pieces in split for s, _ in pieces]
        labels = iter(classify_many(flat, self.candidates or None) if flat else [])
        target = language_name(self.language)
        out = []
        for pieces in split:
            if not pieces:
                out.append(Judgement(None, "too little text to identify a language"))
                continue
            by_lang: dict[str, int] = {}
            for _, n in pieces:
                code = next(labels)[0]
                by_lang[code] = by_lang.get(code, 0) + n
            total = sum(by_lang.values())
            share = by_lang.get(self.language, 0) / total
            value = share if self.mode == "share" else float(share == 1.0)
            out.append(Judgement(value, _explain(share, target, by_lang, self.language, total)))
        return out


def _explain(share: float, target: str, by_lang: dict[str, int], code: str, total: int) -> str:
    if share == 1.0:
        return f"100% {target}"
    others = sorted(((n, c) for c, n in by_lang.items() if c != code), reverse=True)
    n, other = others[0]
    return f"{share:.0%} {target} ({n / total:.0%} {language_name(other)})"


def _check(params: dict[str, Any]) -> None:
    from rewards.errors import RewardSpecError

    cands = params["candidates"]
    if cands and params["language"] not in cands:
        raise RewardSpecError(
            "candidates", f"must include the target language {params['language']!r} when set"
        )


INFO = ComponentInfo(
    name="language",
    factory=Language,
    params=PARAMS,
    description="Share of the completion (by letters, per sentence) in the target language.",
    source="DeepSeek-R1 language-consistency reward (2025, §2.3.4); py3langid (langid.py) model",
    check=_check,
)
