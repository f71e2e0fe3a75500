"""Tests of `sklearn_ssl_crf.features`: SequenceVectorizer, WindowFeatures and WindowRows."""

import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.feature_extraction import DictVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.utils.validation import check_is_fitted

from sklearn_ssl_crf.datasets import load_conll2000
from sklearn_ssl_crf.estimators._crf import CRF
from sklearn_ssl_crf.features import SequenceVectorizer, WindowFeatures, WindowRows
from sklearn_ssl_crf.utils._sequences import SequenceMatrix

# One token of every value type python-crfsuite accepts, with the attributes it must give.
RICH_TOKEN = {
    "w": "a",
    "b": "été".encode("utf-8"),
    "t": True,
    "f": False,
    "x": 0.5,
    "n": 3,
    "d": {"e": "f", "g": {"h": 2.0}, "i": True, "j": False, "l": ["p", "q"]},
    "l": ["u", "v"],
    "s": {"z", "y"},
    b"k": "v",
}
RICH_ATTRIBUTES = {
    "w:a": 1.0,
    "b:été": 1.0,
    "t": 1.0,
    "f": 0.0,
    "x": 0.5,
    "n": 3.0,
    "d:e:f": 1.0,
    "d:g:h": 2.0,
    "d:i": 1.0,
    "d:j": 0.0,
    "d:l:p": 1.0,
    "d:l:q": 1.0,
    "l:u": 1.0,
    "l:v": 1.0,
    "s:y": 1.0,
    "s:z": 1.0,
    "k:v": 1.0,
}
RICH_SEQUENCES = [[RICH_TOKEN, {}, ["m", "n"], ("o",)], [], [{"w": "b", "bias": 1.0}]]
RICH_EXPECTED = [[RICH_ATTRIBUTES, {}, {"m": 1.0, "n": 1.0}, {"o": 1.0}], [],
                 [{"w:b": 1.0, "bias": 1.0}]]


def row_dicts(Xs):
    """Per sequence, per token, the dict of attribute name -> stored weight."""
    names = Xs.feature_names
    sequences = []
    for rows in Xs:
        rows = rows.tocsr()
        sequences.append([
            {names[j]: w for j, w in zip(rows.indices[rows.indptr[t]:rows.indptr[t + 1]],
                                         rows.data[rows.indptr[t]:rows.indptr[t + 1]])}
            for t in range(rows.shape[0])
        ])
    return sequences


def nonzero(d):
    return {k: v for k, v in d.items() if v != 0}


def random_corpus(rng, n_sequences=30, max_length=8):
    """Flat token dicts of str, bool, float, int and list-of-str values."""
    words = [f"w{i}" for i in range(12)]
    corpus = []
    for _ in range(n_sequences):
        sequence = []
        for _ in range(rng.integers(0, max_length + 1)):
            token = {"word": str(rng.choice(words)), "bias": 1.0}
            if rng.random() < 0.7:
                token["title"] = bool(rng.random() < 0.5)
            if rng.random() < 0.5:
                token["score"] = float(np.round(rng.normal(), 3))
            if rng.random() < 0.3:
                token["count"] = int(rng.integers(-3, 4))
            if rng.random() < 0.4:
                token["tags"] = [str(t) for t in rng.choice(words, size=2, replace=False)]
            sequence.append(token)
        corpus.append(sequence)
    return corpus


def assert_same_sequences(A, B):
    assert isinstance(A, SequenceMatrix) and isinstance(B, SequenceMatrix)
    np.testing.assert_array_equal(A.offsets, B.offsets)
    np.testing.assert_array_equal(A.feature_names, B.feature_names)
    assert A.matrix.shape == B.matrix.shape
    assert (A.matrix != B.matrix).nnz == 0


# --- SequenceVectorizer: attribute names and weights -------------------------------------


def test_exact_attributes_of_every_value_type():
    Xs = SequenceVectorizer().fit_transform(RICH_SEQUENCES)
    assert isinstance(Xs, SequenceMatrix)
    assert Xs.matrix.dtype == np.float64 and sp.isspmatrix_csr(Xs.matrix)
    np.testing.assert_array_equal(Xs.offsets, [0, 4, 4, 5])
    assert row_dicts(Xs) == RICH_EXPECTED


def test_attributes_match_python_crfsuite():
    pycrfsuite = pytest.importorskip("pycrfsuite")
    # python-crfsuite rejects tuple values, so compare without the tuple token's kind.
    sequences = [[RICH_TOKEN, {}, ["m", "n"], {"z": {"y": {"x": 1.5}}, "c": ["a", "b"]}],
                 [{"w": "b", "bias": 1.0}]]
    ours = row_dicts(SequenceVectorizer().fit_transform(sequences))
    for sequence, our_sequence in zip(sequences, ours):
        # False is the attribute with weight 0 in both.
        assert pycrfsuite.ItemSequence(sequence).items() == our_sequence


def test_repeated_attribute_weights_add():
    X = [[{"a": "b", "a:b": 2.0, "l": ["x", "x"]}, ["y", "y", "z"]]]
    assert row_dicts(SequenceVectorizer().fit_transform(X)) == [
        [{"a:b": 3.0, "l:x": 2.0}, {"y": 2.0, "z": 1.0}]
    ]


def test_rows_are_canonical():
    X = [[{"b": "1", "a": "1", "l": ["z", "y", "z"]}, {"a": "1", "c": True}]]
    matrix = SequenceVectorizer().fit_transform(X).matrix
    assert matrix.has_sorted_indices and matrix.has_canonical_format


def test_numpy_scalars_and_mapping_tokens():
    X = [[{"f": np.float32(0.25), "i": np.int64(-2), "t": np.bool_(True), "u": np.bool_(False),
           "s": np.str_("v")},
          OrderedDict(a="b", n=4)]]
    assert row_dicts(SequenceVectorizer().fit_transform(X)) == [
        [{"f": 0.25, "i": -2.0, "t": 1.0, "u": 0.0, "s:v": 1.0}, {"a:b": 1.0, "n": 4.0}]
    ]


def test_zero_weights_are_stored_as_explicit_zeros():
    Xs = SequenceVectorizer().fit_transform([[{"z": 0.0, "i": 0, "f": False}]])
    assert list(Xs.feature_names) == ["z", "i", "f"]
    assert Xs.matrix.nnz == 3 and not Xs.matrix.data.any()


def test_matches_dict_vectorizer_on_flat_dicts():
    X = random_corpus(np.random.default_rng(0), n_sequences=60)
    flat = [token for sequence in X for token in sequence]
    Xs = SequenceVectorizer().fit_transform(X)
    dv = DictVectorizer(separator=":")
    D = dv.fit_transform(flat).toarray()
    dv_names = list(dv.get_feature_names_out())
    ours = Xs.matrix.toarray()
    # Both keep attributes that are only ever False (all zeros).
    assert set(Xs.feature_names) == set(dv_names)
    for j, name in enumerate(Xs.feature_names):
        np.testing.assert_array_equal(ours[:, j], D[:, dv_names.index(name)], err_msg=name)


def test_matches_dict_vectorizer_on_conll2000(shared_data, tutorial_features):
    train = load_conll2000(shared_data / "conll2000")["train"][0][:600]
    X = [tutorial_features(sentence) for sentence in train]
    flat = [token for sequence in X for token in sequence]
    Xs = SequenceVectorizer().fit_transform(X)
    dv = DictVectorizer(separator=":")
    D = dv.fit_transform(flat).tocsc()
    columns = [dv.vocabulary_[name] for name in Xs.feature_names]
    assert (D[:, columns] != Xs.matrix).nnz == 0
    np.testing.assert_array_equal(Xs.lengths, [len(s) for s in train])


# --- SequenceVectorizer: vocabulary ----------------------------------------------------


def test_feature_names_in_order_of_first_appearance():
    X = [[{"b": "2", "a": True}, {"c": 1.5, "b": "1"}], [["z"], {"a": True, "b": "2"}]]
    vec = SequenceVectorizer()
    vec.fit(X)
    expected = ["b:2", "a", "c", "b:1", "z"]
    out = vec.get_feature_names_out()
    assert isinstance(out, np.ndarray) and out.dtype == object
    assert list(out) == expected
    assert vec.feature_names_ == expected
    assert vec.vocabulary_ == {name: j for j, name in enumerate(expected)}


def test_set_elements_in_sorted_order():
    # Set iteration order depends on string hashing; column order must not.
    elements = {f"e{i:02d}" for i in range(20)}
    vec = SequenceVectorizer().fit([[{"s": elements}, set(elements)]])
    names = sorted(elements)
    assert vec.feature_names_ == [f"s:{e}" for e in names] + names


def test_false_only_attribute_gets_a_column():
    # As python-crfsuite: an attribute seen only as False is an attribute of the data.
    vec = SequenceVectorizer().fit([[{"f": False, "g": True}]])
    assert vec.feature_names_ == ["f", "g"]
    Xs = vec.transform([[{"f": True, "g": True}]])
    assert row_dicts(Xs) == [[{"f": 1.0, "g": 1.0}]]


@pytest.mark.parametrize("min_freq, kept", [
    (0, ["a:x", "b", "c", "d:y"]),
    (0.5, ["a:x", "b", "c", "d:y"]),
    (1, ["a:x", "b", "d:y"]),
    (2, ["b"]),
    (3, []),
])
def test_min_freq_boundary(min_freq, kept):
    # Tokens containing each attribute: a:x 2, b 3, c 1, d:y 2 (twice in one token).
    X = [[{"a": "x", "b": True}, {"a": "x", "b": 1.0, "c": 2.0}],
         [{"b": True, "d": ["y", "y"]}, {"d": ["y"]}]]
    vec = SequenceVectorizer(min_freq=min_freq)
    Xs = vec.fit_transform(X)
    assert vec.feature_names_ == kept
    assert list(Xs.feature_names) == kept
    expected = [[{k: v for k, v in token.items() if k in kept} for token in sequence]
                for sequence in row_dicts(SequenceVectorizer().fit_transform(X))]
    assert row_dicts(Xs) == expected
    # transform reuses lookups made during fit: dropped attributes must stay dropped.
    assert_same_sequences(vec.transform(X), Xs)


def test_false_values_after_min_freq():
    # A False value stores its attribute as 0; min_freq counts it, and transform keeps the
    # columns fit left (the lookups of False values are remapped like the others).
    X = [[{"a": False, "b": True}, {"c": False, "a": False}], [{"d": False, "c": True}]]
    vec = SequenceVectorizer(min_freq=1)
    Xs = vec.fit_transform(X)
    assert vec.feature_names_ == ["a", "c"]
    assert row_dicts(Xs) == [[{"a": 0.0}, {"a": 0.0, "c": 0.0}], [{"c": 1.0}]]
    assert_same_sequences(vec.transform(X), Xs)


@pytest.mark.parametrize("min_freq", [-1, "2", None, True, float("nan")])
def test_invalid_min_freq(min_freq):
    with pytest.raises(ValueError, match="min_freq"):
        SequenceVectorizer(min_freq=min_freq).fit([[{"a": "b"}]])


def test_unseen_attributes_dropped_at_transform():
    vec = SequenceVectorizer().fit([[{"w": "a", "t": True, "x": 2.0}]])
    Xs = vec.transform([[{"w": "zzz", "t": True, "new": 3.0, "x": 0.5, "n": {"e": "f"}},
                         ["w:a", "unknown"]]])
    assert Xs.n_features == 3
    assert row_dicts(Xs) == [[{"t": 1.0, "x": 0.5}, {"w:a": 1.0}]]


def test_fit_transform_equals_fit_then_transform():
    X = random_corpus(np.random.default_rng(1))
    vec = SequenceVectorizer()
    Xs = vec.fit_transform(X)
    assert_same_sequences(Xs, SequenceVectorizer().fit(X).transform(X))
    assert_same_sequences(Xs, vec.transform(X))


def test_transform_with_vocabulary_set_by_hand():
    vec = SequenceVectorizer().fit([[{"w": "a"}]])
    vec.vocabulary_ = {"w:b": 0, "t": 1}
    vec.feature_names_ = ["w:b", "t"]
    assert row_dicts(vec.transform([[{"w": "a", "t": True}, {"w": "b"}]])) == [
        [{"t": 1.0}, {"w:b": 1.0}]
    ]


def test_empty_inputs():
    vec = SequenceVectorizer()
    Xs = vec.fit_transform([])
    assert len(Xs) == 0 and Xs.matrix.shape == (0, 0)
    assert vec.get_feature_names_out().shape == (0,)
    Xs = vec.fit_transform([[], [{}], []])
    np.testing.assert_array_equal(Xs.offsets, [0, 0, 1, 1])
    assert Xs.matrix.shape == (1, 0)
    assert len(SequenceVectorizer().fit([[{"a": "b"}]]).transform([])) == 0


def test_any_iterable_of_sequences():
    X = random_corpus(np.random.default_rng(2))
    expected = SequenceVectorizer().fit_transform(X)
    as_tuples = (tuple(sequence) for sequence in X)
    assert_same_sequences(SequenceVectorizer().fit_transform(as_tuples), expected)


def test_input_not_modified():
    X = [[RICH_TOKEN, {}, ["m", "n"]], [{"w": "b", "bias": 1.0}]] + random_corpus(
        np.random.default_rng(3))
    before = copy.deepcopy(X)
    vec = SequenceVectorizer(min_freq=1)
    vec.fit_transform(X)
    vec.transform(X)
    assert X == before


# --- SequenceVectorizer: errors --------------------------------------------------------


@pytest.mark.parametrize("bad, match", [
    (float("nan"), r"sequence 1, token 2: attribute 'x' has the non-finite value nan"),
    (float("inf"), r"sequence 1, token 2: attribute 'x' has the non-finite value inf"),
    (np.float64("-inf"), r"sequence 1, token 2: attribute 'x' has the non-finite value"),
    ({"y": float("nan")}, r"sequence 1, token 2: attribute 'x:y' has the non-finite"),
])
def test_non_finite_values(bad, match):
    X = [[{"a": "b"}], [{"a": "b"}, {}, {"a": "c", "x": bad}]]
    with pytest.raises(ValueError, match=match):
        SequenceVectorizer().fit(X)


@pytest.mark.parametrize("token, match", [
    ({3: "v"}, r"token 1: attribute key 3 has type int; keys must be str"),
    ({3: True}, r"attribute key 3 has type int"),
    ({3: False}, r"attribute key 3 has type int"),
    ({3: 2.0}, r"attribute key 3 has type int"),
    ({(1,): [1]}, r"attribute key \(1,\) has type tuple"),
    ({"k": None}, r"token 1: attribute 'k' has a value of type NoneType"),
    ({"k": object()}, r"attribute 'k' has a value of type object"),
    ({"k": {"j": None}}, r"attribute 'k:j' has a value of type NoneType"),
    ({"k": ["a", 1]}, r"the value of 'k' contains a int"),
    (["a", None], r"the token contains a NoneType"),
    ("word", r"token 1: the token is a str, 'word'; a token must be a dict"),
    (42, r"the token is a int"),
])
def test_bad_tokens(token, match):
    with pytest.raises(TypeError, match=match):
        SequenceVectorizer().fit([[{"a": "b"}, token]])


def test_bad_key_detected_at_transform():
    vec = SequenceVectorizer().fit([[{"a": "b", "t": True}]])
    with pytest.raises(TypeError, match=r"sequence 0, token 0: attribute key 1 has type int"):
        vec.transform([[{1: True}]])


@pytest.mark.parametrize("X, match", [
    ("some text", r"X must be a list of sequences of tokens, got str"),
    (b"bytes", r"X must be a list of sequences of tokens, got bytes"),
    ({"a": "b"}, r"got a dict"),
    (5, r"got int"),
    (["a sentence"], r"sequence 0 is a str, not a list of tokens"),
    ([[{"a": "b"}], {"a": "b"}], r"sequence 1 is a dict"),
    ([[{"a": "b"}], 3], r"sequence 1 is a int"),
])
def test_bad_corpus(X, match):
    with pytest.raises(TypeError, match=match):
        SequenceVectorizer().fit_transform(X)
    with pytest.raises(TypeError, match=match):
        SequenceVectorizer().fit([[{"a": "b"}]]).transform(X)


def test_transform_before_fit():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        SequenceVectorizer().transform([[{"a": "b"}]])


# --- SequenceVectorizer: scikit-learn protocol ----------------------------------------


def test_clone_and_params():
    vec = SequenceVectorizer(min_freq=2).fit([[{"a": "b"}]])
    cloned = clone(vec)
    assert cloned.get_params() == {"min_freq": 2}
    assert not hasattr(cloned, "vocabulary_")


def test_pickle_round_trip():
    X = random_corpus(np.random.default_rng(4))
    vec = SequenceVectorizer(min_freq=1).fit(X)
    data = pickle.dumps(vec)
    loaded = pickle.loads(data)
    assert loaded.vocabulary_ == vec.vocabulary_
    assert "_column_cache" not in vec.__getstate__()  # derived data is not stored
    assert hasattr(vec, "_column_cache")  # ... and the live object keeps it
    X_new = random_corpus(np.random.default_rng(5))
    assert_same_sequences(loaded.transform(X_new), vec.transform(X_new))
    assert_same_sequences(copy.deepcopy(vec).transform(X_new), vec.transform(X_new))



# --- SequenceVectorizer: property test -------------------------------------------------

_keys = st.sampled_from(["a", "b", "c", "a:b", "é"])
_names = st.text(alphabet="xyz:é", min_size=0, max_size=3)
_values = st.one_of(
    _names,
    st.booleans(),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.integers(min_value=-5, max_value=5),
    st.lists(_names, max_size=3),
    st.dictionaries(_keys, st.one_of(_names, st.booleans(), st.integers(-3, 3)), max_size=2),
)
_tokens = st.one_of(st.dictionaries(_keys, _values, max_size=5), st.lists(_names, max_size=3))


def reference_attributes(token):
    """The python-crfsuite attributes of a token, summed, written independently."""
    out = {}

    def put(name, weight):
        out[name] = out.get(name, 0.0) + weight

    def walk(prefix, value):
        if isinstance(value, str):
            put(f"{prefix}:{value}", 1.0)
        elif isinstance(value, bool):
            if value:
                put(prefix, 1.0)
        elif isinstance(value, (int, float)):
            put(prefix, float(value))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}:{k}", v)
        else:
            for element in value:
                put(f"{prefix}:{element}", 1.0)

    if isinstance(token, dict):
        for key, value in token.items():
            walk(key, value)
    else:
        for name in token:
            put(name, 1.0)
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_tokens, max_size=4), max_size=4))
def test_property_rows_reconstruct_attributes(X):
    Xs = SequenceVectorizer().fit_transform(X)
    assert Xs.lengths.tolist() == [len(sequence) for sequence in X]
    got = row_dicts(Xs)
    for sequence, got_sequence in zip(X, got):
        for token, row in zip(sequence, got_sequence):
            assert nonzero(row) == pytest.approx(nonzero(reference_attributes(token)))
    assert_same_sequences(SequenceVectorizer().fit(X).transform(X), Xs)


# --- WindowFeatures --------------------------------------------------------------------


def test_window_features_words_only():
    X = WindowFeatures(suffixes=(2,), prefixes=(1,)).fit_transform([["The", "X-2", "ran"]])

    def own(prefix, lower, suffix, first, flags):
        names = ["word.lower", "word[-2:]", "word[:1]", "word.isupper", "word.istitle",
                 "word.isdigit", "word.has_hyphen", "word.has_digit"]
        return {prefix + n: v for n, v in zip(names, [lower, suffix, first, *flags])}

    the = ("the", "he", "T", (False, True, False, False, False))
    x2 = ("x-2", "-2", "X", (True, True, False, True, True))  # "X-2".istitle() is True
    ran = ("ran", "an", "r", (False, False, False, False, False))
    assert X == [[
        {"bias": 1.0, **own("", *the), **own("+1:", *x2), "BOS": True},
        {"bias": 1.0, **own("-1:", *the), **own("", *x2), **own("+1:", *ran)},
        {"bias": 1.0, **own("-1:", *x2), **own("", *ran), "EOS": True},
    ]]


def test_window_features_with_pos_column():
    wf = WindowFeatures(suffixes=(3,), word_shape=False, column_prefixes=(1, 2))
    X = wf.fit_transform([[("He", "PRP"), ("ran", "VBD"), ["home", "NN"]]])
    assert X == [[
        {"bias": 1.0, "word.lower": "he", "word[-3:]": "He", "col1": "PRP", "col1[:1]": "P",
         "col1[:2]": "PR", "+1:word.lower": "ran", "+1:word[-3:]": "ran", "+1:col1": "VBD",
         "+1:col1[:1]": "V", "+1:col1[:2]": "VB", "BOS": True},
        {"bias": 1.0, "-1:word.lower": "he", "-1:word[-3:]": "He", "-1:col1": "PRP",
         "-1:col1[:1]": "P", "-1:col1[:2]": "PR", "word.lower": "ran", "word[-3:]": "ran",
         "col1": "VBD", "col1[:1]": "V", "col1[:2]": "VB", "+1:word.lower": "home",
         "+1:word[-3:]": "ome", "+1:col1": "NN", "+1:col1[:1]": "N", "+1:col1[:2]": "NN"},
        {"bias": 1.0, "-1:word.lower": "ran", "-1:word[-3:]": "ran", "-1:col1": "VBD",
         "-1:col1[:1]": "V", "-1:col1[:2]": "VB", "word.lower": "home", "word[-3:]": "ome",
         "col1": "NN", "col1[:1]": "N", "col1[:2]": "NN", "EOS": True},
    ]]


def test_window_features_wide_window_and_edges():
    sentence = [("a", "A", "x"), ("b", "B", "y"), ("c", "C", "z")]
    wf = WindowFeatures(window=2, suffixes=(), word_shape=False, column_prefixes=(),
                        bos_eos=False)
    X = wf.transform([sentence, sentence[:1], []])
    assert X[1:] == [[{"bias": 1.0, "word.lower": "a", "col1": "A", "col2": "x"}], []]
    assert X[0][0] == {
        "bias": 1.0, "word.lower": "a", "col1": "A", "col2": "x",
        "+1:word.lower": "b", "+1:col1": "B", "+1:col2": "y",
        "+2:word.lower": "c", "+2:col1": "C", "+2:col2": "z",
    }
    assert set(X[0][1]) == {"bias", "-1:word.lower", "-1:col1", "-1:col2", "word.lower",
                            "col1", "col2", "+1:word.lower", "+1:col1", "+1:col2"}
    assert X[0][2]["-2:col2"] == "x" and "+1:col1" not in X[0][2]


def test_window_features_feed_the_vectorizer():
    X = [["The", "dog", "barks"], ["Dogs", "bark"]]
    pipe = make_pipeline(WindowFeatures(), SequenceVectorizer())
    Xs = pipe.fit_transform(X)
    assert Xs.lengths.tolist() == [3, 2]
    assert "word.lower:dog" in Xs.feature_names and "+1:word.lower:bark" in Xs.feature_names
    isdigit = list(Xs.feature_names).index("word.isdigit")  # always False: stored zeros
    assert Xs.matrix[:, isdigit].nnz == 5 and not Xs.matrix[:, isdigit].toarray().any()


def test_window_features_accepts_str_subclasses():
    tokens = np.array([["Dogs", "NNS"], ["bark", "VBP"]])
    X = WindowFeatures().transform([[tuple(t) for t in tokens], list(tokens[:, 0])])
    expected = WindowFeatures().transform([[("Dogs", "NNS"), ("bark", "VBP")], ["Dogs", "bark"]])
    assert X == expected
    assert all(type(v) in (str, bool, float) for s in X for t in s for v in t.values())


def test_window_features_does_not_modify_input():
    X = [[("He", "PRP"), ["ran", "VBD"]], ["Oslo"]]
    before = copy.deepcopy(X)
    WindowFeatures().transform(X)
    assert X == before


@pytest.mark.parametrize("sequence, match", [
    ([3], r"sequence 0, token 0: a token must be a word \(str\) or a non-empty tuple"),
    (["ok", None], r"sequence 0, token 1: .* got None"),
    (["ok", ()], r"token 1: .* got \(\)"),
    (["ok", ("a", 1)], r"token 1: .* got \('a', 1\)"),
    ([["a", ["b"]]], r"token 0: .* got \['a', \['b'\]\]"),
])
def test_window_features_bad_tokens(sequence, match):
    with pytest.raises(TypeError, match=match):
        WindowFeatures().transform([sequence])


def test_window_features_ragged_columns():
    with pytest.raises(ValueError, match="sequence 0: tokens with different numbers of"):
        WindowFeatures().transform([[("a", "DT"), "b"]])


def test_window_features_bad_corpus():
    with pytest.raises(TypeError, match="sequence 0 is a str"):
        WindowFeatures().transform(["a sentence"])
    with pytest.raises(TypeError, match="got str"):
        WindowFeatures().transform("a sentence")


@pytest.mark.parametrize("params", [
    {"window": -1}, {"window": 1.5}, {"suffixes": (0,)}, {"prefixes": ("2",)},
    {"column_prefixes": (-1,)},
])
def test_window_features_bad_params(params):
    with pytest.raises(ValueError, match=next(iter(params))):
        WindowFeatures(**params).fit([["a"]])


def test_window_features_is_stateless():
    wf = WindowFeatures(window=2, suffixes=(1,))
    assert clone(wf).get_params() == wf.get_params()
    check_is_fitted(wf)  # needs no fit (the requires_fit tag: test_conformance.py)
    before = dict(wf.__dict__)
    assert wf.fit([["a"]]) is wf
    # fit only notes the tokens' columns, to warn of others (see below).
    assert wf.__dict__ == {**before, "token_columns_": 1}
    assert wf.transform([["Ab"]]) == WindowFeatures(window=2, suffixes=(1,)).transform([["Ab"]])


# --- WindowRows ------------------------------------------------------------------------

def window_rows_reference(sequences, window, bias, bos_eos):
    """`WindowRows` written token by token."""
    out = []
    for x in sequences:
        x = x.toarray() if sp.issparse(x) else np.asarray(x, dtype=float)
        n, d = x.shape
        rows = []
        for t in range(n):
            row = [1.0] if bias else []
            for offset in range(-window, window + 1):
                row += list(x[t + offset]) if 0 <= t + offset < n else [0.0] * d
            if bos_eos:
                row += [float(t == 0), float(t == n - 1)]
            rows.append(row)
        out.append(np.array(rows).reshape(n, (1 if bias else 0) + (2 * window + 1) * d
                                          + 2 * bos_eos))
    return out


def test_window_rows_exact():
    first = np.array([[1, 2], [3, 4], [5, 6]])
    second = np.array([[7, 0]])
    out = WindowRows().transform([first, np.zeros((0, 2)), second])
    assert [type(m) for m in out] == [sp.csr_matrix] * 3
    #      bias  row t-1   row t   row t+1  BOS EOS
    np.testing.assert_array_equal(out[0].toarray(), [
        [1,    0, 0,    1, 2,    3, 4,    1, 0],
        [1,    1, 2,    3, 4,    5, 6,    0, 0],
        [1,    3, 4,    5, 6,    0, 0,    0, 1],
    ])
    assert out[1].shape == (0, 9)
    np.testing.assert_array_equal(out[2].toarray(), [[1, 0, 0, 7, 0, 0, 0, 1, 1]])
    assert all(m.dtype == np.float64 and m.has_sorted_indices for m in out)


def test_window_rows_wide_window_without_bias_and_markers():
    x = sp.csr_matrix(np.array([[1.0], [2.0], [3.0]]))
    out = WindowRows(window=2, bias=False, bos_eos=False).transform([x])
    np.testing.assert_array_equal(out[0].toarray(), [
        [0, 0, 1, 2, 3],
        [0, 1, 2, 3, 0],
        [1, 2, 3, 0, 0],
    ])
    only_own = WindowRows(window=0, bias=False, bos_eos=False).transform([x])[0]
    np.testing.assert_array_equal(only_own.toarray(), x.toarray())


@pytest.mark.parametrize("window, bias, bos_eos", [(0, True, True), (1, False, True),
                                                   (3, True, False)])
def test_window_rows_match_token_by_token_reference(window, bias, bos_eos):
    rng = np.random.default_rng(window)
    lengths = [0, 1, 2, 5, 9, 4]
    X = [sp.random(n, 4, density=0.5, random_state=rng, format="csr") for n in lengths]
    X[2] = X[2].toarray()  # dense and sparse sequences mix
    transformer = WindowRows(window=window, bias=bias, bos_eos=bos_eos)
    expected = window_rows_reference(X, window, bias, bos_eos)
    for got, want in zip(transformer.transform(X), expected, strict=True):
        np.testing.assert_array_equal(got.toarray(), want)
    stacked = SequenceMatrix(sp.vstack([sp.csr_matrix(x) for x in X]),
                             np.cumsum([0] + lengths))
    for got, want in zip(transformer.transform(stacked), expected, strict=True):
        np.testing.assert_array_equal(got.toarray(), want)


def test_window_rows_mixed_widths():
    with pytest.raises(ValueError, match="different numbers of columns"):
        WindowRows().transform([np.ones((2, 3)), np.ones((1, 4))])


@pytest.mark.parametrize("X, error, match", [
    ([[{"a": 1.0}]], TypeError, "sequence 0 is a list; WindowRows takes one 2-d array"),
    ([np.ones((2, 2)), ["a", "b"]], TypeError, "sequence 1 is a list.*use WindowFeatures"),
    ([np.array([["a"]])], TypeError, "sequence 0 has dtype <U1; expected numbers"),
    ([np.ones(3)], ValueError, "sequence 0 of X is not a 2-d"),
    ([np.array([[1.0, np.nan]])], ValueError, "NaN or infinite"),
    ("pixels", TypeError, "X must be a list of sequences"),
    (sp.csr_matrix(np.ones((2, 2))), TypeError, "X must be a list of sequences"),
])
def test_window_rows_bad_input(X, error, match):
    with pytest.raises(error, match=match):
        WindowRows().transform(X)


@pytest.mark.parametrize("params", [{"window": -1}, {"window": 1.5}, {"window": True},
                                    {"bias": 1}, {"bos_eos": "yes"}])
def test_window_rows_bad_params(params):
    with pytest.raises(ValueError, match=next(iter(params))):
        WindowRows(**params).fit([np.ones((1, 1))])


def test_window_rows_is_stateless():
    wr = WindowRows(window=2, bias=False)
    assert clone(wr).get_params() == {"window": 2, "bias": False, "bos_eos": True}
    check_is_fitted(wr)  # needs no fit (the requires_fit tag: test_conformance.py)
    before = dict(wr.__dict__)
    X = [np.arange(6.0).reshape(3, 2)]
    assert wr.fit(X) is wr and wr.__dict__ == before
    np.testing.assert_array_equal(wr.fit_transform(X)[0].toarray(),
                                  WindowRows(window=2, bias=False).transform(X)[0].toarray())
    loaded = pickle.loads(pickle.dumps(wr))
    assert loaded.get_params() == wr.get_params()


def test_window_rows_feed_a_crf():
    # A letter is told by its own row; its neighbours' rows are there too.
    rng = np.random.default_rng(0)
    prototypes = np.eye(3)
    y = [list(rng.integers(0, 3, size=n)) for n in (4, 3, 5, 2)]
    X = [prototypes[labels] for labels in y]
    crf = CRF(c2=0.01).fit(WindowRows().transform(X), y)
    assert crf.num_attributes_ == 1 + 3 * 3 + 2
    assert crf.predict(WindowRows().transform(X)) == y


def test_window_features_warn_when_tokens_have_other_columns_than_in_fit(tmp_path):
    # (word, tag) tokens in training, raw words in the unlabelled text: other features.
    features = WindowFeatures().fit([[("The", "DT"), ("dog", "NN")]])
    raw = tmp_path / "raw.txt"
    raw.write_text("a cat\nran\n")
    with pytest.warns(UserWarning, match=r"fitted on tokens of 2 column\(s\) but sequence 0 "
                      r"has tokens of 1: a model would see other features"):
        list(features.transform(raw))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        features.transform([[("A", "DT")]])
        WindowFeatures().transform([["a"], [("b", "X")]])  # not fitted: nothing to compare


def test_scoring_and_streamed_rows_store_no_zeros_and_keep_the_vocabulary():
    X = [[{"a": False, "b": True, "n": 0.0}], [{"a": True}]]
    vec = SequenceVectorizer().fit(X)
    stored, scored = vec.transform(X), vec._transform(X, stored_zeros=False)
    assert stored.matrix.nnz == 4 and scored.matrix.nnz == 2
    np.testing.assert_array_equal(scored.matrix.toarray(), stored.matrix.toarray())
    # Streamed (unlabelled) blocks: the vocabulary of fit_transform, no stored zeros.
    stream = [[{"z": False, "b": True}], [{"y": 0.0}]]
    whole = SequenceVectorizer().fit_transform(X + stream)
    first, blocks = SequenceVectorizer().fit_transform_stream(X, iter(stream), block_size=1)
    assert list(first.feature_names) == list(whole.feature_names)
    assert [block.matrix.nnz for block in blocks] == [1, 0]
    np.testing.assert_array_equal(
        sp.vstack([first.matrix] + [block.matrix for block in blocks]).toarray(),
        whole.matrix.toarray())
