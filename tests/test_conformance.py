"""scikit-learn API conformance of every estimator and transformer, on sequence data.

scikit-learn's common checks (``check_estimator``) feed 2-d arrays; the estimators' tags
say X is a list of sequences, so those checks skip them. This module runs all of them
anyway (through ``parametrize_with_checks``, on a view of each estimator whose tags claim
2-d input): the API checks must pass and every 2-d-array check must fail, each listed with
its reason. It also runs the checks' sequence form: cloning, parameters, fit's contract,
input left unchanged, pickling, n_jobs and random_state, sklearn-crfsuite's None-before-fit
attributes, check_is_fitted and the tags themselves. Every case fits in well under a second.
"""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass, field

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from developers_recipe import load_recipe
from fixed_settings import fixed
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError, SkipTestWarning
from sklearn.utils.estimator_checks import check_estimator, parametrize_with_checks
from sklearn.utils.validation import check_is_fitted

from sklearn_ssl_crf import (
    CRF,
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    GraphPropagation,
    NaturalGradientCRF,
    SelfTrainingCRF,
    SemiSupervisedCRF,
    SequenceMatrix,
    SequenceVectorizer,
    WindowFeatures,
    WindowRows,
    WordClusters,
)
from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.estimators._base import BaseCRF
from sklearn_ssl_crf.parallel import _chunked

try:  # scikit-learn >= 1.6
    from sklearn.utils import get_tags
except ImportError:
    get_tags = None

# sklearn-crfsuite's fitted attributes, None before fit there and here.
CRFSUITE_ATTRIBUTES = ["classes_", "size_", "num_attributes_", "attributes_",
                       "state_features_", "transition_features_", "training_log_"]


# -- data ----------------------------------------------------------------------------------


def _data():
    """Tiny sequence data in every input kind: "words" (str tokens), "dicts" (their
    WindowFeatures), "rows" (dense one-hot word rows, WindowRows' input) and "matrices"
    (CSR window rows of those, the estimators' matrix input). Each kind is split into
    "labelled", "unlabelled" and "test" sequences; "y" are the labelled ones' labels."""
    words, labels = make_sequences(40, n_types=1, vocabulary_size=20, min_length=3,
                                   max_length=6, random_state=0)
    vocabulary = sorted({word for sentence in words for word in sentence})
    rows = [np.eye(len(vocabulary))[[vocabulary.index(word) for word in sentence]]
            for sentence in words]
    kinds = {
        "words": words,
        "dicts": WindowFeatures().transform(words),
        "rows": rows,
        "matrices": WindowRows().transform(rows),
    }
    data = {kind: {"labelled": X[:12], "unlabeled": X[12:30], "test": X[30:]}
            for kind, X in kinds.items()}
    data["y"] = labels[:12]
    return data


DATA = _data()


@dataclass
class Case:
    """An estimator (unfitted, small settings) and how to fit it."""

    estimator: BaseEstimator
    inputs: str  # the kind of X in DATA
    labelled: bool = True  # fit takes y (transformers: no)
    semi_supervised: bool = False  # fit takes X_unlabeled
    stateless: bool = False  # transform needs no fit
    # Parameters for matrix input ("matrices", or "rows" for WindowRows); None: dicts only.
    matrix_params: dict | None = field(default_factory=dict)

    @property
    def id(self):
        return type(self.estimator).__name__ + ("+clusters" if getattr(
            self.estimator, "clusters", None) is not None else "")


def _clusters():
    return WordClusters(n_clusters=(2, 4), n_components=2, min_count=1, random_state=0)


CASES = [
    Case(CRF(c2=0.1, max_iterations=5), "dicts"),
    Case(fixed(EntropyRegularizedCRF(c2=0.1, max_iterations=3)), "dicts", semi_supervised=True),
    Case(fixed(SemiSupervisedCRF(c2=0.1, max_iterations=3)), "dicts", semi_supervised=True),
    Case(fixed(SelfTrainingCRF(c2=0.1, max_rounds=2, max_iterations=3)), "dicts",
         semi_supervised=True),
    Case(NaturalGradientCRF(max_iterations=2, gamma=0.1, random_state=0), "dicts",
         semi_supervised=True),
    Case(fixed(GraphPRCRF(n_neighbors=5, em_iterations=2, mstep_iterations=2, max_iterations=3)),
         "dicts", semi_supervised=True, matrix_params={"graph": "knn"}),
    # The recipe for a new estimator in docs/developers.rst, as it is written there.
    Case(fixed(load_recipe().MinimumEntropyCRF(c2=0.1, semi_supervised_iterations=3,
                                               max_iterations=3)), "dicts",
         semi_supervised=True),
    Case(GraphPropagation(n_neighbors=5), "dicts", semi_supervised=True,
         matrix_params={"graph": "knn"}),
    Case(SequenceVectorizer(), "dicts", labelled=False, matrix_params=None),
    Case(WindowFeatures(), "words", labelled=False, stateless=True, matrix_params=None),
    Case(WindowFeatures(clusters=_clusters()), "words", labelled=False, matrix_params=None),
    Case(WindowRows(), "rows", labelled=False, stateless=True),
    Case(_clusters(), "words", labelled=False, matrix_params=None),
]
CRF_CASES = [case for case in CASES if isinstance(case.estimator, BaseCRF)]
MATRIX_CASES = [case for case in CASES if case.matrix_params is not None]


def cases(selection):
    return pytest.mark.parametrize("case", selection, ids=[case.id for case in selection])


def _matrix_kind(case):
    return "rows" if case.inputs == "rows" else "matrices"


def fit_arguments(case, kind=None):
    """The positional and keyword arguments of ``fit`` for the case, X of ``kind``."""
    X = DATA[kind or case.inputs]
    if not case.labelled:
        return (X["labelled"] + X["unlabeled"],), {}
    if case.semi_supervised:
        return (X["labelled"], DATA["y"]), {"X_unlabeled": X["unlabeled"]}
    return (X["labelled"], DATA["y"]), {}


def fitted(case, kind=None, **params):
    estimator = clone(case.estimator).set_params(**params)
    args, kwargs = fit_arguments(case, kind)
    return estimator.fit(*args, **kwargs)


def outputs(estimator, X_test):
    """What a fitted estimator gives: predictions and weights, propagated labels, or the
    transformed test sequences."""
    if isinstance(estimator, BaseCRF):
        return [estimator.predict(X_test), estimator.predict_marginals(X_test),
                estimator.state_weights_, estimator.transition_weights_]
    if isinstance(estimator, GraphPropagation):
        return [estimator.transduction_, estimator.label_distributions_]
    result = [estimator.transform(X_test)]
    if isinstance(estimator, WordClusters):
        result.append(estimator.vectors_)
    return result


def case_outputs(case, estimator, kind=None):
    return outputs(estimator, DATA[kind or case.inputs]["test"])


def assert_identical(a, b, where="output"):
    """Exact equality of nested lists, tuples, dicts, arrays, sparse matrices and
    SequenceMatrix objects: same types, shapes, dtypes and values (floats bit for bit)."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, SequenceMatrix):
        assert_identical(a.matrix, b.matrix, where)
        assert_identical(a.offsets, b.offsets, where)
        assert_identical(a.feature_names, b.feature_names, where)
    elif sp.issparse(a):
        assert a.shape == b.shape and a.dtype == b.dtype, where
        assert (a != b).nnz == 0, f"{where}: sparse matrices differ"
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: lengths {len(a)} != {len(b)}"
        for i, (x, z) in enumerate(zip(a, b)):
            assert_identical(x, z, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys differ"
        for key in a:
            assert_identical(a[key], b[key], f"{where}[{key!r}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def parameter_values(estimator):
    """The parameters, nested estimators by their class and parameters."""
    return {name: (type(value), parameter_values(value)) if isinstance(value, BaseEstimator)
            else value for name, value in estimator.get_params(deep=False).items()}


def is_fitted(estimator):
    try:
        check_is_fitted(estimator)
    except NotFittedError:
        return False
    return True


# -- cloning and parameters ----------------------------------------------------------------


@cases(CASES)
def test_clone_copies_parameters_and_drops_the_fit(case):
    model = fitted(case)
    copied = clone(model)
    assert type(copied) is type(model) and copied is not model
    assert parameter_values(copied) == parameter_values(case.estimator)
    assert not [name for name in vars(copied) if name.endswith("_")]
    copied.set_params(**{next(iter(copied.get_params())): "changed"})
    assert parameter_values(model) == parameter_values(case.estimator)


@cases(CASES)
def test_get_params_set_params_round_trip(case):
    estimator = clone(case.estimator)
    deep = estimator.get_params(deep=True)
    assert estimator.set_params(**deep) is estimator
    assert_identical(estimator.get_params(deep=True), deep, "get_params")
    for name in estimator.get_params(deep=False):
        value = object()
        estimator.set_params(**{name: value})
        assert estimator.get_params()[name] is value
        assert vars(estimator)[name] is value  # stored under its own name, as given
    with pytest.raises(ValueError, match="Invalid parameter"):
        estimator.set_params(no_such_parameter=1)


@cases(CASES)
def test_init_stores_the_parameters_only(case):
    params = case.estimator.get_params(deep=False)
    estimator = type(case.estimator)(**params)
    assert set(vars(estimator)) == set(params)
    for name, value in params.items():
        assert vars(estimator)[name] is value, name
    assert set(vars(type(case.estimator)())) == set(params)


# -- fit -----------------------------------------------------------------------------------


@cases(CASES)
def test_fit_returns_self(case):
    estimator = clone(case.estimator)
    args, kwargs = fit_arguments(case)
    assert estimator.fit(*args, **kwargs) is estimator


@cases(CASES)
def test_fit_changes_no_parameter_and_adds_only_fitted_attributes(case):
    estimator = clone(case.estimator)
    before = copy.deepcopy(estimator.get_params(deep=False))
    public_before = {name for name in vars(estimator) if not name.startswith("_")}
    args, kwargs = fit_arguments(case)
    estimator.fit(*args, **kwargs)
    after = estimator.get_params(deep=False)
    assert set(after) == set(before)
    for name, value in before.items():
        assert joblib.hash(after[name]) == joblib.hash(value), f"fit changed {name}"
    added = {name for name in vars(estimator) if not name.startswith("_")} - public_before
    assert all(name.endswith("_") for name in added), sorted(added)


@cases(CASES)
def test_fit_and_predict_leave_the_input_unchanged(case):
    args, kwargs = fit_arguments(case)
    test = DATA[case.inputs]["test"]
    originals = copy.deepcopy((args, kwargs, test))
    model = clone(case.estimator).fit(*args, **kwargs)
    case_outputs(case, model)
    assert_identical((args, kwargs, test), originals, "input")


def _read_only(X):
    """X's matrices, copied and made read-only (sparse: their data, indices and indptr)."""
    result = []
    for matrix in X:
        matrix = matrix.copy()
        for array in ([matrix.data, matrix.indices, matrix.indptr] if sp.issparse(matrix)
                      else [matrix]):
            array.setflags(write=False)
        result.append(matrix)
    return result


@cases(MATRIX_CASES)
@pytest.mark.parametrize("dense", [False, True], ids=["sparse", "dense"])
def test_read_only_matrix_input(case, dense):
    X = {part: [sp.csr_matrix(matrix).toarray() if dense else sp.csr_matrix(matrix)
                for matrix in DATA[_matrix_kind(case)][part]]
         for part in ("labelled", "unlabeled", "test")}
    frozen = {part: _read_only(matrices) for part, matrices in X.items()}
    assert not any(matrix.flags.writeable if isinstance(matrix, np.ndarray)
                   else matrix.data.flags.writeable for matrix in frozen["test"])
    results = []
    for inputs in (X, frozen):
        estimator = clone(case.estimator).set_params(**case.matrix_params)
        if not case.labelled:
            estimator.fit(inputs["labelled"] + inputs["unlabeled"])
        elif case.semi_supervised:
            estimator.fit(inputs["labelled"], DATA["y"], X_unlabeled=inputs["unlabeled"])
        else:
            estimator.fit(inputs["labelled"], DATA["y"])
        results.append(outputs(estimator, inputs["test"]))
    assert_identical(results[1], results[0], "read-only input")


# -- pickling, n_jobs, random_state ----------------------------------------------------------


@cases(CASES)
def test_pickle_before_and_after_fit(case):
    unfitted = pickle.loads(pickle.dumps(clone(case.estimator)))
    assert parameter_values(unfitted) == parameter_values(case.estimator)
    assert is_fitted(unfitted) is case.stateless
    args, kwargs = fit_arguments(case)
    unfitted.fit(*args, **kwargs)  # a model unpickled before fit trains as usual
    model = fitted(case)
    restored = pickle.loads(pickle.dumps(model))
    assert_identical(case_outputs(case, restored), case_outputs(case, model), "unpickled")
    assert_identical(case_outputs(case, unfitted), case_outputs(case, model),
                     "fitted after unpickling")


@cases([case for case in CASES if "n_jobs" in case.estimator.get_params()])
def test_n_jobs_gives_the_same_model(case, monkeypatch):
    monkeypatch.setattr(_chunked, "CHUNK_TOKENS", 10)  # several chunks to share out
    one = case_outputs(case, fitted(case, n_jobs=1))
    two = case_outputs(case, fitted(case, n_jobs=2))
    assert_identical(two, one, "n_jobs=2 against n_jobs=1")


@cases([case for case in CASES if any(name.endswith("random_state")
                                      for name in case.estimator.get_params(deep=True))])
@pytest.mark.parametrize("seed", [
    lambda: 7, lambda: np.random.RandomState(7)], ids=["int", "RandomState"])
def test_same_random_state_gives_the_same_model(case, seed):
    def seeded():
        names = [name for name in case.estimator.get_params(deep=True)
                 if name.endswith("random_state")]
        return case_outputs(case, fitted(case, **{name: seed() for name in names}))

    assert_identical(seeded(), seeded(), "same seed")


# -- fitted state --------------------------------------------------------------------------


@cases(CRF_CASES)
def test_crfsuite_attributes_are_none_before_fit(case):
    crfsuite = pytest.importorskip("sklearn_crfsuite")
    reference = crfsuite.CRF()
    estimator = clone(case.estimator)
    for name in CRFSUITE_ATTRIBUTES:
        assert getattr(reference, name) is None, f"sklearn_crfsuite.CRF().{name}"
        assert getattr(estimator, name) is None, name
        assert name not in vars(estimator), name
    model = fitted(case)
    kinds = {"classes_": list, "size_": int, "num_attributes_": int, "attributes_": list,
             "state_features_": dict, "transition_features_": dict, "training_log_": list}
    for name, kind in kinds.items():
        assert isinstance(getattr(model, name), kind), name
    assert model.num_attributes_ == len(model.attributes_) > 0
    assert sorted(model.classes_) == sorted({label for labels in DATA["y"] for label in labels})
    for name in CRFSUITE_ATTRIBUTES:
        assert getattr(clone(model), name) is None, f"{name} of a clone"


@cases(CASES)
def test_check_is_fitted_before_and_after_fit(case):
    estimator = clone(case.estimator)
    if case.stateless:
        check_is_fitted(estimator)
        estimator.transform(DATA[case.inputs]["test"])
    else:
        with pytest.raises(NotFittedError):
            check_is_fitted(estimator)
    check_is_fitted(fitted(case))


# -- tags and scikit-learn's own checks ----------------------------------------------------


@cases(CASES)
def test_tags_declare_sequence_input(case):
    estimator = clone(case.estimator)
    if get_tags is None:  # scikit-learn < 1.6
        from sklearn.utils._tags import _safe_tags

        tags = _safe_tags(estimator)
        assert "2darray" not in tags["X_types"]
        assert tags["requires_y"] is case.labelled
        assert tags["requires_fit"] is not case.stateless
        return
    tags = get_tags(estimator)
    assert tags.input_tags.two_d_array is False
    assert tags.input_tags.sparse is False  # X is never a sparse matrix, only its sequences
    assert tags.input_tags.dict is (case.inputs == "dicts")
    assert tags.input_tags.string is (case.inputs == "words")
    assert tags.target_tags.required is case.labelled
    assert tags.requires_fit is not case.stateless


@cases(CASES)
def test_check_estimator_skips_the_two_d_array_checks(case):
    # The tags say X is not a 2-d array: scikit-learn's own run skips its data checks.
    with pytest.warns(SkipTestWarning, match="Can't test estimator"):
        results = check_estimator(clone(case.estimator))
    if results is not None:  # scikit-learn >= 1.6 also returns what ran
        assert results and {result["status"] for result in results} == {"passed"}


def _two_d_view(estimator):
    """The estimator, of a subclass whose tags claim 2-d array input: scikit-learn's checks
    then run all of their checks on it (the estimator's own code, its tags but that one)."""
    cls = type(estimator)

    def tags(self):
        tags = cls.__sklearn_tags__(self)
        tags.input_tags.two_d_array = True
        return tags

    # Named in this module, so that checks which pickle the estimator find its class.
    name = f"TwoDView{cls.__name__}"
    view = globals().setdefault(name, type(name, (cls,), {"__sklearn_tags__": tags,
                                                          "__module__": __name__}))
    return view(**estimator.get_params(deep=False))


# scikit-learn's checks that fit or transform a 2-d array. X here is a list of sequences,
# which a 2-d array (one row per sample, a label per row) is not: every estimator rejects it
# with a ValueError or TypeError naming the problem, and the sequence form of what each
# check guards is a test of this module (fit returns self, params not changed, input not
# changed, pickling, idempotent fits, n_jobs, tags, errors before fit).
TWO_D_ARRAY_CHECKS = {
    "check_complex_data", "check_dict_unchanged", "check_dont_overwrite_parameters",
    "check_dtype_object", "check_estimator_sparse_array", "check_estimator_sparse_matrix",
    "check_estimator_sparse_tag", "check_estimators_dtypes",
    "check_estimators_empty_data_messages", "check_estimators_fit_returns_self",
    "check_estimators_nan_inf", "check_estimators_overwrite_params",
    "check_estimators_pickle", "check_f_contiguous_array_estimator", "check_fit1d",
    "check_fit2d_1feature", "check_fit2d_1sample", "check_fit2d_predict1d",
    "check_fit_check_is_fitted", "check_fit_idempotent", "check_fit_score_takes_y",
    "check_methods_sample_order_invariance", "check_methods_subset_invariance",
    "check_n_features_in", "check_n_features_in_after_fitting", "check_pipeline_consistency",
    "check_positive_only_tag_during_fit", "check_readonly_memmap_input",
    "check_requires_y_none", "check_transformer_data_not_an_array",
    "check_transformer_general", "check_transformer_preserve_dtypes",
    "check_transformers_unfitted_stateless",
    # sample_weight's checks (their sequence form: tests/test_sample_weight.py)
    "check_all_zero_sample_weights_error", "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weights_list", "check_sample_weights_not_an_array",
    "check_sample_weights_not_overwritten", "check_sample_weights_shape",
}
# Checks of that kind that pass all the same: a stateless transformer's fit ignores X, and
# WordClusters rejects a 1-d X with the ValueError check_fit1d expects.
STATELESS_PASSES = {
    "check_dont_overwrite_parameters", "check_estimator_sparse_array",
    "check_estimator_sparse_matrix", "check_estimators_fit_returns_self",
    "check_estimators_overwrite_params", "check_fit2d_1feature", "check_fit2d_1sample",
    "check_fit_check_is_fitted", "check_positive_only_tag_during_fit",
    "check_readonly_memmap_input",
}


def _expected_failures(view):
    passes = set()
    if isinstance(view, (WindowFeatures, WindowRows)) and not view._requires_fit():
        passes = STATELESS_PASSES
    elif isinstance(view, WordClusters):
        passes = {"check_fit1d"}
    reason = "feeds a 2-d array; X is a list of sequences (tested in sequence form here)"
    return {name: reason for name in TWO_D_ARRAY_CHECKS - passes}


if get_tags is not None:  # scikit-learn >= 1.6
    @parametrize_with_checks([_two_d_view(case.estimator) for case in CASES])
    def test_scikit_learn_checks(estimator, check):
        # Every check runs: the API checks pass, and each 2-d-array check must fail (a
        # strict expected failure: one that starts passing must come off the list). The
        # failure is caught here rather than by an xfail mark, whose report formats the
        # traceback: 50 s for these 356 failures.
        reason = _expected_failures(estimator).get(check.func.__name__)
        if reason is None:
            check(estimator)
            return
        with pytest.raises((ValueError, TypeError, AssertionError)):
            check(estimator)
        pytest.xfail(reason)


@pytest.mark.parametrize("cls", [CRF, CRFCV, EntropyRegularizedCRF, SemiSupervisedCRF,
                                 SelfTrainingCRF, NaturalGradientCRF, GraphPRCRF,
                                 GraphPropagation, SequenceVectorizer, WindowFeatures,
                                 WindowRows, WordClusters])
def test_parameters_are_keyword_only_and_a_positional_call_names_them(cls):
    import inspect

    parameters = list(inspect.signature(cls).parameters.values())
    assert parameters and all(p.kind is p.KEYWORD_ONLY for p in parameters)
    # sklearn-crfsuite's order (algorithm, min_freq, ...) passed by position to our CRF
    # would have set c1: the error says what it would have set, and nothing is built.
    first = parameters[0]
    args, meant = ("x", 7)[:len(parameters)], [f"{first.name}='x'"] + [
        f"{p.name}=7" for p in parameters[1:2]]
    with pytest.raises(TypeError, match=rf"{cls.__name__} takes its parameters by keyword: "
                       rf"{cls.__name__}\({', '.join(map(repr, args))}\) would set "
                       rf"{', '.join(meant)}; name each parameter"):
        cls(*args)
    assert clone(cls(**{first.name: first.default})).get_params()[first.name] == first.default
