"""`make_sequences`: synthetic tagging data drawn from a hidden Markov model whose words are
ambiguous on their own, so that a model of label transitions (a CRF) beats any per-token
classifier.
"""

import numbers
import string

import numpy as np
from sklearn.utils import check_random_state

# Dirichlet concentration of each label's distribution over its own words (see
# `_random_emissions`); tuned so that with the defaults the true-HMM Viterbi decoder beats
# the Bayes per-token classifier by about 11 points of token accuracy.
_WORD_CONCENTRATION = 0.3


def _bio_labels(n_types):
    """``["O", "B-A", "I-A", "B-B", "I-B", ...]``: O is 0, B-t is 2t + 1, I-t is 2t + 2."""
    return ["O"] + [f"{prefix}-{t}" for t in string.ascii_uppercase[:n_types] for prefix in "BI"]


def _inside_labels(n_types):
    """Indices of the I-t labels in `_bio_labels` order (B-t is the index just before)."""
    return np.arange(n_types) * 2 + 2


def _bio_allowed(n_types):
    """Allowed starts and transitions of BIO tags: I-t never starts a sequence and only
    follows B-t or I-t."""
    n_labels = 2 * n_types + 1
    inside = _inside_labels(n_types)
    allowed_start = np.ones(n_labels, dtype=bool)
    allowed_start[inside] = False
    allowed = np.ones((n_labels, n_labels), dtype=bool)
    allowed[:, inside] = False
    allowed[inside - 1, inside] = True
    allowed[inside, inside] = True
    return allowed_start, allowed


def _random_transitions(n_types, stickiness, rng):
    """Start and transition probabilities: random over the allowed BIO moves, plus extra mass
    ``stickiness`` on continuing the current segment (O -> O, B-t -> I-t, I-t -> I-t)."""
    allowed_start, allowed = _bio_allowed(n_types)
    start = np.zeros(allowed_start.size)
    start[allowed_start] = rng.dirichlet(np.ones(allowed_start.sum()))
    transitions = np.zeros(allowed.shape)
    for row, mask in zip(transitions, allowed):
        row[mask] = rng.dirichlet(np.ones(mask.sum()))
    continuation = np.zeros(allowed.shape)
    continuation[0, 0] = 1.0
    inside = _inside_labels(n_types)
    continuation[inside - 1, inside] = 1.0
    continuation[inside, inside] = 1.0
    return start, (1 - stickiness) * transitions + stickiness * continuation


def _random_emissions(n_types, vocabulary_size, noise, rng):
    """Emission probabilities over word ids: each label mostly emits words of its own group
    (O words, or words of its entity type -- shared by B-t and I-t, so that B and I are told
    apart by context), and with probability ``noise`` a word of a pool shared by all labels."""
    n_labels = 2 * n_types + 1
    # Groups: shared pool (a quarter), O words (three eighths), the rest split between types;
    # tiny vocabularies still leave at least one word to each group.
    n_shared = max(1, min(vocabulary_size // 4, vocabulary_size - 1 - n_types))
    n_outside = max(1, min((vocabulary_size - n_shared) // 2,
                           vocabulary_size - n_shared - n_types))
    bounds = np.linspace(n_shared + n_outside, vocabulary_size, n_types + 1).astype(int)
    # Words are assigned to groups at random so a word's id says nothing about its group.
    word_ids = rng.permutation(vocabulary_size)
    shared = word_ids[:n_shared]
    own_group = [word_ids[n_shared:n_shared + n_outside]]
    for t in range(n_types):
        type_words = word_ids[bounds[t]:bounds[t + 1]]
        own_group += [type_words, type_words]
    emissions = np.zeros((n_labels, vocabulary_size))
    for label, words in enumerate(own_group):
        # A concentration below 1 gives each label a few frequent words (as in text), and
        # B-t and I-t different favourites among their common words; the shared pool keeps
        # a flat draw so that its words stay ambiguous.
        own = rng.dirichlet(np.full(words.size, _WORD_CONCENTRATION))
        emissions[label, words] = (1 - noise) * own
        emissions[label, shared] += noise * rng.dirichlet(np.ones(shared.size))
    return emissions


def _cdf(probabilities):
    """Cumulative sums along the last axis, ending at exactly 1.

    Dividing by the total (rather than clipping) keeps zero-probability outcomes -- the
    forbidden BIO moves -- impossible to draw, whatever the rounding.
    """
    cdf = np.cumsum(probabilities, axis=-1)
    return cdf / cdf[..., -1:]


def _sample_hmm(start, transitions, emissions, lengths, rng):
    """Label and word ids of sequences of the given lengths, all sequences in lock-step.

    Draws use the inverse CDF: the outcome is the number of cumulative sums <= a uniform.
    """
    n_sequences, max_length = lengths.size, int(lengths.max(initial=0))
    states = np.zeros((n_sequences, max_length), dtype=np.intp)
    u = rng.uniform(size=(n_sequences, max_length, 1))
    if max_length:
        states[:, 0] = (_cdf(start) <= u[:, 0]).sum(axis=-1)
    transition_cdf = _cdf(transitions)
    for position in range(1, max_length):
        previous = states[:, position - 1]
        states[:, position] = (transition_cdf[previous] <= u[:, position]).sum(axis=-1)
    words = np.zeros_like(states)
    u = rng.uniform(size=states.shape)
    # One label at a time: a (tokens x vocabulary) comparison would not fit in memory.
    for label, cdf in enumerate(_cdf(emissions)):
        mask = states == label
        words[mask] = np.searchsorted(cdf, u[mask], side="right")
    return states, words


def _word_features(words):
    """sklearn-crfsuite style feature dicts: the word and its two neighbours."""
    features = []
    for i, word in enumerate(words):
        token = {"bias": 1.0, "word": word}
        if i > 0:
            token["-1:word"] = words[i - 1]
        else:
            token["BOS"] = True
        if i < len(words) - 1:
            token["+1:word"] = words[i + 1]
        else:
            token["EOS"] = True
        features.append(token)
    return features


def _check_int(value, name, low, high=None):
    """Raise ValueError unless ``value`` is an int in ``[low, high]``."""
    if (
        not isinstance(value, numbers.Integral)
        or isinstance(value, bool)
        or value < low
        or (high is not None and value > high)
    ):
        bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be an int {bounds}, got {value!r}")


def make_sequences(
    n_sequences=200,
    *,
    n_types=2,
    vocabulary_size=300,
    min_length=5,
    max_length=25,
    noise=0.3,
    stickiness=0.5,
    features="words",
    return_params=False,
    random_state=None,
):
    """Generate a synthetic BIO tagging problem from a hidden Markov model.

    Labels are BIO tags of ``n_types`` entity types named ``A``, ``B``, ... (``"O"``,
    ``"B-A"``, ``"I-A"``, ``"B-B"``, ``"I-B"``, ...), so span-level metrics apply. They follow
    a random Markov chain that respects BIO: a sequence never starts with ``I-t``, and ``I-t``
    only follows ``B-t`` or ``I-t``. Each label emits a word from its own group (words of
    ``O``, or words of type ``t``, the latter shared by ``B-t`` and ``I-t``), or, with
    probability ``noise``, from a pool of ambiguous words common to all labels. A word alone
    thus often leaves its label uncertain (in particular B-t versus I-t), while the
    neighbouring labels settle it: a model of transitions (a CRF) clearly beats per-token
    classification. With the defaults, Viterbi decoding with the true parameters gets about
    90% of tokens right, the Bayes-optimal per-token classifier about 79%.

    All generating parameters are drawn from ``random_state`` too, so a training and a test
    set from the same distribution must come from one call (then split them).

    Parameters
    ----------
    n_sequences : int, default=200
        Number of sequences.
    n_types : int, default=2
        Number of entity types (1 to 26); there are ``2 * n_types + 1`` labels.
    vocabulary_size : int, default=300
        Number of distinct words (at least ``n_types + 2``); words are named ``"w000"``, ...
        and their names carry no information about their labels.
    min_length, max_length : int, default=5, 25
        Sequence lengths are drawn uniformly from ``[min_length, max_length]``.
    noise : float in [0, 1], default=0.3
        Probability that a token comes from the pool of words shared by all labels.
    stickiness : float in [0, 1], default=0.5
        Extra probability of continuing the current segment (``O -> O``, ``B-t -> I-t``,
        ``I-t -> I-t``); the rest of each transition row is random over the allowed moves.
    features : {"words", "dict"}, default="words"
        ``"words"`` gives each token as its str word; ``"dict"`` gives sklearn-crfsuite
        style feature dicts: ``{"bias": 1.0, "word": w, "-1:word": ..., "+1:word": ...}``,
        with ``"BOS"``/``"EOS"`` flags in place of missing neighbours.
    return_params : bool, default=False
        Also return the generating parameters.
    random_state : int, RandomState instance or None, default=None
        Seed of all random draws, for reproducible output.

    Returns
    -------
    X : list of list
        ``n_sequences`` sequences of tokens (str words, or dicts if ``features="dict"``).
    y : list of list of str
        The BIO labels, aligned with ``X``.
    params : dict
        Only if ``return_params``: ``"labels"`` (list of str, the label order below),
        ``"vocabulary"`` (list of str, the word order below), ``"start_proba"`` (ndarray of
        shape (n_labels,)), ``"transition_proba"`` (shape (n_labels, n_labels), row = from),
        ``"emission_proba"`` (shape (n_labels, vocabulary_size)).

    See Also
    --------
    load_conll2000 : A real chunking corpus in the same form (tokens, BIO tags).

    Examples
    --------
    >>> from sklearn_ssl_crf.datasets import make_sequences
    >>> X, y = make_sequences(n_sequences=3, random_state=0)
    >>> len(X), [len(x) == len(t) for x, t in zip(X, y)]
    (3, [True, True, True])
    >>> sorted({label for labels in y for label in labels})
    ['B-A', 'B-B', 'I-A', 'I-B', 'O']
    >>> X, y = make_sequences(n_sequences=1, features="dict", random_state=0)
    >>> sorted(X[0][0])
    ['+1:word', 'BOS', 'bias', 'word']
    """
    _check_int(n_sequences, "n_sequences", 0)
    _check_int(n_types, "n_types", 1, len(string.ascii_uppercase))
    _check_int(vocabulary_size, "vocabulary_size", n_types + 2)
    _check_int(min_length, "min_length", 1)
    _check_int(max_length, "max_length", min_length)
    for value, name in ((noise, "noise"), (stickiness, "stickiness")):
        if not isinstance(value, numbers.Real) or not 0 <= value <= 1:
            raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    if features not in ("words", "dict"):
        raise ValueError(f"features must be 'words' or 'dict', got {features!r}")

    rng = check_random_state(random_state)
    start, transitions = _random_transitions(n_types, stickiness, rng)
    emissions = _random_emissions(n_types, vocabulary_size, noise, rng)
    lengths = rng.randint(min_length, max_length + 1, size=n_sequences)
    states, word_ids = _sample_hmm(start, transitions, emissions, lengths, rng)

    labels = _bio_labels(n_types)
    width = len(str(vocabulary_size - 1))
    vocabulary = [f"w{i:0{width}d}" for i in range(vocabulary_size)]
    X = [[vocabulary[w] for w in row[:n]] for row, n in zip(word_ids, lengths)]
    y = [[labels[s] for s in row[:n]] for row, n in zip(states, lengths)]
    if features == "dict":
        X = [_word_features(words) for words in X]
    if not return_params:
        return X, y
    params = {
        "labels": labels,
        "vocabulary": vocabulary,
        "start_proba": start,
        "transition_proba": transitions,
        "emission_proba": emissions,
    }
    return X, y, params
