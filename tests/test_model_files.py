"""Model files: `save` and `load` keep the model exactly and refuse what they cannot use."""

import os
import pathlib
import stat

import joblib
import numpy as np
import pytest
from sklearn.pipeline import Pipeline

import sklearn_ssl_crf
from sklearn_ssl_crf import CRF, WindowFeatures, WordClusters, load, save
from sklearn_ssl_crf.datasets import make_sequences


@pytest.fixture(scope="module")
def fitted():
    X, y = make_sequences(80, random_state=0)
    features = WindowFeatures(window=1, suffixes=(), word_shape=False,
                              clusters=WordClusters(n_clusters=(8,), n_components=5,
                                                    random_state=0)).fit(X)
    crf = CRF(c2=0.1, max_iterations=30).fit(features.transform(X), y)
    return Pipeline([("features", features), ("crf", crf)]), X


def model_path(folder, suffix):
    if suffix != ".joblib":
        pytest.importorskip("skops", reason="the skops format needs the skops package")
    return folder / f"model{suffix}"


def trusted(path):
    """`load`'s trusted argument for a file: pickles need it."""
    return str(path).endswith(".joblib")


@pytest.mark.parametrize("suffix", [".joblib", ".skops", ".model"])
def test_round_trip_is_exact(fitted, tmp_path, suffix):
    model, X = fitted
    path = model_path(tmp_path, suffix)
    save(model, path, info={"corpus": "synthetic", "dev F1": 0.5})
    # Any name but a pickle's writes skops (a zip archive), recognised by its bytes.
    assert path.read_bytes()[:2] == b"PK" or (suffix == ".joblib"
                                              and path.read_bytes()[:1] == b"\x80")
    loaded, info = load(path, return_info=True, trusted=trusted(path))
    assert info == {"corpus": "synthetic", "dev F1": 0.5}
    np.testing.assert_array_equal(loaded[-1].state_weights_, model[-1].state_weights_)
    np.testing.assert_array_equal(loaded[-1].transition_weights_,
                                  model[-1].transition_weights_)
    assert loaded.predict(X) == model.predict(X)
    assert loaded[0].clusters_.word_features("w001") == model[0].clusters_.word_features("w001")


class _Unpicklable:
    """A model whose pickling fails half-way through the file."""

    def __reduce__(self):
        raise RuntimeError("cannot pickle this")


@pytest.mark.parametrize("suffix", [".joblib", ".skops"])
def test_failed_save_leaves_the_old_file(fitted, tmp_path, suffix):
    model, X = fitted
    path = model_path(tmp_path, suffix)
    save(model, path, info={"version": "good"})
    before = path.read_bytes()
    with pytest.raises(Exception, match="cannot pickle this|_Unpicklable"):
        save({"model": _Unpicklable()}, path, info={"version": "bad"})
    # The old model is intact, and no temporary file is left beside it.
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    assert load(path, return_info=True, trusted=trusted(path))[1] == {"version": "good"}


def test_save_gives_a_new_file_the_usual_mode_and_keeps_an_old_files(fitted, tmp_path):
    # Written through a private temporary file (mode 0600), the model must not stay private.
    model, _ = fitted
    path = tmp_path / "model.joblib"
    umask = os.umask(0)
    os.umask(umask)
    save(model, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    path.chmod(0o640)
    save(model, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_incompatible_version_is_refused_before_unpickling_the_model(fitted, tmp_path,
                                                                     monkeypatch):
    model, _ = fitted
    path = tmp_path / "old.joblib"
    save(model, path)
    monkeypatch.setattr(sklearn_ssl_crf, "__version__", "7.3.1")
    with pytest.raises(ValueError, match=r"old.joblib was written by sklearn_ssl_crf "
                       r"0\.\d+\S*; this is 7.3.1, which reads the files of 7.3.x only"):
        load(path, trusted=True)
    # The header is read first: a model part that cannot be unpickled is never reached.
    monkeypatch.undo()
    broken = tmp_path / "broken.joblib"
    with open(broken, "wb") as file:
        joblib.dump({"format": "sklearn_ssl_crf model file", "version": "0.0.1",
                     "sklearn_version": "0", "info": {}}, file)
        file.write(b"not a pickle")
    with pytest.raises(ValueError, match="written by sklearn_ssl_crf 0.0.1"):
        load(broken, trusted=True)


def test_same_release_loads(fitted, tmp_path, monkeypatch):
    model, X = fitted
    path = tmp_path / "model.joblib"
    save(model, path)
    major, minor = sklearn_ssl_crf.__version__.split(".")[:2]
    monkeypatch.setattr(sklearn_ssl_crf, "__version__", f"{major}.{minor}.99")
    assert load(path, trusted=True).predict(X[:3]) == model.predict(X[:3])


def test_other_files_are_refused(tmp_path):
    text = tmp_path / "train.txt"
    text.write_text("w1 B-X\n")
    with pytest.raises(ValueError, match="train.txt is not a sklearn_ssl_crf model file"):
        load(text)
    plain = tmp_path / "plain.joblib"
    joblib.dump(CRF(), plain)  # a pickle, but not one written by save
    with pytest.raises(ValueError, match="plain.joblib is not a sklearn_ssl_crf model file"):
        load(plain, trusted=True)
    with pytest.raises(TypeError, match="info must be a dict"):
        save(CRF(), tmp_path / "x.joblib", info=["a"])


def test_skops_refuses_foreign_types(tmp_path):
    skops_io = pytest.importorskip("skops.io", reason="the skops format needs skops")
    path = tmp_path / "foreign.skops"
    # A type that is neither this package's nor trusted by skops by default.
    skops_io.dump({"format": "sklearn_ssl_crf model file", "version": "0.1.0",
                   "sklearn_version": "0", "info": {}, "model": _Foreign()}, str(path))
    with pytest.raises(ValueError, match=r"needs types .*_Foreign; refusing to load it"):
        load(path)


class _Foreign:
    pass


class _RunsCode:
    """Unpickling this creates a file: the proof that a load ran the file's code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


def test_a_pickle_is_refused_unless_trusted_and_runs_nothing(tmp_path):
    marker = tmp_path / "code-ran"
    path = tmp_path / "evil.joblib"
    with open(path, "wb") as file:
        # Both the header and the model would run code when unpickled.
        joblib.dump(_RunsCode(marker), file)
        joblib.dump(_RunsCode(marker), file)
    for name in (path, tmp_path / "evil.skops", tmp_path / "evil"):
        if name != path:
            name.write_bytes(path.read_bytes())  # a pickle under a safe-looking name
        with pytest.raises(ValueError, match="is a pickle .* trusted=True"):
            load(name)
        assert not marker.exists()
    with pytest.raises(ValueError, match="not a sklearn_ssl_crf model file"):
        load(path, trusted=True)  # it does run when trusted, and is then refused
    assert marker.exists()


def test_damaged_skops_files_are_refused_with_the_file_named(fitted, tmp_path):
    pytest.importorskip("skops", reason="the skops format needs the skops package")
    model, _ = fitted
    path = tmp_path / "model.skops"
    save(model, path)
    data = path.read_bytes()
    rng = np.random.default_rng(0)
    damaged = tmp_path / "damaged.skops"
    outcomes = {"refused": 0, "loaded": 0}
    for cut in (len(data) // 2, len(data) - 10, 100):
        damaged.write_bytes(data[:cut])
        with pytest.raises(ValueError, match="damaged.skops"):
            load(damaged)
    for _ in range(30):
        flipped = bytearray(data)
        for position in rng.integers(0, len(data), 4):
            flipped[position] ^= 0xFF
        damaged.write_bytes(bytes(flipped))
        try:
            loaded = load(damaged)
        except ValueError as error:
            assert "damaged.skops" in str(error)
            outcomes["refused"] += 1
        else:
            # Bytes in a compressed member's padding can flip harmlessly.
            assert loaded[-1].state_weights_.shape == model[-1].state_weights_.shape
            outcomes["loaded"] += 1
    assert outcomes["refused"] > 0


@pytest.mark.parametrize("make", [
    lambda: sklearn_ssl_crf.CRFCV(c1=[0.0], c2=[0.1], cv=2),
    lambda: sklearn_ssl_crf.EntropyRegularizedCRF(
        gamma=0.1, c1=0.0, c2=0.1, early_stopping=False, semi_supervised_iterations=2),
    lambda: sklearn_ssl_crf.SelfTrainingCRF(max_rounds=1, c1=0.0, c2=0.1,
                                            early_stopping=False),
    lambda: sklearn_ssl_crf.NaturalGradientCRF(max_iterations=2, random_state=0),
    lambda: sklearn_ssl_crf.GraphPRCRF(graph="knn", n_neighbors=3, lam=1.0, c1=0.0, c2=0.1,
                                       em_iterations=1, early_stopping=False),
    lambda: sklearn_ssl_crf.GraphPropagation(graph="knn", n_neighbors=3),
], ids=["CRFCV", "EntropyRegularizedCRF", "SelfTrainingCRF", "NaturalGradientCRF",
        "GraphPRCRF", "GraphPropagation"])
def test_every_estimator_round_trips_in_the_safe_format(make, tmp_path):
    pytest.importorskip("skops", reason="the skops format needs the skops package")
    X, y = make_sequences(40, features="dict", random_state=0)
    model = make().fit(X[:30], y[:20] + [None] * 10)
    path = tmp_path / "model.skops"
    save(model, path)
    loaded = load(path)
    if hasattr(model, "transduction_"):
        assert loaded.transduction_ == model.transduction_
    if hasattr(model, "predict"):
        assert loaded.predict(X[30:]) == model.predict(X[30:])
