"""Covariance-form entropy gradient against enumeration of every label sequence."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from sklearn_ssl_crf.inference import forward_backward
from sklearn_ssl_crf.inference.covariance import covariance_entropy_gradient


def random_chain(n, n_labels, seed, scale):
    rng = np.random.default_rng(seed)
    return (rng.normal(scale=scale, size=(n, n_labels)),
            rng.normal(scale=scale, size=(n_labels, n_labels)))


def enumerate_features(n, n_labels):
    """All label sequences and their feature vectors: n * S vertex indicators, then S * S
    edge counts (row-major), the order of ``np.concatenate([unary.ravel(), T.ravel()])``."""
    sequences = np.array(list(itertools.product(range(n_labels), repeat=n)))
    rows = np.arange(len(sequences))
    vertex = np.zeros((len(sequences), n, n_labels))
    for t in range(n):
        vertex[rows, t, sequences[:, t]] = 1.0
    edge = np.zeros((len(sequences), n_labels, n_labels))
    for t in range(1, n):
        np.add.at(edge, (rows, sequences[:, t - 1], sequences[:, t]), 1.0)
    return np.concatenate([vertex.reshape(len(sequences), -1),
                           edge.reshape(len(sequences), -1)], axis=1)


def log_probabilities(unary, transition, features):
    theta = np.concatenate([unary.ravel(), transition.ravel()])
    scores = features @ theta
    return scores - logsumexp(scores)


def negative_entropy(unary, transition, features):
    log_p = log_probabilities(unary, transition, features)
    return float(np.exp(log_p) @ log_p)


def split(gradient, n, n_labels):
    return gradient[:n * n_labels].reshape(n, n_labels), gradient[n * n_labels:].reshape(
        n_labels, n_labels)


chains = st.tuples(
    st.integers(1, 6), st.integers(1, 4), st.integers(0, 2**32 - 1), st.sampled_from([1.0, 3.0])
)


@settings(max_examples=100, deadline=None)
@given(chains)
def test_matches_enumerated_covariance(chain):
    n, n_labels, _, _ = chain
    unary, transition = random_chain(*chain)
    features = enumerate_features(n, n_labels)
    log_p = log_probabilities(unary, transition, features)
    p = np.exp(log_p)
    # Cov_p(F_k, log p) = sum_y p(y) F_k(y) (log p(y) - E[log p]), straight from Appendix A.
    expected_unary, expected_transition = split(features.T @ (p * (log_p - p @ log_p)),
                                                n, n_labels)

    d_unary, d_transition = covariance_entropy_gradient(unary, transition)
    assert d_unary.shape == (n, n_labels)
    assert d_transition.shape == (n_labels, n_labels)
    np.testing.assert_allclose(d_unary, expected_unary, rtol=0, atol=1e-10)
    np.testing.assert_allclose(d_transition, expected_transition, rtol=0, atol=1e-10)


@pytest.mark.parametrize("n, n_labels, seed", [(2, 2, 0), (3, 3, 1), (4, 2, 2), (5, 3, 3)])
def test_matches_finite_differences_of_enumerated_entropy(n, n_labels, seed):
    unary, transition = random_chain(n, n_labels, seed, scale=2.0)
    features = enumerate_features(n, n_labels)
    theta = np.concatenate([unary.ravel(), transition.ravel()])
    step = 1e-5
    numerical = np.empty_like(theta)
    for k in range(theta.size):
        shift = np.zeros_like(theta)
        shift[k] = step
        up = split(theta + shift, n, n_labels)
        down = split(theta - shift, n, n_labels)
        numerical[k] = (negative_entropy(*up, features)
                        - negative_entropy(*down, features)) / (2 * step)

    d_unary, d_transition = covariance_entropy_gradient(unary, transition)
    np.testing.assert_allclose(np.concatenate([d_unary.ravel(), d_transition.ravel()]),
                               numerical, rtol=0, atol=1e-6)


def test_long_chain_matches_finite_differences():
    # Beyond enumeration: the negative entropy is E[score] - log Z, from forward-backward.
    def negative_entropy_fb(unary, transition):
        log_z, node, edge = forward_backward(unary, transition)
        return (node * unary).sum() + np.einsum("tij,ij->", edge, transition) - log_z

    unary, transition = random_chain(60, 4, seed=7, scale=2.0)
    d_unary, d_transition = covariance_entropy_gradient(unary, transition)
    rng = np.random.default_rng(8)
    step = 1e-5
    for _ in range(3):
        direction_u = rng.normal(size=unary.shape)
        direction_t = rng.normal(size=transition.shape)
        numerical = (negative_entropy_fb(unary + step * direction_u,
                                         transition + step * direction_t)
                     - negative_entropy_fb(unary - step * direction_u,
                                           transition - step * direction_t)) / (2 * step)
        analytic = (d_unary * direction_u).sum() + (d_transition * direction_t).sum()
        assert analytic == pytest.approx(numerical, rel=1e-6, abs=1e-6)


def test_large_potentials_long_chain_finite_and_consistent():
    # Potentials of magnitude ~20 over 300 positions: products of exp potentials would
    # overflow, the conditional summary matrices do not.
    unary, transition = random_chain(300, 5, seed=3, scale=20.0)
    d_unary, d_transition = covariance_entropy_gradient(unary, transition)
    assert np.isfinite(d_unary).all() and np.isfinite(d_transition).all()
    assert np.abs(d_unary).max() > 1e-3
    # Each position's indicators sum to 1 and the edge counts to n - 1: constants, whose
    # covariance with anything is 0.
    np.testing.assert_allclose(d_unary.sum(axis=1), 0.0, atol=1e-9)
    assert abs(d_transition.sum()) < 1e-8


def test_independent_positions_closed_form():
    # With no transition potentials the positions are independent, so the only non-zero
    # covariances are those of a position with itself and with its neighbouring edges:
    # d_unary[t] = p_t (u_t - E[u_t]) and, with c_t = u_t - E[u_t],
    # d_transition[i, j] = sum_t p_{t-1}(i) p_t(j) (c_{t-1}(i) + c_t(j)).
    # The long-range pair terms must all cancel against E[F] E[score], to ~1e-14.
    n, n_labels = 400, 4
    unary, _ = random_chain(n, n_labels, seed=5, scale=20.0)
    p = np.exp(unary - logsumexp(unary, axis=1, keepdims=True))
    centred = unary - (p * unary).sum(axis=1, keepdims=True)
    expected_transition = (np.einsum("ti,tj->ij", p[:-1] * centred[:-1], p[1:])
                           + np.einsum("ti,tj->ij", p[:-1], p[1:] * centred[1:]))

    d_unary, d_transition = covariance_entropy_gradient(unary, np.zeros((n_labels,
                                                                         n_labels)))
    np.testing.assert_allclose(d_unary, p * centred, rtol=0, atol=1e-12)
    np.testing.assert_allclose(d_transition, expected_transition, rtol=0, atol=1e-12)


def test_single_position():
    unary = np.array([[1.0, -0.5, 2.0]])
    d_unary, d_transition = covariance_entropy_gradient(unary, np.ones((3, 3)))
    np.testing.assert_array_equal(d_transition, np.zeros((3, 3)))
    p = np.exp(unary[0] - logsumexp(unary[0]))
    # One categorical variable: d/du_s sum p log p = p_s (u_s - E[u]).
    np.testing.assert_allclose(d_unary[0], p * (unary[0] - p @ unary[0]), atol=1e-14)


@pytest.mark.parametrize("n", [1, 2, 7])
def test_single_label_has_zero_gradient(n):
    unary, transition = random_chain(n, 1, seed=n, scale=3.0)
    d_unary, d_transition = covariance_entropy_gradient(unary, transition)
    assert d_unary.shape == (n, 1) and d_transition.shape == (1, 1)
    np.testing.assert_array_equal(d_unary, 0.0)
    np.testing.assert_array_equal(d_transition, 0.0)


@pytest.mark.parametrize("unary, transition, message", [
    (np.zeros(3), np.zeros((3, 3)), "unary must have shape"),
    (np.zeros((0, 2)), np.zeros((2, 2)), "unary must have shape"),
    (np.zeros((3, 2)), np.zeros((3, 3)), "transition must have shape"),
    (np.array([[0.0, np.nan]]), np.zeros((2, 2)), "finite"),
    (np.zeros((2, 2)), np.array([[0.0, np.inf], [0.0, 0.0]]), "finite"),
])
def test_invalid_potentials(unary, transition, message):
    with pytest.raises(ValueError, match=message):
        covariance_entropy_gradient(unary, transition)
