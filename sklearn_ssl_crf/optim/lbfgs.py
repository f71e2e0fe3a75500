"""L-BFGS with OWL-QN for L1, in NumPy, run by the optimisers' loop (`run_iterations`).

SciPy's L-BFGS-B spends about 0.2 s per iteration of its own on a million parameters (dense
CRF weights are that many), more than our whole objective evaluation; this two-loop
implementation works in preallocated buffers and costs a few dozen vector operations per
iteration. L1 is handled as CRFsuite does, by OWL-QN (Andrew & Gao, 2007): the quasi-Newton
direction is taken from the pseudo-gradient and steps never cross an orthant.
"""

import numpy as np
from scipy.linalg.blas import daxpy

from ._run import StopTraining, run_iterations
from .specs import Array, Integer, Number

__all__ = ["minimize_lbfgs", "CurvatureHistory", "pseudo_gradient"]

# Armijo constant of the backtracking line search, and its shrink factor.
_SUFFICIENT_DECREASE = 1e-4
_BACKTRACK = 0.5


def pseudo_gradient(x, gradient, c1):
    """Pseudo-gradient of ``f(x) + c1 * ||x||_1`` given the gradient of ``f`` (OWL-QN).

    Where ``x_i != 0`` it is the gradient; at ``x_i = 0`` it is the one-sided derivative that
    points downhill, or 0 when neither side descends.
    """
    if c1 == 0:
        return gradient
    right = gradient + c1
    left = gradient - c1
    return np.where(x > 0, right, np.where(x < 0, left, np.where(
        right < 0, right, np.where(left > 0, left, 0.0))))


def minimize_lbfgs(
    fun,
    x0,
    *,
    c1=0.0,
    max_iterations=None,
    epsilon=1e-5,
    period=10,
    delta=1e-5,
    num_memories=6,
    max_linesearch=20,
    callback=None,
    verbose=False,
    checkpoint=None,
):
    """Minimise ``fun(x) + c1 * ||x||_1`` with L-BFGS (OWL-QN when ``c1 > 0``).

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)`` of the smooth part (the L2 penalty belongs here).
        If it has an attribute ``lbfgs_history`` (a `CurvatureHistory` of ``num_memories``
        pairs of this size), the run starts from those correction pairs and adds its own:
        a warm start for a sequence of objectives that differ by linear terms only (the
        same Hessian, so the same pairs), such as the M-steps of an EM.
    x0 : ndarray of shape (n,)
    c1 : float, default=0.0
        L1 strength.
    max_iterations : int or None, default=None
        None: run until a stopping rule fires.
    epsilon : float, default=1e-5
        Stop when ``||g|| / max(1, ||x||) < epsilon`` (CRFsuite's rule; ``g`` is the
        pseudo-gradient when ``c1 > 0``).
    period, delta : int, float
        Stop when the objective improved by less than ``delta`` (relative) over the last
        ``period`` iterations (CRFsuite's rule; ``period=0`` switches it off).
    num_memories : int, default=6
        Number of correction pairs kept (CRFsuite's default).
    max_linesearch : int, default=20
        Backtracking steps before giving up on an iteration.
    callback : callable, default=None
        ``callback(iteration, x) -> dict or None`` after every iteration; the dict is merged
        into the iteration's log entry. Raising `StopTraining` ends the optimisation with its
        termination condition and message, and merges its dict ``entry``.
    verbose : bool, default=False
        Print one line per iteration.
    checkpoint : object, default=None
        A store of run records (``key(*parts)``, ``read(key, finished, running)``,
        ``write(key, record)``, ``due(iteration)`` and ``say(message)``; the package's
        ``_checkpoints.RunCheckpoints``), where the run's state is written after the
        iterations it says are due, and its result when it ends. A run that finds its own
        record there (the same start, objective, settings, memory and callback state)
        returns the recorded result, or goes on from the recorded iteration: the result
        of a run never interrupted. A callback with state gives it as
        ``callback.checkpoint_state()`` (a dict of arrays and JSON values), takes it back
        with ``callback.restore_checkpoint_state``, and says what a record of it must be
        with ``callback.checkpoint_spec(weights)`` (``weights``: the spec of the run's
        weights; see ``_checkpoints.check``).

    Returns
    -------
    OptimizeResult
        Its log entries hold ``num``, ``loss``, ``feature_norm``, ``error_norm``,
        ``active_features``, ``n_evaluations``, ``step``, ``time``, plus what the callback
        returned; its ``termination_condition`` is ``'converged'``, ``'max_iter'``,
        ``'line_search_failed'``, or the reason of a callback's `StopTraining`.
    """
    history = getattr(fun, "lbfgs_history", None)
    warm = history is not None  # a memory shared with other runs
    if not warm:
        history = CurvatureHistory(num_memories, np.size(x0))
    elif history.s.shape != (num_memories, np.size(x0)):
        raise ValueError(f"fun.lbfgs_history holds {history.s.shape[0]} pairs of size "
                         f"{history.s.shape[1]}; this run needs {num_memories} of size "
                         f"{np.size(x0)}")
    step = _LBFGSStep(fun, x0, c1, history, max_linesearch, epsilon)
    settings = dict(c1=c1, max_iterations=max_iterations, epsilon=epsilon, period=period,
                    delta=delta, num_memories=num_memories, max_linesearch=max_linesearch)
    return run_iterations(
        step, np.inf if max_iterations is None else max_iterations, period=period,
        delta=delta, settings=settings, callback=callback, verbose=verbose,
        checkpoint=checkpoint, carried=history if warm else None)


class _LBFGSStep:
    """An L-BFGS iteration (a step of `run_iterations`): the direction from the memory
    (OWL-QN's projection with L1), the line search, the memory's update; and CRFsuite's
    gradient-norm rule."""

    def __init__(self, fun, x0, c1, history, max_linesearch, epsilon):
        self.fun, self.c1, self.history = fun, c1, history
        self.max_linesearch, self.epsilon = max_linesearch, epsilon
        self.x = np.array(x0, dtype=np.float64)
        self.value, self.gradient = fun(self.x)
        self.loss = _penalised(self.value, self.x, c1)
        self.n_evaluations = 1
        self.steepest = pseudo_gradient(self.x, self.gradient, c1)
        self.start = (self.x, self.value, self.gradient)
        self.holders = ()
        self.weights_spec = Array((self.x.size,))

    @property
    def iterate(self):
        return self.x

    def __call__(self):
        steepest = self.steepest
        if not np.any(steepest):
            raise StopTraining("converged", "zero gradient", {})
        direction = self.history.apply_inverse_hessian(steepest)
        np.negative(direction, out=direction)
        if self.c1:
            # OWL-QN: keep only components that descend along the pseudo-gradient.
            direction[direction * steepest >= 0] = 0.0
        step = 1.0 if self.history.size else 1.0 / np.linalg.norm(steepest)
        found, evaluations = _line_search(self.fun, self.x, direction, steepest, self.loss,
                                          self.c1, step, self.max_linesearch)
        self.n_evaluations += evaluations
        if found is None:
            raise StopTraining("line_search_failed",
                               "the line search failed to decrease the objective", {})
        x, value, gradient, self.loss, step = found
        self.history.push(x, self.x, gradient, self.gradient)
        self.x, self.value, self.gradient = x, value, gradient
        self.steepest = pseudo_gradient(x, gradient, self.c1)
        return {
            "loss": float(self.loss),
            "feature_norm": float(np.linalg.norm(x)),
            "error_norm": float(np.linalg.norm(self.steepest)),
            "active_features": int(np.count_nonzero(x)),
            "n_evaluations": self.n_evaluations,
            "step": float(step),
        }

    def stop(self, entry):
        """CRFsuite's gradient rule: ``||g|| / max(1, ||x||) < epsilon``."""
        if entry["error_norm"] / max(1.0, entry["feature_norm"]) < self.epsilon:
            return "converged", "gradient norm below epsilon"
        return None

    def result(self):
        return self.x, self.loss

    def checkpoint_state(self):
        """Where the run is: the iterate, its objective, and the memory."""
        return {"x": self.x, "value": self.value, "gradient": self.gradient,
                "loss": self.loss, "n_evaluations": self.n_evaluations,
                "history": self.history.checkpoint_state()}

    def restore_checkpoint_state(self, state):
        self.x, self.value, self.gradient = state["x"], state["value"], state["gradient"]
        self.loss, self.n_evaluations = state["loss"], state["n_evaluations"]
        self.history.restore_checkpoint_state(state["history"])
        self.steepest = pseudo_gradient(self.x, self.gradient, self.c1)

    def checkpoint_spec(self):
        weights = self.weights_spec
        return {"x": weights, "value": Number(), "gradient": weights, "loss": Number(),
                "n_evaluations": Integer(1), "history": self.history.checkpoint_spec()}


def _penalised(value, x, c1):
    """The objective with its L1 term (without one, no pass over the weights)."""
    return value + c1 * np.abs(x).sum() if c1 else value


def _line_search(fun, x, direction, steepest, loss, c1, step, max_linesearch):
    """Backtrack from ``step`` along ``direction`` until the objective decreases enough:
    ``((x, value, gradient, loss, step), evaluations)`` there, or ``(None, evaluations)``
    after ``max_linesearch`` tries. With L1 (OWL-QN) the step stays in the orthant of
    ``x`` (or, where ``x`` is 0, of the descent), and the slope is taken along the step
    actually made."""
    orthant = np.where(x != 0, np.sign(x), -np.sign(steepest)) if c1 else None
    unit_slope = None if c1 else steepest @ direction
    for evaluations in range(1, max_linesearch + 1):
        x_new = daxpy(direction, x.copy(), a=step)
        if c1:
            x_new[np.sign(x_new) != orthant] = 0.0
        value_new, gradient_new = fun(x_new)
        loss_new = _penalised(value_new, x_new, c1)
        slope = steepest @ x_new - steepest @ x if c1 else step * unit_slope
        if np.isfinite(loss_new) and loss_new <= loss + _SUFFICIENT_DECREASE * slope:
            return (x_new, value_new, gradient_new, loss_new, step), evaluations
        step *= _BACKTRACK
    return None, max_linesearch


class CurvatureHistory:
    """The last ``m`` correction pairs (s, y) of L-BFGS in preallocated ring buffers.

    Parameters
    ----------
    m : int
        Number of pairs kept (``num_memories``).
    n : int
        Size of the parameter vector.
    """

    def __init__(self, m, n):
        # Zeros, not garbage, in the slots not yet filled: a checkpoint holds them, and its
        # reader refuses non-finite values.
        self.s = np.zeros((m, n))
        self.y = np.zeros((m, n))
        self.rho = np.zeros(m)
        self.m, self.size, self.newest = m, 0, -1
        self._alpha = np.empty(m)
        # The checkpoint record of the run that left these pairs: shared by runs, they are
        # a state `run_iterations` carries from one run to the next.
        self.record_key = None

    def push(self, x_new, x, gradient_new, gradient):
        """Store ``s = x_new - x`` and ``y = gradient_new - gradient``."""
        slot = (self.newest + 1) % self.m
        s = np.subtract(x_new, x, out=self.s[slot])
        y = np.subtract(gradient_new, gradient, out=self.y[slot])
        curvature = s @ y
        # Without positive curvature the update would break positive definiteness; skip it.
        # The slot held the oldest pair when the buffer was full: that pair is gone.
        if curvature <= 1e-10 * np.sqrt((s @ s) * (y @ y)):
            self.size = min(self.size, self.m - 1)
            return
        self.newest = slot
        self.rho[slot] = 1.0 / curvature
        self.size = min(self.size + 1, self.m)

    def checkpoint_state(self):
        """The ring buffers as they are (not copied: a checkpoint writes them at once)."""
        return {"s": self.s, "y": self.y, "rho": self.rho, "size": self.size,
                "newest": self.newest}

    def restore_checkpoint_state(self, state):
        self.s[...], self.y[...], self.rho[...] = state["s"], state["y"], state["rho"]
        self.size, self.newest = state["size"], state["newest"]

    def checkpoint_spec(self):
        """What a checkpoint of this memory holds (see `checkpoint_state`)."""
        m, n = self.s.shape
        return {"s": Array((m, n)), "y": Array((m, n)), "rho": Array((m,)),
                "size": Integer(0, m), "newest": Integer(-1, m - 1)}

    def apply_inverse_hessian(self, gradient):
        """Two-loop recursion: the L-BFGS approximation of ``H^-1 @ gradient``."""
        q = gradient.copy()
        if not self.size:
            return q
        order = [(self.newest - k) % self.m for k in range(self.size)]
        # daxpy updates q in place: no temporary the size of the parameters.
        for i in order:
            self._alpha[i] = self.rho[i] * (self.s[i] @ q)
            daxpy(self.y[i], q, a=-self._alpha[i])
        newest_y = self.y[self.newest]
        q *= 1.0 / (self.rho[self.newest] * (newest_y @ newest_y))
        for i in reversed(order):
            beta = self.rho[i] * (self.y[i] @ q)
            daxpy(self.s[i], q, a=self._alpha[i] - beta)
        return q
