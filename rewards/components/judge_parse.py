"""Reading a judge model's verdict: a 1-10 score or pass/fail, and a one-line reason.

Judges answer in many shapes; these are the ones seen from real judges and judge prompts:
MT-Bench's ``Rating: [[7]]`` (Zheng et al. 2023, "Judging LLM-as-a-Judge"), ``Score: 8/10``,
``**Score:** 8``, ``8 out of 10``, a bare ``7``, JSON (``{"score": 8, "reason": "..."}``),
Prometheus' ``[RESULT] 4``-style tags, and for pass/fail ``PASS`` / ``JudgeVerdict: FAIL`` /
``yes`` / ``no`` / ``[[A]]``-free words like ``correct`` / ``incorrect``. The last explicit
marker wins (judges often restate the rubric's scale first); a score outside 1-10 is no score.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

#: Longest reason kept for the trace.
MAX_REASON_CHARS = 200

_NUMBER = r"(10(?:\.0+)?|[1-9](?:\.\d+)?)"
# Explicit markers, strongest first: [[7]], Score/Rating/Grade: 7, [RESULT] 7, 7/10, 7 out of 10.
_SCORE_PATTERNS = (
    re.compile(rf"\[\[\s*{_NUMBER}\s*\]\]"),
    re.compile(
        rf"\b(?:score|rating|grade|result|mark)\W{{0,6}}(?:is|of|:)?\W{{0,4}}{_NUMBER}(?![\d.]*\d)",
        re.IGNORECASE,
    ),
    re.compile(rf"\[RESULT\]\s*{_NUMBER}", re.IGNORECASE),
    re.compile(rf"\b{_NUMBER}\s*(?:/\s*10|out of 10|points?)\b", re.IGNORECASE),
)
_BARE = re.compile(rf"^\W{{0,3}}{_NUMBER}\W{{0,3}}$")
_PASS_WORDS = {
    "pass": True,
    "passed": True,
    "yes": True,
    "correct": True,
    "acceptable": True,
    "fail": False,
    "failed": False,
    "no": False,
    "incorrect": False,
    "unacceptable": False,
}
_VERDICT = re.compile(
    r"(?:verdict|decision|result|answer|judg(?:e)?ment|grade)\W{0,6}(?:is\W{0,3})?"
    r"(pass(?:ed)?|fail(?:ed)?|yes|no|correct|incorrect|acceptable|unacceptable)\b",
    re.IGNORECASE,
)
_WORD = re.compile(
    r"\b(pass(?:ed)?|fail(?:ed)?|incorrect|correct|unacceptable|acceptable)\b", re.IGNORECASE
)
_REASON = re.compile(r"(?:reason(?:ing)?|explanation|justification|rationale)\W{0,4}(.+)", re.I)


@dataclass(frozen=True)
class JudgeVerdict:
    """A parsed judgement: ``score`` in [0, 1] (``None``: unreadable) and a one-line reason."""

    score: float | None
    reason: str


def _json_verdict(text: str) -> dict | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _reason(text: str, data: dict | None) -> str:
    if data is not None:
        for key in ("reason", "explanation", "rationale", "justification"):
            if isinstance(data.get(key), str) and data[key].strip():
                return _one_line(data[key])
    found = _REASON.findall(text)
    if found:
        return _one_line(found[-1])
    prose = []
    for line in text.splitlines():
        for pattern in (*_SCORE_PATTERNS, _VERDICT):
            line = pattern.sub("", line)  # the score marker is not the reason
        line = line.replace("[RESULT]", "").strip(" *:-[]")
        if len(line) > 12 and not _BARE.match(line):
            prose.append(line)
    return _one_line(prose[0]) if prose else ""


def _one_line(text: str) -> str:
    line = " ".join(text.split()).strip(" *\"'")
    return line[:MAX_REASON_CHARS]


def parse_score(text: str) -> JudgeVerdict:
    """A 1-10 judgement read from ``text``; the score is mapped to ``score / 10``."""
    data = _json_verdict(text)
    value: float | None = None
    if data is not None:
        for key in ("score", "rating", "grade"):
            raw = data.get(key)
            if isinstance(raw, int | float) and not isinstance(raw, bool) and 1 <= raw <= 10:
                value = float(raw)
                break
            if isinstance(raw, str) and re.fullmatch(_NUMBER, raw.strip()):
                value = float(raw.strip())
                break
    if value is None:
        # the last explicit marker in the text wins: rubrics restate the scale before the score
        found = [(m.start(), m.group(1)) for p in _SCORE_PATTERNS for m in p.finditer(text)]
        if found:
            value = float(max(found)[1])
    if value is None:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        bare = [m.group(1) for ln in lines if (m := _BARE.match(ln.strip()))]
        if bare:
            value = float(bare[-1])
    reason = _reason(text, data)
    if value is None:
        return JudgeVerdict(None, f"no 1-10 score in the judge's answer: {_one_line(text)[:80]!r}")
    return JudgeVerdict(value / 10.0, reason or f"score {value:g}/10")


def parse_pass_fail(text: str) -> JudgeVerdict:
    """A pass/fail judgement read from ``text`` (1.0 pass, 0.0 fail)."""
    data = _json_verdict(text)
    passed: bool | None = None
    if data is not None:
        for key in ("verdict", "result", "pass", "passed", "decision"):
            raw = data.get(key)
            if isinstance(raw, bool):
                passed = raw
                break
            if isinstance(raw, str) and raw.strip().lower() in _PASS_WORDS:
                passed = _PASS_WORDS[raw.strip().lower()]
                break
    if passed is None:
        found = _VERDICT.findall(text) or _WORD.findall(text)
        if found:
            passed = _PASS_WORDS[found[-1].lower()]
    if passed is None:
        first = text.strip().split()[:1]
        word = first[0].strip(".,:;!*").lower() if first else ""
        passed = _PASS_WORDS.get(word)
    reason = _reason(text, data)
    if passed is None:
        return JudgeVerdict(None, f"no pass/fail in the judge's answer: {_one_line(text)[:80]!r}")
    return JudgeVerdict(1.0 if passed else 0.0, reason or ("pass" if passed else "fail"))
