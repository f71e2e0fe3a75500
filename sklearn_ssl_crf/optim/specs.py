"""What a reader expects of a stored record (a checkpoint's state): specs, and `check`,
which holds a value to one and says where and how it differs.

A spec is ``bool``, ``str`` (any string), a string (that one), None, a dict of specs (that
dict's keys exactly), a list of specs (a list of that length), or one of the classes
below.
"""

import math

import numpy as np

__all__ = ["Array", "Number", "Integer", "ListOf", "Entries", "Either", "check", "kind_of"]


#: Where `check` starts: the record itself.
_RECORD = "the record"


class Array:
    """An array of ``shape`` (None: any length on that axis) and ``dtype``; floats finite
    unless ``finite=False``; integers in ``range(*within)`` if given."""

    def __init__(self, shape, dtype=np.float64, finite=True, within=None):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.finite, self.within = finite, within

    def check(self, value, where):
        if not isinstance(value, np.ndarray):
            raise ValueError(f"{where}: {kind_of(value)} where an array is expected")
        if value.dtype != self.dtype:
            raise ValueError(f"{where}: dtype {value.dtype} where {self.dtype} is expected")
        if len(value.shape) != len(self.shape) or any(
                length is not None and length != size
                for length, size in zip(self.shape, value.shape)):
            expected = tuple("any" if n is None else n for n in self.shape)
            raise ValueError(f"{where}: shape {value.shape} where this run's is {expected}")
        if self.finite and value.dtype.kind == "f" and not np.isfinite(value).all():
            raise ValueError(f"{where}: not finite")
        if self.within is not None and value.size and not (
                self.within[0] <= value.min() and value.max() < self.within[1]):
            raise ValueError(f"{where}: values outside range{self.within}")


class Number:
    """A real number (an int or a float), finite unless ``finite=False``."""

    def __init__(self, finite=True):
        self.finite = finite

    def check(self, value, where):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{where}: {kind_of(value)} where a number is expected")
        if self.finite and not math.isfinite(value):
            raise ValueError(f"{where}: {value} where a finite number is expected")


class Integer:
    """An int in ``[low, high]`` (None: unbounded)."""

    def __init__(self, low=None, high=None):
        self.low, self.high = low, high

    def check(self, value, where):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{where}: {kind_of(value)} where an integer is expected")
        if (self.low is not None and value < self.low) or (
                self.high is not None and value > self.high):
            raise ValueError(f"{where}: {value} outside [{self.low}, {self.high}]")


class ListOf:
    """A list of at least ``min_length`` items, each held to ``item``."""

    def __init__(self, item, min_length=0):
        self.item, self.min_length = item, min_length

    def check(self, value, where):
        if not isinstance(value, list) or len(value) < self.min_length:
            raise ValueError(f"{where}: {kind_of(value)} where a list of at least "
                             f"{self.min_length} items is expected")
        for index, item in enumerate(value):
            check(item, self.item, f"{where}[{index}]")


class Entries:
    """A dict of strings to JSON scalars (a log entry), with at least the entries
    ``required`` (names to specs)."""

    def __init__(self, **required):
        self.required = required

    def check(self, value, where):
        if not isinstance(value, dict):
            raise ValueError(f"{where}: {kind_of(value)} where a dict is expected")
        for name, item in value.items():
            if not isinstance(item, (str, int, float, bool, type(None))):
                raise ValueError(f"{where}.{name}: {kind_of(item)} where a JSON scalar is "
                                 "expected")
        check({name: value[name] for name in self.required if name in value}, self.required,
              where)


class Either:
    """Held to any one of ``specs`` (``Either(None, spec)``: optional)."""

    def __init__(self, *specs):
        self.specs = specs

    def check(self, value, where):
        problems = []
        for spec in self.specs:
            try:
                return check(value, spec, where)
            except ValueError as error:
                problems.append(str(error))
        raise ValueError(" or ".join(problems))


def check(value, spec, where=_RECORD):
    """Raise a ValueError saying where and how ``value`` (a record, or the part of one at
    ``where``) differs from ``spec`` (see above)."""
    if spec is None or isinstance(spec, str):
        if not (value is spec or isinstance(value, str) and value == spec):
            raise ValueError(f"{where}: {kind_of(value)} where {spec!r} is expected")
    elif spec is bool or spec is str:
        if not isinstance(value, spec):
            raise ValueError(f"{where}: {kind_of(value)} where a {spec.__name__} is expected")
    elif isinstance(spec, dict):
        if not isinstance(value, dict):
            raise ValueError(f"{where}: {kind_of(value)} where a dict is expected")
        if set(value) != set(spec):
            missing, extra = sorted(set(spec) - set(value)), sorted(set(value) - set(spec))
            raise ValueError(f"{where}: " + "; ".join(
                [f"no {name!r}" for name in missing] + [f"{name!r} unexpected" for name in extra]))
        for name, item in spec.items():
            check(value[name], item, name if where == _RECORD else f"{where}.{name}")
    elif isinstance(spec, list):
        if not isinstance(value, list) or len(value) != len(spec):
            raise ValueError(f"{where}: {kind_of(value)} where a list of {len(spec)} is "
                             "expected")
        for index, (item, item_spec) in enumerate(zip(value, spec)):
            check(item, item_spec, f"{where}[{index}]")
    else:
        spec.check(value, where)


def kind_of(value):
    """A value's kind, in words, for messages."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    if isinstance(value, (list, dict)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"{type(value).__name__} {value!r}"[:80]


