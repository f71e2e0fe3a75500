"""Entropy-regularised CRFs: `EntropyRegularizedCRF` (Mann & McCallum 2007) and
`SemiSupervisedCRF` (Jiao et al. 2006), with an optional label-proportion term.

Both maximise

    sum_labelled log p(y|x) - c1 ||w||_1 - c2 ||w||^2
        + gamma * sum_unlabelled sum_y p(y|x) log p(y|x)
        - proportion_weight * N_u * KL(pi || pi_hat)

where ``pi_hat`` is the mean token marginal over the ``N_u`` unlabelled tokens and ``pi`` a
target label distribution. Training fits the supervised CRF first, then ascends the full
objective from that optimum. They differ only in how the entropy gradient is computed.
"""

from numbers import Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from .base import BestIterate, unlabelled_sequences
from .crf import (
    CRF,
    _check_dev_pair,
    _penalised_negative_log_likelihood,
    l2_penalty,
)
from .objectives import label_count_gradient, unlabelled_terms
from .penalties import LabelProportionPenalty

__all__ = ["EntropyRegularizedCRF", "SemiSupervisedCRF", "target_proportions"]


class EntropyRegularizedCRF(CRF):
    """Linear-chain CRF trained with entropy regularisation on unlabelled sequences.

    The entropy gradient is computed with the entropy lattices of Mann & McCallum (2007),
    in O(n S^2) per sequence, the cost of forward-backward. A label-proportion term
    (``proportion_weight > 0``) keeps the model's mean token marginals on the unlabelled data
    near a target distribution; without it, minimising entropy alone rewards confident
    predictions of the most frequent label and can collapse rare-entity taggers.

    Unlabelled sequences are given as ``fit(X, y, X_unlabeled=...)``, as sequences whose
    ``y[i]`` is None, or both. `score` and the scorers ignore unlabelled sequences, so
    cross-validation and `GridSearchCV` work with either convention.

    Parameters
    ----------
    gamma : float, default=0.1
        Weight of the negative entropy of the unlabelled sequences.
    proportion_weight : float, default=0.0
        Weight of ``N_u * KL(pi || pi_hat)``; 0 gives the published objective.
    label_proportions : dict or None, default=None
        Target label distribution ``pi`` (label -> proportion, normalised here; labels not
        given get 0). None: the labelled tokens' label frequencies, add-one smoothed.
    entropy_gradient : {'lattice', 'covariance'}, default='lattice'
        'lattice': Mann & McCallum's O(n S^2) dynamic program; 'covariance': Jiao et al.'s
        covariance form, O(n^2 S^3). Both give the same numbers.
    algorithm, c1, c2, order, c2_transitions, max_iterations, num_memories, epsilon, period, \
delta, min_freq, \
all_possible_states, all_possible_transitions, verbose
        As in `CRF`; ``max_iterations`` bounds each of the two phases.
    n_jobs : int, default=None
        Worker processes over which the chunks of labelled and unlabelled sequences are
        spread; the model is the same for any value.

    Attributes
    ----------
    training_log_ : list of dict
        Per iteration of both phases (``phase`` is 'supervised' or 'semi-supervised'): the
        `CRF` entries, and in the second phase ``objective``, ``likelihood``,
        ``unlabelled_entropy`` (summed), ``proportion_kl``, and dev scores when given. The
        second phase starts with an entry ``num=0``: those values at the supervised optimum.
    best_iteration_ : int or None
        With a dev set: the semi-supervised iteration whose weights were kept (0: the
        supervised optimum), chosen by dev span F1.
    target_proportions_ : ndarray of shape (n_labels,)
        ``pi``, in the order of ``classes_``.
    classes_, attributes_, num_attributes_, state_weights_, transition_weights_, \
trigram_weights_, skip_weights_, state_features_, transition_features_, size_, n_iter_, \
termination_condition_, vectorizer_
        As in `CRF`.

    See Also
    --------
    SemiSupervisedCRF : the same objective with Jiao et al.'s covariance-form gradient.
    CRF : supervised training only.
    """

    _parameter_constraints = {
        **CRF._parameter_constraints,
        "gamma": [Interval(Real, 0, None, closed="left")],
        "proportion_weight": [Interval(Real, 0, None, closed="left")],
        "label_proportions": [dict, None],
        "entropy_gradient": [StrOptions({"lattice", "covariance"})],
    }

    def __init__(
        self,
        gamma=0.1,
        proportion_weight=0.0,
        label_proportions=None,
        entropy_gradient="lattice",
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
        min_freq=0,
        all_possible_states=True,
        all_possible_transitions=True,
        verbose=False,
        n_jobs=None,
    ):
        super().__init__(
            algorithm=algorithm, c1=c1, c2=c2, order=order, c2_transitions=c2_transitions,
            max_iterations=max_iterations,
            num_memories=num_memories, epsilon=epsilon, period=period, delta=delta,
            min_freq=min_freq, all_possible_states=all_possible_states,
            all_possible_transitions=all_possible_transitions, verbose=verbose, n_jobs=n_jobs,
        )
        self.gamma = gamma
        self.proportion_weight = proportion_weight
        self.label_proportions = label_proportions
        self.entropy_gradient = entropy_gradient

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, X_unlabeled=None, X_dev=None, y_dev=None):
        """Train on labelled and unlabelled sequences.

        Parameters
        ----------
        X : list of sequences of feature dicts, list of feature matrices, or SequenceMatrix
        y : list of label sequences, None for an unlabelled sequence
        X_unlabeled : iterable of sequences of the same kind as X, default=None
            More unlabelled sequences: a list, or any iterable such as a generator, which
            is read once and featurised 2,000 sequences at a time, so that they are never
            all held as feature dicts (`datasets.iter_text` reads a text file lazily, and
            `WindowFeatures.transform` of an iterator is an iterator).
        X_dev, y_dev : optional
            A development set scored after every iteration; the semi-supervised phase keeps
            the iterate with the best dev span F1 (never worse than the supervised start).

        Returns
        -------
        self : EntropyRegularizedCRF
        """
        _check_dev_pair(X_dev, y_dev)
        sequences, labelled, codes, streamed = self._fit_inputs_and_stream(
            X, y, () if X_unlabeled is None else X_unlabeled, self.min_freq)
        unlabelled = unlabelled_sequences(sequences, labelled)
        if self.order == 2 and self.entropy_gradient == "covariance" and self.gamma > 0:
            raise ValueError(
                "entropy_gradient='covariance' (Jiao et al.'s nested dynamic program) is "
                "first-order only; use order=1, or entropy_gradient='lattice', which gives "
                "the same gradient at any order")
        labelled_data = self._chunked(sequences[labelled], codes)
        # The chunks take the blocks from the list, freeing each once packed.
        streamed.insert(0, sequences[unlabelled])
        unlabelled_data = self._chunked(streamed)
        del sequences
        self.target_proportions_ = target_proportions(self.label_proportions,
                                                      self.classes_, codes)

        layout = self._weight_layout(labelled_data)
        dev = None if X_dev is None else self._dev_scorer(X_dev, y_dev, layout)
        supervised = self._minimize(
            _penalised_negative_log_likelihood(labelled_data, layout,
                                                          self._l2(layout)),
            np.zeros(layout.size), dev)
        log = [dict(entry, phase="supervised") for entry in supervised.log]
        self.best_iteration_ = None
        result = supervised
        if unlabelled_data.chunks and (self.gamma > 0 or self.proportion_weight > 0):
            objective, parts = self._semi_supervised_objective(labelled_data, unlabelled_data,
                                                               layout)
            tracker = BestIterate(supervised.x, dev)
            # Iteration 0 of the second phase: the objective's parts at the supervised optimum.
            objective(supervised.x)
            log.append(dict(tracker.start_scores, num=0, phase="semi-supervised", **parts))
            result = self._minimize(objective, supervised.x, tracker.callback(parts))
            log += [dict(entry, phase="semi-supervised") for entry in result.log]
            if dev is not None:
                result.x, self.best_iteration_ = tracker.best_x, tracker.best_iteration
        n_iter = supervised.n_iter + (result.n_iter if result is not supervised else 0)
        self._set_fitted_weights(result, layout)
        self.training_log_ = log
        self.n_iter_ = n_iter
        return self

    def _semi_supervised_objective(self, labelled_data, unlabelled_data, layout):
        """``theta -> (value, gradient)`` of minus the full objective, and a dict holding the
        parts of the last evaluation."""
        supervised = _penalised_negative_log_likelihood(labelled_data, layout,
                                                          self._l2(layout))
        strengths = self._l2(layout)
        gamma, weight = self.gamma, self.proportion_weight
        n_unlabelled = sum(chunk.n_tokens for chunk in unlabelled_data.chunks)
        proportions = LabelProportionPenalty(self.target_proportions_, n_unlabelled)
        method = self.entropy_gradient if gamma > 0 else None
        parts = {}

        def objective(theta):
            value, gradient = supervised(theta)
            parts["likelihood"] = float(-(value - l2_penalty(theta, strengths)))
            state, transition = layout.unpack(theta)
            negative_entropy, d_state, d_transition, label_sums = unlabelled_data.sum(
                _chunk_unlabelled_terms, state, transition, method)
            if gamma > 0:
                value -= gamma * negative_entropy
                gradient -= gamma * layout.pack(d_state, d_transition)
            # N_u KL(pi || pi_hat) and its gradient w.r.t. each token's label marginals.
            penalty, label_weights = proportions.value_and_gradient(label_sums[None, :])
            if weight > 0:
                d_state, d_transition = unlabelled_data.sum(
                    _chunk_label_count_gradient, state, transition, label_weights[0])
                value += weight * penalty
                gradient += weight * layout.pack(d_state, d_transition)
            parts.update(objective=float(-value), unlabelled_entropy=float(-negative_entropy),
                         proportion_kl=penalty / n_unlabelled)
            return value, gradient

        return objective, parts


class SemiSupervisedCRF(EntropyRegularizedCRF):
    """Jiao et al. (2006)'s semi-supervised CRF: entropy regularisation with the
    covariance-form gradient (O(n^2 S^3) per sequence).

    The same estimator as `EntropyRegularizedCRF` with ``entropy_gradient='covariance'`` by
    default: the published method, slower by a factor of about n S, with the same results.
    The covariance form is first-order only (``order=1``).

    Parameters
    ----------
    entropy_gradient : {'lattice', 'covariance'}, default='covariance'
        As in `EntropyRegularizedCRF`, whose default is 'lattice'.
    gamma, proportion_weight, label_proportions, algorithm, c1, c2, order, c2_transitions, \
max_iterations, num_memories, epsilon, period, delta, min_freq, all_possible_states, \
all_possible_transitions, verbose, n_jobs
        As in `EntropyRegularizedCRF`.

    Attributes
    ----------
    training_log_, best_iteration_, target_proportions_, classes_, attributes_, \
num_attributes_, state_weights_, transition_weights_, state_features_, \
transition_features_, size_, n_iter_, termination_condition_, vectorizer_
        As in `EntropyRegularizedCRF`.

    See Also
    --------
    EntropyRegularizedCRF : the same objective with Mann & McCallum's faster gradient.
    """

    def __init__(
        self,
        gamma=0.1,
        proportion_weight=0.0,
        label_proportions=None,
        entropy_gradient="covariance",
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
        min_freq=0,
        all_possible_states=True,
        all_possible_transitions=True,
        verbose=False,
        n_jobs=None,
    ):
        super().__init__(
            gamma=gamma, proportion_weight=proportion_weight,
            label_proportions=label_proportions, entropy_gradient=entropy_gradient,
            algorithm=algorithm, c1=c1, c2=c2, order=order, c2_transitions=c2_transitions,
            max_iterations=max_iterations,
            num_memories=num_memories, epsilon=epsilon, period=period, delta=delta,
            min_freq=min_freq, all_possible_states=all_possible_states,
            all_possible_transitions=all_possible_transitions, verbose=verbose, n_jobs=n_jobs,
        )


def target_proportions(label_proportions, classes, codes):
    """The target label distribution ``pi`` in the order of ``classes``: normalised
    ``label_proportions`` (label -> proportion; None: the frequencies of the labelled tokens'
    ``codes``, add-one smoothed)."""
    if label_proportions is None:
        counts = np.bincount(codes, minlength=len(classes)) + 1.0
        return counts / counts.sum()
    unknown = set(label_proportions) - set(classes)
    if unknown:
        raise ValueError(f"label_proportions has labels not in the training data: "
                         f"{sorted(map(str, unknown))}")
    target = np.array([float(label_proportions.get(label, 0.0)) for label in classes])
    if not np.isfinite(target).all() or (target < 0).any() or target.sum() <= 0:
        raise ValueError("label_proportions must be non-negative numbers with a positive sum")
    return target / target.sum()


def _chunk_unlabelled_terms(chunk, workspace, state, transition, method):
    unary = chunk.unary(state)
    negative_entropy, d_unary, d_transition, label_sums = unlabelled_terms(
        chunk, unary, transition, workspace, method)
    d_state = 0.0 if d_unary is None else chunk.weight_gradient(d_unary)
    return negative_entropy, d_state, 0.0 if d_transition is None else d_transition, label_sums


def _chunk_label_count_gradient(chunk, workspace, state, transition, label_weights):
    d_unary, d_transition = label_count_gradient(chunk, chunk.unary(state), transition,
                                                 label_weights, workspace)
    return chunk.weight_gradient(d_unary), d_transition
