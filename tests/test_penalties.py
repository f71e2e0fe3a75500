"""Penalties on grouped node marginals: values against their definitions, gradients against
finite differences."""


import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ssl_crf.objective import GraphLaplacianPenalty, LabelProportionPenalty, _penalties


def _random_graph(n_vertices, density, rng):
    upper = sp.random(n_vertices, n_vertices, density=density, random_state=rng).toarray()
    weights = np.triu(upper, 1)
    return weights + weights.T


@pytest.fixture
def laplacian_case():
    rng = np.random.default_rng(0)
    n_vertices, n_labels, n_tokens = 7, 3, 15
    weights = _random_graph(n_vertices, 0.6, rng)
    # Vertex 6 has no token (its edges must not count); tokens of group -1 have no vertex.
    token_vertices = rng.integers(-1, 6, size=n_tokens)
    token_vertices[:6] = np.arange(6)
    seed_sums = np.zeros((n_vertices, n_labels))
    seed_sums[[0, 2, 2, 4], [1, 0, 2, 1]] += 1.0  # labelled tokens on vertices 0, 2, 2, 4
    seed_sums[5, 0] = 3.0  # a vertex seen only in labelled text
    marginals = rng.dirichlet(np.ones(n_labels), size=n_tokens)
    return weights, token_vertices, seed_sums, marginals


@pytest.mark.parametrize("block_rows", [2, 1 << 16])
@pytest.mark.parametrize("seeds", [np.asarray, sp.csr_matrix], ids=["dense", "sparse"])
def test_laplacian_value_is_the_definition(laplacian_case, seeds, block_rows, monkeypatch):
    # L m is made a block of rows at a time: in one block and in several.
    monkeypatch.setattr(_penalties, "_BLOCK_ROWS", block_rows)
    weights, token_vertices, seed_sums, marginals = laplacian_case
    penalty = GraphLaplacianPenalty(sp.csr_matrix(weights), token_vertices, seeds(seed_sums))
    n_vertices = weights.shape[0]
    averages = np.full((n_vertices, marginals.shape[1]), np.nan)
    for vertex in range(n_vertices):
        rows = marginals[token_vertices == vertex]
        count = rows.shape[0] + seed_sums[vertex].sum()
        if count:
            averages[vertex] = (rows.sum(axis=0) + seed_sums[vertex]) / count
    expected = 0.0
    for a in range(n_vertices):
        for b in range(n_vertices):
            if weights[a, b] and not np.isnan(averages[[a, b]]).any():
                expected += 0.5 * weights[a, b] * ((averages[a] - averages[b]) ** 2).sum()
    value, _ = penalty(marginals)
    assert np.isnan(averages[6]).all() and weights[6].any()
    assert value == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("block_rows", [2, 1 << 16])
def test_laplacian_gradient_in_single_precision_is_the_double_one_rounded(
        laplacian_case, block_rows, monkeypatch):
    """graph-PR's E-step takes the gradient in single precision: made in double, a block
    of rows at a time, then rounded (the same value, the same rounded gradient)."""
    monkeypatch.setattr(_penalties, "_BLOCK_ROWS", block_rows)
    weights, token_vertices, seed_sums, marginals = laplacian_case
    penalty = GraphLaplacianPenalty(sp.csr_matrix(weights), token_vertices, seed_sums)
    sums = np.zeros((penalty.n_groups, marginals.shape[1]))
    np.add.at(sums, penalty.token_groups[penalty.token_groups >= 0],
              marginals[penalty.token_groups >= 0])
    value, gradient = penalty.value_and_gradient(sums)
    single_value, single = penalty.value_and_gradient(sums, dtype=np.float32)
    assert gradient.dtype == np.float64 and single.dtype == np.float32
    assert single_value == value
    np.testing.assert_array_equal(single, gradient.astype(np.float32))


def test_laplacian_gradient_matches_finite_differences(laplacian_case):
    weights, token_vertices, seed_sums, marginals = laplacian_case
    penalty = GraphLaplacianPenalty(sp.csr_matrix(weights), token_vertices, seed_sums)
    _, gradient = penalty(marginals)
    step = 1e-6
    numeric = np.zeros_like(marginals)
    for index in np.ndindex(marginals.shape):
        up, down = marginals.copy(), marginals.copy()
        up[index] += step
        down[index] -= step
        numeric[index] = (penalty(up)[0] - penalty(down)[0]) / (2 * step)
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-9)
    # Tokens without a vertex do not enter the penalty; the others do, through 1/count.
    assert not gradient[token_vertices < 0].any()
    assert np.abs(gradient[token_vertices >= 0]).max() > 1e-3


def test_kept_degrees_scale_each_kept_edge_by_its_ends_lost_degree(laplacian_case):
    """Vertex 6 has no token: its neighbours' kept edges are scaled by
    sqrt(d_a d_b / (d'_a d'_b)) (the definition, summed edge by edge); with every vertex
    present the scaling is the identity."""
    weights, token_vertices, seed_sums, marginals = laplacian_case
    degrees = weights.sum(axis=1)
    kept_degrees = weights[:, :6].sum(axis=1)
    counts = seed_sums.sum(axis=1) + np.bincount(token_vertices[token_vertices >= 0],
                                                 minlength=7)
    averages = (seed_sums + np.stack([marginals[token_vertices == a].sum(axis=0)
                                      for a in range(7)]))[:6] / counts[:6, None]
    expected = sum(0.5 * weights[a, b] * np.sqrt(degrees[a] * degrees[b]
                                                 / (kept_degrees[a] * kept_degrees[b]))
                   * ((averages[a] - averages[b]) ** 2).sum()
                   for a in range(6) for b in range(6) if weights[a, b])
    penalty = GraphLaplacianPenalty(sp.csr_matrix(weights), token_vertices, seed_sums,
                                    keep_degrees=True)
    assert weights[:6, 6].any()
    assert penalty(marginals)[0] == pytest.approx(expected, rel=1e-12)
    assert expected > GraphLaplacianPenalty(sp.csr_matrix(weights), token_vertices,
                                            seed_sums)(marginals)[0]
    everywhere = token_vertices.copy()
    everywhere[-1] = 6
    plain, scaled = (GraphLaplacianPenalty(sp.csr_matrix(weights), everywhere, seed_sums,
                                           keep_degrees=keep)(marginals)
                     for keep in (False, True))
    assert scaled[0] == pytest.approx(plain[0], rel=1e-14)
    np.testing.assert_allclose(scaled[1], plain[1], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("keep_degrees", [False, True])
def test_laplacian_groups_are_the_vertices_with_a_token_or_a_seed(laplacian_case,
                                                                   keep_degrees):
    """Vertices 3 (its tokens taken away) and 6 have neither a token nor a seed: the
    groups are the others, in order; on their sums the penalty is the whole graph's, its
    Laplacian written out densely over all 7 vertices (zero averages where none)."""
    weights, token_vertices, seed_sums, marginals = laplacian_case
    token_vertices = np.where(token_vertices == 3, -1, token_vertices)
    penalty = GraphLaplacianPenalty(sp.csr_matrix(weights), token_vertices, seed_sums,
                                    keep_degrees=keep_degrees)
    present = np.array([0, 1, 2, 4, 5])
    np.testing.assert_array_equal(penalty.vertices, present)
    assert penalty.n_groups == 5 and penalty.weights.shape == (5, 5)
    np.testing.assert_array_equal(
        penalty.token_groups,
        np.where(token_vertices >= 0, np.searchsorted(present, token_vertices), -1))
    sums = np.zeros((7, marginals.shape[1]))
    np.add.at(sums, token_vertices[token_vertices >= 0], marginals[token_vertices >= 0])
    counts = seed_sums.sum(axis=1) + np.bincount(token_vertices[token_vertices >= 0],
                                                 minlength=7)
    averages = np.divide(seed_sums + sums, counts[:, None], out=np.zeros_like(sums),
                         where=counts[:, None] > 0)
    mask = np.zeros(7)
    mask[present] = 1.0
    kept = weights * np.outer(mask, mask)
    if keep_degrees:
        root = np.sqrt(np.divide(weights.sum(axis=1), kept.sum(axis=1),
                                 out=np.zeros(7), where=kept.sum(axis=1) > 0))
        kept = kept * np.outer(root, root)
    laplacian = np.diag(kept.sum(axis=1)) - kept
    expected_gradient = 2 * np.divide(laplacian @ averages, counts[:, None],
                                      out=np.zeros_like(sums), where=counts[:, None] > 0)
    value, gradient = penalty.value_and_gradient(sums[present])
    assert value == pytest.approx(np.vdot(averages, laplacian @ averages), rel=1e-12)
    np.testing.assert_allclose(gradient, expected_gradient[present], rtol=1e-12)
    assert not expected_gradient[[3, 6]].any() and np.abs(gradient).min() > 0


def test_laplacian_leaves_the_sums_it_is_given_unless_told_to_overwrite_them(
        laplacian_case):
    weights, token_vertices, seed_sums, marginals = laplacian_case
    penalty = GraphLaplacianPenalty(sp.csr_matrix(weights), token_vertices, seed_sums)
    sums = np.asarray(penalty.group_matrix() @ marginals)
    given = sums.copy()
    value, gradient = penalty.value_and_gradient(sums)
    np.testing.assert_array_equal(sums, given)
    # Overwritten, the sums become the vertex averages; the result is the same, bit for bit.
    again = penalty.value_and_gradient(sums, overwrite_sums=True)
    assert again[0] == value and np.array_equal(again[1], gradient)
    assert not np.array_equal(sums, given)


def test_laplacian_of_the_whole_graph_works_on_the_graphs_own_edges(laplacian_case):
    """With every vertex present the penalty holds the graph's matrix itself, not a
    copy (nor L = D - W as a second one): on a graph of 10^6 sentences it is gigabytes."""
    weights, token_vertices, seed_sums, _ = laplacian_case
    graph = sp.csr_matrix(weights)
    everywhere = np.arange(7)
    penalty = GraphLaplacianPenalty(graph, everywhere, seed_sums)
    assert penalty.n_groups == 7
    for name in ("data", "indices", "indptr"):
        assert np.shares_memory(getattr(penalty.weights, name), getattr(graph, name))
    np.testing.assert_allclose(penalty.degrees, weights.sum(axis=1), rtol=1e-15)


def test_laplacian_is_zero_when_neighbours_agree():
    weights = sp.csr_matrix(_random_graph(4, 1.0, np.random.default_rng(1)))
    tokens = np.array([0, 1, 2, 3, 3])
    same = np.tile([0.2, 0.5, 0.3], (5, 1))
    value, gradient = GraphLaplacianPenalty(weights, tokens, np.zeros((4, 3)))(same)
    assert value == pytest.approx(0.0, abs=1e-15)
    np.testing.assert_allclose(gradient, 0.0, atol=1e-15)


def test_label_proportion_penalty_is_n_times_kl_and_its_gradient():
    rng = np.random.default_rng(2)
    target = np.array([0.5, 0.3, 0.2, 0.0])
    marginals = rng.dirichlet(np.ones(4), size=9)
    penalty = LabelProportionPenalty(target, 9)
    value, gradient = penalty(marginals)
    mean = marginals.mean(axis=0)
    present = target > 0
    assert value == pytest.approx(9 * np.sum(target[present] * np.log(target[present]
                                                                      / mean[present])))
    step = 1e-6
    for index in [(0, 0), (3, 1), (8, 3)]:
        up, down = marginals.copy(), marginals.copy()
        up[index] += step
        down[index] -= step
        numeric = (penalty(up)[0] - penalty(down)[0]) / (2 * step)
        assert gradient[index] == pytest.approx(numeric, rel=1e-6, abs=1e-9)


def test_penalty_rejects_marginals_of_the_wrong_shape():
    penalty = LabelProportionPenalty(np.array([0.5, 0.5]), 3)
    with pytest.raises(ValueError, match=r"shape \(3, n_labels\)"):
        penalty(np.ones((4, 2)) / 2)


@pytest.mark.parametrize("vertex", [7, -2])
def test_laplacian_rejects_a_token_vertex_not_in_the_graph(laplacian_case, vertex):
    weights, token_vertices, seed_sums, _ = laplacian_case
    token_vertices = token_vertices.copy()
    token_vertices[4] = vertex
    with pytest.raises(ValueError, match=rf"token_vertices .* 7 vertices.* {vertex}"):
        GraphLaplacianPenalty(sp.csr_matrix(weights), token_vertices, seed_sums)


def test_proportion_penalty_of_a_vanished_label_is_infinite_without_warnings():
    penalty = LabelProportionPenalty(np.array([0.5, 0.5]), 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value, gradient = penalty.value_and_gradient(np.array([[4.0, 0.0]]))
    assert value == np.inf and gradient[0, 1] == -np.inf
