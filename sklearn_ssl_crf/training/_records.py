"""What the training path (`estimators.SemiSupervisedPath`) passes between its steps: the
training data as an estimator prepares it (`Problem`), one run's data at fixed priors
(`Fold`), its supervised start when ``init`` gives it (`InitStart`), what a semi-supervised
phase returns (`Phase`) and one run from a supervised start (`FoldRun`).
"""

from dataclasses import dataclass, field

import numpy as np

from ..optim import StopTraining
from ._selection import Iterates


@dataclass
class Phase:
    """What a semi-supervised phase returns: the last iterate (and the estimator's state
    with it, such as graph-PR's q), its log, iterations run and why it stopped (a token:
    'converged', 'max_iter', 'no_improvement', ..., None when no iteration ran; and in
    words)."""

    theta: np.ndarray
    log: list
    n_iter: int
    termination_condition: str = None
    message: str = ""
    state: object = None


@dataclass
class Problem:
    """The training data as an estimator's `_prepare` returns it.

    Attributes
    ----------
    labelled : SequenceMatrix
        The labelled sequences.
    labels, codes : list
        Their labels and label codes, one list or array per sequence.
    weights : ndarray or None
        Their weights (``sample_weight``); None: all 1.
    unlabeled : ChunkedSequences or None
        The unlabeled sequences, packed once for every fold's fit; None when there are none
        or each fold has its own (graph-PR's held-out sequences are unlabeled in its fit).
    sample : UnlabeledSample or None
        The random sample of them on which the cross-validation folds' semi-supervised
        runs train (None: all of them).

    An estimator that keeps more of the data subclasses it (as `GraphPRCRF` does).
    """

    labelled: object
    labels: list
    codes: list
    weights: object = None
    unlabeled: object = None
    sample: object = None

    @property
    def n_labelled(self):
        return len(self.labels)


@dataclass
class Fold:
    """The data of one training run at fixed priors.

    Attributes
    ----------
    labelled : ChunkedSequences
        The run's labelled sequences, packed.
    layout : WeightLayout
        The weight layout they give.
    sequences, codes, weights : SequenceMatrix, ndarray, ndarray or None
        The same sequences unpacked, their tokens' label codes (concatenated) and their
        weights (None: all 1).
    unlabeled : ChunkedSequences or None
        The run's unlabeled sequences.
    sample : UnlabeledSample or None
        The sample that ``unlabeled`` is, on a cross-validation fold (None: ``unlabeled``
        is all of the problem's).
    c1, c2, c2_transitions : float
        The priors (`SemiSupervisedPath._set_priors`).
    restricted : tuple or None
        The labelled sequences restricted to their own attributes, made once a fold
        (`SemiSupervisedPath._attribute_restriction`).
    delta : float or None
        The relative improvement at which the run's supervised fits stop (None: the
        estimator's ``delta``): looser on a cross-validation fold, whose fits only rank
        settings (`SemiSupervisedPath._with_stop`).
    """

    labelled: object
    layout: object
    sequences: object = None
    codes: object = None
    weights: object = None
    unlabeled: object = None
    sample: object = None
    c1: float = 0.0
    c2: float = 1.0
    c2_transitions: float = None
    restricted: tuple = None
    delta: float = None

    def l2_strengths(self):
        """The L2 strength of every weight at the fold's priors."""
        return self.layout.l2_strengths(self.c2, self.c2_transitions)


@dataclass
class UnlabeledSample:
    """A random sample of the unlabeled sequences (`sample_positions`), and the number of
    the pool's tokens that each of its tokens stands for (``scale``: the pool's tokens over
    the sample's), by which the runs on it weigh their unlabeled terms, so that a term's
    strength means what it means on the whole pool. Either its feature rows in parts
    (`SequenceMatrix`, ``parts``) and the same packed (``unlabeled``), or, for an estimator
    that packs each fold's unlabeled sequences itself, their indices (``index``)."""

    parts: list
    unlabeled: object
    scale: float
    index: np.ndarray = None

    @property
    def n_sequences(self):
        return len(self.index) if self.index is not None else sum(map(len, self.parts))


@dataclass
class InitStart:
    """The start of a run from the weights of ``init``, read as an optimiser's result (no
    optimiser ran)."""

    x: np.ndarray
    n_iter: int = 0
    log: list = field(default_factory=list)
    termination_condition: str = "init"
    message: str = "the model is init's, not trained here"


@dataclass
class FoldRun:
    fold: Fold
    supervised: object
    result: Phase
    iterates: Iterates


class LoggingCallback:
    """An L-BFGS callback that logs the dict ``parts`` (filled by the objective) with what
    ``on_iteration`` returns, and passes its `StopTraining` on with them; its checkpoint
    state is ``on_iteration``'s."""

    def __init__(self, on_iteration, parts):
        self.on_iteration, self.parts = on_iteration, parts

    def __call__(self, iteration, theta):
        try:
            return dict(self.parts, **self.on_iteration(iteration, theta))
        except StopTraining as stop:
            stop.entry = dict(self.parts, **stop.entry)
            raise

    def checkpoint_state(self):
        return self.on_iteration.checkpoint_state()

    def restore_checkpoint_state(self, state):
        self.on_iteration.restore_checkpoint_state(state)

    def checkpoint_spec(self, weights):
        return self.on_iteration.checkpoint_spec(weights)
