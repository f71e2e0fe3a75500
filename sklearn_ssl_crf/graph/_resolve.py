"""`resolve_graph`: an estimator's ``graph`` parameter as a graph aligned with its training
tokens.
"""

from ..utils import SequenceMatrix, is_matrix_input
from ._knn import knn_graph
from ._similarity_graph import SimilarityGraph
from ._trigram import TrigramWords, trigram_graph


def resolve_graph(graph, X, sequences, n_neighbors=None, word_key="word.lower",
                  n_jobs=None):
    """Get the similarity graph an estimator's ``graph`` parameter asks for, aligned with X.

    A graph given as a name is built (`trigram_graph` or `knn_graph`); a given graph is used
    as it is. Either way, the graph must map as many tokens as X has.

    Parameters
    ----------
    graph : {"trigram", "knn"} or SimilarityGraph
        ``"trigram"``: `trigram_graph` of the words of X; ``"knn"``: `knn_graph` of the
        token rows of ``sequences``; a `SimilarityGraph`: used as given, after checking it
        maps as many tokens as X has.
    X : list of sequences, or TrigramWords
        The training input as the user gave it (labelled and unlabelled sequences
        together), or, for ``"trigram"``, its words already read (`TrigramWords`).
    sequences : SequenceMatrix
        The featurised X.
    n_neighbors : int, default=None
        The k of the mutual k-NN graph; None: 60 for ``"trigram"``, 20 for ``"knn"``.
    word_key : str, default="word.lower"
        The key of the word in feature dicts, for ``"trigram"``.
    n_jobs : int, default=None
        Threads of `trigram_graph`'s search, for ``"trigram"``.

    Returns
    -------
    graph : SimilarityGraph
        The graph, whose ``token_vertices`` has one entry per token of X.

    See Also
    --------
    trigram_graph : The graph built for ``"trigram"``.
    knn_graph : The graph built for ``"knn"``.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from sklearn_ssl_crf.graph import resolve_graph
    >>> from sklearn_ssl_crf import SequenceMatrix
    >>> X = [["The", "cat", "sat"], ["The", "dog", "sat"]]
    >>> sequences = SequenceMatrix(sp.identity(6, format="csr"), [0, 3, 6])
    >>> resolve_graph("trigram", X, sequences)
    <SimilarityGraph of 6 vertices, 3 edges, 6 tokens>
    >>> resolve_graph("knn", X, sequences)
    <SimilarityGraph of 6 vertices, 0 edges, 6 tokens>
    """
    if isinstance(graph, SimilarityGraph):
        built = graph
    elif isinstance(graph, str) and graph == "trigram":
        if not isinstance(X, TrigramWords) and (isinstance(X, SequenceMatrix)
                                                or is_matrix_input(X)):
            raise TypeError("graph='trigram' needs words: pass feature dicts or tokens, or "
                            "pass a SimilarityGraph")
        built = trigram_graph(X, 60 if n_neighbors is None else n_neighbors,
                              word_key=word_key, n_jobs=n_jobs)
    elif isinstance(graph, str) and graph == "knn":
        built = knn_graph(sequences, 20 if n_neighbors is None else n_neighbors)
    else:
        error = ValueError if isinstance(graph, str) else TypeError
        raise error(f"graph must be 'trigram', 'knn' or a SimilarityGraph, got {graph!r}")
    built.check_n_tokens(sequences.n_tokens)
    return built
