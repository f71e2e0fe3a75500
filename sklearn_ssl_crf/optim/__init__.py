"""Optimisers shared by the estimators."""

from ._run import StopTraining
from .lbfgs import CurvatureHistory, LBFGSResult, minimize_lbfgs, pseudo_gradient

__all__ = ["minimize_lbfgs", "pseudo_gradient", "LBFGSResult", "CurvatureHistory",
           "StopTraining"]
