"""CRFsuite model files: read as CRFsuite's own tagger reads them, written so that it reads
ours. The oracles are sklearn-crfsuite and python-crfsuite themselves, where installed."""

import struct

import numpy as np
import pytest

from sklearn_ssl_crf import CRF, load, save
from sklearn_ssl_crf.model_files._crfsuite import _cqdb_bytes, _hashlittle

SKIP_REASON = ("the oracle is a model file written by sklearn-crfsuite "
               "(pip install sklearn-crfsuite)")


def synthetic_corpus(n_sequences, seed):
    """Token dicts with every value kind python-crfsuite names: str, bool (True and False),
    float (not 1), int, a nested dict and a list of str; labels that depend on them."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(30)]
    X, y = [], []
    for _ in range(n_sequences):
        length = int(rng.integers(1, 9))
        chosen = rng.choice(len(words), size=length)
        sequence, labels = [], []
        for t, index in enumerate(chosen):
            word = words[index]
            sequence.append({
                "word": word,
                "even": bool(index % 2 == 0),
                "score": float(rng.normal()),
                "length": int(index % 5),
                "context": {"previous": words[chosen[t - 1]] if t else "<s>",
                            "weight": float(rng.uniform(0.5, 2.0))},
                "shapes": ["a" * (index % 3 + 1), "b"],
            })
            labels.append("ABC"[index % 3] if t == 0 or index % 4 else labels[-1])
        X.append(sequence)
        y.append(labels)
    return X, y


@pytest.fixture(scope="module")
def synthetic():
    X, y = synthetic_corpus(120, seed=0)
    # Held-out sequences have attributes no model saw (word w99, other contexts).
    X_test, _ = synthetic_corpus(40, seed=1)
    X_test[0][0]["word"] = "w99"
    return X, y, X_test


def crfsuite_model_file(X, y, path, **params):
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite", reason=SKIP_REASON)
    reference = sklearn_crfsuite.CRF(model_filename=str(path), **params)
    reference.fit(X, y)
    return reference


def crfsuite_marginals(path, X, classes):
    """python-crfsuite's Tagger.marginal of every label (in ``classes`` order) and token."""
    pycrfsuite = pytest.importorskip("pycrfsuite", reason="the oracle is python-crfsuite")
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    marginals = []
    for sequence in X:
        tagger.set(sequence)
        marginals.append(np.array([[tagger.marginal(label, t) for label in classes]
                                   for t in range(len(sequence))]))
    return marginals


def crfsuite_tags(path, X):
    pycrfsuite = pytest.importorskip("pycrfsuite", reason="the oracle is python-crfsuite")
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    return [tagger.tag(sequence) for sequence in X]


def assert_same_marginals(expected, model, X):
    ours = model.predict_marginals(X, as_arrays=True)
    assert len(ours) == len(expected)
    for mine, theirs in zip(ours, expected):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-6)


# -- reading sklearn-crfsuite's files ------------------------------------------------------


@pytest.mark.parametrize("params", [{"c1": 0.0, "c2": 0.1},
                                    {"c1": 0.2, "c2": 0.01, "all_possible_transitions": True}])
def test_sklearn_crfsuite_model_loads_to_the_same_tagger(synthetic, tmp_path, params):
    X, y, X_test = synthetic
    path = tmp_path / "reference.crfsuite"
    reference = crfsuite_model_file(X, y, path, max_iterations=40, **params)
    model = load(path)
    assert isinstance(model, CRF) and model.order == 1
    assert model.classes_ == list(reference.classes_)
    assert model.predict(X_test) == [list(tags) for tags in reference.predict(X_test)]
    assert model.predict(X) == [list(tags) for tags in reference.predict(X)]
    assert_same_marginals(crfsuite_marginals(path, X_test, model.classes_), model, X_test)
    # sklearn-crfsuite's dumps round weights to 6 decimals.
    theirs = reference.state_features_
    assert set(model.state_features_) == set(theirs)
    for key, weight in model.state_features_.items():
        assert weight == pytest.approx(theirs[key], abs=1e-6)
    assert set(model.transition_features_) == set(reference.transition_features_)
    assert model.score(X, y) == pytest.approx(reference.score(X, y), rel=1e-12)


def test_attributes_and_labels_are_crfsuites(synthetic, tmp_path):
    X, y, _ = synthetic
    path = tmp_path / "reference.crfsuite"
    reference = crfsuite_model_file(X, y, path, c2=0.1, max_iterations=20)
    model, info = load(path, return_info=True)
    assert info == {}
    names = reference.tagger_.info().attributes  # name -> CRFsuite's attribute id
    assert model.attributes_ == sorted(names, key=lambda name: int(names[name]))
    assert model.vectorizer_.get_feature_names_out().tolist() == model.attributes_
    # ("score" may be missing: CRFsuite drops the features whose values sum below 0.)
    assert {"word:w3", "even", "length", "context:previous:<s>", "context:weight",
            "shapes:b"} <= set(model.attributes_)
    assert model.state_weights_.shape == (len(model.attributes_), len(model.classes_))
    assert model.num_attributes_ == len(model.attributes_)
    # CRFsuite has no start or end weights, and our CRF gets CRF()'s settings.
    assert model.trigram_weights_ is None and model.allowed_transitions_ is None
    # ... but no label constraints, which CRFsuite does not have.
    assert model.get_params() == CRF(constraints=None).get_params()
    assert model.constraints_ is None
    assert model.training_log_ is None


def test_cqdb_as_crfsuite_writes_it(synthetic, tmp_path):
    X, y, _ = synthetic
    path = tmp_path / "reference.crfsuite"
    crfsuite_model_file(X, y, path, c2=0.1, max_iterations=20)
    data = path.read_bytes()
    off_labels, off_attributes = struct.unpack_from("<II", data, 32)
    model = load(path)
    # Labels are put in id order: our database is CRFsuite's, byte for byte.
    assert data[off_labels:off_attributes] == _cqdb_bytes(model.classes_)
    # Attributes are put in another order; every record's bucket holds our hash of it.
    size, = struct.unpack_from("<I", data, off_attributes + 4)
    references = np.frombuffer(data, "<u4", 512, off_attributes + 24).reshape(256, 2)
    buckets = {}
    for offset, count in references.tolist():
        if offset:
            table = np.frombuffer(data, "<u4", 2 * count, off_attributes + offset)
            buckets.update((int(r), int(h)) for h, r in table.reshape(-1, 2) if r)
    keys = [name.encode() + b"\0" for name in model.attributes_]
    records = np.frombuffer(data, "<u4", len(keys),
                            off_attributes + struct.unpack_from("<I", data,
                                                                off_attributes + 20)[0])
    assert [buckets[r] for r in records.tolist()] == _hashlittle(keys).tolist()
    assert len(buckets) == len(keys) and size <= len(data) - off_attributes


def test_hashlittle_published_values():
    # lookup3.c's self-test: the empty key (no mixing) and its driver5 sentence.
    assert _hashlittle([b"", b"Four score and seven years ago"]).tolist() == [
        0xDEADBEEF, 0x17770551]


# -- CoNLL-2000 ---------------------------------------------------------------------------


@pytest.mark.realdata
def test_conll2000_model_of_sklearn_crfsuite(shared_data, tutorial_features, tmp_path):
    """300 training sentences, 50 iterations with L1 and L2 (about a second); every test
    sentence gets the same tags as sklearn-crfsuite's, and python-crfsuite's marginals."""
    from sklearn_ssl_crf.datasets import load_conll2000

    pytest.importorskip("sklearn_crfsuite", reason=SKIP_REASON)
    splits = load_conll2000(shared_data / "conll2000")
    (train, y_train), (test, y_test) = splits["train"], splits["test"]
    X_train = [tutorial_features(sentence) for sentence in train[:300]]
    X_test = [tutorial_features(sentence) for sentence in test]
    path = tmp_path / "conll2000.crfsuite"
    reference = crfsuite_model_file(X_train, y_train[:300], path, c1=0.05, c2=0.01,
                                    max_iterations=50)
    model = load(path)
    predicted = model.predict(X_test)
    assert predicted == [list(tags) for tags in reference.predict(X_test)]
    assert model.score(X_test, y_test) == pytest.approx(reference.score(X_test, y_test),
                                                        rel=1e-12)
    assert_same_marginals(crfsuite_marginals(path, X_test, model.classes_), model, X_test)
    # And written back, python-crfsuite reads ours to the same tags.
    ours = tmp_path / "ours.crfsuite"
    save(model, ours)
    assert crfsuite_tags(ours, X_test) == predicted


# -- writing ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ours(synthetic):
    """Our CRF, every (attribute, label) weight non-zero, and one fitted with L1 (zeros)."""
    X, y, _ = synthetic
    return {"dense": CRF(c2=0.1, max_iterations=60).fit(X, y),
            "l1": CRF(c1=0.3, c2=0.01, max_iterations=60).fit(X, y)}


@pytest.mark.parametrize("kind", ["dense", "l1"])
def test_our_file_reads_in_python_crfsuite(synthetic, ours, tmp_path, kind):
    _, _, X_test = synthetic
    model = ours[kind]
    path = tmp_path / "ours.crfsuite"
    save(model, path)
    assert crfsuite_tags(path, X_test) == model.predict(X_test)
    assert_same_marginals(crfsuite_marginals(path, X_test, model.classes_), model, X_test)
    # sklearn-crfsuite opens it as a trained model.
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite", reason=SKIP_REASON)
    reference = sklearn_crfsuite.CRF(model_filename=str(path))
    assert [list(tags) for tags in reference.predict(X_test)] == model.predict(X_test)
    assert list(reference.classes_) == model.classes_


@pytest.mark.parametrize("kind", ["dense", "l1"])
def test_our_file_reads_back_to_the_same_weights(synthetic, ours, tmp_path, kind):
    _, _, X_test = synthetic
    model = ours[kind]
    path = tmp_path / "ours.crfsuite"
    save(model, path)
    loaded = load(path)
    assert loaded.classes_ == model.classes_
    assert loaded.attributes_ == model.attributes_
    np.testing.assert_array_equal(loaded.state_weights_, model.state_weights_)
    np.testing.assert_array_equal(loaded.transition_weights_, model.transition_weights_)
    assert loaded.predict(X_test) == model.predict(X_test)
    assert loaded.state_features_ == model.state_features_
    assert loaded.transition_features_ == model.transition_features_


def test_labels_and_attributes_beyond_ascii_survive(tmp_path):
    X = [[{"wört": "straße", "日本": True}, {"wört": "café", "x": 2.5}]]
    y = [["Ä", "語"]]
    model = CRF(c2=0.1, max_iterations=20).fit(X, y)
    path = tmp_path / "unicode.crfsuite"
    save(model, path)
    loaded = load(path)
    assert loaded.attributes_ == model.attributes_ and loaded.classes_ == ["Ä", "語"]
    assert loaded.predict(X) == model.predict(X)
    pytest.importorskip("pycrfsuite", reason="the oracle is python-crfsuite")
    assert crfsuite_tags(path, X) == model.predict(X)


def test_what_crfsuite_cannot_express_is_refused(synthetic, ours, tmp_path):
    X, y, _ = synthetic
    path = tmp_path / "model.crfsuite"
    with pytest.raises(ValueError, match="order=2"):
        save(CRF(order=2, max_iterations=3).fit(X[:20], y[:20]), path)
    matrices = [np.ones((len(seq), 2)) for seq in X[:10]]
    with pytest.raises(ValueError, match="fitted on feature matrices"):
        save(CRF(max_iterations=3).fit(matrices, y[:10]), path)
    with pytest.raises(ValueError, match="labels are strings; this model has the label 1"):
        save(CRF(max_iterations=3).fit(X[:2], [[1] * len(s) for s in X[:2]]), path)
    with pytest.raises(ValueError, match="not a dict"):
        save({"model": ours["dense"]}, path)
    with pytest.raises(ValueError, match="no place for info"):
        save(ours["dense"], path, info={"corpus": "synthetic"})
    with pytest.raises(ValueError, match="not fitted"):
        save(CRF(), path)
    assert not any(tmp_path.iterdir())  # refused before any file was made


def test_failed_write_leaves_the_old_file(ours, tmp_path, monkeypatch):
    path = tmp_path / "model.crfsuite"
    save(ours["dense"], path)
    before = path.read_bytes()

    def broken(*args):
        raise OSError("disk full")

    monkeypatch.setattr("sklearn_ssl_crf.model_files._save_load.write_crfsuite", broken)
    with pytest.raises(OSError, match="disk full"):
        save(ours["l1"], path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


# -- bad files ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_bytes(ours, tmp_path_factory):
    # The dense model: every attribute has features, so each list holds a feature id.
    path = tmp_path_factory.mktemp("good") / "good.crfsuite"
    save(ours["dense"], path)
    return path.read_bytes()


def header(data):
    """The header's named fields."""
    names = ["size", "type", "version", "features", "labels", "attributes", "off_features",
             "off_labels", "off_attributes", "off_label_refs", "off_attribute_refs"]
    return dict(zip(names, struct.unpack_from("<I4sIIIIIIIII", data, 4)))


def with_uint32(data, offset, value):
    data = bytearray(data)
    struct.pack_into("<I", data, offset, value)
    return bytes(data)


def corruptions(data):
    """(description, bytes, what the message must say) of broken files."""
    fields = header(data)
    cases = [
        ("empty", b"", "does not start with"),
        ("magic only", data[:4], "does not start with"),
        ("truncated", data[:len(data) // 2], "truncated"),
        ("last byte gone", data[:-1], "truncated"),
        ("model type", data[:8] + b"XXXX" + data[12:], "model type"),
        ("version", with_uint32(data, 12, 7), "format version 7"),
        ("no labels", with_uint32(data, 20, 0), "no labels"),
    ]
    for name, position in [("off_features", 28), ("off_labels", 32),
                           ("off_attributes", 36), ("off_label_refs", 40),
                           ("off_attribute_refs", 44)]:
        cases.append((f"{name} past the end", with_uint32(data, position, len(data) + 8),
                      "beyond the end"))
        cases.append((f"{name} into the header", with_uint32(data, position, 4), "no b'"))
    references = fields["off_attribute_refs"] + 12
    first_list = struct.unpack_from("<I", data, references)[0]  # attribute 0's features
    first_id = struct.unpack_from("<I", data, first_list + 4)[0]
    labels = fields["off_labels"]
    links = labels + struct.unpack_from("<I", data, labels + 20)[0]
    cases += [
        ("reference list past the end", with_uint32(data, references, 2**31),
         "beyond the end"),
        ("a feature id out of range", with_uint32(data, first_list + 4, 2**30),
         "name feature"),
        ("a feature listed twice", with_uint32(data, first_list + 8, first_id),
         "list one feature twice"),
        ("feature chunk too small", with_uint32(data, fields["off_features"] + 4, 12),
         "cannot hold"),
        ("label of a feature", with_uint32(data, fields["off_features"] + 12 + 8, 99),
         "does not belong"),
        ("a label link", with_uint32(data, links + 4, 0), "no record for label 1"),
        ("a label's size", with_uint32(data, labels + 24 + 2048 + 4, 2**20),
         "a record that lies beyond its end"),
        ("a label's NUL", with_uint32(data, labels + 24 + 2048 + 4, 1), "does not end in NUL"),
        ("a label's id", with_uint32(data, labels + 24 + 2048, 1), "to the record of another"),
        ("byte order", with_uint32(data, fields["off_attributes"] + 12, 0x71534462),
         "byte-order mark"),
    ]
    return cases


def test_corrupt_files_give_a_clear_error(model_bytes, tmp_path):
    for description, data, message in corruptions(model_bytes):
        path = tmp_path / "bad model.crfsuite"
        path.write_bytes(data)
        with pytest.raises(ValueError) as error:
            load(path)
        text = str(error.value)
        assert str(path) in text, description
        assert message in text, f"{description}: {text}"


def test_every_truncation_is_a_value_error(model_bytes, tmp_path):
    path = tmp_path / "cut.crfsuite"
    for length in range(0, len(model_bytes), max(1, len(model_bytes) // 200)):
        path.write_bytes(model_bytes[:length])
        with pytest.raises(ValueError, match="cut.crfsuite"):
            load(path)


def test_random_byte_flips_never_raise_anything_but_value_error(model_bytes, tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "flipped.crfsuite"
    for _ in range(300):
        data = bytearray(model_bytes)
        for position in rng.integers(4, len(data), size=3):
            data[position] = int(rng.integers(256))
        path.write_bytes(bytes(data))
        try:
            load(path)
        except ValueError as error:
            assert "flipped.crfsuite" in str(error)


def test_saving_a_model_with_label_constraints_warns(tmp_path):
    X = [[{"w": "new"}, {"w": "york"}], [{"w": "in"}, {"w": "paris"}]]
    y = [["B-LOC", "I-LOC"], ["O", "B-LOC"]]
    model = CRF(c2=0.1, max_iterations=20).fit(X, y)
    assert model.constraints_ is not None
    path = tmp_path / "bio.crfsuite"
    with pytest.warns(UserWarning, match="CRFsuite has no label constraints"):
        save(model, path)
    loaded = load(path)
    assert loaded.constraints_ is None
    np.testing.assert_array_equal(loaded.state_weights_, model.state_weights_)
    unconstrained = CRF(c2=0.1, max_iterations=20, constraints=None).fit(X, y)
    assert loaded.predict(X) == unconstrained.predict(X)
    # Given the rules again, the loaded model tags as the original: "york" alone is I-LOC
    # unconstrained, a start that BIO forbids.
    probe = [[{"w": "york"}], *X]
    assert loaded.predict(probe)[0] == ["I-LOC"] and model.predict(probe)[0] == ["O"]
    assert loaded.set_constraints("bio").predict(probe) == model.predict(probe)
    assert loaded.constraints == "bio" and loaded.constraints_.scheme == "bio"
    assert load(path).set_constraints("auto").predict(probe) == model.predict(probe)
