"""Prompt datasets: the built-in task, local JSONL/CSV/Parquet files, Hugging Face hub ids.

Every source becomes the same rows the trainers and the preview use::

    {"id": str, "prompt": [{"role": ..., "content": ...}, ...], "answer": str, "difficulty": int}

Files are validated before use and every problem raises :class:`DatasetError` with a message
that names it: a missing or empty column, no rows, bytes that are not UTF-8, a file over the
size or row cap (counted while streaming, :mod:`engine.data.files`), prompts over the length
cap (reported with their rows, never silently truncated).
GSM8K-style golds (a worked solution ending in ``#### 42``) are reduced to the final answer.

Held-out rows never overlap training rows. The built-in task holds out whole problems. A file
(or a hub dataset's ``train`` split) is cut by a seeded hash of each prompt: ``heldout_share``
of the distinct prompts form split ``"heldout"``, the rest split ``"train"``; ``"all"`` keeps
every row. Other hub split names (``"test"``, ...) load that split whole.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.data.files import DatasetError as DatasetError  # where callers import it
from engine.data.files import FileLimits, read_file
from engine.data.hub import hub_offline as hub_offline  # where callers import it
from engine.data.hub import read_hub
from engine.fields import POSITIVE, SEED, ConfigError, check_fields, from_dict, knob

logger = logging.getLogger(__name__)

SOURCES = ("builtin", "file", "hub")
#: The built-in tasks (``engine.tasks``): word-problem arithmetic, and multi-digit products
#: where calling the calculator pays (the agent task).
BUILTIN_TASKS = ("arithmetic", "calculator")
ANSWER_FORMATS = ("auto", "plain", "gsm8k")
BUILTIN_SPLITS = ("train", "heldout")
FILE_SPLITS = ("train", "heldout", "all")
ROLES = ("system", "user", "assistant")
#: Longest prompt cap (characters): far above any model's context, well below a memory problem.
MAX_PROMPT_CHARS = 1_000_000
#: Most rows a dataset may be cut to (a cap, not a size: larger datasets are read in full).
MAX_ROWS = 10**9
_GSM8K_GOLD = re.compile(r"####\s*(.+?)\s*$", re.S)


class MissingColumnError(DatasetError):
    """A mapped column is not in the data; ``columns`` are the ones it has (names only)."""

    def __init__(self, column: str, field: str, columns: list[str]) -> None:
        super().__init__(
            f"column {column!r} ({field}) not found; the dataset's columns are {columns}. "
            f"Set {field} to one of them.",
            field,
        )
        self.column = column
        self.columns = columns


@dataclass
class DataSpec:
    """Where prompts come from and how to read them.

    Attributes:
        source: ``"builtin"`` (a built-in task), ``"file"`` or ``"hub"``.
        task: which built-in task: ``"arithmetic"`` (word problems, the default model's) or
            ``"calculator"`` (multi-digit products for a run with the calculator tool).
        path: file path (source file) or dataset id (source hub, e.g. ``"openai/gsm8k"``).
        split: ``"train"`` or ``"heldout"`` (see the module docstring); ``"all"`` for files and
            hub datasets; any other hub split name (``"test"``...) loads that split whole.
        config_name: hub dataset configuration (e.g. ``"main"`` for GSM8K).
        prompt_column: column with the question text, or a list of chat messages.
        answer_column: column with the gold answer.
        system_column: optional column with a per-row system prompt.
        system_prompt: system prompt added to rows that have none ("" for none).
        difficulty_column: optional integer column used to break metrics down.
        answer_format: ``"gsm8k"`` keeps what follows ``####``; ``"plain"`` keeps the
            whole answer; ``"auto"`` does the first when ``####`` is present.

    The numeric knobs declare their help and range once (:func:`engine.fields.knob`); a
    value outside it raises :class:`DatasetError` naming the field.
    """

    source: str = "builtin"
    task: str = "arithmetic"
    path: str | None = None
    split: str = "train"
    config_name: str | None = None
    prompt_column: str = "prompt"
    answer_column: str = "answer"
    system_column: str | None = None
    system_prompt: str | None = None
    difficulty_column: str | None = None
    answer_format: str = "auto"
    max_prompt_chars: int = knob(
        2000, help="Longest prompt (all message contents) accepted.", lo=1, hi=MAX_PROMPT_CHARS
    )
    max_rows: int | None = knob(
        None,
        help="Keep at most this many rows (the first ones of the split); empty keeps all.",
        lo=1,
        hi=MAX_ROWS,
    )
    heldout_share: float = knob(
        0.1,
        help="Share of a file's distinct prompts set aside as its held-out split.",
        lo=0,
        hi=1,
        hi_open=True,
    )
    max_file_mb: float = knob(200.0, help="Refuse files larger than this (MB).", **POSITIVE)
    max_file_rows: int | None = knob(
        None,
        help="Refuse files with more rows than this (counted while reading); empty: no cap.",
        lo=1,
        hi=MAX_ROWS,
    )
    seed: int = knob(0, help="Seed of the built-in task.", **SEED)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise DatasetError(f"must be one of {SOURCES}, got {self.source!r}", "source")
        if self.task not in BUILTIN_TASKS:
            raise DatasetError(f"must be one of {BUILTIN_TASKS}, got {self.task!r}", "task")
        if self.source in ("file", "hub") and not (self.path and str(self.path).strip()):
            what = "a file path" if self.source == "file" else "a dataset id"
            raise DatasetError(f"is required for source {self.source!r}: give {what}", "path")
        if self.source == "builtin" and self.split not in BUILTIN_SPLITS:
            raise DatasetError(
                f"must be one of {BUILTIN_SPLITS} for the built-in task, got {self.split!r}",
                "split",
            )
        if self.source == "file" and self.split not in FILE_SPLITS:
            raise DatasetError(
                f"must be one of {FILE_SPLITS} for a file, got {self.split!r}", "split"
            )
        try:
            check_fields(self, "")
        except ConfigError as exc:
            raise DatasetError(exc.reason, exc.field) from None
        if self.answer_format not in ANSWER_FORMATS:
            raise DatasetError(
                f"must be one of {ANSWER_FORMATS}, got {self.answer_format!r}", "answer_format"
            )
        for name in ("prompt_column", "answer_column"):
            if not getattr(self, name):
                raise DatasetError("must name a column", name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DataSpec:
        """Checked field by field (type, size, text) by :func:`engine.fields.from_dict`."""
        try:
            return from_dict(cls, data)
        except ConfigError as exc:
            raise DatasetError(exc.reason, exc.field) from None


def parse_gold(answer: Any, answer_format: str = "auto") -> str:
    """The gold answer as a string; GSM8K-style ``... #### 1,234`` gives ``"1234"``."""
    text = str(answer).strip()
    if answer_format == "plain" or (answer_format == "auto" and "####" not in text):
        return text
    match = _GSM8K_GOLD.search(text)
    if match is None:
        raise DatasetError(
            "answer has no '#### <answer>' line (answer_format gsm8k)", "answer_format"
        )
    gold = match.group(1).strip()
    return gold.replace(",", "") if re.fullmatch(r"-?[\d,]+(\.\d+)?", gold) else gold


def load_rows(spec: DataSpec, context_column: str | None = None) -> list[dict[str, Any]]:
    """Rows of ``spec`` in the shared row format, validated (see module docstring); with
    ``context_column`` (a run whose lookup tool reads it), each row also carries that column's
    value as ``context``."""
    if spec.source == "builtin":
        task = _builtin_task(spec)
        if spec.split == "train":
            rows = task.train_rows() if spec.max_rows is None else task.train_rows(spec.max_rows)
        else:
            rows = task.eval_rows(spec.max_rows)
        _check_prompt_lengths(rows, spec.max_prompt_chars)
        return rows
    records = (
        _read_file(spec)
        if spec.source == "file"
        else read_hub(spec.path, spec.config_name, spec.split)
    )
    origin = Path(str(spec.path)).stem or "rows"
    return records_to_rows(records, spec, origin=origin, context_column=context_column)


def _builtin_task(spec: DataSpec) -> Any:
    from engine.tasks import ArithmeticTask
    from engine.tasks.calculator import CalculatorTask

    kind = ArithmeticTask if spec.task == "arithmetic" else CalculatorTask
    if spec.system_prompt is not None:
        return kind(seed=spec.seed, system_prompt=spec.system_prompt)
    return kind(seed=spec.seed)


def records_to_rows(
    records: Sequence[dict[str, Any]],
    spec: DataSpec,
    origin: str = "rows",
    context_column: str | None = None,
) -> list[dict[str, Any]]:
    """Map raw records (one dict per row) to the shared row format, with validation."""
    if not records:
        raise DatasetError(f"dataset {spec.path or origin!r} has no rows", "path")
    columns = list(records[0].keys())
    if context_column is not None and context_column not in columns:
        raise MissingColumnError(
            context_column, "tools.context_column", [str(c)[:100] for c in columns]
        )
    mapping = [("prompt_column", spec.prompt_column), ("answer_column", spec.answer_column)]
    mapping += [
        (name, getattr(spec, name))
        for name in ("system_column", "difficulty_column")
        if getattr(spec, name)
    ]
    for field_name, column in mapping:
        if column not in columns:
            raise MissingColumnError(column, field_name, [str(c)[:100] for c in columns])
    for field_name, column in mapping[:2]:
        empty = [i for i, r in enumerate(records) if _is_empty(r.get(column))]
        if len(empty) == len(records):
            raise DatasetError(
                f"column {column!r} ({field_name}) is empty in every row", field_name
            )
        if empty:
            raise DatasetError(
                f"column {column!r} ({field_name}) is empty in {len(empty)} of "
                f"{len(records)} rows (rows {_first(empty)}); fill or remove those rows",
                field_name,
            )
    rows = []
    for i, record in enumerate(records):
        system = spec.system_prompt
        if spec.system_column and not _is_empty(record.get(spec.system_column)):
            system = str(record[spec.system_column])
        try:
            prompt = _to_messages(record[spec.prompt_column], system)
            answer = parse_gold(record[spec.answer_column], spec.answer_format)
        except DatasetError as exc:
            raise DatasetError(f"row {i}: {exc.reason}", exc.field or "prompt_column") from None
        difficulty = 0
        if spec.difficulty_column:
            try:
                difficulty = int(record[spec.difficulty_column])
            except (TypeError, ValueError):
                raise DatasetError(
                    f"row {i}: column {spec.difficulty_column!r} (difficulty_column) must "
                    "hold integers",
                    "difficulty_column",
                ) from None
        row_id = record.get("id")
        row = {
            "id": str(row_id) if not _is_empty(row_id) else f"{origin}-{i:05d}",
            "prompt": prompt,
            "answer": answer,
            "difficulty": difficulty,
        }
        if context_column is not None:
            row["context"] = _context_text(record.get(context_column))
        rows.append(row)
    rows = _select_split(rows, spec, origin)
    if spec.max_rows is not None:
        rows = rows[: spec.max_rows]
    _check_prompt_lengths(rows, spec.max_prompt_chars)
    return rows


def _context_text(value: Any) -> str:
    """A context cell as text (one column type for the trainer's table): a mapping as
    ``key: value`` lines, nothing as ""."""
    if isinstance(value, dict):
        return "\n".join(f"{k}: {v}" for k, v in value.items())
    return "" if _is_empty(value) else str(value)


def is_heldout_prompt(prompt: Any, seed: int, share: float) -> bool:
    """Seeded, platform-independent membership of a prompt in the held-out split."""
    text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True)
    digest = hashlib.sha256(f"{seed}:{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def _select_split(rows: list[dict[str, Any]], spec: DataSpec, origin: str) -> list[dict[str, Any]]:
    split = spec.split
    if spec.source == "hub" and split not in ("train", "heldout", "all"):
        return rows  # a named hub split, loaded whole
    if split == "all":
        return rows
    held = [is_heldout_prompt(r["prompt"], spec.seed, spec.heldout_share) for r in rows]
    chosen = [r for r, h in zip(rows, held, strict=True) if h == (split == "heldout")]
    if not chosen:
        raise DatasetError(
            f"split {split!r} of {spec.path or origin!r} has no rows ({len(rows)} rows, "
            f"heldout_share={spec.heldout_share}); use split 'all' or change heldout_share",
            "split",
        )
    return chosen


def rows_to_dataset(rows: Sequence[dict[str, Any]]):
    """Rows as a ``datasets.Dataset`` (what TRL trainers take)."""
    from datasets import Dataset

    if not rows:
        raise DatasetError("no rows to build a dataset from")
    return Dataset.from_list(list(rows))


def prompt_chars(prompt: Any) -> int:
    """Length of a prompt in characters: all message contents, or the string itself."""
    if isinstance(prompt, str):
        return len(prompt)
    return sum(len(m.get("content", "")) for m in prompt)


def _check_prompt_lengths(rows: Sequence[dict[str, Any]], cap: int) -> None:
    over = [(i, prompt_chars(r["prompt"])) for i, r in enumerate(rows)]
    over = [(i, n) for i, n in over if n > cap]
    if over:
        longest = max(n for _, n in over)
        raise DatasetError(
            f"{len(over)} of {len(rows)} prompts are longer than max_prompt_chars={cap} "
            f"(longest {longest} chars; rows {_first([i for i, _ in over])}). Prompts are "
            "never truncated: raise max_prompt_chars or remove those rows.",
            "max_prompt_chars",
        )


def _is_empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and value != value:  # NaN from pandas
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (list, tuple)):
        return len(value) == 0
    return False


def _first(indices: Sequence[int], k: int = 5) -> str:
    shown = ", ".join(str(i) for i in indices[:k])
    return shown + (", ..." if len(indices) > k else "")


def _to_messages(value: Any, system: str | None) -> list[dict[str, str]]:
    if isinstance(value, str):
        messages = [{"role": "user", "content": value}]
    elif isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        items = value.tolist() if hasattr(value, "tolist") else list(value)
        messages = []
        for j, m in enumerate(items):
            if not isinstance(m, dict) or "role" not in m or "content" not in m:
                raise DatasetError(
                    f"prompt message {j} must be an object with 'role' and 'content'"
                )
            if m["role"] not in ROLES:
                raise DatasetError(f"prompt message {j} role must be one of {ROLES}")
            messages.append({"role": str(m["role"]), "content": str(m["content"])})
    else:
        raise DatasetError(
            f"prompt must be text or a list of chat messages, got {type(value).__name__}"
        )
    if system and messages[0]["role"] != "system":
        messages.insert(0, {"role": "system", "content": system})
    return messages


def _read_file(spec: DataSpec) -> list[dict[str, Any]]:
    # split "all" keeps the first max_rows rows: the rest of the file is never read.
    stop_at = spec.max_rows if spec.split == "all" else None
    limits = FileLimits(int(spec.max_file_mb * 1e6), spec.max_file_rows, stop_at)
    return read_file(Path(str(spec.path)).expanduser(), limits)
