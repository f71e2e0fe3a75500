"""Semi-supervised linear-chain conditional random fields with a scikit-learn API."""

from . import datasets, features, graph, inference, metrics, objective
from ._crf import CRF
from ._crf_cv import CRFCV
from ._graph_pr import GraphPRCRF
from ._graph_propagation import GraphPropagation
from ._model_files import load, save
from ._natural_gradient import NaturalGradientCRF
from ._self_training import SelfTrainingCRF
from ._semi_supervised import EntropyRegularizedCRF, SemiSupervisedCRF
from ._sequences import SequenceMatrix, UnlabeledSequences
from .features import SequenceVectorizer, WindowFeatures, WindowRows, WordClusters
from .graph import SimilarityGraph

__version__ = "0.1.0.dev0"

__all__ = [
    "CRF",
    "CRFCV",
    "EntropyRegularizedCRF",
    "GraphPRCRF",
    "GraphPropagation",
    "NaturalGradientCRF",
    "SemiSupervisedCRF",
    "SelfTrainingCRF",
    "SequenceVectorizer",
    "WindowFeatures",
    "WindowRows",
    "WordClusters",
    "SequenceMatrix",
    "UnlabeledSequences",
    "SimilarityGraph",
    "features",
    "inference",
    "metrics",
    "datasets",
    "graph",
    "objective",
    "load",
    "save",
]
