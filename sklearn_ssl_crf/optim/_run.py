"""The one run loop of the optimisers: iterations of a step (an L-BFGS iteration, an SGD
epoch) with their log, CRFsuite's stopping rule, the callback, checkpoints, and one result.

A step is an object with:

- ``step()``: make one iteration and return its log fields (``loss`` among them), or raise
  `StopTraining` when it cannot (no log entry then);
- ``iterate``: what the callback is given after an iteration (the weights, a trainer);
- ``stop(entry)``: its own stopping rule, ``(reason, message)`` or None, called after
  every iteration (a callback's stop included: it may also take note of the iteration);
- ``result()``: ``(x, fun)``, the run's weights as a vector and their objective;
- ``start``: what the run starts from, for its checkpoint key (None: nothing beyond
  ``holders``' states);
- ``holders``: objects whose state every record of the run holds (``checkpoint_state()``,
  ``restore_checkpoint_state(state)``, ``checkpoint_spec(weights)``);
- ``weights_spec``: the spec of ``x`` (`sklearn_ssl_crf.optim.specs`);
- ``checkpoint_state()``, ``restore_checkpoint_state(state)``, ``checkpoint_spec()``: what
  only a running record holds (where the run is).
"""

import time
from dataclasses import dataclass, field

import numpy as np

from .specs import Entries, Integer, ListOf, Number

__all__ = ["OptimizeResult", "StopTraining", "run_iterations", "improvement_stalled"]

#: A log entry as a checkpoint holds it: a resumed run reads its time and loss.
_LOG_ENTRY = Entries(time=Number(), loss=Number(finite=False))


class StopTraining(Exception):
    """Raised by a callback (an iteration's scorer) to end a run.

    Parameters
    ----------
    reason : str
        Why, as a token (``'no_improvement'``): the run's ``termination_condition``.
    message : str
        The same in words.
    entry : dict
        What the callback has for the iteration's log entry (its scores).
    """

    def __init__(self, reason, message, entry):
        super().__init__(reason, message, entry)
        self.reason, self.message, self.entry = reason, message, entry


@dataclass
class OptimizeResult:
    """Outcome of an optimiser's run (`minimize_lbfgs`, `minimize_sgd`).

    Attributes
    ----------
    x : ndarray
        The weights the run returns: its last iterate (L-BFGS) or its epoch of lowest loss
        (SGD, as CRFsuite).
    fun : float
        Objective at ``x`` (L1 penalty included; inf for SGD weights of no finite epoch).
    n_iter : int
        Iterations (epochs) run.
    log : list of dict
        One entry per iteration: ``num``, the step's fields (``loss`` among them),
        ``time`` (seconds since the run started, a resumed run's earlier part included),
        and what the callback returned.
    termination_condition : str
        Why it stopped, as a token: ``'converged'``, ``'max_iter'``, the step's own
        (``'line_search_failed'``, ``'not_finite'``) or the reason of a callback's
        `StopTraining`.
    message : str
        The same in words.
    """

    x: np.ndarray
    fun: float
    n_iter: int
    log: list = field(default_factory=list)
    termination_condition: str = ""
    message: str = ""


def improvement_stalled(log, period, delta):
    """CRFsuite's rule: whether the loss improved by less than ``delta``, relative to the
    current loss, over the last ``period`` iterations of ``log`` (``period=0``: never).

    The denominator is ``max(|loss|, 1e-300)``: the loss itself when it is positive (as
    CRFsuite divides), and a negative or zero loss neither flips the test nor divides by
    zero."""
    if not period or len(log) <= period:
        return False
    previous, loss = log[-1 - period]["loss"], log[-1]["loss"]
    return (previous - loss) / max(abs(loss), 1e-300) < delta


def run_iterations(step, max_iterations, *, period, delta, settings, callback=None,
                   verbose=False, checkpoint=None, carried=None, unit="iteration"):
    """Iterations of ``step`` until a stopping rule fires (see the module docstring for
    what a step is).

    After each iteration: its log entry, the ``callback`` (whose `StopTraining` comes
    first), the step's own rule, then CRFsuite's (`improvement_stalled`), then a
    checkpoint if one is due.

    Parameters
    ----------
    step : object
    max_iterations : int or float
        Cap on the iterations (``np.inf``: none).
    period, delta : int, float
        Of `improvement_stalled`.
    settings : dict
        The run's settings (JSON values): part of its checkpoint key.
    callback : callable, default=None
        ``callback(iteration, step.iterate) -> dict or None`` after every iteration; the
        dict is merged into the iteration's log entry. Raising `StopTraining` ends the run
        with its reason and message, its ``entry`` merged. A callback with
        ``checkpoint_state`` is one of the run's holders.
    verbose : bool, default=False
        Print one line per iteration.
    checkpoint : object, default=None
        A store of run records (``key(*parts)``, ``read``, ``write``, ``remove``, ``due``,
        ``say``; `sklearn_ssl_crf.training.RunCheckpoints`). A run that finds its own record
        there (the same start, settings, holders' states and carried state) returns the
        recorded result, or goes on from the recorded iteration: the result of a run never
        interrupted.
    carried : object, default=None
        A state the run shares with the runs that follow (L-BFGS's memory over an EM's
        M-steps), with ``record_key`` (the key of the run that left it, None at first),
        ``checkpoint_state()``, ``restore_checkpoint_state(state)`` and
        ``checkpoint_spec()``; a finished run's record keeps it in a part of its own, the
        newest run of a chain only.
    unit : str, default='iteration'
        What an iteration is called in messages.

    Returns
    -------
    OptimizeResult
    """
    holders = list(step.holders)
    if getattr(callback, "checkpoint_state", None) is not None:
        holders.append(callback)
    log, started = [], time.perf_counter()
    if checkpoint is not None:
        key = checkpoint.key(settings, step.start,
                             None if carried is None else carried.record_key,
                             _states(holders))
        record = _read_run(checkpoint, key, step, holders, carried)
        if record is not None and record["finished"]:
            checkpoint.say(f"run {key} read ({record['result']['n_iter']} {unit}s)")
            return OptimizeResult(**record["result"])
        if record is not None:
            log = record["log"]
            started -= log[-1]["time"]
            checkpoint.say(f"run {key} resumed at {unit} {len(log)}")
    reason = message = None
    while reason is None and len(log) < max_iterations:
        try:
            fields = step()
        except StopTraining as stop:
            reason, message = stop.reason, stop.message
            break
        entry = {"num": len(log) + 1, **fields, "time": time.perf_counter() - started}
        if callback is not None:
            try:
                entry.update(callback(entry["num"], step.iterate) or {})
            except StopTraining as stop:
                reason, message = stop.reason, stop.message
                entry.update(stop.entry)
        log.append(entry)
        if verbose:
            print(_log_line(entry, max_iterations), flush=True)
        # The step's rule runs even after the callback's stop: it also takes note of the
        # iteration (SGD's epoch of lowest loss).
        own = step.stop(entry)
        if reason is None:
            reason, message = own or _stalled(log, period, delta, unit)
        if (reason is None and checkpoint is not None and len(log) < max_iterations
                and checkpoint.due(len(log))):
            checkpoint.write(key, dict(finished=False, log=log, step=step.checkpoint_state(),
                                       holders=_states(holders)))
    if reason is None:
        reason, message = "max_iter", f"stopped at its cap of {len(log)} {unit}s"
    x, fun = step.result()
    result = OptimizeResult(x=x, fun=float(fun), n_iter=len(log), log=log,
                            termination_condition=reason, message=message)
    if checkpoint is not None:
        _record_result(checkpoint, key, result, holders, carried)
    return result


def _stalled(log, period, delta, unit):
    """CRFsuite's rule as a stop: ``(reason, message)``, or ``(None, None)``."""
    if improvement_stalled(log, period, delta):
        return "converged", f"improvement over {period} {unit}s below delta"
    return None, None


def _states(holders):
    return [holder.checkpoint_state() for holder in holders]


def _read_run(checkpoint, key, step, holders, carried):
    """The record filed under ``key`` (None if there is none), with the holders, the
    step (a running record) and the carried state (a finished one) put back in the state
    it holds."""
    weights = step.weights_spec
    holder_specs = [holder.checkpoint_spec(weights) for holder in holders]
    record = checkpoint.read(
        key,
        finished=dict(result=dict(x=weights, fun=Number(finite=False), n_iter=Integer(0),
                                  log=ListOf(_LOG_ENTRY), termination_condition=str,
                                  message=str),
                      holders=holder_specs),
        running=dict(log=ListOf(_LOG_ENTRY, 1), step=step.checkpoint_spec(),
                     holders=holder_specs))
    if record is None:
        return None
    for holder, state in zip(holders, record["holders"]):
        holder.restore_checkpoint_state(state)
    if not record["finished"]:
        step.restore_checkpoint_state(record["step"])
    elif carried is not None:
        # A finished run's carried state is kept only while it is the newest of its chain
        # (`_record_result`); without it, the next run starts from what it had.
        carried.record_key = key
        kept = checkpoint.read(key, dict(carried=carried.checkpoint_spec()),
                               part="carried")
        if kept is not None:
            carried.restore_checkpoint_state(kept["carried"])
    return record


def _record_result(checkpoint, key, result, holders, carried):
    """Write a finished run's record. A state carried to the runs that follow is kept, as
    a part of its own, by the newest run of that chain only: a resumed fit reads every
    earlier run and continues from the newest, so the earlier ones' parts are removed
    (after the new one is written: the carried state is never missing)."""
    checkpoint.write(key, dict(finished=True, result=vars(result), holders=_states(holders)))
    if carried is None:
        return
    checkpoint.write(key, dict(finished=True, carried=carried.checkpoint_state()),
                     part="carried")
    previous, carried.record_key = carried.record_key, key
    if previous is not None and previous != key:
        checkpoint.remove(previous, part="carried")


def _log_line(entry, max_iterations):
    """The verbose line of an iteration's log entry."""
    fields = "".join(f"  {name}={value:.6g}" if isinstance(value, float) else
                     f"  {name}={value}" for name, value in entry.items()
                     if name not in ("num", "time"))
    line = f"iter {entry['num']:4d}{fields}  time={entry['time']:.2f}s"
    # A stopping rule may end the run sooner, so the time left is only a bound, and
    # unknown without a cap on the iterations.
    if np.isfinite(max_iterations):
        left = entry["time"] / entry["num"] * (max_iterations - entry["num"])
        line += f"  at most {left:.0f}s left"
    return line
