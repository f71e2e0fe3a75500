"""Linear-chain inference: log Z, marginals and Viterbi, for one chain or a batch.

Batched arrays keep the position axis first: ``unary`` has shape (length, batch, n_labels), so
each step of the recursions reads one contiguous (batch, n_labels) slab and the only Python
loop runs over positions. All chains of a batch have the same length (see `LengthBuckets`).

The score of a label sequence y is ``sum_t unary[t, y_t] + sum_{t>=1} transition[y_{t-1}, y_t]``.
"""

import numpy as np
from scipy.special import logsumexp

__all__ = ["forward_backward", "viterbi", "chain_lattice", "viterbi_batch"]


def forward_backward(unary, transition):
    """Log partition function and marginals of one chain.

    Parameters
    ----------
    unary : array-like of shape (n, S)
        Per-position label potentials.
    transition : array-like of shape (S, S)
        ``transition[i, j]`` is the potential of label ``i`` followed by label ``j``.

    Returns
    -------
    log_z : float
        Log of the sum over all ``S**n`` label sequences of exp(score).
    node_marginals : ndarray of shape (n, S)
        ``p(y_t = s | x)``.
    edge_marginals : ndarray of shape (n - 1, S, S)
        ``p(y_{t-1} = i, y_t = j | x)`` at index ``t - 1``.

    Examples
    --------
    >>> import numpy as np
    >>> log_z, node, edge = forward_backward(np.zeros((3, 2)), np.zeros((2, 2)))
    >>> round(log_z, 6) == round(3 * np.log(2), 6), node[0].tolist(), edge.shape
    (True, [0.5, 0.5], (2, 2, 2))
    """
    unary, transition = check_potentials(unary, transition)
    lattice = chain_lattice(unary[:, None, :], transition)
    return (
        float(lattice.log_z[0]),
        lattice.node_marginals()[:, 0],
        lattice.edge_marginals()[:, 0],
    )


def viterbi(unary, transition):
    """Highest-scoring label sequence of one chain.

    Parameters
    ----------
    unary : array-like of shape (n, S)
    transition : array-like of shape (S, S)

    Returns
    -------
    path : ndarray of int of shape (n,)
        Label indices of the best sequence (ties go to the lowest label index).
    best_score : float
        Its score.

    Examples
    --------
    >>> import numpy as np
    >>> path, score = viterbi(np.array([[1.0, 0.0], [0.0, 0.5]]), np.array([[0.0, -2.0], [0.0, 0.0]]))
    >>> path.tolist(), score
    ([0, 0], 1.0)
    """
    unary, transition = check_potentials(unary, transition)
    paths, scores = viterbi_batch(unary[:, None, :], transition)
    return paths[:, 0], float(scores[0])


def check_potentials(unary, transition):
    """Validate single-chain potentials and return them as float64 arrays."""
    unary = np.asarray(unary, dtype=np.float64)
    transition = np.asarray(transition, dtype=np.float64)
    if unary.ndim != 2 or unary.shape[0] == 0 or unary.shape[1] == 0:
        raise ValueError(f"unary must have shape (n, S) with n, S >= 1, got {unary.shape}")
    n_labels = unary.shape[1]
    if transition.shape != (n_labels, n_labels):
        raise ValueError(
            f"transition must have shape ({n_labels}, {n_labels}) to match unary, "
            f"got {transition.shape}"
        )
    if not (np.isfinite(unary).all() and np.isfinite(transition).all()):
        raise ValueError("potentials must be finite")
    return unary, transition


def chain_lattice(unary, transition):
    """Forward-backward over a batch of equal-length chains.

    Parameters
    ----------
    unary : ndarray of shape (L, B, S)
    transition : ndarray of shape (S, S)

    Returns
    -------
    lattice : ScaledLattice or LogSpaceLattice
        Exposes ``log_z`` (B,), ``node_marginals()`` (L, B, S), ``edge_marginal_sum()`` (S, S)
        summed over positions and chains, and ``edge_marginals()`` (L - 1, B, S, S).
        The scaled (probability-space) recursion is used unless some transition is so much
        weaker than the strongest one that ``exp`` underflows; then the log-space one is.
    """
    lattice = ScaledLattice(unary, transition)
    if lattice.is_exact:
        return lattice
    return LogSpaceLattice(unary, transition)


class ScaledLattice:
    """Forward-backward in probability space, renormalised at every position.

    ``alpha[t]`` is p(y_t | x_1..t) up to the potentials' shift, ``scale[t]`` its normaliser,
    and ``beta[t]`` is scaled so that ``alpha[t] * beta[t]`` is the node marginal. Several
    times faster than log-sum-exp and exact as long as no normaliser underflows.
    """

    def __init__(self, unary, transition):
        length, batch, n_labels = unary.shape
        row_max = unary.max(axis=2, keepdims=True)
        emission = np.exp(unary - row_max)
        transition_max = transition.max()
        exp_transition = np.exp(transition - transition_max)

        alpha = np.empty_like(emission)
        scale = np.empty((length, batch))
        current = emission[0]
        # A zero normaliser means exp underflowed; it is detected below, not warned about.
        with np.errstate(divide="ignore", invalid="ignore"):
            for t in range(length):
                if t:
                    current = alpha[t - 1] @ exp_transition
                    current *= emission[t]
                scale[t] = current.sum(axis=1)
                np.divide(current, scale[t][:, None], out=alpha[t])

        self.is_exact = bool(np.all(scale > 0) and np.all(np.isfinite(scale)))
        if not self.is_exact:
            return
        # weighted[t - 1] = emission[t] * beta[t] / scale[t]: the factor shared by the
        # backward step and the edge marginals, so it is computed once.
        beta = np.empty_like(emission)
        weighted = np.empty((length - 1, batch, n_labels))
        beta[-1] = 1.0
        for t in range(length - 1, 0, -1):
            np.multiply(emission[t], beta[t], out=weighted[t - 1])
            weighted[t - 1] /= scale[t][:, None]
            np.matmul(weighted[t - 1], exp_transition.T, out=beta[t - 1])

        self.alpha, self.beta, self.weighted = alpha, beta, weighted
        self.exp_transition = exp_transition
        self.log_z = (
            np.log(scale).sum(axis=0) + row_max.sum(axis=(0, 2)) + (length - 1) * transition_max
        )

    def node_marginals(self):
        return self.alpha * self.beta

    def edge_marginal_sum(self):
        n_labels = self.alpha.shape[2]
        if self.alpha.shape[0] == 1:
            return np.zeros((n_labels, n_labels))
        # sum_t alpha[t-1]^T weighted[t-1], as one BLAS product over all positions and chains.
        prev = self.alpha[:-1].reshape(-1, n_labels)
        return (prev.T @ self.weighted.reshape(-1, n_labels)) * self.exp_transition

    def edge_marginals(self):
        return (
            self.alpha[:-1, :, :, None]
            * self.exp_transition
            * self.weighted[:, :, None, :]
        )


class LogSpaceLattice:
    """Forward-backward with log-sum-exp: slower, but exact for any finite potentials."""

    def __init__(self, unary, transition):
        length = unary.shape[0]
        log_alpha = np.empty_like(unary)
        log_beta = np.empty_like(unary)
        log_alpha[0] = unary[0]
        for t in range(1, length):
            log_alpha[t] = logsumexp(log_alpha[t - 1][:, :, None] + transition, axis=1) + unary[t]
        log_beta[-1] = 0.0
        for t in range(length - 1, 0, -1):
            log_beta[t - 1] = logsumexp(transition + (unary[t] + log_beta[t])[:, None, :], axis=2)
        self.log_z = logsumexp(log_alpha[-1], axis=1)
        self.unary, self.transition = unary, transition
        self.log_alpha, self.log_beta = log_alpha, log_beta

    def node_marginals(self):
        return np.exp(self.log_alpha + self.log_beta - self.log_z[:, None])

    def edge_marginal_sum(self):
        return self.edge_marginals().sum(axis=(0, 1))

    def edge_marginals(self):
        return np.exp(
            self.log_alpha[:-1, :, :, None]
            + self.transition
            + (self.unary[1:] + self.log_beta[1:])[:, :, None, :]
            - self.log_z[:, None, None]
        )


def viterbi_batch(unary, transition):
    """Best label sequences of a batch of equal-length chains.

    Parameters
    ----------
    unary : ndarray of shape (L, B, S)
    transition : ndarray of shape (S, S)

    Returns
    -------
    paths : ndarray of int64 of shape (L, B)
    best_scores : ndarray of shape (B,)
    """
    length, batch, n_labels = unary.shape
    backpointers = np.empty((length, batch, n_labels), dtype=np.intp)
    delta = unary[0]
    for t in range(1, length):
        candidates = delta[:, :, None] + transition
        backpointers[t] = candidates.argmax(axis=1)
        delta = np.take_along_axis(candidates, backpointers[t][:, None, :], axis=1)[:, 0]
        delta = delta + unary[t]
    paths = np.empty((length, batch), dtype=np.int64)
    paths[-1] = delta.argmax(axis=1)
    best_scores = delta[np.arange(batch), paths[-1]]
    rows = np.arange(batch)
    for t in range(length - 1, 0, -1):
        paths[t - 1] = backpointers[t, rows, paths[t]]
    return paths, best_scores
