"""Second-order chains restricted to allowed pairs and triples (-inf transition entries)
against enumeration of the allowed label sequences, and against the dense recursions."""

import itertools

import numpy as np
import pytest
from enumeration_oracles import covariance, span_entropy
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from sklearn_ssl_crf.inference import ChainLayout, chain_lattice, viterbi_batch
from sklearn_ssl_crf.inference.chain import Workspace
from sklearn_ssl_crf.inference.entropy import (
    additive_expectation_batch,
    entropy_batch,
    position_entropies,
)
from sklearn_ssl_crf.inference.restricted import (
    PairStructure,
    RestrictedPairLattice,
    restricted_viterbi,
)
from sklearn_ssl_crf.inference.second_order import LogSpacePairLattice, PairLattice


def allowed_posterior(unary, transition):
    """Every allowed label sequence of one chain, its probability, and its indicators."""
    n, n_labels = unary.shape
    rows = []
    for y in itertools.product(range(n_labels), repeat=n):
        entries = [(n_labels if t == 1 else y[t - 2], y[t - 1], y[t]) for t in range(1, n)]
        if all(np.isfinite(transition[entry]) for entry in entries):
            counts = np.zeros(transition.shape)
            for entry in entries:
                counts[entry] += 1
            score = unary[np.arange(n), list(y)].sum() + sum(transition[e] for e in entries)
            rows.append((y, score, counts))
    paths = np.array([row[0] for row in rows]).reshape(len(rows), n)
    scores = np.array([row[1] for row in rows])
    log_z = logsumexp(scores)
    p = np.exp(scores - log_z)
    node = np.zeros((n, n_labels))
    for path, probability in zip(paths, p):
        node[np.arange(n), path] += probability
    path_counts = np.array([row[2] for row in rows])
    return paths, p, scores, log_z, node, path_counts


def restricted_chains(lengths, n_labels, seed, scale, share):
    """Chains with random potentials and a random restriction that leaves every chain at
    least one allowed labelling (the labels 0, 0, ... always are)."""
    rng = np.random.default_rng(seed)
    transition = rng.normal(scale=scale, size=(n_labels + 1, n_labels, n_labels))
    forbidden = rng.random(transition.shape) > share
    forbidden[:, 0, 0] = False
    forbidden[n_labels, 0, 0] = False
    forbidden[0, 1, 1] = True
    transition[forbidden] = -np.inf
    unary = [rng.normal(scale=scale, size=(n, n_labels)) for n in lengths]
    return unary, transition


chains = st.tuples(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.integers(2, 4),
                   st.integers(0, 2**32 - 1), st.sampled_from([0.5, 3.0]),
                   st.sampled_from([0.2, 0.4, 0.8]))


@settings(max_examples=100, deadline=None)
@given(chains)
def test_restricted_lattice_matches_enumeration(chain):
    unary, transition = restricted_chains(*chain)
    lengths = [len(u) for u in unary]
    layout = ChainLayout(lengths)
    packed = np.concatenate(unary)[layout.order]
    # The lattice `chain_lattice` picks, and the restricted recursions in every case.
    lattices = [chain_lattice(packed, transition, layout),
                RestrictedPairLattice(packed, transition, layout,
                                      PairStructure(np.isfinite(transition)), Workspace())]
    dense_enough = PairStructure.of(transition) is None
    assert isinstance(lattices[0], PairLattice if dense_enough else RestrictedPairLattice)
    expected = [allowed_posterior(u, transition) for u in unary]
    starts = np.cumsum([0] + lengths)
    structure = PairStructure(np.isfinite(transition))
    for paths, scores in [viterbi_batch(packed, transition, layout),
                          restricted_viterbi(packed, transition, layout, structure)]:
        labels = np.empty_like(paths)
        labels[layout.order] = paths
        for i, (all_paths, p, path_scores, *_) in enumerate(expected):
            # A best allowed labelling (any of tied ones).
            assert scores[i] == pytest.approx(path_scores.max(), abs=1e-10)
            found = {tuple(path): score for path, score in zip(all_paths, path_scores)}
            best = tuple(labels[starts[i]:starts[i + 1]])
            assert best in found and found[best] == pytest.approx(scores[i], abs=1e-10)
    for lattice in lattices:
        node = lattice.node_marginals()[np.argsort(layout.order)]
        for i, (all_paths, p, path_scores, log_z, expected_node, counts) in enumerate(expected):
            assert lattice.log_z[i] == pytest.approx(log_z, abs=1e-10)
            np.testing.assert_allclose(node[starts[i]:starts[i + 1]], expected_node,
                                       atol=1e-10)
        np.testing.assert_allclose(lattice.edge_marginal_sum(),
                                   sum(np.tensordot(row[1], row[-1], axes=1)
                                       for row in expected), atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(chains, st.booleans())
def test_restricted_entropy_and_expectation_match_enumeration(chain, with_b):
    unary, transition = restricted_chains(*chain)
    layout = ChainLayout([len(u) for u in unary])
    packed = np.concatenate(unary)[layout.order]
    rng = np.random.default_rng(0)
    terms = rng.normal(size=packed.shape)
    transition_terms = rng.normal(size=transition.shape) if with_b else None
    lattice = RestrictedPairLattice(packed, transition, layout,
                                    PairStructure(np.isfinite(transition)), Workspace())
    expectation, d_unary, d_transition = additive_expectation_batch(lattice, terms,
                                                                    transition_terms)
    entropy, *_ = entropy_batch(packed, transition, layout)
    unordered_terms = terms[np.argsort(layout.order)]
    unordered_d_unary = d_unary[np.argsort(layout.order)]
    offset = 0
    expected_d_transition = np.zeros(transition.shape)
    for i, u in enumerate(unary):
        n, n_labels = u.shape
        paths, p, scores, log_z, _, path_counts = allowed_posterior(u, transition)
        g = unordered_terms[offset:offset + n][np.arange(n), paths].sum(axis=1)
        if with_b:
            g = g + np.tensordot(path_counts, transition_terms, axes=3)
        assert expectation[i] == pytest.approx(p @ g, abs=1e-9)
        assert entropy[i] == pytest.approx(-(p * np.log(p)).sum(), abs=1e-9)
        # The gradients w.r.t. the potentials: Cov(g, indicators).
        indicators = np.zeros((len(paths), n, n_labels))
        indicators[np.arange(len(paths))[:, None], np.arange(n), paths] = 1.0
        np.testing.assert_allclose(unordered_d_unary[offset:offset + n],
                                   covariance(p, g, indicators), atol=1e-9)
        expected_d_transition += covariance(p, g, path_counts)
        offset += n
    np.testing.assert_allclose(d_transition, expected_d_transition, atol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_everything_allowed_equals_dense_recursions(seed):
    rng = np.random.default_rng(seed)
    n_labels = 4
    layout = ChainLayout([7, 3, 1, 5])
    unary = rng.normal(scale=2.0, size=(layout.n_rows, n_labels))
    transition = rng.normal(scale=2.0, size=(n_labels + 1, n_labels, n_labels))
    structure = PairStructure(np.ones(transition.shape, dtype=bool))
    restricted = RestrictedPairLattice(unary, transition, layout, structure, Workspace())
    dense = PairLattice(unary, transition, layout, Workspace())
    np.testing.assert_allclose(restricted.log_z, dense.log_z, rtol=1e-12)
    np.testing.assert_allclose(restricted.node_marginals(), dense.node_marginals(),
                               atol=1e-12)
    np.testing.assert_allclose(restricted.edge_marginal_sum(), dense.edge_marginal_sum(),
                               atol=1e-10)


def test_restricted_chain_far_below_the_row_maxima_falls_back_to_log_space():
    # Only label 0 may follow the start and itself, while label 1 leads every row by 800
    # nats: the scaled recursion underflows, log space is exact.
    transition = np.full((3, 2, 2), -np.inf)
    transition[:, 0, 0] = [0.5, -np.inf, 0.25]
    unary = np.column_stack([np.linspace(-1.0, 1.0, 5), np.full(5, 800.0)])
    lattice = chain_lattice(unary, transition, ChainLayout([5]))
    assert isinstance(lattice, LogSpacePairLattice)
    assert lattice.log_z[0] == pytest.approx(unary[:, 0].sum() + 0.25 + 3 * 0.5, abs=1e-12)
    np.testing.assert_allclose(lattice.node_marginals(), [[1.0, 0.0]] * 5, atol=1e-12)


def test_chain_without_allowed_labelling_has_zero_probability():
    # Only (0, 0) may follow the start and nothing may follow it: no chain of 3 labels.
    transition = np.full((3, 2, 2), -np.inf)
    transition[2, 0, 0] = 0.0
    lattice = chain_lattice(np.zeros((3, 2)), transition, ChainLayout([3]))
    assert lattice.log_z[0] == -np.inf


@settings(max_examples=60, deadline=None)
@given(chains, st.data())
def test_restricted_span_entropies_match_enumeration(chain, data):
    # Through the batched per-position entropies the estimators use: a span's entropy is
    # node at its first row, pair_conditional at its second, conditional over the rest.
    unary, transition = restricted_chains(*chain)
    unary = unary[0]
    n = unary.shape[0]
    start = data.draw(st.integers(0, n - 1))
    stop = data.draw(st.integers(start + 1, n))
    layout = ChainLayout([n])
    node, pair, conditional = position_entropies(chain_lattice(unary[layout.order],
                                                               transition, layout))
    node, pair, conditional = (values[np.argsort(layout.order)]
                               for values in (node, pair, conditional))
    entropy = node[start] + (pair[start + 1] if stop > start + 1 else 0.0)
    entropy += conditional[start + 2:stop].sum()
    paths, p, *_ = allowed_posterior(unary, transition)
    assert entropy == pytest.approx(span_entropy(paths, p, start, stop), abs=1e-9)
