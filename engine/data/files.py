"""Reading a dataset file into records (one dict per row), bounded before anything is kept.

A file is never read whole into memory first: JSONL and CSV are read line by line, Parquet by
row group (pyarrow), and rows and bytes are counted as they come, so a small file that expands
to millions of rows (a 0.2 MB Parquet file of 2M rows) is refused from its metadata or at the
first row past the cap, not after loading. ``stop_at`` ends the reading early when the caller
needs only the first rows (``split: all`` with ``max_rows``, a preflight's look at the head).
A JSON value nested deeper than the parser's recursion limit is refused naming the line.

Every problem raises :class:`~engine.data.datasets.DatasetError` naming the ``DataSpec`` field.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.data.decoded import (
    DecodedBudget,
    json_cost,
    parquet_batch_rows,
    parquet_pages_bytes,
    record_cost,
)


class DatasetError(ValueError):
    """A dataset cannot be used as given; the message names the problem and the fix.

    ``field`` is the :class:`~engine.data.datasets.DataSpec` field to change (``path``,
    ``prompt_column``...), or "" when no single field is at fault.
    """

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.reason = message


FILE_TYPES = (".jsonl", ".json", ".csv", ".parquet")
_WHITESPACE = re.compile(r"[ \t\n\r]*")


class FileLimits:
    """The caps of one read: ``max_bytes`` of the file (Parquet: also uncompressed), at most
    ``max_rows`` records, and ``stop_at`` records wanted (``None``: all)."""

    def __init__(self, max_bytes: int, max_rows: int | None, stop_at: int | None = None) -> None:
        self.max_bytes = max_bytes
        self.max_rows = max_rows
        self.stop_at = stop_at

    def full(self, count: int) -> bool:
        return self.stop_at is not None and count >= self.stop_at

    def check_count(self, count: int, name: str) -> None:
        if self.max_rows is not None and count > self.max_rows:
            raise DatasetError(
                f"dataset file {name!r} has more than {self.max_rows:,} rows; use a smaller "
                "file, or raise max_file_rows where the app allows it",
                "max_file_rows",
            )


def read_file(path: Path, limits: FileLimits) -> list[dict[str, Any]]:
    """The records of a JSONL, JSON, CSV or Parquet file within ``limits``."""
    if not path.is_file():
        raise _error(f"dataset file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix not in FILE_TYPES:
        raise _error(
            f"dataset file {path.name!r} has type {suffix or '(none)'!r}; allowed: {FILE_TYPES}"
        )
    size = path.stat().st_size
    if size > limits.max_bytes:
        raise _error(
            f"dataset file {path.name!r} is {size / 1e6:.1f} MB, over the "
            f"{limits.max_bytes / 1e6:g} MB limit; use a smaller file or raise max_file_mb",
            "max_file_mb",
        )
    if suffix == ".parquet":
        return _read_parquet(path, limits)
    if suffix == ".csv":
        return _read_csv(path, limits)
    if suffix == ".json" and _starts_with_bracket(path):
        return _read_json_array(path, limits)
    return _read_jsonl(path, limits)


def _error(message: str, field: str = "path") -> Exception:
    return DatasetError(message, field)


def _read_parquet(path: Path, limits: FileLimits) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for bad files
        raise _error(f"dataset file {path.name!r} is not readable Parquet: {exc}") from exc
    meta = parquet.metadata
    limits.check_count(meta.num_rows, path.name)  # the metadata says at once: nothing is read
    budget = DecodedBudget(path.name, limits.max_bytes)
    records: list[dict[str, Any]] = []
    for group in range(meta.num_row_groups):
        # Pages are decompressed whole: their uncompressed size (the dictionary page's
        # included, not total_byte_size's encoded one) counts against the cap before any read.
        pages = parquet_pages_bytes(meta.row_group(group))
        if pages > limits.max_bytes:
            raise _error(
                f"dataset file {path.name!r} holds a row group of {pages / 1e6:.1f} MB "
                f"uncompressed, over the {limits.max_bytes / 1e6:g} MB limit; use a smaller "
                "file or raise max_file_mb",
                "max_file_mb",
            )
        batches = parquet.iter_batches(
            batch_size=parquet_batch_rows(meta.row_group(group)),
            row_groups=[group],
            use_threads=False,
        )
        try:
            for batch in batches:
                if not budget.spend(batch.nbytes):
                    raise _error(budget.problem(), "max_file_mb")
                rows = batch.to_pylist()
                if not budget.spend(sum(record_cost(r) for r in rows)):
                    raise _error(budget.problem(), "max_file_mb")
                records.extend(rows)
                limits.check_count(len(records), path.name)
                if limits.full(len(records)):
                    return records[: limits.stop_at]
        except DatasetError:
            raise
        except Exception as exc:
            raise _error(f"dataset file {path.name!r} is not readable Parquet: {exc}") from exc
    return records


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of a UTF-8 file, decoded line by line (a BOM is dropped)."""
    offset = 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise _error(
                    f"dataset file {path.name!r} is not valid UTF-8 (byte {offset + exc.start}, "
                    f"line {n}); re-save it as UTF-8"
                ) from None
            offset += len(raw)
            yield n, text


def _read_jsonl(path: Path, limits: FileLimits) -> list[dict[str, Any]]:
    records = []
    budget = DecodedBudget(path.name, limits.max_bytes)
    for n, line in _lines(path):
        if not line.strip():
            continue
        if not budget.spend(json_cost(line)):  # before the line is parsed
            raise _error(f"{budget.problem()} (line {n})", "max_file_mb")
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _error(f"{path.name} line {n} is not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise _error(f"{path.name} line {n} nests values too deeply to read") from None
        if not isinstance(record, dict):
            raise _error(
                f"{path.name} row {len(records)} is {type(record).__name__}, not an object"
            )
        records.append(record)
        limits.check_count(len(records), path.name)
        if limits.full(len(records)):
            break
    return records


def _read_csv(path: Path, limits: FileLimits) -> list[dict[str, Any]]:
    rows = csv.reader(text for _, text in _lines(path))
    records: list[dict[str, Any]] = []
    budget = DecodedBudget(path.name, limits.max_bytes)
    try:
        header = next(rows, None)
        if header is None:
            return records
        for row in rows:
            if not row:  # a blank line
                continue
            if len(row) > len(header):
                raise _error(
                    f"dataset file {path.name!r} is not readable CSV: row {len(records)} has "
                    f"{len(row)} fields, the header {len(header)}"
                )
            record = dict(zip(header, row + [""] * (len(header) - len(row)), strict=True))
            if not budget.spend(record_cost(record)):
                raise _error(budget.problem(), "max_file_mb")
            records.append(record)
            limits.check_count(len(records), path.name)
            if limits.full(len(records)):
                break
    except csv.Error as exc:
        raise _error(f"dataset file {path.name!r} is not readable CSV: {exc}") from None
    return records


def _starts_with_bracket(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"[")


def _read_json_array(path: Path, limits: FileLimits) -> list[dict[str, Any]]:
    """A JSON array of objects, decoded one element at a time: the elements are counted as
    they come (``stop_at``, ``max_rows``), and the whole array's decoded size is estimated from
    its text before any element is built (:func:`~engine.data.decoded.json_cost`)."""
    text = "".join(line for _, line in _lines(path))
    budget = DecodedBudget(path.name, limits.max_bytes)
    if not budget.spend(json_cost(text)):
        raise _error(budget.problem(), "max_file_mb")
    decoder = json.JSONDecoder()
    records: list[dict[str, Any]] = []
    at = _WHITESPACE.match(text, text.index("[") + 1).end()
    closed = text.startswith("]", at)
    at += closed
    while not closed:
        try:
            record, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise _error(f"dataset file {path.name!r} is not valid JSON: {exc}") from None
        except RecursionError:
            raise _error(f"dataset file {path.name!r} nests values too deeply to read") from None
        if not isinstance(record, dict):
            raise _error(
                f"{path.name} row {len(records)} is {type(record).__name__}, not an object"
            )
        records.append(record)
        limits.check_count(len(records), path.name)
        if limits.full(len(records)):
            return records
        at = _WHITESPACE.match(text, at).end()
        closed = text.startswith("]", at)
        if not closed and not text.startswith(",", at):
            raise _error(
                f"dataset file {path.name!r} is not valid JSON: expected ',' or ']' at "
                f"character {at}"
            )
        at = _WHITESPACE.match(text, at + 1).end()
    if text[at:].strip():
        raise _error(f"dataset file {path.name!r} is not valid JSON: extra data at character {at}")
    return records
