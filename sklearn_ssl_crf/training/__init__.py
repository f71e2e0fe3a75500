"""The training path's parts below the estimators: records of the data, selection
of settings, graph-PR's EM, NGD's mini-batch objective, checkpoints."""

from ._checkpoints import GeneratorState, RunCheckpoints
from ._graph_pr_em import EMSettings, ExpectationMaximisation
from ._records import (
    Fold,
    FoldRun,
    InitStart,
    LoggingCallback,
    Phase,
    Problem,
    UnlabeledSample,
)
from ._selection import (
    HeldOut,
    Iterates,
    cv_results,
    describe_settings,
    first_best,
    held_out_splits,
    padded_scores,
    sample_positions,
    setting_candidates,
    unlabeled_sample,
)
from ._stochastic import StochasticSamples, union_masks

__all__ = [
    "EMSettings", "ExpectationMaximisation", "Fold", "FoldRun", "GeneratorState", "HeldOut",
    "InitStart", "Iterates", "LoggingCallback", "Phase", "Problem", "RunCheckpoints",
    "StochasticSamples", "UnlabeledSample", "cv_results", "describe_settings", "first_best",
    "held_out_splits", "padded_scores", "sample_positions", "setting_candidates", "union_masks",
    "unlabeled_sample"
]
