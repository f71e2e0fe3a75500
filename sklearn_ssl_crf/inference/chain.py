"""Linear-chain inference: log Z, marginals and Viterbi, for one chain or many.

Batched kernels take the potentials of many chains as one array of rows in a `ChainLayout`
(position-major, sequences sorted by decreasing length); the only Python loop runs over
positions. The score of a label sequence y is
``sum_t unary[t, y_t] + sum_{t>=1} transition[y_{t-1}, y_t]`` for a first-order chain
(``transition`` of shape (S, S)); a transition tensor of shape (S + 1, S, S) makes the chain
second-order, scored as in `second_order`, and every function here accepts either.
"""

import numpy as np
from scipy.special import logsumexp

from .batching import ChainLayout
from .decoding import viterbi_batch
from .second_order import pair_lattice

__all__ = [
    "forward_backward",
    "viterbi",
    "chain_lattice",
    "chain_statistics",
    "check_potentials",
    "Workspace",
]


def forward_backward(unary, transition):
    """Log partition function and marginals of one chain.

    The score of a label sequence y is ``sum_t unary[t, y_t] + sum_{t>=1}
    transition[y_{t-1}, y_t]`` (first order); the chain's distribution is
    ``p(y | x) = exp(score(y)) / Z``. Runs the batched kernel `chain_lattice` on one chain.

    Parameters
    ----------
    unary : array-like of shape (n, S)
        Per-position label potentials.
    transition : array-like of shape (S, S) or (S + 1, S, S)
        ``transition[i, j]`` is the potential of label ``i`` followed by label ``j``; a
        second-order chain's ``transition[h, i, j]`` is that of labels ``h, i, j`` in a row,
        ``transition[S, i, j]`` that of ``i, j`` as the first two labels.

    Returns
    -------
    log_z : float
        Log of the sum over all ``S**n`` label sequences of exp(score).
    node_marginals : ndarray of shape (n, S)
        ``p(y_t = s | x)``.
    edge_marginals : ndarray of shape (n - 1, S, S)
        ``p(y_{t-1} = i, y_t = j | x)`` at index ``t - 1`` (either order).

    See Also
    --------
    chain_lattice : The same for many chains at once.
    chain_statistics : Log Z, node marginals and summed edge marginals, for training.
    viterbi : The highest-scoring label sequence.

    Examples
    --------
    >>> import numpy as np
    >>> log_z, node, edge = forward_backward(np.zeros((3, 2)), np.zeros((2, 2)))
    >>> bool(np.isclose(log_z, 3 * np.log(2))), node[0].tolist(), edge.shape
    (True, [0.5, 0.5], (2, 2, 2))
    """
    unary, transition = check_potentials(unary, transition)
    n = unary.shape[0]
    lattice = chain_lattice(unary, transition, ChainLayout([n]))
    if transition.ndim == 3:
        # One chain: packed row t is position t; pair blocks are [y_t, y_{t-1}].
        edges = np.array([lattice.pair_block(t)[0].T for t in range(1, n)]).reshape(
            n - 1, unary.shape[1], unary.shape[1])
    else:
        edges = lattice.edge_marginals()
    return float(lattice.log_z[0]), lattice.node_marginals(), edges


def viterbi(unary, transition):
    """Highest-scoring label sequence of one chain.

    The scores are those of `forward_backward`; the best sequence is found by dynamic
    programming, with the batched kernel `viterbi_batch` on one chain.

    Parameters
    ----------
    unary : array-like of shape (n, S)
        Per-position label potentials.
    transition : array-like of shape (S, S) or (S + 1, S, S)
        Transition potentials, as in `forward_backward`.

    Returns
    -------
    path : ndarray of int of shape (n,)
        Label indices of the best sequence (ties go to the lowest label index).
    best_score : float
        Its score.

    See Also
    --------
    viterbi_batch : The same for many chains at once.
    forward_backward : Log partition function and marginals of one chain.

    Examples
    --------
    >>> import numpy as np
    >>> path, score = viterbi(np.array([[1.0, 0.0], [0.0, 0.5]]),
    ...                       np.array([[0.0, -2.0], [0.0, 0.0]]))
    >>> path.tolist(), score
    ([0, 0], 1.0)
    """
    unary, transition = check_potentials(unary, transition)
    path, scores = viterbi_batch(unary, transition, ChainLayout([unary.shape[0]]))
    return path, float(scores[0])


def check_potentials(unary, transition):
    """Validate single-chain potentials and return them as float64 arrays."""
    unary = np.asarray(unary, dtype=np.float64)
    transition = np.asarray(transition, dtype=np.float64)
    if unary.ndim != 2 or unary.shape[0] == 0 or unary.shape[1] == 0:
        raise ValueError(f"unary must have shape (n, S) with n, S >= 1, got {unary.shape}")
    n_labels = unary.shape[1]
    if transition.shape not in [(n_labels, n_labels), (n_labels + 1, n_labels, n_labels)]:
        raise ValueError(
            f"transition must have shape ({n_labels}, {n_labels}) (first order) or "
            f"({n_labels + 1}, {n_labels}, {n_labels}) (second order) to match unary, "
            f"got {transition.shape}"
        )
    if not (np.isfinite(unary).all() and np.isfinite(transition).all()):
        raise ValueError("potentials must be finite")
    return unary, transition


class Workspace:
    """Work arrays kept between calls.

    Training runs forward-backward over the same data at every iteration; reusing the
    (n_rows, S) arrays saves mapping fresh memory each time, which costs more than the
    arithmetic on virtual machines that return freed pages to their host.

    See Also
    --------
    chain_lattice : Keeps its work arrays in a workspace.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ssl_crf.inference import Workspace
    >>> workspace = Workspace()
    >>> alpha = workspace.array("alpha", (2, 3))
    >>> alpha.shape
    (2, 3)
    >>> np.shares_memory(alpha, workspace.array("alpha", (3,)))
    True
    """

    def __init__(self):
        self._buffers = {}

    def array(self, name, shape):
        """Get an uninitialised float64 array, carved from a buffer kept under ``name``.

        The buffer is grown when too small; the array is valid until the next call with
        the same name.

        Parameters
        ----------
        name : str
            The key of the buffer.
        shape : tuple of int
            The shape of the array.

        Returns
        -------
        array : ndarray of float64 of shape ``shape``
            A view of the buffer; its values are undefined.
        """
        size = int(np.prod(shape))
        buffer = self._buffers.get(name)
        if buffer is None or buffer.size < size:
            buffer = self._buffers[name] = np.empty(size)
        return buffer[:size].reshape(shape)


def chain_lattice(unary, transition, layout, workspace=None):
    """Forward-backward over all chains of a layout.

    The only Python loop runs over the positions; each step handles the chains running at
    that position together. The scores are those of `forward_backward`.

    Parameters
    ----------
    unary : ndarray of shape (layout.n_rows, S)
        Rows in the layout's packed order.
    transition : ndarray of shape (S, S) or (S + 1, S, S)
        Transition potentials, shared by all chains, as in `forward_backward`.
    layout : ChainLayout
        The packed layout of the chains.
    workspace : Workspace, default=None
        Where to keep the work arrays; the lattice's arrays are overwritten by the next
        call with the same workspace.

    Returns
    -------
    lattice : ScaledLattice, LogSpaceLattice, PairLattice or LogSpacePairLattice
        The last two for second-order chains, whose ``edge_marginal_sum()`` has the
        transition tensor's shape and which have ``pair_block(t)`` instead of edge blocks.
        Exposes ``log_z`` (per sequence, input order), ``node_marginals(overwrite=False)``
        (n_rows, S),
        ``edge_marginal_sum()`` (S, S) summed over all positions and chains, and
        ``edge_marginals()`` (rows of positions >= 1, S, S), row ``k`` the edge into packed
        row ``layout.block_starts[1] + k``.
        The scaled (probability-space) recursion is used unless some potentials are hundreds
        of nats apart, so that underflow could change the result; then log space is.

    See Also
    --------
    forward_backward : The same for one chain, with validated potentials.
    viterbi_batch : Best label sequences of all chains of a layout.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ssl_crf.inference import ChainLayout, chain_lattice
    >>> layout = ChainLayout([2, 1])
    >>> lattice = chain_lattice(np.zeros((layout.n_rows, 2)), np.zeros((2, 2)), layout)
    >>> lattice.log_z.round(4).tolist()
    [1.3863, 0.6931]
    >>> lattice.node_marginals().shape
    (3, 2)
    """
    workspace = workspace or Workspace()
    if transition.ndim == 3:
        return pair_lattice(unary, transition, layout, workspace)
    lattice = ScaledLattice(unary, transition, layout, workspace)
    if lattice.is_exact:
        return lattice
    return LogSpaceLattice(unary, transition, layout)


# Smallest normaliser accepted by the scaled recursion (see `ScaledLattice`).
_MIN_SCALE = 1e-280

# Positions between renormalisations in `chain_statistics`: the forward (backward) mass may
# shrink by 1e-35 per position within a block before the exactness test fails.
_BLOCK = 8


def chain_statistics(unary, transition):
    """Log Z, node marginals and summed edge marginals of one chain, with little overhead.

    What stochastic training needs from one sequence at a time. The recursions multiply by
    ``exp(T - max T) * exp(unary[t] - max)`` (one matrix-vector product per position) and
    renormalise every few positions instead of at each one; if any row of the lattice then
    falls below the exactness threshold of `ScaledLattice`, the batched kernels take over.

    Parameters
    ----------
    unary : ndarray of float64 of shape (n, S), n >= 1
        Per-position label potentials. Not validated (a hot path); see
        `check_potentials`.
    transition : ndarray of float64 of shape (S, S) or (S + 1, S, S)
        Transition potentials, as in `forward_backward`. Not validated either.

    Returns
    -------
    log_z : float
        Log partition function of the chain.
    node_marginals : ndarray of shape (n, S)
        ``p(y_t = s | x)``.
    edge_marginal_sum : ndarray of the shape of ``transition``
        ``sum_t p(y_{t-1} = i, y_t = j | x)`` (second order: the expected counts of the
        transition tensor's entries).

    See Also
    --------
    forward_backward : Log Z and all marginals of one chain, with validated potentials.
    chain_lattice : Forward-backward over many chains at once.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ssl_crf.inference import chain_statistics
    >>> log_z, node, edge_sum = chain_statistics(np.zeros((3, 2)), np.zeros((2, 2)))
    >>> round(log_z, 4), node.shape, edge_sum.tolist()
    (2.0794, (3, 2), [[0.5, 0.5], [0.5, 0.5]])
    """
    n, n_labels = unary.shape
    if transition.ndim == 3:
        # Second order: the batched pair recursions, on a layout of one chain.
        lattice = chain_lattice(unary, transition, ChainLayout([n]))
        return float(lattice.log_z[0]), lattice.node_marginals(), lattice.edge_marginal_sum()
    # One shift for the whole chain (rows far below the top underflow and fail the test).
    unary_max = unary.max()
    emission = np.exp(unary - unary_max)
    transition_max = transition.max()
    exp_transition = np.exp(transition - transition_max)
    # The step from row t to row t + 1 is steps[t][i, j] = exp_transition[i, j] *
    # emission[t + 1, j]: alpha[t + 1] = alpha[t] @ steps[t], beta[t] = steps[t] @ beta[t + 1]
    # (np.dot with out= has the least call overhead; BLAS takes the matrix either way).
    ones = np.ones(n_labels)
    alpha = np.empty_like(emission)
    beta = np.empty_like(emission)
    norms = np.ones(n)
    alpha[0] = emission[0]
    beta[-1] = 1.0
    # Row views made once: indexing an array in the loop costs as much as the product.
    steps = list(exp_transition * emission[1:, None, :])
    alpha_rows, beta_rows = list(alpha), list(beta)
    dot = np.dot
    # Blocks of _BLOCK plain products, each followed by one renormalisation.
    for start in range(0, n - 1, _BLOCK):
        stop = min(start + _BLOCK, n - 1)
        for t in range(start, stop):
            dot(alpha_rows[t], steps[t], out=alpha_rows[t + 1])
        # An all-zero row fails the test below.
        norm = norms[stop] = dot(alpha_rows[stop], ones) or 1.0
        alpha_rows[stop] /= norm
    for stop in range(n - 1, 0, -_BLOCK):
        start = max(stop - _BLOCK, 0)
        for t in range(stop - 1, start - 1, -1):
            dot(steps[t], beta_rows[t + 1], out=beta_rows[t])
        beta_rows[start] /= dot(beta_rows[start], ones) or 1.0
    joint = alpha * beta
    mass = joint @ ones
    # mass <= S * max(alpha) * max(beta), and beta grows by at most S^_BLOCK between
    # renormalisations: normal masses mean no row of either lattice underflowed.
    if not _MIN_SCALE < mass.min() <= mass.max() < np.inf:
        lattice = chain_lattice(unary, transition, ChainLayout([n]))
        return float(lattice.log_z[0]), lattice.node_marginals(), lattice.edge_marginal_sum()
    joint /= mass[:, None]
    # The edge into position t sums to norms[t] * mass[t]; alpha[t - 1] is of the order of
    # norms[t], so dividing it (not the product) by norms[t] keeps every factor normal.
    weighted = emission[1:] * beta[1:]
    weighted /= mass[1:, None]
    edge_sum = exp_transition * ((alpha[:-1] / norms[1:, None]).T @ weighted)
    # The last row of alpha is normalised unless the chain has one position.
    log_z = (np.log(norms).sum() + (np.log(alpha[0] @ ones) if n == 1 else 0.0)
             + n * unary_max + (n - 1) * transition_max)
    return float(log_z), joint, edge_sum


class ScaledLattice:
    """Forward-backward in probability space, renormalised at every position.

    ``alpha`` rows are p(y_t | x_1..t) up to the potentials' shift, ``scale`` their
    normalisers, and ``beta`` is scaled so that ``alpha * beta`` is the node marginal.
    ``scaled_emission`` is ``exp(unary - row max) / scale``, so that
    ``alpha[t] = scaled_emission[t] * (alpha[t-1] @ exp_transition)``, and ``weighted`` is
    ``scaled_emission * beta`` (rows of positions >= 1): the edge marginal into row ``t`` is
    ``alpha[t-1][:, None] * exp_transition * weighted[t]``; ``previous_alpha`` holds
    ``alpha[t-1]`` for every row of ``layout.later_rows``.
    Several times faster than log-sum-exp; ``is_exact`` is False (and log space is used) when
    some normaliser is so small that values lost to underflow could matter, or ``beta``
    overflowed.
    """

    def __init__(self, unary, transition, layout, workspace):
        row_max = unary.max(axis=1)
        # A row of -inf (no label allowed there) becomes NaN, fails the test below, and
        # log space then finds log Z = -inf.
        with np.errstate(invalid="ignore"):
            emission = np.subtract(unary, row_max[:, None],
                                   out=workspace.array("emission", unary.shape))
        np.exp(emission, out=emission)
        transition_max = transition.max()
        exp_transition = np.exp(transition - transition_max)
        # Row sums as a product with ones: NumPy's sum over a short last axis is ~10x slower.
        ones = np.ones(unary.shape[1])

        alpha = workspace.array("alpha", unary.shape)
        scale = workspace.array("scale", unary.shape[:1])
        # Underflowing normalisers are detected below (log space then takes over), not warned.
        with np.errstate(divide="ignore", invalid="ignore"):
            for t, size in enumerate(layout.batch_sizes):
                rows = layout.block(t)
                if t:
                    current = alpha[layout.block(t - 1, size)] @ exp_transition
                    current *= emission[rows]
                else:
                    current = emission[rows]
                np.matmul(current, ones, out=scale[rows])
                np.divide(current, scale[rows, None], out=alpha[rows])

        # Terms lost to underflow are below 5e-324; with every normaliser above _MIN_SCALE
        # they are negligible (relative error < 1e-43). Otherwise log space takes over.
        self.is_exact = bool(np.all(scale > _MIN_SCALE) and np.all(np.isfinite(scale)))
        if not self.is_exact:
            return
        scaled_emission = np.divide(emission, scale[:, None], out=emission)
        beta = workspace.array("beta", unary.shape)
        weighted = workspace.array("weighted", unary.shape)
        # Every chain starts the backward pass at its last position.
        beta[layout.last_rows] = 1.0
        for t in range(layout.max_length - 1, 0, -1):
            rows = layout.block(t)
            np.multiply(scaled_emission[rows], beta[rows], out=weighted[rows])
            continuing = layout.block(t - 1, layout.batch_sizes[t])
            np.matmul(weighted[rows], exp_transition.T, out=beta[continuing])
        # sum_t alpha[t-1]^T weighted[t]: the expected transition counts up to exp(T), in one
        # product (np.take gathers rows several times faster than fancy indexing).
        self.previous_alpha = np.take(alpha, layout.previous_rows, axis=0)
        self._edge_sum = exp_transition * (self.previous_alpha.T
                                           @ weighted[layout.later_rows])
        # beta can overflow only for labels whose forward mass underflowed to 0.
        self.is_exact = bool(np.isfinite(beta).all())

        self.layout, self.unary_shape, self.workspace = layout, unary.shape, workspace
        self.alpha, self.beta, self.weighted = alpha, beta, weighted
        self.scaled_emission, self.exp_transition = scaled_emission, exp_transition
        self.log_z = (layout.per_sequence_sum(np.log(scale) + row_max)
                      + np.maximum(layout.lengths - 1, 0) * transition_max)

    def node_marginals(self, overwrite=False):
        """``p(y_t = s | x)`` of every row; with ``overwrite``, computed in the lattice's own
        storage (saving an array), after which the lattice must not be used again."""
        return np.multiply(self.alpha, self.beta, out=self.beta if overwrite else None)

    def edge_marginal_sum(self, row_weights=None):
        """``sum_t p(y_{t-1} = i, y_t = j | x)`` over every chain, shape (S, S); with
        ``row_weights`` (one per packed row), each chain's edges weighted by its rows'."""
        if row_weights is None:
            return self._edge_sum
        later = self.layout.later_rows
        return self.exp_transition * ((self.previous_alpha * row_weights[later, None]).T
                                      @ self.weighted[later])

    def edge_block(self, t):
        """``p(y_{t-1} = i, y_t = j | x)`` for the chains at position ``t >= 1``:
        shape (batch_sizes[t], S, S)."""
        previous = self.alpha[self.layout.block(t - 1, self.layout.batch_sizes[t])]
        return (previous[:, :, None] * self.exp_transition
                * self.weighted[self.layout.block(t)][:, None, :])

    def edge_marginals(self):
        return _stack_edge_blocks(self)


class LogSpaceLattice:
    """Forward-backward with log-sum-exp: slower, but exact for any finite potentials."""

    def __init__(self, unary, transition, layout):
        log_alpha = np.empty_like(unary)
        log_beta = np.empty_like(unary)
        log_alpha[layout.block(0)] = unary[layout.block(0)]
        for t, size in enumerate(layout.batch_sizes[1:], start=1):
            previous = log_alpha[layout.block(t - 1, size)]
            log_alpha[layout.block(t)] = (
                logsumexp(previous[:, :, None] + transition, axis=1) + unary[layout.block(t)]
            )
        # Every chain starts the backward pass at its last position.
        log_beta[layout.last_rows] = 0.0
        for t in range(layout.max_length - 1, 0, -1):
            rows = layout.block(t)
            continuing = layout.block(t - 1, layout.batch_sizes[t])
            log_beta[continuing] = logsumexp(
                transition + (unary[rows] + log_beta[rows])[:, None, :], axis=2)
        # log Z of a chain: log-sum-exp of alpha at its last position (0 for an empty chain).
        self.log_z = layout.by_sequence(logsumexp(log_alpha[layout.last_rows], axis=1))
        self.layout, self.unary, self.transition = layout, unary, transition
        self.unary_shape = unary.shape
        self.log_alpha, self.log_beta = log_alpha, log_beta
        self.row_log_z = self.log_z[layout.sequence_order][layout.row_slots]

    def node_marginals(self, overwrite=False):
        return np.exp(self.log_alpha + self.log_beta - self.row_log_z[:, None])

    def edge_marginal_sum(self, row_weights=None):
        if row_weights is None:
            return self.edge_marginals().sum(axis=0)
        return np.tensordot(row_weights[self.layout.later_rows], self.edge_marginals(), 1)

    def edge_block(self, t):
        rows = self.layout.block(t)
        previous = self.log_alpha[self.layout.block(t - 1, self.layout.batch_sizes[t])]
        return np.exp(previous[:, :, None] + self.transition
                      + (self.unary[rows] + self.log_beta[rows])[:, None, :]
                      - self.row_log_z[rows, None, None])

    def edge_marginals(self):
        return _stack_edge_blocks(self)


def _stack_edge_blocks(lattice):
    """All edge marginals, row ``k`` the edge into packed row ``block_starts[1] + k``."""
    n_labels = lattice.unary_shape[1]
    blocks = [lattice.edge_block(t) for t in range(1, lattice.layout.max_length)]
    return np.concatenate(blocks) if blocks else np.zeros((0, n_labels, n_labels))
