"""Judge: a language model grades each completion against the user's rubric.

LLM-as-a-judge (Zheng et al. 2023, "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena":
single-answer grading on a 1-10 scale with a short explanation). The judge sees the rubric, the
prompt and the completion, and answers with a score (``1-10``, mapped to ``score / 10``) or
``pass_fail`` (1 or 0) and a one-line reason, read by :mod:`.judge_parse`; the reason goes
into the trace.

Backends: ``local``, a causal LM loaded through transformers (local folder or hub id,
safetensors only, no remote code), greedy, batched on the run's device; ``openai``, any
OpenAI-compatible ``/chat/completions`` endpoint. The endpoint's URL must start with one of the
prefixes the operator lists in ``STUDIO_JUDGE_URLS``, on the same scheme, host and port and
below the prefix's path (so no spec, from the web or elsewhere, makes the server call an address
the operator did not choose, and no redirect is followed); its key is read at call time from the
environment variable named by ``api_key_env``, one of ``OPENAI_API_KEY`` and the names the
operator lists in ``STUDIO_JUDGE_KEYS`` (so a spec cannot send another secret of the server,
such as ``HF_TOKEN``, as the key), and is never stored in the spec, the config, logs or the
database. Identical (prompt, completion) pairs are judged once (a bounded
cache per component); each request has a timeout and ``retries`` retries with backoff; a failed
or unreadable judgement is ``None`` (not scored), never 0.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rewards.completions.text import prompt_text
from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.components.judge_http import (
    JUDGE_KEYS_ENV,
    JUDGE_URLS_ENV,
    allowed_key_env,
    allowed_key_envs,
    allowed_url,
    post_chat,
)
from rewards.components.judge_parse import JudgeVerdict, parse_pass_fail, parse_score
from rewards.components.reward_model import (
    MAX_BATCH_TOKENS,
    load_allowed_model,
    pick_device,
)
from rewards.errors import RewardSpecError
from rewards.params import ComponentInfo, ParamSpec, describe_value, with_defaults
from rewards.verification.deadline import deadline_at

logger = logging.getLogger(__name__)

#: Most cached judgements per component (oldest dropped first).
JUDGE_CACHE_SIZE = 4096
#: Longest judge answer read (characters).
MAX_JUDGE_ANSWER_CHARS = 4000
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,63}")

DEFAULT_RUBRIC = (
    "Grade how well the response answers the prompt: correct, complete, concise, and "
    "faithful to the prompt."
)

PARAMS = (
    ParamSpec("rubric", "str", DEFAULT_RUBRIC, "what the judge grades", max_length=10_000),
    ParamSpec("scale", "str", "1-10", "how the judge answers", choices=("1-10", "pass_fail")),
    ParamSpec("backend", "str", "openai", "who judges", choices=("openai", "local")),
    ParamSpec(
        "model",
        "str",
        "",
        "the judge model (endpoint model name, or local folder/hub id)",
        max_length=4096,
    ),
    ParamSpec("url", "str", "", "openai: the endpoint base URL (…/v1)", max_length=2048),
    ParamSpec(
        "api_key_env",
        "str",
        "OPENAI_API_KEY",
        "openai: environment variable holding the key, OPENAI_API_KEY or one listed in "
        "STUDIO_JUDGE_KEYS (never stored)",
        max_length=64,
    ),
    ParamSpec("timeout_s", "float", 60.0, "per request, seconds", min=1.0, max=600.0),
    ParamSpec("retries", "int", 2, "retries of a failed request", min=0, max=10),
    ParamSpec("concurrency", "int", 4, "openai: requests at a time", min=1, max=64),
    ParamSpec("max_new_tokens", "int", 128, "local: tokens the judge may write", min=8, max=4096),
)


def judge_messages(rubric: str, scale: str, prompt: str, completion: str) -> list[dict[str, str]]:
    """The conversation a judge reads."""
    answer = (
        "Answer with a line 'Score: N' (N from 1, worst, to 10, best)"
        if scale == "1-10"
        else "Answer with a line 'JudgeVerdict: PASS' or 'JudgeVerdict: FAIL'"
    )
    system = (
        f"You are a strict, fair grader.\nRubric: {rubric}\n{answer}, then a line "
        "'Reason: ...' with one sentence."
    )
    user = f"[Prompt]\n{prompt}\n\n[Response]\n{completion}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@functools.lru_cache(maxsize=1)
def load_judge_model(name_or_path: str, device: str) -> tuple[Any, Any]:
    """A local causal-LM judge (eval mode, safetensors, no remote code) and its tokenizer."""
    from transformers import AutoModelForCausalLM

    model, tokenizer = load_allowed_model(name_or_path, AutoModelForCausalLM, "left")
    return model.to(device).eval(), tokenizer


class Judge(RewardComponent):
    component = "judge"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.rubric, self.scale, self.backend, self.model = (
            p["rubric"],
            p["scale"],
            p["backend"],
            p["model"],
        )
        self.url, self.api_key_env = p["url"], p["api_key_env"]
        self.timeout_s, self.retries = p["timeout_s"], p["retries"]
        self.concurrency, self.max_new_tokens = p["concurrency"], p["max_new_tokens"]
        self._cache: OrderedDict[tuple[str, str], JudgeVerdict] = OrderedDict()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_cache": OrderedDict()}

    # ---- parsing and caching -----------------------------------------------------------------
    def _parse(self, answer: str) -> JudgeVerdict:
        answer = answer[:MAX_JUDGE_ANSWER_CHARS]
        return parse_score(answer) if self.scale == "1-10" else parse_pass_fail(answer)

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        prompts = list(ctx.prompts) if ctx.prompts is not None else [""] * len(texts)
        prompt_texts = [prompt_text(p) for p in prompts]
        keys = list(zip(prompt_texts, texts, strict=True))
        todo = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if todo:
            judged = self._judge_local(todo) if self.backend == "local" else self._judge_http(todo)
            for key, verdict in zip(todo, judged, strict=True):
                if verdict.score is not None:  # a failure is not cached: tried again next time
                    self._cache[key] = verdict
                    if len(self._cache) > JUDGE_CACHE_SIZE:
                        self._cache.popitem(last=False)
            fresh = dict(zip(todo, judged, strict=True))
        else:
            fresh = {}
        out = []
        for key in keys:
            verdict = fresh.get(key) or self._cache[key]
            out.append(Judgement(verdict.score, f"judge: {verdict.reason}"))
        return out

    # ---- backends ----------------------------------------------------------------------------
    def _judge_http(self, pairs: list[tuple[str, str]]) -> list[JudgeVerdict]:
        key = os.environ.get(self.api_key_env) or None
        until = deadline_at()  # read here: the pool's threads do not see the caller's budget
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(lambda pair: self._ask(pair, key, until), pairs))

    def _ask(self, pair: tuple[str, str], key: str | None, until: float | None) -> JudgeVerdict:
        """One judgement; within the web call's time budget ``until`` (``time.monotonic``),
        if any, however long ``timeout_s`` and ``retries`` would allow."""
        body = {
            "model": self.model,
            "messages": judge_messages(self.rubric, self.scale, *pair),
            "temperature": 0.0,
            "max_tokens": self.max_new_tokens,
        }
        problem = ""
        tries = 0
        for attempt in range(self.retries + 1):
            left = self.timeout_s if until is None else until - time.monotonic()
            if left <= 0:
                problem = problem or "not asked"
                problem += "; this call's time budget ran out"
                break
            tries += 1
            try:
                return self._parse(post_chat(self.url, body, key, min(self.timeout_s, left)))
            except urllib.error.HTTPError as err:
                problem = f"HTTP {err.code}"
                if err.code < 500 and err.code != 429:
                    break  # the request itself is wrong; retrying cannot help
            except (OSError, ValueError, KeyError, IndexError, TypeError) as err:
                problem = type(err).__name__ if "timed out" not in str(err) else "timed out"
            if attempt < self.retries:
                pause = min(0.5 * 2**attempt, 8.0)
                time.sleep(
                    pause if until is None else max(0.0, min(pause, until - time.monotonic()))
                )
        message = f"judge {self.__name__!r} failed after {tries} tries: {problem}"
        logger.warning("%s", message)
        return JudgeVerdict(None, message)

    def _judge_local(self, pairs: list[tuple[str, str]]) -> list[JudgeVerdict]:
        """Greedy answers of the local judge, in batches of at most ``MAX_BATCH_TOKENS`` padded
        tokens; a conversation longer than the model reads (before its answer) is not judged,
        and within the web call's time budget, if any, no batch starts after it and
        ``generate``'s ``max_time`` stops a long answer (which then reads as unscored)."""
        until = deadline_at()
        spent = f"judge {self.__name__!r}: not judged, this call's time budget ran out"
        if until is not None and until <= time.monotonic():
            return [JudgeVerdict(None, spent) for _ in pairs]
        try:
            model, tokenizer = load_judge_model(self.model, pick_device("auto"))
            texts = [
                tokenizer.apply_chat_template(
                    judge_messages(self.rubric, self.scale, *pair),
                    tokenize=False,
                    add_generation_prompt=True,
                )
                for pair in pairs
            ]
            lengths = [len(tokenizer(t, add_special_tokens=False).input_ids) for t in texts]
        except (OSError, ValueError, RuntimeError, ImportError) as err:
            return self._failed(err, len(pairs))
        room = getattr(model.config, "max_position_embeddings", None)
        limit = None if room is None else room - self.max_new_tokens
        verdicts = [
            JudgeVerdict(
                None,
                f"judge {self.__name__!r}: not judged, {n} tokens; the judge model reads "
                f"{limit} before its answer",
            )
            if limit is not None and n > limit
            else None
            for n in lengths
        ]
        fits = [i for i, v in enumerate(verdicts) if v is None]
        for chunk in token_chunks(fits, lengths, MAX_BATCH_TOKENS):
            left = None if until is None else until - time.monotonic()
            if left is not None and left <= 0:
                answers: list[JudgeVerdict] = [JudgeVerdict(None, spent)] * len(chunk)
            else:
                try:
                    texts_in = [texts[i] for i in chunk]
                    answers = [
                        self._parse(a) for a in self._generate(model, tokenizer, texts_in, left)
                    ]
                except (OSError, ValueError, RuntimeError) as err:
                    answers = self._failed(err, len(chunk))
            for i, verdict in zip(chunk, answers, strict=True):
                verdicts[i] = verdict
        return verdicts

    def _generate(
        self, model: Any, tokenizer: Any, texts: list[str], left: float | None
    ) -> list[str]:
        import torch

        batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(
            model.device
        )
        with torch.no_grad():
            out = model.generate(
                **batch,
                max_new_tokens=self.max_new_tokens,
                max_time=left,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
            )
        return tokenizer.batch_decode(
            out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True
        )

    def _failed(self, err: Exception, count: int) -> list[JudgeVerdict]:
        message = f"judge {self.__name__!r} ({self.model}) failed: {err}"[:400]
        logger.warning("%s", message)
        return [JudgeVerdict(None, message) for _ in range(count)]


def token_chunks(indices: list[int], lengths: list[int], budget: int) -> list[list[int]]:
    """``indices`` in order, grouped so that rows x the longest row of a group stays within
    ``budget`` padded tokens (a row longer than that alone)."""
    chunks: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in indices:
        wider = max(longest, lengths[i])
        if current and (len(current) + 1) * wider > budget:
            chunks.append(current)
            current, wider = [], lengths[i]
        current.append(i)
        longest = wider
    if current:
        chunks.append(current)
    return chunks


def _check(params: dict[str, Any]) -> None:
    if not params["model"].strip():
        raise RewardSpecError("model", "name the judge model")
    if not params["rubric"].strip():
        raise RewardSpecError("rubric", "write what the judge should grade")
    if params["backend"] == "openai":
        if not allowed_url(params["url"]):
            raise RewardSpecError(
                "url",
                f"must start with one of the endpoints the operator lists in {JUDGE_URLS_ENV} "
                f"(http or https), got {describe_value(params['url'])}",
            )
        if not _ENV_NAME.fullmatch(params["api_key_env"]):
            raise RewardSpecError(
                "api_key_env", "must be an environment variable name (A-Z, 0-9, _)"
            )
        if not allowed_key_env(params["api_key_env"]):
            allowed = ", ".join(allowed_key_envs())
            raise RewardSpecError(
                "api_key_env",
                f"must be one of the key variables the operator allows ({allowed}; more in "
                f"{JUDGE_KEYS_ENV}), got {params['api_key_env']!r}",
            )


INFO = ComponentInfo(
    name="judge",
    factory=Judge,
    params=PARAMS,
    description=(
        "A judge model grades each completion against your rubric (1-10 or pass/fail) with a "
        "one-line reason: a local model or an OpenAI-compatible endpoint; failures are not "
        "scored."
    ),
    source="Zheng et al. 2023 'Judging LLM-as-a-Judge' (MT-Bench single-answer grading)",
    check=_check,
)
