"""Chunked data: the same sums in one process or several, and no files left behind."""

import gc
import tracemalloc
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed, parallel_config
from memory_cap import run_capped

from sklearn_ssl_crf import SequenceMatrix
from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.features import SequenceVectorizer
from sklearn_ssl_crf.objective._weights import chunk_unlabeled_terms
from sklearn_ssl_crf.parallel import ChunkedSequences
from sklearn_ssl_crf.parallel._chunked import _chunk_bounds
from sklearn_ssl_crf.parallel._tree import _range_sum, _ranges_results, _tree_ranges
from sklearn_ssl_crf.potentials import PackedSequences, marginal_unit, observed_weight_masks


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


def _dense_group_sums(chunk, workspace, values):
    """A chunk's rows of ``values`` (its slice of the corpus's, by packed position) summed
    by group as the whole (n_groups, k) array: what every chunk returned before
    `GroupSums`."""
    return (chunk.group_sums(values[chunk.first:chunk.first + chunk.n_tokens]).toarray(),)


def _compact_group_sums(chunk, workspace, values):
    return (chunk.group_sums(values[chunk.first:chunk.first + chunk.n_tokens]),)


def _grouped_chunks(n_groups, seed):
    """Chunks of 80 short sequences whose tokens have groups (a fifth none), each chunk's
    ``first`` token set, and their groups."""
    X, _ = make_sequences(80, n_types=3, features="dict", random_state=1)
    sequences = SequenceVectorizer().fit_transform(X)
    rng = np.random.default_rng(seed)
    groups = np.where(rng.random(sequences.n_tokens) < 0.2, -1,
                      rng.integers(n_groups, size=sequences.n_tokens))
    data = ChunkedSequences(sequences, groups=groups, n_groups=n_groups, chunk_tokens=40)
    assert len(data.chunks) > 8
    first = 0
    for chunk in data.chunks:
        chunk.first, first = first, first + chunk.n_tokens
    return data, groups, rng


def _sums_by_group(data, groups, values, n_groups):
    """The rows of ``values`` summed by group: a chunk's rows of ``values`` are its packed
    tokens, its packed token i its token layout.order[i] (chunks take consecutive tokens)."""
    packed_groups = np.concatenate([groups[chunk.first:chunk.first + chunk.n_tokens][
        chunk.layout.order] for chunk in data.chunks])
    expected = np.zeros((n_groups, values.shape[1]))
    known = packed_groups >= 0
    np.add.at(expected, packed_groups[known], values[known])
    return expected


def test_group_sums_over_chunks_are_the_dense_sums_to_the_bit():
    n_groups = 500
    data, groups, rng = _grouped_chunks(n_groups, 1)
    # Values of many magnitudes, so that the order of the additions shows in the last bits.
    values = rng.normal(size=(groups.size, 3)) * 10.0 ** rng.integers(-8, 8, size=(
        groups.size, 1))
    compact = data.sum(_compact_group_sums, values)[0]
    assert compact.ids.size < n_groups  # the sums hold only the groups some token has
    np.testing.assert_array_equal(compact.toarray(), data.sum(_dense_group_sums, values)[0])
    np.testing.assert_allclose(compact.toarray(), _sums_by_group(data, groups, values,
                                                                 n_groups), rtol=1e-12)


def _marginal_sums(chunk, workspace, marginals, unit):
    return (1.5, chunk.marginal_sums(marginals[chunk.first:chunk.first + chunk.n_tokens],
                                     unit))


def test_marginal_sums_are_exact_in_any_order_and_over_any_ranges():
    """Sums of marginals by group are integers in a unit small enough for every group's
    tokens: the chunks' add exactly, into one total, the same for any order and any ranges
    computed elsewhere (workers), and they are the float sums to within the unit."""
    n_groups = 300
    data, groups, rng = _grouped_chunks(n_groups, 2)
    n_chunks = len(data.chunks)
    marginals = rng.dirichlet(np.ones(3), size=groups.size)
    counts = np.bincount(groups[groups >= 0], minlength=n_groups)
    unit = marginal_unit(counts)
    assert unit == 2.0 ** -(62 - int(counts.max()).bit_length())
    log_z, total = data.sum(_marginal_sums, marginals, unit)
    assert total.ids is None and total.rows.dtype == np.int64
    assert log_z == 1.5 * n_chunks  # the float terms still go along the tree
    leaf = _chunked_leaf(data, marginals, unit)
    reordered = leaf(n_chunks - 1)[1].zero_total()
    for k in rng.permutation(n_chunks):
        reordered.add(leaf(k)[1])
    # Ranges summed elsewhere, as workers do (their exact total with their first range).
    ranges = _tree_ranges(n_chunks, 4)
    remote = ranges[1:]
    elsewhere = iter(_ranges_results(remote, leaf, True))
    shared = _range_sum(0, n_chunks, leaf, set(remote), elsewhere)
    assert shared[0] == log_z
    tables = [total.take_array(), reordered.take_array(), shared[1].take_array()]
    np.testing.assert_array_equal(tables[0], tables[1])
    np.testing.assert_array_equal(tables[0], tables[2])
    np.testing.assert_allclose(tables[0], _sums_by_group(data, groups, marginals, n_groups),
                               rtol=1e-14, atol=n_chunks * unit)


def _chunked_leaf(data, marginals, unit):
    return lambda k: list(_marginal_sums(data.chunks[k], None, marginals, unit))


def test_marginal_sums_over_many_chunks_hold_one_table():
    """The chunks' sums of marginals go into one (groups x labels) table as they come: the
    sum over 40 chunks of a graph's vertices, as floats, peaks at about one table, where a
    tree of float partial sums and their dense copy held three."""
    rng = np.random.default_rng(0)
    n_tokens = n_groups = 200_000
    n_labels = 4
    lengths = np.full(n_tokens // 10, 10)
    matrix = sp.csr_matrix((np.ones(n_tokens), np.zeros(n_tokens, dtype=np.int32),
                            np.arange(n_tokens + 1)), shape=(n_tokens, 1))
    sequences = SequenceMatrix(matrix, np.concatenate([[0], np.cumsum(lengths)]))
    groups = rng.permutation(n_groups)  # each token its own vertex
    data = ChunkedSequences(sequences, groups=groups, n_groups=n_groups, chunk_tokens=5_000)
    assert len(data.chunks) == 40
    first = 0
    for chunk in data.chunks:
        chunk.first, first = first, first + chunk.n_tokens
    marginals = rng.dirichlet(np.ones(n_labels), size=n_tokens)
    table_bytes = n_groups * n_labels * 8
    tracemalloc.start()
    try:
        _, total = data.sum(_marginal_sums, marginals, 2.0 ** -40)
        sums = total.take_array()  # as floats, in the same table
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * table_bytes, peak / table_bytes  # with one block converted at a time
    assert abs(sums.sum() - n_tokens) < 1e-6


def test_an_e_step_over_a_large_graph_holds_each_chunks_own_vertices():
    # 40 chunks over 3 million vertices: each chunk kept q's sums over every vertex (72 MB)
    # and an indicator row for each (12 MB), 3.4 GB in all; 600 MB must do.
    outcome = run_capped("""
        import numpy as np
        import scipy.sparse as sp
        from sklearn_ssl_crf import SequenceMatrix
        from sklearn_ssl_crf.objective._posterior_regularization import (
            _chunk_auxiliary_statistics)
        from sklearn_ssl_crf.parallel import ChunkedSequences

        rng = np.random.default_rng(0)
        n_tokens, n_vertices = 40_000, 3_000_000
        matrix = sp.random(n_tokens, 50, density=0.06, format="csr", random_state=0)
        sequences = SequenceMatrix(matrix, np.arange(0, n_tokens + 1, 10))
        groups = rng.integers(n_vertices, size=n_tokens)
        data = ChunkedSequences(sequences, groups=groups, n_groups=n_vertices,
                                chunk_tokens=1_000)
        assert len(data.chunks) == 40
        offsets = np.zeros((n_vertices, 3))
        offsets[groups[:5]] = 1.0
        for _ in range(2):
            log_z, sums = data.sum(_chunk_auxiliary_statistics, rng.normal(size=(50, 3)),
                                   np.zeros((3, 3)), offsets, 2.0 ** -40, False)
        # Each token's marginals sum to 1.
        assert abs(sums.take_array().sum() - n_tokens) < 1e-6
    """, extra_bytes=600 * 2**20)
    assert outcome["error"] is None, outcome
