"""Objective terms: each written once, as a value and its gradient.

- with respect to the potentials of packed sequences (`log_likelihood`, `log_partition`,
  `unlabelled_terms`, `label_count_gradient`), mapped to weights by the packed layout;
- convex penalties on the node marginals of unlabelled tokens, through their sums over
  groups of tokens (`GraphLaplacianPenalty`, `LabelProportionPenalty`);
- and, in the private ``_weights`` module, the objectives the optimisers minimise, as
  functions of the weight vector over chunks of sequences.
"""

from ._penalties import GraphLaplacianPenalty, LabelProportionPenalty, MarginalPenalty
from ._potentials import label_count_gradient, log_likelihood, log_partition, unlabelled_terms

__all__ = [
    "GraphLaplacianPenalty",
    "LabelProportionPenalty",
    "MarginalPenalty",
    "label_count_gradient",
    "log_likelihood",
    "log_partition",
    "unlabelled_terms",
]
