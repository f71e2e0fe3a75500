"""Chunked data: the same sums in one process or several, and no files left behind."""

import gc
from pathlib import Path

import numpy as np

from sklearn_ssl_crf.crf import _sum_in_order
from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.featurize import SequenceVectorizer
from sklearn_ssl_crf.packing import ChunkedSequences
from sklearn_ssl_crf.semi_supervised import _chunk_unlabelled_terms


def test_worker_processes_give_the_same_sums_and_clean_up():
    X, _ = make_sequences(60, n_types=3, features="dict", random_state=0)
    sequences = SequenceVectorizer().fit_transform(X)
    rng = np.random.default_rng(0)
    state = rng.normal(size=(sequences.n_features, 3))
    transition = rng.normal(size=(3, 3))
    sums = {}
    for n_jobs in (1, 2):
        data = ChunkedSequences(sequences, n_jobs=n_jobs, chunk_tokens=100)
        assert len(data.chunks) > 2
        sums[n_jobs] = _sum_in_order(data.map(_chunk_unlabelled_terms, state, transition,
                                               "lattice"))
    for one, two in zip(*sums.values()):
        np.testing.assert_array_equal(one, two)
    folder = Path(data._paths[0]).parent
    assert folder.is_dir()
    del data
    gc.collect()
    assert not folder.exists()
