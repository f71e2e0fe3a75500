"""Objective terms: each written once, as a value and its gradient.

- with respect to the potentials of packed sequences (`log_likelihood`, `log_partition`,
  `unlabelled_terms`, `label_count_gradient`), mapped to weights by the packed layout;
- convex penalties on the node marginals of unlabelled tokens, through their sums over
  groups of tokens (`GraphLaplacianPenalty`, `LabelProportionPenalty`);
- and, in the private ``_weights`` module, the objectives the optimisers minimise, as
  functions of the weight vector over chunks of sequences.
"""

# Names imported `as` themselves serve the package's other folders: not public API.
from ._penalties import GraphLaplacianPenalty, LabelProportionPenalty, MarginalPenalty
from ._penalties import target_proportions as target_proportions
from ._posterior_regularization import PosteriorRegularizationTerms as PosteriorRegularizationTerms
from ._posterior_regularization import auxiliary_unary as auxiliary_unary
from ._potentials import clamp_unary as clamp_unary
from ._potentials import cost_augmented as cost_augmented
from ._potentials import label_count_gradient, log_likelihood, log_partition, unlabelled_terms
from ._potentials import sequence_log_likelihood as sequence_log_likelihood
from ._weights import add_unlabeled_terms as add_unlabeled_terms
from ._weights import chunk_log_likelihood as chunk_log_likelihood
from ._weights import entropy_regularised_objective as entropy_regularised_objective
from ._weights import penalised_negative_log_likelihood as penalised_negative_log_likelihood

__all__ = [
    "GraphLaplacianPenalty", "LabelProportionPenalty", "MarginalPenalty", "label_count_gradient",
    "log_likelihood", "log_partition", "unlabelled_terms",
]
