"""Checkpoints of optimisation runs: a directory holding, for every run of a fit, the state
of its last checkpointed iteration (while it runs) or its result (once it has finished).

A record is filed under a digest of everything the run starts from: its start, the
objective's value and gradient there (so a record of other data or other settings is never
taken for this run's), its settings, and the state of the quasi-Newton memory and of the
callback it begins with. A fit that is run again after an interruption therefore meets
every run it had finished (it reads their results instead of iterating) and resumes the one
it was in from its last checkpoint; with deterministic runs that is the model of a fit that
was never interrupted. Runs in worker processes write records of their own: nothing is
keyed on the order in which runs happen.

Records are NumPy ``.npz`` files written atomically (a record is whole or absent) and read
as model files are: without pickle (a damaged or foreign file executes nothing), from
regular files only (a FIFO or a device is never opened for reading), their arrays stored
uncompressed with sizes that add up to the file's before anything is allocated (a record
never takes more memory than its size), and what they hold checked against what the run
reading them expects (the specs of `sklearn_ssl_crf.optim.specs`): its
arrays' shapes, dtypes and finiteness, its numbers, its keys. Any other record is refused
with a ValueError naming it.
"""

import hashlib
import json
import math
import os
import re
import time
import zipfile
from pathlib import Path

import numpy as np
from numpy.lib import format as npy

from ..optim.specs import Array, Integer, Number, check, kind_of
from ..utils import atomic_path, open_regular_file

__all__ = ["RunCheckpoints", "GeneratorState", "digest"]

#: The file that marks a directory as a checkpoint (and the format of its records).
_MARKER = "sklearn_ssl_crf-checkpoint.json"
_FORMAT = {"format": "sklearn_ssl_crf optimisation checkpoint", "version": 1}
#: The least time between two checkpoints of a run, in multiples of the last one's
#: writing.
_TIME_PER_WRITE = 40
#: Per checkpoint directory: when its last record was written, and how long that took.
_WRITE_TIMING = {}
#: The names this package writes in a checkpoint: the marker, records, and the temporary
#: files of either while it is written (`atomic_path`).
_RECORD_NAME = re.compile(r"(\.)?(run-[0-9a-f]{32}(-[a-z]+)?\.npz|" + re.escape(_MARKER)
                          + r")(?(1)\.[^/]*\.tmp|)")


class RunCheckpoints:
    """The checkpoint directory of a fit.

    Parameters
    ----------
    directory : str or path-like
        Created if missing; an existing directory must be empty or a checkpoint already.
    every : int, default=10
        Iterations between two checkpoints of a running optimisation (more where a
        checkpoint's writing would take over 2.5 % of the time; see `due`).
    verbose : bool, default=False
        Say when a run is read or resumed from the directory.
    """

    def __init__(self, directory, every=10, verbose=False):
        self.directory = Path(os.fspath(directory))
        self.every, self.verbose = every, verbose
        self._opened = False
        # When the last record was written in this directory and how long that took:
        # shared by the runs of a fit (each its own instance), so that the first
        # checkpoint of every run is not due regardless of its cost.
        self._timing = _WRITE_TIMING.setdefault(self.directory.resolve(),
                                                [time.perf_counter(), 0.0])

    def due(self, iteration):
        """Whether a running optimisation checkpoints after ``iteration``: every ``every``
        iterations, once the time since the last write is at least 40 times what that
        write took, so that writing takes at most about 2.5 % of the fit. (A run's state,
        with L-BFGS's memory, is 15 times the weights: written every 10 iterations of the
        cheap supervised fits of selection, it slowed a default fit by a fifth.)"""
        written_at, write_seconds = self._timing
        return iteration % self.every == 0 and (
            time.perf_counter() - written_at >= _TIME_PER_WRITE * write_seconds)

    def key(self, *parts):
        """The name of the record of a run starting from ``parts`` (`digest`)."""
        return digest(*parts)

    def read(self, key, finished, running=None, part=""):
        """The record filed under ``key`` (a dict whose arrays are NumPy arrays), or None;
        ``part``: a part of it kept in a file of its own (see `write`).

        ``finished`` and ``running`` say what the reader expects of a record of a finished
        run and of a running one (a dict of specs, see `check`; None: no such record is
        kept under ``key``). Any other record is refused: a ValueError names it and what is
        wrong with it."""
        self._open()
        path = self._path(key, part)
        try:
            # A FIFO or a device is refused, never waited on or read.
            with open_regular_file(path) as file:
                meta, arrays = _read_record(file)
            if not isinstance(meta, dict):
                raise ValueError(f"__meta__: {kind_of(meta)} where a run's state is expected")
            check(meta.get("finished"), bool, "finished")
            expected = finished if meta["finished"] else running
            if expected is None:
                raise ValueError(f"a {'finished' if meta['finished'] else 'running'} run's "
                                 "record where none is kept")
            record = _rebuilt(meta, arrays)
            check(record, {"finished": bool, **expected})
            return record
        except FileNotFoundError:
            return None
        except (OSError, EOFError, ValueError, KeyError, TypeError, RuntimeError,
                zipfile.BadZipFile) as error:
            raise ValueError(f"{path}: not a readable checkpoint record ({error}); delete it "
                             "(the run it held starts again)") from None

    def write(self, key, record, part=""):
        """File ``record`` (a dict of arrays, JSON values and dicts of these, with an entry
        ``finished``) under ``key``, atomically; ``part`` names a part of the record kept in
        a file of its own, which `remove` can drop without rewriting the rest."""
        self._open()
        arrays = {}
        meta = _flattened(record, arrays)
        arrays["__meta__"] = np.array(json.dumps(meta))
        started = time.perf_counter()
        with atomic_path(self._path(key, part)) as temporary, open(temporary, "wb") as file:
            np.savez(file, **arrays)
        finished = time.perf_counter()
        self._timing[:] = finished, finished - started

    def remove(self, key, part=""):
        """Remove what is filed under ``key`` (and ``part``), if anything."""
        self._path(key, part).unlink(missing_ok=True)

    def say(self, message):
        if self.verbose:
            print(f"checkpoint {self.directory}: {message}", flush=True)

    def _path(self, key, part=""):
        return self.directory / f"run-{key}{part and '-'}{part}.npz"

    def _open(self):
        """Make the directory, or check that it is a checkpoint (or empty). Processes that
        fit at once (folds in workers, a grid search) may open a new directory together:
        one's half-written marker does not make it foreign to another."""
        if self._opened:
            return
        if self.directory.exists() and not self.directory.is_dir():
            raise ValueError(f"checkpoint={str(self.directory)!r} is a file; give a "
                             "directory (created if missing)")
        self.directory.mkdir(parents=True, exist_ok=True)
        marker = self.directory / _MARKER
        try:
            known = json.loads(marker.read_text()) == _FORMAT
        except FileNotFoundError:
            known = None
        except (OSError, ValueError):
            known = False
        foreign = [path.name for path in self.directory.iterdir()
                   if not _RECORD_NAME.fullmatch(path.name)]
        if known is False or (known is None and foreign):
            raise ValueError(
                f"checkpoint={str(self.directory)!r} is a directory that is neither "
                f"empty nor a checkpoint of this package (no {_MARKER} of version "
                f"{_FORMAT['version']}); give an empty or new directory")
        if known is None:
            with atomic_path(marker) as temporary:
                Path(temporary).write_text(json.dumps(_FORMAT))
        self._opened = True


def digest(*parts):
    """Digest of ``parts`` (arrays, numbers, strings, None, and dicts or lists of these):
    equal for equal values, dtypes and shapes."""
    hashed = hashlib.blake2b(digest_size=16)
    _feed(hashed, parts)
    return hashed.hexdigest()


class GeneratorState:
    """A NumPy ``Generator``'s state as checkpoints take it (``checkpoint_state``,
    ``restore_checkpoint_state`` and ``checkpoint_spec``)."""

    def __init__(self, rng):
        self.rng = rng

    def checkpoint_state(self):
        return self.rng.bit_generator.state

    def restore_checkpoint_state(self, state):
        self.rng.bit_generator.state = state

    def checkpoint_spec(self, weights):
        """A state of the same bit generator: its keys, and values of the same kinds (the
        run's ``weights`` play no part)."""
        return _spec_like(self.checkpoint_state())


def _spec_like(value):
    """The spec of values like ``value`` (a dict of strings, ints, floats and arrays): the
    same keys, strings, dtypes and shapes; ints non-negative where ``value``'s are."""
    if isinstance(value, dict):
        return {name: _spec_like(item) for name, item in value.items()}
    if isinstance(value, np.ndarray):
        return Array(value.shape, value.dtype)
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return Integer(0 if value >= 0 else None)
    return Number()


# -- the file format ---------------------------------------------------------------------

#: The dtype kinds of a record's arrays: booleans, integers, floats and fixed-width strings.
_ARRAY_KINDS = "biufSU"


def _read_record(file):
    """``(meta, arrays)`` of the record in ``file`` (a regular file): its ``__meta__`` entry
    decoded from JSON, and its other arrays by name. Every member must be stored (as
    ``np.savez`` writes them) with an npy header whose shape and dtype account for its size
    exactly, and the members' sizes must add up to at most the file's: nothing is allocated
    past what the file holds."""
    size = os.fstat(file.fileno()).st_size
    arrays = {}
    with zipfile.ZipFile(file) as archive:
        members = archive.infolist()
        if sum(member.compress_size for member in members) > size:
            raise ValueError(f"its members declare more than its {size} bytes")
        for member in members:
            name = member.filename
            if member.compress_type != zipfile.ZIP_STORED:
                raise ValueError(f"{name} is compressed (records are written uncompressed)")
            if (member.file_size != member.compress_size
                    or member.header_offset + member.compress_size > size):
                raise ValueError(f"{name} declares {member.file_size} bytes; the file has "
                                 f"{size}")
            if not name.endswith(".npy"):
                raise ValueError(f"{name} is not an array")
            with archive.open(member) as stored:
                arrays[name[:-4]] = _read_array(stored, member.file_size, name)
    meta = arrays.pop("__meta__", None)
    if meta is None or meta.dtype.kind != "U" or meta.shape != ():
        raise ValueError("no __meta__ string")
    return json.loads(str(meta)), arrays


def _read_array(stored, size, name):
    """The array in ``stored`` (an npy file of ``size`` bytes), once its header is checked
    against its size."""
    version = npy.read_magic(stored)
    if version not in [(1, 0), (2, 0)]:
        raise ValueError(f"{name}: npy format {version}")
    read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
    shape, fortran_order, dtype = read_header(stored)
    if dtype.kind not in _ARRAY_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"{name}: dtype {dtype} (records hold numbers, booleans and strings)")
    n_bytes = math.prod(shape) * dtype.itemsize
    if min(shape, default=0) < 0 or stored.tell() + n_bytes != size:
        raise ValueError(f"{name}: its header declares {math.prod(shape)} items of "
                         f"{dtype.itemsize} bytes; it holds {size - stored.tell()} bytes")
    data = bytearray(n_bytes)
    if stored.readinto(data) != n_bytes:
        raise ValueError(f"{name}: truncated")
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran_order else "C")


def _feed(digest, value):
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        digest.update(f"array {array.dtype.str} {array.shape}".encode())
        digest.update(array.reshape(-1).view(np.uint8))
    elif isinstance(value, dict):
        digest.update(b"dict")
        for name in sorted(value):
            digest.update(repr(name).encode())
            _feed(digest, value[name])
    elif isinstance(value, (list, tuple)):
        digest.update(f"list {len(value)}".encode())
        for item in value:
            _feed(digest, item)
    else:
        digest.update(repr(value).encode())


def _flattened(value, arrays):
    """``value`` with its arrays replaced by references to entries added to ``arrays``."""
    if isinstance(value, np.ndarray):
        name = f"a{len(arrays)}"
        arrays[name] = value
        return {"__array__": name}
    if isinstance(value, dict):
        return {name: _flattened(item, arrays) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_flattened(item, arrays) for item in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _rebuilt(meta, arrays):
    if isinstance(meta, dict):
        if set(meta) == {"__array__"}:
            name = meta["__array__"]
            if not isinstance(name, str) or name not in arrays:
                raise ValueError(f"it names an array {name!r} it does not hold")
            return arrays[name]
        return {name: _rebuilt(item, arrays) for name, item in meta.items()}
    if isinstance(meta, list):
        return [_rebuilt(item, arrays) for item in meta]
    return meta
