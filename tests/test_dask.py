"""The dask backend: chunk sums on the workers of a cluster, the same model as one process.

A `distributed.LocalCluster` of two worker processes stands for a cluster. Skipped where
dask is not installed (``pip install ".[dask]"``; the test extra installs it).
"""

import numpy as np
import pytest
from fixed_settings import fixed
from joblib import parallel_config
from sklearn.base import clone
from test_graph_pr import word_graph

from sklearn_ssl_crf import EntropyRegularizedCRF, GraphPRCRF, SelfTrainingCRF
from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.features import SequenceVectorizer
from sklearn_ssl_crf.graph import _search, knn_graph, trigram_graph
from sklearn_ssl_crf.objective._weights import chunk_unlabeled_terms
from sklearn_ssl_crf.parallel import ChunkedSequences, _backends, _chunked

distributed = pytest.importorskip(
    "distributed", reason='the dask backend needs dask[distributed] (pip install ".[dask]")')


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


@pytest.fixture
def traffic(client, monkeypatch):
    """Counts of what the client sends: scatter calls, and the kinds of task arguments."""
    counts = {"scatter": 0, "scattered": [], "tasks": 0, "map_tasks": 0,
              "argument_types": set()}
    scatter, submit = distributed.Client.scatter, distributed.Client.submit

    def counting_scatter(self, data, *args, **kwargs):
        counts["scatter"] += 1
        counts["scattered"].append(len(data))
        return scatter(self, data, *args, **kwargs)

    def counting_submit(self, function, *args, **kwargs):
        counts["tasks"] += 1
        _, held, _, arguments, reduce = args
        counts["map_tasks"] += not reduce
        counts["argument_types"] |= {type(value).__name__ for value in held.values()}
        counts["argument_types"] |= {type(value).__name__ for value in arguments}
        return submit(self, function, *args, **kwargs)

    monkeypatch.setattr(distributed.Client, "scatter", counting_scatter)
    monkeypatch.setattr(distributed.Client, "submit", counting_submit)
    return counts


@pytest.fixture
def small_chunks(client, monkeypatch):
    """Chunks of 400 tokens (several in a small fit) here and in the workers, where a fold
    sent there packs data of its own (self-training's rounds)."""
    default = _chunked.CHUNK_TOKENS
    monkeypatch.setattr(_chunked, "CHUNK_TOKENS", 400)
    client.run(lambda: setattr(_chunked, "CHUNK_TOKENS", 400))
    yield
    client.run(lambda: setattr(_chunked, "CHUNK_TOKENS", default))


def test_chunk_sums_on_the_workers_equal_one_process(client, traffic, monkeypatch):
    monkeypatch.setattr(_backends, "SCATTER_CHUNKS", 2)
    X, _ = make_sequences(60, n_types=3, features="dict", random_state=0)
    sequences = SequenceVectorizer().fit_transform(X)
    rng = np.random.default_rng(0)
    state = rng.normal(size=(sequences.n_features, 3))
    transition = rng.normal(size=(3, 3))
    local = ChunkedSequences(sequences, n_jobs=1, chunk_tokens=60)
    expected = local.sum(chunk_unlabeled_terms, state, transition, "lattice")
    with parallel_config(backend="dask"):
        remote = ChunkedSequences(sequences, chunk_tokens=60)
    # No files: workers on other machines could not read them.
    assert remote._paths is None and remote._cluster is not None
    holders = {worker for worker, _, _ in remote._cluster.groups}
    assert len(holders) == 2
    for _ in range(3):
        for one, other in zip(expected, remote.sum(chunk_unlabeled_terms, state, transition,
                                                   "lattice")):
            np.testing.assert_array_equal(one, other)
    # Each worker got its chunks once, two per message; three sums sent three tasks to each.
    shares = [len(chunks) for _, _, chunks in remote._cluster.groups]
    assert min(shares) >= 3
    assert traffic["scattered"] == [min(2, share - start) for share in shares
                                    for start in range(0, share, 2)]
    assert traffic["tasks"] == 6
    assert traffic["argument_types"] == {"Future", "ndarray", "str"}
    # Every chunk is held by exactly one worker.
    held = [k for _, _, chunks in remote._cluster.groups for k in chunks]
    assert sorted(held) == list(range(len(local.chunks)))


def test_entropy_regularised_crf_on_a_cluster_is_the_one_process_model(client, traffic,
                                                                          monkeypatch):
    monkeypatch.setattr(_chunked, "CHUNK_TOKENS", 400)  # several chunks
    X, y = make_sequences(300, features="dict", random_state=0)
    params = {"gamma": 0.1, "proportion_weight": 1.0, "max_iterations": 15}
    one = fixed(EntropyRegularizedCRF(n_jobs=1, **params)).fit(X[:40], y[:40], X_unlabeled=X[40:])
    with parallel_config(backend="dask"):
        cluster = fixed(EntropyRegularizedCRF(**params)).fit(X[:40], y[:40], X_unlabeled=X[40:])
    np.testing.assert_array_equal(one.state_weights_, cluster.state_weights_)
    np.testing.assert_array_equal(one.transition_weights_, cluster.transition_weights_)
    # The labelled and the unlabelled chunks went to the two workers once per fit, while
    # every one of the ~30 evaluations sent tasks with the weights only.
    iterations = sum(entry["num"] > 0 for entry in cluster.training_log_)
    assert iterations >= 20
    assert traffic["scatter"] == 4
    assert traffic["tasks"] >= 2 * iterations
    assert "PackedSequences" not in traffic["argument_types"]


def test_selection_on_a_cluster_with_the_unlabeled_inside_x_is_the_one_process_model(
        client, monkeypatch):
    """Default random_state, priors chosen by cv: the unlabeled sequences inside X (label
    None) on the cluster give the model of X_unlabeled in one process (issue #42)."""
    monkeypatch.setattr(_chunked, "CHUNK_TOKENS", 400)  # several chunks
    X, y = make_sequences(200, features="dict", random_state=1)
    params = {"c1": 0.0, "c2": [0.1, 1.0], "gamma": [0.0, 0.1], "proportion_weight": 0.0,
              "max_iterations": 10, "semi_supervised_iterations": 5, "cv": 3}
    one = EntropyRegularizedCRF(n_jobs=1, **params).fit(X[:30], y[:30], X_unlabeled=X[30:])
    with parallel_config(backend="dask"):
        cluster = EntropyRegularizedCRF(**params).fit(X, y[:30] + [None] * 170)
    assert cluster.best_params_ == one.best_params_
    np.testing.assert_array_equal(cluster.cv_results_["mean_test_score"],
                                  one.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(one.state_weights_, cluster.state_weights_)
    np.testing.assert_array_equal(one.transition_weights_, cluster.transition_weights_)


def gold_probability(estimator, X, y):
    """The mean marginal probability of the gold labels: moved by any change of weights."""
    return float(np.mean([marginals[label] for sequence, labels in
                          zip(estimator.predict_marginals(X), y)
                          for marginals, label in zip(sequence, labels)]))


SAMPLED_SELECTION = dict(c1=0.0, c2=[0.1, 1.0], max_iterations=15, n_iter_no_change=None,
                         tol=0.0, cv=3, selection_unlabeled=60, random_state=3,
                         scoring=gold_probability)


@pytest.mark.parametrize("estimator, cap", [
    (EntropyRegularizedCRF(gamma=0.5, proportion_weight=0.2, semi_supervised_iterations=8,
                           **SAMPLED_SELECTION), "semi_supervised_iterations"),
    (SelfTrainingCRF(max_rounds=3, **SAMPLED_SELECTION), "max_rounds"),
])
def test_selection_on_a_sample_on_a_cluster_is_the_one_process_model(
        client, small_chunks, monkeypatch, capsys, estimator, cap):
    """The folds on a sample of the pool (issue #43), on the cluster: each fold a task on
    a worker, which it takes the sample's chunks to (the client sends the pool's alone,
    as a fit without selection does); the one-process model, choice and fold scores."""
    X, y = make_sequences(200, features="dict", random_state=2)
    data = dict(X=X[:30], y=y[:30], X_unlabeled=X[30:])
    one = clone(estimator).set_params(n_jobs=1).fit(**data)
    sent = []
    monkeypatch.setattr(_chunked, "_ClusterChunks",
                        lambda chunks, client: sent.append(len(chunks))
                        or _backends._ClusterChunks(chunks, client))
    capsys.readouterr()
    with parallel_config(backend="dask"):
        cluster = clone(estimator).set_params(verbose=1).fit(**data)
        selection_sent, sent[:] = list(sent), []
        clone(estimator).set_params(**cluster.best_params_, early_stopping=False,
                                    **{cap: cluster.n_iter_}).fit(**data)
    # The folds' fits (priors and strength) said what they did on the workers, not here.
    said = capsys.readouterr().out
    assert "chose" in said and "held-out set" not in said
    assert selection_sent == sent and len(sent) >= 1
    unsampled = clone(estimator).set_params(n_jobs=1, selection_unlabeled=None)
    unsampled.fit(**data)
    assert cluster.best_params_ == one.best_params_
    np.testing.assert_array_equal(cluster.cv_results_["mean_test_score"],
                                  one.cv_results_["mean_test_score"])
    assert not np.array_equal(unsampled.cv_results_["mean_test_score"],
                              one.cv_results_["mean_test_score"])  # the sample was used
    np.testing.assert_array_equal(one.state_weights_, cluster.state_weights_)
    np.testing.assert_array_equal(one.transition_weights_, cluster.transition_weights_)


def test_graph_pr_on_a_cluster_is_the_one_process_model(client, monkeypatch):
    monkeypatch.setattr(_chunked, "CHUNK_TOKENS", 700)
    X, y = make_sequences(240, features="dict", random_state=0)
    y_partial = y[:30] + [None] * 210
    params = {"graph": word_graph(X), "lam": 1.0, "em_iterations": 2}
    one = fixed(GraphPRCRF(n_jobs=1, **params)).fit(X, y_partial)
    with parallel_config(backend="dask"):
        cluster = fixed(GraphPRCRF(**params)).fit(X, y_partial)
    np.testing.assert_array_equal(one.state_weights_, cluster.state_weights_)
    assert one.transduction_ == cluster.transduction_


def test_graph_searches_on_the_workers_give_the_one_process_graph(client, monkeypatch):
    # Blocks of a few rows: many tasks. The trigram graph's exact and pruned searches (the
    # common features' term on the workers too), and the k-NN graph's mixed similarity
    # with a floor (its own rows and their transpose made again on the workers).
    submitted, scattered = [], []
    scatter, submit = distributed.Client.scatter, distributed.Client.submit
    monkeypatch.setattr(distributed.Client, "scatter", lambda self, data, **kw: (
        scattered.append(kw.get("broadcast")) or scatter(self, data, **kw)))
    monkeypatch.setattr(distributed.Client, "submit", lambda self, function, *args, **kw: (
        submitted.append(function) or submit(self, function, *args, **kw)))
    X, _ = make_sequences(300, features="dict", random_state=0)
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(150, 8))
    builds = [lambda: trigram_graph(X, 10, word_key="word", max_block_entries=2000,
                                    algorithm="exact"),
              lambda: trigram_graph(X, 10, word_key="word", max_block_entries=2000,
                                    algorithm="pruned", max_df=0.05),
              lambda: knn_graph([rows], 5, min_similarity=0.1, self_weight=0.5,
                                max_block_entries=300)]
    # The client only sends the search out: it never transposes the rows (3 GB at 10^6
    # sentences); the workers do.
    transposed, transpose = [], _search._transposed
    monkeypatch.setattr(_search, "_transposed",
                        lambda rows: transposed.append(rows.shape) or transpose(rows))
    for build in builds:
        one = build().weights
        assert transposed
        transposed.clear()
        submitted.clear()
        with parallel_config(backend="dask"):
            cluster = build().weights
        assert one.nnz > 0 and len(submitted) > 4 and not transposed
        assert set(submitted) == {_search._search_block}
        for name in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(one, name), getattr(cluster, name))
    # Each graph's search sent to every worker once, then one task per block.
    assert scattered == [True] * 3


def test_self_training_labels_on_the_workers(client, traffic, monkeypatch):
    monkeypatch.setattr(_chunked, "CHUNK_TOKENS", 400)
    X, y = make_sequences(200, features="dict", random_state=0)
    params = {"max_rounds": 2, "max_iterations": 10}
    one = fixed(SelfTrainingCRF(n_jobs=1, **params)).fit(X[:30], y[:30], X_unlabeled=X[30:])
    with parallel_config(backend="dask"):
        cluster = fixed(SelfTrainingCRF(**params)).fit(X[:30], y[:30], X_unlabeled=X[30:])
    np.testing.assert_array_equal(one.state_weights_, cluster.state_weights_)
    assert one.rounds_ == cluster.rounds_ and cluster.n_iter_ == 2
    # The Viterbi paths of the unlabelled chunks were computed by the workers: a labelling
    # task per worker after each of the 3 rounds.
    assert traffic["map_tasks"] == 2 * 3


def test_a_fit_survives_lost_workers_with_the_same_model(client, monkeypatch):
    """Workers killed mid-fit (one, then the other: each time all but one): the chunks they
    held are scattered again from the client, and the model is the undisturbed one's."""
    import os
    import signal

    monkeypatch.setattr(_chunked, "CHUNK_TOKENS", 400)  # several chunks per worker
    X, y = make_sequences(300, features="dict", random_state=0)
    params = {"gamma": 0.1, "proportion_weight": 1.0, "max_iterations": 15}
    with parallel_config(backend="dask"):
        undisturbed = fixed(EntropyRegularizedCRF(**params)).fit(
            X[:40], y[:40], X_unlabeled=X[40:])
    original = ChunkedSequences.sum
    calls, killed = {"n": 0}, []

    def sum_after_a_kill(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] in (3, 9):
            # A worker process dies between evaluations (its nanny starts a new one),
            # taking the chunks it held with it.
            workers = sorted(client.scheduler_info()["workers"])
            victim = workers[len(killed) % len(workers)]
            killed.append(victim)
            pid = client.run(os.getpid, workers=[victim])[victim]
            os.kill(pid, signal.SIGKILL)
            client.wait_for_workers(2)  # the chunks' tasks then meet a new worker
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ChunkedSequences, "sum", sum_after_a_kill)
    resent = []
    send_again = _backends._ClusterChunks._send_again

    def counting(self, lost):
        resent.append(len(lost))
        return send_again(self, lost)

    monkeypatch.setattr(_backends._ClusterChunks, "_send_again", counting)
    with parallel_config(backend="dask"):
        survived = fixed(EntropyRegularizedCRF(**params)).fit(
            X[:40], y[:40], X_unlabeled=X[40:])
    assert len(killed) == 2
    assert resent  # the lost workers' groups were scattered again
    np.testing.assert_array_equal(survived.state_weights_, undisturbed.state_weights_)
    np.testing.assert_array_equal(survived.transition_weights_,
                                  undisturbed.transition_weights_)


def test_graph_pr_folds_run_on_the_workers_with_the_one_process_model(client, monkeypatch):
    """Graph-PR's selection (its data in the client): each fold is a task on a worker that
    sums its chunks itself, so the client sends chunks to the cluster for the refit only,
    as a fit without selection does; the one-process choice, fold scores and model."""
    monkeypatch.setattr(_chunked, "CHUNK_TOKENS", 700)
    X, y = make_sequences(240, features="dict", random_state=0)
    y_partial = y[:30] + [None] * 210
    params = dict(graph=word_graph(X), c1=0.0, c2=[0.1, 1.0], lam=[0.3, 1.0],
                  em_iterations=3, cv=3, selection_unlabeled=100, random_state=0)
    one = GraphPRCRF(n_jobs=1, **params).fit(X, y_partial)
    sent = []
    monkeypatch.setattr(_chunked, "_ClusterChunks",
                        lambda chunks, client: sent.append(len(chunks))
                        or _backends._ClusterChunks(chunks, client))
    with parallel_config(backend="dask"):
        cluster = GraphPRCRF(**params).fit(X, y_partial)
        selection_sent, sent[:] = list(sent), []
        settings = dict(params, **cluster.best_params_, em_iterations=cluster.n_iter_,
                        early_stopping=False)
        GraphPRCRF(**settings).fit(X, y_partial)
    assert selection_sent == sent and len(sent) >= 1
    assert one.best_params_ == cluster.best_params_
    np.testing.assert_array_equal(one.cv_results_["mean_test_score"],
                                  cluster.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(one.state_weights_, cluster.state_weights_)
    assert one.transduction_ == cluster.transduction_
