"""The terms of graph-based posterior regularisation (He, Gillenwater & Taskar 2013),
``J(theta, q) = L(theta) - weight * [KL(q || p_theta) + lam * h(q)]``: the auxiliary
distribution q with its KL divergence and graph penalty (what the E-step moves), and the
M-step's objective in theta. The EM that alternates them is `training`'s.
"""

from dataclasses import dataclass, replace

import numpy as np

from ..potentials import marginal_unit
from ..utils import single_threaded_blas
from ._penalties import _BLOCK_ROWS
from ._potentials import log_partition


@dataclass
class Auxiliary:
    """The auxiliary distribution q: potentials ``X W + offsets[vertex]`` and transitions of
    ``theta``, with what was computed of it."""

    theta: np.ndarray
    offsets: np.ndarray        # (groups x labels), ``table_dtype``
    kl: float                  # KL(q || p_theta'), theta' the last theta it was compared to
    penalty: float             # h
    objective: float           # kl + lam * h, at theta'

    penalty_gradient: np.ndarray  # the E-step's, ``table_dtype``: None once q is left
    features: np.ndarray = None        # E_q[F], packed as theta
    expected_log_q: float = None       # E_q[log q]


@dataclass
class _LikelihoodTerms:
    """At ``theta``: the supervised objective's ``value`` and ``gradient``, and the
    unlabeled sequences' summed ``log_z`` and ``expected_features`` (packed as theta)."""

    theta: np.ndarray
    value: float
    gradient: np.ndarray
    log_z: float
    expected_features: np.ndarray


class PosteriorRegularizationTerms:
    """graph-PR's terms over the chunks of one fit.

    Parameters
    ----------
    supervised : callable
        ``theta -> (value, gradient)`` of minus the labelled log-likelihood plus the L2
        penalty (`penalised_negative_log_likelihood`).
    unlabeled_data : ChunkedSequences
        The unlabeled sequences, their tokens grouped by graph vertex.
    layout : WeightLayout
        How theta packs the weights.
    penalty : GraphLaplacianPenalty
        ``h``, over the unlabeled tokens' vertices.
    lam, weight : float
        The strength of ``h`` in q's objective, and of q's terms in ``J``.
    """

    # q's (vertices x labels) tables, its offsets and the E-step's step direction, are held
    # in single precision: on a graph of millions of vertices each is gigabytes. q is what
    # its rounded offsets define, so its KL and h are still its own; sums stay double.
    table_dtype = np.float32

    def __init__(self, supervised, unlabeled_data, layout, penalty, lam, weight):
        self.supervised, self.unlabeled_data, self.layout = supervised, unlabeled_data, layout
        self.penalty, self.lam, self.weight = penalty, lam, weight
        self._last_terms = None
        tokens = penalty.token_groups[penalty.token_groups >= 0]
        counts = np.bincount(tokens, minlength=penalty.n_groups).astype(np.float64)
        # q's marginal sums by vertex are added exactly, in the finest unit they allow.
        self.marginal_unit = marginal_unit(counts)
        # 1 / (unlabeled tokens of each vertex), 0 for none: averages of the E-step's start.
        self.inverse_token_counts = np.divide(1.0, counts, out=np.zeros_like(counts),
                                              where=counts > 0)[:, None]

    # -- q and its objective, KL + lam h (the E-step's) ------------------------------------

    def auxiliary(self, theta, log_z, offsets):
        """q with these offsets (held as ``table_dtype``) at theta, whose log-partition is
        ``log_z``: KL(q || p_theta), h and its gradient."""
        offsets = np.asarray(offsets, dtype=self.table_dtype)
        state, transition = self.layout.unpack(theta)
        with single_threaded_blas():
            log_z_q, sums = self.unlabeled_data.sum(_chunk_auxiliary_statistics, state,
                                                     transition, offsets,
                                                     self.marginal_unit, False)
        sums = sums.take_array()
        # E_q[log q - log p] = sum_t mu_t . offsets[vertex of t] - log Z_q + log Z_p.
        kl = _dot(offsets, sums) - log_z_q + log_z
        penalty, gradient = self.penalty.value_and_gradient(sums, overwrite_sums=True,
                                                            dtype=self.table_dtype)
        return Auxiliary(theta, offsets, kl, penalty, kl + self.lam * penalty, gradient)

    def expected_features(self, q):
        """Sets q's expected features and ``E_q[log q]``."""
        state, transition = self.layout.unpack(q.theta)
        with single_threaded_blas():
            log_z_q, sums, d_state, d_transition = self.unlabeled_data.sum(
                _chunk_auxiliary_statistics, state, transition, q.offsets,
                self.marginal_unit, True)
            sums = sums.take_array()
        q.features = self.layout.pack(d_state, d_transition)
        q.expected_log_q = float(q.features @ q.theta + _dot(q.offsets, sums) - log_z_q)

    def compared_at(self, q, expected_log_p):
        """q (a copy, so that a q kept as an iterate's is not changed) with its KL and
        objective against a new theta, given ``E_q[log p_theta]``: the start the next
        E-step must beat."""
        kl = q.expected_log_q - expected_log_p
        return replace(q, kl=kl, objective=kl + self.lam * q.penalty)

    def unary_shift(self, old_theta, new_theta):
        """Per vertex, the mean over its unlabeled tokens of the change of theta's unary
        potentials from ``old_theta`` to ``new_theta`` (zero for vertices without any), as
        ``table_dtype``."""
        difference = self.layout.unpack(new_theta)[0] - self.layout.unpack(old_theta)[0]
        with single_threaded_blas():
            sums = self.unlabeled_data.sum(_chunk_unary_group_sums, difference)[0].toarray()
        sums *= self.inverse_token_counts
        return sums.astype(self.table_dtype)

    # -- the M-step's objective in theta -------------------------------------------------

    def m_step_objective(self, q):
        """``theta -> (value, gradient)`` of ``-L(theta) - weight * sum E_q[log p_theta]``.

        Only the linear term ``-weight <E_q[F], theta>`` changes from one M-step to the
        next, so the Hessian stays the same (the EM's L-BFGS keeps its correction pairs)."""
        weight, features = self.weight, q.features

        def objective(theta):
            terms = self.likelihood_terms(theta)
            gradient = np.subtract(terms.expected_features, features)
            if weight != 1:
                gradient *= weight
            gradient += terms.gradient
            return terms.value + weight * (terms.log_z - features @ theta), gradient

        return objective

    def likelihood_terms(self, theta):
        """What the M-step's objective needs of theta, whatever q is: the supervised part's
        value and gradient, and the unlabeled sequences' log-partition and expected
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


def _dot(table, sums):
    """``sum(table * sums)`` of a single-precision table and a double one, a block of rows
    at a time (a double copy of the whole table would be gigabytes)."""
    return float(sum(np.vdot(table[start:start + _BLOCK_ROWS], sums[start:start + _BLOCK_ROWS])
                     for start in range(0, table.shape[0], _BLOCK_ROWS)))


def auxiliary_unary(chunk, state, offsets):
    """q's unary potentials of a chunk's packed tokens: theta's ``X W`` plus the offsets of
    each token's vertex."""
    return chunk.unary(state) + chunk.group_rows(offsets)


def _chunk_auxiliary_statistics(chunk, workspace, state, transition, offsets, unit,
                                features):
    """A chunk's ``sum log Z_q`` and q's marginal sums per vertex (exact `MarginalSums` in
    units of ``unit``: the chunks' are added into one table); with ``features``, also q's
    expected state and transition features.

    Nothing is kept with the chunk between calls: theta's unary potentials are made again
    at each (a few percent of an E-step's time) and the E-step's last q takes a second
    forward-backward for its expected features (one pass in about ten), where keeping
    every chunk's (tokens x labels) potentials and marginals would cost gigabytes on
    millions of sentences."""
    log_z, node_marginals, edge_marginal_sum = log_partition(
        chunk, auxiliary_unary(chunk, state, offsets), transition, workspace)
    sums = chunk.marginal_sums(node_marginals, unit)
    if not features:
        return log_z, sums
    return log_z, sums, chunk.weight_gradient(node_marginals), edge_marginal_sum


def _chunk_unary_group_sums(chunk, workspace, state):
    """A chunk's unary potentials under ``state`` summed per vertex (the unary potentials
    are linear in the state weights, so a difference of weights gives the difference)."""
    return (chunk.group_sums(chunk.unary(state)),)


def _chunk_log_partition(chunk, workspace, state, transition):
    """A chunk's ``sum log Z`` and expected features under theta."""
    log_z, node_marginals, edge_marginal_sum = log_partition(chunk, chunk.unary(state),
                                                             transition, workspace)
    return log_z, chunk.weight_gradient(node_marginals), edge_marginal_sum
