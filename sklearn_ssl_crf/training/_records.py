"""What the training path (`_training.SemiSupervisedPath`) passes between its steps: the
training data as an estimator prepares it (`Problem`), one fold's labelled part at fixed
priors (`Fold`), what a semi-supervised phase returns (`Phase`) and one run from a
supervised start (`FoldRun`).
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
    """The training data as an estimator's `_prepare` returns it: the labelled sequences
    (a `SequenceMatrix`), their labels and label codes (one list or array per sequence),
    their weights (``sample_weight``; None: all 1), and whatever the estimator keeps of its
    own (unlabelled chunks, a graph) in ``extra``."""

    labelled: object
    labels: list
    codes: list
    weights: object = None
    extra: dict = field(default_factory=dict)

    @property
    def n_labelled(self):
        return len(self.labels)


@dataclass
class Fold:
    """The labelled part of one training run at fixed priors: the estimator's `_fold` fills
    ``labelled`` (packed labelled sequences) and ``layout``, and anything of its own in
    ``extra``; `SemiSupervisedPath._set_priors` the priors."""

    labelled: object
    layout: object
    c1: float = 0.0
    c2: float = 1.0
    c2_transitions: float = None
    extra: dict = field(default_factory=dict)

    def l2_strengths(self):
        """The L2 strength of every weight at the fold's priors."""
        return self.layout.l2_strengths(self.c2, self.c2_transitions)


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
