"""Unlabelled sequences streamed: generators and text files give the list's model, a block
at a time."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from fixed_settings import fixed
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils.fixes import parse_version

from sklearn_ssl_crf import (
    EntropyRegularizedCRF,
    GraphPRCRF,
    NaturalGradientCRF,
    SelfTrainingCRF,
    SemiSupervisedCRF,
    UnlabeledSequences,
    WindowFeatures,
)
from sklearn_ssl_crf.datasets import iter_text, make_sequences
from sklearn_ssl_crf.estimators import _base
from sklearn_ssl_crf.features import SequenceVectorizer
from sklearn_ssl_crf.parallel import _chunked

sklearn_version = parse_version(parse_version(sklearn.__version__).base_version)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 7 streamed sequences and chunks of 300 tokens: chunks span blocks."""
    monkeypatch.setattr(_base, "_STREAM_BLOCK", 7)
    monkeypatch.setattr(_chunked, "CHUNK_TOKENS", 300)


@pytest.fixture(scope="module")
def words():
    X, y = make_sequences(260, random_state=0)
    return X[:40], y[:40], X[40:]


@pytest.mark.parametrize("min_freq", [0, 1])
def test_vocabulary_and_rows_do_not_depend_on_the_blocks(min_freq):
    X, _ = make_sequences(120, features="dict", random_state=1)
    whole = SequenceVectorizer(min_freq=min_freq).fit_transform(X)
    vectorizer = SequenceVectorizer(min_freq=min_freq)
    head, blocks = vectorizer.fit_transform_stream(X[:10], iter(X[10:]), block_size=9)
    assert [len(block) for block in blocks] == [9] * 12 + [2]
    assert vectorizer.feature_names_ == list(whole.feature_names)
    stacked = sp.vstack([head.matrix] + [block.matrix for block in blocks], format="csr")
    assert (stacked != whole.matrix).nnz == 0
    np.testing.assert_array_equal(
        np.concatenate([head.lengths] + [block.lengths for block in blocks]), whole.lengths)
    # Indicator values are exact in float32, which the blocks then use (as packed chunks do);
    # a value float32 cannot hold keeps its block in float64.
    assert {block.matrix.dtype for block in blocks} == {np.dtype(np.float32)}
    _, [inexact] = SequenceVectorizer().fit_transform_stream(X[:1], [[{"x": 0.1}]])
    assert inexact.matrix.dtype == np.float64 and inexact.matrix.data[0] == 0.1
    # Later transforms use the vocabulary of the whole stream.
    assert (vectorizer.transform(X[100:]).matrix != whole[np.arange(100, 120)].matrix).nnz == 0


def test_a_generator_a_text_file_and_a_list_give_the_same_model(words, small_blocks,
                                                                   tmp_path):
    X, y, unlabeled = words
    features = WindowFeatures().fit(X)
    Xf = features.transform(X)
    params = {"gamma": 0.1, "proportion_weight": 1.0, "max_iterations": 20}
    listed = fixed(EntropyRegularizedCRF(**params)).fit(
        Xf, y, X_unlabeled=features.transform(unlabeled))
    generated = fixed(EntropyRegularizedCRF(**params)).fit(
        Xf, y, X_unlabeled=features.transform(iter(unlabeled)))
    path = tmp_path / "raw.txt"
    # Blank lines are skipped, as read_text skips them.
    path.write_text("\n\n".join(" ".join(sentence) for sentence in unlabeled) + "\n",
                    encoding="utf-8")
    # A path is read by the featurizer, lazily, anew at every iteration (so that every fit
    # of a search reads the whole file), and has no length (so that a search passes it on
    # whole); a generator over the file is read once.
    streamed = features.transform(path)
    assert not hasattr(streamed, "__len__") and iter(streamed) is not streamed
    assert list(streamed) == list(streamed) == features.transform(unlabeled)
    from_path = fixed(EntropyRegularizedCRF(**params)).fit(Xf, y,
                                                    X_unlabeled=features.transform(path))
    from_file = fixed(EntropyRegularizedCRF(**params)).fit(
        Xf, y, X_unlabeled=features.transform(iter_text(path)))
    inline = fixed(EntropyRegularizedCRF(**params)).fit(
        Xf + features.transform(unlabeled), y + [None] * len(unlabeled))
    assert listed.n_iter_ > 5
    for model in (generated, from_path, from_file, inline):
        assert model.attributes_ == listed.attributes_
        np.testing.assert_array_equal(model.state_weights_, listed.state_weights_)
        np.testing.assert_array_equal(model.transition_weights_, listed.transition_weights_)


@pytest.mark.parametrize("make_model", [
    lambda: fixed(SelfTrainingCRF(max_rounds=2, max_iterations=15)),
    lambda: NaturalGradientCRF(gamma=0.1, proportion_weight=1.0, max_iterations=3,
                               random_state=0),
    lambda: fixed(GraphPRCRF(max_iterations=10, em_iterations=2, n_neighbors=5)),
], ids=["self-training", "natural-gradient", "graph-pr"])
def test_every_semi_supervised_estimator_takes_a_stream(make_model, words, small_blocks):
    X, y, unlabeled = words
    features = WindowFeatures().fit(X)
    Xf = features.transform(X)
    listed = make_model().fit(Xf, y, X_unlabeled=features.transform(unlabeled))
    generated = make_model().fit(Xf, y, X_unlabeled=features.transform(iter(unlabeled)))
    inline = make_model().fit(Xf + features.transform(unlabeled),
                              y + [None] * len(unlabeled))
    for model in (generated, inline):
        assert model.attributes_ == listed.attributes_
        np.testing.assert_array_equal(model.state_weights_, listed.state_weights_)
        np.testing.assert_array_equal(model.transition_weights_, listed.transition_weights_)
    # The unlabelled sequences were used: without them the model differs.
    alone = make_model().fit(Xf, y)
    assert not np.array_equal(alone.transition_weights_, listed.transition_weights_)


@pytest.mark.skipif(sklearn_version < parse_version("1.6"),
                    reason="Pipeline(transform_input=...) needs scikit-learn >= 1.6")
def test_a_pipeline_featurises_a_text_file_given_as_x_unlabeled(words, small_blocks,
                                                                tmp_path):
    X, y, unlabeled = words
    path = tmp_path / "raw.txt"
    path.write_text("\n".join(" ".join(sentence) for sentence in unlabeled) + "\n",
                    encoding="utf-8")
    params = {"gamma": 0.1, "proportion_weight": 1.0, "max_iterations": 20}
    features = WindowFeatures().fit(X)
    direct = fixed(EntropyRegularizedCRF(**params)).fit(features.transform(X), y,
                                                 X_unlabeled=features.transform(unlabeled))
    with sklearn.config_context(enable_metadata_routing=True):
        pipeline = Pipeline(
            [("features", WindowFeatures()),
             ("crf", fixed(EntropyRegularizedCRF(**params)).set_fit_request(X_unlabeled=True))],
            transform_input=["X_unlabeled"])
        for raw in (str(path), path):
            pipeline.fit(X, y, X_unlabeled=raw)
            np.testing.assert_array_equal(pipeline[-1].state_weights_,
                                          direct.state_weights_)
    # Given to the estimator itself, a path is refused with directions.
    with pytest.raises(TypeError, match=r"got PosixPath; .*WindowFeatures\(\)\.transform"):
        fixed(EntropyRegularizedCRF()).fit(features.transform(X), y, X_unlabeled=path)
    with pytest.raises(TypeError, match=r"got str; .*transform_input=\['X_unlabeled'\]"):
        fixed(SelfTrainingCRF()).fit(features.transform(X), y, X_unlabeled=str(path))
    with pytest.raises(TypeError, match=r"X_unlabeled must be .* got str; the estimators"):
        fixed(GraphPRCRF()).fit(features.transform(X), y, X_unlabeled=str(path))
    with pytest.raises(FileNotFoundError, match="not a file"):
        features.transform(tmp_path / "missing.txt")


def test_feature_matrices_stream_too(words, small_blocks):
    X, y, unlabeled = words
    vectorizer = SequenceVectorizer().fit(WindowFeatures().fit_transform(X + unlabeled))
    features = WindowFeatures().fit(X)

    def matrices(sequences):
        featurised = vectorizer.transform(features.transform(sequences))
        return [featurised.matrix[start:stop] for start, stop in
                zip(featurised.offsets[:-1], featurised.offsets[1:])]

    params = {"gamma": 0.1, "max_iterations": 10}
    listed = fixed(SemiSupervisedCRF(**params)).fit(matrices(X), y,
                                                    X_unlabeled=matrices(unlabeled))
    generated = fixed(SemiSupervisedCRF(**params)).fit(matrices(X), y,
                                                X_unlabeled=iter(matrices(unlabeled)))
    np.testing.assert_array_equal(generated.state_weights_, listed.state_weights_)
    with pytest.raises(ValueError, match="X has .* attributes per token but X_unlabeled has"):
        fixed(SemiSupervisedCRF(**params)).fit(matrices(X), y,
                                        X_unlabeled=(m[:, :5] for m in matrices(unlabeled)))


class _Sentence(list):
    """A sequence that counts how many of its kind are alive."""

    alive = peak = 0

    def __init__(self, tokens):
        super().__init__(tokens)
        _Sentence.alive += 1
        _Sentence.peak = max(_Sentence.peak, _Sentence.alive)

    def __del__(self):
        _Sentence.alive -= 1


@pytest.mark.parametrize("model", [
    fixed(EntropyRegularizedCRF(gamma=0.1, max_iterations=2)),
    fixed(SelfTrainingCRF(max_rounds=1, max_iterations=2)),
    NaturalGradientCRF(gamma=0.1, max_iterations=1, random_state=0),
], ids=lambda model: type(model).__name__)
def test_a_stream_is_held_one_block_at_a_time(model, words, small_blocks):
    X, y, unlabeled = words
    features = WindowFeatures().fit(X)
    stream = (_Sentence(features.transform([sentence])[0]) for sentence in unlabeled)
    _Sentence.alive = _Sentence.peak = 0
    model.fit(features.transform(X), y, X_unlabeled=stream)
    # 220 sentences went through, never more than one block of 7 (and the one being read).
    assert _Sentence.alive == 0 and 1 < _Sentence.peak <= 8
    assert len(model.attributes_) > len(features.transform(X)[0][0]) * 30  # all were read


def test_a_bad_line_of_a_streamed_text_file_is_named(words, tmp_path):
    X, y, unlabeled = words
    path = tmp_path / "raw.txt"
    lines = [" ".join(sentence).encode() for sentence in unlabeled[:5]]
    lines[3] = b"w001 \xff w002"
    path.write_bytes(b"\n".join(lines) + b"\n")
    features = WindowFeatures().fit(X)
    with pytest.raises(ValueError, match=r"raw\.txt, line 4: byte b'\\xff' is not valid utf-8"):
        fixed(EntropyRegularizedCRF(gamma=0.1)).fit(features.transform(X), y,
                                             X_unlabeled=features.transform(path))
    # Everything before the bad line was read lazily: the generator reached line 4 only.
    sentences = iter_text(path)
    assert [next(sentences) for _ in range(3)] == [s.split() for s in
                                                   map(bytes.decode, lines[:3])]
    with pytest.raises(ValueError, match="line 4"):
        next(sentences)


def test_a_stream_of_dicts_must_match_dict_input(words):
    X, y, unlabeled = words
    features = WindowFeatures().fit(X)
    with pytest.raises(TypeError, match="X_unlabeled must be an iterable of sequences"):
        fixed(EntropyRegularizedCRF()).fit(features.transform(X), y, X_unlabeled=42)
    with pytest.raises(TypeError, match="the stream, sequence 0 is a str"):
        fixed(EntropyRegularizedCRF()).fit(features.transform(X), y,
                                    X_unlabeled=iter(["not a tokenised sentence"]))


def test_a_search_gives_every_fit_all_the_unlabeled_sequences(words, tmp_path):
    """scikit-learn's model selection splits a fit parameter of X's length like X: wrapped
    in UnlabeledSequences, or given as a file's features, X_unlabeled reaches every fit
    whole; a generator read by an earlier fit is refused rather than silently empty."""
    X, y, unlabeled = words
    features = WindowFeatures().fit(X)
    Xf, Uf = features.transform(X[:40]), features.transform(unlabeled[:40])
    seen = []

    class Recording(EntropyRegularizedCRF):
        def fit(self, X, y, *, X_unlabeled=None, X_dev=None, y_dev=None):
            seen.append(sum(1 for _ in X_unlabeled))
            return super().fit(X, y, X_unlabeled=X_unlabeled, X_dev=X_dev, y_dev=y_dev)

    estimator = fixed(Recording(max_iterations=2))
    # A fit of its own is not split: as many unlabelled sequences as labelled ones by
    # coincidence is no reason to warn.
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="X_unlabeled has as many")
        clone(estimator).fit(Xf, y[:40], X_unlabeled=Uf)
    assert seen.pop() == 40
    search = GridSearchCV(estimator, {"gamma": [0.0, 0.1]}, cv=3)
    with pytest.warns(UserWarning, match="as many sequences as X"):
        search.fit(Xf, y[:40], X_unlabeled=Uf)
    # The pitfall, measured: each fit saw its fold's two thirds (26 or 27 of 40).
    assert sorted(set(seen[:6])) == [26, 27]
    seen.clear()
    search.fit(Xf, y[:40], X_unlabeled=UnlabeledSequences(Uf))
    assert seen == [40] * 7  # 6 fits and the refit
    path = tmp_path / "raw.txt"
    path.write_text("".join(" ".join(sentence) + "\n" for sentence in unlabeled[:40]),
                    encoding="utf-8")
    seen.clear()
    search.fit(Xf, y[:40], X_unlabeled=UnlabeledSequences(features.transform(path)))
    assert seen == [40] * 7
    stream = features.transform(iter(unlabeled[:40]))
    with pytest.raises(ValueError, match="an earlier fit has already read"):
        GridSearchCV(fixed(EntropyRegularizedCRF(max_iterations=2)), {"gamma": [0.0]}, cv=2,
                     error_score="raise").fit(
            Xf, y[:40], X_unlabeled=stream)
    with pytest.raises(TypeError, match="not a one-shot generator"):
        UnlabeledSequences(iter_text(path))
