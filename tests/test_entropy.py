"""Entropy lattices against brute-force enumeration of every label sequence."""

import itertools

import numpy as np
import pytest
from enumeration_oracles import covariance, span_entropy
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from sklearn_ssl_crf.inference import ChainLayout, Workspace, chain_lattice
from sklearn_ssl_crf.inference.chain import LogSpaceLattice, ScaledLattice
from sklearn_ssl_crf.inference.entropy import (
    additive_expectation,
    additive_expectation_batch,
    entropy_batch,
    entropy_gradient,
    position_entropies,
    sequence_entropy,
    subsequence_entropy,
)


def enumerate_posterior(unary, transition):
    """Every label sequence, its probability and log-probability."""
    n, n_labels = unary.shape
    paths = np.array(list(itertools.product(range(n_labels), repeat=n)))
    scores = unary[np.arange(n), paths].sum(axis=1)
    scores += transition[paths[:, :-1], paths[:, 1:]].sum(axis=1)
    log_p = scores - logsumexp(scores)
    return paths, np.exp(log_p), log_p


def indicator_features(paths, n_labels):
    """F[y, k] for every path: unary indicators (n * S) then transition counts (S * S)."""
    n = paths.shape[1]
    unary = (paths[:, :, None] == np.arange(n_labels)).reshape(len(paths), n * n_labels)
    pairs = paths[:, :-1] * n_labels + paths[:, 1:]
    transition = np.stack([(pairs == k).sum(axis=1) for k in range(n_labels ** 2)], axis=1)
    return np.concatenate([unary, transition], axis=1).astype(float)


chains = st.tuples(st.integers(1, 6), st.integers(1, 4), st.integers(0, 2**32 - 1),
                   st.sampled_from([0.5, 2.0]))


def random_chain(n, n_labels, seed, scale):
    rng = np.random.default_rng(seed)
    return (rng.normal(scale=scale, size=(n, n_labels)),
            rng.normal(scale=scale, size=(n_labels, n_labels)))


@settings(max_examples=100, deadline=None)
@given(chains)
def test_entropy_and_its_gradient_match_enumeration(chain):
    unary, transition = random_chain(*chain)
    n, n_labels = unary.shape
    paths, p, log_p = enumerate_posterior(unary, transition)
    assert sequence_entropy(unary, transition) == pytest.approx(-(p @ log_p), abs=1e-10)
    # d/dtheta sum_y p log p = Cov(F, log p)
    expected = covariance(p, log_p, indicator_features(paths, n_labels))
    d_unary, d_transition = entropy_gradient(unary, transition)
    np.testing.assert_allclose(d_unary.ravel(), expected[:n * n_labels], atol=1e-10)
    np.testing.assert_allclose(d_transition.ravel(), expected[n * n_labels:], atol=1e-10)


@settings(max_examples=100, deadline=None)
@given(chains, st.data())
def test_subsequence_entropy_matches_enumeration(chain, data):
    unary, transition = random_chain(*chain)
    n = unary.shape[0]
    start = data.draw(st.integers(0, n - 1))
    stop = data.draw(st.integers(start + 1, n))
    paths, p, _ = enumerate_posterior(unary, transition)
    expected = span_entropy(paths, p, start, stop)
    assert subsequence_entropy(unary, transition, start, stop) == pytest.approx(expected,
                                                                                abs=1e-10)


@settings(max_examples=60, deadline=None)
@given(chains)
def test_additive_expectation_gradient_matches_enumeration(chain):
    unary, transition = random_chain(*chain)
    n, n_labels = unary.shape
    rng = np.random.default_rng(chain[2] + 1)
    a, b = rng.normal(size=(n, n_labels)), rng.normal(size=(n_labels, n_labels))
    paths, p, _ = enumerate_posterior(unary, transition)
    g = a[np.arange(n), paths].sum(axis=1) + b[paths[:, :-1], paths[:, 1:]].sum(axis=1)
    expected = covariance(p, g, indicator_features(paths, n_labels))
    value, d_unary, d_transition = additive_expectation(unary, transition, a, b)
    assert value == pytest.approx(p @ g, abs=1e-10)
    np.testing.assert_allclose(d_unary.ravel(), expected[:n * n_labels], atol=1e-10)
    np.testing.assert_allclose(d_transition.ravel(), expected[n * n_labels:], atol=1e-10)


def test_label_proportion_gradient_matches_finite_differences():
    """KL(pi || mean token marginals) over two chains: its gradient is an additive-function
    covariance with a[t, s] = -pi_s / (N * pi_hat_s)."""
    rng = np.random.default_rng(5)
    n_labels = 3
    chains = [rng.normal(size=(n, n_labels)) for n in (3, 4)]
    transition = rng.normal(size=(n_labels, n_labels))
    target = np.array([0.6, 0.3, 0.1])
    n_tokens = sum(len(c) for c in chains)

    def kl(unaries, transition):
        marginals = [chain_lattice(u, transition, ChainLayout([len(u)])).node_marginals()
                     for u in unaries]
        predicted = np.concatenate(marginals).mean(axis=0)
        return target @ np.log(target / predicted), predicted

    value, predicted = kl(chains, transition)
    weights = -target / (n_tokens * predicted)
    gradients = [additive_expectation(u, transition, np.tile(weights, (len(u), 1)))
                 for u in chains]
    d_transition = sum(g[2] for g in gradients)
    step = 1e-6
    for c, (_, d_unary, _) in enumerate(gradients):
        for t, s in itertools.product(range(len(chains[c])), range(n_labels)):
            shifted = [u.copy() for u in chains]
            shifted[c][t, s] += step
            up = kl(shifted, transition)[0]
            shifted[c][t, s] -= 2 * step
            numeric = (up - kl(shifted, transition)[0]) / (2 * step)
            assert numeric == pytest.approx(d_unary[t, s], abs=1e-7)
    for i, j in itertools.product(range(n_labels), repeat=2):
        shifted = transition.copy()
        shifted[i, j] += step
        up = kl(chains, shifted)[0]
        shifted[i, j] -= 2 * step
        assert (up - kl(chains, shifted)[0]) / (2 * step) == pytest.approx(d_transition[i, j],
                                                                           abs=1e-7)


def test_entropy_gradient_matches_finite_differences():
    rng = np.random.default_rng(2)
    unary, transition = rng.normal(size=(5, 3)), rng.normal(size=(3, 3))
    d_unary, d_transition = entropy_gradient(unary, transition)
    step = 1e-6
    for index in itertools.product(range(5), range(3)):
        shifted = unary.copy()
        shifted[index] += step
        up = -sequence_entropy(shifted, transition)
        shifted[index] -= 2 * step
        numeric = (up + sequence_entropy(shifted, transition)) / (2 * step)
        assert numeric == pytest.approx(d_unary[index], abs=1e-7)
    for index in itertools.product(range(3), repeat=2):
        shifted = transition.copy()
        shifted[index] += step
        up = -sequence_entropy(unary, shifted)
        shifted[index] -= 2 * step
        numeric = (up + sequence_entropy(unary, shifted)) / (2 * step)
        assert numeric == pytest.approx(d_transition[index], abs=1e-7)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=7), st.integers(0, 2**32 - 1))
def test_batched_entropy_equals_single_chains(lengths, seed):
    rng = np.random.default_rng(seed)
    chains = [rng.normal(size=(n, 3)) for n in lengths]
    transition = rng.normal(size=(3, 3))
    layout = ChainLayout(lengths)
    if layout.n_rows == 0:
        return
    stacked = np.concatenate(chains)
    entropies, d_unary, d_transition = entropy_batch(stacked[layout.order], transition, layout)
    unpacked = np.empty_like(d_unary)
    unpacked[layout.order] = d_unary
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    expected_transition = np.zeros((3, 3))
    for i, chain in enumerate(chains):
        if not len(chain):
            assert entropies[i] == 0.0
            continue
        assert entropies[i] == pytest.approx(sequence_entropy(chain, transition), abs=1e-12)
        single_unary, single_transition = entropy_gradient(chain, transition)
        np.testing.assert_allclose(unpacked[offsets[i]:offsets[i + 1]], single_unary,
                                   atol=1e-12)
        expected_transition += single_transition
    np.testing.assert_allclose(d_transition, expected_transition, atol=1e-11)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=7).filter(any), st.integers(1, 4),
       st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_scaled_and_log_space_recursions_agree(lengths, n_labels, seed, with_a, with_b):
    """The division-free recursions on a scaled lattice equal the conditional-probability
    recursions on a log-space lattice, for ragged batches and any additive function."""
    rng = np.random.default_rng(seed)
    layout = ChainLayout(lengths)
    unary = rng.normal(size=(layout.n_rows, n_labels))
    transition = rng.normal(size=(n_labels, n_labels))
    a = rng.normal(size=unary.shape) if with_a else None
    b = rng.normal(size=transition.shape) if with_b else None
    scaled = additive_expectation_batch(ScaledLattice(unary, transition, layout, Workspace()),
                                        a, b)
    log_space = additive_expectation_batch(LogSpaceLattice(unary, transition, layout), a, b)
    for ours, reference in zip(scaled, log_space):
        np.testing.assert_allclose(ours, reference, atol=1e-11)
    for ours, reference in zip(
            position_entropies(ScaledLattice(unary, transition, layout, Workspace())),
            position_entropies(LogSpaceLattice(unary, transition, layout))):
        np.testing.assert_allclose(ours, reference, atol=1e-11)
    for lattice in (ScaledLattice(unary, transition, layout, Workspace()),
                    LogSpaceLattice(unary, transition, layout)):
        expectation, d_unary, d_transition = additive_expectation_batch(lattice, a, b,
                                                                        gradient=False)
        np.testing.assert_allclose(expectation, log_space[0], atol=1e-11)
        assert d_unary is None and d_transition is None


def test_long_chain_with_large_potentials():
    """n = 10,000 with potentials of magnitude 50: finite, and the chain rule holds."""
    rng = np.random.default_rng(0)
    unary = rng.uniform(-50, 50, size=(10_000, 4))
    transition = rng.uniform(-50, 50, size=(4, 4))
    entropy = sequence_entropy(unary, transition)
    d_unary, d_transition = entropy_gradient(unary, transition)
    assert np.isfinite(entropy) and entropy >= 0
    assert np.isfinite(d_unary).all() and np.isfinite(d_transition).all()
    halves = (subsequence_entropy(unary, transition, 0, 5_000)
              + subsequence_entropy(unary, transition, 5_000, 10_000))
    assert entropy <= halves + 1e-8  # subadditivity of entropy


def test_deterministic_chain_has_zero_entropy_and_gradient():
    unary = np.array([[0.0, -800.0], [0.0, -800.0]])
    assert sequence_entropy(unary, np.zeros((2, 2))) == pytest.approx(0.0, abs=1e-12)
    d_unary, d_transition = entropy_gradient(unary, np.zeros((2, 2)))
    assert np.abs(d_unary).max() < 1e-12 and np.abs(d_transition).max() < 1e-12


@pytest.mark.parametrize("start, stop", [(-1, 2), (2, 2), (0, 4), (3, 1)])
def test_bad_spans(start, stop):
    with pytest.raises(ValueError, match="start < stop"):
        subsequence_entropy(np.zeros((3, 2)), np.zeros((2, 2)), start, stop)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_covariance_and_lattice_entropy_gradients_agree(n, n_labels, seed):
    """Jiao et al.'s O(n^2 S^3) covariance form and the O(n S^2) lattices: two independent
    algorithms for the same gradient."""
    from sklearn_ssl_crf.inference import covariance_entropy_gradient

    rng = np.random.default_rng(seed)
    unary, transition = rng.normal(scale=2.0, size=(n, n_labels)), rng.normal(
        scale=2.0, size=(n_labels, n_labels))
    lattice_unary, lattice_transition = entropy_gradient(unary, transition)
    covariance_unary, covariance_transition = covariance_entropy_gradient(unary, transition)
    np.testing.assert_allclose(lattice_unary, covariance_unary, atol=1e-8)
    np.testing.assert_allclose(lattice_transition, covariance_transition, atol=1e-8)
