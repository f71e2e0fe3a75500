"""The EM of graph-based posterior regularisation (He, Gillenwater & Taskar 2013) for
`GraphPRCRF`: the E-step's projection q of the chain's posterior onto the graph's
constraint by exponentiated gradient, and the M-step on the labelled likelihood plus q's
expected log-likelihood.
"""

import itertools
import uuid
from dataclasses import dataclass, replace

import numpy as np

from ..objective import log_partition
from ..optim import CurvatureHistory
from ..utils import single_threaded_blas
from ._records import Phase

# Halvings of an E-step's step size before it is taken as converged.
_MAX_HALVINGS = 10


@dataclass
class _Auxiliary:
    """The auxiliary distribution q: potentials ``X W + offsets[vertex]`` and transitions of
    ``theta``, with what was computed of it."""

    theta: np.ndarray
    offsets: np.ndarray
    kl: float                  # KL(q || p_theta'), theta' the last theta it was compared to
    penalty: float             # h
    objective: float           # kl + lam * h, at theta'

    penalty_gradient: np.ndarray
    key: str = None                    # under which the chunks keep q's marginals
    features: np.ndarray = None        # E_q[F], packed as theta
    expected_log_q: float = None       # E_q[log q]


@dataclass
class _LikelihoodTerms:
    """At ``theta``: the supervised objective's ``value`` and ``gradient``, and the
    unlabelled sequences' summed ``log_z`` and ``expected_features`` (packed as theta)."""

    theta: np.ndarray
    value: float
    gradient: np.ndarray
    log_z: float
    expected_features: np.ndarray


class ExpectationMaximisation:
    """The EM loop of `GraphPRCRF` on one fold (`_training.Fold`) at strength ``lam``."""

    def __init__(self, model, fold, lam):
        self.model, self.fold, self.lam = model, fold, lam
        self.penalty, self.layout = fold.extra["penalty"], fold.layout
        self.labelled_data, self.unlabeled_data = fold.labelled, fold.extra["unlabeled"]
        self.weight = model.unlabeled_weight
        self.supervised = model._supervised_objective(fold)
        self._last_terms = None
        self.history = CurvatureHistory(model.num_memories, self.layout.size)
        # Keys of the work the chunks keep between evaluations: unique to this run.
        self._keys = (f"{uuid.uuid4().hex}-{k}" for k in itertools.count())
        self._keyed_theta = self._theta_key = None
        self.n_labels = len(model.classes_)
        tokens = self.penalty.token_groups[self.penalty.token_groups >= 0]
        counts = np.bincount(tokens, minlength=self.penalty.n_groups).astype(np.float64)
        # 1 / (unlabelled tokens of each vertex), 0 for none: averages of the E-step's start.
        self.inverse_token_counts = np.divide(1.0, counts, out=np.zeros_like(counts),
                                              where=counts > 0)[:, None]

    def run(self, theta, max_iterations, iterates):
        """EM from the supervised optimum ``theta`` for at most ``max_iterations``
        iterations; ``iterates`` (`Iterates`) records each (0: the start) with q, and may
        end the run. Returns a `Phase` whose state is q."""
        model, weight = self.model, self.weight
        if not self.unlabeled_data.chunks:
            start, _ = iterates.record(0, theta)
            return Phase(theta, [dict(start, phase="EM", em_iteration=0)], 0)
        log = []
        terms = self._likelihood_terms(theta)
        log_z = terms.log_z
        q = self._evaluate(theta, log_z, np.zeros((self.penalty.n_groups, self.n_labels)))
        likelihood = -(terms.value + self.fold.c1 * np.abs(theta).sum())
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
            # Iteration 1 starts where q already is (evaluated at this theta for entry 0);
            # later ones from q's previous node scores, vertex-averaged, at the new theta.
            start = q if iteration == 1 else self._evaluate(
                theta, log_z, q.offsets - self._unary_shift(q.theta, theta))
            new_q, estep_iterations = self._e_step(theta, log_z, start)
            # The new E-step may fail to beat the previous q at this theta (too few steps):
            # then keeping that q is the better E-step, and J cannot decrease.
            kept_previous = bool(new_q.objective > q.objective)
            if not kept_previous:
                q = new_q
            if q.features is None:
                self._expected_features(q)
            estep_objective = q.objective
            if weight > 0:
                result = model._minimize(self._m_step_objective(q), theta,
                                         max_iterations=model.mstep_iterations,
                                         c1=self.fold.c1)
                log += [dict(entry, phase="M-step", em_iteration=iteration)
                        for entry in result.log]
                theta, m_step_loss, m_iterations = result.x, result.fun, result.n_iter
            else:
                m_step_loss, m_iterations = -likelihood, 0
            # The M-step's last evaluation was at theta: its log-partition is known.
            log_z = self._likelihood_terms(theta).log_z
            expected_log_p = q.features @ theta - log_z
            likelihood = -m_step_loss - weight * expected_log_p
            # q at the new theta: the start the next E-step must beat. A copy, so that a q
            # kept as an iterate's is not changed by later iterations.
            q = replace(q)
            q.kl = q.expected_log_q - expected_log_p
            q.objective = q.kl + self.lam * q.penalty
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
            if objective - previous <= model.em_tol * (objective - start_objective):
                reason, message = "converged", "J's rise below em_tol of its total"
                break
        return Phase(theta, log, n_iter, reason, message, q)

    def _entry(self, iteration, objective, likelihood, q, scores, **extra):
        entry = dict(phase="EM", em_iteration=iteration, objective=float(objective),
                     likelihood=float(likelihood), kl=float(q.kl), penalty=float(q.penalty),
                     **extra, **scores)
        if self.model.verbose:
            print(f"EM {iteration:3d}  J={objective:.6g}  L={likelihood:.6g}  "
                  f"KL={q.kl:.4g}  h={q.penalty:.4g}"
                  + "".join(f"  {key}={value:.4f}" for key, value in scores.items()),
                  flush=True)
        return entry

    # -- E-step --------------------------------------------------------------------------

    def _evaluate(self, theta, log_z, offsets):
        """q with these offsets at theta, whose log-partition is ``log_z``: KL(q ||
        p_theta), h and its gradient."""
        state, transition = self.layout.unpack(theta)
        keys = (self._key_of(theta), next(self._keys))
        with single_threaded_blas():
            log_z_q, sums = self.unlabeled_data.sum(_chunk_auxiliary_statistics, state,
                                                     transition, offsets, keys, False)
        penalty, gradient = self.penalty.value_and_gradient(sums)
        # E_q[log q - log p] = sum_t mu_t . offsets[vertex of t] - log Z_q + log Z_p.
        kl = float(np.vdot(offsets, sums)) - log_z_q + log_z
        return _Auxiliary(theta, offsets, kl, penalty, kl + self.lam * penalty, gradient,
                          keys[1])

    def _key_of(self, theta):
        """The key of theta's unary potentials kept by the chunks: new for a new theta (the
        EM replaces theta, never changes it in place)."""
        if theta is not self._keyed_theta:
            self._keyed_theta, self._theta_key = theta, next(self._keys)
        return self._theta_key

    def _e_step(self, theta, log_z, current):
        """Exponentiated-gradient steps on q's offsets from ``current`` (evaluated at
        theta); the objective never rises."""
        model = self.model
        n_steps = 0
        for k in range(model.estep_iterations):
            eta = model.estep_eta / (1 + k)
            for _ in range(_MAX_HALVINGS + 1):
                trial = self._evaluate(
                    theta, log_z,
                    (1 - eta) * current.offsets - eta * self.lam * current.penalty_gradient)
                if trial.objective <= current.objective:
                    break
                eta /= 2
            else:
                break  # no step lowers the objective: converged up to rounding
            n_steps += 1
            change = current.objective - trial.objective
            current = trial
            if change <= model.estep_tol * abs(current.objective):
                break
        return current, n_steps

    def _expected_features(self, q):
        """Sets q's expected features and ``E_q[log q]``."""
        state, transition = self.layout.unpack(q.theta)
        keys = (self._key_of(q.theta), q.key)
        with single_threaded_blas():
            log_z_q, sums, d_state, d_transition = self.unlabeled_data.sum(
                _chunk_auxiliary_statistics, state, transition, q.offsets, keys, True)
            # The E-step is over: what the chunks kept of it is not needed again.
            self.unlabeled_data.map(_chunk_forget)
        q.features = self.layout.pack(d_state, d_transition)
        q.expected_log_q = float(q.features @ q.theta + np.vdot(q.offsets, sums) - log_z_q)

    # -- M-step --------------------------------------------------------------------------

    def _m_step_objective(self, q):
        """``theta -> (value, gradient)`` of ``-L(theta) - weight * sum E_q[log p_theta]``.

        Only the linear term ``-weight <E_q[F], theta>`` changes from one M-step to the
        next, so the Hessian and L-BFGS's correction pairs stay valid: every M-step of
        the run shares one `CurvatureHistory` (its ``lbfgs_history``), each starting
        where the last one's quasi-Newton model ended."""
        weight, features = self.weight, q.features

        def objective(theta):
            terms = self._likelihood_terms(theta)
            gradient = np.subtract(terms.expected_features, features)
            if weight != 1:
                gradient *= weight
            gradient += terms.gradient
            return terms.value + weight * (terms.log_z - features @ theta), gradient

        objective.lbfgs_history = self.history
        return objective

    def _likelihood_terms(self, theta):
        """What the M-step's objective needs of theta, whatever q is: the supervised part's
        value and gradient, and the unlabelled sequences' log-partition and expected
        features. The last theta's are kept: the EM's log-partition after an M-step and the
        next M-step's first evaluation are at the M-step's last theta."""
        last = self._last_terms
        if last is not None and np.array_equal(last.theta, theta):
            return last
        value, gradient = self.supervised(theta)
        state, transition = self.layout.unpack(theta)
        with single_threaded_blas():
            log_z, d_state, d_transition = self.unlabeled_data.sum(
                _chunk_log_partition, state, transition)
        self._last_terms = _LikelihoodTerms(np.array(theta), value, gradient, log_z,
                                            self.layout.pack(d_state, d_transition))
        return self._last_terms

    def _unary_shift(self, old_theta, new_theta):
        """Per vertex, the mean over its unlabelled tokens of the change of theta's unary
        potentials from ``old_theta`` to ``new_theta`` (zero for vertices without any)."""
        difference = self.layout.unpack(new_theta)[0] - self.layout.unpack(old_theta)[0]
        with single_threaded_blas():
            sums = self.unlabeled_data.sum(_chunk_unary_group_sums, difference)[0]
        return sums * self.inverse_token_counts


def _chunk_auxiliary_statistics(chunk, workspace, state, transition, offsets, keys,
                                features):
    """A chunk's ``sum log Z_q`` and q's marginal sums per vertex; with ``features``, also
    q's expected state and transition features.

    ``keys``: theta's and q's. The chunk keeps theta's unary potentials, which every
    evaluation of an E-step shares, and q's marginals, from which the expected features
    of the E-step's last q are taken without a second forward-backward (`keep`; another
    process may hold the chunk next time, and then computes them again)."""
    theta_key, q_key = keys
    kept = chunk.recall("q", q_key)
    if kept is None:
        unary = chunk.recall("unary", theta_key)
        if unary is None:
            unary = chunk.keep("unary", theta_key, chunk.unary(state))
        log_z, node_marginals, edge_marginal_sum = log_partition(
            chunk, unary + chunk.group_matrix.T @ offsets, transition, workspace)
        kept = chunk.keep("q", q_key, (log_z, np.asarray(chunk.group_matrix @ node_marginals),
                                       node_marginals.copy(), edge_marginal_sum.copy()))
    log_z, sums, node_marginals, edge_marginal_sum = kept
    if not features:
        return log_z, sums.copy()
    return log_z, sums.copy(), chunk.weight_gradient(node_marginals), edge_marginal_sum.copy()


def _chunk_forget(chunk, workspace):
    chunk.forget()


def _chunk_unary_group_sums(chunk, workspace, state):
    """A chunk's unary potentials under ``state`` summed per vertex (the unary potentials
    are linear in the state weights, so a difference of weights gives the difference)."""
    return (np.asarray(chunk.group_matrix @ chunk.unary(state)),)


def _chunk_log_partition(chunk, workspace, state, transition):
    """A chunk's ``sum log Z`` and expected features under theta."""
    log_z, node_marginals, edge_marginal_sum = log_partition(chunk, chunk.unary(state),
                                                             transition, workspace)
    return log_z, chunk.weight_gradient(node_marginals), edge_marginal_sum
