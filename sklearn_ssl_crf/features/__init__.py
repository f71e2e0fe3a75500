"""Features: tokens to the estimators' input.

`WindowFeatures` builds sklearn-crfsuite's feature dicts from plain tokens, `WindowRows`
sparse rows from tokens that are rows of numbers, `SequenceVectorizer` turns feature dicts
into a `~sklearn_ssl_crf.SequenceMatrix`, and `WordClusters` learns word clusters and vectors
from unlabelled text for `WindowFeatures` to use.
"""

# Names imported `as` themselves serve the package's other folders: not public API.
from ._encoding import ColumnCache as ColumnCache
from ._vectorizer import SequenceVectorizer
from ._window_features import WindowFeatures
from ._window_rows import WindowRows
from ._word_clusters import WordClusters

__all__ = ["SequenceVectorizer", "WindowFeatures", "WindowRows", "WordClusters"]
