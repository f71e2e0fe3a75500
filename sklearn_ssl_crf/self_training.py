"""`SelfTrainingCRF`: the self-training baseline of Jiao et al. (2006), §5.1."""

from numbers import Integral

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval

from ._threads import single_threaded_blas
from .base import unlabelled_sequences
from .crf import CRF, _check_dev_pair, _penalised_negative_log_likelihood
from .decoding import decode

__all__ = ["SelfTrainingCRF"]


class SelfTrainingCRF(CRF):
    """Self-training (bootstrapping) with a linear-chain CRF.

    Jiao et al. (2006), §5.1: train the CRF on the labelled sequences; label every unlabelled
    sequence with its Viterbi path; retrain on the labelled and these pseudo-labelled
    sequences; repeat until the pseudo-labels stop changing (or ``max_rounds``). Each round
    starts from the previous round's weights (the problem is convex: the same optimum,
    sooner).

    Parameters
    ----------
    max_rounds : int, default=10
        Maximum number of retraining rounds after the first supervised fit.
    algorithm, c1, c2, order, c2_transitions, max_iterations, num_memories, epsilon, period, \
delta, min_freq, \
all_possible_states, all_possible_transitions, verbose, n_jobs
        As in `CRF`, for every round.

    Attributes
    ----------
    n_rounds_ : int
        Retraining rounds run.
    termination_condition_ : str
        'pseudo-labels unchanged' or 'max_rounds reached'.
    rounds_ : list of dict
        Per round: ``round``, ``changed_tokens`` (pseudo-labels that changed), ``n_iter``,
        and ``dev_accuracy``, ``dev_span_f1`` with a dev set.
    training_log_ : list of dict
        As in `CRF`, over all rounds (``round`` key).
    classes_, attributes_, num_attributes_, state_weights_, transition_weights_, \
trigram_weights_, skip_weights_, state_features_, transition_features_, size_, n_iter_, \
vectorizer_
        As in `CRF`.
    """

    _parameter_constraints = {
        **CRF._parameter_constraints,
        "max_rounds": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(
        self,
        max_rounds=10,
        algorithm="lbfgs",
        c1=0.0,
        c2=1.0,
        order=1,
        c2_transitions=None,
        max_iterations=None,
        num_memories=6,
        epsilon=1e-5,
        period=10,
        delta=1e-5,
        min_freq=0,
        all_possible_states=True,
        all_possible_transitions=True,
        verbose=False,
        n_jobs=None,
    ):
        super().__init__(
            algorithm=algorithm, c1=c1, c2=c2, order=order, c2_transitions=c2_transitions,
            max_iterations=max_iterations,
            num_memories=num_memories, epsilon=epsilon, period=period, delta=delta,
            min_freq=min_freq, all_possible_states=all_possible_states,
            all_possible_transitions=all_possible_transitions, verbose=verbose, n_jobs=n_jobs,
        )
        self.max_rounds = max_rounds

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, X_unlabeled=None, X_dev=None, y_dev=None):
        """Train by self-training.

        Parameters
        ----------
        X : list of sequences of feature dicts, list of feature matrices, or SequenceMatrix
        y : list of label sequences, None for an unlabelled sequence
        X_unlabeled : iterable of sequences of the same kind as X, default=None
            More unlabelled sequences: a list, or any iterable such as a generator, read
            once and featurised 2,000 sequences at a time, as in `EntropyRegularizedCRF`.
            Their feature rows are held (sparse, not as dicts) for the rounds' relabelling.
        X_dev, y_dev : optional
            Scored after every round (``rounds_``) and every iteration (``training_log_``).

        Returns
        -------
        self : SelfTrainingCRF
        """
        _check_dev_pair(X_dev, y_dev)
        sequences, labelled, codes, streamed = self._fit_inputs_and_stream(
            X, y, () if X_unlabeled is None else X_unlabeled, self.min_freq)
        unlabelled = unlabelled_sequences(sequences, labelled)
        # Parts laid end to end: the unlabelled sequences of X, then the stream's blocks.
        to_label = [sequences[unlabelled], *streamed]
        train = [sequences[labelled], *to_label]
        n_unlabelled = sum(len(part) for part in to_label)
        del sequences, streamed
        # Chunked once, so that a cluster's workers receive them once per fit. (Chunking
        # empties the list of parts it is given, hence the copies.)
        unlabelled_data = self._chunked(list(to_label))
        del to_label

        data = self._chunked(train[:1], codes)
        layout = self._weight_layout(data)
        dev = None if X_dev is None else self._dev_scorer(X_dev, y_dev, layout)
        theta = np.zeros(layout.size)
        pseudo = None
        log, self.rounds_ = [], []
        reason = "max_rounds reached"
        for round_ in range(self.max_rounds + 1):
            objective = _penalised_negative_log_likelihood(data, layout, self._l2(layout))
            result = self._minimize(objective, theta, dev)
            theta = result.x
            log += [dict(entry, round=round_) for entry in result.log]
            labels = self._viterbi(unlabelled_data, layout, theta)
            changed = None if pseudo is None else int(np.count_nonzero(labels != pseudo))
            self.rounds_.append(dict({"round": round_, "changed_tokens": changed,
                                      "n_iter": result.n_iter},
                                     **(dev(round_, theta) if dev else {})))
            if changed == 0 or not n_unlabelled:
                reason = "pseudo-labels unchanged"
                break
            pseudo = labels
            data = self._chunked(list(train), np.concatenate([codes, pseudo]))
        self._set_fitted_weights(result, layout)
        self.training_log_ = log
        self.n_iter_ = len(log)
        self.n_rounds_ = len(self.rounds_) - 1
        self.termination_condition_ = reason
        return self

    @staticmethod
    def _viterbi(data, layout, theta):
        """Label index of every token of ``data`` (a `ChunkedSequences`), in order."""
        state, transition = layout.unpack(theta)
        with single_threaded_blas():
            paths = data.map(_chunk_viterbi, state, transition)
        return np.concatenate(paths) if paths else np.zeros(0, dtype=np.int64)


def _chunk_viterbi(chunk, workspace, state, transition):
    return decode(chunk, chunk.unary(state), transition)
