"""Where the chunks of training data are evaluated and summed.

`ChunkedSequences` holds training data in chunks of
consecutive sequences and sums a function over them in this process, in ``n_jobs`` worker
processes or on the workers of a dask cluster, along a summation tree that depends only on
the data, so that results are the same for any ``n_jobs`` and any number of workers.
"""

from ._chunked import CHUNK_TOKENS, ChunkedSequences

__all__ = ["ChunkedSequences", "CHUNK_TOKENS"]
