"""Semi-supervised linear-chain conditional random fields with a scikit-learn API."""

from . import datasets, inference, metrics
from .crf import CRF
from .featurize import SequenceVectorizer, WindowFeatures
from .natural_gradient import NaturalGradientCRF
from .self_training import SelfTrainingCRF
from .semi_supervised import EntropyRegularizedCRF, SemiSupervisedCRF
from .sequences import SequenceMatrix

__version__ = "0.1.0.dev0"

__all__ = [
    "CRF",
    "EntropyRegularizedCRF",
    "NaturalGradientCRF",
    "SemiSupervisedCRF",
    "SelfTrainingCRF",
    "SequenceVectorizer",
    "WindowFeatures",
    "SequenceMatrix",
    "inference",
    "metrics",
    "datasets",
]
