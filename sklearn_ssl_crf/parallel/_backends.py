"""Where chunks are evaluated besides the main process: a pool of joblib (loky) worker
processes that keep their chunks between evaluations, and the workers of a dask cluster.
"""

import threading
from pathlib import Path

import joblib
import numpy as np
from joblib import Parallel, cpu_count, delayed
from joblib.externals.loky import ProcessPoolExecutor

from ..inference import Workspace
from ..utils import single_threaded_blas
from ._tree import _ranges_results, _tree_ranges

#: Chunks per message when they are scattered to a dask cluster's workers: the client holds
#: a message's serialised copy until it is sent, so its memory grows by one message (about
#: 40 MB of chunks), not by a worker's share of the corpus.
SCATTER_CHUNKS = 8

#: Times a sum over a dask cluster's chunks sends the groups lost with a worker again.
_LOST_WORKER_RETRIES = 3


class _ClusterChunks:
    """Chunks held by the workers of a dask cluster, for `ChunkedSequences.sum` and
    `ChunkedSequences.map`.

    The tree's ranges at the first depth with at least two per worker are shared out in
    contiguous groups, one per worker; each group's chunks are scattered to its worker once,
    here (`SCATTER_CHUNKS` at a time), and each sum sends the workers only the function and
    its arguments (the weights) and gets back one partial sum per range. A range is always
    summed by the same worker, so the data never moves again, unless its worker is lost:
    a group whose data or task a lost worker took with it is scattered again, from the
    client's own chunks, to a live worker, and its task resubmitted (the same ranges, so
    the same sums).

    Parameters
    ----------
    chunks : list of PackedSequences
        Kept (they are the client's copy anyway) to be sent again after a worker's loss.
    client : distributed.Client
    """

    def __init__(self, chunks, client):
        workers = sorted(client.scheduler_info()["workers"])
        n_groups = min(len(workers), len(chunks))
        groups = [[tuple(bounds) for bounds in group] for group in
                  np.array_split(_tree_ranges(len(chunks), 2 * n_groups), n_groups)]
        self.client, self.chunks = client, chunks
        self.ranges = {bounds for group in groups for bounds in group}
        self.groups = [self._scattered(worker, group) for worker, group in zip(workers, groups)]

    def _scattered(self, worker, group):
        """``(worker, group, held)``: the group's chunks scattered to ``worker``."""
        held = [k for first, stop in group for k in range(first, stop)]
        futures = [future for start in range(0, len(held), SCATTER_CHUNKS)
                   for future in self.client.scatter(
                       [self.chunks[k] for k in held[start:start + SCATTER_CHUNKS]],
                       workers=[worker], hash=False)]
        return worker, group, dict(zip(held, futures))

    def range_results(self, function, args, reduce):
        """The results (``reduce``: sums) of the ranges, left to right, computed by the
        workers; groups lost with a worker are sent again (`_LOST_WORKER_RETRIES` times at
        most per call)."""
        from concurrent.futures import CancelledError

        from distributed.scheduler import KilledWorker

        results = [None] * len(self.groups)
        pending = list(range(len(self.groups)))
        for attempt in range(_LOST_WORKER_RETRIES + 1):
            tasks = {g: self.client.submit(_evaluate_held, group, held, function, args,
                                           reduce, workers=[worker],
                                           allow_other_workers=False, pure=False)
                     for g in pending for worker, group, held in [self.groups[g]]}
            lost = []
            for g, task in tasks.items():
                try:
                    results[g] = task.result()
                except (CancelledError, KilledWorker):
                    if attempt == _LOST_WORKER_RETRIES:
                        raise
                    lost.append(g)
            if not lost:
                break
            self._send_again(lost)
            pending = lost
        return (part for group_results in results for part in group_results)

    def _send_again(self, lost):
        """Scatter the groups ``lost`` again, to live workers (one each, round robin)."""
        self.client.wait_for_workers(1)
        live = sorted(self.client.scheduler_info()["workers"])
        for n, g in enumerate(lost):
            _, group, _ = self.groups[g]
            self.groups[g] = self._scattered(live[n % len(live)], group)


_thread_state = threading.local()


def _evaluate_held(ranges, held, function, args, reduce):
    """On a dask worker: `_ranges_results` of some tree ranges of the chunks it holds
    (``held``: chunk index -> chunk)."""
    # A worker may run tasks of several fits at once, in threads: one workspace per thread.
    workspace = getattr(_thread_state, "workspace", None)
    if workspace is None:
        workspace = _thread_state.workspace = Workspace()
    with single_threaded_blas():
        return _ranges_results(ranges, lambda k: function(held[k], workspace, *args), reduce)


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


# In a worker process: the chunks it has mapped, by folder, and its one set of work arrays.
_stored_chunks = {}


_worker_workspace = Workspace()


def _evaluate_stored(paths, ranges, function, args, reduce):
    """In a worker: `_ranges_results` of some tree ranges of the chunks stored at
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

    return _ranges_results(ranges, leaf, reduce)
