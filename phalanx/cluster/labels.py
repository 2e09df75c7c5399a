"""Node labels as integer ids per label key, so selectors become vector comparisons over nodes."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

BoolArray = npt.NDArray[np.bool_]


class LabelIndex:
    """For each label key, an int32 array over nodes of value ids (-1 where the node lacks the key)."""

    def __init__(self) -> None:
        self._labels: list[dict[str, str]] = []
        self._ids: dict[str, npt.NDArray[np.int32]] = {}
        self._vocab: dict[str, dict[str, int]] = {}
        self._numeric: dict[str, npt.NDArray[np.float64]] = {}

    def __len__(self) -> int:
        return len(self._labels)

    def append(self, labels: dict[str, str]) -> None:
        self._labels.append(dict(labels))
        self._ids.clear()
        self._vocab.clear()
        self._numeric.clear()

    def set(self, node: int, labels: dict[str, str]) -> None:
        """A node's labels changed: every per-key array is rebuilt on its next use."""
        self._labels[node] = dict(labels)
        self._ids.clear()
        self._vocab.clear()
        self._numeric.clear()

    def labels(self, node: int) -> dict[str, str]:
        return self._labels[node]

    def _build(self, key: str) -> None:
        vocab: dict[str, int] = {}
        ids = np.full(len(self._labels), -1, dtype=np.int32)
        for i, labels in enumerate(self._labels):
            value = labels.get(key)
            if value is not None:
                ids[i] = vocab.setdefault(value, len(vocab))
        self._ids[key] = ids
        self._vocab[key] = vocab

    def ids(self, key: str) -> npt.NDArray[np.int32]:
        if key not in self._ids:
            self._build(key)
        return self._ids[key]

    def count(self, key: str) -> int:
        """How many distinct values nodes have for `key` (value ids run from 0 to count − 1)."""
        self.ids(key)
        return len(self._vocab[key])

    def has(self, key: str) -> BoolArray:
        return self.ids(key) >= 0

    def equals_any(self, key: str, values: tuple[str, ...]) -> BoolArray:
        ids = self.ids(key)
        vocab = self._vocab[key]
        wanted = [vocab[v] for v in values if v in vocab]
        if not wanted:
            return np.zeros(len(ids), dtype=bool)
        if len(wanted) == 1:
            return np.asarray(ids == wanted[0])
        return np.asarray(np.isin(ids, wanted))

    def numeric(self, key: str) -> npt.NDArray[np.float64]:
        """Label values parsed as integers (NaN where missing or not an integer), for Gt and Lt."""
        if key not in self._numeric:
            out = np.full(len(self._labels), np.nan)
            for i, labels in enumerate(self._labels):
                value = labels.get(key)
                if value is not None and value.lstrip("+-").isdigit():
                    out[i] = int(value)
            self._numeric[key] = out
        return self._numeric[key]
