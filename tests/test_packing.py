"""Chunked data: the same sums in one process or several, and no files left behind."""

import gc
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed, parallel_config

from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.features import SequenceVectorizer
from sklearn_ssl_crf.objective._weights import chunk_unlabeled_terms
from sklearn_ssl_crf.parallel import ChunkedSequences
from sklearn_ssl_crf.parallel._chunked import _chunk_bounds
from sklearn_ssl_crf.potentials import PackedSequences, observed_weight_masks


def _chunk_rows(chunk, workspace, weights):
    """Each chunk's token count and its rows' weighted sums: summed over the chunks, the
    corpus's token count and ``X @ weights`` summed over its rows."""
    return float(chunk.n_tokens), np.asarray(chunk.matrix.sum(axis=0)).ravel() @ weights


def test_worker_processes_give_the_same_sums_and_clean_up():
    X, _ = make_sequences(60, n_types=3, features="dict", random_state=0)
    sequences = SequenceVectorizer().fit_transform(X)
    rng = np.random.default_rng(0)
    state = rng.normal(size=(sequences.n_features, 3))
    transition = rng.normal(size=(3, 3))
    sums = {}
    for n_jobs in (1, 2, 3):
        data = ChunkedSequences(sequences, n_jobs=n_jobs, chunk_tokens=100)
        assert len(data.chunks) > 6
        sums[n_jobs] = data.sum(chunk_unlabeled_terms, state, transition, "lattice")
        # Every chunk is added once, whatever the share of the work.
        n_tokens, row_sums = data.sum(_chunk_rows, state)
        assert n_tokens == sequences.n_tokens
        np.testing.assert_allclose(row_sums, np.asarray(sequences.matrix.sum(axis=0)).ravel()
                                   @ state)
    for one, other in zip(sums[1], sums[2]):
        np.testing.assert_array_equal(one, other)
    for one, other in zip(sums[1], sums[3]):
        np.testing.assert_array_equal(one, other)
    # Two data sets in use at once (as labelled and unlabelled data are): the workers keep
    # each one's chunks apart.
    halves = [sequences[np.arange(30)], sequences[np.arange(30, 60)]]
    for _ in range(2):
        for half in halves:
            other = ChunkedSequences(half, n_jobs=2, chunk_tokens=100)
            assert other.sum(_chunk_rows, state)[0] == half.n_tokens
            assert data.sum(_chunk_rows, state)[0] == sequences.n_tokens
    folder = Path(data._paths[0]).parent
    assert folder.is_dir()
    del data
    gc.collect()
    assert not folder.exists()


def test_every_joblib_backend_gives_the_same_sums_and_joblib_still_works():
    X, _ = make_sequences(60, n_types=3, features="dict", random_state=0)
    sequences = SequenceVectorizer().fit_transform(X)
    state = np.random.default_rng(0).normal(size=(sequences.n_features, 3))
    expected = ChunkedSequences(sequences, n_jobs=1, chunk_tokens=100).sum(_chunk_rows, state)
    # The default backend uses a loky pool of this module's own; joblib's pools must be
    # left alone by it, before and after.
    assert Parallel(n_jobs=2)(delayed(abs)(k) for k in (-1, -2)) == [1, 2]
    for backend in (None, "threading", "multiprocessing", "loky"):
        with nullcontext() if backend is None else parallel_config(backend=backend):
            data = ChunkedSequences(sequences, n_jobs=2, chunk_tokens=100)
            for _ in range(2):
                for one, other in zip(expected, data.sum(_chunk_rows, state)):
                    np.testing.assert_array_equal(one, other)
        assert Parallel(n_jobs=2)(delayed(abs)(k) for k in (-1, -2)) == [1, 2]


def test_chunks_are_equal_shares_of_the_tokens():
    lengths = np.random.default_rng(0).integers(1, 30, size=400)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    bounds = _chunk_bounds(offsets, 1000)
    # Consecutive, covering every sequence once, as few chunks as the size allows.
    assert [first for first, _ in bounds] == [0] + [stop for _, stop in bounds[:-1]]
    assert bounds[-1][1] == lengths.size
    assert len(bounds) == -(-offsets[-1] // 1000)
    # Each cut is within one sequence of an equal share.
    sizes = np.array([offsets[stop] - offsets[first] for first, stop in bounds])
    assert np.abs(sizes - offsets[-1] / len(bounds)).max() <= lengths.max()
    # A sequence longer than a share makes a chunk of its own.
    bounds = _chunk_bounds(np.array([0, 3, 503, 506]), 100)
    assert (1, 2) in bounds


def test_attributes_stored_as_zero_pair_with_labels_and_leave_the_kernels():
    # python-crfsuite's False is the attribute with value 0: CRFsuite pairs it with the
    # token's label, and the product X @ W never needs it.
    matrix = sp.csr_matrix((np.array([1.0, 0.0, 2.0]), np.array([0, 0, 1]),
                            np.array([0, 1, 3])), shape=(2, 2))
    assert matrix.nnz == 3
    chunk = PackedSequences(matrix, [2], labels=[0, 1], n_labels=2)
    masks = observed_weight_masks([chunk], 2, all_possible_states=False)
    np.testing.assert_array_equal(masks["state_mask"], [[True, True], [False, True]])
    assert chunk.matrix.nnz == 2 and chunk.matrix.data.all()
    # Unknown labels (-1) pair nothing.
    partial = PackedSequences(matrix, [2], labels=[0, -1], n_labels=2)
    np.testing.assert_array_equal(
        observed_weight_masks([partial], 2, all_possible_states=False)["state_mask"],
        [[True, False], [False, False]])
