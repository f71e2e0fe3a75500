"""Model files: `save` and `load` keep the model exactly and refuse what they cannot use."""

import os
import pathlib
import pickle
import stat
import types

import joblib
import numpy as np
import pytest
import scipy.sparse
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
    if suffix == ".skops":
        pytest.importorskip("skops", reason="the skops format needs the skops package")
    return folder / f"model{suffix}"


def trusted(path):
    """`load`'s trusted argument for a file: pickles need it."""
    return str(path).endswith(".joblib")


def assert_same_state(loaded, original, where="model"):
    """``loaded`` equals ``original`` attribute by attribute, arrays to the bit and of the
    same dtype, containers of the same types."""
    assert type(loaded) is type(original), where
    if isinstance(original, np.ndarray):
        assert loaded.dtype == original.dtype, where
        np.testing.assert_array_equal(loaded, original, err_msg=where)
    elif isinstance(original, dict):
        assert list(loaded) == list(original), where
        for key in original:
            assert_same_state(loaded[key], original[key], f"{where}[{key!r}]")
    elif isinstance(original, (list, tuple)):
        assert len(loaded) == len(original), where
        for i, (a, b) in enumerate(zip(loaded, original)):
            assert_same_state(a, b, f"{where}[{i}]")
    elif isinstance(original, np.random.RandomState):
        assert_same_state(loaded.get_state(legacy=False), original.get_state(legacy=False),
                          where)
    elif isinstance(original, np.random.Generator):
        assert_same_state(loaded.bit_generator.state, original.bit_generator.state, where)
    elif scipy.sparse.issparse(original):
        assert loaded.shape == original.shape, where
        for part in ("data", "indices", "indptr"):
            assert_same_state(getattr(loaded, part), getattr(original, part), where)
    elif isinstance(original, types.FunctionType):
        assert loaded is original, where
    elif hasattr(original, "__dict__"):
        assert_same_state(loaded.__getstate__(), original.__getstate__(), where)
    elif isinstance(original, float) and np.isnan(original):
        assert np.isnan(loaded), where
    else:
        assert loaded == original, where


@pytest.mark.parametrize("suffix", [".model", "", ".joblib", ".skops"])
def test_round_trip_is_exact(fitted, tmp_path, suffix):
    model, X = fitted
    path = model_path(tmp_path, suffix)
    info = {"corpus": "synthetic", "dev F1": np.float64(0.5), "columns": (0, 1),
            "labels": {"B", "I"}, "by fold": {1: [0.5, None]}}
    save(model, path, info=info)
    # Any name but a pickle's, skops' or CRFsuite's writes the package's own format.
    start = {".joblib": b"\x80", ".skops": b"PK"}.get(suffix, b"\x89sslcrf\n")
    assert path.read_bytes()[:len(start)] == start
    loaded, loaded_info = load(path, return_info=True, trusted=trusted(path))
    assert_same_state(loaded_info, info)
    assert_same_state(loaded, model)
    assert loaded.predict(X) == model.predict(X)
    assert loaded[0].clusters_.word_features("w001") == model[0].clusters_.word_features("w001")


def test_the_same_model_writes_the_same_file(fitted, tmp_path):
    model, _ = fitted
    save(model, tmp_path / "a.model", info={"labels": {"B", "I", "O"}})
    save(load(tmp_path / "a.model"), tmp_path / "b.model", info={"labels": {"O", "I", "B"}})
    assert (tmp_path / "a.model").read_bytes() == (tmp_path / "b.model").read_bytes()


class _Unpicklable:
    """A model whose pickling fails half-way through the file."""

    def __reduce__(self):
        raise RuntimeError("cannot pickle this")


@pytest.mark.parametrize("suffix", [".model", ".joblib", ".skops"])
def test_failed_save_leaves_the_old_file(fitted, tmp_path, suffix):
    model, X = fitted
    path = model_path(tmp_path, suffix)
    save(model, path, info={"version": "good"})
    before = path.read_bytes()
    with pytest.raises((TypeError, RuntimeError, ValueError),
                       match="cannot pickle this|_Unpicklable"):
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


def test_damaged_files_are_refused_with_the_file_named(fitted, tmp_path):
    model, _ = fitted
    path = tmp_path / "model.model"
    save(model, path)
    data = path.read_bytes()
    rng = np.random.default_rng(0)
    damaged = tmp_path / "damaged.model"
    for cut in (len(data) // 2, len(data) - 1, 30, 8):
        damaged.write_bytes(data[:cut])
        with pytest.raises(ValueError, match="damaged.model is"):
            load(damaged)
    # Every change is caught (the file's checksum), wherever it falls.
    for _ in range(30):
        flipped = bytearray(data)
        for position in rng.integers(0, len(data), 1 + rng.integers(0, 4)):
            flipped[position] ^= 1 << rng.integers(0, 8)
        damaged.write_bytes(bytes(flipped))
        with pytest.raises(ValueError, match="damaged.model is"):
            load(damaged)


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
@pytest.mark.parametrize("suffix", [".model", ".skops"])
def test_every_estimator_round_trips_in_the_safe_formats(make, suffix, tmp_path):
    X, y = make_sequences(40, features="dict", random_state=0)
    model = make().fit(X[:30], y[:20] + [None] * 10)
    path = model_path(tmp_path, suffix)
    save(model, path)
    loaded = load(path)
    assert_same_state(loaded, model)
    if hasattr(model, "transduction_"):
        assert loaded.transduction_ == model.transduction_
    if hasattr(model, "predict"):
        assert loaded.predict(X[30:]) == model.predict(X[30:])


def test_a_pickle_naming_moved_modules_says_so(fitted, tmp_path):
    # A pickle of a release before the modules moved (issue #41) names sklearn_ssl_crf._crf.
    model, _ = fitted
    path = tmp_path / "old.joblib"
    save(model[-1], path)
    data = path.read_bytes()
    moved = type(model[-1]).__module__.encode()
    assert moved in data
    path.write_bytes(_renamed_module(data, moved, b"sklearn_ssl_crf._crf"))
    with pytest.raises(ValueError, match=r"old.joblib was pickled by sklearn_ssl_crf .* "
                       r"modules that have moved since .*save it as \*.model"):
        load(path, trusted=True)


def _renamed_module(data, old, new):
    """Pickle bytes with the module name ``old`` written as ``new`` (protocol 4-5 frame the
    name with its length)."""
    import struct

    for size_format in ("<B", "<I", "<Q"):
        for opcode in (b"\x8c", b"X", b"\x8d"):
            prefix = opcode + struct.pack(size_format, len(old))
            if prefix + old in data:
                return data.replace(prefix + old, opcode + struct.pack(size_format, len(new))
                                    + new)
    raise AssertionError("the module name is not in the pickle")


@pytest.mark.parametrize("suffix", [".model", ".joblib", ".skops"])
def test_a_model_saved_before_a_parameter_existed_loads_with_its_default(fitted, tmp_path,
                                                                        suffix):
    """A file has an attribute for every parameter the estimator had when it was saved: a
    parameter added since gets its default on loading, so that get_params, clone and a
    refit work, and the model predicts as before."""
    from sklearn.base import clone

    model, X = fitted
    old = pickle.loads(pickle.dumps(model))  # a copy, as saved before the parameters
    del vars(old[-1])["linesearch"], vars(old[0])["word_shape"]
    path = model_path(tmp_path, suffix)
    save(old, path)
    loaded = load(path, trusted=trusted(path))
    assert loaded[-1].get_params()["linesearch"] is None
    assert loaded[0].get_params()["word_shape"] is True
    assert loaded.predict(X) == model.predict(X)
    assert clone(loaded).get_params(deep=False).keys() == model.get_params(deep=False).keys()
