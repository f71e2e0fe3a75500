"""Selection's pieces: the held-out sets and how their iterates are scored (`Iterates`,
`HeldOut`), the candidates of each setting, the folds, and the record of what was tried
(``cv_results_``).
"""

import copy
from numbers import Integral, Real
from operator import attrgetter

import numpy as np
from sklearn.model_selection import check_cv

from ..optim import BestIterate, StopTraining
from ..optim.specs import Either, Integer
from ..utils import fit_random_state


class Iterates:
    """Scores the iterates of one run on a held-out set, keeps the best (`BestIterate`),
    and ends the run after ``patience`` iterations without a better score.

    A phase that runs its own iterations calls `record` (iteration 0, the start, first);
    as an L-BFGS callback, ``iterates(iteration, theta)`` raises `StopTraining` to end the
    run. Without a held-out set (``score`` None) it scores and keeps nothing.
    """

    def __init__(self, score, patience):
        self.score, self.patience = score, patience
        self.kept = BestIterate()

    # The best iterate as the estimators read it; ``scores``: every iterate's, from the
    # start's.
    scores = property(attrgetter("kept.scores"))
    best_iteration = property(attrgetter("kept.iteration"))
    best_theta = property(attrgetter("kept.weights"))
    best_state = property(attrgetter("kept.state"))

    def record(self, iteration, theta, state=None):
        """The iterate's log entry (its score), and ``(reason, message)`` if the run should
        end here, else None."""
        if self.score is None:
            return {}, None
        value = float(self.score(theta, state))
        if iteration == 0:
            self.start_theta, self.start_state = np.array(theta), state
        self.kept.offer(iteration, value, np.array(theta), state)
        entry = {"validation_score": value}
        if self.patience and iteration - self.kept.iteration >= self.patience:
            return entry, ("no_improvement",
                           f"stopped: no better validation score in {self.patience} "
                           "iterations")
        return entry, None

    def __call__(self, iteration, theta):
        entry, stop = self.record(iteration, theta)
        if stop is not None:
            raise StopTraining(*stop, entry)
        return entry

    def checkpoint_state(self):
        """What an L-BFGS run's iterations change (`optim.minimize_lbfgs`'s checkpoints),
        and the patience."""
        return {"kept": self.kept.checkpoint_state(), "patience": self.patience}

    def restore_checkpoint_state(self, state):
        self.kept.restore_checkpoint_state(state["kept"])

    def checkpoint_spec(self, weights):
        """What a checkpoint of it holds; ``weights``: the spec of an iterate."""
        return {"kept": self.kept.checkpoint_spec(weights),
                "patience": Either(None, Integer(0))}


def sample_positions(n, size, random_state):
    """``size`` positions of ``range(n)`` drawn at random without replacement, sorted;
    None when ``n`` is at most ``size`` (or ``size`` is None). ``random_state`` as in
    `fit_random_state`."""
    if size is None or n <= size:
        return None
    return np.sort(fit_random_state(random_state).choice(n, size, replace=False))


def unlabeled_sample(parts, size, random_state):
    """``size`` of the sequences of ``parts`` (consecutive `SequenceMatrix` blocks) drawn
    at random without replacement, kept in their order (`sample_positions`): a list of
    `SequenceMatrix` (one per block that has any) and the pool's tokens over the sample's;
    None when there are at most ``size`` (or ``size`` is None)."""
    counts = [len(part) for part in parts]
    chosen = sample_positions(sum(counts), size, random_state)
    if chosen is None:
        return None
    starts = np.cumsum([0] + counts)
    sample = []
    for part, start, stop in zip(parts, starts[:-1], starts[1:]):
        mine = chosen[(chosen >= start) & (chosen < stop)] - start
        if mine.size:
            sample.append(part[mine])
    n_tokens = sum(part.n_tokens for part in sample)
    return sample, sum(part.n_tokens for part in parts) / max(n_tokens, 1)


class HeldOut:
    """Held-out labelled sequences and the scorer that rates an iterate on them.

    ``in_fold``: they are a cross-validation fold's held-out sequences, which an estimator
    may have among the unlabelled sequences of that fold's fit (graph-PR's transductive
    labels, `SemiSupervisedPath._held_out_predictor`); otherwise (a dev set) the iterate's
    weights label them.
    """

    def __init__(self, sequences, gold, scorer, in_fold=False):
        self.sequences, self.gold, self.scorer_ = sequences, gold, scorer
        self.in_fold = in_fold

    def scorer(self, estimator, fold):
        """``(theta, state=None) -> score`` on the held-out set."""
        view = copy.copy(estimator)
        predictor = estimator._held_out_predictor(fold) if self.in_fold else None

        def score(theta, state=None):
            if predictor is not None and state is not None:
                return self.scorer_(_Predictions(predictor(state)), self.sequences, self.gold)
            view._set_weight_blocks(fold.layout.blocks(theta), fold.layout.allowed)
            return self.scorer_(view, self.sequences, self.gold)

        return score


class _Predictions:
    """Stands for an estimator whose ``predict`` of the held-out set is known."""

    def __init__(self, labels):
        self.labels = labels

    def predict(self, X):
        return self.labels


def setting_candidates(name, value, auto):
    """The values a selectable setting may take: the 'auto' candidates, a given list, or
    one fixed value."""
    if isinstance(value, str):
        return tuple(auto)
    if isinstance(value, (list, tuple)):
        if not value or not all(isinstance(v, Real) and np.isfinite(v) and v >= 0
                                for v in value):
            raise ValueError(f"{name} must be a non-negative number, 'auto', or a non-empty "
                             f"list of non-negative numbers to choose from; got {value!r}")
        return tuple(float(v) for v in value)
    return (value,)


def held_out_splits(labels, cv, random_state=None):
    """(train, held) index pairs of the labelled sequences, whose label sequences are
    ``labels``: ``cv`` (an int) folds that spread the copies of each label sequence over
    different folds (`spread_folds`), or the user's splitter, given the label sequences'
    ids as its ``y``. Only fully labelled sequences are held out (a score needs every
    label); partially labelled ones are in every fold's training part."""
    complete = np.array([i for i, sequence in enumerate(labels)
                         if all(label is not None for label in sequence)], dtype=np.intp)
    partial = np.setdiff1d(np.arange(len(labels)), complete)
    what = "fully labelled sequences" if partial.size else "labelled sequences"
    n_labelled = complete.size
    ids = _label_sequence_ids([labels[i] for i in complete])
    if isinstance(cv, Integral):
        if cv < 2:
            raise ValueError(f"cv must be at least 2 folds, got {cv}")
        if cv > n_labelled:
            raise ValueError(f"cv={cv} folds need at least {cv} {what}, but there are "
                             f"{n_labelled}: lower cv, or give X_dev, y_dev")
        splits = spread_folds(ids, cv, random_state)
    else:
        splits = list(check_cv(cv).split(np.zeros((n_labelled, 1)), ids))
    for train, held in splits:
        if len(train) == 0 or len(held) == 0:
            raise ValueError(f"every cv split needs {what} on both sides")
    return [(np.sort(np.concatenate([complete[train], partial])), complete[held])
            for train, held in splits]


def spread_folds(ids, n_folds, random_state=None):
    """``n_folds`` folds in which the copies of each id go to different folds.

    The sequences are shuffled, grouped by id (the groups in random order) and dealt to the
    folds in turn, so fold sizes differ by at most one and no id with at most ``n_folds``
    copies is held out whole: with a few labelled copies of each word (handwriting), every
    fold's training part still holds each word. Without repeated ids this is a shuffled
    k-fold split. ``random_state`` None is a fixed seed (`utils.fit_random_state`).

    Returns
    -------
    splits : list of (train, held) index arrays
    """
    rng = fit_random_state(random_state)
    ids = np.asarray(ids)
    shuffled = rng.permutation(len(ids))
    group_order = rng.permutation(ids.max() + 1)
    dealt = shuffled[np.argsort(group_order[ids[shuffled]], kind="stable")]
    fold = np.empty(len(ids), dtype=np.intp)
    fold[dealt] = np.arange(len(ids)) % n_folds
    return [(np.flatnonzero(fold != k), np.flatnonzero(fold == k)) for k in range(n_folds)]


def _label_sequence_ids(labels):
    """An integer id per label sequence, equal for equal sequences."""
    index = {}
    return np.array([index.setdefault(tuple(sequence), len(index)) for sequence in labels])


def first_best(values):
    """Index of the largest value, the first one on ties."""
    return int(np.flatnonzero(values == values.max())[0])


def padded_scores(scores, length):
    return scores + [scores[-1]] * (length - len(scores))


def describe_settings(settings):
    """``name=value, ...`` of a dict of settings, for progress lines and summaries."""
    return ", ".join(f"{name}={value}" if value is None else f"{name}={value:g}"
                     for name, value in settings.items())


def cv_results(penalties, penalty_scores, scores, strengths, paths, priors):
    """`cv_results_`, in `GridSearchCV`'s form: one row per prior candidate when there
    were several (supervised, iteration 0), then one per strength candidate at the chosen
    ``priors`` and its best mean number of iterations (``n_iter``), from ``scores`` (per
    strength, per held-out set, the score at each iteration), unless it is empty (an
    estimator without a semi-supervised phase)."""
    params, split_scores = [], []
    if len(penalties) > 1:
        for candidate, penalty_split_scores in zip(penalties, penalty_scores):
            params.append({**candidate, "n_iter": 0})
            split_scores.append(penalty_split_scores)
    for strength, strength_scores, path in zip(strengths, scores, paths):
        n_iter = int(np.argmax(path))
        params.append({**priors, **strength, "n_iter": n_iter})
        split_scores.append([padded_scores(run_scores, n_iter + 1)[n_iter]
                             for run_scores in strength_scores])
    split_scores = np.array(split_scores)
    mean = split_scores.mean(axis=1)
    results = {"params": params, "mean_test_score": mean,
               "std_test_score": split_scores.std(axis=1),
               "rank_test_score": 1 + np.argsort(np.argsort(-mean, kind="stable"),
                                                 kind="stable")}
    for k in range(split_scores.shape[1]):
        results[f"split{k}_test_score"] = split_scores[:, k]
    return results
