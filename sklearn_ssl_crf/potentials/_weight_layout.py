"""The parameter vector seen by optimisers, and the weight matrices it stands for."""

import numpy as np

__all__ = ["WeightLayout", "transition_potentials", "transition_masks", "seen_structure",
           "observed_weight_masks"]


def transition_masks(counts):
    """`WeightLayout` masks keeping the transition weights whose labels were seen together,
    from the counts of the transition potentials' entries (``transition_counts``)."""
    if counts.ndim == 2:
        return {"transition_mask": counts > 0}
    n_labels = counts.shape[1]
    return {"transition_mask": counts.sum(axis=0) > 0, "trigram_mask": counts > 0,
            "skip_mask": counts[:n_labels].sum(axis=1) > 0}


def seen_structure(counts):
    """The entries of a second-order transition tensor that may occur (`WeightLayout`'s
    ``allowed``), from the counts of its entries: the label pairs seen (anywhere) are the
    pair states; a sequence may start with any of them, and a triple ``(a, b, c)`` may occur
    when ``(a, b)`` and ``(b, c)`` were both seen. (Allowing only the triples seen makes the
    chain smaller still, but lost a point of letter error on handwriting.) None when nothing
    was seen."""
    if not counts.any():
        return None
    n_labels = counts.shape[1]
    pairs = counts.sum(axis=0) > 0
    allowed = np.empty(counts.shape, dtype=bool)
    allowed[:n_labels] = pairs[:, :, None] & pairs[None, :, :]
    allowed[n_labels] = pairs
    return allowed


def transition_potentials(bigram, trigram=None, skip=None, allowed=None):
    """The kernels' transition potentials from transition weights.

    Parameters
    ----------
    bigram : ndarray of shape (S, S)
        Weights of ``(y_{t-1}, y_t)``.
    trigram : ndarray of shape (S + 1, S, S), default=None
        Weights of ``(y_{t-2}, y_{t-1}, y_t)``; ``trigram[S]`` those of the first two labels.
        None: a first-order chain.
    skip : ndarray of shape (S, S), default=None
        Weights of ``(y_{t-2}, y_t)`` (with trigram only).
    allowed : ndarray of bool of shape (S + 1, S, S), default=None
        The entries that may occur (with trigram only); the others are -inf. None: all.

    Returns
    -------
    transition : ndarray of shape (S, S) or (S + 1, S, S)
        The bigram weights (first order), or the second-order tensor of
        `inference.second_order`: ``bigram[b, c] + trigram[a, b, c] + skip[a, c]``, without
        the skip term for ``a = S``.
    """
    if trigram is None:
        return bigram
    transition = trigram + bigram
    transition[:-1] += skip[:, None, :]
    if allowed is not None:
        transition[~allowed] = -np.inf
    return transition


class WeightLayout:
    """Maps a flat parameter vector to state weights W (attributes x labels) and transition
    potentials, optionally keeping only some entries free.

    The vector holds W, then the bigram transition weights (labels x labels), then for a
    second-order model the trigram weights (labels + 1, labels, labels) and the skip-bigram
    weights (labels x labels). Each block may have a mask of the entries that are parameters
    (the others stay 0).

    Parameters
    ----------
    n_attributes, n_labels : int
    state_mask : ndarray of bool of shape (n_attributes, n_labels), default=None
        None: all entries are parameters.
    transition_mask : ndarray of bool of shape (n_labels, n_labels), default=None
    order : {1, 2}, default=1
    trigram_mask : ndarray of bool of shape (n_labels + 1, n_labels, n_labels), default=None
    skip_mask : ndarray of bool of shape (n_labels, n_labels), default=None
    allowed : ndarray of bool of shape (n_labels + 1, n_labels, n_labels), default=None
        Order 2: the transition-tensor entries that may occur (`transition_potentials`);
        None: all.
    """

    def __init__(self, n_attributes, n_labels, state_mask=None, transition_mask=None,
                 order=1, trigram_mask=None, skip_mask=None, allowed=None):
        self.order = order
        self.allowed = allowed
        shapes = [(n_attributes, n_labels), (n_labels, n_labels)]
        masks = [state_mask, transition_mask]
        if order == 2:
            shapes += [(n_labels + 1, n_labels, n_labels), (n_labels, n_labels)]
            masks += [trigram_mask, skip_mask]
        self._shapes, self._masks = shapes, masks
        sizes = [int(np.prod(shape)) if mask is None else int(mask.sum())
                 for shape, mask in zip(shapes, masks)]
        self._bounds = np.concatenate([[0], np.cumsum(sizes)])
        self.n_state = sizes[0]
        self.size = int(self._bounds[-1])

    def blocks(self, theta):
        """The weight arrays of a parameter vector: W, the bigram weights and, at order 2,
        the trigram and skip-bigram weights (views of ``theta`` where there are no
        masks)."""
        return [_expand(theta[start:stop], mask, shape) for start, stop, mask, shape in zip(
            self._bounds[:-1], self._bounds[1:], self._masks, self._shapes)]

    def unpack(self, theta):
        """``(W, transition potentials)`` from a parameter vector (`transition_potentials`)."""
        state, *transition = self.blocks(theta)
        return state, transition_potentials(*transition, allowed=self.allowed)

    def pack(self, state, transition):
        """Parameter vector (or gradient) from W and transition potentials of full size (or
        their gradients: a potential's gradient reaches every weight it sums)."""
        if self.order == 2:
            n_labels = transition.shape[1]
            blocks = [state, transition.sum(axis=0), transition,
                      transition[:n_labels].sum(axis=1)]
        else:
            blocks = [state, transition]
        return self.vector(blocks)

    def vector(self, blocks):
        """The parameter vector of weight arrays of full size (as `blocks` gives them; the
        entries outside the masks are dropped)."""
        return np.concatenate([
            block.ravel() if mask is None else block[mask]
            for block, mask in zip(blocks, self._masks)])

    def l2_strengths(self, c2, c2_transitions=None):
        """The L2 strength of every parameter: ``c2`` for the state weights,
        ``c2_transitions`` (None: ``c2``) for the transition weights. A float when they are
        equal."""
        if c2_transitions is None or c2_transitions == c2:
            return float(c2)
        strengths = np.full(self.size, float(c2_transitions))
        strengths[:self.n_state] = c2
        return strengths


def _expand(values, mask, shape):
    if mask is None:
        return values.reshape(shape)
    full = np.zeros(shape)
    full[mask] = values
    return full


def observed_weight_masks(chunks, n_labels, all_possible_states=True,
                          all_possible_transitions=True):
    """`WeightLayout` masks keeping the weights seen in the labelled ``chunks`` (packed
    sequences): attributes with the labels they occur with, unless
    ``all_possible_states``; the label pairs (and, at order 2, triples) that follow each
    other, unless ``all_possible_transitions``.

    An attribute occurs with a label where a token of that label holds it, whatever its
    value, 0 included, as in CRFsuite (``False`` in python-crfsuite's dicts: such a weight
    is still trained, by the tokens where the attribute is 1)."""
    masks = {}
    if not all_possible_states:
        pairs = sum(chunk.state_pairs for chunk in chunks)
        masks["state_mask"] = pairs.toarray() != 0
    if not all_possible_transitions:
        masks.update(transition_masks(sum(chunk.transition_counts for chunk in chunks)))
    return masks
