"""`CRF`: supervised linear-chain CRF trained by L-BFGS, a drop-in for sklearn_crfsuite.CRF."""

import os
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions

from ..objective import penalised_negative_log_likelihood
from ..optim import minimize_lbfgs
from ..parallel import CHUNK_TOKENS, ChunkedSequences
from ..potentials import WeightLayout, observed_weight_masks, seen_structure
from ..utils import single_threaded_blas, unfitted_on_failure
from ._base import BaseCRF
from ._sample_weights import labelled_weights

__all__ = ["CRF"]


#: CRFsuite's training algorithms other than L-BFGS, and what stands for each here.
CRFSUITE_ALGORITHMS = {
    "l2sgd": "CRFsuite's l2sgd is NaturalGradientCRF(update='sgd'), with the same "
             "learning-rate calibration",
    "ap": "the averaged perceptron has no counterpart here",
    "pa": "passive-aggressive training has no counterpart here",
    "arow": "AROW has no counterpart here",
}

#: CRFsuite's line searches other than backtracking under the Armijo condition.
CRFSUITE_LINE_SEARCHES = ("MoreThuente", "StrongBacktracking")


class CRF(BaseCRF):
    """Linear-chain conditional random field trained by L-BFGS.

    A drop-in for ``sklearn_crfsuite.CRF(algorithm='lbfgs')``: the same inputs (lists of
    sequences of feature dicts), outputs, parameter and attribute names; no temp files, the
    fitted model is plain NumPy arrays.

    It maximises ``sum_i log p(y_i | x_i) - c1 * ||w||_1 - c2 * ||w||^2`` over state weights
    (attribute x label) and transition weights (label x label). With ``order=2`` the
    transitions also have weights for label triples ``(y_{t-2}, y_{t-1}, y_t)`` (and for the
    first two labels of a sequence) and skip-bigrams ``(y_{t-2}, y_t)``, the bigrams acting as
    their back-offs, as in the CRF of He, Gillenwater & Taskar (2013); inference then costs
    O(S^3) per token instead of O(S^2).

    Parameters
    ----------
    algorithm : {'lbfgs'}, default='lbfgs'
        Only L-BFGS; CRFsuite's others are refused with what to use instead: ``'l2sgd'`` is
        `NaturalGradientCRF` with ``update='sgd'``.
    c1 : float, default=0.0
        L1 strength; trained with OWL-QN as CRFsuite does, giving exact zeros.
    c2 : float, default=1.0
        L2 strength, CRFsuite's scaling: the penalty is ``c2 * ||w||^2``. CRFsuite's
        default, right for about 10,000 labelled sentences; with fewer, a weaker prior did
        better: c2 near (number of labelled sentences) / 10,000 (0.01 to 0.1 for 200 to
        1,000 sentences gained 3 to 6 span F1 points on BC2GM). Better still, choose c1 and
        c2 on a dev set.
    order : {1, 2}, default=1
        Order of the label chain. 2 pays where label sequences have structure beyond pairs
        and there are few labels (handwritten letters); it costs about S times more per
        iteration.
    c2_transitions : float, default=None
        L2 strength of the transition weights (all orders); None: ``c2``. A weaker prior on
        transitions than on emissions is what He et al.'s discount of emission features
        amounts to.
    max_iterations : int, default=None
        Maximum number of L-BFGS iterations; None: until a stopping rule fires.
    num_memories : int, default=6
        Number of L-BFGS correction pairs.
    epsilon : float, default=1e-5
        Stop when ``||g|| / max(1, ||w||) < epsilon``.
    period : int, default=10
        Window of the ``delta`` stopping rule.
    delta : float, default=1e-5
        Stop when the objective improved by less than ``delta`` (relative) over ``period``
        iterations.
    linesearch : {'Backtracking'} or None, default=None
        The line search: backtracking until the Armijo condition holds, CRFsuite's
        'Backtracking' (which CRFsuite also runs whenever ``c1 > 0``); None is the same.
        CRFsuite's 'MoreThuente' (its default without L1) and 'StrongBacktracking' are
        refused, saying so: they reach the same optimum by other steps.
    max_linesearch : int, default=20
        Maximum number of trial steps of one line search (CRFsuite's default); the fit stops
        (``termination_condition_`` 'line_search_failed') when a search runs out of them.
    min_freq : float, default=0
        Attributes occurring ``min_freq`` times or fewer in the training data are dropped
        (feature-dict input only).
    all_possible_states : bool, default=True
        True: a weight for every (attribute, label) pair. False: only pairs seen together in
        the training data, as CRFsuite does by default (smaller model, usually slightly less
        accurate).
    all_possible_transitions : bool, default=True
        True: a weight for every label pair. False: only transitions seen in the training data
        (the others stay 0, as in CRFsuite). At order 2, False also restricts the chain to
        the label pairs seen in training: a pair never seen cannot be predicted (nor a
        triple holding one), and forward-backward runs over the pairs and triples allowed
        only (`allowed_transitions_`), several times faster when few of them occur
        (CoNLL-2000: 145 of 484 pairs, 1,270 of 10,648 triples).
    constraints : 'auto', None, {'bio', 'iobes', 'bilou'} or dict, default='auto'
        Label sequences that prediction never produces. 'auto': when the labels are span
        tags of one scheme (BIO/IOB2 ``B-X``/``I-X``/``O``, IOBES, BILOU) and every training
        sequence follows it, that scheme's rules: `predict`, `predict_marginals` and the
        entropies cover only valid sequences (no ``I-X`` after ``O`` or ``B-Y``); other
        labels (part-of-speech tags, IOB1 data) get none, with a warning when at most a
        tenth of the training sequences break the scheme (likely labelling errors). The
        prefixes may be lower-case and followed by ``_`` (``b_X``). A scheme's name: its
        rules, which the training sequences must follow. A dict with any of the keys
        ``'transitions'`` (the allowed ``(previous, next)`` label pairs), ``'starts'`` and
        ``'ends'`` (the allowed first and last labels), a missing key allowing all. None: no
        constraint.
        Training is unconstrained (gold sequences are valid); the fitted rules are
        ``constraints_``.
    class_weight : dict, 'balanced' or None, default=None
        Weights of the labels in the likelihood, for rare labels: mislabelling a token
        whose gold label has weight ``w`` costs ``log w`` in the partition function (each
        wrong label's potential is raised by it: softmax-margin, Gimpel & Smith 2010), so
        the model must score such tokens' gold labels ``log w`` higher than under the plain
        likelihood, which favours recall of those labels. A dict label -> weight (others
        1); 'balanced': ``n_tokens / (n_labels * count)``. None: the plain likelihood.
    verbose : bool, default=False
        Print the objective (and the dev score, when given) after every iteration.
    n_jobs : int, default=None
        Worker processes over which each objective evaluation spreads its chunks of sequences
        (the model is the same for any value; the chunks are memory-mapped, not copied, into
        the workers). None: one, in this process.
    checkpoint : str or path-like, default=None
        A directory (made if missing) where every optimisation run of the fit writes its
        state every ``checkpoint_every`` iterations, and its result when it ends. A fit that
        was interrupted (Ctrl-C, a lost machine) and is run again with the same data,
        settings and directory reads the runs that had finished, resumes the one that had
        not, and ends with the model of a fit never interrupted. The directory is kept (a
        refit reads it); delete it once the model is saved. None: no checkpoint.
    checkpoint_every : int, default=10
        Iterations between two checkpoints of a running optimisation; more where writing
        one would take over 2.5 % of the time (a large model's state, with L-BFGS's memory,
        is 15 times the weights).

    Attributes
    ----------
    classes_ : list
        Labels, in order of first appearance in the training data.
    attributes_ : list
        Attribute names (column indices for matrix input).
    num_attributes_ : int
        Number of attributes, ``len(attributes_)``.
    state_weights_ : ndarray of shape (n_attributes, n_labels)
    transition_weights_ : ndarray of shape (n_labels, n_labels)
        ``transition_weights_[i, j]``: weight of label ``i`` followed by label ``j``.
    trigram_weights_ : ndarray of shape (n_labels + 1, n_labels, n_labels) or None
        Order 2: ``trigram_weights_[h, i, j]``, weight of labels ``h, i, j`` in a row;
        ``trigram_weights_[n_labels, i, j]``, weight of ``i, j`` as the first two labels.
        None at order 1.
    skip_weights_ : ndarray of shape (n_labels, n_labels) or None
        Order 2: ``skip_weights_[h, j]``, weight of label ``h`` two positions before ``j``.
    allowed_transitions_ : ndarray of bool of shape (n_labels + 1, n_labels, n_labels) or None
        Order 2 with ``all_possible_transitions=False``: the label triples that may occur
        (``[n_labels, i, j]``: ``i, j`` as the first two labels), those whose two pairs
        were seen in training. None: all.
    class_weight_ : ndarray of shape (n_labels,) or None
        The weight of each label of ``classes_`` (``class_weight`` resolved); None: all 1.
    constraints_ : LabelConstraints or None
        What ``constraints`` resolved to: ``transitions`` (n_labels, n_labels), ``starts``
        and ``ends`` (n_labels,), arrays of bool over ``classes_`` saying what prediction
        may produce, and the ``scheme`` they follow; None: no constraint.
    state_features_ : dict
        ``{(attribute, label): weight}`` of the non-zero state weights.
    transition_features_ : dict
        ``{(label_from, label_to): weight}`` of the non-zero transition weights; at order 2
        also ``{(h, i, j): weight}`` for triples (``h`` None for the first two labels) and
        ``{(h, None, j): weight}`` for skip-bigrams.
    tagger_ : Tagger
        python-crfsuite's ``Tagger`` inspection, as sklearn-crfsuite's ``tagger_``:
        ``tagger_.info()`` (labels, attributes, transitions, state features),
        ``tagger_.labels()``, ``tagger_.tag(xseq)``.
    size_ : int
        Bytes taken by the weights.
    training_log_ : list of dict
        Per iteration: ``num``, ``loss``, ``feature_norm``, ``error_norm``,
        ``active_features``, ``n_evaluations``, ``step``, ``time``, and ``dev_accuracy`` and
        ``dev_span_f1`` (conlleval) with a dev set; the last entry's ``stop`` says why
        training stopped, in words.
    n_iter_ : int
        L-BFGS iterations run.
    termination_condition_ : {'converged', 'max_iter', 'line_search_failed'}
        Why training stopped; at ``'max_iter'`` (``max_iterations`` reached) a
        `~sklearn.exceptions.ConvergenceWarning` says so.
    vectorizer_ : SequenceVectorizer or None
        The featurizer fitted on dict input (None for matrix input).

    See Also
    --------
    SequenceVectorizer : Featurizer for pipelines.
    CRFCV : The same CRF with ``c1`` and ``c2`` chosen on held-out data.

    Examples
    --------
    >>> from sklearn_ssl_crf import CRF
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}]]
    >>> y = [["DET", "NOUN"], ["DET", "NOUN"]]
    >>> CRF(c2=0.01).fit(X, y).predict([[{"w": "the"}, {"w": "cat"}]])
    [['DET', 'NOUN']]
    """

    _parameter_constraints = {
        "algorithm": [StrOptions({"lbfgs"})],
        "c1": [Interval(Real, 0, None, closed="left")],
        "c2": [Interval(Real, 0, None, closed="left")],
        "order": [Interval(Integral, 1, 2, closed="both")],
        "c2_transitions": [Interval(Real, 0, None, closed="left"), None],
        "max_iterations": [Interval(Integral, 0, None, closed="left"), None],
        "num_memories": [Interval(Integral, 1, None, closed="left")],
        "epsilon": [Interval(Real, 0, None, closed="left")],
        "period": [Interval(Integral, 0, None, closed="left")],
        "delta": [Interval(Real, 0, None, closed="left")],
        "linesearch": [StrOptions({"Backtracking"}), None],
        "max_linesearch": [Interval(Integral, 1, None, closed="left")],
        "min_freq": [Interval(Real, 0, None, closed="left")],
        "all_possible_states": ["boolean"],
        "all_possible_transitions": ["boolean"],
        "constraints": [StrOptions({"auto", "bio", "iob2", "iobes", "bilou"}), dict, None],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "verbose": ["verbose"],
        "n_jobs": [Integral, None],
        "checkpoint": [str, os.PathLike, None],
        "checkpoint_every": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        algorithm="lbfgs",
        c1=0.0,
        c2=1.0,
        order=1,
        c2_transitions=None,
        max_iterations=None,
        num_memories=6,
        epsilon=1e-5,
        period=10,
        delta=1e-5,
        linesearch=None,
        max_linesearch=20,
        min_freq=0,
        all_possible_states=True,
        all_possible_transitions=True,
        constraints="auto",
        class_weight=None,
        verbose=False,
        n_jobs=None,
        checkpoint=None,
        checkpoint_every=10,
    ):
        self.algorithm = algorithm
        self.c1 = c1
        self.c2 = c2
        self.order = order
        self.c2_transitions = c2_transitions
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.constraints = constraints
        self.class_weight = class_weight
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every

    def _validate_params(self):
        # sklearn-crfsuite's users pass CRFsuite's other algorithms: say what to use.
        if isinstance(self.algorithm, str) and self.algorithm in CRFSUITE_ALGORITHMS:
            raise InvalidParameterError(
                f"algorithm={self.algorithm!r} is not available: "
                f"{CRFSUITE_ALGORITHMS[self.algorithm]}; {type(self).__name__} trains by "
                "L-BFGS only (algorithm='lbfgs')")
        if isinstance(self.linesearch, str) and self.linesearch in CRFSUITE_LINE_SEARCHES:
            raise InvalidParameterError(
                f"linesearch={self.linesearch!r} is not available: the line search here is "
                "backtracking under the Armijo condition, CRFsuite's 'Backtracking' (its "
                "choice whenever c1 > 0); the optimum is the same, reached by other steps. "
                "Leave linesearch=None or pass 'Backtracking'")
        super()._validate_params()

    @unfitted_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, X_dev=None, y_dev=None, *, sample_weight=None):
        """Train on labelled sequences.

        Parameters
        ----------
        X : list of sequences of feature dicts, list of feature matrices, or SequenceMatrix
            The training sequences.
        y : list of label sequences
            Sequences whose labels are None are unlabelled; a supervised CRF skips them.
            A None label within a sequence leaves that token unknown: the sequence's
            likelihood sums over its labellings that keep the known labels (partial
            annotation, Tsuboi et al. 2008).
        X_dev, y_dev : optional
            A development set scored (token accuracy and span F1) after every iteration,
            recorded in ``training_log_`` and printed when ``verbose``. Give both or neither.
        sample_weight : array-like of shape (n_sequences,), default=None
            Weight of each sequence of X: its log-likelihood counts that many times
            (scikit-learn's convention; `GridSearchCV` splits it with X). Unlabelled
            sequences must have weight 1. None: all 1.

        Returns
        -------
        self : CRF
            The fitted estimator.

        Notes
        -----
        A fit that raises or is interrupted (Ctrl-C) leaves the estimator unfitted, in
        every estimator of this package: nothing of it, nor of an earlier fit, is kept.
        """
        _check_dev_pair(X_dev, y_dev)
        data = self._packed_training_data(X, y, sample_weight)
        layout = self._weight_layout(data)
        objective = penalised_negative_log_likelihood(data, layout, self._l2(layout))
        callback = None if X_dev is None else self._dev_scorer(
            *self._labelled_dev(X_dev, y_dev), layout)
        result = self._minimize(objective, np.zeros(layout.size), callback)
        self._set_fitted_weights(result, layout)
        return self

    def _minimize(self, objective, theta, callback=None, max_iterations=None, c1=None,
                  delta=None):
        """L-BFGS (OWL-QN when c1 > 0) on ``objective`` from ``theta``, for at most
        ``max_iterations`` iterations if given, and at most ``self.max_iterations``;
        ``c1`` and ``delta`` None: the estimator's."""
        limits = [n for n in (self.max_iterations, max_iterations) if n is not None]
        with single_threaded_blas():
            return minimize_lbfgs(
                objective,
                theta,
                c1=self.c1 if c1 is None else c1,
                max_iterations=min(limits, default=None),
                epsilon=self.epsilon,
                period=self.period,
                delta=self.delta if delta is None else delta,
                num_memories=self.num_memories,
                max_linesearch=self.max_linesearch,
                callback=callback,
                verbose=self.verbose,
                checkpoint=self._run_checkpoints(),
            )

    def _set_fitted_weights(self, result, layout):
        self._set_weight_blocks(layout.blocks(result.x), layout.allowed)
        self.training_log_ = result.log
        self.n_iter_ = result.n_iter
        self._set_termination(result.termination_condition, result.message, "max_iterations")

    def _l2(self, layout):
        """The L2 strength of every parameter (`WeightLayout.l2_strengths`);
        ``c2_transitions`` None follows ``c2``."""
        return layout.l2_strengths(self.c2, self.c2_transitions)

    def _chunked(self, sequences, labels=None, **kwargs):
        """Sequences packed in chunks for this model's order; a second-order chain's work
        arrays hold S^2 values per token, so its chunks are S / 4 times smaller; restricted
        to the pairs seen (`all_possible_transitions=False`), about a third of that (145 of
        484 pairs on CoNLL-2000, 191 of 676 on the handwritten letters), so S / 12.
        Labelled sequences carry the label costs of ``class_weight_``."""
        if labels is not None:
            kwargs["label_costs"] = self._label_costs()
        return ChunkedSequences(sequences, labels, len(self.classes_), n_jobs=self.n_jobs,
                                chunk_tokens=self._chunk_tokens(), order=self.order,
                                **kwargs)

    def _chunk_tokens(self):
        """Tokens per chunk (`_chunked`); None: `ChunkedSequences`'s default."""
        if self.order == 1:
            return None
        per_label = 4 if self.all_possible_transitions else 12
        return max(1000, CHUNK_TOKENS * per_label // len(self.classes_))

    def _work_tokens(self, lengths, n_unlabeled):
        # `ChunkedSequences` cuts n tokens into ceil(n / chunk) chunks: the largest holds
        # at least their mean.
        chunk = self._chunk_tokens() or CHUNK_TOKENS
        return max((n / -(-n // chunk) for n in (int(np.sum(lengths)), n_unlabeled) if n),
                   default=0)

    def _weight_copies(self):
        return self._lbfgs_copies(self.max_iterations)

    def _lbfgs_copies(self, max_iterations):
        """Weight vectors held by L-BFGS running at most ``max_iterations`` (None: no cap)
        and ``self.max_iterations``: a pair of them per correction pair it fills, the
        iterate and its gradient, and while it iterates the direction and the trial point
        (whose gradient reuses no array)."""
        limits = [n for n in (self.max_iterations, max_iterations) if n is not None]
        iterations = min(limits, default=self.num_memories)
        return 2 * min(self.num_memories, iterations) + (4 if iterations else 2)

    def _packed_training_data(self, X, y, sample_weight=None):
        # A method of its own so that the unpacked feature matrix is freed before training.
        sequences, labelled, codes = self._fit_inputs(X, y, self.min_freq)
        weights = labelled_weights(sample_weight, len(sequences), labelled)
        if labelled.size < len(sequences):
            sequences = sequences[labelled]
        return self._chunked(sequences, codes, weights=weights)

    def _weight_layout(self, data):
        n_labels = len(self.classes_)
        masks = observed_weight_masks(data.chunks, n_labels, self.all_possible_states,
                                      self.all_possible_transitions)
        if self.order == 2 and not self.all_possible_transitions:
            masks["allowed"] = seen_structure(sum(chunk.transition_counts
                                                  for chunk in data.chunks))
        return WeightLayout(self.num_attributes_, n_labels, order=self.order, **masks)


def _check_dev_pair(X_dev, y_dev):
    if (X_dev is None) != (y_dev is None):
        raise ValueError("give both X_dev and y_dev, or neither")
