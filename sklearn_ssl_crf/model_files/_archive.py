"""The package's own model file: the fitted state as JSON and raw arrays, read without
running any code from the file.

A file is::

    magic (8) | JSON length (8) | CRC-32 of the rest (8) | JSON (UTF-8) | padding | arrays

(integers little-endian, unsigned).
The JSON holds the header (format, versions, ``info``) and the model as a tree of plain
values; the arrays it refers to follow, each at a 64-byte aligned offset, in order, back to
back (but for the padding), to the last byte of the file. Reading checks the CRC (a damaged
file is refused whole) and every size before allocating: the arrays' bytes are exactly the
file's remainder, so nothing read is larger than the file itself.

The tree's nodes are JSON values, and JSON objects tagged ``"$"`` for what JSON lacks:
``dict`` (string keys), ``pairs`` (other keys), ``tuple``, ``set``, ``frozenset``,
``scalar`` (a NumPy scalar), ``array`` (an entry of the arrays: plain numbers and booleans,
little-endian), ``sparse`` (a SciPy CSR or CSC matrix), ``random_state``, ``generator``
(NumPy's random generators, rebuilt from their state), ``function`` (one of the package's
metric functions), ``object`` and ``ref``.

An ``object`` names its class by a key of `CLASSES`, an exact table of the classes `save`
writes: no name is imported or looked up. It is created with ``cls.__new__`` and given its
state (a dict of attribute values) by the class's ``__setstate__`` where it has one, else
directly: no ``__init__`` runs. Audited: scikit-learn's ``BaseEstimator.__setstate__``
compares a version string and updates ``__dict__``; `SequenceVectorizer` rebuilds its column
cache from ``vocabulary_`` (`ColumnCache` only stores the dict); `WordClusters` empties a
cache. Nothing else runs on loading; `load` then checks the fitted CRF weights
(`_loaded_models.check_loaded`), so that a crafted file fails there, not deep inside
``predict``.
"""

import json
import os
import struct
import types
import zlib

import numpy as np
import scipy.sparse
from sklearn.pipeline import Pipeline

from .. import metrics
from ..estimators import (
    CRF,
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    GraphPropagation,
    LabelConstraints,
    NaturalGradientCRF,
    SelfTrainingCRF,
    SemiSupervisedCRF,
)
from ..features import SequenceVectorizer, WindowFeatures, WindowRows, WordClusters
from ..graph import SimilarityGraph
from ..metrics import SequenceScorer
from ..optim.sgd import SGDTrainer
from ..optim.transforms import GradientTransform
from ..utils import open_regular_file

__all__ = ["MAGIC", "CLASSES", "UnsavableError", "encode_archive", "read_archive",
           "check_plain", "decode_plain"]

MAGIC = b"\x89sslcrf\n"
FORMAT_VERSION = 1
_ALIGN = 64
_FIXED = struct.Struct("<8sQQ")  # magic, JSON length, CRC-32 of what follows

#: The classes a model file may hold, by the name the file uses: fixed here, not their
#: class or module names, which may change. Exactly these: nothing else is created on
#: loading.
CLASSES = {
    "CRF": CRF, "CRFCV": CRFCV, "EntropyRegularizedCRF": EntropyRegularizedCRF,
    "SemiSupervisedCRF": SemiSupervisedCRF, "SelfTrainingCRF": SelfTrainingCRF,
    "NaturalGradientCRF": NaturalGradientCRF, "GraphPRCRF": GraphPRCRF,
    "GraphPropagation": GraphPropagation, "SequenceVectorizer": SequenceVectorizer,
    "WindowFeatures": WindowFeatures, "WindowRows": WindowRows, "WordClusters": WordClusters,
    "SimilarityGraph": SimilarityGraph, "LabelConstraints": LabelConstraints,
    "SequenceScorer": SequenceScorer, "SGDTrainer": SGDTrainer,
    "GradientTransform": GradientTransform, "Pipeline": Pipeline,
}
_CLASS_NAMES = {cls: name for name, cls in CLASSES.items()}
#: The functions a model may refer to, by name: the package's metrics, which its scorers
#: hold.
_FUNCTIONS = {name: getattr(metrics, name) for name in metrics.__all__
              if name.endswith("_score")
              and isinstance(getattr(metrics, name), types.FunctionType)}
_FUNCTION_NAMES = {id(function): name for name, function in _FUNCTIONS.items()}
#: Array dtypes a file may hold: booleans, integers and floats, as NumPy writes them.
_DTYPES = {np.dtype(code).str for code in
           ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8"]}
_SPARSE = {"csr": scipy.sparse.csr_matrix, "csc": scipy.sparse.csc_matrix}
_BIT_GENERATORS = {cls.__name__: cls for cls in [np.random.PCG64, np.random.PCG64DXSM,
                                                 np.random.MT19937, np.random.Philox,
                                                 np.random.SFC64]}


class UnsavableError(TypeError):
    """Something in the model that the format cannot hold (``where`` says what)."""


# -- writing ------------------------------------------------------------------------------


def encode_archive(header, model):
    """The file of ``header`` (a dict of JSON values but for ``info``, plain data) and
    ``model``, ready to write (`Archive.write`).

    Raises `UnsavableError` (a TypeError) naming the first part of ``model`` that the format
    cannot hold.
    """
    encoder = _Encoder()
    document = {**header, "info": _Encoder(objects=False).node(header["info"], "info"),
                "format_version": FORMAT_VERSION, "model": encoder.node(model, "model"),
                "arrays": encoder.specs}
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Archive(text, encoder.arrays, encoder.specs)


class Archive:
    """A model file's parts: the JSON, then the arrays at their offsets (counted from the
    first aligned byte after the JSON)."""

    def __init__(self, text, arrays, specs):
        self.parts, written = [text + b"\0" * (_aligned(_FIXED.size + len(text))
                                               - _FIXED.size - len(text))], 0
        for array, spec in zip(arrays, specs):
            self.parts += [b"\0" * (spec["offset"] - written), memoryview(array).cast("B")]
            written = spec["offset"] + spec["nbytes"]
        checksum = 0
        for part in self.parts:
            checksum = zlib.crc32(part, checksum)
        self.head = _FIXED.pack(MAGIC, len(text), checksum)

    def write(self, file):
        file.write(self.head)
        for part in self.parts:
            file.write(part)


def check_plain(value, where):
    """Raise `UnsavableError` unless ``value`` is plain data: JSON values, tuples, sets,
    dicts, NumPy scalars and arrays (what ``info`` may hold)."""
    _Encoder(objects=False).node(value, where)


def _aligned(offset):
    return -(-offset // _ALIGN) * _ALIGN


class _Encoder:
    """Turns a model into the tree of JSON values, collecting its arrays."""

    def __init__(self, objects=True):
        self.objects = objects
        self.arrays, self.specs = [], []
        self._array_index = {}  # id(array) -> index: an array shared in the model is kept once
        self._object_index = {}  # id(object) -> its id in the file
        self._keep = []  # what the ids above refer to, alive until the end

    def node(self, value, where):
        kind = type(value)
        if value is None or kind in (bool, str, int, float):
            return value
        if kind is list:
            return [self.node(item, f"{where}[{i}]") for i, item in enumerate(value)]
        if kind in (tuple, set, frozenset):
            items = list(value) if kind is tuple else _ordered(value)
            return {"$": kind.__name__,
                    "v": [self.node(item, f"{where}[{i}]") for i, item in enumerate(items)]}
        if kind is dict:
            return self._dict(value, where)
        if isinstance(value, np.generic) and value.dtype.str in _DTYPES:
            return {"$": "scalar", "dtype": value.dtype.str, "v": value.item()}
        if self.objects:
            if kind in self._KINDS:
                return self._KINDS[kind](self, value, where)
            if id(value) in _FUNCTION_NAMES:
                return {"$": "function", "name": _FUNCTION_NAMES[id(value)]}
            if kind in _CLASS_NAMES:
                return self._object(value, where)
        raise UnsavableError(f"{where} is a {kind.__module__}.{kind.__qualname__}")

    def _sparse(self, value, where):
        return {"$": "sparse", "format": value.format, "shape": list(value.shape),
                **{part: self.node(getattr(value, part), f"{where}.{part}")
                   for part in ("data", "indices", "indptr")}}

    def _random_state(self, value, where):
        return {"$": "random_state", "state": self.node(value.get_state(legacy=False), where)}

    def _generator(self, value, where):
        bit_generator = type(value.bit_generator).__name__
        if bit_generator not in _BIT_GENERATORS:
            raise UnsavableError(f"{where} is a Generator of {bit_generator}")
        return {"$": "generator", "bit_generator": bit_generator,
                "state": self.node(value.bit_generator.state, where)}

    def _dict(self, value, where):
        if all(type(key) is str for key in value):
            return {"$": "dict", "v": {key: self.node(item, f"{where}[{key!r}]")
                                       for key, item in value.items()}}
        return {"$": "pairs",
                "k": [self.node(key, f"{where} key {key!r}") for key in value],
                "v": [self.node(item, f"{where}[{key!r}]") for key, item in value.items()]}

    def _array(self, array, where):
        if id(array) in self._array_index:
            return {"$": "array", "i": self._array_index[id(array)]}
        if array.dtype.str not in _DTYPES:
            raise UnsavableError(f"{where} is an array of dtype {array.dtype}")
        index = len(self.arrays)
        offset = (self.specs[-1]["offset"] + self.specs[-1]["nbytes"]) if self.specs else 0
        contiguous = np.ascontiguousarray(array)
        self.arrays.append(contiguous)
        self.specs.append({"dtype": array.dtype.str, "shape": list(array.shape),
                           "offset": _aligned(offset), "nbytes": contiguous.nbytes})
        self._array_index[id(array)] = index
        self._keep.append(array)
        return {"$": "array", "i": index}

    def _object(self, value, where):
        if id(value) in self._object_index:
            return {"$": "ref", "id": self._object_index[id(value)]}
        self._object_index[id(value)] = len(self._object_index)
        self._keep.append(value)
        state = value.__getstate__() if hasattr(value, "__getstate__") else vars(value)
        if type(state) is not dict or not all(type(key) is str for key in state):
            raise UnsavableError(f"{where}'s state is not a dict of attributes")
        return {"$": "object", "class": _CLASS_NAMES[type(value)],
                "id": self._object_index[id(value)],
                "state": {key: self.node(item, f"{where}.{key}") for key, item in
                          state.items()}}

    _KINDS = {np.ndarray: _array, scipy.sparse.csr_matrix: _sparse,
              scipy.sparse.csc_matrix: _sparse, np.random.RandomState: _random_state,
              np.random.Generator: _generator}


def _ordered(items):
    """The items of a set in a fixed order, so that the same model writes the same file."""
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)


# -- reading ------------------------------------------------------------------------------


def read_archive(name):
    """The header (a dict, ``"model"`` still a tree) and a function that builds the model
    from it, of the model file ``name``.

    The header is returned first so that the caller checks its versions before any object
    is built. Raises ValueError naming the file and what is wrong with it.
    """
    data = _read_regular_file(name)
    if data[:len(MAGIC)] != MAGIC or len(data) < _FIXED.size:
        raise ValueError(f"{name} is not a sklearn_ssl_crf model file")
    _, length, checksum = _FIXED.unpack_from(data)
    start = _FIXED.size
    if zlib.crc32(memoryview(data)[start:]) != checksum:
        raise ValueError(f"{name} is a damaged model file: its bytes do not match their "
                         "checksum (truncated, or changed since it was written)")
    if length > len(data) - start:
        raise ValueError(f"{name} is a damaged model file: its header says {length} bytes "
                         f"of JSON, the file has {len(data) - start} after it")
    try:
        document = json.loads(bytes(data[start:start + length]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ValueError(f"{name} is a damaged model file: its JSON does not parse "
                         f"({type(error).__name__}: {str(error)[:200]})") from None
    if type(document) is not dict or "model" not in document:
        raise ValueError(f"{name} is a damaged model file: its JSON is not an object with "
                         "a model")

    def build():
        arrays = _arrays(data, _aligned(start + length), document.get("arrays"), name)
        try:
            model = _Decoder(arrays).node(document.get("model"), "model")
        except RecursionError:
            raise ValueError(f"{name} is a damaged model file: nested too deeply") from None
        except _Damaged as error:
            raise ValueError(f"{name} is a damaged model file: {error}") from None
        return model

    return document, build


def decode_plain(tree, name, where):
    """The plain value (``info``) that the tree ``tree`` of file ``name`` encodes."""
    try:
        return _Decoder([], objects=False).node(tree, where)
    except (_Damaged, RecursionError) as error:
        raise ValueError(f"{name} is a damaged model file: {error}") from None


def _read_regular_file(name):
    """The bytes of ``name``, a regular file (`open_regular_file`)."""
    with open_regular_file(name) as file:
        size = os.fstat(file.fileno()).st_size
        data = bytearray(size)  # writable: the arrays are views of it
        if file.readinto(data) != size or file.read(1):
            raise ValueError(f"{name} changed while it was read")
    return data


class _Damaged(Exception):
    """A tree or array entry that is not what the format allows (the message says where)."""


def _arrays(data, start, specs, name):
    """The arrays of the file: views of ``data``, after checking that each spec is sane,
    that they follow each other in order and that they end the file."""
    if type(specs) is not list:
        raise ValueError(f"{name} is a damaged model file: no list of arrays")
    arrays, position = [], 0  # offsets count from ``start``
    for index, spec in enumerate(specs):
        where = f"{name} is a damaged model file: array {index}"
        if type(spec) is not dict or spec.get("dtype") not in _DTYPES:
            raise ValueError(f"{where} has no dtype of the format")
        shape, offset, nbytes = spec.get("shape"), spec.get("offset"), spec.get("nbytes")
        if (type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape)
                or type(offset) is not int or type(nbytes) is not int):
            raise ValueError(f"{where} has no valid shape, offset or size")
        dtype = np.dtype(spec["dtype"])
        count = int(np.prod(shape, dtype=object))
        if count * dtype.itemsize != nbytes:
            raise ValueError(f"{where} of shape {tuple(shape)} would take "
                             f"{count * dtype.itemsize} bytes, not the {nbytes} it has")
        if offset != _aligned(position) or start + offset + nbytes > len(data):
            raise ValueError(f"{where} lies at bytes {offset}-{offset + nbytes} of the "
                             f"{len(data) - start} after the JSON (expected at "
                             f"{_aligned(position)})")
        arrays.append(np.frombuffer(data, dtype, count, start + offset).reshape(shape))
        position = offset + nbytes
    if start + position != len(data):
        raise ValueError(f"{name} is a damaged model file: it does not end with its last "
                         f"array ({len(data) - start - position} bytes more)")
    return arrays


def _expect(condition, what):
    if not condition:
        raise _Damaged(what)


class _Decoder:
    """Builds the model from the tree, creating only what the format allows."""

    def __init__(self, arrays, objects=True):
        self.arrays, self.objects = arrays, objects
        self.built = {}  # object id in the file -> the object

    def node(self, tree, where):
        if tree is None or type(tree) in (bool, int, float, str):
            return tree
        if type(tree) is list:
            return [self.node(item, f"{where}[{i}]") for i, item in enumerate(tree)]
        _expect(type(tree) is dict and type(tree.get("$")) is str,
                f"{where} is a JSON object without a kind")
        kind = tree["$"]
        build = self._KINDS.get(kind)
        _expect(build is not None and (self.objects or kind not in self._OBJECT_KINDS),
                f"{where} is of an unknown kind {kind!r}")
        return build(self, tree, where)

    def _items(self, tree, where, field="v"):
        items = tree.get(field)
        _expect(type(items) is list, f"{where} has no list {field!r}")
        return [self.node(item, f"{where}[{i}]") for i, item in enumerate(items)]

    def _container(self, tree, where):
        items = self._items(tree, where)
        try:
            return {"tuple": tuple, "set": set, "frozenset": frozenset}[tree["$"]](items)
        except TypeError as error:  # unhashable members of a set
            raise _Damaged(f"{where}: {error}") from None

    def _dict(self, tree, where):
        items = tree.get("v")
        _expect(type(items) is dict, f"{where} has no object 'v'")
        return {key: self.node(item, f"{where}[{key!r}]") for key, item in items.items()}

    def _pairs(self, tree, where):
        keys, values = self._items(tree, where, "k"), self._items(tree, where, "v")
        _expect(len(keys) == len(values), f"{where} has {len(keys)} keys and {len(values)} "
                "values")
        try:
            return dict(zip(keys, values))
        except TypeError as error:
            raise _Damaged(f"{where}: {error}") from None

    def _scalar(self, tree, where):
        _expect(tree.get("dtype") in _DTYPES and type(tree.get("v")) in (bool, int, float),
                f"{where} is not a scalar of the format")
        try:
            return np.dtype(tree["dtype"]).type(tree["v"])
        except (OverflowError, ValueError) as error:
            raise _Damaged(f"{where}: {error}") from None

    def _array(self, tree, where):
        index = tree.get("i")
        _expect(type(index) is int and 0 <= index < len(self.arrays),
                f"{where} refers to no array")
        return self.arrays[index]

    def _sparse(self, tree, where):
        _expect(tree.get("format") in _SPARSE, f"{where} is not a CSR or CSC matrix")
        shape = tree.get("shape")
        _expect(type(shape) is list and len(shape) == 2
                and all(type(n) is int and n >= 0 for n in shape), f"{where} has no shape")
        parts = [self.node(tree.get(part), f"{where}.{part}")
                 for part in ("data", "indices", "indptr")]
        _expect(all(type(part) is np.ndarray and part.ndim == 1 for part in parts),
                f"{where} is not made of arrays")
        try:
            matrix = _SPARSE[tree["format"]](tuple(parts), shape=tuple(shape))
            matrix.check_format(full_check=True)  # indices in range, pointers in order
        except (ValueError, TypeError, IndexError) as error:
            raise _Damaged(f"{where}: {error}") from None
        return matrix

    def _random_state(self, tree, where):
        generator = np.random.RandomState()
        try:
            generator.set_state(self.node(tree.get("state"), where))
        except (ValueError, TypeError, KeyError) as error:
            raise _Damaged(f"{where}: {type(error).__name__}: {error}") from None
        return generator

    def _generator(self, tree, where):
        bit_generator = _BIT_GENERATORS.get(tree.get("bit_generator"))
        _expect(bit_generator is not None, f"{where} names no bit generator of NumPy's")
        generator = np.random.Generator(bit_generator())
        try:
            generator.bit_generator.state = self.node(tree.get("state"), where)
        except (ValueError, TypeError, KeyError) as error:
            raise _Damaged(f"{where}: {type(error).__name__}: {error}") from None
        return generator

    def _function(self, tree, where):
        _expect(tree.get("name") in _FUNCTIONS, f"{where} names no function of the package")
        return _FUNCTIONS[tree["name"]]

    def _ref(self, tree, where):
        _expect(tree.get("id") in self.built, f"{where} refers to no object before it")
        return self.built[tree["id"]]

    def _object(self, tree, where):
        cls = CLASSES.get(tree.get("class"))
        _expect(cls is not None and type(tree.get("class")) is str,
                f"{where} is of a class the format does not hold: {tree.get('class')!r}")
        _expect(type(tree.get("id")) is int and tree["id"] not in self.built,
                f"{where} has no new object id")
        state = tree.get("state")
        _expect(type(state) is dict, f"{where} has no state")
        value = cls.__new__(cls)
        self.built[tree["id"]] = value  # before its state: the state may refer to it
        state = {key: self.node(item, f"{where}.{key}") for key, item in state.items()}
        try:
            if hasattr(cls, "__setstate__"):
                value.__setstate__(state)
            else:
                vars(value).update(state)
        except (TypeError, ValueError, AttributeError, KeyError) as error:
            raise _Damaged(f"{where}: {type(error).__name__}: {error}") from None
        return value

    _KINDS = {"tuple": _container, "set": _container, "frozenset": _container,
              "dict": _dict, "pairs": _pairs, "scalar": _scalar, "array": _array,
              "sparse": _sparse, "random_state": _random_state, "generator": _generator,
              "function": _function, "ref": _ref, "object": _object}
    _OBJECT_KINDS = {"array", "sparse", "random_state", "generator", "function", "ref",
                     "object"}
