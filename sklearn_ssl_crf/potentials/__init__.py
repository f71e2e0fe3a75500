"""The map from weights to potentials: sequences packed in the kernels' chain layout
(`PackedSequences`, which maps weights to potentials and gradients back), the parameter
vector's layout (`WeightLayout`) and the masks of the weights that exist.
"""

from ._packed import (
    GroupSums,
    MarginalSums,
    PackedSequences,
    group_indicator,
    marginal_unit,
    transition_counts,
)
from ._weight_layout import (
    WeightLayout,
    observed_weight_masks,
    seen_structure,
    transition_potentials,
)

__all__ = [
    "PackedSequences", "transition_counts", "WeightLayout", "observed_weight_masks",
    "seen_structure", "transition_potentials", "group_indicator", "GroupSums",
    "MarginalSums", "marginal_unit",
]
