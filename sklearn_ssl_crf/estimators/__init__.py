"""The estimators, their base class and its mixins."""

from ._base import BaseCRF
from ._crf import CRF
from ._crf_cv import CRFCV
from ._entropy_regularized import EntropyRegularizedCRF, SemiSupervisedCRF
from ._graph_pr import GraphPRCRF
from ._graph_propagation import GraphPropagation
from ._label_constraints import LabelConstraints
from ._natural_gradient import NaturalGradientCRF
from ._prediction import NoLabellingError
from ._self_training import SelfTrainingCRF

__all__ = [
    "BaseCRF", "CRF", "CRFCV", "EntropyRegularizedCRF", "GraphPRCRF", "GraphPropagation",
    "LabelConstraints", "NaturalGradientCRF", "NoLabellingError", "SelfTrainingCRF",
    "SemiSupervisedCRF"
]
