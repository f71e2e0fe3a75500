"""Grouping chains of equal length so batched kernels need no padding or masks."""

import numpy as np

__all__ = ["LengthBuckets"]


class LengthBuckets:
    """Sequences grouped by exact length, with their tokens in position-major order.

    Row ``start + t * B + b`` of a packed array holds position ``t`` of the ``b``-th sequence
    of a bucket of ``B`` sequences, so ``packed[start:stop].reshape(L, B, ...)`` is the
    (length, batch, ...) layout of the kernels, as a view. Empty sequences belong to no bucket.

    Parameters
    ----------
    lengths : array-like of int of shape (n_sequences,)

    Attributes
    ----------
    order : ndarray of int64 of shape (n_tokens,)
        Packed row ``r`` is token ``order[r]`` of the sequences laid end to end.
    buckets : list of (start, length, sequence_ids)
        Rows ``start:start + length * len(sequence_ids)`` hold those sequences.
    """

    def __init__(self, lengths):
        lengths = np.asarray(lengths, dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        self.n_tokens = int(offsets[-1])
        self.buckets = []
        pieces = []
        start = 0
        # A stable sort keeps sequences of one length in input order: reproducible sums.
        by_length = np.argsort(lengths, kind="stable")
        sorted_lengths = lengths[by_length]
        boundaries = np.flatnonzero(np.diff(sorted_lengths)) + 1
        for ids in np.split(by_length, boundaries):
            if ids.size == 0 or lengths[ids[0]] == 0:
                continue
            length = int(lengths[ids[0]])
            rows = offsets[ids][None, :] + np.arange(length)[:, None]
            pieces.append(rows.ravel())
            self.buckets.append((start, length, ids))
            start += rows.size
        self.order = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)

    def views(self, packed):
        """Yield ``(sequence_ids, view)`` with each bucket's rows of ``packed`` as (L, B, ...)."""
        for start, length, ids in self.buckets:
            block = packed[start:start + length * ids.size]
            yield ids, block.reshape((length, ids.size) + packed.shape[1:])
