"""What every chain CRF estimator shares: input handling, prediction, fitted attributes."""

import warnings
from itertools import chain, islice

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ..features import SequenceVectorizer
from ..metrics import no_labelled_sequence_error, span_f1_score
from ..potentials import PackedSequences, transition_potentials
from ..training import RunCheckpoints
from ..utils import (
    KeywordOnlyParameters,
    LabelledSequenceTagsMixin,
    SequenceMatrix,
    as_sequence_list,
    check_feature_values,
    check_fit_memory,
    check_labels,
    encode_labels,
    is_matrix_input,
    matrices_to_sequence_matrix,
    not_sequences_error,
    select_sequences,
    sequence_lengths,
    sequence_lists,
    single_threaded_blas,
    unlabeled_input,
)
from ._contributions import ContributionsMixin
from ._label_constraints import constrained, known_label_mask, resolve_constraints
from ._prediction import decode, posterior_marginals
from ._sample_weights import labelled_weights, resolve_class_weight
from ._tagger import Tagger
from ._uncertainty import UncertaintyMixin, per_sequence

__all__ = ["BaseCRF", "checked_stream", "featurise_training_input", "unlabeled_sequences"]


def featurise_training_input(X, min_freq=0, stream=(), words=None):
    """The featurizer fitted on training input X and more sequences read from ``stream``,
    and both featurised with it.

    ``stream`` is any iterable of sequences of the same kind as X's (a generator is read
    once), featurised a block at a time, so that at most one block of it is held as dicts.
    ``words``: a `TrigramWords` into which the words of X and of the stream are read as
    they are featurised (feature dicts only).

    Returns
    -------
    vectorizer : SequenceVectorizer or None
        None for feature-matrix input.
    sequences : SequenceMatrix
        X featurised.
    blocks : list of SequenceMatrix
        The sequences of ``stream``, in order.
    """
    X = as_sequence_list(X)
    if len(X) == 0:
        raise ValueError("X is empty: fit needs at least one labelled sequence")
    stream = checked_stream(stream, X)
    if isinstance(stream, SequenceMatrix):
        check_feature_values(stream, "X_unlabeled")
        stream = [stream]  # one block, already featurised
    elif is_matrix_input(X):
        stream = (matrices_to_sequence_matrix(block) for block in _blocks(stream))
    if is_matrix_input(X):
        if min_freq:
            raise ValueError(
                "min_freq applies to feature-dict input; with feature matrices, filter "
                "the columns in the featurizer (e.g. SequenceVectorizer(min_freq=...))"
            )
        sequences = matrices_to_sequence_matrix(X)
        blocks = [_check_block(block, sequences.n_features) for block in stream]
        return None, sequences, blocks
    if isinstance(stream, list) and any(isinstance(block, SequenceMatrix) for block in stream):
        raise TypeError("X holds feature dicts but X_unlabeled holds feature matrices")
    if words is not None:
        for _ in words.read_each(X):
            pass
        stream = words.read_each(stream, "X_unlabeled", _STREAM_BLOCK)
    vectorizer = SequenceVectorizer(min_freq=min_freq)
    sequences, blocks = vectorizer.fit_transform_stream(X, stream, _STREAM_BLOCK)
    return vectorizer, sequences, blocks


def checked_stream(stream, X):
    """The unlabelled sequences ``stream`` given with training input X, as they are read
    (`unlabeled_input`), or a TypeError if they are not an iterable."""
    stream = unlabeled_input(stream, X)
    if isinstance(stream, (str, bytes, dict)) or not hasattr(stream, "__iter__"):
        raise not_sequences_error(stream, "X_unlabeled", "an iterable of sequences")
    return stream


#: Unlabelled sequences featurised at a time when they are streamed.
_STREAM_BLOCK = 2000


def _blocks(sequences):
    """Lists of `_STREAM_BLOCK` consecutive sequences of an iterable."""
    iterator = iter(sequences)
    while True:
        block = list(islice(iterator, _STREAM_BLOCK))
        if not block:
            return
        yield block


def _check_block(block, n_features):
    if block.n_features != n_features:
        raise ValueError(f"X has {n_features} attributes per token but X_unlabeled has "
                         f"{block.n_features}")
    return block


def unlabeled_sequences(sequences, labelled):
    """Indices of the non-empty sequences of a `SequenceMatrix` that are not in
    ``labelled``."""
    unlabeled = np.setdiff1d(np.arange(len(sequences)), labelled)
    return unlabeled[sequences.lengths[unlabeled] > 0]


class BaseCRF(KeywordOnlyParameters, LabelledSequenceTagsMixin, UncertaintyMixin,
              ContributionsMixin, BaseEstimator):
    """Base class of the linear-chain CRF estimators (not for direct use).

    Subclasses learn ``state_weights_`` and ``transition_weights_``; this class turns inputs
    into feature matrices and weights into predictions. X is sklearn-crfsuite's format (a list
    of sequences of feature dicts), a list of per-sequence feature matrices, or a
    `SequenceMatrix`; y is a list of label sequences, where ``None`` marks an unlabelled
    sequence.
    """

    # sklearn-crfsuite's fitted attributes read as None before fit, as they do there. Class
    # attributes are not in vars(self), so check_is_fitted still finds an unfitted model.
    classes_ = size_ = num_attributes_ = attributes_ = training_log_ = None

    # -- input ---------------------------------------------------------------------------

    def _run_checkpoints(self):
        """Where the fit's optimisation runs keep their checkpoints (``checkpoint``), or
        None."""
        if self.checkpoint is None:
            return None
        return RunCheckpoints(self.checkpoint, self.checkpoint_every, self.verbose)

    def _partial_inputs(self, X, y, classes):
        """`_fit_inputs` for streaming: the vocabulary grows, the classes are fixed."""
        X = as_sequence_list(X)
        if len(X) == 0:
            raise ValueError("X is empty")
        if is_matrix_input(X):
            sequences = matrices_to_sequence_matrix(
                X, None if classes is not None else self.num_attributes_)
            if classes is not None:
                self.vectorizer_ = None
        else:
            if classes is not None:
                self.vectorizer_ = SequenceVectorizer()
            elif self.vectorizer_ is None:
                raise TypeError("this model was trained on feature matrices; pass feature "
                                "matrices, not dicts")
            sequences = self.vectorizer_.extend_transform(X)
        if classes is not None:
            self.classes_ = list(classes)
        labelled = self._labelled_sequences(sequences, y)
        _, codes = encode_labels((y[i] for i in labelled), self.classes_)
        self._check_fit_memory(sequences.lengths[labelled])
        if classes is not None:
            self._set_label_settings(codes, sequences.lengths[labelled])
        return sequences, labelled, codes

    def _fit_inputs(self, X, y, min_freq=0):
        """Featurise X, check y, learn the label set.

        Returns the `SequenceMatrix` of all sequences, the indices of the labelled ones
        and the label codes of their tokens. Sets ``vectorizer_``, ``attributes_``,
        ``num_attributes_`` and ``classes_``.
        """
        return self._fit_inputs_and_stream(X, y, (), min_freq)[:3]

    def _fit_inputs_and_stream(self, X, y, X_unlabeled, min_freq=0, words=None,
                               drop_empty=True):
        """`_fit_inputs`, with the unlabelled sequences of ``X_unlabeled`` (any iterable,
        read once, a block at a time) also returned, as a list of `SequenceMatrix` blocks
        (from which empty sequences are removed if ``drop_empty``); ``words``: as in
        `featurise_training_input`."""
        self.vectorizer_, sequences, blocks = featurise_training_input(X, min_freq,
                                                                      X_unlabeled, words)
        labelled = self._labelled_sequences(sequences, y)
        if labelled.size == 0:
            raise no_labelled_sequence_error("y has no labelled sequence to train on")
        self.classes_, codes = encode_labels(y[i] for i in labelled)
        self._check_fit_memory(sequences.lengths[labelled],
                               sum(block.n_tokens for block in blocks))
        self._set_label_settings(codes, sequences.lengths[labelled])
        if drop_empty:
            blocks = [block if block.lengths.all() else block[np.flatnonzero(block.lengths)]
                      for block in blocks]
        return sequences, labelled, codes, blocks

    def _check_fit_memory(self, lengths, n_unlabeled=0):
        """Refuse, before any array of its size exists, a fit that needs more memory than
        the process can have (`check_fit_memory`), from ``classes_``, ``num_attributes_``,
        the lengths of the labelled sequences and the number of unlabelled tokens."""
        check_fit_memory(len(self.classes_), self.num_attributes_,
                         self._work_tokens(lengths, n_unlabeled), self._weight_copies(),
                         order=self.order, all_possible_states=self.all_possible_states,
                         all_possible_transitions=self.all_possible_transitions)

    def _work_tokens(self, lengths, n_unlabeled):
        """Tokens whose lattices the fit holds at once at least, of the labelled sequences
        of ``lengths`` or the ``n_unlabeled`` unlabelled tokens."""
        raise NotImplementedError

    def _weight_copies(self):
        """Weight vectors that the fit's optimiser holds at once at least."""
        raise NotImplementedError

    def _set_label_settings(self, codes, lengths):
        """Set ``constraints_`` and ``class_weight_`` from the parameters, ``classes_`` and
        the training labels (codes laid end to end, and each sequence's length)."""
        self.constraints_ = resolve_constraints(self.constraints, self.classes_, codes,
                                                lengths)
        self.class_weight_ = resolve_class_weight(self.class_weight, self.classes_, codes)

    def set_constraints(self, constraints):
        """Give a fitted model other label constraints, without refitting.

        Training does not depend on them (gold sequences are valid), so the weights stay
        as they are; `predict`, the marginals and the entropies keep to the new rules. For
        a model read from a CRFsuite file, which has none, or one fitted with
        ``constraints=None``. ``set_params(constraints=...)`` changes only the next fit.

        Parameters
        ----------
        constraints : 'auto', None, {'bio', 'iob2', 'iobes', 'bilou'} or dict
            As the ``constraints`` parameter, resolved against ``classes_``: with no
            training sequences at hand, 'auto' takes the scheme the labels carry and a
            scheme's name is not checked against any sequence.

        Returns
        -------
        self : estimator
            The model, its ``constraints`` and ``constraints_`` set.

        Examples
        --------
        >>> from sklearn_ssl_crf import CRF
        >>> X = [[{"w": "new"}, {"w": "york"}], [{"w": "in"}, {"w": "paris"}]]
        >>> y = [["B-LOC", "I-LOC"], ["O", "B-LOC"]]
        >>> crf = CRF(constraints=None).fit(X, y)
        >>> crf.set_constraints("bio").constraints_
        LabelConstraints(scheme='bio', 8 of 9 transitions, 2 starts, 3 ends)
        """
        check_is_fitted(self, "classes_")
        none = np.zeros(0, dtype=np.int64)
        self.constraints_ = resolve_constraints(constraints, self.classes_, none, none)
        self.constraints = constraints
        return self

    def _label_costs(self):
        """The cost of mislabelling a token of each label in the likelihood (the logarithm
        of its class weight), or None."""
        weights = getattr(self, "class_weight_", None)
        return None if weights is None else np.log(weights)

    def _labelled_sequences(self, sequences, y):
        """Set ``attributes_`` and ``num_attributes_`` from the featurised X; check y against
        it and return the indices of the labelled sequences (none of them empty)."""
        names = sequences.feature_names
        self.attributes_ = list(range(sequences.n_features)) if names is None else list(names)
        self.num_attributes_ = sequences.n_features
        labelled = check_labels(y, sequences.lengths, partial=True)
        empty = labelled[sequences.lengths[labelled] == 0]
        if empty.size:
            raise ValueError(f"sequence {empty[0]} is empty: every training sequence needs "
                             "at least one token")
        return labelled

    def _transform(self, X):
        """Featurise X with what fit learned; returns a `SequenceMatrix`."""
        check_is_fitted(self, ["state_weights_", "transition_weights_"])
        return self._features(X)

    def _features(self, X):
        # Also used during fit (dev sets), before the weights exist.
        X = as_sequence_list(X)
        if isinstance(X, list) and len(X) == 0:
            return matrices_to_sequence_matrix([], None)
        if is_matrix_input(X):
            return matrices_to_sequence_matrix(X, self.num_attributes_)
        if self.vectorizer_ is None:
            raise TypeError(
                "this model was fitted on feature matrices; pass feature matrices, not dicts"
            )
        # Scores need no stored zeros (False values): only training pairs them with labels.
        return self.vectorizer_._transform(X, stored_zeros=False)

    def _constrained(self, layout, unary, transition):
        """The potentials with what ``constraints_`` forbids at -inf (``unary``, packed
        rows of ``layout``, changed in place)."""
        return constrained(getattr(self, "constraints_", None), layout, unary, transition)

    def _decode(self, packed, unary, transition):
        """Label index of every token (original order), the constraints respected: the
        kernel `predict` uses."""
        return decode(packed, *self._constrained(packed.layout, unary, transition))

    def _marginals(self, packed, unary, transition):
        """Node marginals of every token (original order), the constraints respected."""
        return posterior_marginals(packed,
                                   *self._constrained(packed.layout, unary, transition))

    def _infer(self, kernel, sequences, known_labels=None):
        """Run a prediction kernel (`_decode` or `_marginals`) on featurised input, the
        labels of ``known_labels`` fixed."""
        packed = PackedSequences(sequences.matrix, sequences.lengths)
        with single_threaded_blas():
            unary = packed.unary(self.state_weights_)
            if known_labels is not None:
                mask = known_label_mask(known_labels, sequences.lengths, self.classes_)
                if mask is not None:
                    unary[~mask[packed.layout.order]] = -np.inf
            return kernel(packed, unary, self._transition_potentials())

    def _labelled_dev(self, X_dev, y_dev):
        """The labelled sequences of a dev set, featurised, and their label lists.

        A label the training data lacks (common with a few hundred labelled sentences) is
        kept, with a warning: no model here can predict it, so its tokens score as errors,
        as in CRFsuite."""
        dev = self._features(X_dev)
        labelled = check_labels(y_dev, dev.lengths, name="y_dev")
        gold = [list(y_dev[i]) for i in labelled]
        unseen = {label for labels in gold for label in labels} - set(self.classes_)
        if unseen:
            tokens = sum(label in unseen for labels in gold for label in labels)
            shown = sorted(map(str, unseen))
            warnings.warn(f"y_dev has {len(unseen)} label(s) not in the training data "
                          f"({', '.join(shown[:5])}{', ...' if len(shown) > 5 else ''}) on "
                          f"{tokens} of its {sum(map(len, gold))} tokens: no model trained "
                          "on these labels can predict them, and they are scored as errors",
                          UserWarning, stacklevel=2)
        return dev[labelled], gold

    def _dev_scorer(self, dev, gold, layout):
        """Callback giving the token accuracy and span F1 of the current weights on a dev
        set's labelled sequences ``dev`` (`_labelled_dev`), whose labels are ``gold``."""
        gold_flat = list(chain.from_iterable(gold))
        packed = PackedSequences(dev.matrix, dev.lengths)
        classes = np.asarray(self.classes_, dtype=object)

        def dev_scores(iteration, theta):
            state, transition = layout.unpack(theta)
            labels = classes[self._decode(packed, packed.unary(state), transition)]
            predicted = sequence_lists(labels, dev.offsets)
            return {
                "dev_accuracy": float(np.mean([p == g for p, g in zip(labels, gold_flat)])),
                "dev_span_f1": span_f1_score(gold, predicted),
            }

        return dev_scores

    # -- prediction ----------------------------------------------------------------------

    def predict(self, X, *, known_labels=None):
        """Most likely label sequence of each sequence (Viterbi).

        Only labellings that ``constraints_`` allows are considered (with BIO tags, no
        ``I-X`` after ``O``), and those that agree with ``known_labels``.

        Parameters
        ----------
        X : list of sequences, list of feature matrices, or SequenceMatrix
        known_labels : list, default=None
            Labels fixed in advance (a dictionary match, a correction): ``known_labels[i]``
            is None or a list of ``len(X[i])`` labels of ``classes_``, None where unknown.

        Returns
        -------
        y : list of lists of labels
            The best labelling of each sequence that the constraints allow and that keeps
            the known labels; a ValueError names a sequence that has none.

        Examples
        --------
        >>> from sklearn_ssl_crf import CRF
        >>> X = [[{"w": "New"}, {"w": "York"}], [{"w": "in"}, {"w": "Paris"}]]
        >>> y = [["B-LOC", "I-LOC"], ["O", "B-LOC"]]
        >>> crf = CRF(c2=0.1).fit(X, y)
        >>> crf.predict([[{"w": "in"}, {"w": "York"}]], known_labels=[[None, "B-LOC"]])
        [['O', 'B-LOC']]
        """
        sequences = self._transform(X)
        if sequences.n_tokens == 0:
            return [[] for _ in range(len(sequences))]
        codes = self._infer(self._decode, sequences, known_labels)
        labels = np.asarray(self.classes_, dtype=object)[codes]
        return sequence_lists(labels, sequences.offsets)

    def predict_single(self, xseq, *, known_labels=None):
        """Label sequence of one sequence.

        Parameters
        ----------
        xseq : sequence of feature dicts, or feature matrix
            One sequence, as one element of the ``X`` of `predict`.
        known_labels : list, default=None
            The sequence's known labels, None where unknown (see `predict`).

        Returns
        -------
        labels : list
            ``predict([xseq], known_labels=[known_labels])[0]``.
        """
        return self.predict([xseq], known_labels=[known_labels])[0]

    def predict_marginals(self, X, *, as_arrays=False, known_labels=None):
        """Posterior probability of every label at every position.

        The distribution covers the labellings that ``constraints_`` allows and that keep
        ``known_labels``, as `predict` does.

        Parameters
        ----------
        X : list of sequences, list of feature matrices, or SequenceMatrix
        as_arrays : bool, default=False
            Return one array per sequence instead of a dict per token: no Python object
            per token, for large inputs.
        known_labels : list, default=None
            Labels fixed in advance, None where unknown (see `predict`).

        Returns
        -------
        marginals : list of lists of dict, or list of ndarray
            ``marginals[i][t][label]`` is ``p(y_t = label | x_i)``; with ``as_arrays``,
            ``marginals[i]`` has shape (n_tokens_i, n_classes), its columns in the order of
            ``classes_``.
        """
        sequences = self._transform(X)
        if sequences.n_tokens == 0:
            marginals = np.zeros((0, len(self.classes_)))
        else:
            marginals = self._infer(self._marginals, sequences, known_labels)
        if as_arrays:
            return per_sequence(marginals, sequences)
        classes = self.classes_
        rows = [dict(zip(classes, row)) for row in marginals.tolist()]
        offsets = sequences.offsets.tolist()
        return [rows[start:stop] for start, stop in zip(offsets[:-1], offsets[1:])]

    def predict_marginals_single(self, xseq, *, known_labels=None):
        """Label marginals of one sequence.

        Parameters
        ----------
        xseq : sequence of feature dicts, or feature matrix
            One sequence, as one element of the ``X`` of `predict_marginals`.
        known_labels : list, default=None
            The sequence's known labels, None where unknown (see `predict`).

        Returns
        -------
        marginals : list of dict
            ``predict_marginals([xseq], known_labels=[known_labels])[0]``: per position,
            every label's probability.
        """
        return self.predict_marginals([xseq], known_labels=[known_labels])[0]

    def score(self, X, y, sample_weight=None):
        """Token accuracy over the labelled tokens (``y[i] is None`` and None labels, as
        in partially labelled training data, are skipped).

        Parameters
        ----------
        X : list of sequences, list of feature matrices, or SequenceMatrix
        y : list of label sequences (or None)
        sample_weight : array-like of shape (n_sequences,), default=None
            Weight of each sequence: its tokens count that many times.

        Returns
        -------
        score : float
        """
        X = as_sequence_list(X)
        lengths = sequence_lengths(X)
        labelled = check_labels(y, lengths, partial=True)
        if labelled.size == 0:
            raise no_labelled_sequence_error("y has no labelled sequence to score")
        weights = labelled_weights(sample_weight, len(lengths), labelled,
                                   unlabeled_ones=False)
        predicted = chain.from_iterable(self.predict(select_sequences(X, labelled)))
        gold = chain.from_iterable(y[i] for i in labelled)
        token_weights = (np.ones(int(lengths[labelled].sum())) if weights is None
                         else np.repeat(weights, lengths[labelled]))
        hits = [(p == g, w) for p, g, w in zip(predicted, gold, token_weights) if g is not None]
        correct, counted = np.array(hits, dtype=np.float64).T
        return float(correct @ counted / counted.sum())

    # -- fitted attributes in sklearn-crfsuite's form -------------------------------------

    @property
    def tagger_(self):
        """python-crfsuite's ``Tagger`` inspection (``info()``, ``labels()``, ``tag(xseq)``)
        of the fitted model, as sklearn-crfsuite's ``tagger_`` (`Tagger`); None before
        fit."""
        if not hasattr(self, "state_weights_"):
            return None
        return Tagger(self)

    @property
    def state_features_(self):
        """``{(attribute, label): weight}`` of every non-zero state weight; None before
        fit."""
        if not hasattr(self, "state_weights_"):
            return None
        rows, cols = np.nonzero(self.state_weights_)
        weights = self.state_weights_[rows, cols].tolist()
        return {
            (self.attributes_[r], self.classes_[c]): w
            for r, c, w in zip(rows.tolist(), cols.tolist(), weights)
        }

    @property
    def transition_features_(self):
        """``{(label_from, label_to): weight}`` of every non-zero transition weight; at order
        2 also ``{(h, i, j): weight}`` of label triples (``h`` None for a sequence's first
        two labels) and ``{(h, None, j): weight}`` of skip-bigrams. None before fit."""
        if not hasattr(self, "transition_weights_"):
            return None
        names = list(self.classes_) + [None]
        features = {}
        for weights, key in [
            (self.transition_weights_, lambda i, j: (names[i], names[j])),
            (self.trigram_weights_, lambda h, i, j: (names[h], names[i], names[j])),
            (self.skip_weights_, lambda h, j: (names[h], None, names[j])),
        ]:
            if weights is not None:
                for index in zip(*(axis.tolist() for axis in np.nonzero(weights))):
                    features[key(*index)] = float(weights[index])
        return features

    def _set_weight_blocks(self, blocks, allowed=None):
        """Fitted weights from `WeightLayout.blocks`: W, bigram and, at order 2, trigram and
        skip-bigram weights, and the transition entries allowed (`WeightLayout.allowed`)."""
        self.allowed_transitions_ = allowed
        state, transition, *second_order = (np.array(block) for block in blocks)
        self.state_weights_, self.transition_weights_ = state, transition
        self.trigram_weights_, self.skip_weights_ = second_order or (None, None)
        self.size_ = sum(block.nbytes for block in [state, transition, *second_order])

    def _set_termination(self, condition, message, cap):
        """Set ``termination_condition_`` to the token ``condition``, write ``message`` (why
        the last run stopped, in words) into the last entry of ``training_log_``, and warn
        with a `ConvergenceWarning` when the run stopped at its cap on the iterations, the
        parameter named ``cap`` (None: a cap chosen on held-out data, not warned about)."""
        self.termination_condition_ = condition
        if self.training_log_:
            self.training_log_[-1]["stop"] = message
        if self.verbose:
            print(f"{type(self).__name__}: {message}", flush=True)
        if condition == "max_iter" and cap is not None:
            warnings.warn(f"{type(self).__name__} {message} before converging; raise {cap} "
                          "to let it run longer", ConvergenceWarning, stacklevel=3)

    def _transition_potentials(self):
        """The kernels' transition potentials of the fitted weights."""
        return transition_potentials(self.transition_weights_, self.trigram_weights_,
                                     self.skip_weights_, self.allowed_transitions_)

