"""Similarity: how close the completion is to a reference text (summaries, translations).

Metrics, each through its maintained library so the numbers are the library's own:

- ``rouge_l``: ROUGE-L F-measure (Lin 2004, "ROUGE: A Package for Automatic Evaluation of
  Summaries"), Google's ``rouge-score`` (``RougeScorer(["rougeL"]).score(reference,
  completion)["rougeL"].fmeasure``). Its tokenizer keeps ASCII letters and digits only, so use
  chrF for text in other scripts.
- ``chrf``: chrF (Popović 2015, "chrF: character n-gram F-score for automatic MT
  evaluation"), ``sacrebleu``'s ``CHRF().sentence_score(completion, [reference]).score / 100``.
- ``embedding``: cosine similarity of sentence embeddings (Reimers & Gurevych 2019,
  Sentence-BERT) through ``sentence-transformers``, only when that package is installed and the
  model is a local folder; otherwise the spec is refused by name at validation. The folder passes
  the same model rule as reward and judge models (``reward_model.restrict_models``: on the web,
  the input policy and the demo's size cap) before the server looks at it.

Scores lie in [0, 1] (embedding cosine in [-1, 1]); a sample without a reference is not scored.
ROUGE-L's longest common subsequence takes time in the product of the two texts' word counts,
so a pair over :data:`MAX_LCS_CELLS` (two texts of 2,000 words) is not scored (chrF is linear),
and within a web call's time budget (:mod:`rewards.verification.deadline`) pairs left when it runs
out are not scored either.
``scope="answer"`` compares only the answer tag's content (the whole text when there is none).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from typing import Any

from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.components.reward_model import check_model_allowed
from rewards.errors import RewardSpecError
from rewards.params import ComponentInfo, ParamSpec, describe_value, with_defaults
from rewards.verification.answers import find_answer
from rewards.verification.deadline import deadline_passed

METRICS = ("rouge_l", "chrf", "embedding")
#: Largest ROUGE-L table (completion words x reference words) scored: about 0.6 s here.
MAX_LCS_CELLS = 4_000_000
_ROUGE_TOKEN = re.compile(r"[a-z0-9]+")  # rouge-score's default tokenizer keeps these runs

PARAMS = (
    ParamSpec("metric", "str", "rouge_l", "how similarity is measured", choices=METRICS),
    ParamSpec(
        "gold_column", "str", "answer", "dataset column holding the reference text", max_length=64
    ),
    ParamSpec(
        "scope",
        "str",
        "whole",
        "compare the whole completion or only the answer tag's content",
        choices=("whole", "answer"),
    ),
    ParamSpec("answer_tag", "str", "answer", "scope answer: the answer tag", max_length=32),
    ParamSpec("use_stemmer", "bool", False, "rouge_l: Porter-stem English words first"),
    ParamSpec(
        "embedding_model",
        "str",
        "",
        "embedding: a local sentence-transformers model folder",
        max_length=4096,
    ),
)


@functools.lru_cache(maxsize=4)
def _rouge(use_stemmer: bool) -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)


@functools.lru_cache(maxsize=1)
def _chrf() -> Any:
    from sacrebleu.metrics import CHRF

    return CHRF()


@functools.lru_cache(maxsize=2)
def _embedder(folder: str) -> Any:
    check_model_allowed(folder)
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(folder, local_files_only=True, trust_remote_code=False)


def rouge_l(completion: str, reference: str, use_stemmer: bool = False) -> float:
    """ROUGE-L F-measure of ``completion`` against ``reference`` (rouge-score)."""
    return float(_rouge(use_stemmer).score(reference, completion)["rougeL"].fmeasure)


def chrf(completion: str, reference: str) -> float:
    """chrF of ``completion`` against ``reference``, scaled to [0, 1] (sacrebleu)."""
    return float(_chrf().sentence_score(completion, [reference]).score) / 100.0


class Similarity(RewardComponent):
    component = "similarity"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.metric = p["metric"]
        self.gold_column = p["gold_column"]
        self.scope = p["scope"]
        self.answer_tag = p["answer_tag"]
        self.use_stemmer = p["use_stemmer"]
        self.embedding_model = p["embedding_model"]

    def _compared(self, text: str) -> str:
        if self.scope == "answer":
            span = find_answer(text, self.answer_tag)
            if span is not None and span.source == "answer_tag":
                return span.text
        return text

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        refs = ctx.column(self.gold_column) or [None] * len(texts)
        pairs = [
            (i, self._compared(t), str(r))
            for i, (t, r) in enumerate(zip(texts, refs, strict=True))
            if r is not None and str(r).strip()
        ]
        out = [Judgement(None, f"no reference in '{self.gold_column}': not scored")] * len(texts)
        if self.metric == "embedding":
            if pairs:
                values = self._cosines([c for _, c, _ in pairs], [r for _, _, r in pairs])
                for (i, _, _), value in zip(pairs, values, strict=True):
                    out[i] = Judgement(value, f"cosine {value:.3f} to the reference")
            return out
        label = "chrF" if self.metric == "chrf" else "ROUGE-L F"
        for i, completion, reference in pairs:
            if deadline_passed():
                out[i] = Judgement(None, f"{label}: not scored, this call's time budget ran out")
            elif self.metric == "chrf":
                value = chrf(completion, reference)
                out[i] = Judgement(value, f"{label} {value:.3f} to the reference")
            else:
                out[i] = self._rouge_l(completion, reference)
        return out

    def _rouge_l(self, completion: str, reference: str) -> Judgement:
        cells = len(_ROUGE_TOKEN.findall(completion.lower())) * len(
            _ROUGE_TOKEN.findall(reference.lower())
        )
        if cells > MAX_LCS_CELLS:
            return Judgement(
                None,
                f"ROUGE-L: not scored, {cells:,} word pairs is over {MAX_LCS_CELLS:,} "
                "(its cost grows with both lengths multiplied); use chrf for texts this long",
            )
        value = rouge_l(completion, reference, self.use_stemmer)
        return Judgement(value, f"ROUGE-L F {value:.3f} to the reference")

    def _cosines(self, completions: list[str], references: list[str]) -> list[float]:
        from sentence_transformers import util

        model = _embedder(self.embedding_model)
        a = model.encode(completions, convert_to_tensor=True, normalize_embeddings=True)
        b = model.encode(references, convert_to_tensor=True, normalize_embeddings=True)
        return [float(x) for x in util.pairwise_cos_sim(a, b)]


def _check(params: dict[str, Any]) -> None:
    if params["metric"] != "embedding":
        return
    folder = params["embedding_model"]
    try:  # the web app's model rule first: no server path is even looked at unless allowed
        if folder:
            check_model_allowed(folder)
    except ValueError as err:
        raise RewardSpecError("embedding_model", str(getattr(err, "reason", err))) from None
    if importlib.util.find_spec("sentence_transformers") is None:
        raise RewardSpecError(
            "metric",
            "embedding needs the sentence-transformers package, which is not installed here; "
            "use rouge_l or chrf",
        )
    if not folder or not (Path(folder).expanduser() / "config.json").is_file():
        raise RewardSpecError(
            "embedding_model",
            f"must be a local sentence-transformers model folder, got {describe_value(folder)}",
        )


INFO = ComponentInfo(
    name="similarity",
    factory=Similarity,
    params=PARAMS,
    description=(
        "Similarity to a reference column: ROUGE-L (rouge-score), chrF (sacrebleu) or "
        "embedding cosine (sentence-transformers, local model)."
    ),
    source="Lin 2004 ROUGE-L via rouge-score; Popović 2015 chrF via sacrebleu; Sentence-BERT",
    allow_multiple=True,
    check=_check,
)
