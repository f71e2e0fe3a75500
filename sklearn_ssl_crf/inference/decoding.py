"""Viterbi over all chains of a packed layout at once: what the estimators' ``predict``
runs."""

import numpy as np

from .second_order import viterbi_pairs

__all__ = ["viterbi_batch"]


def viterbi_batch(unary, transition, layout):
    """Best label sequences of all chains of a layout.

    Viterbi's dynamic program, its only Python loops over the positions; the scores are
    those of `forward_backward`.

    Parameters
    ----------
    unary : ndarray of shape (layout.n_rows, S)
        Rows in the layout's packed order.
    transition : ndarray of shape (S, S) or (S + 1, S, S)
        Transition potentials, shared by all chains, as in `forward_backward`.
    layout : ChainLayout
        The packed layout of the chains.

    Returns
    -------
    paths : ndarray of int64 of shape (layout.n_rows,)
        Best label of every packed row.
    best_scores : ndarray of shape (n_sequences,)
        The score of each sequence's best labels, in input sequence order.

    See Also
    --------
    viterbi : The same for one chain.
    chain_lattice : Forward-backward over all chains of a layout.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ssl_crf.inference import ChainLayout, viterbi_batch
    >>> unary = np.array([[0.0, 2.0], [1.0, 0.0], [0.0, 0.5]])  # sequences of 1 and 2 tokens
    >>> transition = np.array([[0.0, -2.0], [0.0, 0.0]])
    >>> layout = ChainLayout([1, 2])
    >>> paths, scores = viterbi_batch(unary[layout.order], transition, layout)
    >>> labels = np.empty_like(paths)
    >>> labels[layout.order] = paths                           # back to token order
    >>> labels.tolist(), scores.tolist()
    ([1, 0, 0], [2.0, 1.0])
    """
    if transition.ndim == 3:
        return viterbi_pairs(unary, transition, layout)
    backpointers = np.zeros(unary.shape, dtype=np.intp)
    delta = np.empty_like(unary)
    delta[layout.block(0)] = unary[layout.block(0)]
    # candidates[b, current, previous]: the reductions run along the contiguous last axis.
    transposed = np.ascontiguousarray(transition.T)
    for t, size in enumerate(layout.batch_sizes[1:], start=1):
        rows = layout.block(t)
        candidates = delta[layout.block(t - 1, size)][:, None, :] + transposed
        best_previous = candidates.argmax(axis=2)
        backpointers[rows] = best_previous
        delta[rows] = np.take_along_axis(candidates, best_previous[:, :, None], axis=2)[:, :, 0]
        delta[rows] += unary[rows]
    paths = np.empty(unary.shape[0], dtype=np.int64)
    best_scores = np.zeros(layout.n_sequences)
    for t in range(layout.max_length - 1, -1, -1):
        block = layout.block(t)
        continuing = layout.block(t, layout.batch_sizes[t + 1] if t + 1 < layout.max_length
                                  else 0)
        if continuing.stop > continuing.start:
            next_rows = layout.block(t + 1)
            paths[continuing] = backpointers[next_rows][
                np.arange(next_rows.stop - next_rows.start), paths[next_rows]]
        # Chains ending at t: their best final label.
        ending = slice(continuing.stop, block.stop)
        paths[ending] = delta[ending].argmax(axis=1)
        ends = layout.sequence_order[np.arange(ending.start, ending.stop) - block.start]
        best_scores[ends] = delta[ending].max(axis=1)
    return paths, best_scores
