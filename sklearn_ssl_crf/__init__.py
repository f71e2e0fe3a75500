"""Semi-supervised linear-chain conditional random fields with a scikit-learn API."""

from . import datasets, features, graph, inference, metrics, objective
from .crf import CRF
from .crf_cv import CRFCV
from .features import SequenceVectorizer, WindowFeatures, WindowRows, WordClusters
from .graph import SimilarityGraph
from .graph_pr import GraphPRCRF
from .graph_propagation import GraphPropagation
from .model_files import load, save
from .natural_gradient import NaturalGradientCRF
from .self_training import SelfTrainingCRF
from .semi_supervised import EntropyRegularizedCRF, SemiSupervisedCRF
from .sequences import SequenceMatrix, UnlabeledSequences

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
