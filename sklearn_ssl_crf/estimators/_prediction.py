"""Prediction over packed sequences: Viterbi paths and node marginals, in original order."""

import numpy as np

from ..inference import chain_lattice, viterbi_batch

__all__ = ["NoLabellingError", "decode", "posterior_marginals"]


class NoLabellingError(ValueError):
    """Label constraints and known labels leave a sequence no labelling; ``index`` is the
    first such sequence of the input (0-based)."""

    def __init__(self, message, index):
        super().__init__(message)
        self.index = index


def decode(packed, unary, transition):
    """Best label index of every token (original token order), shape (n_tokens,)."""
    paths, best_scores = viterbi_batch(unary, transition, packed.layout)
    _check_some_labelling(best_scores)
    return packed.unpack(paths)


def posterior_marginals(packed, unary, transition):
    """``p(y_t = s | x)`` of every token (original token order), shape (n_tokens, S)."""
    lattice = chain_lattice(unary, transition, packed.layout)
    _check_some_labelling(lattice.log_z)
    return packed.unpack(lattice.node_marginals())


def _check_some_labelling(scores):
    # Finite potentials give finite scores: -inf means that constraints or known labels
    # (-inf potentials) leave the sequence no labelling.
    impossible = np.flatnonzero(np.isneginf(scores))
    if impossible.size:
        raise NoLabellingError(f"sequence {impossible[0]} has no labelling that the label "
                               "constraints and the known labels allow "
                               f"({impossible.size} such sequence(s))", int(impossible[0]))
