"""`GraphPRCRF`: graph-based posterior regularisation (He, Gillenwater & Taskar 2013).

EM on ``J(theta, q) = L(theta) - delta * [KL(q || p_theta) + lam * h(q)]``, where ``L`` is the
penalised labelled log-likelihood, ``q`` a distribution over the label sequences of every
unlabelled sequence and ``h`` a convex function of q's node marginals (the graph Laplacian
penalty: similar tokens should get similar labels). With ``delta = 1`` this is the paper's
objective; ``delta`` weighs the unlabelled data in the M-step, and scaling the whole
regulariser by it keeps EM a coordinate ascent on J for any ``delta``.

- q shares theta's transitions; its node factors are theta's unary potentials plus an offset
  per graph vertex (tokens without a vertex: none). The exponentiated-gradient step of the
  paper's eq. 20, ``r <- (1 - eta) r + eta U_theta - eta lam dh/dmu``, moves every token of a
  vertex by the same amount, so the offsets are a (vertices x labels) table, the only state
  q needs.
- E-step: that step with ``eta_k = estep_eta / (1 + k)``, halved whenever the E-step
  objective ``KL(q || p_theta) + lam h`` would rise; q's marginals by the batched
  forward-backward over chunks of unlabelled sequences. It starts from the previous q
  carried over to the new theta (iteration 1: q = p_theta): q's node scores are theta's
  unary potentials plus the offsets, and the M-step has just moved theta towards q, so the
  previous offsets re-added on top of the new theta would count the graph's push twice
  (q runs ahead of its own E-step optimum, EM iteration after EM iteration). The start keeps
  q's previous node scores, vertex-averaged: ``offsets - mean over the vertex's tokens of
  (U_new - U_old)`` (the authors' code warm-starts q's node scores themselves, one per
  token). If the E-step ends above the previous q's objective at the new theta, the
  previous q is kept, so J never decreases.
- M-step: L-BFGS from the previous theta on ``-L(theta) - delta sum E_q[log p_theta]``,
  whose unlabelled part is ``delta (log Z(theta) - <E_q[F], theta>)``: q's expected features
  are computed once per E-step, and each evaluation costs one forward-backward per sequence.
"""

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..graph import SimilarityGraph, TrigramWords, resolve_graph
from ..objective import GraphLaplacianPenalty, PosteriorRegularizationTerms, auxiliary_unary
from ..training import (
    EMSettings,
    ExpectationMaximisation,
    Fold,
    Problem,
    UnlabeledSample,
    sample_positions,
)
from ..utils import (
    SequenceMatrix,
    is_matrix_input,
    sequence_lists,
    single_threaded_blas,
    stack_sequences,
    unfitted_on_failure,
)
from ._base import unlabeled_sequences
from ._semi_supervised_path import SAMPLE_SIZE, SELECTABLE, SemiSupervisedPath


class GraphPRCRF(SemiSupervisedPath):
    """Linear-chain CRF trained with graph-based posterior regularisation.

    He, Gillenwater & Taskar (2013): EM on the labelled likelihood minus
    ``unlabeled_weight * [KL(q || p_theta) + lam * h(q)]``, with ``h`` the graph Laplacian of
    the vertex-averaged node marginals of an auxiliary distribution ``q`` over the labels of
    the unlabelled sequences. Labelled tokens seed the graph with their gold labels.
    Iteration 0 is the supervised CRF; each EM iteration runs an exponentiated-gradient
    E-step on ``q`` and an L-BFGS M-step on ``theta``.

    By default the settings are chosen on held-out labelled data as in
    `EntropyRegularizedCRF`: the supervised start's ``c1``/``c2``, the strength ``lam`` and
    the number of EM iterations (0 included), on ``X_dev, y_dev`` when given, otherwise by
    cross-validation over the labelled sequences (each fold's held-out sequences become
    unlabelled, so the graph stays valid) followed by a refit on all of them.

    ``predict`` uses ``theta`` (inductive: any new sequence); ``transduction_`` holds q's
    labels for the training sequences (transductive). Unlabelled sequences are given as
    ``fit(X, y, X_unlabeled=...)``, as sequences whose ``y[i]`` is None, or both.

    Parameters
    ----------
    graph : {'trigram', 'knn'} or SimilarityGraph, default='trigram'
        'trigram': mutual k-NN graph over the trigram types of the words (He et al. §4.2;
        needs feature dicts holding the word under ``word_key``); 'knn': mutual k-NN graph
        with one vertex per token, cosine similarity of the tokens' feature rows (§4.3); a
        `SimilarityGraph` built for the sequences given to ``fit``, in that order (X, then
        X_unlabeled). See `sklearn_ssl_crf.graph`.
    n_neighbors : int, default=None
        The k of the k-NN graphs; None: 60 for 'trigram', 20 for 'knn'.
    word_key : str, default='word.lower'
        The feature holding a token's word, for 'trigram' (what `WindowFeatures` writes).
    lam : float, list of float or 'auto', default='auto'
        Strength of the graph penalty (the paper's lambda); a list is a set of candidates.
        'auto': 1 on the 'trigram' graph; on any other graph chosen among 1 and 3 (a
        graph of many close neighbours, such as a k-NN graph of tokens, may want the
        stronger penalty).
    unlabeled_weight : float, default=1.0
        Weight of the unlabelled sequences in the M-step (the paper's delta, renamed because
        ``delta`` is CRFsuite's stopping tolerance in every estimator here). 0: theta stays
        the supervised CRF and only q (``transduction_``) uses the graph.
    em_iterations : int, default=20
        Maximum number of EM iterations.
    em_tol : float, default=1e-3
        Stop when J rose by at most this fraction of its total rise since iteration 0 in
        an iteration (a scale of J's own progress: ``|J|`` itself is dominated by the
        prior and the labelled likelihood, which would stop EM early under a strong
        prior).
    mstep_iterations : int, default=50
        Maximum L-BFGS iterations of each M-step; None: run each to convergence (within
        ``max_iterations``). A bound makes EM a generalised EM, J still never decreasing:
        with a weak prior (small ``c2``) and many unlabelled tokens an M-step may take
        hundreds of iterations, while theta moves most in the first tens (the benchmarks'
        EM runs used 50).
    estep_iterations : int, default=10
        Maximum number of exponentiated-gradient steps per E-step.
    estep_eta : float, default=0.2
        First step size of an E-step (eta0; step k is ``eta0 / (1 + k)``).
    estep_tol : float, default=1e-4
        An E-step stops when its objective fell by less than this, relative, in a step.
    decoding : {'viterbi', 'posterior'}, default='viterbi'
        How labels are read from a model: the best sequence, or the most probable label of
        each token (max marginals, as in the paper). Used by ``predict``, the dev scores
        and ``transduction_``.
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
    n_iter_no_change : int or None, default=5
        A held-out run stops after this many EM iterations without a better score (on
        handwriting the held-out error still fell after plateaus of 3 iterations).
    tol : float, default=0.0
        EM is kept only if its best mean held-out score beats the supervised start's by
        more than this; the refit runs to the iteration of that best score.
    random_state : int, RandomState instance or None, default=None
        As in `EntropyRegularizedCRF`.
    selection_unlabeled : int or None, default=10000
        The cross-validation folds' EM runs on a random sample of at most this many of
        the unlabelled sequences (drawn with ``random_state``) and the folds' held-out
        sequences; the refit runs on all of them. The graph, built on every sequence,
        keeps the edges between the vertices that these and the labelled tokens have,
        each scaled by ``sqrt(d_a d_b / (d'_a d'_b))`` (``d`` a vertex's weighted degree
        in the graph, ``d'`` among the kept edges), so that a sampled vertex is pulled
        towards its neighbours as on the whole graph; the unlabelled term is weighted by
        the pool's tokens over the sample's, so that ``unlabeled_weight`` means what it
        means on the whole pool. It bounds what selection costs on a large pool: ``cv``
        runs on the sample and one on the pool (on UD English-EWT with 35,057 unlabelled
        sentences, 3.4 fixed-setting fits, and 19.53 % token error where the folds
        without the edges' scaling chose too many EM iterations and made 21.08 %;
        docs/benchmarks.md). None: every fold runs on all of them. A dev set's run, which
        is the model, sees all of them.
    algorithm : {'lbfgs'}, default='lbfgs'
        As in `CRF`. This and the L-BFGS settings below apply to the supervised start and
        to every M-step.
    order : {1, 2}, default=1
        As in `CRF`.
    c2_transitions : float, list of float, None or 'auto', default='auto'
        L2 strength of the transition weights (as in `CRF`; None: ``c2``). 'auto': None
        at order 1; at order 2 chosen among None, 0.01 and 0.001 (a second-order chain's
        many transition weights want a weaker prior than its emissions).
    max_iterations : int, default=None
        As in `CRF`; it bounds the supervised start and each M-step (see also
        ``mstep_iterations``).
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
        As in `EntropyRegularizedCRF`.
    verbose : bool, default=False
        As in `CRF`; also prints one line per EM iteration.
    n_jobs : int, default=None
        Worker processes over which the chunks of labelled and unlabelled sequences are
        spread, in the M-step and the E-step, and threads of the trigram graph's search
        (``graph='trigram'``); the model is the same for any value.
    checkpoint, checkpoint_every : str or path-like, int, default=None, 10
        A directory where every L-BFGS run of the fit (the supervised starts, the M-steps)
        is checkpointed every ``checkpoint_every`` iterations; a fit given it again reads
        the finished runs and resumes the unfinished one: the same model (see `CRF`). The
        graph and the E-steps are computed again.

    Attributes
    ----------
    graph_ : SimilarityGraph
        The graph used (built in ``fit`` unless given).
    transduction_ : list of lists
        One label sequence per training sequence, in the order given (X, then
        X_unlabeled): the gold labels of the labelled ones (where some are unknown, theta's
        best labelling that keeps the known ones), q's decoding of the unlabelled ones.
    training_log_ : list of dict
        The L-BFGS iterations of the supervised start (``phase`` 'supervised') and of each
        M-step (``phase`` 'M-step', ``em_iteration``), then one entry per EM iteration
        (``phase`` 'EM', ``em_iteration`` from 0, the supervised CRF with q = p_theta):
        ``objective`` (J), ``likelihood`` (L(theta), prior included), ``kl``
        (KL(q || p_theta)) and ``penalty`` (h) at the iteration's end, ``estep_iterations``,
        ``estep_objective`` (KL + lam h at the E-step's end, before the M-step moved
        theta), ``kept_previous_q`` (the E-step did not beat the previous q),
        ``mstep_iterations``, and dev scores when given.
    n_iter_ : int
        EM iterations run by the final fit.
    best_iteration_ : int
        The EM iteration whose theta and q were kept (0: the supervised CRF).
    best_params_ : dict
        The settings used: ``c1``, ``c2``, ``lam``, and ``c2_transitions`` where it was
        chosen among several candidates (order 2).
    validation_scores_, cv_results_
        As in `EntropyRegularizedCRF`, per EM iteration.
    termination_condition_ : {'converged', 'max_iter', 'no_improvement', \
'line_search_failed'}
        Why EM stopped ('converged': J rose by less than ``em_tol``; 'max_iter':
        ``em_iterations`` ran, with a `~sklearn.exceptions.ConvergenceWarning`); otherwise
        as in `EntropyRegularizedCRF`.
    classes_, attributes_, num_attributes_, state_weights_, transition_weights_, \
trigram_weights_, skip_weights_, allowed_transitions_, constraints_, class_weight_, \
state_features_, \
transition_features_, size_, \
vectorizer_
        As in `CRF`.

    See Also
    --------
    GraphPropagation : The graph alone (transductive baseline).
    EntropyRegularizedCRF : Entropy and label-proportion regularisation.

    Examples
    --------
    >>> from sklearn_ssl_crf import GraphPRCRF
    >>> from sklearn_ssl_crf.datasets import make_sequences
    >>> X, y = make_sequences(60, features="dict", random_state=0)
    >>> y_partial = y[:10] + [None] * 50          # 10 labelled, 50 unlabelled sentences
    >>> model = GraphPRCRF(graph="knn", em_iterations=3, cv=3, random_state=0)
    >>> model.fit(X, y_partial)
    GraphPRCRF(cv=3, em_iterations=3, graph='knn', random_state=0)
    >>> len(model.transduction_) == len(X), model.n_iter_ <= 3
    (True, True)
    """

    _phase_cap_name = "em_iterations"

    #: The candidates of ``lam='auto'`` on the trigram graph, and on any other graph. On
    #: the trigram graph 1 was as good as 3 on the 12 draws of three UD languages (3 gave
    #: +0.05 points of error on average), so one EM path is run; on the 20-NN graph of
    #: handwritten letters 3 beat 1 by about a point on every draw, and a graph built
    #: otherwise has its own scale, so the folds choose (docs/benchmarks.md, issue #42).
    _trigram_lam, _other_lam = (1.0,), (1.0, 3.0)

    @property
    def _strengths(self):
        trigram = isinstance(self.graph, str) and self.graph == "trigram"
        return {"lam": self._trigram_lam if trigram else self._other_lam}

    _parameter_constraints = {
        **SemiSupervisedPath._parameter_constraints,
        "init": "no_validation",
        "graph": [StrOptions({"trigram", "knn"}), SimilarityGraph],
        "n_neighbors": [Interval(Integral, 1, None, closed="left"), None],
        "word_key": [str],
        "lam": SELECTABLE,
        "unlabeled_weight": [Interval(Real, 0, None, closed="left")],
        "em_iterations": [Interval(Integral, 0, None, closed="left")],
        "em_tol": [Interval(Real, 0, None, closed="left")],
        "mstep_iterations": [Interval(Integral, 1, None, closed="left"), None],
        "estep_iterations": [Interval(Integral, 1, None, closed="left")],
        "estep_eta": [Interval(Real, 0, 1, closed="right")],
        "estep_tol": [Interval(Real, 0, None, closed="left")],
        "decoding": [StrOptions({"viterbi", "posterior"})],
        "selection_unlabeled": SAMPLE_SIZE,
    }

    # A fold's penalty holds the part of the graph it needs.
    _not_in_folds = (*SemiSupervisedPath._not_in_folds, "graph_")

    def __init__(
        self,
        *,
        graph="trigram",
        n_neighbors=None,
        word_key="word.lower",
        lam="auto",
        unlabeled_weight=1.0,
        em_iterations=20,
        em_tol=1e-3,
        mstep_iterations=50,
        estep_iterations=10,
        estep_eta=0.2,
        estep_tol=1e-4,
        decoding="viterbi",
        c1="auto",
        c2="auto",
        cv=5,
        scoring=None,
        early_stopping=True,
        n_iter_no_change=5,
        tol=0.0,
        random_state=None,
        selection_unlabeled=10_000,
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
        self.graph = graph
        self.n_neighbors = n_neighbors
        self.word_key = word_key
        self.lam = lam
        self.unlabeled_weight = unlabeled_weight
        self.em_iterations = em_iterations
        self.em_tol = em_tol
        self.mstep_iterations = mstep_iterations
        self.estep_iterations = estep_iterations
        self.estep_eta = estep_eta
        self.estep_tol = estep_tol
        self.decoding = decoding
        self.cv = cv
        self.scoring = scoring
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.random_state = random_state
        self.selection_unlabeled = selection_unlabeled

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
            More unlabelled sequences, read once (it may be a generator, or
            ``WindowFeatures().transform(path)`` of a text file) and featurised a block
            at a time, as by `EntropyRegularizedCRF`: they are held as feature rows, not
            as feature dicts, and for ``graph='trigram'`` their words as integer codes.
            The similarity graph joins tokens across the whole corpus, and
            ``transduction_`` labels every sequence.
        X_dev, y_dev : optional
            A development set on which the settings are chosen instead of by
            cross-validation; the EM iteration with the best dev score is kept (iteration
            0, the supervised CRF, included).

        sample_weight : array-like of shape (n_sequences,), default=None
            Weight of each sequence of X in the labelled likelihood, as in `CRF`.

        Returns
        -------
        self : GraphPRCRF
            The fitted estimator.
        """
        return self._fit_path(X, y, X_unlabeled, X_dev, y_dev, sample_weight)

    def _max_phase_iterations(self):
        return self.em_iterations

    def _prepare(self, X, y, X_unlabeled, sample_weight=None):
        sample_size = self._selection_sample_size()  # refused before the text is read
        # X_unlabeled is featurised a block at a time, its words read for the trigram
        # graph as it is: never held whole as feature dicts (a kilobyte a token).
        words = None
        if (isinstance(self.graph, str) and self.graph == "trigram"
                and not (isinstance(X, SequenceMatrix) or is_matrix_input(X))):
            words = TrigramWords(self.word_key)
        sequences, labelled, codes, streamed = self._fit_inputs_and_stream(
            X, y, () if X_unlabeled is None else X_unlabeled, self.min_freq, words=words,
            drop_empty=False)
        n_given = len(y)  # sample_weight's sequences: X's, before X_unlabeled
        if streamed:
            y = list(y) + [None] * sum(len(block) for block in streamed)
            sequences = stack_sequences([sequences, *streamed])
            del streamed
        unlabeled = unlabeled_sequences(sequences, labelled)
        sample = self._graph_sample(sequences, unlabeled, sample_size)
        self.graph_ = resolve_graph(self.graph, X if words is None else words, sequences,
                                    self.n_neighbors, self.word_key, self.n_jobs)
        problem = self._labelled_problem(sequences, labelled, codes, y, sample_weight,
                                         n_given)
        problem.sample = sample
        return _GraphProblem(**vars(problem), sequences=sequences, labelled_index=labelled,
                             y=y, unlabeled_index=unlabeled)

    def _graph_sample(self, sequences, unlabeled, size):
        """The `UnlabeledSample` (by index) of the unlabeled sequences ``unlabeled``
        (indices into ``sequences``) on which the cross-validation folds run: at most
        ``size`` of them, drawn with ``random_state``; None for all (``size`` None or at
        least their number)."""
        chosen = sample_positions(len(unlabeled), size, self.random_state)
        if chosen is None:
            return None
        lengths = sequences.lengths
        scale = lengths[unlabeled].sum() / max(lengths[unlabeled[chosen]].sum(), 1)
        return UnlabeledSample(None, None, float(scale), index=unlabeled[chosen])

    def _fold(self, problem, train, sampled=False):
        """The fold's labelled sequences, and as unlabelled the others: the unlabelled
        sequences (if ``sampled``, the selection sample's where there is one) and the
        held-out labelled ones (the graph, built on all, stays valid)."""
        fold = super()._fold(problem, train, sampled)
        sequences, labelled_index = problem.sequences, problem.labelled_index
        held = np.setdiff1d(np.arange(problem.n_labelled), train)
        pool = problem.unlabeled_index if fold.sample is None else fold.sample.index
        unlabeled = np.union1d(pool, labelled_index[held])
        codes = np.concatenate([problem.codes[i] for i in train])
        penalty = self._graph_penalty(sequences, labelled_index[train], unlabeled, codes,
                                      keep_degrees=fold.sample is not None)
        unlabeled_sequences = sequences[unlabeled]
        if fold.sample is None and not held.size:
            # The fit on all of it is the last to read the corpus's rows (the transduction
            # reads the labelled sequences' own): they go before the chunks pack theirs.
            problem.sequences = sequences = None
        # The held-out sequences are among the unlabeled: their tokens' groups are there.
        held_in_unlabeled = np.searchsorted(unlabeled, labelled_index[held])
        groups = penalty.token_groups[_token_indices(unlabeled_sequences, held_in_unlabeled)]
        held_data = (self._chunked(sequences[labelled_index[held]], groups=groups,
                                   n_groups=penalty.n_groups) if held.size else None)
        fold.unlabeled = self._chunked(unlabeled_sequences, groups=penalty.token_groups,
                                       n_groups=penalty.n_groups)
        return _GraphFold(**vars(fold), penalty=penalty, held_data=held_data,
                          labelled_index=labelled_index[train], unlabeled_index=unlabeled)

    def _semi_supervised_phase(self, fold, theta, strength, max_iterations, iterates):
        # A fold's sample stands for the pool: its terms weigh what the pool's would.
        scale = 1.0 if fold.sample is None else fold.sample.scale
        terms = PosteriorRegularizationTerms(
            self._supervised_objective(fold), fold.unlabeled, fold.layout, fold.penalty,
            strength["lam"], scale * self.unlabeled_weight)
        settings = EMSettings(self.mstep_iterations, self.num_memories,
                              self.estep_iterations, self.estep_eta, self.estep_tol,
                              self.em_tol, fold.c1, self.verbose)

        def minimize(objective, start, max_iterations):
            return self._minimize(objective, start, max_iterations=max_iterations, c1=fold.c1)

        em = ExpectationMaximisation(terms, settings, minimize)
        return em.run(theta, max_iterations, iterates)

    def _finish(self, problem, fold, result):
        self.transduction_ = self._transduction(
            problem.y, problem.labelled, problem.labelled_index, fold.unlabeled_index,
            fold.unlabeled, fold.layout, result.state)

    def _graph_penalty(self, sequences, labelled, unlabeled, codes, keep_degrees=False):
        """The Laplacian penalty of the unlabelled tokens, seeded by the labelled ones
        (``keep_degrees``: see `GraphLaplacianPenalty`)."""
        sequence_of_token = np.repeat(np.arange(len(sequences)), sequences.lengths)
        vertices = self.graph_.token_vertices
        labelled_vertices = vertices[np.isin(sequence_of_token, labelled)]
        # Tokens whose label is unknown (code -1) seed nothing.
        seeded = (labelled_vertices >= 0) & (codes >= 0)
        seed_sums = sp.csr_matrix(
            (np.ones(seeded.sum()), (labelled_vertices[seeded], codes[seeded])),
            shape=(self.graph_.n_vertices, len(self.classes_)))
        return GraphLaplacianPenalty(self.graph_.weights,
                                     vertices[np.isin(sequence_of_token, unlabeled)], seed_sums,
                                     keep_degrees)

    def _transduction(self, y, labelled_sequences, labelled, unlabeled, unlabeled_data,
                      layout, q):
        """Gold labels of the labelled sequences (``labelled_sequences``, those of the
        indices ``labelled``, in order; theta's best labelling that keeps the gold labels
        where some are unknown) and q's of the unlabelled ones, in input order."""
        transduction = [None] * len(y)
        for i in labelled:
            transduction[i] = list(y[i])
        partial = [k for k, i in enumerate(labelled) if None in transduction[i]]
        if partial:
            completed = self.predict(
                labelled_sequences[partial],
                known_labels=[transduction[labelled[k]] for k in partial])
            for k, labels in zip(partial, completed):
                transduction[labelled[k]] = labels
        if q is not None:
            for i, labels in zip(unlabeled, self._q_labels(unlabeled_data, layout, q)):
                transduction[i] = labels
        return [[] if labels is None else labels for labels in transduction]

    def _q_labels(self, data, layout, q):
        """q's label sequences of the sequences of ``data`` (chunks with vertex groups)."""
        classes = np.asarray(self.classes_, dtype=object)
        state, transition = layout.unpack(q.theta)
        predicted = []
        with single_threaded_blas():
            for chunk in data.chunks:
                predicted.append(self._decode(chunk, auxiliary_unary(chunk, state, q.offsets),
                                              transition))
        if not predicted:
            return []
        labels = classes[np.concatenate(predicted)]
        lengths = np.concatenate([chunk.lengths for chunk in data.chunks])
        return sequence_lists(labels, np.concatenate([[0], np.cumsum(lengths)]))

    def _held_out_predictor(self, fold):
        """q's labels of the fold's held-out sequences, unlabelled in its fit: the
        transductive labels the fit gives them (better than theta's on handwriting)."""
        # The priors' supervised fits run on the labelled part alone (a plain `Fold`).
        held = fold.held_data if isinstance(fold, _GraphFold) else None
        if held is None:
            return None
        return lambda q: self._q_labels(held, fold.layout, q)

    def _decode(self, packed, unary, transition):
        if self.decoding == "posterior":
            return self._marginals(packed, unary, transition).argmax(axis=1)
        return super()._decode(packed, unary, transition)


def _token_indices(sequences, chosen):
    """The token rows of the sequences ``chosen`` (indices) of a `SequenceMatrix`, in
    order."""
    offsets = sequences.offsets
    return np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in chosen]
                          + [np.zeros(0, dtype=np.intp)])


@dataclass
class _GraphProblem(Problem):
    """The training data, and all of X as the graph sees it: the sequences (labelled and
    not, in input order; None once the fit on all of them has packed its own), the
    labelled ones' and the unlabeled ones' indices in it, and the labels given (None: an
    unlabeled sequence)."""

    sequences: object = None
    labelled_index: np.ndarray = None
    y: list = None
    unlabeled_index: np.ndarray = None


@dataclass
class _GraphFold(Fold):
    """A run's data, and the graph's: the Laplacian penalty over the run's unlabeled
    tokens, its held-out labelled sequences packed by vertex (None in a fit on all), and
    the indices in X of its labelled and unlabeled sequences."""

    penalty: object = None
    held_data: object = None
    labelled_index: np.ndarray = None
    unlabeled_index: np.ndarray = None
