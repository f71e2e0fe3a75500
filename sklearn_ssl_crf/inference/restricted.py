"""Second-order chains restricted to allowed label pairs and triples.

A second-order transition tensor (S + 1, S, S), scored as in `second_order`, may hold -inf
where a triple ``(y_{t-2}, y_{t-1}, y_t)`` (or, in ``transition[S]``, a first pair) is not
allowed: a labelling using one has probability 0. The forward-backward recursions then run
over the P pair states ``(y_{t-1}, y_t)`` that some allowed entry ends in, and each step is
one sparse product with the K allowed triples, instead of S products of (batch, S) by
(S, S): O(K) work per token instead of O(S^3), and O(P) memory instead of O(S^2).

Arrays are pair-major, (P, n_rows) with one column per packed row (position 0, which has no
previous label, keeps its node values (S, rows of position 0) apart), so that every step is
a sparse matrix times a dense block.
"""

import functools

import numpy as np
import scipy.sparse as sp

__all__ = ["PairStructure", "RestrictedPairLattice", "restricted_additive_expectation",
           "restricted_viterbi"]

# Smallest normaliser accepted by the scaled recursion, as in `chain.ScaledLattice`.
_MIN_SCALE = 1e-280


class PairStructure:
    """The pair states and triples of a second-order chain whose disallowed entries are -inf.

    Parameters
    ----------
    allowed : ndarray of bool of shape (S + 1, S, S)
        ``allowed[a, b, c]``: the triple ``(a, b, c)`` (``a = S``: the first pair ``(b, c)``)
        may occur.

    Attributes
    ----------
    first, second : ndarray of int of shape (P,)
        ``y_{t-1}`` and ``y_t`` of each pair state, ordered by ``first``.
    starts : ndarray of int
        The pair states allowed at positions 0 and 1.
    triples : tuple of three ndarrays of int of shape (K,)
        ``(a, b, c)`` of the allowed triples whose ``(a, b)`` is a pair state.
    """

    def __init__(self, allowed):
        n_labels = allowed.shape[1]
        is_state = allowed.any(axis=0)
        first, second = np.nonzero(is_state)
        self.n_labels, self.n_pairs = n_labels, first.size
        self.first, self.second = first, second
        index = np.full((n_labels, n_labels), -1)
        index[first, second] = np.arange(first.size)
        self.starts = np.flatnonzero(allowed[n_labels][first, second])
        a, b, c = np.nonzero(allowed[:n_labels] & is_state[:, :, None])
        self.triples = (a, b, c)
        source, target = index[a, b], index[b, c]
        # (S, P): sums the pair states ending in each label.
        self.last_label = sp.csr_matrix((np.ones(first.size), (second, np.arange(first.size))),
                                        shape=(n_labels, first.size))
        # Expected triple counts, per middle label b: the targets (b, c) are a segment of
        # the states; the sources (a, b) one of the states ordered by last label.
        self.by_second = np.argsort(second, kind="stable")
        position_by_second = np.empty_like(self.by_second)
        position_by_second[self.by_second] = np.arange(first.size)
        self._middles = []
        for middle in np.unique(b):
            sources = np.flatnonzero(second[self.by_second] == middle)
            targets = np.flatnonzero(first == middle)
            chosen = np.flatnonzero(b == middle)
            self._middles.append((
                slice(sources[0], sources[-1] + 1), slice(targets[0], targets[-1] + 1),
                chosen, position_by_second[source[chosen]] - sources[0],
                target[chosen] - targets[0]))
        shape = (first.size, first.size)
        self._forward = _pattern(target, source, shape)
        self._backward = _pattern(source, target, shape)
        # Viterbi: the triples by target pair state, the states some triple reaches, and
        # where their runs start.
        self.by_target = np.argsort(target, kind="stable")
        self.source_by_target = source[self.by_target]
        self.reached, self.target_starts, self.target_counts = np.unique(
            target[self.by_target], return_index=True, return_counts=True)

    @classmethod
    def of(cls, transition):
        """The structure of a second-order transition tensor, or None when more than half
        of its entries are allowed: the dense recursions of `second_order` (which take a
        -inf entry as a step of 0) are then as fast."""
        allowed = transition > -np.inf
        if allowed.mean() > 0.5:
            return None
        return _cached_structure(allowed.shape, np.packbits(allowed).tobytes())

    def step_matrices(self, triple_values):
        """``(forward, backward)``: sparse (P, P) matrices holding the triples' values, the
        forward one indexed [target, source] and the backward one [source, target]."""
        return (_filled(self._forward, triple_values),
                _filled(self._backward, triple_values))

    def start_matrix(self, start_values):
        """(S, P) sparse matrix of the first pairs' values (of ``starts``), indexed
        [y_0, pair]."""
        return sp.csr_matrix((start_values, (self.first[self.starts], self.starts)),
                             shape=(self.n_labels, self.n_pairs))

    def triple_sums(self, sources, columns, targets):
        """``sum_r sources[(a, b), columns[r]] * targets[(b, c), r]`` for every triple
        ``(a, b, c)``, from (P, n) arrays: one matrix product per middle label."""
        sources = sources[np.ix_(self.by_second, columns)]
        sums = np.empty(self.triples[0].size)
        for source_rows, target_rows, chosen, source_at, target_at in self._middles:
            block = sources[source_rows] @ targets[target_rows].T
            sums[chosen] = block[source_at, target_at]
        return sums


@functools.lru_cache(maxsize=8)
def _cached_structure(shape, packed_allowed):
    """The `PairStructure` of an ``allowed`` mask, built once for the evaluations of a fit
    (``np.packbits`` of the mask: the cache key)."""
    allowed = np.unpackbits(np.frombuffer(packed_allowed, dtype=np.uint8),
                            count=int(np.prod(shape))).reshape(shape).astype(bool)
    return PairStructure(allowed)


def _pattern(rows, columns, shape):
    """A CSR matrix of the given entries and the order of its data in the entries' order."""
    order = np.lexsort((columns, rows))
    matrix = sp.csr_matrix((np.ones(rows.size), (rows[order], columns[order])), shape=shape)
    return matrix, order


def _filled(pattern, values):
    matrix, order = pattern
    filled = matrix.copy()
    filled.data = values[order]
    return filled


class RestrictedPairLattice:
    """Forward-backward of second-order chains over a `PairStructure`, in probability space
    and renormalised at every position (`second_order.PairLattice` restricted).

    ``is_exact`` is False when some normaliser underflowed or ``beta`` overflowed; then
    `second_order.LogSpacePairLattice` takes the same -inf entries exactly.
    """

    def __init__(self, unary, transition, layout, structure, workspace):
        n_rows, n_labels = unary.shape
        self.layout, self.structure = layout, structure
        # Kept for the recursions that run on the dense pair arrays (`second_order`).
        self.unary, self.transition, self.workspace = unary, transition, workspace
        s = structure
        a, b, c = s.triples
        start_values = transition[n_labels, s.first[s.starts], s.second[s.starts]]
        triple_values = transition[a, b, c]
        transition_max = max(start_values.max(initial=-np.inf),
                             triple_values.max(initial=-np.inf))
        transition_max = transition_max if np.isfinite(transition_max) else 0.0
        self.start_step = np.exp(start_values - transition_max)
        self.triple_step = np.exp(triple_values - transition_max)
        forward, backward = s.step_matrices(self.triple_step)
        start = s.start_matrix(self.start_step)

        row_max = unary.max(axis=1)
        # Emissions, label-major (S, n_rows), scaled by each position's normaliser.
        emission = workspace.array("restricted_emission", (n_labels, n_rows))
        np.exp(unary.T - row_max, out=emission)
        pair_shape = (s.n_pairs, n_rows)
        scale = workspace.array("restricted_scale", (n_rows,))
        alpha = workspace.array("restricted_alpha", pair_shape)
        first_rows = layout.block(0) if layout.max_length else slice(0, 0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            scale[first_rows] = emission[:, first_rows].sum(axis=0)
            emission[:, first_rows] /= scale[first_rows]
            node_alpha = emission[:, first_rows]
            for t, size in enumerate(layout.batch_sizes[1:], start=1):
                rows = layout.block(t)
                if t == 1:
                    carried = start.T @ node_alpha[:, :size]
                else:
                    carried = forward @ alpha[:, layout.block(t - 1, size)]
                carried *= np.take(emission[:, rows], s.second, axis=0)
                scale[rows] = carried.sum(axis=0)
                emission[:, rows] /= scale[rows]
                np.divide(carried, scale[rows], out=alpha[:, rows])
        self.is_exact = bool(np.all(scale > _MIN_SCALE) and np.all(np.isfinite(scale)))
        if not self.is_exact:
            return
        # Backward, one position at a time: beta is not kept; each position's node
        # marginals (alpha * beta summed by last label) are taken while it is at hand.
        weighted = workspace.array("restricted_weighted", pair_shape)
        node = workspace.array("restricted_node", (n_labels, n_rows))
        node_beta = np.ones((n_labels, layout.batch_sizes[0] if layout.max_length else 0))
        ahead = None
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(layout.max_length - 1, 0, -1):
                rows, size = layout.block(t), layout.batch_sizes[t]
                if ahead is not None and ahead.shape[1] == size:
                    beta = ahead
                else:   # some chains end at t: their beta is 1
                    beta = np.ones((s.n_pairs, size))
                    if ahead is not None:
                        beta[:, :ahead.shape[1]] = ahead
                node[:, rows] = s.last_label @ (alpha[:, rows] * beta)
                beta *= np.take(emission[:, rows], s.second, axis=0)
                weighted[:, rows] = beta
                if t > 1:
                    ahead = backward @ beta
                else:
                    node_beta[:, :size] = start @ beta
            node[:, first_rows] = node_alpha * node_beta
        self.is_exact = bool(np.isfinite(node).all() and np.isfinite(node_beta).all())
        self.alpha, self.weighted, self.node = alpha, weighted, node
        self.node_alpha, self.node_beta, self.emission = node_alpha, node_beta, emission
        self.steps = (start, forward, backward)
        self.log_z = (layout.per_sequence_sum(np.log(scale) + row_max)
                      + np.maximum(layout.lengths - 1, 0) * transition_max)

    def node_marginals(self, overwrite=False):
        """``p(y_t = s | x)`` of every row, shape (n_rows, S)."""
        return self.node.T.copy()

    def edge_marginal_sum(self, row_weights=None):
        """Expected counts of the transition potentials, shape (S + 1, S, S); with
        ``row_weights`` (one per packed row), each chain's weighted by its rows'."""
        layout, s = self.layout, self.structure
        n_labels = s.n_labels
        counts = np.zeros((n_labels + 1, n_labels, n_labels))
        if layout.max_length < 2:
            return counts
        # Only the later positions' columns: the first position's are never written (no
        # edge ends there), and weighting what the buffer held before warned at random.
        later = layout.later_rows
        weighted = self.weighted[:, later]
        if row_weights is not None:
            weighted = weighted * row_weights[later]
        size = layout.batch_sizes[1]
        starts = s.starts
        counts[n_labels, s.first[starts], s.second[starts]] = self.start_step * np.einsum(
            "pr,pr->p", self.node_alpha[s.first[starts], :size], weighted[starts, :size])
        if layout.max_length > 2:
            third = layout.block_starts[2] - later.start
            sums = s.triple_sums(self.alpha, layout.previous_rows[third:], weighted[:, third:])
            counts[s.triples] = self.triple_step * sums
        return counts


def restricted_additive_expectation(lattice, a=None, b=None, gradient=True):
    """`second_order.pair_additive_expectation` over a `RestrictedPairLattice`: the same
    recursions, ``G = alpha * A`` forward and ``Z = beta * (B - E[g])`` backward, each step a
    sparse product over the allowed triples (and one with the terms' values on them).

    ``a`` (n_rows, S) and ``b`` (S + 1, S, S, finite) are the unary and transition terms of
    ``g``; None: 0. Returns the expectations per sequence and, with ``gradient``, their
    gradients with respect to the unary and transition potentials (0 on the entries not
    allowed).
    """
    layout, s = lattice.layout, lattice.structure
    n_rows, n_labels = lattice.unary.shape
    if not n_rows:
        return (np.zeros(layout.n_sequences), np.zeros((0, n_labels)),
                np.zeros((n_labels + 1, n_labels, n_labels)))
    start, forward_step, backward_step = lattice.steps
    emission, alpha, weighted = lattice.emission, lattice.alpha, lattice.weighted
    node_alpha = lattice.node_alpha
    a = np.zeros((n_rows, n_labels)) if a is None else a
    if b is None:
        start_terms = term_forward = term_backward = None
    else:
        triple_terms = lattice.triple_step * b[s.triples]
        start_terms = s.start_matrix(
            lattice.start_step * b[n_labels, s.first[s.starts], s.second[s.starts]])
        term_forward, term_backward = s.step_matrices(triple_terms)
    workspace = lattice.workspace
    pair_shape = (s.n_pairs, n_rows)
    first_rows = layout.block(0)
    forward = workspace.array("restricted_additive_forward", pair_shape)
    node_forward = node_alpha * a[first_rows].T
    for t, size in enumerate(layout.batch_sizes[1:], start=1):
        rows = layout.block(t)
        if t == 1:
            carried = start.T @ node_forward[:, :size]
            if start_terms is not None:
                carried += start_terms.T @ node_alpha[:, :size]
        else:
            previous = layout.block(t - 1, size)
            carried = forward_step @ forward[:, previous]
            if term_forward is not None:
                carried += term_forward @ alpha[:, previous]
        carried *= np.take(emission[:, rows], s.second, axis=0)
        carried += alpha[:, rows] * np.take(a[rows].T, s.second, axis=0)
        forward[:, rows] = carried
    # E[g] of each chain: its forward values at its last row.
    last_rows = layout.last_rows
    ends_later = last_rows >= first_rows.stop
    slot_expectation = np.empty(last_rows.size)
    slot_expectation[ends_later] = forward[:, last_rows[ends_later]].sum(axis=0)
    slot_expectation[~ends_later] = node_forward[:, last_rows[~ends_later]].sum(axis=0)
    expectation = layout.by_sequence(slot_expectation)
    if not gradient:
        return expectation, None, None

    # Backward: ahead_t = emission_t * (beta_t * a_t + Z_t), with Z = -E[g] at a chain's last
    # position; beta is recomputed from ``weighted`` one position at a time.
    row_expectation = slot_expectation[layout.row_slots]
    ahead = workspace.array("restricted_additive_ahead", pair_shape)
    d_unary = np.empty((n_rows, n_labels))
    behind = back = None
    for t in range(layout.max_length - 1, 0, -1):
        rows, size = layout.block(t), layout.batch_sizes[t]
        beta = np.ones((s.n_pairs, size))
        backward = np.broadcast_to(-row_expectation[rows], (s.n_pairs, size)).copy()
        if back is not None:
            beta[:, :back.shape[1]] = back
            backward[:, :behind.shape[1]] = behind
        d_unary[rows] = (s.last_label @ (beta * forward[:, rows]
                                         + alpha[:, rows] * backward)).T
        backward *= np.take(emission[:, rows], s.second, axis=0)
        backward += weighted[:, rows] * np.take(a[rows].T, s.second, axis=0)
        ahead[:, rows] = backward
        if t > 1:
            behind = backward_step @ backward
            if term_backward is not None:
                behind += term_backward @ weighted[:, rows]
            back = backward_step @ weighted[:, rows]
        else:
            node_backward = np.broadcast_to(-row_expectation[first_rows],
                                            node_forward.shape).copy()
            node_backward[:, :size] = start @ backward
            if start_terms is not None:
                node_backward[:, :size] += start_terms @ weighted[:, rows]
    if layout.max_length < 2:
        node_backward = np.broadcast_to(-row_expectation[first_rows],
                                        node_forward.shape).copy()
    d_unary[first_rows] = (lattice.node_beta * node_forward + node_alpha * node_backward).T

    d_transition = np.zeros((n_labels + 1, n_labels, n_labels))
    if layout.max_length > 1:
        size, rows = layout.batch_sizes[1], layout.block(1)
        starts = s.starts
        d_transition[n_labels, s.first[starts], s.second[starts]] = lattice.start_step * (
            np.einsum("pr,pr->p", node_forward[s.first[starts], :size], weighted[starts, rows])
            + np.einsum("pr,pr->p", node_alpha[s.first[starts], :size], ahead[starts, rows]))
    if layout.max_length > 2:
        later = slice(layout.block_starts[2], n_rows)
        previous = layout.previous_rows[later.start - layout.later_rows.start:]
        d_transition[s.triples] = lattice.triple_step * (
            s.triple_sums(forward, previous, weighted[:, later])
            + s.triple_sums(alpha, previous, ahead[:, later]))
    if b is not None:
        d_transition += b * lattice.edge_marginal_sum()
    return expectation, d_unary, d_transition


def restricted_viterbi(unary, transition, layout, structure):
    """`second_order.viterbi_pairs` over a `PairStructure`: per position, the best allowed
    triple into each pair state, one segment maximum over the triples (pair-major).

    Returns
    -------
    paths : ndarray of int64 of shape (layout.n_rows,)
    best_scores : ndarray of shape (n_sequences,)
    """
    s = structure
    n_rows, n_labels = unary.shape
    paths = np.empty(n_rows, dtype=np.int64)
    best_scores = np.zeros(layout.n_sequences)
    if not layout.max_length:
        return paths, best_scores
    a, b, c = s.triples
    log_steps = transition[a, b, c][s.by_target][:, None]
    sources = s.source_by_target
    triple_index = np.arange(sources.size)[:, None]
    start_first = s.first[s.starts]
    start_values = transition[n_labels, start_first, s.second[s.starts]][:, None]
    emitted = unary.T
    node_delta = emitted[:, layout.block(0)]
    delta = np.full((s.n_pairs, n_rows), -np.inf)
    # The pair state before (at position 1: the label at 0) on the best way to each state.
    backpointers = np.zeros((s.n_pairs, n_rows), dtype=np.intp)
    for t, size in enumerate(layout.batch_sizes[1:], start=1):
        rows = layout.block(t)
        if t == 1:
            delta[s.starts, rows] = node_delta[start_first, :size] + start_values
            backpointers[s.starts, rows] = start_first[:, None]
        elif sources.size:
            candidates = delta[sources, layout.block(t - 1, size)] + log_steps
            best = np.maximum.reduceat(candidates, s.target_starts, axis=0)
            # The first triple reaching each maximum.
            ties = candidates == np.repeat(best, s.target_counts, axis=0)
            chosen = np.minimum.reduceat(np.where(ties, triple_index, sources.size),
                                         s.target_starts, axis=0)
            delta[s.reached, rows] = best
            backpointers[s.reached, rows] = sources[chosen]
        delta[:, rows] += emitted[s.second, rows]
    # Back from each chain's last position; ``current`` holds, per batch slot, the pair
    # state at the position being read.
    current = np.zeros(layout.batch_sizes[0], dtype=np.intp)
    for t in range(layout.max_length - 1, -1, -1):
        block = layout.block(t)
        n_continuing = layout.batch_sizes[t + 1] if t + 1 < layout.max_length else 0
        slots = np.arange(n_continuing)
        before = (backpointers[current[slots], layout.block(t + 1).start + slots]
                  if n_continuing else slots)
        ending = np.arange(n_continuing, block.stop - block.start)
        scores = (delta if t else node_delta)[:, block.start + ending if t else ending]
        best_scores[layout.sequence_order[ending]] = scores.max(axis=0)
        if t:
            current[slots] = before
            current[ending] = scores.argmax(axis=0)
            paths[block] = s.second[current[:block.stop - block.start]]
        else:
            paths[block.start + slots] = before
            paths[block.start + ending] = scores.argmax(axis=0)
    return paths, best_scores
