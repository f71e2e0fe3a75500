"""Model files: a fitted model saved with the package version, and loaded back with a check.

Three formats, chosen by the file name when saving and recognised by their first bytes
when loading:

- skops, the default (any name but those below; ``pip install skops``, or the ``cli``
  extra): its loader creates only the types it is told to trust instead of running the
  file's code. `load` trusts this package's own classes, skops' defaults (NumPy and
  scikit-learn types) and SciPy's sparse matrices, and refuses a file that needs any other.
- ``*.joblib``, ``*.pkl``, ``*.pickle``: a pickle, with a small header (the package and
  scikit-learn versions, the caller's ``info``) before the model. Loading a pickle can run
  any code it holds, so `load` refuses one unless ``trusted=True``, before reading a byte
  of it with pickle.
- ``*.crfsuite``: CRFsuite's model file (what python-crfsuite and sklearn-crfsuite write),
  for a first-order CRF; no versions or info, and no code run on loading
  (`_crfsuite_format`).
"""

import os
import re

import joblib
import sklearn

from ._crfsuite_format import (
    MAGIC,
    check_crfsuite_model,
    read_crfsuite,
    write_crfsuite,
)
from ._files import atomic_path

__all__ = ["load", "save"]

_FORMAT = "sklearn_ssl_crf model file"
_PACKAGE = __name__.split(".")[0]


def _package_version():
    # Imported here: the package's __init__ imports this module.
    from . import __version__

    return __version__


def _release(version):
    """``(major, minor)`` of a version string such as ``"0.1.0.dev0"``."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


_PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")
# scikit-learn's and SciPy's data containers that skops does not trust by default.
_TRUSTED_TYPES = ("scipy.sparse._csr.csr_matrix", "scipy.sparse._csc.csc_matrix")


def _is_pickle(path):
    return str(path).endswith(_PICKLE_SUFFIXES)


def _is_crfsuite(path):
    return str(path).endswith(".crfsuite")


def _file_kind(name):
    """'crfsuite', 'skops' (a zip archive), 'pickle' or None, from the file's first bytes."""
    with open(name, "rb") as file:
        start = file.read(4)
    if start == MAGIC:
        return "crfsuite"
    if start == b"PK\x03\x04":
        return "skops"
    if start[:1] == b"\x80":  # pickle protocol 2 and later (joblib writes 4 or 5)
        return "pickle"
    return None


def save(model, path, *, info=None):
    """Write a fitted model (or any estimator, `~sklearn.pipeline.Pipeline`...) to a file.

    The file holds the package and scikit-learn versions and ``info`` beside the model, so
    that `load` can refuse a file of an incompatible version. The file is written beside
    its destination and renamed over it: a failed save leaves an existing file as it was.

    Parameters
    ----------
    model : object
        What to save, usually a fitted estimator or a pipeline of features and estimator.
    path : str or path-like
        The file to write. A name ending in ``.joblib``, ``.pkl`` or ``.pickle`` writes a
        pickle (which `load` reads only with ``trusted=True``); ``.crfsuite`` writes
        CRFsuite's model file, which python-crfsuite's ``Tagger`` and
        ``sklearn_crfsuite.CRF(model_filename=...)`` open (a fitted first-order CRF whose
        labels and attributes are strings, decoded by Viterbi; otherwise a ValueError says
        why not); any other name (``*.skops`` by convention) writes the skops format, which
        loads without running code (needs the ``skops`` package).
        Only a regular file is written: a symbolic link is followed (the link stays; the
        file it leads to is replaced, or created), and a path that is or leads to a
        directory, a device such as ``/dev/null``, a named pipe or a socket, or a link
        through ``/proc`` such as ``/dev/stdout``, is refused with ``shutil.SpecialFileError``
        (an OSError) before anything is written. A failure to write (a full disk, no
        permission) raises an OSError of its kind naming ``path``.
    info : dict or None, default=None
        Facts about the model to keep beside it (training files, settings, scores), made
        of plain Python values; `load` returns them with ``return_info=True``. A CRFsuite
        file has no place for them: give None.

    See Also
    --------
    load : Read the file back.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sklearn_ssl_crf import CRF, load, save
    >>> X = [[{"word": "the"}, {"word": "cat"}]]
    >>> crf = CRF(max_iterations=10).fit(X, [["DT", "NN"]])
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tagger.skops"
    >>> save(crf, path, info={"trained on": "one sentence"})
    >>> model, info = load(path, return_info=True)
    >>> model.predict(X), info
    ([['DT', 'NN']], {'trained on': 'one sentence'})
    """
    if info is not None and not isinstance(info, dict):
        raise TypeError(f"info must be a dict or None, got {type(info).__name__}")
    if _is_crfsuite(path):
        if info:
            raise ValueError("a CRFsuite model file has no place for info; give info=None "
                             "or save as .joblib or .skops")
        check_crfsuite_model(model)  # before a temporary file is made
        with atomic_path(path) as temporary:
            write_crfsuite(model, temporary)
        return
    header = {
        "format": _FORMAT,
        "version": _package_version(),
        "sklearn_version": sklearn.__version__,
        "info": dict(info or {}),
    }
    # Written beside the file and renamed over it: a failed save leaves the old file.
    skops_io = None if _is_pickle(path) else _import_skops()
    with atomic_path(path) as temporary:
        if skops_io is not None:
            skops_io.dump({**header, "model": model}, temporary)
            return
        with open(temporary, "wb") as file:
            joblib.dump(header, file)
            joblib.dump(model, file)


def load(path, *, return_info=False, trusted=False):
    """Read a model written by `save`, checking that this version of the package can use it.

    The format is recognised by the file's first bytes, whatever its name. A skops file is
    read with skops, creating only the types of this package, those skops trusts by default
    and SciPy's sparse matrices. A CRFsuite model file (one written by python-crfsuite,
    sklearn-crfsuite, CRFsuite or `save`) is read without python-crfsuite into a fitted
    first-order `CRF` (the user guide's "Models trained by sklearn-crfsuite" says what maps
    to what). A pickle (``*.joblib``) is read only with ``trusted=True``. A file written by
    another major.minor release of the package is refused.

    Parameters
    ----------
    path : str or path-like
        A file written by `save`, or a CRFsuite model file.
    return_info : bool, default=False
        Also return the ``info`` dict given to `save` (empty for a CRFsuite file).
    trusted : bool, default=False
        Read a pickle file. Unpickling runs whatever code the file holds: pass True only
        for files you made or trust.

    Returns
    -------
    model : object
        The saved model.
    info : dict
        Only with ``return_info``.

    Raises
    ------
    ValueError
        If the file is not a model file of this package, or is a pickle and ``trusted`` is
        False (nothing of it is unpickled), or was written by a version with another
        major.minor release (their models may differ: retrain, or load it with that
        version), or (skops) is damaged or needs other types, or is a CRFsuite file that is
        truncated or corrupt (the message says what).

    See Also
    --------
    save : Write a model file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sklearn_ssl_crf import CRF, load, save
    >>> X = [[{"word": "the"}, {"word": "cat"}]]
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tagger.skops"
    >>> save(CRF(max_iterations=10).fit(X, [["DT", "NN"]]), path)
    >>> load(path).predict(X)
    [['DT', 'NN']]
    """
    name = os.fspath(path)
    kind = "crfsuite" if _is_crfsuite(name) else _file_kind(name)
    if kind == "crfsuite":
        model = read_crfsuite(name)
        return (model, {}) if return_info else model
    if kind == "skops":
        header = _load_skops(name)
        _check_header(header, name)
        model = header["model"]
    elif kind == "pickle":
        if not trusted:
            raise ValueError(
                f"{name} is a pickle (joblib) file: loading it runs any code it holds. Pass "
                "trusted=True (the command line: --trusted) only if you made it or trust "
                "where it came from; save models as *.skops to load them safely")
        with open(name, "rb") as file:
            try:
                header = joblib.load(file)
            except Exception:  # any unpickling failure: not a file of ours
                raise ValueError(f"{name} is not a {_PACKAGE} model file") from None
            _check_header(header, name)
            model = joblib.load(file)
    else:
        raise ValueError(f"{name} is not a {_PACKAGE} model file")
    return (model, dict(header["info"])) if return_info else model


def _check_header(header, name):
    if not isinstance(header, dict) or header.get("format") != _FORMAT:
        raise ValueError(f"{name} is not a {_PACKAGE} model file (written by save)")
    written, running = header["version"], _package_version()
    if _release(written) != _release(running):
        raise ValueError(
            f"{name} was written by {_PACKAGE} {written}; this is {running}, which reads the "
            f"files of {'.'.join(map(str, _release(running)))}.x only: retrain the model, or "
            f"load it with {_PACKAGE} {written}"
        )


def _import_skops():
    try:
        import skops.io
    except ImportError:
        raise ImportError(
            "skops model files need the skops package: pip install skops (or the cli "
            "extra); or name the file *.joblib to write a pickle, which load reads only "
            "with trusted=True"
        ) from None
    return skops.io


def _load_skops(name):
    skops_io = _import_skops()
    try:
        untrusted = skops_io.get_untrusted_types(file=name)
    except Exception as error:  # skops raises various errors on foreign files
        raise ValueError(f"{name} is not a {_PACKAGE} model file ({error})") from None
    foreign = [t for t in untrusted
               if not t.startswith(_PACKAGE + ".") and t not in _TRUSTED_TYPES]
    if foreign:
        raise ValueError(
            f"{name} needs types that are neither {_PACKAGE}'s nor trusted by skops: "
            f"{', '.join(foreign)}; refusing to load it"
        )
    try:
        record = skops_io.load(name, trusted=untrusted)
    except Exception as error:  # a damaged archive fails in many ways
        raise ValueError(f"{name} is a damaged model file ({type(error).__name__}: "
                         f"{error})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{name} is not a {_PACKAGE} model file (written by save)")
    return record
