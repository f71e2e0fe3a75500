"""Label constraints: which labels may follow which, start and end a sequence, or stand at
positions whose label is known. Decoding and marginals then cover only the labellings they
allow, so that, for instance, BIO tags never put ``I-X`` after ``O``.

A constraint is a -inf potential: forbidden transitions get -inf transition potentials,
forbidden first and last labels -inf unary potentials at the first and last positions, and
a known label -inf potentials for every other label at its position. The kernels then run
unchanged (at order 2 over the pairs allowed, `inference.restricted`, when few are).
"""

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["LabelConstraints", "constrained", "resolve_constraints", "known_label_mask"]

# Span schemes by name, with the prefixes their labels carry besides "O". BILOU's "L" and
# "U" play IOBES's "E" and "S".
_SCHEMES = {"bio": "BI", "iobes": "BIES", "bilou": "BILU"}
_SCHEME_ALIASES = {"iob2": "bio"}
_CLOSING = {"E": "E", "S": "S", "L": "E", "U": "S"}

#: 'auto' warns that it applies no constraints when at most this share of the labelled
#: sequences break the scheme the labels carry (one sentence in 30 was reported).
_ERROR_SHARE = 0.1


@dataclass(eq=False)
class LabelConstraints:
    """The label sequences a model may produce.

    Attributes
    ----------
    transitions : ndarray of bool of shape (n_classes, n_classes)
        ``transitions[i, j]``: label ``j`` may follow label ``i`` (``classes_`` order).
    starts : ndarray of bool of shape (n_classes,)
        The labels a sequence may start with.
    ends : ndarray of bool of shape (n_classes,)
        The labels a sequence may end with.
    scheme : {'bio', 'iobes', 'bilou'} or None
        The span scheme the constraints come from; None for constraints given as sets.
    """

    transitions: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    scheme: str = None

    def __repr__(self):
        allowed = int(self.transitions.sum())
        what = f"scheme={self.scheme!r}" if self.scheme else "given"
        return (f"LabelConstraints({what}, {allowed} of {self.transitions.size} transitions, "
                f"{int(self.starts.sum())} starts, {int(self.ends.sum())} ends)")

    def apply(self, unary, transition, layout):
        """Potentials with the forbidden entries at -inf: ``unary`` (packed rows of
        ``layout``) is changed in place, ``transition`` (order 1 or 2) is copied."""
        forbidden = ~self.transitions
        if forbidden.any():
            transition = transition.copy()
            # At order 2 a pair (i, j) is the last pair of every triple (h, i, j).
            transition[..., forbidden] = -np.inf
        if layout.n_rows:
            unary[layout.block(0)] += _log_mask(self.starts)
            unary[layout.last_rows] += _log_mask(self.ends)
        return unary, transition

    def first_violation(self, codes, lengths):
        """``(sequence, position)`` of the first label the constraints forbid in label
        codes laid end to end, or None."""
        return next(self.violations(codes, lengths), None)

    def violations(self, codes, lengths):
        """Yield ``(sequence, position)`` of the first forbidden label of each sequence
        that has one, in label codes laid end to end."""
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        for i, (start, stop) in enumerate(zip(offsets[:-1], offsets[1:])):
            if stop == start:
                continue
            labels = codes[start:stop]
            # Unknown labels (-1) are not checked: only pairs of known neighbours.
            pairs = (labels[:-1] >= 0) & (labels[1:] >= 0)
            bad = np.flatnonzero(pairs & ~self.transitions[labels[:-1], labels[1:]])
            if labels[0] >= 0 and not self.starts[labels[0]]:
                yield i, 0
            elif bad.size:
                yield i, int(bad[0]) + 1
            elif labels[-1] >= 0 and not self.ends[labels[-1]]:
                yield i, int(stop - start - 1)


def constrained(constraints, layout, unary, transition):
    """The potentials with what ``constraints`` (a `LabelConstraints`, or None: nothing)
    forbids at -inf (``unary``, packed rows of ``layout``, changed in place)."""
    if constraints is None:
        return unary, transition
    return constraints.apply(unary, transition, layout)


def _log_mask(allowed):
    return np.where(allowed, 0.0, -np.inf)


def resolve_constraints(spec, classes, codes, lengths):
    """The `LabelConstraints` of an estimator's ``constraints`` parameter, or None.

    Parameters
    ----------
    spec : 'auto', None, {'bio', 'iob2', 'iobes', 'bilou'} or dict
        'auto': the span scheme the labels carry, when every training sequence follows it
        (else none: IOB1 data, for instance, puts ``I-X`` after ``O``). A scheme's name:
        that scheme, which the training sequences must follow. A dict with any of the keys
        ``'transitions'`` (allowed ``(previous, next)`` label pairs), ``'starts'`` and
        ``'ends'`` (allowed first and last labels); a missing key allows everything.
    classes : list
        The labels, in the order of the model's columns.
    codes, lengths : ndarray
        The training labels as codes laid end to end, and each sequence's length.
    """
    if spec is None:
        return None
    if isinstance(spec, Mapping):
        return _given(spec, classes)
    if isinstance(spec, str):
        name = _SCHEME_ALIASES.get(spec.lower(), spec.lower())
        if name == "auto":
            scheme = _detect_scheme(classes)
            if scheme is None:
                return None
            constraints = _scheme_constraints(scheme, classes)
            broken = list(constraints.violations(codes, lengths))
            if not broken:
                return constraints
            _warn_of_few_breaks(scheme, broken, int(np.count_nonzero(lengths)))
            return None
        if name in _SCHEMES:
            constraints = _scheme_constraints(name, classes)
            violation = constraints.first_violation(codes, lengths)
            if violation is not None:
                i, t = violation
                raise ValueError(f"constraints={spec!r}: labelled sequence {i} breaks the "
                                 f"{name.upper()} scheme at position {t}")
            return constraints
    raise ValueError("constraints must be 'auto', None, one of 'bio', 'iobes', 'bilou', or a "
                     "dict with keys among 'transitions', 'starts', 'ends'; got "
                     f"{spec!r}")


def _warn_of_few_breaks(scheme, broken, n_sequences):
    """Warn that 'auto' applies no constraints when only a few of the ``n_sequences``
    labelled sequences break the ``scheme`` their labels carry (``broken``: the first
    forbidden label of each): most likely labelling errors. Where many break it, the
    data follow another scheme (IOB1 puts ``I-X`` after ``O``), and nothing is said."""
    if len(broken) > _ERROR_SHARE * n_sequences:
        return
    i, t = broken[0]
    warnings.warn(
        f"constraints='auto': the labels are {scheme.upper()} tags, but {len(broken)} of the "
        f"{n_sequences} labelled sequences break the scheme (the first: labelled sequence "
        f"{i}, position {t}), so no constraints are applied. Correct those labels to have "
        f"them, or pass constraints=None to silence this warning.", UserWarning,
        stacklevel=4)


def _split(label):
    """``(prefix, type)`` of a span label such as ``"B-NP"`` (also written ``"b-NP"`` or
    ``"B_NP"``), the prefix in capitals; ``("O", "")`` for ``"O"`` or ``"o"``; None for any
    other label."""
    if label in ("O", "o"):
        return "O", ""
    if not isinstance(label, str) or len(label) < 3 or label[1] not in "-_":
        return None
    return label[0].upper(), label[2:]


def _detect_scheme(classes):
    parts = [_split(label) for label in classes]
    if any(part is None for part in parts):
        return None
    prefixes = {prefix for prefix, _ in parts} - {"O"}
    if not prefixes:
        return None
    for name in ("bio", "iobes", "bilou"):
        if prefixes <= set(_SCHEMES[name]):
            return name
    return None


def _scheme_constraints(scheme, classes):
    allowed_prefixes = set(_SCHEMES[scheme]) | {"O"}
    parts = []
    for label in classes:
        part = _split(label)
        if part is None or part[0] not in allowed_prefixes:
            raise ValueError(f"constraints={scheme!r}: label {label!r} is not a "
                             f"{scheme.upper()} label")
        parts.append(part)
    prefix = np.array([_CLOSING.get(p, p) for p, _ in parts])
    kind = np.array([k for _, k in parts], dtype=object)
    inside = prefix == "I"
    begins = prefix == "B"
    same_kind = kind[:, None] == kind[None, :]
    if scheme == "bio":
        # I-X continues B-X or I-X; anything else may follow anything.
        transitions = ~inside[None, :] | (inside[None, :] & same_kind
                                          & (begins | inside)[:, None])
        starts = ~inside
        ends = np.ones(len(classes), dtype=bool)
    else:
        # An open span (B-X, I-X) continues with I-X or E-X; a closed one (O, E-, S-)
        # is followed by O, B- or S-.
        opened = begins | inside
        continues = inside | (prefix == "E")
        transitions = np.where(opened[:, None], continues[None, :] & same_kind,
                               ~continues[None, :])
        starts = ~continues
        ends = ~opened
    return LabelConstraints(transitions, starts, ends, scheme)


def _given(spec, classes):
    unknown = set(spec) - {"transitions", "starts", "ends"}
    if unknown:
        raise ValueError(f"constraints has unknown keys {sorted(map(str, unknown))}; use "
                         "'transitions', 'starts', 'ends'")
    index = {label: i for i, label in enumerate(classes)}
    n = len(classes)

    def codes(labels, what):
        if isinstance(labels, (str, bytes)):
            raise TypeError(f"constraints[{what!r}] must be a collection of labels, not a "
                            "string")
        result = []
        for label in labels:
            if label not in index:
                raise ValueError(f"constraints[{what!r}] names label {label!r}, which is not "
                                 f"among the training labels {list(classes)}")
            result.append(index[label])
        return result

    transitions = np.ones((n, n), dtype=bool)
    if "transitions" in spec:
        pairs = list(spec["transitions"])
        if not all(isinstance(pair, (tuple, list)) and len(pair) == 2 for pair in pairs):
            raise TypeError("constraints['transitions'] must be (previous, next) label pairs")
        transitions[:] = False
        if pairs:
            previous = codes([p for p, _ in pairs], "transitions")
            following = codes([f for _, f in pairs], "transitions")
            transitions[previous, following] = True
    masks = []
    for what in ("starts", "ends"):
        mask = np.ones(n, dtype=bool)
        if what in spec:
            mask[:] = False
            mask[codes(spec[what], what)] = True
            if not mask.any():
                raise ValueError(f"constraints[{what!r}] is empty: no sequence could be "
                                 "labelled")
        masks.append(mask)
    return LabelConstraints(transitions, *masks)


def known_label_mask(known_labels, lengths, classes):
    """The labels allowed at every token (original order) by ``known_labels``.

    ``known_labels[i][t]`` is a label of ``classes`` or None (unknown); a whole entry may be
    None. Returns an array of bool of shape (n_tokens, n_classes), or None when nothing is
    known.
    """
    if isinstance(known_labels, (str, bytes)) or not hasattr(known_labels, "__len__"):
        raise TypeError("known_labels must be a list with one entry per sequence: a list of "
                        "labels (None where unknown), or None")
    if len(known_labels) != len(lengths):
        raise ValueError(f"known_labels has {len(known_labels)} entries for {len(lengths)} "
                         "sequences")
    index = {label: i for i, label in enumerate(classes)}
    rows, columns = [], []
    offset = 0
    for i, (labels, length) in enumerate(zip(known_labels, lengths)):
        if labels is not None:
            if isinstance(labels, (str, bytes)) or len(labels) != length:
                raise ValueError(f"known_labels[{i}] must hold {length} labels (None where "
                                 f"unknown), got {labels!r}")
            for t, label in enumerate(labels):
                if label is None:
                    continue
                if label not in index:
                    raise ValueError(f"known_labels[{i}][{t}] is {label!r}, not one of the "
                                     f"model's labels {list(classes)}")
                rows.append(offset + t)
                columns.append(index[label])
        offset += length
    if not rows:
        return None
    mask = np.ones((offset, len(classes)), dtype=bool)
    mask[rows] = False
    mask[rows, columns] = True
    return mask
