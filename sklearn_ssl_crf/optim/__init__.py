"""Optimisers shared by the estimators."""

from .lbfgs import CurvatureHistory, LBFGSResult, minimize_lbfgs, pseudo_gradient

__all__ = ["minimize_lbfgs", "pseudo_gradient", "LBFGSResult", "CurvatureHistory"]
