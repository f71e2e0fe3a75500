"""Issue #40's standing attack suite, memory and silent results: inputs that would take the
machine's memory are refused before anything of their size is allocated, with the numbers,
under a capped address space (`memory_cap.run_capped`); a legitimate fit under the same cap
still trains. Feature values that swamp the optimiser, NaN labels and model files with
non-finite weights are refused, never turned into a silently wrong model."""

import re
import struct
import textwrap
from decimal import Decimal

import numpy as np
import pytest
import scipy.sparse as sp
from memory_cap import run_capped

from sklearn_ssl_crf import CRF, EntropyRegularizedCRF, SequenceMatrix, load, save
from sklearn_ssl_crf.model_files._crfsuite import (
    _CHUNK_HEADER,
    _HEADER_SIZE,
    MAGIC,
    _cqdb_bytes,
    _references,
)
from sklearn_ssl_crf.utils._validation import MAX_FEATURE_VALUE

# 2,000 sentences of 10 tokens over 2,000 words, every token with a label of its own up to
# 10,000 labels: a 230 kB column file, whose CRF would need over 13 GiB.
MANY_LABELS = """
import numpy as np

def many_labels(n_labels=10_000, n_sentences=2_000, length=10):
    rng = np.random.default_rng(0)
    words = rng.integers(2000, size=(n_sentences, length))
    X = [[f"w{w}" for w in row] for row in words]
    y = [[f"L{(i * length + t) % n_labels}" for t in range(length)]
         for i in range(n_sentences)]
    return X, y
"""


def capped(code):
    """``run_capped`` of ``MANY_LABELS`` and ``code``, 1 GiB past the imports."""
    return run_capped(MANY_LABELS + textwrap.dedent(code), extra_bytes=2**30)


def assert_refused_for_memory(outcome, n_labels="10,000"):
    assert outcome["error"] == "ValueError", outcome
    message = outcome["message"]
    assert f"over {n_labels} labels" in message, message
    assert "more than the" in message and "this process can have" in message, message
    # The need named is larger than the cap, and the room left smaller than the cap.
    need, room = (float(part.split(" GiB")[0].rsplit(" ", 1)[-1])
                  for part in (message.split("needs at least about ")[1],
                               message.split("more than the ")[1]))
    assert need > 1.0 >= room, message


@pytest.mark.parametrize("estimator", [
    "CRF()",
    "EntropyRegularizedCRF(gamma=0.1, proportion_weight=1.0, c1=0.0, c2=1.0)",
])
def test_ten_thousand_labels_are_refused_before_allocating(estimator):
    outcome = capped(f"""
        from sklearn_ssl_crf import CRF, EntropyRegularizedCRF
        X, y = many_labels()
        X = [[{{"w": word}} for word in sentence] for sentence in X]
        model = {estimator}
        if isinstance(model, CRF) and type(model) is not CRF:
            model.fit(X[:1500], y[:1500], X_unlabeled=X[1500:])
        else:
            model.fit(X, y)
        """)
    assert_refused_for_memory(outcome)


def test_the_command_line_refuses_ten_thousand_labels_in_one_line(tmp_path):
    outcome = capped(f"""
        import contextlib, io
        from sklearn_ssl_crf.cli import main
        X, y = many_labels()
        path = {str(tmp_path / "train.txt")!r}
        with open(path, "w") as file:
            file.write("".join("".join(f"{{w}} {{t}}\\n" for w, t in zip(words, tags)) + "\\n"
                               for words, tags in zip(X, y)))
        errors = io.StringIO()
        with contextlib.redirect_stderr(errors):
            status = main(["train", path, "--c1", "0", "--c2", "1", "--quiet"])
        lines = errors.getvalue().splitlines()
        assert status == 2 and len(lines) == 1, (status, errors.getvalue()[-3000:])
        raise ValueError(lines[0])
        """)
    assert_refused_for_memory(outcome)
    assert outcome["message"].startswith("sklearn-ssl-crf train: error: a CRF")


def test_a_fifty_label_fit_still_trains_under_the_cap():
    outcome = capped("""
        from sklearn_ssl_crf import CRF
        from sklearn_ssl_crf.utils._memory_needs import available_memory
        assert available_memory() <= 2**30, available_memory()
        X, y = many_labels(n_labels=50, n_sentences=500)
        # Each word's label is a function of the word: a model that trains learns it.
        y = [[f"L{int(word[1:]) % 50}" for word in sentence] for sentence in X]
        X = [[{"w": word} for word in sentence] for sentence in X]
        model = CRF(c2=0.01, max_iterations=50).fit(X, y)
        assert model.score(X, y) > 0.9, model.score(X, y)
        """)
    assert outcome["error"] is None, outcome


def crfsuite_bytes(labels, attributes, shared=False):
    """A CRFsuite model file of these labels and attribute names and no features; with
    ``shared``, the attribute database is the label database."""
    label_db = _cqdb_bytes(labels)
    attribute_db = b"" if shared else _cqdb_bytes(attributes)
    off_labels = _HEADER_SIZE + _CHUNK_HEADER
    off_attributes = off_labels if shared else off_labels + len(label_db)
    off_label_refs = -(-(off_labels + len(label_db) + len(attribute_db)) // 4) * 4
    none = np.zeros(0, dtype=np.int64)
    label_refs = _references(b"LFRF", off_label_refs, none, len(labels), 0,
                             len(labels) + 2)
    off_attribute_refs = off_label_refs + len(label_refs)
    attribute_refs = _references(b"AFRF", off_attribute_refs, none, len(attributes), 0,
                                 len(attributes))
    size = off_attribute_refs + len(attribute_refs)
    header = struct.pack("<4sI4sIIIIIIIII", MAGIC, size, b"FOMC", 100, 0, len(labels),
                         len(attributes), _HEADER_SIZE, off_labels, off_attributes,
                         off_label_refs, off_attribute_refs)
    padding = b"\0" * (off_label_refs - off_labels - len(label_db) - len(attribute_db))
    return b"".join([header, struct.pack("<4sII", b"FEAT", _CHUNK_HEADER, 0), label_db,
                     attribute_db, padding, label_refs, attribute_refs])


@pytest.mark.parametrize("n, shared", [(40_000, True), (20_000, False)])
def test_a_crfsuite_file_whose_dense_weights_would_not_fit_is_refused(tmp_path, n, shared):
    names = [f"k{i:05d}" for i in range(n)]
    path = tmp_path / "model.crfsuite"
    path.write_bytes(crfsuite_bytes(names, names, shared))
    assert path.stat().st_size < 2_500_000
    outcome = capped(f"""
        from sklearn_ssl_crf import load
        load({str(path)!r})
        """)
    assert outcome["error"] == "ValueError", outcome
    assert outcome["message"].startswith(f"{path}: its CRF of {n:,} labels and {n:,} "
                                         "attributes needs at least about"), outcome


def test_a_crfsuite_file_sharing_one_database_is_refused(tmp_path):
    # Small enough to fit: refused for what it is, not for its size.
    names = [f"k{i}" for i in range(50)]
    path = tmp_path / "model.crfsuite"
    path.write_bytes(crfsuite_bytes(names, names, shared=True))
    with pytest.raises(ValueError, match=f"^{path} is not a valid CRFsuite model file: its "
                       "label database .* and attribute database .* overlap"):
        load(path)
    path.write_bytes(crfsuite_bytes(names, names))
    assert load(path).classes_ == names  # the same, with a database each, is read


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_a_crfsuite_file_with_a_non_finite_weight_is_refused(tmp_path, value):
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}]]
    y = [["A", "B"], ["B"]]
    path = tmp_path / "model.crfsuite"
    save(CRF(c2=0.1, max_iterations=5).fit(X, y), path)
    data = bytearray(path.read_bytes())
    # The weight of the first feature (type, source, destination, then the float64).
    struct.pack_into("<d", data, _HEADER_SIZE + _CHUNK_HEADER + 12, value)
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"^{path} is not a valid CRFsuite model file: "
                       rf"feature 0 \(.*\) has the weight {value}, which is not finite"):
        load(path)


TOO_LARGE = [1e30, 3 * MAX_FEATURE_VALUE, -1e16]


def sequences(value):
    X = [[{"w": "a", "x": 1.5}, {"w": "b"}], [{"w": "b"}, {"w": "a", "x": value}]]
    return X, [["A", "B"], ["B", "A"]]


@pytest.mark.parametrize("value", TOO_LARGE)
def test_feature_values_that_swamp_the_optimiser_are_refused_at_fit(value):
    X, y = sequences(value)
    with pytest.raises(ValueError, match=r"sequence 1, token 1: attribute 'x' has the "
                       rf"value {re.escape(repr(value))}, beyond the \+-2\*\*20"):
        CRF().fit(X, y)
    # Feature matrices: the same, the attribute named by its column.
    matrices = [sp.csr_matrix([[1.0, 0.0], [0.0, 1.0]]), sp.csr_matrix([[0, 2.0], [value, 1]])]
    with pytest.raises(ValueError, match=r"too large feature values: sequence 1, token 1: "
                       r"attribute 'column 0' has the value"):
        CRF().fit(matrices, y)


@pytest.mark.parametrize("value", [*TOO_LARGE, np.nan])
def test_unlabeled_feature_matrices_are_checked_too(value):
    X = [sp.csr_matrix([[1.0, 0.0], [0.0, 1.0]])]
    unlabeled = SequenceMatrix(sp.csr_matrix([[1.0, 0.0], [0.0, 2.0], [0.0, value]]),
                                np.array([0, 1, 3]))
    with pytest.raises(ValueError, match=r"^X_unlabeled contains .* feature values: "
                       r"sequence 1, token 1: attribute 'column 1' has the"):
        EntropyRegularizedCRF(gamma=0.1, proportion_weight=1.0, c1=0.0, c2=1.0).fit(
            X, [["A", "B"]], X_unlabeled=unlabeled)


@pytest.mark.parametrize("value", TOO_LARGE)
def test_feature_values_that_swamp_the_potentials_are_refused_at_predict(value):
    X, y = sequences(2.0)
    model = CRF(c2=0.1).fit(X, y)
    X_test, _ = sequences(value)
    for method in (model.predict, model.predict_marginals):
        with pytest.raises(ValueError, match=r"sequence 1, token 1: attribute 'x' has the "
                           rf"value {re.escape(repr(value))}"):
            method(X_test)


def test_the_largest_accepted_feature_value_still_trains():
    # Word i's feature carries the word's label; scaled up to the bound, a fit still
    # learns it: the bound refuses no value that a fit can take whatever the data.
    rng = np.random.default_rng(0)
    words = rng.integers(6, size=(200, 6))
    X = [[{f"w{w}": MAX_FEATURE_VALUE * (1 + w) / 6} for w in row] for row in words]
    y = [[f"L{w % 3}" for w in row] for row in words]
    model = CRF(c2=0.1).fit(X, y)
    assert model.termination_condition_ != "line_search_failed"
    assert model.score(X, y) == 1.0


@pytest.mark.parametrize("nan", [float("nan"), np.float64("nan"), np.float32("nan"),
                                 complex("nan"), Decimal("nan")])
def test_nan_labels_are_refused(nan):
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}]]
    with pytest.raises(ValueError, match=r"y\[1\]\[0\] is NaN"):
        CRF().fit(X, [["A", "B"], [nan, "A"]])
    # Numeric labels too: each NaN would be a class of its own, predicted as nan.
    with pytest.raises(ValueError, match=r"y\[0\]\[1\] is NaN"):
        CRF().fit(X, [[1.0, nan], [2.0, 1.0]])
