"""The objective of `NaturalGradientCRF` one mini-batch at a time: the loss of a batch of
labelled and unlabelled sequences and its gradient over the attributes they use, from the
terms of `objective` (the unlabelled ones with a running mean of the label proportions).
"""

import numpy as np
import scipy.sparse as sp

from ..inference import Workspace
from ..objective import (
    LabelProportionPenalty,
    add_unlabeled_terms,
    chunk_log_likelihood,
    sequence_log_likelihood,
)
from ..optim.specs import Array, Either, ListOf, Number
from ..potentials import (
    PackedSequences,
    WeightLayout,
    observed_weight_masks,
    seen_structure,
)
from ._checkpoints import digest


def _local_matrix(matrix):
    """The attributes (columns) a CSR block of token rows uses, and the block over those
    only."""
    columns, local_columns = np.unique(matrix.indices, return_inverse=True)
    return columns, sp.csr_matrix((matrix.data, local_columns, matrix.indptr),
                                  shape=(matrix.shape[0], columns.size))


class StochasticSamples:
    """Training sequences for stochastic steps: `gradient(trainer, batch)` gives the summed
    loss of a batch of sequences and its gradient, over the attributes they use.

    Sequences ``0 .. n_labelled - 1`` are labelled; the rest are unlabelled, whose loss is
    ``-gamma * sum p log p + proportion_weight * n_tokens * KL(target || pi_hat)`` over the
    step's unlabelled tokens (the terms of `EntropyRegularizedCRF`, sampled), ``pi_hat``
    the running mean marginal of the unlabelled tokens.
    A labelled sequence alone runs `sequence_log_likelihood`, other batches the batched
    kernels.
    Either way the batch's local feature matrices are built at its first step and kept
    (``prepared``, keyed by sequence, may be shared with other samples of the same labelled
    sequences), and ``batches`` holds the composition of larger batches.
    """

    def __init__(self, sequences, n_labelled, codes, n_labels, gamma, proportion_weight,
                 target, prepared=None, order=1, weights=None, label_costs=None):
        self.sequences, self.n_labelled, self.codes = sequences, n_labelled, codes
        # The labelled sequences' weights (None: all 1) and the labels' costs (None: none).
        self.weights, self.label_costs = weights, label_costs
        self.order = order
        # The trainer's transition rows, raveled, are this layout's parameters (no W).
        self.transition_layout = WeightLayout(0, n_labels, order=order)
        self._no_state = np.zeros((0, n_labels))
        self.n_labels, self.gamma, self.proportion_weight = n_labels, gamma, proportion_weight
        self.target = target
        unlabeled_lengths = sequences.lengths[n_labelled:]
        self.n_unlabeled_tokens = int(unlabeled_lengths.sum())
        # Running estimate of the unlabelled tokens' summed marginals and their number,
        # over about the last epoch (see `_unlabeled_terms`).
        self._label_mass = self._token_mass = 0.0
        self.n_samples = len(sequences)
        self.prepared = {} if prepared is None else prepared
        self.batches = None
        self._prepared_batches = {}
        self._workspace = Workspace()
        self._digest = None

    def checkpoint_state(self):
        """What the epochs change (the running label proportions, the batches drawn), and
        a digest of the sequences, labels and settings (`optim.minimize_sgd`'s
        checkpoints: a record of other data is not this run's)."""
        if self._digest is None:
            matrix = self.sequences.matrix
            self._digest = digest(
                matrix.data, matrix.indices, matrix.indptr, self.sequences.offsets,
                self.n_labelled, self.codes, self.weights, self.label_costs, self.order,
                self.gamma, self.proportion_weight, self.target)
        return {"data": self._digest, "label_mass": self._label_mass,
                "token_mass": self._token_mass, "batches": self.batches}

    def restore_checkpoint_state(self, state):
        self._label_mass, self._token_mass = state["label_mass"], state["token_mass"]
        self.batches = state["batches"]

    def checkpoint_spec(self, weights):
        """What a checkpoint of it holds: this data's digest, the running label mass (0
        before the first step) and the batches (sequence indices; None before drawn)."""
        return {"data": self.checkpoint_state()["data"],
                "label_mass": Either(Number(), Array((self.n_labels,))),
                "token_mass": Number(),
                "batches": Either(None, ListOf(Array((None,), np.intp,
                                                     within=(0, self.n_samples))))}

    def labelled_packed(self):
        rows = self.sequences.offsets[self.n_labelled]
        return PackedSequences(self.sequences.matrix[:rows],
                               self.sequences.lengths[:self.n_labelled], self.codes,
                               self.n_labels, order=self.order)

    def weight_masks(self, all_possible_states, all_possible_transitions):
        """The trainer's weights allowed to be non-zero (None: all), from the labelled
        sequences: ``(state_mask, transition_mask)``."""
        if all_possible_states and all_possible_transitions:
            return None, None
        masks = observed_weight_masks([self.labelled_packed()], self.n_labels,
                                      all_possible_states, all_possible_transitions)
        state = masks.pop("state_mask", None)
        # In the trainer's layout: the transition blocks' rows one after another.
        transition = np.concatenate([mask.reshape(-1, self.n_labels)
                                     for mask in masks.values()]) if masks else None
        return state, transition

    def seen_structure(self, all_possible_transitions, previous=None):
        """The transition entries that may occur (`WeightLayout.allowed`, also set on
        ``transition_layout``): at order 2 without all possible transitions, those seen in
        the labelled sequences and in ``previous`` (earlier calls to ``partial_fit``); None
        otherwise."""
        allowed = None
        if self.order == 2 and not all_possible_transitions:
            allowed = seen_structure(self.labelled_packed().transition_counts)
            if previous is not None:
                allowed = previous if allowed is None else allowed | previous
        self.transition_layout.allowed = allowed
        return allowed

    def _prepare(self, i):
        """Attributes of labelled sequence ``i``, the sequence packed over them (with its
        labels, weight and label costs), and its feature matrix's transpose (CSR)."""
        first, stop = self.sequences.offsets[i], self.sequences.offsets[i + 1]
        columns, local = _local_matrix(self.sequences.matrix[first:stop])
        packed = PackedSequences(
            local, [stop - first], self.codes[first:stop], self.n_labels, order=self.order,
            weights=None if self.weights is None else self.weights[i:i + 1],
            label_costs=self.label_costs)
        return columns, packed, local.T.tocsr()

    def _prepare_batch(self, batch):
        """Attributes of the sequences ``batch``, and its labelled and unlabelled sequences
        packed over them (None when there are none)."""
        labelled = batch[batch < self.n_labelled]
        unlabeled = batch[batch >= self.n_labelled]
        part = self.sequences[np.concatenate([labelled, unlabeled])]
        columns, local = _local_matrix(part.matrix)
        split = part.offsets[labelled.size]
        labelled_packed = unlabeled_packed = None
        if labelled.size:
            offsets = self.sequences.offsets
            labels = np.concatenate([self.codes[offsets[i]:offsets[i + 1]] for i in labelled])
            labelled_packed = PackedSequences(
                local[:split], part.lengths[:labelled.size], labels, self.n_labels,
                order=self.order, weights=None if self.weights is None else self.weights[labelled],
                label_costs=self.label_costs)
        if unlabeled.size:
            unlabeled_packed = PackedSequences(local[split:], part.lengths[labelled.size:])
        return columns, labelled_packed, unlabeled_packed

    def epoch_batches(self, batch_size, shuffle, rng):
        """The batches of one epoch, in order. Single sequences come in a new random order
        at every epoch (with ``shuffle``). Larger batches are drawn once, from sequences of
        similar length (their forward-backward then wastes no steps on short chains), and
        come in a new random order at every epoch: a batch keeps its composition, so its
        local feature matrices are built once."""
        n = self.n_samples
        if batch_size == 1:
            return (rng.permutation(n) if shuffle else np.arange(n)).reshape(-1, 1)
        if self.batches is None:
            order = (np.lexsort((rng.random(n), self.sequences.lengths)) if shuffle
                     else np.arange(n))
            self.batches = np.array_split(order, range(batch_size, n, batch_size))
        if not shuffle:
            return self.batches
        return [self.batches[k] for k in rng.permutation(len(self.batches))]

    def gradient(self, trainer, batch):
        if len(batch) == 1 and batch[0] < self.n_labelled:
            i = int(batch[0])
            prepared = self.prepared.get(i)
            if prepared is None:
                prepared = self.prepared[i] = self._prepare(i)
            return self._sequence_gradient(trainer, prepared)
        key = batch.tobytes()
        prepared = self._prepared_batches.get(key)
        if prepared is None:
            prepared = self._prepared_batches[key] = self._prepare_batch(batch)
        return self._batch_gradient(trainer, prepared)

    def _potentials(self, trainer):
        """The transition potentials of the trainer's transition weights."""
        return self.transition_layout.unpack(trainer.transition.ravel())[1]

    def _transition_gradient(self, d_potentials):
        """A gradient w.r.t. the transition potentials as one w.r.t. the trainer's transition
        weights."""
        return self.transition_layout.pack(self._no_state, d_potentials).reshape(
            -1, self.n_labels)

    def _sequence_gradient(self, trainer, prepared):
        columns, packed, local_t = prepared
        value, d_unary, d_transition = sequence_log_likelihood(
            packed, packed.unary(trainer.state_rows(columns)), self._potentials(trainer))
        # The loss is minus the log-likelihood (both arrays are this call's own).
        np.negative(d_unary, out=d_unary)
        np.negative(d_transition, out=d_transition)
        return -value, columns, local_t @ d_unary, self._transition_gradient(d_transition)

    def _batch_gradient(self, trainer, prepared):
        columns, labelled, unlabeled = prepared
        state, transition = trainer.state_rows(columns), self._potentials(trainer)
        d_state = np.zeros_like(state)
        d_transition = np.zeros_like(transition)
        loss = 0.0
        if labelled is not None:
            value, d_labelled, d_edges = chunk_log_likelihood(labelled, self._workspace, state,
                                                              transition)
            loss -= value
            d_state -= d_labelled
            d_transition -= d_edges
        if unlabeled is not None:
            def add_gradient(scale, d_unlabeled, d_edges):
                np.add(d_state, scale * d_unlabeled, out=d_state)
                np.add(d_transition, scale * d_edges, out=d_transition)

            negative_entropy, penalty = add_unlabeled_terms(
                lambda term, *args: term(unlabeled, self._workspace, *args), add_gradient,
                state, transition, self.gamma, self.proportion_weight,
                lambda label_sums: self._proportions(label_sums, unlabeled.n_tokens))
            loss += -self.gamma * negative_entropy + (
                self.proportion_weight * penalty if self.proportion_weight > 0 else 0.0)
        return loss, columns, d_state, self._transition_gradient(d_transition)

    def _proportions(self, label_sums, n_tokens):
        """The label-proportion penalty of a step's ``n_tokens`` unlabelled tokens and its
        gradient, with ``pi_hat`` a running mean over about the last epoch: the gradient of
        ``N_u KL(pi || pi_hat)`` w.r.t. a sequence's expected label counts is ``-pi / pi_hat``
        with ``pi_hat`` the mean marginal over *all* unlabelled tokens, not the step's."""
        keep = max(0.0, 1.0 - n_tokens / self.n_unlabeled_tokens)
        self._label_mass = keep * self._label_mass + label_sums[0]
        self._token_mass = keep * self._token_mass + n_tokens
        running_sums = self._label_mass * (n_tokens / self._token_mass)
        return LabelProportionPenalty(self.target, n_tokens).value_and_gradient(
            running_sums[None, :])


def union_masks(mask, new):
    """The entries allowed by either weight mask (None: all)."""
    # Same shapes: the trainer has grown its mask to the vocabulary the new one is built on.
    if mask is None or new is None:
        return new if mask is None else mask
    return mask | new
