"""Model files: a fitted model saved with the package version, and loaded back with a check.

Three formats, chosen by the file name:

- any name but ``*.skops`` and ``*.crfsuite``: joblib. The file holds a small header (the
  package and scikit-learn versions, the caller's ``info``) followed by the model, so that
  `load` can refuse a file of an incompatible version before it unpickles any of the
  model's classes.
  Loading a pickle can run arbitrary code: load only files you trust.
- ``*.skops``: skops (``pip install skops``, not a dependency of this package), whose
  loader creates only the types it is told to trust instead of running the file's code.
  `load` trusts this package's own classes and skops' defaults (NumPy, SciPy and
  scikit-learn types), and refuses a file that needs any other type.
- ``*.crfsuite``: CRFsuite's model file (what python-crfsuite and sklearn-crfsuite write),
  for a first-order CRF; no versions or info, and no code run on loading. `load`
  recognises it by its first bytes, whatever its name (`_crfsuite_format`).
"""

import os
import re

import joblib
import sklearn

from ._crfsuite_format import (
    check_crfsuite_model,
    is_crfsuite_file,
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


def _is_skops(path):
    return str(path).endswith(".skops")


def _is_crfsuite(path):
    return str(path).endswith(".crfsuite")


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
        The file to write. A name ending in ``.skops`` writes the skops format (needs the
        ``skops`` package); ``.crfsuite`` writes CRFsuite's model file, which
        python-crfsuite's ``Tagger`` and ``sklearn_crfsuite.CRF(model_filename=...)`` open
        (a fitted first-order CRF whose labels and attributes are strings, decoded by
        Viterbi; otherwise a ValueError says why not); any other name writes joblib's.
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
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tagger.joblib"
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
    with atomic_path(path) as temporary:
        if _is_skops(path):
            _import_skops().dump({**header, "model": model}, temporary)
            return
        with open(temporary, "wb") as file:
            joblib.dump(header, file)
            joblib.dump(model, file)


def load(path, *, return_info=False):
    """Read a model written by `save`, checking that this version of the package can use it.

    A file written by another major.minor release of the package is refused. A
    ``*.skops`` file is read with skops, which creates only the types of this package and
    those skops trusts by default. A CRFsuite model file (recognised by its first bytes,
    whatever its name: one written by python-crfsuite, sklearn-crfsuite, CRFsuite or
    `save`) is read without python-crfsuite into a fitted first-order `CRF` (the user
    guide's "Models trained by sklearn-crfsuite" says what maps to what).

    Parameters
    ----------
    path : str or path-like
        A file written by `save` (``*.skops`` files are read with skops), or a CRFsuite
        model file.
    return_info : bool, default=False
        Also return the ``info`` dict given to `save` (empty for a CRFsuite file).

    Returns
    -------
    model : object
        The saved model.
    info : dict
        Only with ``return_info``.

    Raises
    ------
    ValueError
        If the file is not a model file of this package, or was written by a version with
        another major.minor release (their models may differ: retrain, or load it with that
        version), or (skops) needs types outside this package and skops' trusted defaults,
        or is a CRFsuite file that is truncated or corrupt (the message says what).

    See Also
    --------
    save : Write a model file.

    Notes
    -----
    A joblib file is a pickle: loading it can run any code it holds, so load only files
    you trust. Its header (versions and info) is read and checked before the model.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sklearn_ssl_crf import CRF, load, save
    >>> X = [[{"word": "the"}, {"word": "cat"}]]
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tagger.joblib"
    >>> save(CRF(max_iterations=10).fit(X, [["DT", "NN"]]), path)
    >>> load(path).predict(X)
    [['DT', 'NN']]
    """
    name = os.fspath(path)
    if _is_crfsuite(name) or is_crfsuite_file(name):
        model = read_crfsuite(name)
        return (model, {}) if return_info else model
    if _is_skops(name):
        header = _load_skops(name)
        _check_header(header, name)
        model = header["model"]
    else:
        with open(name, "rb") as file:
            try:
                header = joblib.load(file)
            except Exception:  # any unpickling failure: not a file of ours
                raise ValueError(f"{name} is not a {_PACKAGE} model file") from None
            _check_header(header, name)
            model = joblib.load(file)
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
            "*.skops model files need the skops package: pip install skops"
        ) from None
    return skops.io


def _load_skops(name):
    skops_io = _import_skops()
    try:
        untrusted = skops_io.get_untrusted_types(file=name)
    except Exception as error:  # skops raises various errors on foreign files
        raise ValueError(f"{name} is not a {_PACKAGE} model file ({error})") from None
    foreign = [t for t in untrusted if not t.startswith(_PACKAGE + ".")]
    if foreign:
        raise ValueError(
            f"{name} needs types that are neither {_PACKAGE}'s nor trusted by skops: "
            f"{', '.join(foreign)}; refusing to load it"
        )
    record = skops_io.load(name, trusted=untrusted)
    if not isinstance(record, dict):
        raise ValueError(f"{name} is not a {_PACKAGE} model file (written by save)")
    return record
