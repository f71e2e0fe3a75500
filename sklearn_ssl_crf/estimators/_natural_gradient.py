"""`NaturalGradientCRF`: stochastic training with the Bregman / natural-gradient updates.

Per sequence (or mini-batch), the gradient ``g`` of the negative log-likelihood is
transformed element-wise before the step, ``theta <- (1 - eta lam) theta - eta h(g)``
(see `sklearn_ssl_crf.optim.transforms`); L2 by scaling, learning-rate calibration and the
stopping rule follow CRFsuite's l2sgd.
"""

import copy
import os
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..metrics import check_scoring
from ..objective import target_proportions
from ..optim import BestIterate
from ..optim.sgd import SGDTrainer, calibrate_learning_rate, minimize_sgd, sgd_epoch
from ..optim.transforms import TRANSFORMS
from ..potentials import WeightLayout
from ..training import GeneratorState, StochasticSamples, union_masks
from ..utils import (
    concatenate_inputs,
    fit_random_state,
    single_threaded_blas,
    stack_sequences,
    unchanged_on_failure,
    unfitted_on_failure,
)
from ._base import BaseCRF, unlabeled_sequences
from ._crf import _check_dev_pair
from ._init_weights import init_vector
from ._sample_weights import labelled_weights


class NaturalGradientCRF(BaseCRF):
    """Linear-chain CRF trained by stochastic natural-gradient descent.

    Stochastic gradient descent on the L2-regularised negative log-likelihood in which each
    sequence's gradient ``g`` is transformed element-wise before the step: the updates that
    natural gradient descent gives for Bregman-divergence losses between the model
    expectation and the empirical mean of the features ("Training Conditional Random Fields
    with Natural Gradient Descent"). ``update='sgd'`` is CRFsuite's l2sgd. Only the weights
    of attributes present in the sampled sequences are touched; L2 shrinks all weights
    through one scale factor. Training can stream (`partial_fit`) and can add the
    entropy-regularisation and label-proportion terms of `EntropyRegularizedCRF` on
    unlabelled sequences, sampled like the labelled ones.

    Parameters
    ----------
    update : {'sgd', 'inverse', 'arctan', 'arctan2', 'erf', 'gd'}, default='arctan'
        Transform ``h`` of the gradient: ``g``; ``g / (g^2 + eps)`` (U1);
        ``arctan(g / sqrt(eps))`` (U2, "arctan.1"); ``arctan(g / eps)`` ("arctan.2");
        ``erf(sqrt(pi) g / (2 eps))``; ``gd(g / eps)`` (Gudermannian).
    eps : float, default=1.0
        The transforms' constant. Smaller values boost small gradients more; with one
        sequence per step they also move the point where the transformed gradients
        balance away from the likelihood's optimum. On CoNLL-2000, ``eps=0.1`` gave
        'arctan' and 'arctan2' slightly better accuracy per epoch than 'sgd', but a loss
        that rises from the first epoch on, so that `fit`, which keeps the epoch of lowest
        loss, returned the first epoch's model; 0.3-3 trained well.
    c2 : float, default=1.0
        L2 strength, CRFsuite's scaling (``c2 * ||w||^2``; per sequence
        ``lam = 2 * c2 / N``).
    order : {1, 2}, default=1
        Order of the label chain (see `CRF`).
    c2_transitions : float, default=None
        L2 strength of the transition weights; None: ``c2``.
    max_iterations : int, default=None
        Maximum number of epochs; None: 1000, as CRFsuite.
    period : int, default=10
        Window of the ``delta`` stopping rule, in epochs.
    delta : float, default=1e-6
        Stop when the loss improved by less than ``delta`` (relative) over ``period``
        epochs.
    eta0 : float, default=None
        Initial learning rate; the rate at step ``t`` (sequences seen) is
        ``eta0 / (1 + lam * eta0 * t)``. None: calibrated before training as CRFsuite does,
        with the parameters below.
    calibration_eta : float, default=0.1
        First learning rate tried.
    calibration_rate : float, default=2.0
        Factor between the rates tried.
    calibration_samples : int, default=1000
        Sequences used for calibration.
    calibration_candidates : int, default=10
        Number of rates that decrease the loss to try in each direction.
    calibration_max_trials : int, default=20
        Maximum number of rates tried.
    batch_size : int, default=1
        Sequences per step. 1 is the paper's algorithm; with more, the transform is applied
        to the batch's mean gradient, the forward-backward of the batch runs vectorised, and
        the step spans as many sequences of the schedule (the fast path).
    shuffle : bool, default=True
        Visit the sequences in a new random order at every epoch. With ``batch_size > 1``,
        batches are drawn once, from sequences of similar length, and visited in a new
        random order at every epoch (each batch's feature matrices are then built once);
        without shuffling, batches are consecutive sequences.
    random_state : int, RandomState instance or None, default=None
        Seeds the calibration sample and the shuffling. None is a fixed seed: every fit
        with the same data and parameters gives the same model, as CRFsuite's does.
    gamma : float, default=0.0
        Weight of the negative entropy of unlabelled sequences (as `EntropyRegularizedCRF`).
    proportion_weight : float, default=0.0
        Weight of the label-proportion term, per unlabelled token of a step.
    label_proportions : dict or None, default=None
        Target label distribution; None: the labelled label frequencies, add-one smoothed.
    min_freq : float, default=0
        Attributes occurring ``min_freq`` times or fewer are dropped (`fit` with dict input).
    all_possible_states, all_possible_transitions : bool, default=True
        As in `CRF`.
    constraints : 'auto', None, str or dict, default='auto'
        As in `CRF`; with `partial_fit`, resolved on the first call's labelled sequences.
    class_weight : dict, 'balanced' or None, default=None
        As in `CRF`.
    init : CRF or None, default=None
        As in `EntropyRegularizedCRF`: its weights replace the supervised phase (``fit``).
    scoring : None, str or callable, default=None
        The dev score (`sklearn_ssl_crf.metrics.check_scoring`) logged after every epoch
        (``validation_score``) and by which the semi-supervised phase keeps its best epoch:
        None, span F1 when the labels carry spans (BIO/IOB/IOBES/BILOU) and token accuracy
        otherwise; a name of `sklearn_ssl_crf.metrics.SCORERS`, or
        ``scorer(estimator, X, y)``, greater is better.
    verbose : bool, default=False
        Print the calibration trials and, per epoch, the loss (and dev scores when given).
    checkpoint : str or path-like, default=None
        A directory where each phase of `fit` writes its state every ``checkpoint_every``
        epochs and its result when it ends; a fit given it again resumes there, to the
        model of a fit never interrupted (see `CRF`; the calibration is run again).
    checkpoint_every : int, default=10
        Epochs between two checkpoints (more where writing one would take over 2.5 % of
        the time).

    Attributes
    ----------
    eta0_ : float
        The initial learning rate used (calibrated or given).
    training_log_ : list of dict
        Per epoch: ``num``, ``loss`` (regularised, summed over the epoch's sequences at the
        weights each saw), ``feature_norm``, ``learning_rate``, ``time`` (seconds since the
        phase started), and with a dev set ``dev_accuracy``, ``dev_span_f1`` and
        ``validation_score`` (``scoring``'s); ``phase`` ('supervised', 'semi-supervised')
        when unlabelled terms are on.
    calibration_log_ : list of (float, float)
        The rates tried and their losses (empty when ``eta0`` is given).
    n_iter_ : int
        Epochs run.
    best_iteration_ : int or None
        With a dev set and unlabelled terms: the semi-supervised epoch whose weights were
        kept (0: the supervised model), the first of the best dev score by ``scoring``.
    validation_scores_ : list of float or None
        That dev score after each semi-supervised epoch, from 0.
    termination_condition_ : {'converged', 'max_iter', 'not_finite'}
        Why the last phase's epochs stopped: 'converged' (the loss improved by less than
        ``delta`` over ``period`` epochs), 'max_iter' (``max_iterations`` epochs, with a
        `~sklearn.exceptions.ConvergenceWarning`) or 'not_finite' (the loss overflowed);
        the last entry of ``training_log_`` says it in words (``stop``).
    classes_, attributes_, num_attributes_, state_weights_, transition_weights_, \
trigram_weights_, skip_weights_, allowed_transitions_, constraints_, class_weight_, \
state_features_, transition_features_, size_, vectorizer_
        As in `CRF`.

    See Also
    --------
    CRF : Batch training by L-BFGS.
    EntropyRegularizedCRF : The semi-supervised objective by L-BFGS.

    Notes
    -----
    `fit` keeps the weights of the epoch with the lowest loss, as CRFsuite does.

    Examples
    --------
    >>> from sklearn_ssl_crf import NaturalGradientCRF
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}]]
    >>> y = [["DET", "NOUN"], ["DET", "NOUN"]]
    >>> model = NaturalGradientCRF(c2=0.01, eta0=0.1, max_iterations=20, random_state=0)
    >>> model.fit(X, y).predict([[{"w": "the"}, {"w": "cat"}]])
    [['DET', 'NOUN']]
    """

    _fit_state = ("_weights", "_random", "_rng", "_trainer", "_n_seen")  # kept between fits
    _partial_fit_state = ("_trainer", "_rng", "vectorizer_")  # changed in place by calls
    _parameter_constraints = {
        "update": [StrOptions(set(TRANSFORMS))],
        "eps": [Interval(Real, 0, None, closed="neither")],
        "c2": [Interval(Real, 0, None, closed="left")],
        "order": [Interval(Integral, 1, 2, closed="both")],
        "c2_transitions": [Interval(Real, 0, None, closed="left"), None],
        "max_iterations": [Interval(Integral, 0, None, closed="left"), None],
        "period": [Interval(Integral, 0, None, closed="left")],
        "delta": [Interval(Real, 0, None, closed="left")],
        "eta0": [Interval(Real, 0, None, closed="neither"), None],
        "calibration_eta": [Interval(Real, 0, None, closed="neither")],
        "calibration_rate": [Interval(Real, 1, None, closed="neither")],
        "calibration_samples": [Interval(Integral, 1, None, closed="left")],
        "calibration_candidates": [Interval(Integral, 1, None, closed="left")],
        "calibration_max_trials": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "gamma": [Interval(Real, 0, None, closed="left")],
        "proportion_weight": [Interval(Real, 0, None, closed="left")],
        "label_proportions": [dict, None],
        "min_freq": [Interval(Real, 0, None, closed="left")],
        "all_possible_states": ["boolean"],
        "all_possible_transitions": ["boolean"],
        "constraints": [StrOptions({"auto", "bio", "iob2", "iobes", "bilou"}), dict, None],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "init": "no_validation",
        "scoring": [None, str, callable],
        "verbose": ["verbose"],
        "checkpoint": [str, os.PathLike, None],
        "checkpoint_every": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        update="arctan",
        eps=1.0,
        c2=1.0,
        order=1,
        c2_transitions=None,
        max_iterations=None,
        period=10,
        delta=1e-6,
        eta0=None,
        calibration_eta=0.1,
        calibration_rate=2.0,
        calibration_samples=1000,
        calibration_candidates=10,
        calibration_max_trials=20,
        batch_size=1,
        shuffle=True,
        random_state=None,
        gamma=0.0,
        proportion_weight=0.0,
        label_proportions=None,
        min_freq=0,
        all_possible_states=True,
        all_possible_transitions=True,
        constraints="auto",
        class_weight=None,
        init=None,
        scoring=None,
        verbose=False,
        checkpoint=None,
        checkpoint_every=10,
    ):
        self.update = update
        self.eps = eps
        self.c2 = c2
        self.order = order
        self.c2_transitions = c2_transitions
        self.max_iterations = max_iterations
        self.period = period
        self.delta = delta
        self.eta0 = eta0
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.random_state = random_state
        self.gamma = gamma
        self.proportion_weight = proportion_weight
        self.label_proportions = label_proportions
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.constraints = constraints
        self.class_weight = class_weight
        self.init = init
        self.scoring = scoring
        self.verbose = verbose
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every

    # -- training ------------------------------------------------------------------------

    @unfitted_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, X_unlabeled=None, X_dev=None, y_dev=None, sample_weight=None):
        """Train from scratch: calibrate ``eta0`` (unless given), then run epochs.

        Parameters
        ----------
        X : list of sequences of feature dicts, list of feature matrices, or SequenceMatrix
            The training sequences, labelled and unlabelled.
        y : list of label sequences
            The labels of ``X``; None marks an unlabelled sequence, and a None label a
            token whose label is unknown (partial annotation, as in `CRF`). Unlabelled
            sequences are used when ``gamma`` or ``proportion_weight`` is positive, and
            skipped otherwise. Then training runs twice, as for
            `EntropyRegularizedCRF`: on the labelled sequences, then on all of them with the
            unlabelled terms, from the first phase's weights and continuing its schedule
            (``max_iterations`` bounds each phase).
        X_unlabeled : iterable of sequences of the same kind as X, default=None
            More unlabelled sequences: a list, or any iterable such as a generator, read
            once and featurised 2,000 sequences at a time, as in `EntropyRegularizedCRF`;
            the epochs revisit their feature rows (held sparse, not as dicts).
        X_dev, y_dev : optional
            Scored after every epoch (token accuracy, span F1 and ``scoring``), logged and
            printed when ``verbose``; with unlabelled terms, the semi-supervised phase keeps
            its best epoch by ``scoring`` on dev (``best_iteration_``), the supervised model
            included.
        sample_weight : array-like of shape (n_sequences,), default=None
            Weight of each sequence of X in the labelled likelihood, as in `CRF`: a
            step's gradient of a sequence is scaled by its weight.

        Returns
        -------
        self : NaturalGradientCRF
            The fitted estimator.
        """
        _check_dev_pair(X_dev, y_dev)
        sequences, labelled, codes, streamed = self._fit_inputs_and_stream(
            X, y, () if X_unlabeled is None else X_unlabeled, self.min_freq)
        scorer = check_scoring(self.scoring, self.classes_)  # refused before any training
        self._weights = labelled_weights(sample_weight, len(sequences), labelled)
        if streamed:
            sequences = stack_sequences([sequences, *streamed])
            del streamed
        self._random = fit_random_state(self.random_state)
        rng = np.random.default_rng(self._random.randint(2**31))
        # As the L-BFGS estimators: the supervised model first, then the unlabelled terms
        # (from zero weights, entropy minimisation locks in the first guesses).
        supervised = self._samples(sequences, labelled, codes, unlabelled_terms=False)
        phases = [("supervised", supervised)]
        if self._has_unlabeled_terms():
            self.target_proportions_ = target_proportions(self.label_proportions,
                                                          self.classes_, codes)
            samples = self._samples(sequences, labelled, codes, unlabelled_terms=True,
                                    prepared=supervised.prepared)
            if samples.n_samples > labelled.size:
                phases.append(("semi-supervised", samples))
        allowed = supervised.seen_structure(self.all_possible_transitions)
        for _, data in phases[1:]:
            data.transition_layout.allowed = allowed
        trainer = self._new_trainer(supervised, rng)
        # The trainer's (W, T) laid end to end are this layout's parameter vector.
        layout = WeightLayout(self.num_attributes_, len(self.classes_), order=self.order,
                              allowed=allowed)
        if self.init is not None:  # its weights replace the supervised phase
            trainer.set_vector(init_vector(self.init, layout, self.attributes_,
                                           self.classes_))
            phases = phases[1:]
        callback, kept = None, BestIterate()
        if X_dev is not None:
            dev_scores = self._dev_scores(X_dev, y_dev, scorer, layout, allowed)

            def callback(epoch, current):
                scores = dev_scores(epoch, current)
                if phase == "semi-supervised":
                    kept.offer(epoch, scores["validation_score"], current.vector())
                return scores

        max_epochs = 1000 if self.max_iterations is None else self.max_iterations
        log = []
        n_iter = 0
        for phase, data in phases:
            if phase == "semi-supervised" and callback is not None:
                # Epoch 0 of the second phase: the supervised model, a candidate too.
                kept.offer(0, dev_scores(0, trainer)["validation_score"], trainer.vector())
            self._set_l2(trainer, data.n_samples)
            with single_threaded_blas():
                result = minimize_sgd(trainer, data.gradient,
                                      lambda data=data: data.epoch_batches(
                                          self.batch_size, self.shuffle, rng),
                                      max_epochs, period=self.period, delta=self.delta,
                                      callback=callback, verbose=self.verbose,
                                      checkpoint=self._run_checkpoints(),
                                      state=[GeneratorState(rng), data, kept])
            trainer.set_vector(result.x)
            log += [dict(entry, phase=phase) if len(phases) > 1 else entry
                    for entry in result.log]
            n_iter += result.n_iter
        self.best_iteration_ = self.validation_scores_ = None
        if kept.weights is not None:
            # With a dev set the semi-supervised phase keeps its best epoch, never worse on
            # dev than the supervised model it started from.
            trainer.set_vector(kept.weights)
            self.best_iteration_, self.validation_scores_ = kept.iteration, kept.scores
        self._trainer, self._rng = trainer, rng
        # partial_fit goes on from here, its L2 per sequence that of the last phase's data.
        self._n_seen = (phases[-1][1] if phases else supervised).n_samples
        self._set_weights(trainer, allowed)
        self.training_log_ = log
        self.n_iter_ = n_iter
        stop = ((result.termination_condition, result.message) if phases
                else ("init", "the model is init's, not trained here"))
        self._set_termination(*stop, "max_iterations")
        return self

    @unchanged_on_failure
    def partial_fit(self, X, y, classes=None, X_unlabeled=None, sample_weight=None):
        """One epoch over a batch of sequences, continuing the learning-rate schedule.

        The L2 strength per sequence is ``2 * c2 / n_seen``, ``n_seen`` counting every
        sequence passed so far (a stream brings new data): one pass over a stream of ``N``
        sequences is penalised by ``c2 * ||w||^2`` as `fit` is, and more passes weaken it.
        ``eta0`` is calibrated on the first call's sequences when not given.

        Parameters
        ----------
        X : list of sequences of feature dicts, list of feature matrices, or SequenceMatrix
            Attributes not seen before are added to the model (dict input).
        y : list of label sequences
            The labels of ``X``; None marks an unlabelled sequence, and a None label a
            token whose label is unknown (partial annotation, as in `CRF`).
        classes : list of labels, default=None
            Every label the model will ever see; required on the first call (as
            scikit-learn's online estimators), optional afterwards (then it must not change).
        X_unlabeled : iterable of sequences of the same kind as X, default=None
            Unlabelled sequences of this batch. X and X_unlabeled may be any iterables
            (each call's batch is held whole): a stream is passed a batch per call.
        sample_weight : array-like of shape (n_sequences,), default=None
            Weight of each sequence of X, as in `fit`.

        Returns
        -------
        self : NaturalGradientCRF
            The fitted estimator.

        Notes
        -----
        A call that raises or is interrupted (Ctrl-C) leaves the estimator as it was
        before the call: the model of the last complete call (unfitted before the first).
        """
        first = not hasattr(self, "_trainer")
        if first:
            self._validate_params()
            if classes is None:
                raise ValueError("classes must be given on the first call to partial_fit: "
                                 "the list of every label the model will see")
            if len(set(classes)) != len(classes) or len(classes) == 0:
                raise ValueError("classes must be a non-empty list of distinct labels")
        elif classes is not None and list(classes) != list(self.classes_):
            raise ValueError(f"classes changed between calls to partial_fit: "
                             f"{list(classes)} != {list(self.classes_)}")
        n_given = len(y)  # sample_weight's sequences: X's, before X_unlabeled
        X, y = concatenate_inputs(X, y, X_unlabeled)
        sequences, labelled, codes = self._partial_inputs(X, y, classes if first else None)
        self._weights = labelled_weights(sample_weight, n_given, labelled)
        if first and self._has_unlabeled_terms():
            # Fixed at the first call.
            self.target_proportions_ = target_proportions(self.label_proportions,
                                                          self.classes_, codes)
        samples = self._samples(sequences, labelled, codes, self._has_unlabeled_terms())
        allowed = samples.seen_structure(self.all_possible_transitions,
                                         None if first else self.allowed_transitions_)
        if first:
            self._random = fit_random_state(self.random_state)
            self._rng = np.random.default_rng(self._random.randint(2**31))
            self._trainer = self._new_trainer(samples, self._rng)
            self.training_log_, self.n_iter_, self._n_seen = [], 0, 0
        trainer = self._trainer
        # A stream's sequences count as new data: after one pass over N of them the penalty
        # is c2 ||w||^2, as in fit.
        self._n_seen += samples.n_samples
        self._set_l2(trainer, self._n_seen)
        trainer.grow(self.num_attributes_)
        if not self.all_possible_states or not self.all_possible_transitions:
            state_mask, transition_mask = samples.weight_masks(
                self.all_possible_states, self.all_possible_transitions)
            trainer.state_mask = union_masks(trainer.state_mask, state_mask)
            trainer.transition_mask = union_masks(trainer.transition_mask, transition_mask)
        batches = samples.epoch_batches(self.batch_size, self.shuffle, self._rng)
        with single_threaded_blas():
            loss = sgd_epoch(trainer, samples.gradient, batches)
        self.n_iter_ += 1
        self.training_log_.append({"num": self.n_iter_, "loss": float(loss),
                                   "learning_rate": trainer.learning_rate()})
        self._set_weights(trainer, allowed)
        return self

    def _has_unlabeled_terms(self):
        return self.gamma > 0 or self.proportion_weight > 0

    def _work_tokens(self, lengths, n_unlabeled):
        # A step's lattices: a mini-batch, of the mean length at least in the largest one.
        return np.sum(lengths) * min(self.batch_size, len(lengths)) / max(len(lengths), 1)

    def _weight_copies(self):
        return 2  # the weights and a step's gradient

    def _samples(self, sequences, labelled, codes, unlabelled_terms, prepared=None):
        """The training sequences as `StochasticSamples`: the labelled ones, then with
        ``unlabelled_terms`` the non-empty unlabelled ones (otherwise those are skipped).
        ``prepared``: the labelled sequences' single-step data, when already built."""
        unlabeled = np.zeros(0, dtype=np.int64)
        if unlabelled_terms:
            unlabeled = unlabeled_sequences(sequences, labelled)
        return StochasticSamples(sequences[np.concatenate([labelled, unlabeled])], labelled.size,
                        codes, len(self.classes_), self.gamma, self.proportion_weight,
                        getattr(self, "target_proportions_", None), prepared, self.order,
                        self._weights, self._label_costs())

    def _new_trainer(self, samples, rng):
        """A trainer with zero weights and ``eta0`` given or calibrated."""
        n_labels = len(self.classes_)
        state_mask, transition_mask = samples.weight_masks(
            self.all_possible_states, self.all_possible_transitions)
        transition_rows = samples.transition_layout.size // n_labels

        def make_trainer(eta0):
            trainer = SGDTrainer(self.num_attributes_, n_labels, self.update, self.eps, 0.0,
                                 eta0, state_mask, transition_mask, transition_rows)
            self._set_l2(trainer, max(samples.n_samples, 1))
            return trainer

        self.calibration_log_ = []
        if self.eta0 is not None:
            self.eta0_ = float(self.eta0)
            return make_trainer(self.eta0_)
        batches = samples.epoch_batches(self.batch_size, self.shuffle, rng)
        sample = batches[:-(-self.calibration_samples // self.batch_size)]
        with single_threaded_blas():
            self.eta0_, self.calibration_log_ = calibrate_learning_rate(
                make_trainer, samples.gradient, sample,
                eta=self.calibration_eta, rate=self.calibration_rate,
                candidates=self.calibration_candidates,
                max_trials=self.calibration_max_trials, verbose=self.verbose)
        return make_trainer(self.eta0_)

    def _dev_scores(self, X_dev, y_dev, scorer, layout, allowed):
        """``(epoch, trainer) -> dict``: the dev token accuracy and span F1 of the trainer's
        weights (as `CRF` logs them) and ``scorer``'s score (``validation_score``)."""
        dev, gold = self._labelled_dev(X_dev, y_dev)
        accuracy_and_f1 = self._dev_scorer(dev, gold, layout)
        # The scorer rates an estimator: a copy of this one, given the trainer's weights.
        view = copy.copy(self)

        def dev_scores(epoch, trainer):
            view._set_weights(trainer, allowed)
            return {**accuracy_and_f1(epoch, trainer.vector()),
                    "validation_score": float(scorer(view, dev, gold))}

        return dev_scores

    def _set_l2(self, trainer, n_samples):
        """The trainer's L2 strengths per sequence for ``n_samples`` sequences."""
        trainer.lam = 2.0 * self.c2 / n_samples
        trainer.lam_transitions = (None if self.c2_transitions is None
                                   else 2.0 * self.c2_transitions / n_samples)

    def _set_weights(self, trainer, allowed):
        state, transition = trainer.weights()
        layout = WeightLayout(0, len(self.classes_), order=self.order)
        self._set_weight_blocks([state, *layout.blocks(transition.ravel())[1:]], allowed)

