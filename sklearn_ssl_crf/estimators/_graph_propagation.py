"""`GraphPropagation`: the graph-propagation baseline of He, Gillenwater & Taskar (2013).

Labels spread over a similarity graph from the vertices of labelled tokens, with no model of
the sequence (§4.4, eq. 22). It is the transductive baseline of graph-based posterior
regularisation (`GraphPRCRF`); a CRF trained on its output is the GP -> CRF baseline.
"""

import warnings
from collections.abc import Mapping
from itertools import chain
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, reverse_cuthill_mckee
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from ..graph import SimilarityGraph, TrigramWords, resolve_graph
from ..metrics import no_labelled_sequence_error
from ..utils import (
    KeywordOnlyParameters,
    LabelledSequenceTagsMixin,
    SequenceMatrix,
    as_sequence_list,
    check_labels,
    check_memory,
    encode_labels,
    sequence_lists,
    stack_sequences,
    unfitted_on_failure,
)
from ._base import checked_stream, featurise_training_input

__all__ = ["GraphPropagation"]


class GraphPropagation(KeywordOnlyParameters, LabelledSequenceTagsMixin, BaseEstimator):
    """Graph propagation of token labels (He et al. 2013, equation 22; Zhu et al. 2003).

    Every vertex of a similarity graph holds a distribution over the labels. A vertex with
    labelled tokens is clamped to the empirical distribution of their labels; every other
    vertex becomes the weighted average of its neighbours' distributions::

        q_v = sum_u w_uv q_u / d_v,    d_v = sum_u w_uv

    the fixed point of the paper's steps on ``sum_uv w_uv ||q_u - q_v||^2`` (eq. 22, step
    size ``1 / d_v``) and the harmonic solution of Zhu et al. (2003). It is found by
    solving that linear system with conjugate gradients preconditioned by two of the paper's
    steps, which needs far fewer passes over the graph than the steps alone, until no free
    vertex differs from the average of its neighbours by more than ``tol``.

    Labels of the training tokens (``transduction_``):

    - a labelled token keeps its gold label;
    - a token of a vertex that a clamped vertex reaches gets the vertex's most probable
      label (ties: the first in ``classes_``); all tokens of a vertex get the same label;
    - a token of a vertex that no clamped vertex reaches (a component without labelled
      tokens, an isolated vertex) gets the most frequent label of the labelled tokens that
      have a vertex: propagation told it nothing, and its uniform distribution would only
      pick the first class;
    - a token without a vertex (punctuation in a trigram graph) gets the most frequent label
      of the labelled tokens without a vertex, or of all labelled tokens if they all have
      one.

    Parameters
    ----------
    graph : {'trigram', 'knn'} or SimilarityGraph, default='trigram'
        The graph over the training tokens. 'trigram' (one vertex per trigram type of the
        words, §4.2) and 'knn' (one vertex per token, by the cosine of feature rows, §4.3)
        are built by `sklearn_ssl_crf.graph.resolve_graph`; a given graph must have been
        built for the sequences passed to ``fit``, in that order (X, then X_unlabeled).
    n_neighbors : int, default=None
        The k of the mutual k-NN graph built; None: 60 for 'trigram', 20 for 'knn'.
    word_key : str, default='word.lower'
        The key of a token's word in the feature dicts, for 'trigram'.
    max_iterations : int, default=1000
        Maximum number of conjugate-gradient iterations; a `ConvergenceWarning` says when
        they were not enough.
    tol : float, default=1e-6
        Stop when no entry of a free vertex's distribution differs from the average of its
        neighbours' by more than ``tol``.
    verbose : bool, default=False
        Print that largest difference after every iteration.

    Attributes
    ----------
    classes_ : list
        Labels, in order of first appearance in the labelled sequences.
    graph_ : SimilarityGraph
        The graph used (built in ``fit`` unless given).
    label_distributions_ : ndarray of shape (n_vertices, n_classes)
        The distribution of every vertex over ``classes_`` (uniform where no clamped
        vertex reaches).
    transduction_ : list of lists
        One label sequence per training sequence, in the order given (X, then
        X_unlabeled): the gold labels of the labelled sequences, the propagated labels of
        the unlabelled ones.
    n_iter_ : int
        Conjugate-gradient iterations run (each multiplies by the graph twice).
    termination_condition_ : {'converged', 'max_iter'}
        Why propagation stopped ('converged' also when no vertex was free to move).

    See Also
    --------
    GraphPRCRF : The graph as a posterior regulariser of a CRF.
    sklearn.semi_supervised.LabelPropagation : The same idea for i.i.d. samples.

    Examples
    --------
    One vertex per word type: "the" is like "a", "dog" like "cat".

    >>> import numpy as np
    >>> from sklearn_ssl_crf.graph import SimilarityGraph
    >>> from sklearn_ssl_crf import GraphPropagation
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}]]
    >>> y = [["DET", "NOUN"], None]                   # the second sentence is unlabelled
    >>> weights = np.zeros((4, 4))                    # vertices: the, dog, a, cat
    >>> weights[0, 2] = weights[2, 0] = weights[1, 3] = weights[3, 1] = 1.0
    >>> graph = SimilarityGraph(weights, token_vertices=[0, 1, 2, 3])
    >>> GraphPropagation(graph=graph).fit(X, y).transduction_
    [['DET', 'NOUN'], ['DET', 'NOUN']]

    The GP -> CRF baseline of the paper: a CRF trained on the labelled sequences and the
    propagated labels of the unlabelled ones.

    >>> from sklearn_ssl_crf import CRF
    >>> from sklearn_ssl_crf.datasets import make_sequences
    >>> X, y = make_sequences(100, features="dict", random_state=0)
    >>> y_partial = y[:20] + [None] * 80              # 20 labelled, 80 unlabelled sentences
    >>> gp = GraphPropagation(word_key="word", n_neighbors=10).fit(X, y_partial)
    >>> crf = CRF(c2=0.1).fit(X, gp.transduction_)
    >>> gp.transduction_[:20] == y[:20], len(crf.predict(X)) == 100
    (True, True)
    """

    _parameter_constraints = {
        "graph": [StrOptions({"trigram", "knn"}), SimilarityGraph],
        "n_neighbors": [Interval(Integral, 1, None, closed="left"), None],
        "word_key": [str],
        "max_iterations": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        graph="trigram",
        n_neighbors=None,
        word_key="word.lower",
        max_iterations=1000,
        tol=1e-6,
        verbose=False,
    ):
        self.graph = graph
        self.n_neighbors = n_neighbors
        self.word_key = word_key
        self.max_iterations = max_iterations
        self.tol = tol
        self.verbose = verbose

    @unfitted_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, X_unlabeled=None):
        """Propagate the labels of the labelled tokens over the graph.

        Parameters
        ----------
        X : list of sequences of feature dicts, list of feature matrices, or SequenceMatrix
            The training sequences, labelled and unlabelled.
        y : list of label sequences
            The labels of ``X``; None marks an unlabelled sequence, and a None label a
            token whose label is unknown (partial annotation, as in `CRF`).
        X_unlabeled : iterable of sequences of the same kind as X, default=None
            More unlabelled sequences, appended after X, read once (it may be a
            generator) a block at a time: held as their lengths and, for
            ``graph='trigram'``, their words as integer codes (for ``graph='knn'``, as
            feature rows), never whole as tokens. The similarity graph joins tokens
            across the whole corpus, and ``transduction_`` labels every sequence.

        Returns
        -------
        self : GraphPropagation
            The fitted estimator.
        """
        X = as_sequence_list(X)
        sequences, words = self._training_sequences(X, X_unlabeled)
        labelled_tokens, codes = self._labelled_tokens(y, sequences, len(X))
        self.graph_ = resolve_graph(self.graph, X if words is None else words, sequences,
                                    self.n_neighbors, self.word_key)
        n_vertices, n_labels = self.graph_.n_vertices, len(self.classes_)
        check_memory({f"label counts and distributions ({n_vertices:,} vertices x "
                      f"{n_labels:,} labels)": 16 * n_vertices * n_labels},
                     f"label propagation over {n_vertices:,} vertices and {n_labels:,} "
                     "labels", "fewer labels (merge the rare ones) would fit")
        counts = _vertex_label_counts(self.graph_.token_vertices[labelled_tokens], codes,
                                      self.graph_.n_vertices, len(self.classes_))
        reached = _reached(self.graph_.weights, counts.any(axis=1))
        self.label_distributions_, self.n_iter_, self.termination_condition_ = _propagate(
            self.graph_.weights, counts, reached, self.max_iterations, self.tol, self.verbose)
        if self.termination_condition_ == "max_iter":
            warnings.warn(f"GraphPropagation stopped after max_iterations={self.max_iterations} "
                          f"iterations before every distribution was within tol={self.tol} of "
                          "its neighbours' average; raise max_iterations", ConvergenceWarning,
                          stacklevel=2)
        token_codes = self._token_codes(labelled_tokens, codes, reached)
        labels = np.asarray(self.classes_, dtype=object)[token_codes]
        self.transduction_ = sequence_lists(labels, sequences.offsets)
        return self

    def _training_sequences(self, X, X_unlabeled):
        """The sequences of X and of ``X_unlabeled`` (read once, a block at a time) as one
        `SequenceMatrix`, featurised if the graph is built from feature rows
        (``graph='knn'``) or X is not lists of tokens, otherwise without columns
        (propagation needs only the sequences' lengths); and for ``graph='trigram'`` their
        words (`TrigramWords`), read as they pass, else None."""
        stream = () if X_unlabeled is None else X_unlabeled
        lists = len(X) > 0 and all(type(seq) is list for seq in X)
        if not lists or (isinstance(self.graph, str) and self.graph == "knn"):
            _, sequences, blocks = featurise_training_input(X, stream=stream)
            return (stack_sequences([sequences, *blocks]) if blocks else sequences), None
        stream = checked_stream(stream, X)
        words = None
        if isinstance(self.graph, str) and self.graph == "trigram":
            words = TrigramWords(self.word_key)
            X, stream = words.read_each(X), words.read_each(stream, "X_unlabeled")
        lengths = np.fromiter(chain(map(len, X), map(_streamed_length, stream)),
                              dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        return SequenceMatrix(sp.csr_matrix((int(offsets[-1]), 0)), offsets), words

    def _labelled_tokens(self, y, sequences, n_given):
        """Check y (the labels of the first ``n_given`` sequences), learn ``classes_``.

        Returns the indices of the labelled tokens (all sequences end to end) and their
        label codes.
        """
        labelled = check_labels(y, sequences.lengths[:n_given], partial=True)
        if labelled.size == 0:
            raise no_labelled_sequence_error("y has no labelled sequence to train on")
        self.classes_, codes = encode_labels(y[i] for i in labelled)
        if codes.size == 0:
            raise ValueError("the labelled sequences of y have no tokens")
        is_labelled = np.zeros(len(sequences), dtype=bool)
        is_labelled[labelled] = True
        labelled_tokens = np.flatnonzero(np.repeat(is_labelled, sequences.lengths))
        # A None label (partial annotation) leaves its token unlabelled.
        known = codes >= 0
        return labelled_tokens[known], codes[known]

    def _token_codes(self, labelled_tokens, codes, reached):
        """The label code of every token (rules in the class docstring); ``reached``: the
        vertices that share a component with a clamped vertex."""
        vertices = self.graph_.token_vertices
        n_labels = len(self.classes_)
        has_vertex = vertices[labelled_tokens] >= 0
        vertex_codes = self.label_distributions_.argmax(axis=1)
        vertex_codes[~reached] = _most_frequent(
            codes[has_vertex], codes, n_labels)
        token_codes = np.where(vertices >= 0, vertex_codes[vertices],
                               _most_frequent(codes[~has_vertex], codes, n_labels))
        token_codes[labelled_tokens] = codes
        return token_codes


def _vertex_label_counts(vertices, codes, n_vertices, n_labels):
    """(vertices x labels) counts of the labels ``codes`` of tokens on ``vertices`` (-1:
    none, not counted)."""
    has_vertex = vertices >= 0
    counts = np.bincount(vertices[has_vertex] * n_labels + codes[has_vertex],
                         minlength=n_vertices * n_labels)
    return counts.reshape(n_vertices, n_labels).astype(np.float64)


def _propagate(weights, counts, reached, max_iterations, tol, verbose):
    """The harmonic solution of label propagation, by preconditioned conjugate gradients.

    ``counts`` (vertices x labels) are the labelled tokens' label counts per vertex: a
    vertex with any is clamped to their distribution. Every other vertex that a clamped
    vertex reaches (``reached``, `_reached`) solves ``d_v q_v - sum_u w_uv q_u = 0``: the system
    ``(D - W)_FF q_F = W_FC q_C`` over the free vertices F, symmetric positive definite on
    the components holding a clamped vertex. It is solved for all labels at once, by
    conjugate gradients on the labels' columns stacked into one vector (one step size for
    all), until no free vertex differs from the average of its neighbours by more than
    ``tol`` (the largest change a Jacobi step of eq. 22 would make).

    The preconditioner is two Jacobi steps from zero, ``z = D^-1 r + D^-1 W D^-1 r``: the
    m-step Jacobi preconditioner (Dubois, Greenbaum & Rodrigue 1979; Adams 1985), symmetric
    positive definite because ``D + W`` is (diagonally dominant). The preconditioned
    operator has the eigenvalues ``1 - mu^2`` where Jacobi's has ``1 - mu`` (``mu``: those
    of ``D^-1 W``, in (-1, 1)): with the smallest ``mu`` away from -1, a quarter of the
    condition number, so half the iterations, each with two products by the graph instead
    of one and half the arithmetic on the (free vertices x labels) blocks per product.

    A label that no clamped neighbour of a free vertex holds is 0 on every free vertex and
    is not solved for. The free vertices are put in reverse Cuthill-McKee order, which
    keeps a vertex's neighbours near it in memory for the products. Vertices no clamped
    vertex reaches stay uniform. Returns the distributions, the number of iterations and
    why they stopped.
    """
    n_vertices, n_labels = counts.shape
    clamped = counts.any(axis=1)
    distributions = np.full((n_vertices, n_labels), 1.0 / n_labels)
    distributions[clamped] = counts[clamped] / counts[clamped].sum(axis=1, keepdims=True)
    weights = sp.csr_matrix(weights)
    degrees = np.asarray(weights.sum(axis=1)).ravel()
    is_free = ~clamped & (degrees > 0) & reached
    if not is_free.any():
        return distributions, 0, "converged"
    order = reverse_cuthill_mckee(weights, symmetric_mode=True)
    free = order[is_free[order]]
    rows = weights[free]
    # A free vertex neighbours free and clamped vertices only (the others are not reached).
    rhs = rows @ np.where(clamped[:, None], distributions, 0.0)
    labels = np.flatnonzero(rhs.any(axis=0))
    rhs = rhs[:, labels]
    coupling = rows[:, free]
    inverse_degrees = 1.0 / degrees[free]
    system = sp.diags(degrees[free]) - coupling
    averaging = sp.csr_matrix(  # D^-1 W: a Jacobi step
        (coupling.data * np.repeat(inverse_degrees, np.diff(coupling.indptr)),
         coupling.indices, coupling.indptr), shape=coupling.shape)
    inverse_degrees = inverse_degrees[:, None]
    # Start from each label's share of the clamped neighbours' weight. The clamped
    # distributions sum to 1, so (D - W)_FF 1 = W_FC 1 is the sum of rhs's rows.
    shares = rhs.sum(axis=0) / rhs.sum()
    solution = np.tile(shares, (free.size, 1))
    residual = rhs - np.outer(rhs.sum(axis=1), shares)
    # residual / d_v is the average of v's neighbours minus q_v.
    distance = residual * inverse_degrees
    preconditioned = averaging @ distance
    preconditioned += distance
    direction = preconditioned.copy()
    residual_norm = np.vdot(residual, preconditioned)
    iteration, termination = 0, "max_iter"
    while True:
        change = max(distance.max(initial=0.0), -distance.min(initial=0.0))
        if verbose:
            print(f"GraphPropagation: iteration {iteration}, largest distance from the "
                  f"neighbours' average {change:.3g}", flush=True)
        if change <= tol:
            termination = "converged"
            break
        if iteration == max_iterations:
            break
        iteration += 1
        product = system @ direction
        step = residual_norm / np.vdot(direction, product)
        solution += step * direction
        product *= step
        residual -= product
        np.multiply(residual, inverse_degrees, out=distance)
        preconditioned = averaging @ distance
        preconditioned += distance
        new_norm = np.vdot(residual, preconditioned)
        direction *= new_norm / residual_norm
        direction += preconditioned
        residual_norm = new_norm
    # Exactly, each row sums to 1 and is non-negative (an average of clamped
    # distributions); the solve's rounding is taken back onto the simplex.
    np.maximum(solution, 0.0, out=solution)
    distributions[free] = 0.0
    distributions[free[:, None], labels] = solution / solution.sum(axis=1, keepdims=True)
    return distributions, iteration, termination


def _reached(weights, clamped):
    """Which vertices share a connected component with a clamped vertex."""
    _, components = connected_components(weights, directed=False)
    return np.isin(components, components[clamped])


def _most_frequent(codes, fallback_codes, n_labels):
    """The most frequent of ``codes`` (ties: the lowest), of ``fallback_codes`` if empty."""
    if codes.size == 0:
        codes = fallback_codes
    return int(np.bincount(codes, minlength=n_labels).argmax())


def _streamed_length(sequence):
    """The number of tokens of a sequence of X_unlabeled, whose X holds lists of tokens."""
    if (sp.issparse(sequence) or isinstance(sequence, (np.ndarray, str, bytes, Mapping))
            or not hasattr(sequence, "__len__")):
        raise TypeError(f"X holds lists of tokens, so X_unlabeled must hold them too, not "
                        f"{type(sequence).__name__}")
    return len(sequence)
