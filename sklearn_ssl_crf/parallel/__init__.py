"""Feature rows packed for the kernels, and where their chunks are evaluated.

`PackedSequences` holds sequences in the kernels' chain layout and maps weights to
potentials and gradients back; `ChunkedSequences` holds training data in chunks of
consecutive sequences and sums a function over them in this process, in ``n_jobs`` worker
processes or on the workers of a dask cluster, along a summation tree that depends only on
the data, so that results are the same for any ``n_jobs`` and any number of workers.
"""

from ._chunked import ChunkedSequences
from ._packed import PackedSequences, transition_counts

__all__ = ["ChunkedSequences", "PackedSequences", "transition_counts"]
