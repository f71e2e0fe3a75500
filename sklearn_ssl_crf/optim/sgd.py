"""Stochastic gradient descent with the natural-gradient transforms, sparse L2 steps, and
CRFsuite's learning-rate calibration; its epochs are the steps of the optimisers' one run
loop (`run_iterations`, with CRFsuite's stopping rule).

The parameters are state weights W (attributes x labels), held as ``W = scale * v`` so that
the L2 shrinkage ``W <- (1 - eta * lam) W`` of every step is one multiplication of
``scale`` and a step touches only the rows of W whose attributes occur in the sampled
sequences (Shalev-Shwartz et al. 2007; Bottou 2012), and transition weights T (a few rows of
labels columns), small enough to be shrunk directly, with their own L2 strength. The
learning rate is ``eta_t = eta0 / (1 + lam * eta0 * t)``, ``t`` counting sequences.

The optimiser sees the data only through batches (arrays of sequence indices) and
``gradient(trainer, batch) -> (loss, rows, d_state, d_transition)``: the summed loss of the
batch's sequences at the trainer's current weights and its gradient (``d_state`` holds the
rows ``rows`` of dW, ``rows`` distinct).
"""

import numpy as np

from ._best import BestIterate
from ._run import run_iterations
from .specs import Array, Either, Integer, Number
from .transforms import GradientTransform

__all__ = ["SGDTrainer", "calibrate_learning_rate", "minimize_sgd", "sgd_epoch"]

# Below this scale, ``v`` is multiplied out (CRFsuite's threshold).
_MIN_SCALE = 1e-9


class SGDTrainer:
    """Weights and schedule of stochastic training, one step at a time.

    Parameters
    ----------
    n_attributes, n_labels : int
    update : str
        Gradient transform (see `sklearn_ssl_crf.optim.transforms`).
    eps : float
        Its constant.
    lam : float
        L2 strength per sequence: the loss of a sequence is penalised by
        ``lam / 2 * ||theta||^2`` (CRFsuite: ``lam = 2 * c2 / N``).
    eta0 : float
        Initial learning rate.
    state_mask, transition_mask : ndarray of bool, default=None
        Weights allowed to be non-zero; None: all.
    transition_rows : int, default=None
        Rows of T (None: ``n_labels``; a second-order model's weights take more).
    lam_transitions : float, default=None
        L2 strength per sequence of T; None: ``lam``.
    """

    def __init__(self, n_attributes, n_labels, update, eps, lam, eta0, state_mask=None,
                 transition_mask=None, transition_rows=None, lam_transitions=None):
        self.state = np.zeros((n_attributes, n_labels))
        self.transition = np.zeros((transition_rows or n_labels, n_labels))
        self.scale = 1.0
        self.t = 0
        self.transform = GradientTransform(update, eps)
        self.lam, self.eta0 = float(lam), float(eta0)
        self.lam_transitions = lam_transitions
        self.state_mask, self.transition_mask = state_mask, transition_mask

    def learning_rate(self):
        return self.eta0 / (1.0 + self.lam * self.eta0 * self.t)

    def state_rows(self, rows):
        """Current weights of some attributes, shape (len(rows), n_labels)."""
        weights = np.take(self.state, rows, axis=0)
        weights *= self.scale
        return weights

    def weights(self):
        """Copies of the current ``(W, T)``."""
        return self.state * self.scale, self.transition.copy()

    def vector(self):
        """The current ``(W, T)`` laid end to end, a new array."""
        return np.concatenate([(self.state * self.scale).ravel(), self.transition.ravel()])

    def set_vector(self, x):
        """Set ``(W, T)`` from `vector`'s layout."""
        self.set_weights(x[:self.state.size].reshape(self.state.shape),
                         x[self.state.size:].reshape(self.transition.shape))

    def squared_norm(self):
        v = self.state.ravel()
        return self.scale ** 2 * (v @ v) + np.vdot(self.transition, self.transition)

    def step(self, rows, d_state, d_transition, n_samples=1):
        """``theta <- (1 - eta lam)^n theta - eta n h(g / n)`` for the summed loss gradient
        ``g`` of ``n`` sequences (``d_state``, ``d_transition``; overwritten).

        With one sequence this is the paper's update; with several, the transform is applied
        to their mean gradient and the step spans ``n`` sequences of the schedule.
        """
        eta = self.learning_rate()
        self.scale *= (1.0 - eta * self.lam) ** n_samples
        lam_transitions = self.lam if self.lam_transitions is None else self.lam_transitions
        self.transition *= (1.0 - eta * lam_transitions) ** n_samples
        if abs(self.scale) < _MIN_SCALE:
            self.state *= self.scale
            self.scale = 1.0
        # One array, so that the transform runs once per step.
        h = np.concatenate([d_state, d_transition])
        if n_samples > 1:
            h /= n_samples
        self.transform(h)
        h *= eta * n_samples
        h_state, h_transition = h[:len(rows)], h[len(rows):]
        h_state /= self.scale
        if self.state_mask is not None:
            h_state *= self.state_mask[rows]
        if self.transition_mask is not None:
            h_transition *= self.transition_mask
        self.state[rows] -= h_state
        self.transition -= h_transition
        self.t += n_samples

    def grow(self, n_attributes):
        """Add zero-weight attributes up to ``n_attributes`` (streamed data brought new
        ones)."""
        extra = n_attributes - self.state.shape[0]
        if extra > 0:
            self.state = np.vstack([self.state, np.zeros((extra, self.state.shape[1]))])
            if self.state_mask is not None:
                self.state_mask = np.vstack(
                    [self.state_mask, np.zeros((extra, self.state.shape[1]), dtype=bool)])

    def checkpoint_state(self):
        """The weights and the schedule (`minimize_sgd`'s checkpoints)."""
        return {"state": self.state, "transition": self.transition,
                "scale": self.scale, "t": self.t, "lam": self.lam, "eta0": self.eta0,
                "lam_transitions": self.lam_transitions}

    def restore_checkpoint_state(self, state):
        self.state[...], self.transition[...] = state["state"], state["transition"]
        self.scale, self.t, self.lam = state["scale"], state["t"], state["lam"]
        self.eta0, self.lam_transitions = state["eta0"], state["lam_transitions"]

    def checkpoint_spec(self, weights):
        """What a checkpoint of the trainer holds (its own arrays' shapes: ``weights``,
        the spec of `vector`, plays no part)."""
        return {"state": Array(self.state.shape), "transition": Array(self.transition.shape),
                "scale": Number(),
                "t": Integer(0), "lam": Number(), "eta0": Number(),
                "lam_transitions": Either(None, Number())}

    def set_weights(self, state, transition):
        self.state[...] = state
        self.transition[...] = transition
        self.scale = 1.0


def sgd_epoch(trainer, gradient, batches):
    """One step per batch, in order; returns the summed loss (each sequence's loss at the
    weights before its step)."""
    total = 0.0
    for batch in batches:
        loss, rows, d_state, d_transition = gradient(trainer, batch)
        total += loss
        trainer.step(rows, d_state, d_transition, len(batch))
    return total


def _epoch_loss(trainer, gradient, batches):
    # Plus the per-sequence penalty lam / 2 ||theta||^2 over the epoch's sequences:
    # c2 ||theta||^2 for the whole training set, as CRFsuite reports it.
    loss = sgd_epoch(trainer, gradient, batches)
    n_samples = sum(len(batch) for batch in batches)
    return loss + 0.5 * trainer.lam * n_samples * trainer.squared_norm()


def calibrate_learning_rate(make_trainer, gradient, sample, eta=0.1, rate=2.0,
                            candidates=10, max_trials=20, verbose=False):
    """CRFsuite's calibration of ``eta0`` (l2sgd): one epoch over ``sample`` per trial from
    zero weights, multiplying ``eta`` by ``rate`` while the loss stays below its initial
    value (up to ``candidates`` times), then dividing it from ``eta / rate`` downwards
    ``candidates`` times; the ``eta`` of the lowest loss wins.

    Parameters
    ----------
    make_trainer : callable
        ``eta0 -> SGDTrainer`` with zero weights.
    gradient : callable
        See the module docstring.
    sample : list of ndarray of int
        Batches used, in this order.

    Returns
    -------
    eta0 : float
    trials : list of (eta, loss)
    """
    zero = make_trainer(eta)
    initial = sum(gradient(zero, batch)[0] for batch in sample)
    if verbose:
        print(f"calibration: initial loss {initial:.4f}")
    best_loss, best_eta = np.inf, eta
    trials = []
    remaining, decreasing, trial = candidates, False, 1
    while remaining > 0 or not decreasing:
        trainer = make_trainer(eta)
        loss = _epoch_loss(trainer, gradient, sample)
        trials.append((eta, loss))
        ok = bool(np.isfinite(loss) and loss < initial)
        if verbose:
            print(f"calibration trial {trial}: eta={eta:.6g} loss={loss:.4f}"
                  + ("" if ok else " (worse)"))
        if ok:
            remaining -= 1
        if np.isfinite(loss) and loss < best_loss:
            best_loss, best_eta = loss, eta
        if decreasing:
            eta /= rate
        elif ok and remaining > 0:
            eta *= rate
        else:
            decreasing, remaining = True, candidates
            eta = trials[0][0] / rate
        trial += 1
        if trial >= max_trials:
            break
    if verbose:
        print(f"calibration: eta0 = {best_eta:.6g}")
    return best_eta, trials


def minimize_sgd(trainer, gradient, epoch_batches, max_epochs, period=10, delta=1e-6,
                 callback=None, verbose=False, checkpoint=None, state=()):
    """Epochs of `sgd_epoch` with CRFsuite's stopping rule (`improvement_stalled`: the loss
    improved by less than ``delta``, relative, over the last ``period`` epochs), keeping
    the weights of the epoch of lowest loss, as CRFsuite does.

    Parameters
    ----------
    trainer : SGDTrainer
    gradient : callable
    epoch_batches : callable
        ``() -> list of ndarray of int``: the batches of the next epoch, in order.
    max_epochs : int
    callback : callable, default=None
        ``callback(epoch, trainer) -> dict`` of extra log entries (dev scores).
    checkpoint : object, default=None
        Where the run's state is written after the epochs it says are due and its result
        when it ends (see `minimize_lbfgs`): a run that finds its own record there (the
        same settings and the same state of the trainer and of ``state``) returns the
        recorded result or goes on from the recorded epoch.
    state : sequence, default=()
        Other objects whose state the epochs change (the random generator that orders the
        batches, the data's running estimates, what the callback keeps), each with
        ``checkpoint_state()``, ``restore_checkpoint_state(state)`` and
        ``checkpoint_spec(weights)`` (``weights``: the spec of `SGDTrainer.vector`).

    Returns
    -------
    OptimizeResult
        ``x``: the weights of the epoch of lowest loss (`SGDTrainer.vector`; the start's
        if the first epoch's loss is not finite), ``fun`` that loss. Its log entries hold
        ``num``, ``loss``, ``feature_norm``, ``learning_rate``, ``time``, plus what the
        callback returned; its ``termination_condition`` is ``'converged'``,
        ``'max_iter'`` or ``'not_finite'``.
    """
    return run_iterations(_SGDStep(trainer, gradient, epoch_batches, state), max_epochs,
                          period=period, delta=delta,
                          settings=dict(max_epochs=max_epochs, period=period, delta=delta),
                          callback=callback, verbose=verbose, checkpoint=checkpoint,
                          unit="epoch")


class _SGDStep:
    """An epoch of SGD (a step of `run_iterations`), and the epoch of lowest loss."""

    def __init__(self, trainer, gradient, epoch_batches, state):
        self.trainer, self.gradient, self.epoch_batches = trainer, gradient, epoch_batches
        self.holders = (trainer, *state)
        self.start = None  # the holders' states are the run's start
        # The start's weights are the result if the first epoch's loss is not finite.
        self.initial = trainer.vector()
        self.lowest = BestIterate()  # of the negated loss: the lowest loss wins
        self.weights_spec = Array(self.initial.shape)

    @property
    def iterate(self):
        return self.trainer

    def __call__(self):
        loss = _epoch_loss(self.trainer, self.gradient, self.epoch_batches())
        return {"loss": float(loss),
                "feature_norm": float(np.sqrt(self.trainer.squared_norm())),
                "learning_rate": self.trainer.learning_rate()}

    def stop(self, entry):
        """Stop on a loss that is not finite (the trainer goes back to the kept weights,
        finite ones); otherwise keep the epoch if its loss is the lowest."""
        if not np.isfinite(entry["loss"]):
            self.trainer.set_vector(self.result()[0])
            return "not_finite", "the loss is not finite"
        self.lowest.offer(entry["num"], -entry["loss"], self.trainer.vector())
        return None

    def result(self):
        if self.lowest.weights is None:
            return self.initial, np.inf
        return self.lowest.weights, -self.lowest.score

    def checkpoint_state(self):
        return {"lowest": self.lowest.checkpoint_state()}

    def restore_checkpoint_state(self, state):
        self.lowest.restore_checkpoint_state(state["lowest"])

    def checkpoint_spec(self):
        return {"lowest": self.lowest.checkpoint_spec(self.weights_spec)}
