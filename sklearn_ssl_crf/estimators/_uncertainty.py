"""The uncertainty of a fitted chain CRF's labels, for active learning: entropies of whole
sequences, of spans and of single tokens, all from one lattice pass
(`inference.entropy.position_entropies`) within the label constraints."""

import numpy as np

from ..inference import chain_lattice
from ..inference.entropy import position_entropies
from ..potentials import PackedSequences
from ..utils import single_threaded_blas

__all__ = ["UncertaintyMixin"]


def per_sequence(rows, sequences):
    """Token rows (all sequences end to end) split into one array per sequence."""
    return np.split(rows, sequences.offsets[1:-1]) if len(sequences) else []


class UncertaintyMixin:
    """``predict_entropy``, ``predict_token_entropy``, ``predict_subsequence_entropy`` and
    ``most_uncertain_spans`` of `BaseCRF`, which provides ``_transform``, ``_constrained``,
    ``_transition_potentials`` and the fitted weights."""

    def predict_entropy(self, X):
        """Entropy ``H(Y | x)`` of each sequence's labels, in nats.

        Parameters
        ----------
        X : list of sequences, list of feature matrices, or SequenceMatrix

        Returns
        -------
        entropies : ndarray of shape (n_sequences,)
        """
        sequences, _, _, conditional = self._token_entropies(X)
        return np.bincount(np.repeat(np.arange(len(sequences)), sequences.lengths),
                           weights=conditional, minlength=len(sequences))

    def predict_token_entropy(self, X):
        """Entropy ``H(Y_t | x)`` of every token's label, in nats: a token-level query for
        active learning, whose answers train through partial annotation (a label sequence
        with None where unknown).

        Parameters
        ----------
        X : list of sequences, list of feature matrices, or SequenceMatrix

        Returns
        -------
        entropies : list of ndarray
            ``entropies[i][t]``: the entropy of the marginal ``p(y_t | x_i)`` (within the
            label constraints, as `predict_marginals`).

        Examples
        --------
        >>> from sklearn_ssl_crf import CRF
        >>> X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}]]
        >>> crf = CRF(c2=1.0).fit(X, [["A", "B"], ["B", "A"]])
        >>> [h.round(2).tolist() for h in crf.predict_token_entropy([[{"w": "a"}, {"w": "c"}]])]
        [[0.64, 0.69]]
        """
        sequences, node, _, _ = self._token_entropies(X)
        return per_sequence(node, sequences)

    def predict_subsequence_entropy(self, X, spans):
        """Joint entropy of the labels of given spans (Mann & McCallum 2007, §4-5).

        Parameters
        ----------
        X : list of sequences, list of feature matrices, or SequenceMatrix
        spans : list of lists of (start, stop)
            ``spans[i]`` are spans of sequence ``i``, ``0 <= start < stop <= len(X[i])``.

        Returns
        -------
        entropies : list of lists of float
            ``H(Y_start, ..., Y_{stop-1} | x_i)`` for each span, in nats.
        """
        sequences, *tables = self._span_entropy_tables(X)
        if len(spans) != len(sequences):
            raise ValueError(f"spans has {len(spans)} entries for {len(sequences)} sequences")
        result = []
        for i, sequence_spans in enumerate(spans):
            offset, length = sequences.offsets[i], sequences.lengths[i]
            entropies = []
            for start, stop in sequence_spans:
                if not 0 <= start < stop <= length:
                    raise ValueError(f"span ({start}, {stop}) of sequence {i} is not within "
                                     f"its {length} tokens")
                first, last = offset + start, offset + stop - 1
                entropies.append(float(self._span_entropies(
                    *tables, np.array([first]), np.array([last]))[0]))
            result.append(entropies)
        return result

    def most_uncertain_spans(self, X, width):
        """For each sequence, the span of ``width`` labels with the highest joint entropy.

        Parameters
        ----------
        X : list of sequences, list of feature matrices, or SequenceMatrix
        width : int
            Span length; a shorter sequence gives the whole sequence.

        Returns
        -------
        spans : list of (start, stop, entropy)
            None for an empty sequence.
        """
        if not isinstance(width, (int, np.integer)) or width < 1:
            raise ValueError(f"width must be a positive int, got {width!r}")
        sequences, *tables = self._span_entropy_tables(X)
        result = []
        for offset, length in zip(sequences.offsets[:-1], sequences.lengths):
            if length == 0:
                result.append(None)
                continue
            span = min(width, length)
            firsts = offset + np.arange(length - span + 1)
            entropies = self._span_entropies(*tables, firsts, firsts + span - 1)
            best = int(entropies.argmax())
            result.append((best, best + span, float(entropies[best])))
        return result

    def _token_entropies(self, X):
        """Per-token entropies: `inference.entropy.position_entropies` in token order."""
        sequences = self._transform(X)
        if sequences.n_tokens == 0:
            return sequences, np.zeros(0), np.zeros(0), np.zeros(0)
        packed = PackedSequences(sequences.matrix, sequences.lengths)
        with single_threaded_blas():
            unary, transition = self._constrained(
                packed.layout, packed.unary(self.state_weights_), self._transition_potentials())
            lattice = chain_lattice(unary, transition, packed.layout)
            entropies = position_entropies(lattice)
        return (sequences, *map(packed.unpack, entropies))

    def _span_entropy_tables(self, X):
        # A span's entropy is node[first] + pair[first + 1] + (cumulative[last] -
        # cumulative[first + 1]): the chain rule's terms (`position_entropies`). All indices
        # lie in one sequence, so a cumulative sum over all tokens serves.
        sequences, node, pair, conditional = self._token_entropies(X)
        return sequences, node, pair, np.cumsum(conditional)

    @staticmethod
    def _span_entropies(node, pair, cumulative, firsts, lasts):
        """Entropies of the spans of tokens ``firsts[k]..lasts[k]`` (arrays of indices)."""
        second = np.minimum(firsts + 1, lasts)
        return (node[firsts] + np.where(lasts > firsts, pair[second], 0.0)
                + cumulative[lasts] - cumulative[second])
