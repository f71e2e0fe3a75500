"""`ChunkedSequences`: training data packed in chunks of consecutive sequences, evaluated one
after another (or in ``n_jobs`` processes, or on the workers of a dask cluster) with reused
work arrays, so that memory holds one chunk's work at a time per process, whatever the size
of the corpus.
"""

import shutil
import tempfile
import weakref
from pathlib import Path

import joblib
import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs

from ..inference import Workspace
from ..potentials import PackedSequences
from ..utils import dask_client, release_freed_memory
from ._backends import _ClusterChunks, _stored_results
from ._tree import _range_sum, _tree_ranges

#: Tokens per chunk: large enough for NumPy to work on big blocks, small enough that a
#: chunk's work arrays (a few of tokens x labels) stay a small part of memory.
CHUNK_TOKENS = 50_000


class ChunkedSequences:
    """Sequences packed as consecutive chunks of about `CHUNK_TOKENS` tokens.

    Parameters
    ----------
    sequences : SequenceMatrix or list of SequenceMatrix
        The sequences, or consecutive parts of them (blocks of a stream) with the same
        columns; a list is emptied as its parts are packed, so that their memory is freed
        while the chunks fill.
    labels : ndarray of int of shape (n_tokens,), default=None
        Label index of every token of ``sequences``.
    n_labels : int, default=None
    groups : ndarray of int of shape (n_tokens,), default=None
        Group of every token of ``sequences`` (-1 for none).
    n_groups : int, default=None
    n_jobs : int, default=None
        Processes used by `sum`; None or 1 runs the chunks one after another in this
        process. With several, the chunks are written once to memory-mapped files in a
        temporary folder (removed with this object) that the workers map instead of
        receiving copies, and this object maps them too, so the data is held once.
        Inside ``joblib.parallel_config(backend="dask")``, where joblib counts the
        cluster's cores for ``n_jobs=None``, the chunks are instead sent once to the
        cluster's workers (`_ClusterChunks`): nothing assumes a shared file system.
    chunk_tokens : int, default=None
        None: `CHUNK_TOKENS`.
    order : {1, 2}, default=1
        Order of the chains (`PackedSequences`).
    weights : ndarray of shape (n_sequences,), default=None
        Weight of each sequence's likelihood (`PackedSequences`).
    label_costs : ndarray of shape (n_labels,), default=None
        The cost of mislabelling a token of each label (`PackedSequences`).

    Attributes
    ----------
    chunks : list of PackedSequences
    """

    def __init__(self, sequences, labels=None, n_labels=None, groups=None, n_groups=None,
                 n_jobs=None, chunk_tokens=None, order=1, weights=None, label_costs=None):
        parts = sequences if isinstance(sequences, list) else [sequences]
        lengths = np.concatenate([np.zeros(0, dtype=np.int64)]
                                 + [part.lengths for part in parts])
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        bounds = _chunk_bounds(offsets, chunk_tokens or CHUNK_TOKENS)
        self.n_jobs = n_jobs
        self._workspace = Workspace()
        self._paths = self._cluster = None
        shared = effective_n_jobs(n_jobs) > 1 and len(bounds) > 1
        client = dask_client() if shared else None
        folder = self._new_folder() if shared and client is None else None
        rows_of = _RowReader(parts)
        self.chunks = []
        for first, stop in bounds:
            rows = slice(offsets[first], offsets[stop])
            chunk = PackedSequences(
                rows_of(rows), lengths[first:stop],
                None if labels is None else labels[rows], n_labels,
                None if groups is None else groups[rows], n_groups, order,
                None if weights is None else weights[first:stop], label_costs,
            )
            # Written and mapped as soon as packed: one chunk at a time is in memory, so
            # the freed chunks do not leave the corpus's size of heap behind.
            self.chunks.append(chunk if folder is None else self._stored(chunk, folder))
        if client is not None:
            self._cluster = _ClusterChunks(self.chunks, client)
        if shared:
            # The freed blocks (and, with files, chunks) would otherwise stay in the heap.
            release_freed_memory()

    @property
    def on_cluster(self):
        """Whether the chunks are held by a dask cluster's workers."""
        return self._cluster is not None

    def _new_folder(self):
        """A temporary folder for the chunk files, removed with this object."""
        folder = tempfile.mkdtemp(prefix="sklearn_ssl_crf_")
        weakref.finalize(self, shutil.rmtree, folder, ignore_errors=True)
        self._paths = []
        return folder

    def _stored(self, chunk, folder):
        """The chunk written to a file in ``folder`` that worker processes map, and mapped
        here too."""
        path = str(Path(folder) / f"chunk{len(self._paths)}.pkl")
        joblib.dump(chunk, path)
        self._paths.append(path)
        return joblib.load(path, mmap_mode="r")

    def sum(self, function, *args):
        """Element-wise sum over the chunks of ``function(chunk, workspace, *args)``, a tuple
        of floats and fresh arrays, returned as a list.

        Results are added pairwise along a fixed binary tree over the chunks (each range's
        sum is its left half's plus its right half's), which keeps a few partial sums alive
        at a time and gives the same floats for any ``n_jobs``. With several jobs, the tree's
        ranges at the first depth with at least ``2 * n_jobs`` of them are shared out in
        contiguous groups: this process sums the first group while each of ``n_jobs - 1``
        workers sums one other group in a single task (a few long tasks lose less to
        dispatch than one task per chunk). On a dask cluster every group goes to a worker.
        ``function`` must be picklable (defined at module level) when ``n_jobs > 1``.
        """
        ranges, local, remote_results = self._share_out(function, args, True)
        return _range_sum(0, len(self.chunks), self._leaf(function, args), ranges - local,
                          remote_results)

    def map(self, function, *args):
        """``function(chunk, workspace, *args)`` of every chunk, as a list in chunk order,
        computed where `sum` computes (in worker processes, on a cluster's workers)."""
        ranges, local, remote_results = self._share_out(function, args, False)
        leaf = self._leaf(function, args)
        return [result for first, stop in sorted(ranges) for result in (
            [leaf(k) for k in range(first, stop)] if (first, stop) in local
            else next(remote_results))]

    def _share_out(self, function, args, reduce):
        """Start the work of `sum` (``reduce``: each range's sum) or `map` (each range's
        list of results) on the ranges done elsewhere. Returns the set of the tree's ranges
        covering the chunks, those done in this process, and an iterator over the results
        of the others, left to right."""
        n_chunks = len(self.chunks)
        if self._cluster is not None:
            return (self._cluster.ranges, set(),
                    self._cluster.range_results(function, args, reduce))
        if self._paths is None:
            return {(0, n_chunks)}, {(0, n_chunks)}, iter(())
        n_jobs = min(effective_n_jobs(self.n_jobs), n_chunks)
        groups = [[tuple(bounds) for bounds in group] for group in
                  np.array_split(_tree_ranges(n_chunks, 2 * n_jobs), n_jobs)]
        tasks = _stored_results(self._paths, groups[1:], function, args, reduce, n_jobs)
        return ({bounds for group in groups for bounds in group}, set(groups[0]),
                (part for results in tasks for part in results))

    def _leaf(self, function, args):
        return lambda k: function(self.chunks[k], self._workspace, *args)


class _RowReader:
    """``reader(rows)``: the token rows ``rows`` (a slice, each call after the last) of
    consecutive `SequenceMatrix` parts, as one CSR matrix; a part is removed from the list
    once read to its end."""

    def __init__(self, parts):
        self.parts = parts
        self.start = 0  # first row of parts[0]

    def __call__(self, rows):
        pieces = []
        while self.parts:
            matrix = self.parts[0].matrix
            end = self.start + matrix.shape[0]
            pieces.append(matrix[max(rows.start - self.start, 0):rows.stop - self.start])
            if end > rows.stop:
                break
            self.parts.pop(0)
            self.start = end
        return pieces[0] if len(pieces) == 1 else sp.vstack(pieces, format="csr")


def _chunk_bounds(offsets, chunk_tokens):
    """(first, stop) sequence indices of consecutive chunks of about equal size, as few as
    keep them near ``chunk_tokens`` tokens: each cut is the sequence boundary nearest an
    equal share of the tokens, so shares given to different processes are balanced (a
    sequence longer than a share can make a chunk larger than ``chunk_tokens``)."""
    n_sequences = offsets.size - 1
    n_chunks = max(1, -(-int(offsets[-1]) // chunk_tokens))
    shares = offsets[-1] * np.arange(1, n_chunks) / n_chunks
    after = np.clip(np.searchsorted(offsets, shares), 1, n_sequences)
    nearer_before = shares - offsets[after - 1] < offsets[after] - shares
    cuts = np.unique(np.concatenate([[0], after - nearer_before, [n_sequences]]))
    return list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
