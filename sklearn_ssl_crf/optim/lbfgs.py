"""L-BFGS driver with CRFsuite's L1 handling and stopping rules, on top of SciPy's L-BFGS-B."""

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, minimize

__all__ = ["minimize_lbfgs", "LBFGSResult", "l1_split_objective"]

_NO_LIMIT = 2**31 - 1


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
        ``active_features``, ``n_evaluations``, ``time``, plus what the callback returned.
    termination_condition : str
    """

    x: np.ndarray
    fun: float
    n_iter: int
    log: list = field(default_factory=list)
    termination_condition: str = ""


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
    callback=None,
    verbose=False,
):
    """Minimise ``fun(x) + c1 * ||x||_1`` with L-BFGS.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)`` of the smooth part (the L2 penalty belongs here).
    x0 : ndarray of shape (n,)
    c1 : float, default=0.0
        L1 strength. SciPy has no OWL-QN, so ``x = x_plus - x_minus`` with both parts bounded
        below by 0 under L-BFGS-B; the penalty is then linear and smooth.
    max_iterations : int or None, default=None
        None: run until a stopping rule fires.
    epsilon : float, default=1e-5
        Stop when ``||g|| / max(1, ||x||) < epsilon`` (CRFsuite's rule; ``g`` is the
        projected gradient when ``c1 > 0``).
    period, delta : int, float
        Stop when the objective improved by less than ``delta`` (relative) over the last
        ``period`` iterations (CRFsuite's rule).
    num_memories : int, default=6
        Number of correction pairs kept (CRFsuite's default).
    callback : callable, default=None
        ``callback(iteration, x) -> dict or None`` after every iteration; the dict is merged
        into the iteration's log entry. Raising ``StopIteration`` ends the optimisation.
    verbose : bool, default=False
        Print one line per iteration.

    Returns
    -------
    LBFGSResult
    """
    x0 = np.asarray(x0, dtype=np.float64)
    n = x0.size
    split = c1 > 0
    last = {}
    n_evaluations = [0]
    smooth = l1_split_objective(fun, n, c1) if split else fun

    def objective(z):
        value, grad = smooth(z)
        n_evaluations[0] += 1
        last["z"], last["grad"] = z, grad
        return value, grad

    if split:
        z0 = np.concatenate([np.maximum(x0, 0), np.maximum(-x0, 0)])
        bounds = Bounds(np.zeros(2 * n), np.full(2 * n, np.inf))
    else:
        z0, bounds = x0, None

    log = []
    losses = []
    started = time.perf_counter()
    termination = []

    def on_iteration(intermediate_result):
        z, loss = intermediate_result.x, float(intermediate_result.fun)
        x = z[:n] - z[n:] if split else z
        grad = last["grad"] if np.array_equal(last["z"], z) else objective(z)[1]
        if split:
            # Projected gradient: components pushing a variable below its bound are 0.
            grad = np.where((z > 0) | (grad < 0), grad, 0.0)
        feature_norm = float(np.linalg.norm(x))
        error_norm = float(np.linalg.norm(grad))
        entry = {
            "num": len(log) + 1,
            "loss": loss,
            "feature_norm": feature_norm,
            "error_norm": error_norm,
            "active_features": int(np.count_nonzero(x)),
            "n_evaluations": n_evaluations[0],
            "time": time.perf_counter() - started,
        }
        stop_reason = None
        if callback is not None:
            try:
                entry.update(callback(entry["num"], x) or {})
            except StopIteration as stop:
                stop_reason = str(stop) or "stopped by callback"
        log.append(entry)
        losses.append(loss)
        if verbose:
            print(_format_entry(entry), flush=True)
        if stop_reason is None and error_norm / max(1.0, feature_norm) < epsilon:
            stop_reason = "converged: gradient norm below epsilon"
        if stop_reason is None and period and len(losses) > period:
            previous = losses[-1 - period]
            if (previous - loss) / max(abs(loss), 1e-300) < delta:
                stop_reason = f"converged: improvement over {period} iterations below delta"
        if stop_reason is not None:
            termination.append(stop_reason)
            raise StopIteration

    maxiter = _NO_LIMIT if max_iterations is None else int(max_iterations)
    result = minimize(
        objective,
        z0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        callback=on_iteration,
        # Our stopping rules replace SciPy's; its own tolerances are switched off.
        options={"maxiter": maxiter, "maxfun": _NO_LIMIT, "maxcor": num_memories,
                 "ftol": 0.0, "gtol": 0.0},
    )
    z = result.x
    x = z[:n] - z[n:] if split else z
    if termination:
        reason = termination[0]
    elif len(log) >= maxiter:
        reason = "max_iterations reached"
    else:
        reason = f"line search ended: {result.message}"
    return LBFGSResult(x=x, fun=float(result.fun), n_iter=len(log), log=log,
                       termination_condition=reason)


def l1_split_objective(fun, n, c1):
    """``fun(x) + c1 * ||x||_1`` as a smooth function of ``z = [x_plus, x_minus] >= 0``."""

    def objective(z):
        value, grad = fun(z[:n] - z[n:])
        return value + c1 * z.sum(), np.concatenate([grad + c1, c1 - grad])

    return objective


def _format_entry(entry):
    extra = "".join(
        f" {key}={value:.4f}" for key, value in entry.items()
        if key not in {"num", "loss", "feature_norm", "error_norm", "active_features",
                       "n_evaluations", "time"} and isinstance(value, float)
    )
    return (
        f"iter {entry['num']:4d}  loss={entry['loss']:.6g}  |x|={entry['feature_norm']:.4g}"
        f"  |g|={entry['error_norm']:.4g}  evals={entry['n_evaluations']}"
        f"  time={entry['time']:.2f}s{extra}"
    )
