"""Second-order chains: log Z, marginals, Viterbi and additive expectations at O(S^3) per
position.

Score convention for order 2: ``transition`` has shape (S + 1, S, S) and

    score(y) = sum_t unary[t, y_t] + transition[S, y_0, y_1]
               + sum_{t>=2} transition[y_{t-2}, y_{t-1}, y_t],

index ``S`` of the first axis standing for "before the chain" (``transition[S]`` scores the
first two labels). Bigram, skip-bigram and start weights all fold into this one tensor
(`parameters.WeightLayout`); with ``transition[a] = T`` for every ``a`` it is the first-order
chain with transitions ``T``.

The recursions run over label pairs ``(y_{t-1}, y_t)``: a first-order chain whose pair can
only follow a pair sharing its middle label, so one step is S products of (batch, S) by
(S, S), never a dense S^2 x S^2 matrix. Pair arrays have shape (n_rows, S, S). Those of the
forward recursions hold ``[row, y_t, y_{t-1}]`` and those of the backward ones
``[row, y_{t-1}, y_t]``: each step then reads, for every middle label, a (batch, S) matrix
BLAS takes in place, and only its output is transposed. At position 0, which has no
previous label, a row holds its node value divided evenly over the S slots of the previous
label: summing over them gives the node value, and the step into position 1 is the generic
step with ``transition[S]`` repeated over ``y_{t-2}``.
"""

import numpy as np
from scipy.special import logsumexp

from .restricted import (
    PairStructure,
    RestrictedPairLattice,
    restricted_additive_expectation,
    restricted_viterbi,
)

__all__ = ["pair_lattice", "PairLattice", "LogSpacePairLattice", "viterbi_pairs",
           "pair_additive_expectation", "pair_position_entropies"]

# Smallest normaliser accepted by the scaled recursion, as in `chain.ScaledLattice`.
_MIN_SCALE = 1e-280


def pair_lattice(unary, transition, layout, workspace, restricted=True):
    """Forward-backward of second-order chains: a `PairLattice`, a `RestrictedPairLattice`
    when most entries of ``transition`` are -inf (not allowed) and ``restricted``, or a
    `LogSpacePairLattice` when the scaled recursion could lose mass to underflow."""
    structure = PairStructure.of(transition) if restricted else None
    if structure is None:
        lattice = PairLattice(unary, transition, layout, workspace)
    else:
        lattice = RestrictedPairLattice(unary, transition, layout, structure, workspace)
    if lattice.is_exact:
        return lattice
    return LogSpacePairLattice(unary, transition, layout)


def _dense(lattice):
    """The pair arrays over all S^2 pairs that the entropy recursions read: a restricted
    lattice's chains again through `PairLattice` (disallowed entries have step 0)."""
    if not isinstance(lattice, RestrictedPairLattice):
        return lattice
    return pair_lattice(lattice.unary, lattice.transition, lattice.layout, lattice.workspace,
                        restricted=False)


def _step_tensors(values):
    """Per-position step tensors arranged ``[y_{t-1}, y_{t-2}, y_t]`` from an (S + 1, S, S)
    tensor: the step into position 1 (``values[S]`` repeated over ``y_{t-2}``) and the step
    into positions >= 2."""
    n_labels = values.shape[1]
    first = np.repeat(values[n_labels][:, None, :], n_labels, axis=1)
    later = np.ascontiguousarray(values[:n_labels].transpose(1, 0, 2))
    return first, later


def _forward_step(previous, step):
    """``out[b, r, c] = sum_a previous[r, b, a] * step[b, a, c]`` for a forward-side
    ``previous``: (S, batch, S), to be stored transposed (``.transpose(1, 2, 0)``)."""
    return np.matmul(previous.transpose(1, 0, 2), step)


def _backward_step(ahead, step):
    """``out[r, a, b] = sum_c step[b, a, c] * ahead[r, b, c]`` for a backward-side
    ``ahead``: the backward-side array of the previous position."""
    return np.matmul(ahead.transpose(1, 0, 2), step.transpose(0, 2, 1)).transpose(1, 2, 0)


def _pair_counts(previous, ahead, step):
    """``sum_r previous[r, b, a] * step[b, a, c] * ahead[r, b, c]`` as [y_{t-1}, y_{t-2}, y_t]:
    expected triple counts when ``previous`` is alpha at t - 1 and ``ahead`` is weighted at
    t."""
    return step * np.matmul(previous.transpose(1, 2, 0), ahead.transpose(1, 0, 2))


def _as_transition_terms(counts_first, counts_later):
    """Per-position sums arranged [y_{t-1}, y_{t-2}, y_t] back to an (S + 1, S, S) tensor."""
    n_labels = counts_later.shape[0]
    result = np.empty((n_labels + 1, n_labels, n_labels))
    result[:n_labels] = counts_later.transpose(1, 0, 2)
    # At position 1, y_{t-2} is the start: the repeated slots add up.
    result[n_labels] = counts_first.sum(axis=1)
    return result


class PairLattice:
    """Forward-backward over label pairs in probability space, renormalised at every
    position (`chain.ScaledLattice` for second-order chains).

    ``alpha`` (forward side) and ``beta`` (backward side) are pair arrays whose product is the
    pair marginal ``p(y_{t-1}, y_t | x)`` (at position 0 the node marginal over S slots);
    ``scaled_emission`` is ``exp(unary - row max) / scale`` and ``weighted`` (backward side)
    is ``beta * scaled_emission`` of the current label; ``steps`` are the exponentiated step
    tensors into position 1 and into later positions. ``is_exact`` is False when some
    normaliser underflowed or ``beta`` overflowed.
    """

    def __init__(self, unary, transition, layout, workspace):
        n_rows, n_labels = unary.shape
        pair_shape = (n_rows, n_labels, n_labels)
        row_max = unary.max(axis=1)
        emission = np.subtract(unary, row_max[:, None],
                               out=workspace.array("emission", unary.shape))
        np.exp(emission, out=emission)
        transition_max = transition.max()
        self.steps = _step_tensors(np.exp(transition - transition_max))

        alpha = workspace.array("pair_alpha", pair_shape)
        scale = workspace.array("scale", (n_rows,))
        # Underflowing normalisers are detected below (log space then takes over).
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for t, size in enumerate(layout.batch_sizes):
                rows = layout.block(t)
                if t:
                    carried = _forward_step(alpha[layout.block(t - 1, size)],
                                            self.steps[t > 1])
                    # The normaliser from the sum over y_{t-1} first, so that the product
                    # with the emission stores alpha already normalised.
                    np.einsum("rc,rc->r", carried.sum(axis=0), emission[rows], out=scale[rows])
                    emission[rows] /= scale[rows, None]
                    np.multiply(carried.transpose(1, 2, 0), emission[rows][:, :, None],
                                out=alpha[rows])
                else:
                    np.matmul(emission[rows], np.ones(n_labels), out=scale[rows])
                    emission[rows] /= scale[rows, None]
                    alpha[rows] = emission[rows][:, :, None] / n_labels
        self.is_exact = bool(np.all(scale > _MIN_SCALE) and np.all(np.isfinite(scale)))
        if not self.is_exact:
            return
        scaled_emission = emission
        beta = workspace.array("pair_beta", pair_shape)
        weighted = workspace.array("pair_weighted", pair_shape)
        beta[layout.last_rows] = 1.0
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(layout.max_length - 1, -1, -1):
                rows = layout.block(t)
                np.multiply(beta[rows], scaled_emission[rows][:, None, :], out=weighted[rows])
                if t:
                    continuing = layout.block(t - 1, layout.batch_sizes[t])
                    beta[continuing] = _backward_step(weighted[rows], self.steps[t > 1])
        self.is_exact = bool(np.isfinite(beta).all())

        self.layout, self.workspace = layout, workspace
        self.alpha, self.beta, self.weighted = alpha, beta, weighted
        self.scaled_emission = scaled_emission
        self.log_z = (layout.per_sequence_sum(np.log(scale) + row_max)
                      + np.maximum(layout.lengths - 1, 0) * transition_max)

    def node_marginals(self, overwrite=False):
        """``p(y_t = s | x)`` of every row, shape (n_rows, S)."""
        return np.einsum("rcb,rbc->rc", self.alpha, self.beta)

    def pair_block(self, t, size=None):
        """``p(y_{t-1}, y_t | x)`` of the (first ``size``) chains at position ``t`` as
        [row, y_t, y_{t-1}]."""
        rows = self.layout.block(t, size)
        return self.alpha[rows] * self.beta[rows].transpose(0, 2, 1)

    def edge_marginal_sum(self, row_weights=None):
        """Expected counts of the transition potentials, shape (S + 1, S, S); with
        ``row_weights`` (one per packed row), each chain's weighted by its rows'."""
        ahead = self.weighted
        if row_weights is not None:
            ahead = ahead * row_weights[:, None, None]
        return _as_transition_terms(*self._transition_sums(self.alpha, ahead))

    def _transition_sums(self, previous, ahead, steps=None):
        """``sum_t _pair_counts(previous[t - 1], ahead[t], step)`` over the positions into 1
        and over the later ones: two products over all their rows at once."""
        layout = self.layout
        steps = self.steps if steps is None else steps
        n_labels = previous.shape[1]
        sums = [np.zeros((n_labels,) * 3), np.zeros((n_labels,) * 3)]
        if layout.max_length < 2:
            return sums
        later = layout.later_rows.start
        bounds = [later, layout.block(1).stop, layout.n_rows]
        for part, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:])):
            if stop > start:
                before = np.take(previous, layout.previous_rows[start - later:stop - later],
                                 axis=0)
                sums[part] = _pair_counts(before, ahead[start:stop], steps[part])
        return sums


class LogSpacePairLattice:
    """Forward-backward over label pairs with log-sum-exp: slower, exact for any finite
    potentials."""

    def __init__(self, unary, transition, layout):
        n_rows, n_labels = unary.shape
        self.log_steps = _step_tensors(transition)
        log_alpha = np.empty((n_rows, n_labels, n_labels))
        log_beta = np.empty_like(log_alpha)
        first = layout.block(0)
        log_alpha[first] = unary[first][:, :, None] - np.log(n_labels)
        for t, size in enumerate(layout.batch_sizes[1:], start=1):
            previous = log_alpha[layout.block(t - 1, size)]
            # [r, b, a, c] -> log-sum-exp over a -> [r, b, c] -> [r, c, b]
            log_alpha[layout.block(t)] = (
                logsumexp(previous[:, :, :, None] + self.log_steps[t > 1], axis=2)
                .transpose(0, 2, 1) + unary[layout.block(t)][:, :, None])
        log_beta[layout.last_rows] = 0.0
        for t in range(layout.max_length - 1, 0, -1):
            rows = layout.block(t)
            ahead = (unary[rows][:, :, None] + log_beta[rows]).transpose(0, 2, 1)
            log_beta[layout.block(t - 1, layout.batch_sizes[t])] = logsumexp(
                ahead[:, :, None, :] + self.log_steps[t > 1], axis=3)
        self.log_z = layout.by_sequence(
            logsumexp(log_alpha[layout.last_rows], axis=(1, 2)))
        self.layout, self.unary = layout, unary
        self.log_alpha, self.log_beta = log_alpha, log_beta
        self.row_log_z = self.log_z[layout.sequence_order][layout.row_slots]

    def node_marginals(self, overwrite=False):
        return self._pairs(slice(0, self.unary.shape[0])).sum(axis=2)

    def pair_block(self, t, size=None):
        return self._pairs(self.layout.block(t, size))

    def _pairs(self, rows):
        return np.exp(self.log_alpha[rows] + self.log_beta[rows]
                      - self.row_log_z[rows, None, None])

    def triple_block(self, t):
        """``p(y_{t-2} = a, y_{t-1} = b, y_t = c | x)`` of the chains at position ``t >= 1``
        as [row, b, a, c] (at ``t = 1``, the pair marginal divided over S slots of a)."""
        layout = self.layout
        rows = layout.block(t)
        previous = self.log_alpha[layout.block(t - 1, layout.batch_sizes[t])]
        ahead = (self.unary[rows][:, :, None] + self.log_beta[rows]
                 - self.row_log_z[rows, None, None]).transpose(0, 2, 1)
        return np.exp(previous[:, :, :, None] + self.log_steps[t > 1] + ahead[:, :, None, :])

    def edge_marginal_sum(self, row_weights=None):
        n_labels = self.unary.shape[1]
        sums = [np.zeros((n_labels,) * 3), np.zeros((n_labels,) * 3)]
        for t in range(1, self.layout.max_length):
            if row_weights is None:
                sums[t > 1] += self.triple_block(t).sum(axis=0)
            else:
                sums[t > 1] += np.tensordot(row_weights[self.layout.block(t)],
                                            self.triple_block(t), 1)
        return _as_transition_terms(*sums)


def viterbi_pairs(unary, transition, layout):
    """`chain.viterbi_batch` for second-order chains (``transition`` of shape (S + 1, S, S));
    over the allowed structure (`restricted_viterbi`) when most entries are -inf.

    Returns
    -------
    paths : ndarray of int64 of shape (layout.n_rows,)
    best_scores : ndarray of shape (n_sequences,)
    """
    structure = PairStructure.of(transition)
    if structure is not None:
        return restricted_viterbi(unary, transition, layout, structure)
    n_rows, n_labels = unary.shape
    log_steps = _step_tensors(transition)
    delta = np.empty((n_rows, n_labels, n_labels))
    backpointers = np.zeros((n_rows, n_labels, n_labels), dtype=np.intp)
    first = layout.block(0)
    delta[first] = unary[first][:, :, None]
    for t, size in enumerate(layout.batch_sizes[1:], start=1):
        rows = layout.block(t)
        # [r, b, a, c]: the best y_{t-2} = a for each pair (b, c)
        candidates = delta[layout.block(t - 1, size)][:, :, :, None] + log_steps[t > 1]
        best = candidates.argmax(axis=2)
        backpointers[rows] = best.transpose(0, 2, 1)
        delta[rows] = (np.take_along_axis(candidates, best[:, :, None, :], axis=2)[:, :, 0]
                       .transpose(0, 2, 1) + unary[rows][:, :, None])
    paths = np.empty(n_rows, dtype=np.int64)
    best_scores = np.zeros(layout.n_sequences)
    # Per batch slot: the label at the current position and the one before it.
    current = np.zeros(layout.batch_sizes[0] if layout.max_length else 0, dtype=np.intp)
    before = np.zeros_like(current)
    for t in range(layout.max_length - 1, -1, -1):
        block = layout.block(t)
        n_continuing = layout.batch_sizes[t + 1] if t + 1 < layout.max_length else 0
        if n_continuing:
            slots = np.arange(n_continuing)
            next_rows = layout.block(t + 1).start + slots
            earlier = backpointers[next_rows, current[slots], before[slots]]
            current[slots], before[slots] = before[slots], earlier
        # Chains ending at t: their best final pair.
        ending = slice(block.start + n_continuing, block.stop)
        ending_slots = np.arange(n_continuing, block.stop - block.start)
        flat = delta[ending].reshape(ending_slots.size, n_labels * n_labels)
        best_pair = flat.argmax(axis=1)
        current[ending_slots], before[ending_slots] = np.divmod(best_pair, n_labels)
        best_scores[layout.sequence_order[ending_slots]] = flat.max(axis=1)
        paths[block] = current[:block.stop - block.start]
    return paths, best_scores


def pair_additive_expectation(lattice, unary_terms=None, transition_terms=None,
                              gradient=True):
    """`entropy.additive_expectation_batch` for second-order lattices: ``g(y) = sum_t
    unary_terms[t, y_t] + the transition terms of y`` (shape (S + 1, S, S), scored like the
    potentials; where the potentials are -inf, the terms are ignored: those triples have
    probability 0)."""
    if transition_terms is not None:
        transition_terms = np.where(np.isneginf(transition_terms), 0.0, transition_terms)
    if isinstance(lattice, RestrictedPairLattice):
        return restricted_additive_expectation(lattice, unary_terms, transition_terms,
                                               gradient)
    if isinstance(lattice, PairLattice):
        return _scaled_pair_expectation(lattice, unary_terms, transition_terms, gradient)
    return _conditional_pair_expectation(lattice, unary_terms, transition_terms, gradient)


def _scaled_pair_expectation(lattice, a, b, gradient):
    """The recursions of `entropy._scaled_additive_expectation` over label pairs: ``G = alpha
    * A`` forward and ``Z = beta * (B - E[g])`` backward, each linear in the previous
    position."""
    layout, workspace = lattice.layout, lattice.workspace
    alpha, beta, weighted = lattice.alpha, lattice.beta, lattice.weighted
    emission = lattice.scaled_emission
    steps = lattice.steps
    term_steps = None if b is None else tuple(
        step * term for step, term in zip(steps, _step_tensors(b)))

    forward = workspace.array("pair_additive_forward", alpha.shape)
    if a is None:
        forward[...] = 0.0
    else:
        np.multiply(alpha, a[:, :, None], out=forward)
    for t, size in enumerate(layout.batch_sizes[1:], start=1):
        rows, previous = layout.block(t), layout.block(t - 1, size)
        carried = _forward_step(forward[previous], steps[t > 1])
        if term_steps is not None:
            carried += _forward_step(alpha[previous], term_steps[t > 1])
        forward[rows] += carried.transpose(1, 2, 0) * emission[rows][:, :, None]
    last_rows = layout.last_rows
    slot_expectation = forward[last_rows].sum(axis=(1, 2))
    expectation = layout.by_sequence(slot_expectation)
    if not gradient:
        return expectation, None, None

    # ahead_t = emission_t * (beta_t * a_t + Z_t); Z = -E[g] at a chain's last position.
    backward = workspace.array("pair_additive_backward", alpha.shape)
    ahead = workspace.array("pair_additive_ahead", alpha.shape)
    if a is None:
        ahead[...] = 0.0
    else:
        np.multiply(weighted, a[:, None, :], out=ahead)
    backward[last_rows] = -slot_expectation[:, None, None]
    ahead[last_rows] -= emission[last_rows][:, None, :] * slot_expectation[:, None, None]
    for t in range(layout.max_length - 1, 0, -1):
        rows, continuing = layout.block(t), layout.block(t - 1, layout.batch_sizes[t])
        carried = _backward_step(ahead[rows], steps[t > 1])
        if term_steps is not None:
            carried = carried + _backward_step(weighted[rows], term_steps[t > 1])
        backward[continuing] = carried
        ahead[continuing] += carried * emission[continuing][:, None, :]

    d_unary = (np.einsum("rbc,rcb->rc", beta, forward)
               + np.einsum("rcb,rbc->rc", alpha, backward))
    forward_sums = lattice._transition_sums(forward, weighted)
    alpha_sums = lattice._transition_sums(alpha, ahead)
    d_transition = _as_transition_terms(*(f + s for f, s in zip(forward_sums, alpha_sums)))
    if b is not None:
        d_transition += b * lattice.edge_marginal_sum()
    return expectation, d_unary, d_transition


def _conditional_pair_expectation(lattice, a, b, gradient):
    """The same recursions through the conditionals of a `LogSpacePairLattice`'s pair and
    triple marginals (one (batch, S, S, S) block per position)."""
    layout = lattice.layout
    n_rows, n_labels = lattice.unary.shape
    a = np.zeros((n_rows, n_labels)) if a is None else a
    term_steps = (np.zeros((n_labels,) * 3),) * 2 if b is None else _step_tensors(b)
    # Pair-level expectations [row, c, b]: A = E[terms up to t | pair], B = E[terms after t
    # | pair].
    forward = np.empty((n_rows, n_labels, n_labels))
    backward = np.zeros((n_rows, n_labels, n_labels))
    first = layout.block(0)
    forward[first] = a[first][:, :, None]
    for t in range(1, layout.max_length):
        rows, previous = layout.block(t), layout.block(t - 1, layout.batch_sizes[t])
        triple = lattice.triple_block(t)                                # [r, b, a, c]
        pair = lattice.pair_block(t).transpose(0, 2, 1)                 # [r, b, c]
        carried = forward[previous][:, :, :, None] + term_steps[t > 1]  # [r, b, a, c]
        total = (triple * carried).sum(axis=2)
        forward[rows] = (_divide(total, pair).transpose(0, 2, 1)
                         + a[rows][:, :, None])
    last_rows = layout.last_rows
    last_pairs = np.exp(lattice.log_alpha[last_rows] + lattice.log_beta[last_rows]
                        - lattice.row_log_z[last_rows, None, None])
    slot_expectation = (last_pairs * forward[last_rows]).sum(axis=(1, 2))
    expectation = layout.by_sequence(slot_expectation)
    if not gradient:
        return expectation, None, None
    row_expectation = slot_expectation[layout.row_slots]

    sums = [np.zeros((n_labels,) * 3), np.zeros((n_labels,) * 3)]
    for t in range(layout.max_length - 1, 0, -1):
        rows, previous = layout.block(t), layout.block(t - 1, layout.batch_sizes[t])
        triple = lattice.triple_block(t)
        # E[g | y_{t-2}, y_{t-1}, y_t] - E[g], as [r, b, a, c]
        after = (a[rows][:, :, None] + backward[rows]).transpose(0, 2, 1)   # [r, b, c]
        centred = (forward[previous][:, :, :, None] + term_steps[t > 1]
                   + after[:, :, None, :] - row_expectation[rows, None, None, None])
        sums[t > 1] += (triple * centred).sum(axis=0)
        previous_pair = lattice.pair_block(t - 1)
        total = (triple * (term_steps[t > 1] + after[:, :, None, :])).sum(axis=3)
        backward[previous] = _divide(total, previous_pair[:triple.shape[0]])
    pairs = np.exp(lattice.log_alpha + lattice.log_beta - lattice.row_log_z[:, None, None])
    d_unary = (pairs * (forward + backward - row_expectation[:, None, None])).sum(axis=2)
    return expectation, d_unary, _as_transition_terms(*sums)


def _divide(numerator, denominator):
    """``numerator / denominator``, 0 where the denominator is 0."""
    return np.divide(numerator, denominator, out=np.zeros_like(numerator),
                     where=denominator > 0)


def pair_position_entropies(lattice):
    """Per-row entropies of a second-order lattice.

    Returns
    -------
    node : ndarray of shape (n_rows,)
        ``H(Y_t | x)``.
    pair_conditional : ndarray of shape (n_rows,)
        ``H(Y_t | Y_{t-1}, x)`` (``H(Y_0 | x)`` at position 0).
    conditional : ndarray of shape (n_rows,)
        ``H(Y_t | Y_{t-1}, Y_{t-2}, x)`` (``H(Y_1 | Y_0, x)`` at position 1, ``H(Y_0 | x)`` at
        0): the chain rule's terms, whose sum over a chain is its entropy.
    """
    lattice = _dense(lattice)
    layout = lattice.layout
    node = -_xlogx(lattice.node_marginals()).sum(axis=1)
    pair_conditional = node.copy()
    conditional = node.copy()
    later = layout.later_rows
    pair_entropy = np.zeros(node.size)
    for t in range(1, layout.max_length):
        pair_entropy[layout.block(t)] = -_xlogx(lattice.pair_block(t)).sum(axis=(1, 2))
    previous_node = np.take(node, layout.previous_rows)
    pair_conditional[later] = np.maximum(pair_entropy[later] - previous_node, 0.0)
    for t in range(2, layout.max_length):
        rows, previous = layout.block(t), layout.block(t - 1, layout.batch_sizes[t])
        conditional[rows] = np.maximum(
            _triple_conditional_entropy(lattice, t, pair_entropy[previous]), 0.0)
    if layout.max_length > 1:
        conditional[layout.block(1)] = pair_conditional[layout.block(1)]
    return node, pair_conditional, conditional


def _triple_conditional_entropy(lattice, t, previous_pair_entropy):
    """``H(Y_t | Y_{t-1}, Y_{t-2}, x)`` of the chains at position ``t >= 2``, given
    ``H(Y_{t-2}, Y_{t-1} | x)`` of those chains."""
    if isinstance(lattice, LogSpacePairLattice):
        return -_xlogx(lattice.triple_block(t)).sum(axis=(1, 2, 3)) - previous_pair_entropy
    # p(c | a, b) = step[b, a, c] weighted_t[b, c] / beta_{t-1}[a, b]: the conditional
    # entropy is -sum p log step - sum p_t log weighted_t + sum p_{t-1} log beta_{t-1}, and
    # only the first sum needs a step (no triple array).
    layout = lattice.layout
    rows, size = layout.block(t), layout.batch_sizes[t]
    previous = layout.block(t - 1, size)
    weighted = lattice.weighted[rows]
    step_part = np.einsum("brc,rbc->r",
                          _forward_step(lattice.alpha[previous], _xlogx(lattice.steps[1])),
                          weighted)
    beta_previous = lattice.beta[previous].transpose(0, 2, 1)
    return (_xlogy(lattice.pair_block(t - 1, size), beta_previous).sum(axis=(1, 2))
            - _xlogy(lattice.pair_block(t), weighted.transpose(0, 2, 1)).sum(axis=(1, 2))
            - step_part)


def _xlogx(p):
    return p * np.log(np.where(p > 0, p, 1.0))


def _xlogy(x, y):
    return x * np.log(np.where(x > 0, y, 1.0))
