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

from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions

from ..objective import entropy_regularised_objective, target_proportions
from ..training import LoggingCallback, Phase
from ..utils import unfitted_on_failure
from ._semi_supervised_path import SAMPLE_SIZE, SELECTABLE, SemiSupervisedPath

__all__ = ["EntropyRegularizedCRF", "SemiSupervisedCRF"]


class EntropyRegularizedCRF(SemiSupervisedPath):
    """Linear-chain CRF trained with entropy regularisation, choosing its own settings.

    The entropy gradient is computed with the entropy lattices of Mann & McCallum (2007),
    in O(n S^2) per sequence, the cost of forward-backward. A label-proportion term
    (``proportion_weight > 0``) keeps the model's mean token marginals on the unlabelled data
    near a target distribution; without it, minimising entropy alone rewards confident
    predictions of the most frequent label and can collapse rare-entity taggers.

    Training fits the supervised CRF, then ascends the full objective from that optimum
    (L-BFGS). By default the settings are chosen on held-out labelled data: the priors
    ``c1``/``c2`` of the supervised start, the strengths ``gamma`` and
    ``proportion_weight``, and the number of semi-supervised iterations (0, the supervised
    start, is always a candidate), on ``X_dev, y_dev`` when given, otherwise by ``cv``-fold
    cross-validation over the labelled sequences followed by a refit on all of them. A
    setting given a number is kept as given; a list is a set of candidates.

    Unlabelled sequences are given as ``fit(X, y, X_unlabeled=...)``, as sequences whose
    ``y[i]`` is None, or both. `score` and the scorers ignore unlabelled sequences, so
    cross-validation and `GridSearchCV` work with either convention.

    Parameters
    ----------
    gamma : float, list of float or 'auto', default='auto'
        Weight of the negative entropy of the unlabelled sequences; a list: candidates.
        'auto': 0.1, with ``proportion_weight`` 10, the one candidate (more candidates
        chosen by cross-validation on a few hundred labelled sentences did worse: the
        choice among them was noise, and each costs ``cv`` more runs); whether to use the
        unlabelled term at all is still decided on held-out data.
    proportion_weight : float, list of float or 'auto', default='auto'
        Weight of ``N_u * KL(pi || pi_hat)``; 0 gives the published objective, which on
        rare-entity data (BC2GM) collapsed towards all-"O". 'auto': 10.
    label_proportions : dict or None, default=None
        Target label distribution ``pi`` (label -> proportion, normalised here; labels not
        given get 0). None: the labelled tokens' label frequencies, add-one smoothed.
    entropy_gradient : {'lattice', 'covariance'}, default='lattice'
        'lattice': Mann & McCallum's O(n S^2) dynamic program; 'covariance': Jiao et al.'s
        covariance form, O(n^2 S^3). Both give the same numbers.
    c1 : float, list of float or 'auto', default='auto'
        L1 strength (as in `CRF`); 'auto': chosen among 0 and 0.1.
    c2 : float, list of float or 'auto', default='auto'
        L2 strength (as in `CRF`); 'auto': chosen among 1, 0.1, 0.01 and 0.001.
    cv : int, cross-validation generator or iterable, default=5
        The folds of the labelled sequences that selection holds out in turn when no
        ``X_dev`` is given: an int k gives k shuffled folds (``random_state``) that put the
        copies of a repeated label sequence (a word of handwriting, say) in different
        folds, so that no fold's training part lacks it; a splitter gets each label
        sequence's id as ``y``.
    scoring : None, str or callable, default=None
        What selection maximises (`sklearn_ssl_crf.metrics.check_scoring`): None, span F1
        when the labels carry spans (BIO/IOB/IOBES/BILOU) and token accuracy otherwise; a
        name of `sklearn_ssl_crf.metrics.SCORERS`, or ``scorer(estimator, X, y)``.
    early_stopping : bool, default=True
        Decide on held-out data whether, and (with a dev set) how long, to run the
        semi-supervised phase. False: run it for ``semi_supervised_iterations`` (or to
        convergence), without held-out data unless another setting is chosen.
    n_iter_no_change : int or None, default=15
        A held-out run of the semi-supervised phase stops after this many iterations
        without a better score (None: it runs to the cap).
    tol : float, default=0.01
        The semi-supervised phase is kept only if it raises the mean held-out score by at
        least this much over the supervised start (0.01: one point of span F1 or
        accuracy), measured where the held-out runs stopped; it then runs for
        ``semi_supervised_iterations`` in the refit. With a dev set, its best iterate is
        kept if it beats the start by ``tol``.
    random_state : int, RandomState instance or None, default=None
        Shuffles the folds of ``cv`` (an int). None is a fixed seed: every fit with the
        same data and parameters gives the same model, whatever NumPy's global generator
        holds and for any ``n_jobs``.
    selection_unlabeled : int or None, default=10000
        The cross-validation folds' semi-supervised runs train on a random sample of at
        most this many of the unlabelled sequences (drawn with ``random_state``), whose
        unlabelled terms are weighted by the pool's tokens over the sample's, so that
        ``gamma`` means what it means on the whole pool; the refit trains on all of them.
        It bounds what selection costs on a large pool: ``cv`` runs on the sample and one
        run on the pool. None: every fold trains on all of them. A dev set's run, which is
        the model, sees all of them.
    semi_supervised_iterations : int or None, default=100
        Maximum L-BFGS iterations of the semi-supervised phase (None: to convergence).
    algorithm : {'lbfgs'}, default='lbfgs'
        As in `CRF`.
    order : {1, 2}, default=1
        As in `CRF`.
    c2_transitions : float, list of float, None or 'auto', default='auto'
        L2 strength of the transition weights (as in `CRF`; None: ``c2``). 'auto': None
        at order 1; at order 2 chosen among None, 0.01 and 0.001 (a second-order chain's
        many transition weights want a weaker prior than its emissions).
    max_iterations : int, default=None
        As in `CRF`; it bounds every L-BFGS run (the supervised start and the
        semi-supervised phase).
    num_memories : int, default=6
        As in `CRF`.
    epsilon : float, default=1e-5
        As in `CRF`.
    period : int, default=10
        As in `CRF`.
    delta : float, default=1e-5
        As in `CRF`.
    linesearch : {'Backtracking'} or None, default=None
        As in `CRF`.
    max_linesearch : int, default=20
        As in `CRF`.
    min_freq : float, default=0
        As in `CRF`.
    all_possible_states : bool, default=True
        As in `CRF`.
    all_possible_transitions : bool, default=True
        As in `CRF`.
    constraints : 'auto', None, str or dict, default='auto'
        As in `CRF`.
    class_weight : dict, 'balanced' or None, default=None
        As in `CRF`.
    init : CRF or None, default=None
        A fitted model (a `CRF`, or one read from a CRFsuite file by `load`) whose weights
        are the supervised start instead of training one: the semi-supervised phase then
        improves a tagger you have. Its labels must be those of y; attributes are matched
        by name (those new in this data start at 0). 'auto' ``c1`` and ``c2`` take its
        values (a CRFsuite file keeps none: give them). Held-out scores choose the rest as
        usual: give ``X_dev, y_dev`` that ``init`` was not trained on, or fixed settings,
        since cross-validation folds would score it on sequences it was trained on.
    verbose : bool, default=False
        As in `CRF`.
    n_jobs : int, default=None
        Worker processes over which the chunks of labelled and unlabelled sequences are
        spread; the model is the same for any value.
    checkpoint, checkpoint_every : str or path-like, int, default=None, 10
        A directory where every L-BFGS run of the fit (selection's, the refit's) is
        checkpointed every ``checkpoint_every`` iterations; a fit given it again reads the
        finished runs and resumes the unfinished one: the same model (see `CRF`).

    Attributes
    ----------
    best_params_ : dict
        The settings used: ``c1``, ``c2``, ``gamma``, ``proportion_weight``, and
        ``c2_transitions`` where it was chosen among several candidates (order 2).
    best_iteration_ : int
        The semi-supervised iteration whose weights were kept (0: the supervised start).
    n_iter_ : int
        Semi-supervised iterations run by the final fit.
    validation_scores_ : list of float or None
        The held-out score after each semi-supervised iteration (from 0) at the chosen
        settings: the dev score, or the mean over the folds (a fold that stopped early
        keeps its last score); None when nothing was chosen.
    cv_results_ : dict or None
        What selection tried, in `~sklearn.model_selection.GridSearchCV`'s form: ``params``
        (with ``n_iter``, the iterations), ``mean_test_score``, ``std_test_score``,
        ``split<k>_test_score`` and ``rank_test_score``; one row per (c1, c2) candidate
        when there were several (iteration 0), then one per strength candidate at its best
        number of iterations.
    training_log_ : list of dict
        The final fit's L-BFGS iterations (``phase`` 'supervised' or 'semi-supervised', as
        in `CRF`): in the second phase ``objective``, ``likelihood``, ``unlabelled_entropy``
        (summed), ``proportion_kl``, and ``validation_score`` with a dev set. The second
        phase starts with an entry ``num=0``: those values at the supervised optimum.
    termination_condition_ : {'converged', 'max_iter', 'no_improvement', \
'line_search_failed'}
        Why the final fit's last run stopped: the semi-supervised phase's, or the
        supervised start's when its weights were kept. 'no_improvement': the held-out data
        chose an earlier iterate, or fewer iterations than the cap. The last entry of
        ``training_log_`` says it in words (``stop``). At 'max_iter' a
        `~sklearn.exceptions.ConvergenceWarning` names the cap to raise, except after
        cross-validation, which refits for the cap by design here.
    target_proportions_ : ndarray of shape (n_labels,)
        ``pi``, in the order of ``classes_``.
    classes_, attributes_, num_attributes_, state_weights_, transition_weights_, \
trigram_weights_, skip_weights_, allowed_transitions_, constraints_, class_weight_, \
state_features_, \
transition_features_, size_, \
vectorizer_
        As in `CRF`.

    See Also
    --------
    SemiSupervisedCRF : The same objective with Jiao et al.'s covariance-form gradient.
    CRFCV : The supervised CRF with its priors chosen the same way.

    Examples
    --------
    >>> from sklearn_ssl_crf import EntropyRegularizedCRF
    >>> from sklearn_ssl_crf.datasets import make_sequences
    >>> X, y = make_sequences(200, features="dict", random_state=0)
    >>> model = EntropyRegularizedCRF(cv=3, random_state=0)
    >>> model.fit(X[:30], y[:30], X_unlabeled=X[30:])
    EntropyRegularizedCRF(cv=3, random_state=0)
    >>> sorted(model.best_params_)
    ['c1', 'c2', 'gamma', 'proportion_weight']
    """

    _strengths = {"gamma": (0.1,), "proportion_weight": (10.0,)}
    _phase_cap_name = "semi_supervised_iterations or max_iterations"
    # Held-out curves of a few dozen sentences flatten while the test score still rises
    # (BC2GM): judge the phase by its plateau and refit for the whole cap.
    _iterations_rule = "end"

    _parameter_constraints = {
        **SemiSupervisedPath._parameter_constraints,
        "gamma": SELECTABLE,
        "proportion_weight": SELECTABLE,
        "label_proportions": [dict, None],
        "entropy_gradient": [StrOptions({"lattice", "covariance"})],
        "init": "no_validation",
        "selection_unlabeled": SAMPLE_SIZE,
    }

    def __init__(
        self,
        *,
        gamma="auto",
        proportion_weight="auto",
        label_proportions=None,
        entropy_gradient="lattice",
        c1="auto",
        c2="auto",
        cv=5,
        scoring=None,
        early_stopping=True,
        n_iter_no_change=15,
        tol=0.01,
        random_state=None,
        selection_unlabeled=10_000,
        semi_supervised_iterations=100,
        algorithm="lbfgs",
        order=1,
        c2_transitions="auto",
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
        init=None,
        verbose=False,
        n_jobs=None,
        checkpoint=None,
        checkpoint_every=10,
    ):
        super().__init__(
            algorithm=algorithm, c1=c1, c2=c2, order=order, c2_transitions=c2_transitions,
            max_iterations=max_iterations,
            num_memories=num_memories, epsilon=epsilon, period=period, delta=delta,
            linesearch=linesearch, max_linesearch=max_linesearch,
            min_freq=min_freq, all_possible_states=all_possible_states,
            all_possible_transitions=all_possible_transitions,
            constraints=constraints, class_weight=class_weight, verbose=verbose,
            n_jobs=n_jobs, checkpoint=checkpoint,
            checkpoint_every=checkpoint_every,
        )
        self.init = init
        self.gamma = gamma
        self.proportion_weight = proportion_weight
        self.label_proportions = label_proportions
        self.entropy_gradient = entropy_gradient
        self.cv = cv
        self.scoring = scoring
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.random_state = random_state
        self.selection_unlabeled = selection_unlabeled
        self.semi_supervised_iterations = semi_supervised_iterations

    @unfitted_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, X_unlabeled=None, X_dev=None, y_dev=None, sample_weight=None):
        """Train on labelled and unlabelled sequences, choosing the settings not given.

        Parameters
        ----------
        X : list of sequences of feature dicts, list of feature matrices, or SequenceMatrix
            The training sequences, labelled and unlabelled.
        y : list of label sequences
            The labels of ``X``; None marks an unlabelled sequence, and a None label a
            token whose label is unknown (partial annotation, as in `CRF`).
        X_unlabeled : iterable of sequences of the same kind as X, default=None
            More unlabelled sequences: a list, or any iterable such as a generator, which
            is read once and featurised 2,000 sequences at a time, so that they are never
            all held as feature dicts (`datasets.iter_text` reads a text file lazily, and
            `WindowFeatures.transform` of a path reads the file).
        X_dev, y_dev : optional
            A development set on which the settings are chosen instead of by
            cross-validation; the iterate with the best dev score is kept (never worse
            than the supervised start).
        sample_weight : array-like of shape (n_sequences,), default=None
            Weight of each sequence of X in the labelled likelihood, as in `CRF`.

        Returns
        -------
        self : EntropyRegularizedCRF
            The fitted estimator.
        """
        return self._fit_path(X, y, X_unlabeled, X_dev, y_dev, sample_weight)

    def _max_phase_iterations(self):
        return self.semi_supervised_iterations

    def _prepare(self, X, y, X_unlabeled, sample_weight=None):
        if self.order == 2 and self.entropy_gradient == "covariance":
            raise ValueError(
                "entropy_gradient='covariance' (Jiao et al.'s nested dynamic program) is "
                "first-order only; use order=1, or entropy_gradient='lattice', which gives "
                "the same gradient at any order")
        return super()._prepare(X, y, X_unlabeled, sample_weight)

    def _semi_supervised_phase(self, fold, theta, strength, max_iterations, iterates):
        unlabeled = fold.unlabeled
        # A fold's sample stands for the pool: its terms weigh what the pool's would.
        scale = 1.0 if fold.sample is None else fold.sample.scale
        gamma, weight = scale * strength["gamma"], scale * strength["proportion_weight"]
        start, _ = iterates.record(0, theta)
        if not unlabeled.chunks or (gamma == 0 and weight == 0) or max_iterations == 0:
            return Phase(theta, [dict(start, num=0, phase="semi-supervised")], 0)
        objective, parts = self._semi_supervised_objective(fold, unlabeled, self._target(fold),
                                                           gamma, weight)
        objective(theta)  # iteration 0's entry: the objective's parts at the start
        log = [dict(parts, num=0, phase="semi-supervised", **start)]
        result = self._minimize(objective, theta, LoggingCallback(iterates, parts),
                                max_iterations=max_iterations, c1=fold.c1)
        log += [dict(entry, phase="semi-supervised") for entry in result.log]
        return Phase(result.x, log, result.n_iter, result.termination_condition,
                     result.message)

    def _finish(self, problem, fold, result):
        self.target_proportions_ = self._target(fold)

    def _target(self, fold):
        """The label proportions of the unlabeled tokens' penalty: the user's, or the
        run's labelled tokens'."""
        return target_proportions(self.label_proportions, self.classes_, fold.codes)

    def _semi_supervised_objective(self, fold, unlabeled_data, target, gamma, weight):
        """``theta -> (value, gradient)`` of minus the full objective, and a dict holding the
        parts of the last evaluation."""
        return entropy_regularised_objective(
            fold.labelled, unlabeled_data, fold.layout, fold.l2_strengths(), target, gamma,
            weight, self.entropy_gradient)


class SemiSupervisedCRF(EntropyRegularizedCRF):
    """Semi-supervised CRF of Jiao et al. (2006), with the covariance-form entropy gradient.

    The same estimator as `EntropyRegularizedCRF` with ``entropy_gradient='covariance'`` by
    default: the published method, whose gradient costs O(n^2 S^3) per sequence, slower by
    a factor of about n S, with the same results.
    The covariance form is first-order only (``order=1``).

    Parameters
    ----------
    gamma : float, list of float or 'auto', default='auto'
        As in `EntropyRegularizedCRF`.
    proportion_weight : float, list of float or 'auto', default='auto'
        As in `EntropyRegularizedCRF`.
    label_proportions : dict or None, default=None
        As in `EntropyRegularizedCRF`.
    entropy_gradient : {'lattice', 'covariance'}, default='covariance'
        As in `EntropyRegularizedCRF`, whose default is 'lattice'.
    c1 : float, list of float or 'auto', default='auto'
        As in `EntropyRegularizedCRF`.
    c2 : float, list of float or 'auto', default='auto'
        As in `EntropyRegularizedCRF`.
    cv : int, cross-validation generator or iterable, default=5
        As in `EntropyRegularizedCRF`.
    scoring : None, str or callable, default=None
        As in `EntropyRegularizedCRF`.
    early_stopping : bool, default=True
        As in `EntropyRegularizedCRF`.
    n_iter_no_change : int or None, default=15
        As in `EntropyRegularizedCRF`.
    tol : float, default=0.01
        As in `EntropyRegularizedCRF`.
    random_state : int, RandomState instance or None, default=None
        As in `EntropyRegularizedCRF`.
    selection_unlabeled : int or None, default=10000
        As in `EntropyRegularizedCRF`.
    semi_supervised_iterations : int or None, default=100
        As in `EntropyRegularizedCRF`.
    algorithm : {'lbfgs'}, default='lbfgs'
        As in `EntropyRegularizedCRF`.
    order : {1, 2}, default=1
        As in `EntropyRegularizedCRF`; 2 needs ``entropy_gradient='lattice'``.
    c2_transitions : float, list of float, None or 'auto', default='auto'
        As in `EntropyRegularizedCRF`.
    max_iterations : int, default=None
        As in `EntropyRegularizedCRF`.
    num_memories : int, default=6
        As in `EntropyRegularizedCRF`.
    epsilon : float, default=1e-5
        As in `EntropyRegularizedCRF`.
    period : int, default=10
        As in `EntropyRegularizedCRF`.
    delta : float, default=1e-5
        As in `EntropyRegularizedCRF`.
    linesearch : {'Backtracking'} or None, default=None
        As in `CRF`.
    max_linesearch : int, default=20
        As in `CRF`.
    min_freq : float, default=0
        As in `EntropyRegularizedCRF`.
    all_possible_states : bool, default=True
        As in `EntropyRegularizedCRF`.
    all_possible_transitions : bool, default=True
        As in `EntropyRegularizedCRF`.
    constraints : 'auto', None, str or dict, default='auto'
        As in `EntropyRegularizedCRF`.
    class_weight : dict, 'balanced' or None, default=None
        As in `EntropyRegularizedCRF`.
    init : CRF or None, default=None
        As in `EntropyRegularizedCRF`.
    verbose : bool, default=False
        As in `EntropyRegularizedCRF`.
    n_jobs : int, default=None
        As in `EntropyRegularizedCRF`.
    checkpoint, checkpoint_every : str or path-like, int, default=None, 10
        A directory where the fit's optimisation runs are checkpointed every
        ``checkpoint_every`` iterations; a fit given it again resumes there (see `CRF`).

    Attributes
    ----------
    best_params_, best_iteration_, n_iter_, validation_scores_, cv_results_, \
training_log_, target_proportions_, classes_, attributes_, num_attributes_, \
state_weights_, transition_weights_, trigram_weights_, skip_weights_, \
allowed_transitions_, constraints_, class_weight_, \
state_features_, \
transition_features_, size_, termination_condition_, vectorizer_
        As in `EntropyRegularizedCRF`.

    See Also
    --------
    EntropyRegularizedCRF : The same objective with Mann & McCallum's faster gradient.

    Examples
    --------
    >>> from sklearn_ssl_crf import SemiSupervisedCRF
    >>> from sklearn_ssl_crf.datasets import make_sequences
    >>> X, y = make_sequences(40, features="dict", random_state=0)
    >>> model = SemiSupervisedCRF(c1=0.0, c2=0.1, gamma=0.1, proportion_weight=10.0,
    ...                           early_stopping=False, semi_supervised_iterations=5)
    >>> model.fit(X[:10], y[:10], X_unlabeled=X[10:])
    SemiSupervisedCRF(c1=0.0, c2=0.1, early_stopping=False, gamma=0.1,
                      proportion_weight=10.0, semi_supervised_iterations=5)
    >>> model.n_iter_ <= 5
    True
    """

    def __init__(
        self,
        *,
        gamma="auto",
        proportion_weight="auto",
        label_proportions=None,
        entropy_gradient="covariance",
        c1="auto",
        c2="auto",
        cv=5,
        scoring=None,
        early_stopping=True,
        n_iter_no_change=15,
        tol=0.01,
        random_state=None,
        selection_unlabeled=10_000,
        semi_supervised_iterations=100,
        algorithm="lbfgs",
        order=1,
        c2_transitions="auto",
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
        init=None,
        verbose=False,
        n_jobs=None,
        checkpoint=None,
        checkpoint_every=10,
    ):
        super().__init__(
            gamma=gamma, proportion_weight=proportion_weight,
            label_proportions=label_proportions, entropy_gradient=entropy_gradient,
            c1=c1, c2=c2, cv=cv, scoring=scoring, early_stopping=early_stopping,
            n_iter_no_change=n_iter_no_change, tol=tol, random_state=random_state,
            selection_unlabeled=selection_unlabeled,
            semi_supervised_iterations=semi_supervised_iterations,
            algorithm=algorithm, order=order, c2_transitions=c2_transitions,
            max_iterations=max_iterations,
            num_memories=num_memories, epsilon=epsilon, period=period, delta=delta,
            linesearch=linesearch, max_linesearch=max_linesearch,
            min_freq=min_freq, all_possible_states=all_possible_states,
            all_possible_transitions=all_possible_transitions,
            constraints=constraints, class_weight=class_weight, init=init,
            verbose=verbose, n_jobs=n_jobs, checkpoint=checkpoint,
            checkpoint_every=checkpoint_every,
        )
