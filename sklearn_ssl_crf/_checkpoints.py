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

Records are NumPy ``.npz`` files read without pickle (a damaged or foreign file executes
nothing), written atomically (a record is whole or absent).
"""

import hashlib
import json
import os
import re
import time
import zipfile
from pathlib import Path

import numpy as np

from ._files import atomic_path

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

    def read(self, key, part=""):
        """The record filed under ``key`` (a dict whose arrays are NumPy arrays), or None;
        ``part``: a part of it kept in a file of its own (see `write`)."""
        self._open()
        path = self._path(key, part)
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as stored:
                arrays = {name: stored[name] for name in stored.files}
            meta = json.loads(str(arrays.pop("__meta__")))
            if not isinstance(meta, dict) or "finished" not in meta:
                raise ValueError("no run state in it")
            return _rebuilt(meta, arrays)
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as error:
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
    """A NumPy ``Generator``'s state as checkpoints take it (``checkpoint_state`` and
    ``restore_checkpoint_state``)."""

    def __init__(self, rng):
        self.rng = rng

    def checkpoint_state(self):
        return self.rng.bit_generator.state

    def restore_checkpoint_state(self, state):
        self.rng.bit_generator.state = state


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
            return arrays[meta["__array__"]]
        return {name: _rebuilt(item, arrays) for name, item in meta.items()}
    if isinstance(meta, list):
        return [_rebuilt(item, arrays) for item in meta]
    return meta
