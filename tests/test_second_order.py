"""Second-order kernels against brute-force enumeration of every label sequence."""

import itertools

import numpy as np
import pytest
from enumeration_oracles import covariance, span_entropy
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from sklearn_ssl_crf.inference import (
    ChainLayout,
    additive_expectation,
    chain_lattice,
    chain_statistics,
    entropy_gradient,
    forward_backward,
    sequence_entropy,
    subsequence_entropy,
    viterbi,
    viterbi_batch,
)
from sklearn_ssl_crf.inference.chain import Workspace
from sklearn_ssl_crf.inference.entropy import additive_expectation_batch, position_entropies
from sklearn_ssl_crf.inference.second_order import LogSpacePairLattice, PairLattice


def transition_indicators(paths, n_labels):
    """(n_paths, S + 1, S, S) counts of each transition-tensor entry in each path."""
    counts = np.zeros((len(paths), n_labels + 1, n_labels, n_labels))
    for k, y in enumerate(paths):
        for t in range(1, len(y)):
            counts[k, n_labels if t == 1 else y[t - 2], y[t - 1], y[t]] += 1
    return counts


def enumerate_posterior(unary, transition):
    """Every label sequence, its probability, and its unary and transition indicators."""
    n, n_labels = unary.shape
    paths = np.array(list(itertools.product(range(n_labels), repeat=n)))
    unary_features = np.zeros((len(paths), n, n_labels))
    unary_features[np.arange(len(paths))[:, None], np.arange(n), paths] = 1.0
    transition_features = transition_indicators(paths, n_labels)
    scores = (np.einsum("pts,ts->p", unary_features, unary)
              + np.einsum("pabc,abc->p", transition_features, transition))
    log_z = logsumexp(scores)
    return paths, np.exp(scores - log_z), log_z, scores, unary_features, transition_features


def random_chain(n, n_labels, seed, scale):
    rng = np.random.default_rng(seed)
    return (rng.normal(scale=scale, size=(n, n_labels)),
            rng.normal(scale=scale, size=(n_labels + 1, n_labels, n_labels)))


chains = st.tuples(st.integers(1, 6), st.integers(1, 4), st.integers(0, 2**32 - 1),
                   st.sampled_from([0.5, 3.0]))


@settings(max_examples=120, deadline=None)
@given(chains)
def test_forward_backward_and_viterbi_match_enumeration(chain):
    unary, transition = random_chain(*chain)
    n, n_labels = unary.shape
    paths, p, expected_log_z, scores, unary_features, transition_features = \
        enumerate_posterior(unary, transition)
    log_z, node, edges = forward_backward(unary, transition)
    assert abs(log_z - expected_log_z) < 1e-10
    np.testing.assert_allclose(node, np.tensordot(p, unary_features, axes=1), atol=1e-10)
    expected_edges = np.zeros((max(n - 1, 0), n_labels, n_labels))
    for t in range(1, n):
        np.add.at(expected_edges[t - 1], (paths[:, t - 1], paths[:, t]), p)
    np.testing.assert_allclose(edges, expected_edges, atol=1e-10)
    # Expected transition counts: the gradient of log Z w.r.t. the transition tensor.
    lattice = chain_lattice(unary, transition, ChainLayout([n]))
    np.testing.assert_allclose(lattice.edge_marginal_sum(),
                               np.tensordot(p, transition_features, axes=1), atol=1e-10)
    log_z_single, node_single, counts_single = chain_statistics(unary, transition)
    assert abs(log_z_single - expected_log_z) < 1e-10
    np.testing.assert_allclose(counts_single, lattice.edge_marginal_sum(), atol=1e-12)

    path, best_score = viterbi(unary, transition)
    assert abs(best_score - scores.max()) < 1e-10
    np.testing.assert_array_equal(path, paths[scores.argmax()])


@settings(max_examples=120, deadline=None)
@given(chains, st.booleans(), st.booleans())
def test_entropy_and_additive_gradients_match_enumeration(chain, with_a, with_b):
    unary, transition = random_chain(*chain)
    n, n_labels = unary.shape
    paths, p, _, scores, unary_features, transition_features = enumerate_posterior(
        unary, transition)
    entropy = -(p * np.log(p)).sum()
    assert abs(sequence_entropy(unary, transition) - entropy) < 1e-10
    # The gradient of sum p log p is Cov(score, features).
    d_unary, d_transition = entropy_gradient(unary, transition)
    np.testing.assert_allclose(d_unary, covariance(p, scores, unary_features), atol=1e-10)
    np.testing.assert_allclose(d_transition, covariance(p, scores, transition_features),
                               atol=1e-10)

    rng = np.random.default_rng(chain[2] + 1)
    a = rng.normal(size=unary.shape) if with_a else None
    b = rng.normal(size=transition.shape) if with_b else None
    g = np.zeros(len(paths))
    if with_a:
        g += np.einsum("pts,ts->p", unary_features, a)
    if with_b:
        g += np.einsum("pabc,abc->p", transition_features, b)
    expectation, d_unary, d_transition = additive_expectation(unary, transition, a, b)
    assert abs(expectation - p @ g) < 1e-10
    np.testing.assert_allclose(d_unary, covariance(p, g, unary_features), atol=1e-10)
    np.testing.assert_allclose(d_transition, covariance(p, g, transition_features),
                               atol=1e-10)


@settings(max_examples=80, deadline=None)
@given(chains, st.data())
def test_span_entropies_match_enumeration(chain, data):
    unary, transition = random_chain(*chain)
    n = unary.shape[0]
    start = data.draw(st.integers(0, n - 1))
    stop = data.draw(st.integers(start + 1, n))
    paths, p, *_ = enumerate_posterior(unary, transition)
    expected = span_entropy(paths, p, start, stop)
    assert abs(subsequence_entropy(unary, transition, start, stop) - expected) < 1e-10


def log_space(unary, transition, layout):
    return LogSpacePairLattice(unary, transition, layout)


@pytest.mark.parametrize("seed", range(4))
def test_log_space_lattice_and_recursions_agree_with_scaled(seed):
    rng = np.random.default_rng(seed)
    lengths = [5, 1, 3, 0, 5, 2]
    layout = ChainLayout(lengths)
    unary = rng.normal(size=(layout.n_rows, 3))
    transition = rng.normal(size=(4, 3, 3))
    a = rng.normal(size=unary.shape)
    b = rng.normal(size=transition.shape)
    scaled = PairLattice(unary, transition, layout, Workspace())
    exact = LogSpacePairLattice(unary, transition, layout)
    assert scaled.is_exact
    np.testing.assert_allclose(scaled.log_z, exact.log_z, atol=1e-12)
    np.testing.assert_allclose(scaled.node_marginals(), exact.node_marginals(), atol=1e-12)
    np.testing.assert_allclose(scaled.edge_marginal_sum(), exact.edge_marginal_sum(),
                               atol=1e-12)
    for one, other in zip(additive_expectation_batch(scaled, a, b),
                          additive_expectation_batch(exact, a, b)):
        np.testing.assert_allclose(one, other, atol=1e-10)
    for one, other in zip(position_entropies(scaled), position_entropies(exact)):
        np.testing.assert_allclose(one, other, atol=1e-10)


def test_batched_kernels_equal_single_chains():
    rng = np.random.default_rng(3)
    lengths = [4, 0, 1, 6, 2, 4]
    chains = [rng.normal(size=(n, 3)) for n in lengths]
    transition = rng.normal(size=(4, 3, 3))
    layout = ChainLayout(lengths)
    unary = np.concatenate(chains)[layout.order]
    lattice = chain_lattice(unary, transition, layout)
    paths, best = viterbi_batch(unary, transition, layout)
    node = np.empty_like(unary)
    node[layout.order] = lattice.node_marginals()
    labels = np.empty(layout.n_rows, dtype=np.int64)
    labels[layout.order] = paths
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    counts = np.zeros_like(transition)
    for i, chain in enumerate(chains):
        if len(chain) == 0:
            assert lattice.log_z[i] == 0.0 and best[i] == 0.0
            continue
        log_z, chain_node, _ = forward_backward(chain, transition)
        path, score = viterbi(chain, transition)
        assert abs(lattice.log_z[i] - log_z) < 1e-12 and abs(best[i] - score) < 1e-12
        np.testing.assert_allclose(node[offsets[i]:offsets[i + 1]], chain_node, atol=1e-12)
        np.testing.assert_array_equal(labels[offsets[i]:offsets[i + 1]], path)
        counts += chain_lattice(chain, transition, ChainLayout([len(chain)])).edge_marginal_sum()
    np.testing.assert_allclose(lattice.edge_marginal_sum(), counts, atol=1e-12)


@pytest.mark.parametrize("n_labels", [1, 3])
def test_second_order_weights_zero_is_first_order(n_labels):
    rng = np.random.default_rng(0)
    unary = rng.normal(size=(7, n_labels))
    first_order = rng.normal(size=(n_labels, n_labels))
    second_order = np.broadcast_to(first_order, (n_labels + 1, n_labels, n_labels))
    for one, other in zip(forward_backward(unary, first_order),
                          forward_backward(unary, second_order)):
        np.testing.assert_allclose(one, other, atol=1e-12)
    assert viterbi(unary, first_order)[0].tolist() == viterbi(unary, second_order)[0].tolist()
    np.testing.assert_allclose(entropy_gradient(unary, first_order)[0],
                               entropy_gradient(unary, second_order)[0], atol=1e-12)
    assert abs(sequence_entropy(unary, first_order)
               - sequence_entropy(unary, second_order)) < 1e-12


def test_long_chain_with_large_potentials():
    rng = np.random.default_rng(1)
    n, n_labels = 10_000, 3
    unary = rng.uniform(-50, 50, size=(n, n_labels))
    transition = rng.uniform(-50, 50, size=(n_labels + 1, n_labels, n_labels))
    layout = ChainLayout([n])
    scaled = chain_lattice(unary, transition, layout)
    assert isinstance(scaled, PairLattice)
    # The scaled recursion against log space, and Viterbi's score against the path's.
    exact = LogSpacePairLattice(unary, transition, layout)
    assert np.isfinite(scaled.log_z).all()
    assert abs(scaled.log_z[0] - exact.log_z[0]) < 1e-9 * abs(exact.log_z[0])
    np.testing.assert_allclose(scaled.node_marginals(), exact.node_marginals(), atol=1e-9)
    # Expected counts: n - 1 transitions, marginalising to the node marginals. (Log space
    # is less precise here: exp(x - log Z) with log Z near 4e5 loses about 1e-11 per term.)
    counts = scaled.edge_marginal_sum()
    assert abs(counts.sum() - (n - 1)) < 1e-9
    np.testing.assert_allclose(counts.sum(axis=(0, 1)),
                               scaled.node_marginals()[1:].sum(axis=0), atol=1e-9)
    np.testing.assert_allclose(counts, exact.edge_marginal_sum(), rtol=1e-6)
    path, best = viterbi(unary, transition)
    score = (unary[np.arange(n), path].sum() + transition[n_labels, path[0], path[1]]
             + transition[path[:-2], path[1:-1], path[2:]].sum())
    assert abs(best - score) < 1e-12 * abs(score)
    assert best <= scaled.log_z[0] <= best + n * np.log(n_labels)
    expectation, d_unary, d_transition = additive_expectation_batch(scaled, unary, transition)
    assert np.isfinite(expectation).all() and np.isfinite(d_unary).all()
    assert np.isfinite(d_transition).all()


def test_underflowing_potentials_fall_back_to_log_space():
    unary = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    transition = np.zeros((3, 2, 2))
    # Labels 0 then 1 are all but forbidden, yet the only way to the huge unary of label 1.
    transition[2, 0, 0] = 900.0
    transition[:, 0, 1] = -2000.0
    unary[2, 1] = 1500.0
    lattice = chain_lattice(unary, transition, ChainLayout([3]))
    assert isinstance(lattice, LogSpacePairLattice)
    paths, p, log_z, *_ = enumerate_posterior(unary, transition)
    assert abs(lattice.log_z[0] - log_z) < 1e-9
    np.testing.assert_allclose(lattice.node_marginals(),
                               forward_backward(unary, transition)[1], atol=1e-12)


def test_bad_second_order_shape():
    with pytest.raises(ValueError, match=r"\(3, 2, 2\) \(second order\)"):
        forward_backward(np.zeros((3, 2)), np.zeros((2, 2, 2)))
