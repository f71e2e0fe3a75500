"""Optimisers shared by the estimators."""

from .lbfgs import LBFGSResult, l1_split_objective, minimize_lbfgs

__all__ = ["minimize_lbfgs", "l1_split_objective", "LBFGSResult"]
