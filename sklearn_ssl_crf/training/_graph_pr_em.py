"""The EM of graph-based posterior regularisation (He, Gillenwater & Taskar 2013) for
`GraphPRCRF`: E-steps that project the chain's posterior onto the graph's constraint by
exponentiated gradient, and M-steps on the labelled likelihood plus q's expected
log-likelihood (the terms are `objective.PosteriorRegularizationTerms`).
"""

from dataclasses import dataclass

import numpy as np

from ..optim import CurvatureHistory
from ._records import Phase

# Halvings of an E-step's step size before it is taken as converged.
_MAX_HALVINGS = 10


@dataclass
class EMSettings:
    """The EM's settings (`GraphPRCRF`'s parameters of the same names): the cap on each
    M-step's L-BFGS iterations and its memory, the E-step's steps, initial step size and
    relative tolerance, the EM's tolerance on J's rise, the L1 strength that J includes,
    and whether to print a line per iteration."""

    mstep_iterations: int
    num_memories: int
    estep_iterations: int
    estep_eta: float
    estep_tol: float
    em_tol: float
    c1: float = 0.0
    verbose: bool = False


class ExpectationMaximisation:
    """The EM loop of `GraphPRCRF` on one fold.

    Parameters
    ----------
    terms : PosteriorRegularizationTerms
        The objective's terms on the fold's data at the run's strength.
    settings : EMSettings
    minimize : callable
        ``minimize(objective, theta, max_iterations) -> result`` (``x``, ``fun``,
        ``n_iter``, ``log``): the M-step's L-BFGS, at ``settings.c1``.
    """

    def __init__(self, terms, settings, minimize):
        self.terms, self.settings, self.minimize = terms, settings, minimize
        self.history = CurvatureHistory(settings.num_memories, terms.layout.size)

    def run(self, theta, max_iterations, iterates):
        """EM from the supervised optimum ``theta`` for at most ``max_iterations``
        iterations; ``iterates`` (`Iterates`) records each (0: the start) with q, and may
        end the run. Returns a `Phase` whose state is q."""
        terms, settings, weight = self.terms, self.settings, self.terms.weight
        if not terms.unlabeled_data.chunks:
            start, _ = iterates.record(0, theta)
            return Phase(theta, [dict(start, phase="EM", em_iteration=0)], 0)
        log = []
        start_terms = terms.likelihood_terms(theta)
        log_z = start_terms.log_z
        # q = p_theta: no offsets (one row per group of the penalty, a vertex, and label).
        q = terms.auxiliary(theta, log_z,
                            np.zeros((terms.penalty.n_groups, terms.penalty.n_labels),
                                     dtype=terms.table_dtype))
        likelihood = -(start_terms.value + settings.c1 * np.abs(theta).sum())
        objective = start_objective = likelihood - weight * q.objective
        # A stop at the start is no stop: the EM runs at least one iteration.
        scores, _ = iterates.record(0, theta, q)
        log.append(self._entry(0, objective, likelihood, q, scores,
                               estep_iterations=0, estep_objective=float(q.objective)))
        # With no weight on the unlabelled data theta cannot move: one E-step gives q.
        n_iterations = max_iterations if weight > 0 else min(max_iterations, 1)
        reason, message = "max_iter", f"stopped at its cap of {n_iterations} EM iterations"
        n_iter = 0
        for iteration in range(1, n_iterations + 1):
            new_q, estep_iterations = self._e_step(theta, log_z, q, iteration == 1)
            # The new E-step may fail to beat the previous q at this theta (too few steps):
            # then keeping that q is the better E-step, and J cannot decrease.
            kept_previous = bool(new_q.objective > q.objective)
            if not kept_previous:
                q = new_q
            new_q = None  # a worse E-step's q is not held through the M-step
            if q.features is None:
                terms.expected_features(q)
            estep_objective = q.objective
            if weight > 0:
                result = self.minimize(self._m_step_objective(q), theta,
                                       settings.mstep_iterations)
                log += [dict(entry, phase="M-step", em_iteration=iteration)
                        for entry in result.log]
                theta, m_step_loss, m_iterations = result.x, result.fun, result.n_iter
            else:
                m_step_loss, m_iterations = -likelihood, 0
            # The M-step's last evaluation was at theta: its log-partition is known.
            log_z = terms.likelihood_terms(theta).log_z
            expected_log_p = q.features @ theta - log_z
            likelihood = -m_step_loss - weight * expected_log_p
            q = terms.compared_at(q, expected_log_p)
            previous, objective = objective, likelihood - weight * q.objective
            n_iter = iteration
            scores, stopped = iterates.record(iteration, theta, q)
            log.append(self._entry(iteration, objective, likelihood, q, scores,
                                   estep_iterations=estep_iterations,
                                   estep_objective=float(estep_objective),
                                   kept_previous_q=kept_previous,
                                   mstep_iterations=m_iterations))
            if stopped is not None:
                reason, message = stopped
                break
            if objective - previous <= settings.em_tol * (objective - start_objective):
                reason, message = "converged", "J's rise below em_tol of its total"
                break
        return Phase(theta, log, n_iter, reason, message, q)

    def _entry(self, iteration, objective, likelihood, q, scores, **extra):
        entry = dict(phase="EM", em_iteration=iteration, objective=float(objective),
                     likelihood=float(likelihood), kl=float(q.kl), penalty=float(q.penalty),
                     **extra, **scores)
        if self.settings.verbose:
            print(f"EM {iteration:3d}  J={objective:.6g}  L={likelihood:.6g}  "
                  f"KL={q.kl:.4g}  h={q.penalty:.4g}"
                  + "".join(f"  {key}={value:.4f}" for key, value in scores.items()),
                  flush=True)
        return entry

    # -- E-step --------------------------------------------------------------------------

    def _e_step(self, theta, log_z, q, at_theta):
        """Exponentiated-gradient steps on q's offsets at theta, from q itself
        (``at_theta``: q was evaluated at theta) or from q's node scores, vertex-averaged,
        moved to theta; the objective never rises. The start and each rejected trial are
        let go as soon as they are passed, and a q it leaves (the one it returns too)
        keeps no gradient: their (vertices x labels) tables are gigabytes on a large
        graph."""
        # Python floats: a NumPy scalar would make the single-precision tables' step double.
        settings, lam, terms = self.settings, float(self.terms.lam), self.terms
        current = q if at_theta else terms.auxiliary(
            theta, log_z, q.offsets - terms.unary_shift(q.theta, theta))
        n_steps = 0
        for k in range(settings.estep_iterations):
            eta = float(settings.estep_eta) / (1 + k)
            for _ in range(_MAX_HALVINGS + 1):
                trial = terms.auxiliary(
                    theta, log_z,
                    (1 - eta) * current.offsets - eta * lam * current.penalty_gradient)
                if trial.objective <= current.objective:
                    break
                trial = None
                eta /= 2
            else:
                break  # no step lowers the objective: converged up to rounding
            n_steps += 1
            change = current.objective - trial.objective
            current.penalty_gradient = None  # only the current q steps along it
            current = trial
            if change <= settings.estep_tol * abs(current.objective):
                break
        current.penalty_gradient = None
        return current, n_steps

    # -- M-step --------------------------------------------------------------------------

    def _m_step_objective(self, q):
        """The M-step's objective, sharing the run's `CurvatureHistory` (its
        ``lbfgs_history``): only its linear term changes from one M-step to the next, so
        each starts where the last one's quasi-Newton model ended."""
        objective = self.terms.m_step_objective(q)
        objective.lbfgs_history = self.history
        return objective
