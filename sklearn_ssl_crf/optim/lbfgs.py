"""L-BFGS with OWL-QN for L1, and CRFsuite's stopping rules, in NumPy.

SciPy's L-BFGS-B spends about 0.2 s per iteration of its own on a million parameters (dense
CRF weights are that many), more than our whole objective evaluation; this two-loop
implementation works in preallocated buffers and costs a few dozen vector operations per
iteration. L1 is handled as CRFsuite does, by OWL-QN (Andrew & Gao, 2007): the quasi-Newton
direction is taken from the pseudo-gradient and steps never cross an orthant.
"""

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg.blas import daxpy

from ._run import StopTraining
from .specs import Array, Entries, Integer, ListOf, Number

__all__ = ["minimize_lbfgs", "LBFGSResult", "CurvatureHistory", "pseudo_gradient"]

# Armijo constant of the backtracking line search, and its shrink factor.
_SUFFICIENT_DECREASE = 1e-4
_BACKTRACK = 0.5
#: A log entry as a checkpoint holds it: a resumed run reads its time and loss.
_LOG_ENTRY = Entries(time=Number(), loss=Number())


@dataclass
class LBFGSResult:
    """Outcome of `minimize_lbfgs`.

    Attributes
    ----------
    x : ndarray
        Final parameters.
    fun : float
        Objective at ``x`` (L1 penalty included).
    n_iter : int
    log : list of dict
        One entry per iteration: ``num``, ``loss``, ``feature_norm``, ``error_norm``,
        ``active_features``, ``n_evaluations``, ``step``, ``time``, plus what the callback
        returned.
    termination_condition : str
        Why it stopped, as a token: ``'converged'``, ``'max_iter'``,
        ``'line_search_failed'``, or the reason of a callback's `StopTraining`.
    message : str
        The same in words.
    """

    x: np.ndarray
    fun: float
    n_iter: int
    log: list = field(default_factory=list)
    termination_condition: str = ""
    message: str = ""


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
    LBFGSResult
    """
    x = np.array(x0, dtype=np.float64)
    n = x.size
    history = getattr(fun, "lbfgs_history", None)
    warm = history is not None  # a memory shared with other runs
    if not warm:
        history = CurvatureHistory(num_memories, n)
    elif history.s.shape != (num_memories, n):
        raise ValueError(f"fun.lbfgs_history holds {history.s.shape[0]} pairs of size "
                         f"{history.s.shape[1]}; this run needs {num_memories} of size {n}")
    value, gradient = fun(x)
    loss = _penalised(value, x, c1)
    n_evaluations = 1
    log, started = [], time.perf_counter()
    reason = message = None
    if checkpoint is not None:
        settings = dict(c1=c1, max_iterations=max_iterations, epsilon=epsilon, period=period,
                        delta=delta, num_memories=num_memories, max_linesearch=max_linesearch)
        key, record = _read_run(checkpoint, x, value, gradient, settings, history, warm,
                                callback)
        if record is not None and record["finished"]:
            checkpoint.say(f"run {key} read ({record['result']['n_iter']} iterations)")
            return LBFGSResult(**record["result"])
        if record is not None:
            x, value, gradient, loss = (record["x"], record["value"], record["gradient"],
                                        record["loss"])
            n_evaluations, log = record["n_evaluations"], record["log"]
            started -= log[-1]["time"]
            checkpoint.say(f"run {key} resumed at iteration {len(log)}")
    max_iterations = np.inf if max_iterations is None else max_iterations

    steepest = pseudo_gradient(x, gradient, c1)
    while len(log) < max_iterations:
        if not np.any(steepest):
            reason, message = "converged", "zero gradient"
            break
        direction = history.apply_inverse_hessian(steepest)
        np.negative(direction, out=direction)
        if c1:
            # OWL-QN: keep only components that descend along the pseudo-gradient.
            direction[direction * steepest >= 0] = 0.0
        step = 1.0 if history.size else 1.0 / np.linalg.norm(steepest)
        found, evaluations = _line_search(fun, x, direction, steepest, loss, c1, step,
                                          max_linesearch)
        n_evaluations += evaluations
        if found is None:
            reason, message = ("line_search_failed",
                               "the line search failed to decrease the objective")
            break
        x_new, value_new, gradient_new, loss_new, step = found
        history.push(x_new, x, gradient_new, gradient)
        x, value, gradient, loss = x_new, value_new, gradient_new, loss_new
        steepest = pseudo_gradient(x, gradient, c1)

        entry = _log_entry(len(log) + 1, loss, x, steepest, n_evaluations, step,
                           time.perf_counter() - started)
        if callback is not None:
            try:
                entry.update(callback(entry["num"], x) or {})
            except StopTraining as stop:
                reason, message = stop.reason, stop.message
                entry.update(stop.entry)
        log.append(entry)
        if verbose:
            print(_format_entry(entry, max_iterations), flush=True)
        if reason is not None:
            break
        if checkpoint is not None and checkpoint.due(len(log)):
            checkpoint.write(key, dict(
                finished=False, x=x, value=value, gradient=gradient, loss=loss,
                n_evaluations=n_evaluations, log=log, history=history.checkpoint_state(),
                callback=_callback_state(callback)))
        stop = _stopping_rule(log, epsilon, period, delta)
        if stop is not None:
            reason, message = stop
            break
    if reason is None:
        reason, message = "max_iter", f"stopped at its cap of {len(log)} iterations"
    result = LBFGSResult(x=x, fun=float(loss), n_iter=len(log), log=log,
                         termination_condition=reason, message=message)
    if checkpoint is not None:
        _record_result(checkpoint, key, result, history if warm else None, callback)
    return result


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


def _log_entry(number, loss, x, steepest, n_evaluations, step, seconds):
    """An iteration's entry of ``training_log_``."""
    return {
        "num": number,
        "loss": float(loss),
        "feature_norm": float(np.linalg.norm(x)),
        "error_norm": float(np.linalg.norm(steepest)),
        "active_features": int(np.count_nonzero(x)),
        "n_evaluations": n_evaluations,
        "step": float(step),
        "time": seconds,
    }


def _stopping_rule(log, epsilon, period, delta):
    """CRFsuite's rules on the log so far: ``(reason, message)`` when one fires, else None."""
    entry = log[-1]
    if entry["error_norm"] / max(1.0, entry["feature_norm"]) < epsilon:
        return "converged", "gradient norm below epsilon"
    if period and len(log) > period:
        previous, loss = log[-1 - period]["loss"], entry["loss"]
        if (previous - loss) / max(abs(loss), 1e-300) < delta:
            return "converged", f"improvement over {period} iterations below delta"
    return None


def _read_run(checkpoint, x, value, gradient, settings, history, warm, callback):
    """The record of this run in ``checkpoint`` (None if there is none) and its key; the
    memory and the callback are put back in the state the record holds. A shared memory is
    named by the record of the run that left it (see `_record_result`): the runs of a chain
    are keyed one after another."""
    key = checkpoint.key(x, value, gradient, settings,
                         history.record_key if warm else None, _callback_state(callback))
    weights = Array((x.size,))
    callback_spec = _callback_spec(callback, weights)
    record = checkpoint.read(
        key,
        finished=dict(result=dict(x=weights, fun=Number(), n_iter=Integer(0),
                                  log=ListOf(_LOG_ENTRY), termination_condition=str,
                                  message=str),
                      callback=callback_spec),
        running=dict(x=weights, value=Number(), gradient=weights, loss=Number(),
                     n_evaluations=Integer(1), log=ListOf(_LOG_ENTRY, 1),
                     history=history.checkpoint_spec(), callback=callback_spec))
    if record is not None:
        _restore(checkpoint, record, history, callback, warm, key)
    return key, record


def _callback_state(callback):
    state = getattr(callback, "checkpoint_state", None)
    return None if state is None else state()


def _callback_spec(callback, weights):
    """What a record holds of ``callback``'s state (None: it has none)."""
    return None if getattr(callback, "checkpoint_state", None) is None else (
        callback.checkpoint_spec(weights))


def _restore(checkpoint, record, history, callback, warm, key):
    """Put the memory and the callback back in the state ``record`` (filed under ``key``)
    holds. A finished run that shares its memory with the next ones (``warm``) keeps it
    in a part of its own, only while it is the newest of its chain (`_record_result`)."""
    if record["callback"] is not None:
        callback.restore_checkpoint_state(record["callback"])
    if record["finished"] and warm:
        history.record_key = key
        record = checkpoint.read(key, dict(history=history.checkpoint_spec()),
                                 part="memory") or record
    if record.get("history") is not None:
        history.restore_checkpoint_state(record["history"])


def _record_result(checkpoint, key, result, shared_history, callback):
    """Write a finished run's record. A memory shared with the runs that follow (an EM's
    M-steps) is kept, as a part of its own, by the newest run of that chain only: a
    resumed fit reads every earlier run and continues from the newest, so the earlier
    ones' parts are removed (after the new one is written: the memory is never missing)."""
    checkpoint.write(key, dict(finished=True, result=vars(result),
                               callback=_callback_state(callback)))
    if shared_history is None:
        return
    checkpoint.write(key, dict(finished=True, history=shared_history.checkpoint_state()),
                     part="memory")
    previous, shared_history.record_key = shared_history.record_key, key
    if previous is not None and previous != key:
        checkpoint.remove(previous, part="memory")


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
        # The checkpoint record of the run that left these pairs (`minimize_lbfgs`).
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


def _format_entry(entry, max_iterations):
    standard = {"num", "loss", "feature_norm", "error_norm", "active_features",
                "n_evaluations", "step", "time"}
    extra = "".join(f" {key}={value:.4f}" for key, value in entry.items()
                    if key not in standard and isinstance(value, float))
    # A stopping rule may end the run sooner, so the time left is only a bound, and
    # unknown without a cap on the iterations.
    if np.isfinite(max_iterations):
        left = entry["time"] / entry["num"] * (max_iterations - entry["num"])
        extra += f"  at most {left:.0f}s left"
    return (
        f"iter {entry['num']:4d}  loss={entry['loss']:.6g}  |x|={entry['feature_norm']:.4g}"
        f"  |g|={entry['error_norm']:.4g}  evals={entry['n_evaluations']}"
        f"  time={entry['time']:.2f}s{extra}"
    )
