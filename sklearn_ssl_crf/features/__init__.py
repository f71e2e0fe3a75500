"""Features: tokens to the estimators' input.

`WindowFeatures` builds sklearn-crfsuite's feature dicts from plain tokens, `WindowRows`
sparse rows from tokens that are rows of numbers, `SequenceVectorizer` turns feature dicts
into a `~sklearn_ssl_crf.SequenceMatrix`, and `WordClusters` learns word clusters and vectors
from unlabelled text for `WindowFeatures` to use.
"""

from ._vectorizer import SequenceVectorizer
from ._window_features import WindowFeatures
from ._window_rows import WindowRows
from ._word_clusters import WordClusters

__all__ = ["SequenceVectorizer", "WindowFeatures", "WindowRows", "WordClusters"]
