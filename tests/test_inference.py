"""Inference kernels against brute-force enumeration of every label sequence."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from sklearn_ssl_crf.inference import (
    ChainLayout,
    chain_lattice,
    forward_backward,
    viterbi,
    viterbi_batch,
)
from sklearn_ssl_crf.inference.chain import LogSpaceLattice, ScaledLattice, Workspace


def enumerate_chain(unary, transition):
    """All label sequences with their scores, straight from the definition."""
    n, n_labels = unary.shape
    sequences = np.array(list(itertools.product(range(n_labels), repeat=n)))
    scores = unary[np.arange(n), sequences].sum(axis=1)
    scores += transition[sequences[:, :-1], sequences[:, 1:]].sum(axis=1)
    return sequences, scores


def brute_force(unary, transition):
    n, n_labels = unary.shape
    sequences, scores = enumerate_chain(unary, transition)
    log_z = logsumexp(scores)
    p = np.exp(scores - log_z)
    node = np.zeros((n, n_labels))
    edge = np.zeros((max(n - 1, 0), n_labels, n_labels))
    for t in range(n):
        np.add.at(node[t], sequences[:, t], p)
    for t in range(1, n):
        np.add.at(edge[t - 1], (sequences[:, t - 1], sequences[:, t]), p)
    best = scores.argmax()
    return log_z, node, edge, sequences[best], scores[best]


chains = st.tuples(
    st.integers(1, 6), st.integers(1, 4), st.integers(0, 2**32 - 1), st.sampled_from([0.5, 3.0])
)


def random_chain(n, n_labels, seed, scale):
    rng = np.random.default_rng(seed)
    return rng.normal(scale=scale, size=(n, n_labels)), rng.normal(scale=scale,
                                                                   size=(n_labels, n_labels))


@settings(max_examples=150, deadline=None)
@given(chains)
def test_forward_backward_matches_enumeration(chain):
    unary, transition = random_chain(*chain)
    log_z, node, edge = forward_backward(unary, transition)
    expected_log_z, expected_node, expected_edge, _, _ = brute_force(unary, transition)
    assert abs(log_z - expected_log_z) < 1e-10
    np.testing.assert_allclose(node, expected_node, atol=1e-10, rtol=0)
    np.testing.assert_allclose(edge, expected_edge, atol=1e-10, rtol=0)


@settings(max_examples=150, deadline=None)
@given(chains)
def test_viterbi_matches_enumeration(chain):
    unary, transition = random_chain(*chain)
    path, score = viterbi(unary, transition)
    _, _, _, best_path, best_score = brute_force(unary, transition)
    assert abs(score - best_score) < 1e-10
    np.testing.assert_array_equal(path, best_path)


def ragged_batch(seed, lengths, n_labels=3, scale=1.0):
    """Potentials of chains of the given lengths, packed, plus each chain's own."""
    rng = np.random.default_rng(seed)
    chains = [rng.normal(scale=scale, size=(n, n_labels)) for n in lengths]
    transition = rng.normal(scale=scale, size=(n_labels, n_labels))
    layout = ChainLayout(lengths)
    stacked = np.concatenate(chains) if sum(lengths) else np.zeros((0, n_labels))
    return chains, transition, layout, stacked[layout.order]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=6), st.integers(0, 2**32 - 1))
def test_log_space_lattice_agrees_with_scaled(lengths, seed):
    _, transition, layout, unary = ragged_batch(seed, lengths)
    scaled = ScaledLattice(unary, transition, layout, Workspace())
    log_space = LogSpaceLattice(unary, transition, layout)
    np.testing.assert_allclose(scaled.log_z, log_space.log_z, rtol=1e-12)
    np.testing.assert_allclose(scaled.node_marginals(), log_space.node_marginals(), atol=1e-12)
    np.testing.assert_allclose(scaled.edge_marginals(), log_space.edge_marginals(), atol=1e-12)
    np.testing.assert_allclose(scaled.edge_marginal_sum(), log_space.edge_marginal_sum(),
                               atol=1e-12)


def test_single_position_chain():
    unary = np.array([[0.3, -1.0, 2.0]])
    log_z, node, edge = forward_backward(unary, np.ones((3, 3)) * 7)
    assert log_z == pytest.approx(logsumexp(unary[0]), abs=1e-12)
    np.testing.assert_allclose(node[0], np.exp(unary[0] - logsumexp(unary[0])))
    assert edge.shape == (0, 3, 3)
    path, score = viterbi(unary, np.zeros((3, 3)))
    assert path.tolist() == [2] and score == 2.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=8), st.integers(0, 2**32 - 1))
def test_batched_kernels_equal_single_chains(lengths, seed):
    """Chains of mixed lengths (empty ones too) packed together give each chain's own answer."""
    chains, transition, layout, unary = ragged_batch(seed, lengths)
    if layout.n_rows == 0:
        return
    lattice = chain_lattice(unary, transition, layout)
    node = np.empty_like(unary)
    node[layout.order] = lattice.node_marginals()
    paths = np.empty(layout.n_rows, dtype=np.int64)
    batch_paths, batch_scores = viterbi_batch(unary, transition, layout)
    paths[layout.order] = batch_paths
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    expected_edge_sum = np.zeros_like(transition)
    for i, chain in enumerate(chains):
        rows = slice(offsets[i], offsets[i + 1])
        if lengths[i] == 0:
            assert lattice.log_z[i] == 0.0 and batch_scores[i] == 0.0
            continue
        log_z, chain_node, chain_edge = forward_backward(chain, transition)
        assert lattice.log_z[i] == pytest.approx(log_z, abs=1e-12)
        np.testing.assert_allclose(node[rows], chain_node, atol=1e-13)
        path, score = viterbi(chain, transition)
        np.testing.assert_array_equal(paths[rows], path)
        assert batch_scores[i] == pytest.approx(score, abs=1e-12)
        expected_edge_sum += chain_edge.sum(axis=0)
    np.testing.assert_allclose(lattice.edge_marginal_sum(), expected_edge_sum, atol=1e-12)


def test_long_chain_with_large_potentials_stays_exact():
    """n = 10,000, potentials of magnitude 50: finite, normalised, and equal to log space."""
    rng = np.random.default_rng(0)
    unary = rng.uniform(-50, 50, size=(10_000, 5))
    transition = rng.uniform(-50, 50, size=(5, 5))
    log_z, node, edge = forward_backward(unary, transition)
    assert np.isfinite(log_z) and np.isfinite(node).all() and np.isfinite(edge).all()
    np.testing.assert_allclose(node.sum(axis=1), 1.0, atol=1e-9)
    reference = LogSpaceLattice(unary, transition, ChainLayout([10_000]))
    assert log_z == pytest.approx(reference.log_z[0], rel=1e-12)
    np.testing.assert_allclose(node, reference.node_marginals(), atol=1e-9)
    # The Viterbi score is a lower bound on log Z, within log of the number of paths.
    path, score = viterbi(unary, transition)
    assert score <= log_z <= score + 10_000 * np.log(5)
    reached = unary[np.arange(10_000), path].sum() + transition[path[:-1], path[1:]].sum()
    assert reached == pytest.approx(score, rel=1e-12)


def test_underflowing_transitions_fall_back_to_log_space():
    """Transition gaps beyond exp's range make the scaled recursion lose mass; the result
    must still be exact."""
    unary = np.array([[0.0, 900.0], [900.0, 0.0], [0.0, 0.0]])
    transition = np.array([[0.0, 900.0], [-900.0, 0.0]])
    assert not ScaledLattice(unary, transition, ChainLayout([3]), Workspace()).is_exact
    log_z, node, edge = forward_backward(unary, transition)
    expected_log_z, expected_node, expected_edge, _, _ = brute_force(unary, transition)
    assert log_z == pytest.approx(expected_log_z, rel=1e-12)
    np.testing.assert_allclose(node, expected_node, atol=1e-12)
    np.testing.assert_allclose(edge, expected_edge, atol=1e-12)


@pytest.mark.parametrize(
    "unary, transition, message",
    [
        (np.zeros((0, 3)), np.zeros((3, 3)), "unary must have shape"),
        (np.zeros(3), np.zeros((3, 3)), "unary must have shape"),
        (np.zeros((2, 3)), np.zeros((2, 2)), "transition must have shape"),
        (np.array([[np.nan, 0.0]]), np.zeros((2, 2)), "finite"),
        (np.zeros((2, 2)), np.array([[np.inf, 0], [0, 0]]), "finite"),
    ],
)
def test_bad_potentials_raise(unary, transition, message):
    with pytest.raises(ValueError, match=message):
        forward_backward(unary, transition)
    with pytest.raises(ValueError, match=message):
        viterbi(unary, transition)


def test_chain_layout():
    lengths = np.array([2, 0, 3, 2, 1])
    layout = ChainLayout(lengths)
    assert layout.sequence_order.tolist() == [2, 0, 3, 4, 1]  # decreasing, stable
    assert layout.batch_sizes.tolist() == [4, 3, 1]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    for t, size in enumerate(layout.batch_sizes):
        for slot in range(size):
            sequence = layout.sequence_order[slot]
            row = layout.block_starts[t] + slot
            assert layout.order[row] == offsets[sequence] + t
            assert layout.row_slots[row] == slot
            if t:
                # The same chain's row at t - 1 sits at the same slot of the previous block.
                previous = layout.block_starts[t - 1] + slot
                assert layout.order[previous] == offsets[sequence] + t - 1
    assert sorted(layout.order.tolist()) == list(range(lengths.sum()))
    np.testing.assert_array_equal(layout.per_sequence_sum(np.ones(layout.n_rows)), lengths)
