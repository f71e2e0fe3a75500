"""Similarity graphs over tokens for graph-based semi-supervised learning.

A `SimilarityGraph` is a sparse symmetric non-negative weight matrix over vertices and the
vertex of every token of the sequences it was built for. `trigram_graph` and `knn_graph`
build the two kinds of graph of He et al. (2013) as mutual k-nearest-neighbour graphs over
one shared similarity search; `resolve_graph` turns an estimator's ``graph`` parameter into
a graph aligned with its training tokens.
"""

from ._knn import knn_graph
from ._resolve import resolve_graph
from ._similarity_graph import SimilarityGraph
from ._trigram import TrigramWords, trigram_graph

__all__ = ["SimilarityGraph", "TrigramWords", "knn_graph", "resolve_graph", "trigram_graph"]
