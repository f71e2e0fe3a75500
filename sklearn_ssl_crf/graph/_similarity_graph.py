"""`SimilarityGraph`: a sparse symmetric non-negative weight matrix over vertices, and the
vertex of every token of the sequences it was built for. Vertices can be token types
(trigram types of text, He et al. 2013 §4.2: many tokens share a vertex) or single tokens
(one vertex per letter image, §4.3).
"""

import numpy as np
import scipy.sparse as sp


class SimilarityGraph:
    """A weighted similarity graph and the vertex of every token of some sequences.

    The weights form a sparse symmetric non-negative matrix over the vertices. A vertex can
    stand for a token type (the trigram types of text, He et al. 2013 §4.2: many tokens
    share a vertex) or for a single token (one vertex per letter image, §4.3).

    Parameters
    ----------
    weights : sparse matrix or array-like of shape (n_vertices, n_vertices)
        Edge weights: symmetric, non-negative and finite, with a zero diagonal. Copied.
    token_vertices : array-like of int of shape (n_tokens,)
        The vertex of every token of the sequences the graph describes, sequences laid end
        to end in the order they are given to ``fit``; -1 for a token without a vertex.
    vertex_names : sequence of length n_vertices, default=None
        What each vertex stands for (a trigram, a token position, ...), for inspection.

    Attributes
    ----------
    weights : scipy.sparse.csr_matrix of float64
    token_vertices : ndarray of int64
    vertex_names : list or None

    See Also
    --------
    trigram_graph : Builds the graph over the trigram types of text.
    knn_graph : Builds the graph with one vertex per token.
    GraphPRCRF : Uses a graph as a posterior regulariser.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ssl_crf.graph import SimilarityGraph
    >>> weights = np.array([[0.0, 0.5, 0.0], [0.5, 0.0, 1.0], [0.0, 1.0, 0.0]])
    >>> graph = SimilarityGraph(weights, token_vertices=[0, 1, -1, 2, 1])
    >>> graph.n_vertices, graph.n_tokens
    (3, 5)
    >>> graph.neighbors(1)
    ([2, 0], [1.0, 0.5])
    """

    def __init__(self, weights, token_vertices, vertex_names=None):
        self.weights = _check_weights(weights)
        self.token_vertices = _check_token_vertices(token_vertices, self.weights.shape[0])
        if vertex_names is not None:
            vertex_names = list(vertex_names)
            if len(vertex_names) != self.weights.shape[0]:
                raise ValueError(f"{len(vertex_names)} vertex names for "
                                 f"{self.weights.shape[0]} vertices")
        self.vertex_names = vertex_names

    @classmethod
    def _built(cls, weights, token_vertices, vertex_names=None):
        """A graph the package's builders made, taken as it is: their weights are a
        canonical CSR matrix of float64, exactly symmetric with positive entries off the
        diagonal, and their token vertices int64, by construction. Not copied or checked
        again: the check's copies would be several times a large graph (10^6 sentences
        give a trigram graph of 5 GB)."""
        graph = cls.__new__(cls)
        graph.weights, graph.token_vertices = weights, token_vertices
        graph.vertex_names = vertex_names
        return graph

    @property
    def n_vertices(self):
        return self.weights.shape[0]

    @property
    def n_tokens(self):
        return self.token_vertices.size

    def neighbors(self, vertex):
        """Get the neighbours of a vertex and their edge weights, heaviest first.

        Parameters
        ----------
        vertex : int
            A vertex, in ``0 .. n_vertices - 1``.

        Returns
        -------
        vertices : list of int
            The neighbours, by decreasing edge weight (ties in index order).
        weights : list of float
            Their edge weights, in the same order.
        """
        if not 0 <= vertex < self.n_vertices:
            raise ValueError(f"vertex {vertex} is not in 0..{self.n_vertices - 1}")
        row = self.weights[vertex]
        order = np.argsort(-row.data, kind="stable")
        return row.indices[order].tolist(), row.data[order].tolist()

    def check_n_tokens(self, n_tokens, name="X"):
        """Raise a ValueError unless the graph describes ``n_tokens`` tokens.

        Parameters
        ----------
        n_tokens : int
            The number of tokens of the sequences the graph is used with.
        name : str, default="X"
            The name of those sequences in the error message.
        """
        if self.n_tokens != n_tokens:
            raise ValueError(
                f"the graph maps {self.n_tokens} tokens to vertices, but {name} has "
                f"{n_tokens} tokens: build it for the same sequences, in the same order"
            )

    def __repr__(self):
        return (f"<SimilarityGraph of {self.n_vertices} vertices, {self.weights.nnz // 2} "
                f"edges, {self.n_tokens} tokens>")


def _check_weights(weights):
    if sp.issparse(weights):
        weights = sp.csr_matrix(weights, dtype=np.float64, copy=True)
    else:
        try:
            dense = np.array(weights, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise TypeError("weights must be a scipy.sparse matrix or a 2-d array of numbers, "
                            f"got {type(weights).__name__}") from error
        if dense.ndim != 2:
            raise ValueError(f"weights must be 2-d (vertices x vertices), got {dense.ndim}-d")
        weights = sp.csr_matrix(dense)
    n_rows, n_columns = weights.shape
    if n_rows != n_columns:
        raise ValueError(f"weights must be square (vertices x vertices), got {weights.shape}")
    if not np.isfinite(weights.data).all():
        raise ValueError("weights contain NaN or infinite values")
    if (weights.data < 0).any():
        raise ValueError("weights must be non-negative (similarities, not distances)")
    if weights.diagonal().any():
        raise ValueError("weights must have a zero diagonal (no self-loops)")
    weights.eliminate_zeros()
    weights.sum_duplicates()
    asymmetry = abs(weights - weights.T)
    if asymmetry.nnz and asymmetry.max() > 1e-12 * max(weights.max(), 1e-300):
        raise ValueError("weights must be symmetric (w[a, b] == w[b, a])")
    return weights


def _check_token_vertices(token_vertices, n_vertices):
    vertices = np.asarray(token_vertices)
    if vertices.ndim != 1:
        raise ValueError(f"token_vertices must be 1-d (one vertex per token), got "
                         f"{vertices.ndim}-d")
    if vertices.size and not np.issubdtype(vertices.dtype, np.integer):
        raise TypeError(f"token_vertices must be integers, got dtype {vertices.dtype}")
    vertices = vertices.astype(np.int64)
    if vertices.size and (vertices.min() < -1 or vertices.max() >= n_vertices):
        raise ValueError(f"token_vertices must be in -1..{n_vertices - 1} (-1: no vertex)")
    return vertices


def _token_positions(offsets):
    """Position of every token in its sequence, and its sequence's length."""
    lengths = np.diff(offsets)
    sequence = np.repeat(np.arange(lengths.size), lengths)
    return np.arange(offsets[-1]) - offsets[sequence], lengths[sequence]
