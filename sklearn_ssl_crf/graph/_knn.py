"""`knn_graph`: the graph over single tokens given as feature rows (the letters of
handwritten words, §4.3), optionally with their neighbours' rows as context.
"""

from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import normalize

from ..utils import SequenceMatrix, is_matrix_input, matrices_to_sequence_matrix
from ._approximate import approximate_knn_weights, search_algorithm
from ._search import _check_positive_int, _check_real, _mutual_knn
from ._similarity_graph import SimilarityGraph, _token_positions


def knn_graph(X, n_neighbors=20, min_similarity=None, self_weight=None,
              max_block_entries=2**22, algorithm="auto"):
    """Mutual k-nearest-neighbour graph with one vertex per token (He et al. 2013 §4.3).

    Tokens are compared by the cosine ``s(u, v)`` of their feature rows (the paper's
    handwriting graph compares letter pixels, and then an Earth Mover's distance, left out
    here). Two tokens are joined when each is among the other's ``n_neighbors`` most similar
    tokens.

    Parameters
    ----------
    X : SequenceMatrix or list of (n_tokens, n_features) arrays or sparse matrices
        One feature row per token, the sequences one after the other.
    n_neighbors : int, default=20
        The k of the mutual k-NN criterion (the paper's value for handwriting).
    min_similarity : float in [-1, 1), default=None
        Only pairs with ``s(u, v) > min_similarity`` are candidates (the paper uses 0.3).
    self_weight : float in (0, 1], default=None
        The weight alpha of a token's own similarity: rank candidates by
        ``alpha s(u, v) + (1 - alpha) (s(u_l, v_l) + s(u_r, v_r))``, where ``u_l`` and
        ``u_r`` are the tokens before and after ``u`` in its sequence (a missing neighbour
        contributes 0); the paper uses 0.8. None: by ``s(u, v)``.
    max_block_entries : int, default=2**22
        About how many similarities are held at once: a block of rows is compared with all
        tokens, ``block rows x n_tokens <= max_block_entries`` (at least one row; blocks of
        sparse rows are sized by a bound on their nonzero similarities instead). Inside
        joblib's dask backend the blocks are searched on the cluster's workers, with the
        same graph.
    algorithm : {'auto', 'exact', 'hnsw'}, default='auto'
        How each token's candidates are found. 'exact': compared with every token, in
        blocks (time grows with the square of the tokens: about 3 minutes for 10^5 rows of
        128 pixels on 2 cores). 'hnsw': from an approximate nearest-neighbour index
        (faiss's HNSW; the optional extra ``ann``, ``pip install faiss-cpu``), searched for
        ``2 * n_neighbors + 1`` candidates per token whose similarities are then computed
        exactly; sparse rows wider than 256 columns enter the index reduced by truncated
        SVD. It finds most, not all, of the exact graph's edges (98 % on letter-like
        rows). 'auto': 'hnsw' from 200,000 tokens when faiss is installed, else 'exact'.

    Returns
    -------
    graph : SimilarityGraph
        Vertex ``i`` is token ``i`` (``token_vertices = arange(n_tokens)``); the weight of an
        edge is the (mixed) similarity that ranked it.

    See Also
    --------
    trigram_graph : The graph over the trigram types of text.
    SimilarityGraph : The graph returned.

    Notes
    -----
    The mixed similarity is ``alpha s(u, v)`` plus the dot product of the neighbour rows
    ``[sqrt(1 - alpha) F_left, sqrt(1 - alpha) F_right]``, where ``F_left`` / ``F_right`` hold
    the unit-length rows of each token's neighbours (zero where there is none). It costs as
    much as one product of the augmented rows ``[sqrt(alpha) F, sqrt(1 - alpha) F_left,
    sqrt(1 - alpha) F_right]``, and yields ``s(u, v)`` for ``min_similarity`` on the way. A
    token whose own row is all zeros has no
    edges. Only positive similarities make edges; among equally similar candidates the lower
    token number is preferred.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ssl_crf.graph import knn_graph
    >>> words = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.9, 0.1], [0.1, 0.9]])]
    >>> graph = knn_graph(words, n_neighbors=1)
    >>> graph.token_vertices
    array([0, 1, 2, 3])
    >>> vertices, weights = graph.neighbors(0)
    >>> vertices, [round(weight, 3) for weight in weights]
    ([2], [0.994])
    """
    n_neighbors = _check_positive_int(n_neighbors, "n_neighbors")
    max_block_entries = _check_positive_int(max_block_entries, "max_block_entries")
    if min_similarity is not None:
        min_similarity = _check_real(min_similarity, "min_similarity", "[-1, 1)",
                                     lambda value: -1 <= value < 1)
    if self_weight is not None:
        self_weight = _check_real(self_weight, "self_weight", "(0, 1]",
                                  lambda value: 0 < value <= 1)
    sequences = _feature_sequences(X)
    algorithm = search_algorithm(algorithm, sequences.n_tokens)
    own = normalize(sequences.matrix)
    if algorithm == "hnsw":
        weights = approximate_knn_weights(own, n_neighbors, min_similarity, self_weight,
                                          sequences.offsets)
    elif self_weight is None or self_weight == 1:
        floor = 0.0 if min_similarity is None else max(min_similarity, 0.0)
        weights = _mutual_knn(own, n_neighbors, max_block_entries, min_similarity=floor)
    else:
        left, right = _neighbour_rows(own, sequences.offsets)
        context = np.sqrt(1 - self_weight) * sp.hstack([left, right], format="csr")
        # Without a row of its own a token has no similarity s, only its neighbours'.
        excluded = np.asarray(abs(own).sum(axis=1)).ravel() == 0
        weights = _mutual_knn(context, n_neighbors, max_block_entries, own_rows=own,
                              own_weight=self_weight, min_own_similarity=min_similarity,
                              excluded=excluded if excluded.any() else None)
    return SimilarityGraph._built(weights, np.arange(sequences.n_tokens, dtype=np.int64))


def _feature_sequences(X):
    """X as a finite-valued `SequenceMatrix` with at least one token."""
    if not isinstance(X, SequenceMatrix):
        if isinstance(X, (str, bytes, Mapping)) or sp.issparse(X) or not hasattr(X, "__iter__"):
            raise TypeError("X must be a SequenceMatrix or a list of per-sequence feature "
                            f"matrices, got {type(X).__name__}")
        X = list(X)
        if not X:
            raise ValueError("X is empty: knn_graph needs at least one sequence")
        if not is_matrix_input(X):
            raise TypeError("knn_graph needs feature matrices (a SequenceMatrix, or a 2-d array "
                            f"or sparse matrix per sequence); sequence 0 of X is of type "
                            f"{type(X[0]).__name__}: featurise words first, e.g. with "
                            "SequenceVectorizer")
    sequences = matrices_to_sequence_matrix(X)
    if sequences.n_tokens == 0:
        raise ValueError("X has no tokens")
    return sequences


def _neighbour_rows(rows, offsets):
    """The rows of the tokens before and after each token in its sequence (zero rows where
    there is none)."""
    position, length = _token_positions(offsets)
    n_tokens = position.size
    shifted = []
    for shift, has_neighbour in ((-1, position > 0), (1, position < length - 1)):
        targets = np.flatnonzero(has_neighbour)
        selector = sp.csr_matrix((np.ones(targets.size), (targets, targets + shift)),
                                 shape=(n_tokens, n_tokens))
        shifted.append(sp.csr_matrix(selector @ rows))
    return shifted
