"""Optimisers shared by the estimators, and the one loop that runs them."""

from ._best import BestIterate
from ._run import OptimizeResult, StopTraining, improvement_stalled, run_iterations
from .lbfgs import CurvatureHistory, minimize_lbfgs, pseudo_gradient

__all__ = ["minimize_lbfgs", "pseudo_gradient", "OptimizeResult", "CurvatureHistory",
           "StopTraining", "BestIterate", "improvement_stalled", "run_iterations"]
