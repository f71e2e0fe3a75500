"""Semi-supervised linear-chain conditional random fields with a scikit-learn API."""

from . import datasets, features, graph, inference, metrics, objective
from .estimators import (
    CRF,
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    GraphPropagation,
    NaturalGradientCRF,
    SelfTrainingCRF,
    SemiSupervisedCRF,
)
from .features import SequenceVectorizer, WindowFeatures, WindowRows, WordClusters
from .graph import SimilarityGraph
from .model_files import load, save
from .utils import SequenceMatrix, UnlabeledSequences

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
