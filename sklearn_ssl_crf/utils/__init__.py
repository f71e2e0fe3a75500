"""Small helpers every layer may use: sequences and their validation, label tags,
threads and the dask cluster in use, memory, files written atomically, interruptions."""

from ._files import atomic_path, open_regular_file
from ._interruption import unchanged_on_failure, unfitted_on_failure
from ._keyword_only import KeywordOnlyParameters
from ._memory import release_freed_memory
from ._memory_needs import check_fit_memory, check_memory
from ._random import fit_random_state
from ._sequences import SequenceMatrix, UnlabeledSequences, row_blocks, sequence_lists
from ._tags import LabelledSequenceTagsMixin, SequenceTagsMixin
from ._threads import dask_client, single_threaded_blas
from ._validation import (
    MAX_FEATURE_VALUE,
    as_sequence_list,
    check_feature_values,
    check_labels,
    concatenate_inputs,
    encode_labels,
    feature_value_error,
    is_matrix_input,
    matrices_to_sequence_matrix,
    not_sequences_error,
    select_sequences,
    sequence_lengths,
    stack_sequences,
    unlabeled_input,
)

__all__ = [
    "KeywordOnlyParameters", "LabelledSequenceTagsMixin", "MAX_FEATURE_VALUE", "SequenceMatrix",
    "SequenceTagsMixin", "UnlabeledSequences", "as_sequence_list", "atomic_path",
    "check_feature_values", "check_fit_memory", "check_labels", "check_memory",
    "concatenate_inputs", "dask_client", "encode_labels", "feature_value_error", "fit_random_state",
    "is_matrix_input", "matrices_to_sequence_matrix",
    "not_sequences_error", "open_regular_file",
    "release_freed_memory", "row_blocks", "select_sequences", "sequence_lengths", "sequence_lists",
    "single_threaded_blas", "stack_sequences", "unchanged_on_failure", "unfitted_on_failure",
    "unlabeled_input"
]
