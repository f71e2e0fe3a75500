"""Where our computations run: BLAS threads, and the dask cluster joblib is set to."""

from functools import lru_cache

import joblib

# threadpoolctl comes with scikit-learn.
from threadpoolctl import ThreadpoolController


@lru_cache(maxsize=None)
def _controller():
    return ThreadpoolController()


def single_threaded_blas():
    """Context in which BLAS runs on one thread.

    Our BLAS calls are small matrix products and vector operations, which multi-threaded
    BLAS slows down (up to 20x for a million-element dot product on a 2-core virtual
    machine); parallel work comes from ``n_jobs`` instead.
    """
    return _controller().limit(limits=1, user_api="blas")


def dask_client():
    """The dask client of the active joblib backend (``parallel_config(backend="dask")``),
    or None."""
    backend, _ = joblib.parallel.get_active_backend()
    # Checked by name, so that dask is imported only where it is in use.
    if type(backend).__name__ != "DaskDistributedBackend":
        return None
    return backend.client
