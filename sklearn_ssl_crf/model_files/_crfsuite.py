"""CRFsuite's model files (the format python-crfsuite and sklearn-crfsuite write), read into
a fitted `CRF` and written from one, without python-crfsuite.

The layout, from CRFsuite's ``lib/crf/src/crf1d_model.c`` and ``lib/cqdb/src/cqdb.c``: all
integers are little-endian uint32, weights little-endian float64, offsets count bytes from
the start of the file unless said otherwise.

- Header, 48 bytes: ``b"lCRF"``, file size, model type ``b"FOMC"`` (first-order Markov
  CRF), version 100, number of features (CRFsuite leaves it 0), of labels, of attributes,
  and the offsets of the features, the label database, the attribute database, the label
  references and the attribute references.
- Features, ``b"FEAT"``, chunk size, count, then 20 bytes per feature: type (0 a state
  feature, 1 a transition), source (the attribute of a state feature, the previous label of
  a transition), destination label, weight. Only non-zero weights are stored.
- Labels and attributes: each a CQDB constant database, ``b"CQDB"``, chunk size, flags,
  the byte-order mark 0x62445371, the number and offset of the id-to-string links; 256
  hash-table references (offset, number of buckets); the records (id, key size, the key
  with its NUL); the hash tables (Jenkins' lookup3 ``hashlittle`` of the key and its NUL;
  table ``hash % 256``, first bucket ``(hash >> 8) % buckets``, open addressing with twice
  as many buckets as keys); the id-to-string links (record offsets by id). Offsets inside a
  database count from its start.
- Label and attribute references, ``b"LFRF"`` and ``b"AFRF"`` (4-byte aligned): chunk size,
  count, an offset per label (CRFsuite writes two more, 0) or attribute, and at each
  offset the number of features and their ids: the transitions from a label, the state
  features of an attribute. The tagger reads the model through these only.

A state feature's weight is multiplied by the attribute's value in the token (1 for
``"key:value"`` strings and True, the number for floats), and the scores are those of our
CRF: no start or end weights (CRFsuite's chain has none), unseen pairs weigh 0.
"""

import os
import struct
import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..estimators import CRF, BaseCRF
from ..features import ColumnCache, SequenceVectorizer
from ..utils import check_memory, open_regular_file

__all__ = ["MAGIC", "read_crfsuite", "write_crfsuite"]

MAGIC = b"lCRF"
_MODEL_TYPE = b"FOMC"
_VERSION = 100
_HEADER_SIZE = 48
_CHUNK_HEADER = 12  # chunk id, size, count
_FEATURE = np.dtype([("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("weight", "<f8")])
_STATE, _TRANSITION = 0, 1

_CQDB_ID = b"CQDB"
_CQDB_BYTE_ORDER = 0x62445371
_CQDB_TABLES = 256
_CQDB_HEADER = 24
_CQDB_DATA = _CQDB_HEADER + 8 * _CQDB_TABLES  # the first record
# The fewest bytes a string takes in a database: its record (id, key size, at least the
# NUL) and its link (CRFsuite's also take two hash buckets, 16 bytes more).
_CQDB_MIN_ENTRY = 13


# -- reading ------------------------------------------------------------------------------


def read_crfsuite(path):
    """A fitted first-order `CRF` from a CRFsuite model file.

    The file holds labels, attribute names and weights, no training settings: the
    returned CRF has ``order=1`` and `CRF`'s defaults for every other parameter, and no
    ``training_log_``. ``classes_`` are CRFsuite's labels in its order (first appearance in
    its training data, as ours); ``attributes_`` the attributes the file keeps (CRFsuite
    drops those whose weights are all 0), and ``vectorizer_`` names attributes of token
    dicts as python-crfsuite does, so that ``predict`` takes sklearn-crfsuite's input.
    Keys and labels that are not UTF-8 are decoded with ``surrogateescape``.

    Raises ValueError naming the file and what is wrong with it.
    """
    name = os.fspath(path)
    with open_regular_file(name) as file:
        data = file.read()
    labels, attributes, state, transition = _parse(_Bytes(data, name))
    return _fitted_crf(labels, attributes, state, transition)


class _Bytes:
    """A file's bytes with bounds-checked little-endian reads; errors name the file."""

    def __init__(self, data, name):
        self.data = data
        self.bytes = np.frombuffer(data, dtype=np.uint8)
        self.size = len(data)
        self.name = name

    def error(self, what):
        return ValueError(f"{self.name} is not a valid CRFsuite model file: {what}")

    def check(self, start, stop, what):
        """Raise unless bytes ``start:stop`` lie in the file (arrays: every pair)."""
        start, stop = np.asarray(start), np.asarray(stop)
        if start.size and (start.min() < 0 or stop.max() > self.size):
            raise self.error(f"{what} lies beyond the end of the file ({self.size} bytes): "
                             "it is truncated or corrupt")

    def uint32(self, offset, count, what):
        """``count`` consecutive uint32 from ``offset``, as int64."""
        self.check(offset, offset + 4 * count, what)
        return np.frombuffer(self.data, "<u4", count, offset).astype(np.int64)

    def uint32_at(self, positions, what):
        """The uint32 at each of ``positions`` (an array of offsets), as int64."""
        positions = np.asarray(positions, dtype=np.int64)
        self.check(positions, positions + 4, what)
        gathered = self.bytes[positions[:, None] + np.arange(4)]
        return np.ascontiguousarray(gathered).view("<u4").ravel().astype(np.int64)


def _parse(buffer):
    """Labels, attributes, state weights (attributes x labels) and transition weights."""
    if buffer.size < _HEADER_SIZE or buffer.data[:4] != MAGIC:
        raise buffer.error(f"it does not start with {MAGIC!r} and a {_HEADER_SIZE}-byte "
                           "header")
    (size, model_type, version, _, n_labels, n_attributes, off_features, off_labels,
     off_attributes, off_label_refs, off_attribute_refs) = struct.unpack_from(
        "<I4sIIIIIIIII", buffer.data, 4)
    if model_type != _MODEL_TYPE:
        raise buffer.error(f"model type {model_type!r}; only {_MODEL_TYPE!r} (CRFsuite's "
                           "first-order CRF, crf1d) is known")
    if version != _VERSION:
        raise buffer.error(f"format version {version}; only {_VERSION} is known")
    if size > buffer.size:
        raise buffer.error(f"the header gives {size} bytes but the file has "
                           f"{buffer.size}: it is truncated")
    if n_labels == 0:
        raise buffer.error("it has no labels")
    for count, what in ((n_labels, "labels"), (n_attributes, "attributes")):
        if count * _CQDB_MIN_ENTRY > buffer.size:
            raise buffer.error(f"the header gives {count:,} {what}, more than a file of "
                               f"{buffer.size:,} bytes holds")
    # The weights are read into dense arrays: refused before they exist.
    check_memory({f"state weights ({n_attributes:,} x {n_labels:,})":
                  8 * n_attributes * n_labels,
                  f"transition weights ({n_labels:,} x {n_labels:,})": 8 * n_labels**2},
                 f"{buffer.name}: its CRF of {n_labels:,} labels and {n_attributes:,} "
                 "attributes")
    features = _features(buffer, off_features)
    labels, label_end = _cqdb_strings(buffer, off_labels, n_labels, "label")
    attributes, attribute_end = _cqdb_strings(buffer, off_attributes, n_attributes,
                                              "attribute")
    if n_attributes and off_labels < attribute_end and off_attributes < label_end:
        # Each string needs bytes of its own: a shared database would not bound the counts.
        raise buffer.error(f"its label database (at offset {off_labels}) and attribute "
                           f"database (at offset {off_attributes}) overlap")
    for what, names in (("label", labels), ("attribute", attributes)):
        seen = set()
        for name in names:
            if name in seen:
                raise buffer.error(f"the {what} {name!r} is stored twice")
            seen.add(name)
    state = _weights(buffer, features, off_attribute_refs, b"AFRF", _STATE,
                     (n_attributes, n_labels), "attribute")
    transition = _weights(buffer, features, off_label_refs, b"LFRF", _TRANSITION,
                          (n_labels, n_labels), "label")
    return labels, attributes, state, transition


def _chunk(buffer, offset, chunk_id, what):
    """Size and count of the chunk at ``offset``, checked to carry ``chunk_id``."""
    buffer.check(offset, offset + _CHUNK_HEADER, f"the {what} chunk")
    if buffer.data[offset:offset + 4] != chunk_id:
        raise buffer.error(f"no {chunk_id!r} chunk ({what}) at offset {offset}")
    size, count = buffer.uint32(offset + 4, 2, f"the {what} chunk").tolist()
    buffer.check(offset, offset + size, f"the {what} chunk ({size} bytes from {offset})")
    return size, count


def _features(buffer, offset):
    size, count = _chunk(buffer, offset, b"FEAT", "features")
    if _CHUNK_HEADER + _FEATURE.itemsize * count > size:
        raise buffer.error(f"the features chunk of {size} bytes cannot hold its {count} "
                           "features")
    return np.frombuffer(buffer.data, _FEATURE, count, offset + _CHUNK_HEADER)


def _weights(buffer, features, offset, chunk_id, kind, shape, owner_name):
    """The weight matrix of the features that the reference chunk at ``offset`` lists,
    row ``i`` from the list of the ``i``-th owner (an attribute or a label)."""
    what = f"{owner_name} references"
    _, count = _chunk(buffer, offset, chunk_id, what)
    n_owners = shape[0]
    if count < n_owners:
        raise buffer.error(f"the {what} list {count} {owner_name}s of {n_owners}")
    lists = buffer.uint32(offset + _CHUNK_HEADER, n_owners, what)
    counts = buffer.uint32_at(lists, what)
    buffer.check(lists, lists + 4 + 4 * counts, what)
    if counts.sum() > features.size:
        raise buffer.error(f"the {what} name more features than the {features.size} the "
                           "file has")
    owners = np.repeat(np.arange(n_owners), counts)
    starts = np.repeat(lists + 4 - 4 * np.concatenate(([0], np.cumsum(counts)[:-1])),
                       counts)
    ids = buffer.uint32_at(starts + 4 * np.arange(owners.size), what)
    if ids.size and ids.max() >= features.size:
        raise buffer.error(f"the {what} name feature {ids.max()} of {features.size}")
    referred = features[ids]
    infinite = ~np.isfinite(referred["weight"])
    if infinite.any():
        k = int(np.argmax(infinite))
        raise buffer.error(f"feature {ids[k]} ({owner_name} {owners[k]}, label "
                           f"{referred['dst'][k]}) has the weight {referred['weight'][k]}, "
                           "which is not finite")
    wrong = ((referred["type"] != kind) | (referred["src"] != owners)
             | (referred["dst"] >= shape[1]))
    if wrong.any():
        k = int(np.argmax(wrong))
        raise buffer.error(f"feature {ids[k]} (type {referred['type'][k]}, source "
                           f"{referred['src'][k]}, label {referred['dst'][k]}) is listed "
                           f"under {owner_name} {owners[k]}, which it does not belong to")
    cells = owners * shape[1] + referred["dst"].astype(np.int64)
    if cells.size and np.bincount(cells).max() > 1:
        raise buffer.error(f"the {what} list one feature twice")
    weights = np.zeros(shape)
    weights.flat[cells] = referred["weight"]
    return weights


def _cqdb_strings(buffer, offset, count, what):
    """The strings of ids ``0 .. count - 1`` of the CQDB database at ``offset``, and the
    offset of its end."""
    where = f"the {what} database"
    buffer.check(offset, offset + _CQDB_HEADER, where)
    if buffer.data[offset:offset + 4] != _CQDB_ID:
        raise buffer.error(f"no {_CQDB_ID!r} chunk ({where}) at offset {offset}")
    size, _, byte_order, n_links, links = buffer.uint32(offset + 4, 5, where).tolist()
    if byte_order != _CQDB_BYTE_ORDER:
        raise buffer.error(f"{where} has the byte-order mark {byte_order:#x}, not "
                           f"{_CQDB_BYTE_ORDER:#x}")
    buffer.check(offset, offset + size, f"{where} ({size} bytes from {offset})")
    if count == 0:
        return [], offset + size
    if count * _CQDB_MIN_ENTRY > size - _CQDB_DATA:
        raise buffer.error(f"{where} of {size} bytes cannot hold {count:,} {what}s (each "
                           f"takes {_CQDB_MIN_ENTRY} bytes at least)")
    if links == 0 or n_links < count:
        raise buffer.error(f"{where} has no id-to-string links for its {count} {what}s")
    records = offset + buffer.uint32(offset + links, count, where)
    end = offset + size
    missing = records < offset + _CQDB_DATA  # includes the link 0: no record
    if missing.any():
        raise buffer.error(f"{where} has no record for {what} {int(np.argmax(missing))}")
    ids = buffer.uint32_at(records, where)
    key_sizes = buffer.uint32_at(records + 4, where)
    keys = records + 8
    if (ids != np.arange(count)).any():
        raise buffer.error(f"{where} links {what} {int(np.argmax(ids != np.arange(count)))} "
                           "to the record of another")
    if (key_sizes < 1).any() or (keys + key_sizes > end).any():
        raise buffer.error(f"{where} has a record that lies beyond its end")
    if buffer.bytes[keys + key_sizes - 1].any():
        raise buffer.error(f"{where} has a string that does not end in NUL")
    data = buffer.data
    return [data[k:k + n - 1].decode("utf-8", "surrogateescape")
            for k, n in zip(keys.tolist(), key_sizes.tolist())], end


def _fitted_crf(labels, attributes, state, transition):
    """A `CRF` with these weights, as `fit` would leave it on dicts with these attributes
    (the vectorizer's column cache too), without training settings or log."""
    vectorizer = SequenceVectorizer()
    vectorizer.feature_names_ = list(attributes)
    vectorizer.vocabulary_ = {name: column for column, name in enumerate(attributes)}
    vectorizer._column_cache = ColumnCache(vectorizer.vocabulary_)
    # CRFsuite decodes without label constraints: so does the model, to tag as it did.
    crf = CRF(order=1, constraints=None)
    crf.constraints_ = None
    crf.vectorizer_ = vectorizer
    crf.attributes_ = list(attributes)
    crf.num_attributes_ = len(attributes)
    crf.classes_ = list(labels)
    crf._set_weight_blocks([state, transition])
    return crf


# -- writing ------------------------------------------------------------------------------


def write_crfsuite(model, path):
    """Write a fitted first-order CRF as a CRFsuite model file.

    The weights are written as CRFsuite writes them (non-zero ones only); every attribute
    is kept, so reading the file gives back the same ``attributes_`` and weights. Raises
    ValueError for what CRFsuite cannot express: another kind of object, a second-order
    chain, decoding other than Viterbi, labels or attributes that are not strings (a model
    fitted on feature matrices).
    """
    labels, attributes, state, transition = _crfsuite_parts(model)
    data = _model_bytes(labels, attributes, state, transition)
    with open(path, "wb") as file:
        file.write(data)


def check_crfsuite_model(model):
    """Raise ValueError unless `write_crfsuite` can write ``model``; warn that its label
    constraints, if any, are not written."""
    _crfsuite_parts(model)
    if getattr(model, "constraints_", None) is not None:
        warnings.warn(f"CRFsuite has no label constraints: the file keeps the weights, but "
                      f"tagging with it ignores this model's {model.constraints_!r} (read back "
                      "by sklearn_ssl_crf.load, it has none either, until given them by "
                      "set_constraints)", UserWarning, stacklevel=3)


def _crfsuite_parts(model):
    if not isinstance(model, BaseCRF):
        hint = (": save its CRF step (a CRFsuite file holds no feature extraction)"
                if hasattr(model, "steps") else "")
        raise ValueError("a CRFsuite model file holds one fitted linear-chain CRF, not a "
                         f"{type(model).__name__}{hint}")
    check_is_fitted(model, ["state_weights_", "transition_weights_"])
    if getattr(model, "trigram_weights_", None) is not None:
        raise ValueError("CRFsuite's model is a first-order chain; this model has order=2 "
                         "(save it as .model instead)")
    if getattr(model, "allowed_transitions_", None) is not None:
        raise ValueError("CRFsuite's chain allows every transition; this model forbids some")
    decoding = getattr(model, "decoding", "viterbi")
    if decoding != "viterbi":
        raise ValueError(f"CRFsuite tags by Viterbi; this model decodes with "
                         f"{decoding!r}: set_params(decoding='viterbi') before saving")
    labels, attributes = list(model.classes_), list(model.attributes_)
    for what, names in (("label", labels), ("attribute", attributes)):
        for name in names:
            if not isinstance(name, str):
                fitted = (" (the model was fitted on feature matrices: CRFsuite names "
                          "attributes)" if what == "attribute" else "")
                raise ValueError(f"CRFsuite's {what}s are strings; this model has the "
                                 f"{what} {name!r}{fitted}")
            if "\0" in name:
                raise ValueError(f"the {what} {name!r} holds a NUL character, which "
                                 "CRFsuite's strings cannot")
    state = np.asarray(model.state_weights_, dtype=np.float64)
    transition = np.asarray(model.transition_weights_, dtype=np.float64)
    if not (np.isfinite(state).all() and np.isfinite(transition).all()):
        raise ValueError("the model has weights that are not finite")
    return labels, attributes, state, transition


def _model_bytes(labels, attributes, state, transition):
    n_labels, n_attributes = len(labels), len(attributes)
    # Features in row-major order: those of one attribute (or one previous label) are
    # consecutive, so each reference list is a slice of the feature ids.
    features, attribute_owners = _feature_block(state, _STATE)
    transitions, label_owners = _feature_block(transition, _TRANSITION)
    n_state = features.size
    features = np.concatenate([features, transitions])
    label_db = _cqdb_bytes(labels)
    attribute_db = _cqdb_bytes(attributes)

    off_features = _HEADER_SIZE
    off_labels = off_features + _CHUNK_HEADER + features.nbytes
    off_attributes = off_labels + len(label_db)
    off_label_refs = _aligned(off_attributes + len(attribute_db))
    # CRFsuite lists two more labels than it has, with offset 0.
    label_refs = _references(b"LFRF", off_label_refs, label_owners, n_labels, n_state,
                             n_labels + 2)
    off_attribute_refs = off_label_refs + len(label_refs)
    attribute_refs = _references(b"AFRF", off_attribute_refs, attribute_owners,
                                 n_attributes, 0, n_attributes)
    size = off_attribute_refs + len(attribute_refs)
    header = struct.pack("<4sI4sIIIIIIIII", MAGIC, size, _MODEL_TYPE, _VERSION,
                         features.size, n_labels, n_attributes, off_features, off_labels,
                         off_attributes, off_label_refs, off_attribute_refs)
    feature_chunk = struct.pack("<4sII", b"FEAT", _CHUNK_HEADER + features.nbytes,
                                features.size)
    padding = b"\0" * (off_label_refs - off_attributes - len(attribute_db))
    return b"".join([header, feature_chunk, features.tobytes(), label_db, attribute_db,
                     padding, label_refs, attribute_refs])


def _feature_block(weights, kind):
    """The features of the non-zero entries of ``weights``, and the row of each."""
    rows, columns = np.nonzero(weights)
    features = np.zeros(rows.size, dtype=_FEATURE)
    features["type"] = kind
    features["src"] = rows
    features["dst"] = columns
    features["weight"] = weights[rows, columns]
    return features, rows


def _aligned(offset):
    return -(-offset // 4) * 4


def _references(chunk_id, offset, owners, n_owners, first_id, n_listed):
    """A reference chunk at ``offset``: for owner ``i``, the ids ``first_id + k`` of the
    features whose row (``owners[k]``, sorted) is ``i``."""
    counts = np.bincount(owners, minlength=n_owners)
    lists_start = offset + _CHUNK_HEADER + 4 * n_listed
    # Owner i's list: its count, then its feature ids.
    list_starts = lists_start + 4 * (np.arange(n_owners) + np.cumsum(counts) - counts)
    table = np.zeros(n_listed, dtype="<u4")
    table[:n_owners] = list_starts
    body = np.empty(n_owners + owners.size, dtype="<u4")
    count_slots = np.arange(n_owners) + np.cumsum(counts) - counts
    body[count_slots] = counts
    id_slots = np.ones(body.size, dtype=bool)
    id_slots[count_slots] = False
    body[id_slots] = first_id + np.arange(owners.size)
    size = _CHUNK_HEADER + table.nbytes + body.nbytes
    return struct.pack("<4sII", chunk_id, size, n_listed) + table.tobytes() + body.tobytes()


def _cqdb_bytes(strings):
    """A CQDB database mapping ``strings[i]`` to ``i`` and back, as CRFsuite writes it."""
    keys = [s.encode("utf-8", "surrogateescape") + b"\0" for s in strings]
    sizes = np.array([len(k) for k in keys], dtype=np.int64)
    records = _CQDB_DATA + np.concatenate(([0], np.cumsum(8 + sizes)))
    record_bytes = b"".join(struct.pack("<II", i, len(k)) + k for i, k in enumerate(keys))
    hashes = _hashlittle(keys)
    table_of = hashes % _CQDB_TABLES
    counts = np.bincount(table_of, minlength=_CQDB_TABLES)
    # Table t (2 * counts[t] buckets of hash and record offset) follows the records and
    # the tables before it.
    table_offsets = records[-1] + 16 * (np.cumsum(counts) - counts)
    # Open addressing, keys put in id order, as CRFsuite puts them.
    first_bucket = (2 * (np.cumsum(counts) - counts)).tolist()
    sizes_of = (2 * counts).tolist()
    slot_of = [0] * len(keys)
    taken = set()
    for k, (hash_value, table) in enumerate(zip(hashes.tolist(), table_of.tolist())):
        n = sizes_of[table]
        slot = (hash_value >> 8) % n
        while first_bucket[table] + slot in taken:
            slot = (slot + 1) % n
        slot_of[k] = first_bucket[table] + slot
        taken.add(slot_of[k])
    buckets = np.zeros((2 * len(keys), 2), dtype="<u4")
    buckets[slot_of, 0] = hashes
    buckets[slot_of, 1] = records[:-1]
    links_offset = int(records[-1]) + buckets.nbytes if keys else 0
    size = int(records[-1]) + buckets.nbytes + 4 * len(keys)
    references = np.zeros((_CQDB_TABLES, 2), dtype="<u4")
    references[:, 0] = np.where(counts > 0, table_offsets, 0)
    references[:, 1] = 2 * counts
    header = struct.pack("<4sIIIII", _CQDB_ID, size, 0, _CQDB_BYTE_ORDER, len(keys),
                         links_offset)
    links = records[:-1].astype("<u4")
    return b"".join([header, references.tobytes(), record_bytes, buckets.tobytes(),
                     links.tobytes()])


def _hashlittle(keys):
    """Bob Jenkins' lookup3 ``hashlittle(key, len(key), 0)`` of each non-empty bytes
    key, vectorised over the keys (uint32 arithmetic wraps as in C)."""
    lengths = np.array([len(k) for k in keys], dtype=np.int64)
    if lengths.size == 0:
        return np.zeros(0, dtype=np.uint32)
    blocks = (lengths + 11) // 12  # the last block is zero-padded
    words = np.zeros((lengths.size, 12 * int(blocks.max())), dtype=np.uint8)
    flat = np.frombuffer(b"".join(keys), dtype=np.uint8)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    rows = np.repeat(np.arange(lengths.size), lengths)
    words[rows, np.arange(flat.size) - np.repeat(starts, lengths)] = flat
    words = words.view("<u4").astype(np.uint32)
    a = b = c = (np.uint32(0xDEADBEEF) + lengths.astype(np.uint32)).astype(np.uint32)
    a, b, c = a.copy(), b.copy(), c.copy()
    for j in range(int(blocks.max())):
        for step, rows in ((_mix, np.flatnonzero(blocks > j + 1)),
                           (_final, np.flatnonzero(blocks == j + 1))):
            if rows.size:
                a[rows], b[rows], c[rows] = step(a[rows] + words[rows, 3 * j],
                                                 b[rows] + words[rows, 3 * j + 1],
                                                 c[rows] + words[rows, 3 * j + 2])
    return c


def _rot(x, k):
    return (x << np.uint32(k)) | (x >> np.uint32(32 - k))


def _mix(a, b, c):
    a = (a - c) ^ _rot(c, 4)
    c = c + b
    b = (b - a) ^ _rot(a, 6)
    a = a + c
    c = (c - b) ^ _rot(b, 8)
    b = b + a
    a = (a - c) ^ _rot(c, 16)
    c = c + b
    b = (b - a) ^ _rot(a, 19)
    a = a + c
    c = (c - b) ^ _rot(b, 4)
    b = b + a
    return a, b, c


def _final(a, b, c):
    c = (c ^ b) - _rot(b, 14)
    a = (a ^ c) - _rot(c, 11)
    b = (b ^ a) - _rot(a, 25)
    c = (c ^ b) - _rot(b, 16)
    a = (a ^ c) - _rot(c, 4)
    b = (b ^ a) - _rot(a, 14)
    c = (c ^ b) - _rot(b, 24)
    return a, b, c
