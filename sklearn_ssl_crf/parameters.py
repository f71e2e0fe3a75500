"""The parameter vector seen by optimisers, and the weight matrices it stands for."""

import numpy as np

__all__ = ["WeightLayout"]


class WeightLayout:
    """Maps a flat parameter vector to state weights W (attributes x labels) and transition
    weights T (labels x labels), optionally keeping only some entries free.

    Parameters
    ----------
    n_attributes, n_labels : int
    state_mask : ndarray of bool of shape (n_attributes, n_labels), default=None
        Entries of W that are parameters; the others stay 0. None: all of them.
    transition_mask : ndarray of bool of shape (n_labels, n_labels), default=None
    """

    def __init__(self, n_attributes, n_labels, state_mask=None, transition_mask=None):
        self.state_shape = (n_attributes, n_labels)
        self.transition_shape = (n_labels, n_labels)
        self.state_mask = state_mask
        self.transition_mask = transition_mask
        self.n_state = n_attributes * n_labels if state_mask is None else int(state_mask.sum())
        n_transition = n_labels * n_labels if transition_mask is None else int(
            transition_mask.sum())
        self.size = self.n_state + n_transition

    def unpack(self, theta):
        """``(W, T)`` from a parameter vector (views of it when there are no masks)."""
        return (
            _expand(theta[:self.n_state], self.state_mask, self.state_shape),
            _expand(theta[self.n_state:], self.transition_mask, self.transition_shape),
        )

    def pack(self, state, transition):
        """Parameter vector (or gradient) from full-size W and T."""
        return np.concatenate([
            state.ravel() if self.state_mask is None else state[self.state_mask],
            transition.ravel() if self.transition_mask is None else transition[
                self.transition_mask],
        ])


def _expand(values, mask, shape):
    if mask is None:
        return values.reshape(shape)
    full = np.zeros(shape)
    full[mask] = values
    return full
