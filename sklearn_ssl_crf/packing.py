"""Feature rows packed once into a chain layout, and the one mapping between weights and
potentials: ``unary = X @ W`` forward, ``dW = X.T @ d_unary`` back.

Training data is packed in chunks of consecutive sequences, evaluated one after another (or
in ``n_jobs`` processes, or on the workers of a dask cluster) with reused work arrays, so
memory holds one chunk's work at a time per process, whatever the size of the corpus. Chunk
results are summed pairwise along a binary tree over the chunks that depends only on the
data, so the sums are the same for any ``n_jobs`` and any number of workers.
"""

import shutil
import tempfile
import threading
import weakref
from pathlib import Path

import joblib
import numpy as np
import scipy.sparse as sp
from joblib import Parallel, cpu_count, delayed, effective_n_jobs
from joblib.externals.loky import ProcessPoolExecutor

from ._memory import release_freed_memory
from ._threads import single_threaded_blas
from .inference import ChainLayout, Workspace
from .objective._penalties import group_indicator

__all__ = ["PackedSequences", "ChunkedSequences", "CHUNK_TOKENS", "transition_counts"]

#: Tokens per chunk: large enough for NumPy to work on big blocks, small enough that a
#: chunk's work arrays (a few of tokens x labels) stay a small part of memory.
CHUNK_TOKENS = 50_000

#: Chunks per message when they are scattered to a dask cluster's workers: the client holds
#: a message's serialised copy until it is sent, so its memory grows by one message (about
#: 40 MB of chunks), not by a worker's share of the corpus.
SCATTER_CHUNKS = 8


class PackedSequences:
    """Token rows of some sequences reordered into a `ChainLayout` for the batched kernels.

    Parameters
    ----------
    matrix : scipy.sparse.csr_matrix of shape (n_tokens, n_attributes)
        Token rows, sequences laid end to end.
    lengths : ndarray of int of shape (n_sequences,)
    labels : ndarray of int of shape (n_tokens,), default=None
        Label index of every token, in the same order as ``matrix``.
    n_labels : int, default=None
        Needed with ``labels``, to count observed transitions.
    groups : ndarray of int of shape (n_tokens,), default=None
        Group of every token (a graph vertex; -1 for none), in the same order as
        ``matrix``, for penalties on grouped marginals (`penalties`).
    n_groups : int, default=None
        Needed with ``groups``.
    order : {1, 2}, default=1
        Order of the chains, for ``transition_counts``.

    Attributes
    ----------
    layout : ChainLayout
    matrix : csr_matrix
        Rows in packed order; float32 values when that loses nothing.
    labels : ndarray or None
        Labels in packed order.
    transition_counts : ndarray of shape (n_labels, n_labels) or None
        How often label ``i`` is followed by label ``j`` in the labelled sequences; at order
        2, of shape (n_labels + 1, n_labels, n_labels), the counts of the transition
        tensor's entries (`inference.second_order`).
    label_index : ndarray of int64 or None
        Index of every token's label in a raveled (n_tokens, n_labels) array.
    group_matrix : scipy.sparse.csr_matrix of shape (n_groups, n_tokens) or None
        Indicator of each packed token's group (`objective._penalties.group_indicator`).
    """

    def __init__(self, matrix, lengths, labels=None, n_labels=None, groups=None,
                 n_groups=None, order=1):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.layout = ChainLayout(self.lengths)
        self.matrix = matrix[self.layout.order]
        # Feature values are almost all 1 (indicators): held as float32 where that is exact,
        # a third less memory for the packed data. Products upcast them to float64, so
        # every result is the same to the bit.
        values = self.matrix.data
        if values.dtype == np.float64 and np.array_equal(values.astype(np.float32), values):
            self.matrix.data = values.astype(np.float32)
        self.labels = self.transition_counts = self.label_index = None
        if labels is not None:
            labels = np.asarray(labels, dtype=np.int64)
            self.labels = labels[self.layout.order]
            self.transition_counts = transition_counts(labels, self.lengths, n_labels, order)
            self.label_index = np.arange(self.labels.size) * n_labels + self.labels
        self.group_matrix = None
        if groups is not None:
            groups = np.asarray(groups, dtype=np.int64)[self.layout.order]
            self.group_matrix = group_indicator(groups, n_groups)

    @property
    def n_tokens(self):
        return self.layout.n_rows

    def unary(self, state_weights):
        """Unary potentials ``X @ W`` of every packed token, shape (n_tokens, n_labels)."""
        return np.asarray(self.matrix @ state_weights)

    def weight_gradient(self, d_unary):
        """Map a gradient w.r.t. the unary potentials to one w.r.t. the state weights."""
        # X.T of a CSR matrix is a free CSC view; its product scatters into the small dW
        # instead of gathering from the large d_unary, several times faster than a CSR
        # transpose here.
        return np.asarray(self.matrix.T @ d_unary)

    def unpack(self, packed_values):
        """Rows of a packed-order array back in the sequences' original token order."""
        values = np.empty_like(packed_values)
        values[self.layout.order] = packed_values
        return values


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

    Attributes
    ----------
    chunks : list of PackedSequences
    """

    def __init__(self, sequences, labels=None, n_labels=None, groups=None, n_groups=None,
                 n_jobs=None, chunk_tokens=None, order=1):
        parts = sequences if isinstance(sequences, list) else [sequences]
        lengths = np.concatenate([np.zeros(0, dtype=np.int64)]
                                 + [part.lengths for part in parts])
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        bounds = _chunk_bounds(offsets, chunk_tokens or CHUNK_TOKENS)
        self.n_jobs = n_jobs
        self._workspace = Workspace()
        self._paths = self._cluster = None
        shared = effective_n_jobs(n_jobs) > 1 and len(bounds) > 1
        client = _dask_client() if shared else None
        folder = self._new_folder() if shared and client is None else None
        rows_of = _RowReader(parts)
        self.chunks = []
        for first, stop in bounds:
            rows = slice(offsets[first], offsets[stop])
            chunk = PackedSequences(
                rows_of(rows), lengths[first:stop],
                None if labels is None else labels[rows], n_labels,
                None if groups is None else groups[rows], n_groups, order,
            )
            # Written and mapped as soon as packed: one chunk at a time is in memory, so
            # the freed chunks do not leave the corpus's size of heap behind.
            self.chunks.append(chunk if folder is None else self._stored(chunk, folder))
        if client is not None:
            self._cluster = _ClusterChunks(self.chunks, client)
        if shared:
            # The freed blocks (and, with files, chunks) would otherwise stay in the heap.
            release_freed_memory()

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


class _ClusterChunks:
    """Chunks held by the workers of a dask cluster, for `ChunkedSequences.sum` and
    `ChunkedSequences.map`.

    The tree's ranges at the first depth with at least two per worker are shared out in
    contiguous groups, one per worker; each group's chunks are scattered to its worker once,
    here (`SCATTER_CHUNKS` at a time), and each sum sends the workers only the function and
    its arguments (the weights) and gets back one partial sum per range. A range is always
    summed by the same worker, so the data never moves again.

    Parameters
    ----------
    chunks : list of PackedSequences
    client : distributed.Client
    """

    def __init__(self, chunks, client):
        workers = sorted(client.scheduler_info()["workers"])
        n_groups = min(len(workers), len(chunks))
        groups = [[tuple(bounds) for bounds in group] for group in
                  np.array_split(_tree_ranges(len(chunks), 2 * n_groups), n_groups)]
        self.client = client
        self.ranges = {bounds for group in groups for bounds in group}
        self.groups = []
        for worker, group in zip(workers, groups):
            held = [k for first, stop in group for k in range(first, stop)]
            futures = [future for start in range(0, len(held), SCATTER_CHUNKS)
                       for future in client.scatter(
                           [chunks[k] for k in held[start:start + SCATTER_CHUNKS]],
                           workers=[worker], hash=False)]
            self.groups.append((worker, group, dict(zip(held, futures))))

    def range_results(self, function, args, reduce):
        """The results (``reduce``: sums) of the ranges, left to right, computed by the
        workers."""
        tasks = [self.client.submit(_evaluate_held, group, held, function, args, reduce,
                                    workers=[worker], allow_other_workers=False, pure=False)
                 for worker, group, held in self.groups]
        return (part for results in self.client.gather(tasks) for part in results)


_thread_state = threading.local()


def _dask_client():
    """The dask client of the active joblib backend (``parallel_config(backend="dask")``),
    or None."""
    backend, _ = joblib.parallel.get_active_backend()
    # Checked by name, so that dask is imported only where it is in use.
    if type(backend).__name__ != "DaskDistributedBackend":
        return None
    return backend.client


def _evaluate_held(ranges, held, function, args, reduce):
    """On a dask worker: `_range_results` of some tree ranges of the chunks it holds
    (``held``: chunk index -> chunk)."""
    # A worker may run tasks of several fits at once, in threads: one workspace per thread.
    workspace = getattr(_thread_state, "workspace", None)
    if workspace is None:
        workspace = _thread_state.workspace = Workspace()
    with single_threaded_blas():
        return [_range_results(first, stop, lambda k: function(held[k], workspace, *args),
                               reduce) for first, stop in ranges]


def _stored_results(paths, groups, function, args, reduce, n_jobs):
    """`_evaluate_stored` of each group in worker processes: the results, in order, as they
    are taken."""
    backend, _ = joblib.parallel.get_active_backend()
    if type(backend).__name__ != "LokyBackend":
        # A backend the user chose with joblib.parallel_config (not all of them can return
        # a generator).
        return Parallel(n_jobs=n_jobs)(
            delayed(_evaluate_stored)(paths, group, function, args, reduce)
            for group in groups)
    # Under the default backend, a loky pool of our own: joblib's Parallel sets its executor
    # up again at every call and polls for results every 10 ms, costs that show on
    # evaluations of 0.1 s. (Not loky's shared reusable executor, which joblib expects to
    # have made itself.)
    futures = [_worker_pool(len(groups)).submit(_evaluate_stored, paths, group, function, args,
                                                reduce) for group in groups]
    return (future.result() for future in futures)


_pools = {}


def _worker_pool(n_workers):
    """A pool of ``n_workers`` loky processes, kept between calls (one size at a time); idle
    workers exit after 5 minutes and are started again when needed."""
    if n_workers not in _pools:
        for pool in _pools.values():
            pool.shutdown(wait=False)
        _pools.clear()
        # BLAS threads: the cores shared out between the workers and this process.
        threads = str(max(1, cpu_count() // (n_workers + 1)))
        _pools[n_workers] = ProcessPoolExecutor(max_workers=n_workers, timeout=300, env={
            name: threads for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                       "MKL_NUM_THREADS", "BLIS_NUM_THREADS")})
    return _pools[n_workers]


def _range_results(first, stop, leaf, reduce):
    """The sum of ``leaf(k)`` for chunks ``first <= k < stop`` along the tree if ``reduce``,
    else their list."""
    if reduce:
        return _range_sum(first, stop, leaf)
    return [leaf(k) for k in range(first, stop)]


def _range_sum(first, stop, leaf, remote=(), remote_sums=None):
    """Sum of ``leaf(k)`` for chunks ``first <= k < stop`` along the fixed tree. The sums of
    the ranges in ``remote`` are computed elsewhere and come from ``remote_sums`` in
    left-to-right order, taken only when the tree reaches them."""
    if (first, stop) in remote:
        return next(remote_sums)
    if stop - first == 1:
        return list(leaf(first))
    middle = _middle(first, stop)
    total = _range_sum(first, middle, leaf, remote, remote_sums)
    for k, term in enumerate(_range_sum(middle, stop, leaf, remote, remote_sums)):
        total[k] += term
    return total


def _tree_ranges(n_chunks, count):
    """The (first, stop) ranges of the tree's first depth with at least ``count`` of them (or
    all chunks), left to right; a single chunk stays as it is at deeper levels."""
    ranges = [(0, n_chunks)]
    while len(ranges) < min(count, n_chunks):
        ranges = [half for first, stop in ranges for half in (
            [(first, stop)] if stop - first == 1 else
            [(first, _middle(first, stop)), (_middle(first, stop), stop)])]
    return ranges


def _middle(first, stop):
    """Where the tree splits a range: the left half is the larger one."""
    return (first + stop + 1) // 2


# In a worker process: the chunks it has mapped, by folder, and its one set of work arrays.
_stored_chunks = {}
_worker_workspace = Workspace()


def _evaluate_stored(paths, ranges, function, args, reduce):
    """In a worker: `_range_results` of some tree ranges of the chunks stored at
    ``paths``."""
    # Several data sets can be in use at once (labelled and unlabelled); a folder is gone
    # once its data set is, and so are its chunks here.
    for folder in [folder for folder in _stored_chunks if not Path(folder).is_dir()]:
        del _stored_chunks[folder]
    stored = _stored_chunks.setdefault(str(Path(paths[0]).parent), {})

    def leaf(k):
        chunk = stored.get(k)
        if chunk is None:
            chunk = stored[k] = joblib.load(paths[k], mmap_mode="r")
        return function(chunk, _worker_workspace, *args)

    return [_range_results(first, stop, leaf, reduce) for first, stop in ranges]


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


def transition_counts(labels, lengths, n_labels, order=1):
    """Counts of each transition potential's entry in labelled sequences laid end to end:
    shape (n_labels, n_labels) at order 1, (n_labels + 1, n_labels, n_labels) at order 2
    (`inference.second_order`)."""
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])[lengths > 0]
    # position[k]: position of token k in its sequence
    position = np.arange(labels.size) - np.repeat(starts, lengths[lengths > 0])
    if order == 1:
        later = np.flatnonzero(position >= 1)
        entries = labels[later - 1] * n_labels + labels[later]
        return np.bincount(entries, minlength=n_labels ** 2).reshape(n_labels, n_labels)
    later = np.flatnonzero(position >= 1)
    # y_{t-2}, with the start (index n_labels) at position 1
    before = np.where(position[later] >= 2, labels[np.maximum(later - 2, 0)], n_labels)
    entries = (before * n_labels + labels[later - 1]) * n_labels + labels[later]
    return np.bincount(entries, minlength=(n_labels + 1) * n_labels ** 2).reshape(
        n_labels + 1, n_labels, n_labels)
