"""Model files in the skops format (``*.skops``): written on request, and the files of
earlier releases, whose default it was, read without running code from them.

skops creates only the types it is told to trust, but resolves a type's name by importing
its module and taking an attribute: a name is only as safe as what it resolves to. So the
trust here is exact: the classes of `CLASSES` (and the package's metric functions) by their
full names, SciPy's sparse matrices, and what skops trusts by default (NumPy's and
scikit-learn's types); no other name, however it starts. And skops reads every array a file
refers to while it builds its tree, before anything can be checked: so the archive's sizes
and its schema are checked first (`_check_archive`), with the header, and skops is called
only on a file whose arrays fit in what the file holds.
"""

import io
import json
import zipfile
import zlib

import numpy as np

from ..utils import open_regular_file
from ._archive import _FUNCTIONS, CLASSES

__all__ = ["dump_skops", "load_skops"]

_FOREIGN_HELP = ("save the estimator alone (save(pipeline[-1], path)) and rebuild the "
                 "pipeline around it when loading, or name the file *.joblib to write a "
                 "pickle, which load reads only with trusted=True")
# What one file's compressed sparse matrices (stored by SciPy as deflated .npz inside the
# archive) may inflate to, beyond the file's own size.
_INFLATION_BUDGET = 2**30


def _qualified(thing):
    return f"{thing.__module__}.{thing.__qualname__}"


#: The full names of the package's classes in the skops files of earlier releases, before
#: their modules moved (issue #41): a node naming one of these exactly is read as the class
#: it now is.
_MOVED = {
    "sklearn_ssl_crf._crf.CRF": "CRF",
    "sklearn_ssl_crf._crf_cv.CRFCV": "CRFCV",
    "sklearn_ssl_crf._semi_supervised.EntropyRegularizedCRF": "EntropyRegularizedCRF",
    "sklearn_ssl_crf._semi_supervised.SemiSupervisedCRF": "SemiSupervisedCRF",
    "sklearn_ssl_crf._self_training.SelfTrainingCRF": "SelfTrainingCRF",
    "sklearn_ssl_crf._natural_gradient.NaturalGradientCRF": "NaturalGradientCRF",
    "sklearn_ssl_crf._graph_pr.GraphPRCRF": "GraphPRCRF",
    "sklearn_ssl_crf._graph_propagation.GraphPropagation": "GraphPropagation",
    "sklearn_ssl_crf._constraints.LabelConstraints": "LabelConstraints",
    "sklearn_ssl_crf.metrics._scorers._SequenceScorer": "SequenceScorer",
}
_TRUSTED = frozenset(
    [_qualified(cls) for name, cls in CLASSES.items() if name != "Pipeline"]
    + [_qualified(function) for function in _FUNCTIONS.values()]
    + ["scipy.sparse._csr.csr_matrix", "scipy.sparse._csc.csc_matrix"])


def _import_skops():
    try:
        import skops.io
    except ImportError:
        raise ImportError(
            "skops model files need the skops package: pip install skops (or the cli "
            "extra); any name but *.skops writes the package's own format, which needs "
            "nothing more"
        ) from None
    return skops.io


def dump_skops(record, path):
    """Write ``record`` to ``path`` in the skops format, refusing (ValueError) a model that
    `load_skops` would refuse."""
    skops_io = _import_skops()
    skops_io.dump(record, path)
    foreign = _foreign_types(skops_io.get_untrusted_types(file=path))
    if foreign:
        raise ValueError(f"the model holds types that a model file cannot load without "
                         f"running their code: {', '.join(foreign)}; {_FOREIGN_HELP}")


def load_skops(name, check_header):
    """The record (header and model) of the skops file ``name``; ``check_header(header)``
    is called on its header before skops reads any array or creates any object."""
    skops_io = _import_skops()
    try:
        with zipfile.ZipFile(name) as archive:
            schema = _check_archive(archive, name)
            data = _with_current_names(archive, schema, name)
    except (zipfile.BadZipFile, EOFError, KeyError, NotImplementedError, zlib.error,
            OSError) as error:
        raise ValueError(f"{name} is a damaged model file ({type(error).__name__}: "
                         f"{error})") from None
    check_header(_header(schema, name))
    try:
        untrusted = skops_io.get_untrusted_types(data=data)
    except Exception as error:  # skops raises various errors on foreign files
        raise ValueError(f"{name} is a damaged model file ({type(error).__name__}: "
                         f"{error})") from None
    foreign = _foreign_types(untrusted)
    if foreign:
        raise ValueError(f"{name} needs types that are not the package's own nor trusted "
                         f"by skops: {', '.join(foreign)}; refusing to load it")
    try:
        record = skops_io.load(io.BytesIO(data), trusted=untrusted)
    except Exception as error:  # a damaged archive fails in many ways
        raise ValueError(f"{name} is a damaged model file ({type(error).__name__}: "
                         f"{error})") from None
    if type(record) is not dict:
        raise ValueError(f"{name} is not a sklearn_ssl_crf model file (written by save)")
    return record


def _with_current_names(archive, schema, name):
    """The bytes of the archive ``name``, its schema's nodes that name a class by its module
    of an earlier release (`_MOVED`) renamed to its module now (the archive is rewritten
    only when one does)."""
    renamed = False
    for node in _nodes(schema):
        moved = _MOVED.get(f"{node.get('__module__')}.{node.get('__class__')}")
        if moved is not None:
            cls = CLASSES[moved]
            node["__module__"], node["__class__"] = cls.__module__, cls.__qualname__
            renamed = True
    if not renamed:
        with open_regular_file(name) as file:
            return file.read()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as copy:
        for info in archive.infolist():
            copy.writestr(info, json.dumps(schema) if info.filename == "schema.json"
                          else archive.read(info))
    return buffer.getvalue()


def _foreign_types(untrusted):
    return sorted(name for name in untrusted if name not in _TRUSTED)


def _check_archive(archive, name):
    """The parsed schema of the skops archive, after checking that everything skops will
    read of it fits in the file: members stored uncompressed (as skops writes them), each
    array file referred to by one node, the arrays' headers matching their sizes, and
    sparse matrices inflating within `_INFLATION_BUDGET`."""
    members = {info.filename: info for info in archive.infolist()}
    for info in members.values():
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
            raise ValueError(f"{name} is a damaged model file: its member {info.filename} "
                             "is compressed, as skops never writes it")
    if "schema.json" not in members:
        raise ValueError(f"{name} is not a sklearn_ssl_crf model file (no schema.json)")
    try:
        schema = json.loads(archive.read("schema.json"))
    except (ValueError, RecursionError) as error:
        raise ValueError(f"{name} is a damaged model file: its schema does not parse "
                         f"({type(error).__name__})") from None
    owners, budget = {}, _INFLATION_BUDGET
    for node in _nodes_with_files(schema):
        member, owner = node["file"], node.get("__id__")
        if owners.setdefault(member, owner) != owner or member not in members:
            raise ValueError(f"{name} is a damaged model file: {member!r} is missing or "
                             "read by more than one node")
        data = archive.read(member)
        if member.endswith(".npy"):
            _check_npy(io.BytesIO(data), len(data), f"{name}: {member}")
        else:
            budget -= _check_npz(data, budget, f"{name}: {member}")
    return schema


def _nodes_with_files(tree):
    return (node for node in _nodes(tree) if isinstance(node.get("file"), str))


def _nodes(tree):
    """Every JSON object in ``tree``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _check_npy(stream, size, where):
    """Raise ValueError unless the .npy in ``stream`` (``size`` bytes) declares an array of
    plain values that its data fills exactly."""
    try:
        version = np.lib.format.read_magic(stream)
        shape, fortran, dtype = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                 else np.lib.format.read_array_header_2_0)(stream)
    except (ValueError, TypeError, SyntaxError) as error:
        raise ValueError(f"{where} is not a NumPy array file ({error})") from None
    if dtype.hasobject:
        raise ValueError(f"{where} holds Python objects")
    needed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if needed != size - stream.tell():
        raise ValueError(f"{where} declares an array of {needed} bytes in "
                         f"{size - stream.tell()}")


def _check_npz(data, budget, where):
    """What the .npz ``data`` (a SciPy sparse matrix) inflates to, after checking its
    arrays, within ``budget`` bytes."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as inner:
            infos = inner.infolist()
            total = sum(info.file_size for info in infos)
            if total > budget:
                raise ValueError(f"{where} inflates to {total} bytes, more than a model "
                                 "file's sparse matrices may")
            for info in infos:
                with inner.open(info) as member:
                    _check_npy(member, info.file_size, f"{where}/{info.filename}")
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise ValueError(f"{where} is not a sparse matrix file ({error})") from None
    return total


def _header(schema, name):
    """The header's plain fields (format, versions) from the schema, read without skops."""
    content = schema.get("content") if isinstance(schema, dict) else None
    header = {}
    for field in ("format", "version", "sklearn_version"):
        node = content.get(field) if isinstance(content, dict) else None
        try:
            header[field] = json.loads(node["content"])
        except (TypeError, KeyError, ValueError):
            raise ValueError(f"{name} is not a sklearn_ssl_crf model file (no {field} in "
                             "its header)") from None
    return header
