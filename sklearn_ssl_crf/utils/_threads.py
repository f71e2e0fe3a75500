"""BLAS threading during our computations."""

from functools import lru_cache

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
