"""Code format: a fenced code block in the stated language, whose code parses.

Reference: open-r1 ``get_code_format_reward`` (1.0 when the answer holds a fenced block in the
language, else 0.0) and ``extract_code`` (the last fenced block). Departures: the block must
also parse — ``ast.parse`` for Python, ``json.loads`` for JSON (parsing never runs the code);
other languages are checked for the fence only. ``scope="answer"`` looks only inside the answer
tag, as open-r1's pattern does; ``anywhere`` (default) looks at the whole completion. Fences are
found line by line (a line starting with three backticks), in linear time.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.errors import RewardSpecError
from rewards.params import ComponentInfo, ParamSpec, with_defaults
from rewards.verification.answers import find_answer

PARAMS = (
    ParamSpec("language", "str", "python", "the fence's language tag (```python)", max_length=32),
    ParamSpec(
        "scope",
        "str",
        "anywhere",
        "where the block must be: anywhere, or inside the answer tag",
        choices=("anywhere", "answer"),
    ),
    ParamSpec("answer_tag", "str", "answer", "scope answer: the answer tag", max_length=32),
)

_LANGUAGE = re.compile(r"[A-Za-z0-9_+#.-]{1,32}")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, code)`` of each closed fenced block in ``text``, in order."""
    blocks = []
    language: str | None = None
    body: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if language is None:
            if stripped.startswith("```"):
                language, body = stripped[3:].strip().lower(), []
        elif stripped == "```":
            blocks.append((language, "\n".join(body)))
            language = None
        else:
            body.append(line)
    return blocks


def parse_problem(language: str, code: str) -> str | None:
    """Why ``code`` does not parse in ``language`` (``None``: parses, or not checked)."""
    try:
        if language in ("python", "py", "python3"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escape sequences and the like
                ast.parse(code)
        elif language == "json":
            json.loads(code)
    except SyntaxError as err:
        return f"{err.msg} (line {err.lineno})"
    except (ValueError, RecursionError, MemoryError) as err:
        return type(err).__name__ if isinstance(err, RecursionError | MemoryError) else str(err)
    return None


class CodeFormat(RewardComponent):
    component = "code_format"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.language = p["language"].lower()
        self.scope = p["scope"]
        self.answer_tag = p["answer_tag"]

    def _judge_one(self, text: str) -> Judgement:
        if self.scope == "answer":
            span = find_answer(text, self.answer_tag)
            if span is None or span.source != "answer_tag":
                return Judgement(0.0, f"no <{self.answer_tag}> to hold the code")
            text = span.text
        blocks = [code for lang, code in fenced_blocks(text) if lang == self.language]
        if not blocks:
            return Judgement(0.0, f"no fenced ```{self.language} block")
        problem = parse_problem(self.language, blocks[-1])
        if problem:
            return Judgement(0.0, f"```{self.language} block does not parse: {problem}"[:200])
        return Judgement(1.0, f"```{self.language} block, parses")

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        return [self._judge_one(t) for t in texts]


def _check(params: dict[str, Any]) -> None:
    if not _LANGUAGE.fullmatch(params["language"]):
        raise RewardSpecError(
            "language", "must be 1-32 letters, digits or _+#.- (a fence tag like python)"
        )


INFO = ComponentInfo(
    name="code_format",
    factory=CodeFormat,
    params=PARAMS,
    description=(
        "1 when the completion holds a fenced code block in the language whose code parses "
        "(Python: ast.parse; JSON: json.loads), else 0."
    ),
    source="open-r1 get_code_format_reward / extract_code; parse check added",
    check=_check,
)
