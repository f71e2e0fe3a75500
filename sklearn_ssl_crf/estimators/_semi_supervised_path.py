"""The training path every estimator that chooses its own settings goes through.

    validate -> supervised start -> semi-supervised phase -> selection -> refit

An estimator contributes only what is its own: how it takes its data in (`_prepare`), the
data of one fold (`_fold`) and its semi-supervised phase (`_semi_supervised_phase`: the
iterations of its objective term or E-step). Everything else is written here once.

Selection runs the path on held-out labelled data: the user's ``X_dev, y_dev``, or each fold
of a k-fold split of the labelled sequences in turn. On every held-out set it

1. fits the supervised start at each prior candidate (c1, c2 and, at order 2,
   c2_transitions), from strong to weak priors, each fit starting at the previous optimum,
   and keeps the priors with the best mean held-out score;
2. from that start, runs the semi-supervised phase at each strength candidate, scoring the
   held-out set after every iteration (iteration 0 is the supervised start), until
   ``n_iter_no_change`` iterations pass without a better score;

and takes the strength and number of iterations by the estimator's rule (`_choose_strength`:
the best mean score, or the runs' plateau), keeping the semi-supervised phase only if it
beats the supervised start by ``tol``; ties go to fewer iterations. With folds, the model
is then refitted on all labelled sequences with the chosen settings, running the chosen
number of iterations; with a dev set, the chosen iterate itself is kept.

An estimator may have the folds' semi-supervised runs train on a random sample of the
unlabelled sequences (its ``selection_unlabeled``), its unlabelled terms weighted by the
pool's tokens over the sample's so that a strength means what it means on the pool: then
selection costs ``cv`` runs on the sample and the refit one run on the pool, however large.

Every fold's held-out sequences are scored by the estimator's own predictions: its weights,
or what it labels them with during the fit when they are unlabelled there (graph-PR's q).
With ``n_jobs`` > 1 the folds' fits of each step run in worker processes
(`SemiSupervisedPath._over_held_sets`).
"""

import copy
import time
from abc import ABCMeta, abstractmethod
from itertools import chain, product
from numbers import Integral, Real

import joblib
import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.utils._param_validation import Interval, StrOptions

from ..metrics import check_scoring
from ..objective import penalised_negative_log_likelihood
from ..parallel import ChunkedSequences
from ..potentials import WeightLayout
from ..training import (
    Fold,
    FoldRun,
    HeldOut,
    InitStart,
    Iterates,
    Problem,
    UnlabeledSample,
    cv_results,
    describe_settings,
    first_best,
    held_out_splits,
    padded_scores,
    setting_candidates,
    unlabeled_sample,
)
from ..utils import SequenceMatrix, dask_client
from ._base import unlabeled_sequences
from ._crf import CRF
from ._init_weights import init_priors, init_vector
from ._sample_weights import labelled_weights

#: The candidates of ``c1='auto'`` and ``c2='auto'``: no L1 or a little, and L2 from
#: CRFsuite's default (right for about 10,000 labelled sentences) down to 1/1000 of it.
C1_CANDIDATES = (0.0, 0.1)


C2_CANDIDATES = (1.0, 0.1, 0.01, 0.001)


#: The candidates of ``c2_transitions='auto'`` at order 2 (None: the transitions follow
#: ``c2``); at order 1 'auto' is None alone, CRFsuite's one prior. A second-order chain has
#: S times more transition weights than a first-order one, each seen a few times in a few
#: hundred labelled sequences, while the emission weights see many firings per token: on
#: handwriting (110 words) the best order-2 CRFs had transitions 100 times less penalised
#: than emissions, and ``c2_transitions`` following ``c2`` made 3 times the error.
C2_TRANSITIONS_CANDIDATES = (None, 0.01, 0.001)


#: The stopping rule's relative improvement for the held-out fits that rank the prior
#: candidates on cross-validation folds (the estimator's ``delta`` if larger; a refit at
#: ``delta`` follows). Only their ranking is needed, and the weakest L2 candidates ran
#: 200-290 L-BFGS iterations each at 1e-4. On 23 draws of CoNLL-2000, BC2GM and UD
#: English, German and Italian and on the 4 BC2GM draws of bench_defaults.py (issue #42),
#: 1e-3 instead of 1e-4 chose priors whose models scored as well on held-out text on
#: average (`CRFCV` +0.08 points, `EntropyRegularizedCRF` -0.06); 1e-2, faster still,
#: chose a prior without L1 on one BC2GM draw from fits stopped too soon, and lost 5.5
#: points of span F1 there (docs/benchmarks.md).
CV_DELTA = 1e-3


#: The process-based joblib backends under which `SemiSupervisedPath._over_held_sets`
#: runs the held-out sets in worker processes (as on a dask cluster's workers, unless the
#: folds hold chunks held there already).
_PROCESS_BACKENDS = ("LokyBackend", "MultiprocessingBackend")


#: Parameter constraints of a setting that selection may choose.
SELECTABLE = [Interval(Real, 0, None, closed="left"), StrOptions({"auto"}), list, tuple]

#: Parameter constraints of ``selection_unlabeled``, the selection sample's size.
SAMPLE_SIZE = [Interval(Integral, 1, None, closed="left"), None]


class SemiSupervisedPath(CRF, metaclass=ABCMeta):
    """Base class of the estimators that choose their settings on held-out labelled data
    (not for direct use); see the module docstring for the path.

    Subclasses list their strength parameters and the candidates of ``'auto'`` in
    ``_strengths``, and implement the hooks declared below: `_semi_supervised_phase` and
    `_max_phase_iterations` always; `_prepare`, `_fold`, `_finish` and `_held_out_predictor`
    where they have more to do than the defaults here.
    """

    #: Fitted attributes that the folds' runs never read, left out of the copy of the
    #: estimator sent to a worker with each fold: the vectoriser (a fold's sequences,
    #: held-out ones included, are featurised already; its vocabulary is hundreds of
    #: thousands of strings over a large pool), and graph-PR's graph (the folds have theirs).
    _not_in_folds = ("vectorizer_",)

    #: name -> candidates of 'auto', for each strength parameter of the unlabelled term.
    _strengths = {}
    #: How cross-validation picks the iterations to refit with (`_choose_strength`).
    _iterations_rule = "best"
    #: The parameters that cap the semi-supervised phase (for the `ConvergenceWarning`).
    _phase_cap_name = "max_iterations"

    # Private state kept between fits (`unfitted_on_failure`).
    _fit_state = ("_scorer",)

    _parameter_constraints = {
        **CRF._parameter_constraints,
        "c1": SELECTABLE,
        "c2": SELECTABLE,
        "c2_transitions": [*SELECTABLE, None],
        "cv": ["cv_object"],
        "scoring": [None, str, callable],
        "early_stopping": ["boolean"],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    # -- the path ------------------------------------------------------------------------

    def _fit_path(self, X, y, X_unlabeled=None, X_dev=None, y_dev=None, sample_weight=None):
        if (X_dev is None) != (y_dev is None):
            raise ValueError("give both X_dev and y_dev, or neither")
        started = time.perf_counter()
        penalties = self._penalty_candidates()
        strengths = self._strength_candidates()
        problem = self._prepare(X, y, X_unlabeled, sample_weight)
        self._scorer = check_scoring(self.scoring, self.classes_)
        n_labelled = problem.n_labelled
        selects = len(penalties) > 1 or len(strengths) > 1 or (
            self._max_phase_iterations() != 0 and self.early_stopping)
        if not selects:
            # One run; a dev set is only scored.
            priors, strength = penalties[0], strengths[0]
            held = None if X_dev is None else self._held_out_dev(X_dev, y_dev)
            run = self._run(self._fit_fold(problem, priors), strength,
                            self._max_phase_iterations(), held, patience=None)
            self.cv_results_ = None
            self._finish_fit(problem, run, dict(**priors, **strength),
                             run.result.n_iter, run.iterates.scores or None)
            return self

        if X_dev is not None:
            held_sets = [(np.arange(n_labelled), self._held_out_dev(X_dev, y_dev))]
        else:
            held_sets = [(train, self._held_out_fold(problem, held))
                         for train, held in self._splits(problem.labels)]
        where = "the dev set" if X_dev is not None else f"{len(held_sets)} folds"
        sample = problem.sample if X_dev is None else None
        self._say(f"selection on {where}: {len(penalties)} prior(s), {len(strengths)} "
                  "strength(s)" + ("" if sample is None else
                                   f"; the folds' runs on a sample of "
                                   f"{sample.n_sequences:,} unlabelled sequences, "
                                   f"weighted {sample.scale:.3g}"))
        priors, penalty_scores = self._choose_penalties(problem, held_sets, penalties)
        if X_dev is not None:
            train, held = held_sets[0]
            kept = self._strength_runs(self._ranking_fold(problem, train, held, True), held,
                                       priors, strengths, penalties, keep=True)
            scores = [[run.iterates.scores] for run in kept]
        elif self._max_phase_iterations() != 0:
            scores = [list(by_strength) for by_strength in zip(*self._over_held_sets(
                "_strength_runs", True, problem, held_sets, priors, strengths, penalties))]
        else:
            # A supervised estimator: the priors' scores are all there is to choose by.
            scores = [[[score] for score in penalty_scores[penalties.index(priors)]]]
        chosen, n_iterations, paths = self._choose_strength(
            scores, self._max_phase_iterations(), dev=X_dev is not None)
        settings = dict(**priors, **strengths[chosen])
        self.cv_results_ = cv_results(penalties, penalty_scores,
                                    scores if self._max_phase_iterations() != 0 else [],
                                    strengths, paths, priors)
        self._say(f"chose {describe_settings(settings)}, {n_iterations} iteration(s), in "
                  f"{time.perf_counter() - started:.1f} s")
        if X_dev is not None:
            # The dev set's own best iterate, of the chosen strength, or the start.
            run = kept[chosen]
            iterates = run.iterates
            iteration = iterates.best_iteration if n_iterations else 0
            run.result.theta, run.result.state = (
                (iterates.best_theta, iterates.best_state) if iteration
                else (iterates.start_theta, iterates.start_state))
            self._finish_fit(problem, run, settings, iteration, paths[chosen])
            return self
        refit = self._run(self._fit_fold(problem, priors), strengths[chosen], n_iterations,
                          None)
        self._finish_fit(problem, refit, settings, refit.result.n_iter, paths[chosen],
                         chosen_length=n_iterations)
        return self

    def _fit_fold(self, problem, priors):
        """The fit's data: every labelled sequence, at ``priors``."""
        fold = self._fold(problem, np.arange(problem.n_labelled))
        self._set_priors(fold, priors)
        return fold

    def _run(self, fold, strength, max_iterations, held, supervised=None,
             patience="default"):
        """Supervised start on ``fold`` at its priors (unless given), then the
        semi-supervised phase; ``held`` (a `HeldOut`, or None) scores every iterate.
        Returns a `FoldRun`."""
        if supervised is None:
            supervised = self._supervised_start(fold)
        theta = supervised.x
        iterates = Iterates(None if held is None else held.scorer(self, fold),
                             self._patience() if patience == "default" else patience)
        result = self._semi_supervised_phase(fold, theta, strength, max_iterations, iterates)
        return FoldRun(fold, supervised, result, iterates)

    def _labelled_problem(self, sequences, labelled, codes, y, sample_weight, n_given=None):
        """A `Problem` of the sequences ``labelled`` of ``sequences`` (indices), whose
        tokens' label codes are ``codes`` (concatenated), labels ``y[i]`` and weights those
        of ``fit``'s ``sample_weight`` (one per sequence of X: the first ``n_given``
        sequences, None: all)."""
        chosen = sequences[labelled]
        weights = labelled_weights(sample_weight, n_given or len(sequences), labelled)
        return Problem(chosen, [list(y[i]) for i in labelled],
                       np.split(codes, np.cumsum(chosen.lengths)[:-1]), weights)

    def _fold(self, problem, train, sampled=False):
        """The run's data: the labelled part (`_labelled_fold`) and the problem's unlabeled
        sequences (if ``sampled``, its selection sample's where it has one)."""
        fold = self._labelled_fold(problem, train)
        fold.sample = problem.sample if sampled else None
        fold.unlabeled = problem.unlabeled if fold.sample is None else fold.sample.unlabeled
        return fold

    def _labelled_fold(self, problem, train):
        """The labelled sequences ``train`` (indices into the problem's), packed and as
        they are, and the weight layout they give: the data of the priors' supervised
        fits."""
        sequences = problem.labelled[train]
        codes = np.concatenate([problem.codes[i] for i in train])
        weights = None if problem.weights is None else problem.weights[train]
        labelled = self._chunked(sequences, codes, weights=weights)
        return Fold(labelled, self._weight_layout(labelled), sequences, codes, weights)

    def _supervised_start(self, fold, theta=None):
        """The labelled likelihood's optimum at the fold's priors (L-BFGS, OWL-QN for L1),
        from ``theta`` (None: zeros), stopped at the fold's ``delta`` (`_stop_delta`).

        The state weights of an attribute that no labelled token has get no gradient but
        their own L2 term's, zero at zero: from a start where they are zero they stay zero.
        So the fit runs on the fold's labelled rows restricted to their own attributes
        (`_attribute_restriction`), the same iterates on a shorter vector (with few
        labelled sequences and many attributes from unlabelled text, a fraction of it),
        and puts the weights back in place."""
        if getattr(self, "init", None) is not None:
            return InitStart(init_vector(self.init, fold.layout, self.attributes_,
                                         self.classes_))
        start = np.zeros(fold.layout.size) if theta is None else theta
        restricted, index = self._attribute_restriction(fold)
        if restricted is None or np.count_nonzero(start[index]) != np.count_nonzero(start):
            restricted, index = fold, slice(None)
        restricted.c1, restricted.c2, restricted.c2_transitions = (
            fold.c1, fold.c2, fold.c2_transitions)
        result = self._minimize(self._supervised_objective(restricted), start[index],
                                c1=fold.c1, delta=self._stop_delta(fold))
        theta = np.zeros(start.size)
        theta[index] = result.x
        result.x = theta
        return result

    def _stop_delta(self, fold):
        """The relative improvement at which the fold's supervised fits stop: the
        estimator's ``delta``, or the fold's if looser (`_with_stop`)."""
        return self.delta if fold.delta is None else max(fold.delta, self.delta)

    def _attribute_restriction(self, fold):
        """A `Fold` of the fold's labelled sequences restricted to the attributes they
        have, and the index of its parameters in the fold's vector (made once a fold);
        ``(None, None)`` when they have more than half of the attributes (a second copy of
        the labelled chunks would save little)."""
        if fold.restricted is None:
            sequences, codes = fold.sequences, fold.codes
            attributes = np.unique(sequences.matrix.indices[sequences.matrix.data != 0])
            if 2 * attributes.size > sequences.matrix.shape[1]:
                fold.restricted = (None, None)
                return fold.restricted
            # Each parameter's position in the vector, plus one (zero: not a parameter).
            blocks = fold.layout.blocks(np.arange(1.0, fold.layout.size + 1))
            blocks[0] = blocks[0][attributes]
            masks = [block > 0 for block in blocks]
            names = ["state_mask", "transition_mask", "trigram_mask", "skip_mask"]
            layout = WeightLayout(attributes.size, len(self.classes_), order=self.order,
                                  allowed=fold.layout.allowed,
                                  **{name: mask for name, mask in zip(names, masks)
                                     if not mask.all()})
            data = self._chunked(SequenceMatrix(sequences.matrix[:, attributes],
                                                sequences.offsets), codes,
                                 weights=fold.weights)
            index = np.concatenate([block[mask] for block, mask in zip(blocks, masks)])
            fold.restricted = (Fold(data, layout), index.astype(np.intp) - 1)
        return fold.restricted

    def _supervised_objective(self, fold):
        return penalised_negative_log_likelihood(fold.labelled, fold.layout,
                                                 fold.l2_strengths())

    def _set_priors(self, fold, priors):
        """Set the fold's priors from a candidate of `_penalty_candidates`."""
        fold.c1, fold.c2 = priors["c1"], priors["c2"]
        fold.c2_transitions = priors.get("c2_transitions", self._transition_candidates()[0])

    # -- selection -----------------------------------------------------------------------

    def _choose_penalties(self, problem, held_sets, penalties):
        """The priors whose supervised fits score best on average over the held-out sets;
        returns them and every candidate's scores (one row per candidate, one column per
        held-out set)."""
        scores = np.zeros((len(penalties), len(held_sets)))
        if len(penalties) > 1:
            scores = np.array(self._over_held_sets("_penalty_scores", False, problem,
                                                   held_sets, penalties)).T
        best = first_best(scores.mean(axis=1))
        return penalties[best], scores

    def _over_held_sets(self, method, semi_supervised, problem, held_sets, *args):
        """``[self.method(fold, held, *args, k=k) for each held-out set k]``, ``fold`` its
        `_ranking_fold` (``semi_supervised``: with the unlabeled sequences).

        With ``n_jobs`` > 1 under a process-based joblib backend (loky, the default, or
        multiprocessing) or on a dask cluster, the folds are made here and shared out to
        that many worker processes, each running its folds' fits one after another on a
        copy of the estimator, summing their chunks itself: a fold is a coarser,
        better-balanced unit of work than a chunk (selection's fits see a few chunks at
        most, and sending the weights to a chunk's process costs more than its sum there).
        A fold that holds chunks a cluster's workers hold already (a streamed pool that
        the folds train on whole) does not travel: then, as under other backends
        (threading), the folds run in turn and share out the chunk sums. The results are
        the same as in one process."""
        n_jobs = min(effective_n_jobs(self.n_jobs), len(held_sets))
        backend, _ = joblib.parallel.get_active_backend()
        if n_jobs >= 2 and (type(backend).__name__ in _PROCESS_BACKENDS
                            or dask_client() is not None):
            # The folds' own chunks made for the worker's process, not shared out from here.
            worker = self._in_one_process()
            folds = (worker._ranking_fold(problem, train, held, semi_supervised)
                     for train, held in held_sets)
            first = next(folds)
            if not any(data.on_cluster for data in _chunked_data(first)):
                sent = copy.copy(worker)
                for attribute in self._not_in_folds:
                    delattr(sent, attribute)
                return Parallel(n_jobs=n_jobs)(
                    delayed(_in_worker)(sent, method, fold, held, *args, k=k)
                    for k, (fold, (_, held)) in enumerate(zip(chain([first], folds),
                                                             held_sets)))
        # In turn, each fold made with this estimator's n_jobs, to share out its sums.
        return [getattr(self, method)(self._ranking_fold(problem, train, held,
                                                         semi_supervised),
                                      held, *args, k=k)
                for k, (train, held) in enumerate(held_sets)]

    def _in_one_process(self):
        """A copy of the estimator whose chunks are made for one process (``n_jobs=1``)."""
        one = copy.copy(self)
        one.n_jobs = 1
        return one

    def _ranking_fold(self, problem, train, held, semi_supervised):
        """The data of the runs that rank settings on the held-out set ``held`` of the
        labelled sequences ``train``: their supervised fits' (``semi_supervised`` False),
        or with the unlabeled sequences (on a cross-validation fold, the sample's where
        there is one), their stop set by `_with_stop`."""
        fold = (self._fold(problem, train, sampled=held.in_fold) if semi_supervised
                else self._labelled_fold(problem, train))
        return self._with_stop(fold, held)

    def _penalty_path(self, fold, penalties):
        """The fold's supervised fits at each prior candidate in turn, as selection ranks
        them, each fit ``(priors, result)``; the fold is left at the priors last yielded.

        From strong to weak L2 for each c1 and c2_transitions: each fit starts at the last
        one and stops at the fold's ``delta`` (`_with_stop`). The fits are
        deterministic: the semi-supervised runs of a fold start from the very fit that
        ranked their priors (`_strength_runs`), so the supervised start has one score."""
        theta, previous = None, None
        for priors in penalties:
            self._set_priors(fold, priors)
            path = (fold.c1, fold.c2_transitions)
            result = self._supervised_start(fold, theta if path == previous else None)
            theta, previous = result.x, path
            yield priors, result

    def _with_stop(self, fold, held):
        """``fold``, its fits' stop set for runs scored on ``held``: on a
        cross-validation fold a looser relative improvement (``CV_DELTA``: only the
        ranking of settings is used, and a refit follows), on a dev set the estimator's
        own (one of its runs is the model)."""
        fold.delta = CV_DELTA if held.in_fold else None
        return fold

    def _penalty_scores(self, fold, held, penalties, k=0):
        """The held-out scores of the supervised fits at each prior candidate on ``fold``
        (its labelled part), on the held-out set ``held`` (number ``k``)."""
        score = held.scorer(self, fold)
        scores = [score(result.x) for _, result in self._penalty_path(fold, penalties)]
        self._say(f"  priors, held-out set {k + 1}: " + ", ".join(
            f"{describe_settings(priors)}: {s:.4f}" for priors, s in zip(penalties, scores)))
        return scores

    def _strength_runs(self, fold, held, priors, strengths, penalties, k=0, keep=False):
        """For each strength candidate, the run on ``fold`` from the supervised start at
        ``priors``, scored on the held-out set ``held`` (number ``k``) at every iteration:
        the runs if ``keep``, else their scores. Where the priors were chosen among
        ``penalties``, the start is the fit that ranked them (`_penalty_path`): its score
        as a candidate and as iteration 0 are one score."""
        if len(penalties) > 1:
            # The fits that lead to it: its c1 and c2_transitions, from strong L2 to its.
            path = [candidate for candidate in penalties if candidate["c1"] == priors["c1"]
                    and candidate.get("c2_transitions") == priors.get("c2_transitions")]
            *_, (_, start) = self._penalty_path(fold, path[:path.index(priors) + 1])
        else:
            self._set_priors(fold, priors)
            start = self._supervised_start(fold)
        runs = []
        for strength in strengths:
            run = self._run(fold, strength, self._max_phase_iterations(), held, start)
            runs.append(run)
            scores = run.iterates.scores
            self._say(f"  {describe_settings(strength) or 'no unlabelled term'}, held-out set "
                      f"{k + 1}: {scores[0]:.4f} at the start, best "
                      f"{max(scores):.4f} at iteration {run.iterates.best_iteration} "
                      f"of {len(scores) - 1}")
        return runs if keep else [run.iterates.scores for run in runs]

    def _choose_strength(self, scores, cap, dev=False):
        """The strength and number of iterations to refit with, by the estimator's
        ``_iterations_rule``:

        - 'best': the iteration with the best mean held-out score (a run that stopped
          early keeps its last score for the later iterations);
        - 'end': the runs' plateau, the mean of each run's score where it stopped, refitted
          for ``cap`` iterations (where held-out curves are flat while the objective
          still improves what the folds are too small to see).

        With a dev set (``dev``), the rule is 'best'. The semi-supervised phase is kept
        only if that score beats the supervised start's
        (iteration 0) by at least ``tol``. Ties go to the earlier candidate and to fewer
        iterations."""
        paths, gains, iterations = [], [], []
        for strength_scores in scores:
            length = max(len(run_scores) for run_scores in strength_scores)
            path = np.mean([padded_scores(run_scores, length) for run_scores in strength_scores],
                           axis=0)
            paths.append(path.tolist())
            if self._iterations_rule == "end" and not dev:
                gains.append(np.mean([run_scores[-1] for run_scores in strength_scores])
                             - path[0])
                iterations.append(cap)
            else:
                gains.append(path.max() - path[0])
                iterations.append(int(np.argmax(path)))
        chosen = first_best(np.array(gains))
        # No phase (a supervised estimator, cap 0): nothing to keep, and no tol to read.
        if cap == 0 or gains[chosen] <= 0 or gains[chosen] < self.tol:
            return chosen, 0, paths
        return chosen, iterations[chosen], paths

    def _splits(self, labels):
        """(train, held) index pairs of the labelled sequences (`held_out_splits`)."""
        return held_out_splits(labels, self.cv, self.random_state)

    def _held_out_fold(self, problem, held):
        return HeldOut(problem.labelled[held], [problem.labels[i] for i in held],
                        self._scorer, in_fold=True)

    def _held_out_dev(self, X_dev, y_dev):
        sequences, gold = self._labelled_dev(X_dev, y_dev)
        if not gold:
            raise ValueError("y_dev has no labelled sequence")
        return HeldOut(sequences, gold, self._scorer)

    # -- settings ------------------------------------------------------------------------

    def _penalty_candidates(self):
        """The priors to choose from, as dicts of ``c1``, ``c2`` and, where there are
        several candidates for it, ``c2_transitions``: for each c1 and c2_transitions, from
        strong to weak c2."""
        transitions = self._transition_candidates()
        shown = len(transitions) > 1
        l1, l2 = self.c1, self.c2
        init = getattr(self, "init", None)
        if init is not None and (isinstance(l1, str) or isinstance(l2, str)):
            # No supervised fit to compare priors on: 'auto' takes the start's.
            chosen = init_priors(init)
            l1 = chosen["c1"] if isinstance(l1, str) else l1
            l2 = chosen["c2"] if isinstance(l2, str) else l2
        c2_candidates = sorted(setting_candidates("c2", l2, C2_CANDIDATES), reverse=True)
        return [dict(c1=c1, c2=c2, **({"c2_transitions": t} if shown else {}))
                for c1 in setting_candidates("c1", l1, C1_CANDIDATES) for t in transitions
                for c2 in c2_candidates]

    def _transition_candidates(self):
        auto = C2_TRANSITIONS_CANDIDATES if self.order == 2 else (None,)
        return setting_candidates("c2_transitions", self.c2_transitions, auto)

    def _strength_candidates(self):
        """Every combination of the strength parameters' candidates, as dicts."""
        names = list(self._strengths)
        values = [setting_candidates(name, getattr(self, name), self._strengths[name])
                  for name in names]
        return [dict(zip(names, combination)) for combination in product(*values)]

    def _patience(self):
        if self._max_phase_iterations() == 0:
            return None  # no phase to stop early
        return self.n_iter_no_change if self.early_stopping else None

    # -- hooks ---------------------------------------------------------------------------

    def _prepare(self, X, y, X_unlabeled, sample_weight=None):
        """Validate and take the training data in (setting ``classes_``, the vectoriser
        and its attributes) and return it as a `Problem` (or a subclass): here, the
        labelled sequences of X, and its unlabeled ones with ``X_unlabeled`` (any
        iterable, featurised a block at a time) packed once for every fold."""
        sequences, labelled, codes, streamed = self._fit_inputs_and_stream(
            X, y, () if X_unlabeled is None else X_unlabeled, self.min_freq)
        # The chunks take the blocks from the list, freeing each once packed.
        streamed.insert(0, sequences[unlabeled_sequences(sequences, labelled)])
        problem = self._labelled_problem(sequences, labelled, codes, y, sample_weight)
        del sequences
        problem.sample = self._selection_sample(streamed)
        problem.unlabeled = self._chunked(streamed)
        return problem

    def _selection_sample(self, parts):
        """The `UnlabeledSample` of the unlabeled sequences ``parts`` (`SequenceMatrix`
        blocks) on which the cross-validation folds' runs train: at most
        `_selection_sample_size` of them, drawn with ``random_state``; None for all."""
        sample = unlabeled_sample(parts, self._selection_sample_size(), self.random_state)
        if sample is None:
            return None
        chosen, scale = sample
        # On a cluster the folds take the sample's chunks to the workers
        # (`_over_held_sets`): they are made here, not sent there.
        maker = self._in_one_process() if dask_client() is not None else self
        return UnlabeledSample(chosen, maker._chunked(list(chosen)), scale)

    def _selection_sample_size(self):
        """The number of unlabeled sequences that the folds' runs train on at most:
        ``selection_unlabeled`` where the estimator has that parameter (None: all)."""
        if "selection_unlabeled" not in self._parameter_constraints:
            return None
        size = self.selection_unlabeled
        if isinstance(size, bool):  # an int to the parameter checks
            raise TypeError(f"selection_unlabeled must be an int or None, got {size!r}")
        return size

    @abstractmethod
    def _semi_supervised_phase(self, fold, theta, strength, max_iterations, iterates):
        """The semi-supervised phase on ``fold`` from the supervised optimum ``theta`` at
        ``strength`` (a dict of the strength parameters), for at most ``max_iterations``
        iterations, with ``iterates.record(iteration, theta, state=None)`` after each (0:
        the start), which ends it when it returns a stop. Returns a `Phase`."""

    @abstractmethod
    def _max_phase_iterations(self):
        """The cap on the semi-supervised phase's iterations (None: none; 0: supervised)."""

    def _weight_copies(self):
        # The supervised start may run on the labelled sequences' attributes only
        # (`_attribute_restriction`): L-BFGS over all the weights is the phase's.
        phase = self._max_phase_iterations()
        return 2 if phase == 0 else self._lbfgs_copies(phase)

    # -- fitted attributes ---------------------------------------------------------------

    def _finish_fit(self, problem, run, settings, best_iteration, validation_scores,
                    chosen_length=None):
        """Set the fitted attributes from ``run``, whose iterate ``best_iteration`` is kept
        (its ``result.theta``); ``chosen_length``: the refit's iterations, chosen on
        held-out data."""
        result, fold = run.result, run.fold
        self.best_params_ = settings
        self.best_iteration_ = best_iteration
        self.validation_scores_ = validation_scores
        self.training_log_, self.n_iter_ = self._final_log(run)
        self._set_weight_blocks(fold.layout.blocks(result.theta), fold.layout.allowed)
        self._finish(problem, fold, result)
        condition, message, cap = (result.termination_condition, result.message,
                                   self._phase_cap_name)
        cap_iterations = self._max_phase_iterations()
        if best_iteration == 0:
            # The model is the supervised start: its L-BFGS run is the one that ended.
            condition, message, cap = (run.supervised.termination_condition,
                                       run.supervised.message, "max_iterations")
        elif best_iteration < result.n_iter:
            condition, message = ("no_improvement", f"kept iteration {best_iteration} of "
                                  f"{result.n_iter}, the best on the held-out data")
        elif condition == "max_iter" and chosen_length == result.n_iter:
            if cap_iterations is not None and chosen_length < cap_iterations:
                condition, message = ("no_improvement", f"stopped at the {chosen_length} "
                                      "iterations chosen on held-out data")
            elif self._iterations_rule == "end":
                # The rule refits for the cap by design (`_choose_strength`).
                cap = None
        self._set_termination(condition, message, cap)

    def _finish(self, problem, fold, result):
        """Set the estimator's own fitted attributes from the kept iterate."""

    def _final_log(self, run):
        """``training_log_`` and ``n_iter_`` of the final run: the supervised start's
        L-BFGS entries, then the phase's, and the phase's iterations."""
        return ([dict(entry, phase="supervised") for entry in run.supervised.log]
                + run.result.log, run.result.n_iter)

    def _held_out_predictor(self, fold):
        """None, or ``state -> labels`` of the fold's held-out sequences from a phase's
        state (for an estimator that labels them itself during the fit)."""
        return None

    def _say(self, message):
        if self.verbose:
            print(message, flush=True)


def _chunked_data(data):
    """The `ChunkedSequences` of a `Problem` or a `Fold` and of its selection sample."""
    sample = data.sample.unlabeled if data.sample is not None else None
    return [value for value in [*vars(data).values(), sample]
            if isinstance(value, ChunkedSequences)]


def _in_worker(estimator, method, fold, *args, **kwargs):
    """``estimator.method(fold, *args, **kwargs)`` in a worker process, on its own copy of
    the fold, whose chunks it sums itself (no pool of its own)."""
    for data in _chunked_data(fold):
        data.n_jobs = 1
    return getattr(estimator, method)(fold, *args, **kwargs)
