"""py3langid's classifier, run on many texts at once with identical results.

py3langid (a fork of Lui & Baldwin's langid.py, ACL 2012) walks each text's UTF-8 bytes through
a DFA to collect byte n-gram features, then scores a naive Bayes model:
``log1p(counts) @ P(feature|class) + P(class)``. Its byte walk is a Python loop per byte. Here the
walk advances all texts together, one numpy step per byte position (texts sorted by length, so
the live texts form a prefix), and the per-text scoring repeats py3langid's exact expression on
features in py3langid's order, so labels and scores equal ``classify`` bit for bit (checked by
the tests).
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Sequence

import numpy as np

_LOCK = threading.Lock()
_TABLES_LOCK = threading.Lock()
_MODEL: _Model | None = None
# Below this many live texts the numpy step costs more than py3langid's scalar walk.
_SCALAR_BELOW = 8


class _Model:
    def __init__(self) -> None:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        ident = LanguageIdentifier.from_model_file(MODEL_FILE)
        self.ident = ident
        self.nextmove = np.frombuffer(ident.tk_nextmove, dtype=np.uint32).astype(np.int64)
        self.rowbase = np.asarray(ident._rowbase, dtype=np.int64)
        self.output = np.asarray(ident.tk_output, dtype=np.int64)
        self.labels: list[str] = list(ident.nb_classes)
        self._subsets: dict[tuple[str, ...] | None, tuple] = {}

    def tables(self, languages: tuple[str, ...] | None):
        """(ptc, pc, classes, alias pairs) as ``LanguageIdentifier.set_languages`` makes them."""
        with _TABLES_LOCK:  # set_languages mutates the identifier: one thread at a time
            return self._tables(languages)

    def _tables(self, languages: tuple[str, ...] | None):
        if languages not in self._subsets:
            ident = self.ident
            ident.set_languages(list(languages) if languages else None)
            # float32 copy: the same products as py3langid's float16 table (numpy casts the
            # float16 operand to float32 before the product), without a cast per call.
            self._subsets[languages] = (
                np.ascontiguousarray(ident.nb_ptc, dtype=np.float32),
                ident.nb_pc,
                list(ident.nb_classes),
                list(ident._alias_pairs),
            )
            ident.set_languages(None)
        return self._subsets[languages]


def _model() -> _Model:
    global _MODEL
    with _LOCK:
        if _MODEL is None:
            _MODEL = _Model()
        return _MODEL


def labels() -> list[str]:
    """Every language code the model knows (distinct, model order)."""
    return list(dict.fromkeys(_model().labels))


def _encode(text: str) -> bytes:
    # py3langid.LanguageIdentifier._encode, for str input.
    if text.isupper():
        text = text.lower()
    return unicodedata.normalize("NFC", text).encode("utf8", errors="surrogatepass")


def _walk(model: _Model, data: list[bytes]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per text: (feature ids in first-occurrence order, their counts)."""
    n = len(data)
    order = sorted(range(n), key=lambda i: -len(data[i]))
    lengths = np.array([len(data[i]) for i in order], dtype=np.int64)
    flat = np.frombuffer(b"".join(data[i] for i in order), dtype=np.uint8).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])) if n else np.zeros(0, np.int64)
    states = np.zeros(n, dtype=np.int64)
    rows_seen: list[np.ndarray] = []
    feats_seen: list[np.ndarray] = []
    steps_seen: list[np.ndarray] = []
    live = int(np.count_nonzero(lengths))
    t = 0
    nextmove, rowbase, output = model.nextmove, model.rowbase, model.output
    while live >= _SCALAR_BELOW:
        s = nextmove[rowbase[states[:live]] + flat[offsets[:live] + t]]
        states[:live] = s
        f = output[s]
        hit = np.flatnonzero(f >= 0)
        if hit.size:
            rows_seen.append(hit)
            feats_seen.append(f[hit])
            steps_seen.append(np.full(hit.size, t, dtype=np.int64))
        t += 1
        while live and lengths[live - 1] <= t:
            live -= 1
    # Finish the few long texts with py3langid's scalar walk (same DFA, same features).
    tails: dict[int, list[int]] = {}
    nm, rb, out = model.ident.tk_nextmove, model.ident._rowbase, model.ident.tk_output
    for r in range(live):
        state = int(states[r])
        found = []
        for letter in data[order[r]][t:]:
            state = nm[rb[state] + letter]
            if out[state] >= 0:
                found.append(out[state])
        tails[r] = found
    empty = np.zeros(0, np.int64)
    result: list[tuple[np.ndarray, np.ndarray]] = [(empty, empty)] * n
    if not rows_seen and not tails:
        return result
    rows = np.concatenate(rows_seen + [np.full(len(v), r, np.int64) for r, v in tails.items()])
    feats = np.concatenate(feats_seen + [np.asarray(v, np.int64) for v in tails.values()])
    steps = np.concatenate(
        steps_seen + [np.arange(t, t + len(v), dtype=np.int64) for v in tails.values()]
    )
    by_row = np.lexsort((steps, rows))  # each text's features in byte order
    keys = rows[by_row] * len(model.output) + feats[by_row]
    uniq, first, counts = np.unique(keys, return_index=True, return_counts=True)
    keep = np.argsort(first, kind="stable")  # grouped by text, first-occurrence order (Counter's)
    uniq, counts = uniq[keep], counts[keep]
    row_of = uniq // len(model.output)
    feat_of = uniq % len(model.output)
    bounds = np.searchsorted(row_of, np.arange(n + 1))
    for r in range(n):
        lo, hi = bounds[r], bounds[r + 1]
        if hi > lo:
            result[order[r]] = (feat_of[lo:hi], counts[lo:hi])
    return result


def classify_many(
    texts: Sequence[str], languages: Sequence[str] | None = None
) -> list[tuple[str, float]]:
    """``py3langid.classify`` of each text: ``(language, raw score)``.

    ``languages`` restricts the candidates, as ``py3langid.set_languages`` does.
    """
    model = _model()
    key = tuple(languages) if languages else None
    ptc, pc, classes, alias_pairs = model.tables(key)
    floor = np.float32(np.finfo(np.float32).min)
    walked = _walk(model, [_encode(t) for t in texts])
    scores = np.full((len(walked), len(classes)), floor, dtype=np.float32)
    for r, (idx, counts) in enumerate(walked):
        if idx.size:  # py3langid's expression, term for term
            scores[r] = np.log1p(counts.astype(np.float32)) @ ptc[idx] + pc
    for i, j in alias_pairs:  # a label listed twice keeps its best column
        scores[:, i] = np.maximum(scores[:, i], scores[:, j])
        scores[:, j] = floor
    best = scores.argmax(axis=1)
    return [(classes[b], float(scores[r, b])) for r, b in enumerate(best.tolist())]
