"""Model files: a fitted model saved with the package version, and loaded back with a check.

Four formats, chosen by the file name when saving and recognised by their first bytes
when loading:

- the package's own (any name but those below; ``*.model`` by convention): the fitted
  state as JSON and raw arrays (`_model_archive`). Loading it creates only the package's
  own classes and plain data, and runs no code from the file; it is about as small and as
  fast to load as a pickle, and needs nothing beyond the package's dependencies.
- ``*.joblib``, ``*.pkl``, ``*.pickle``: a pickle, with a small header (the package and
  scikit-learn versions, the caller's ``info``) before the model. Loading a pickle can run
  any code it holds, so `load` refuses one unless ``trusted=True``, before reading a byte
  of it with pickle.
- ``*.skops``: the skops format (the default of earlier releases, whose files keep
  loading; needs ``pip install skops``), read with an exact list of trusted types
  (`_skops_files`).
- ``*.crfsuite``: CRFsuite's model file (what python-crfsuite and sklearn-crfsuite write),
  for a first-order CRF; no versions or info, and no code run on loading
  (`_crfsuite_format`).
"""

import os
import re

import joblib
import sklearn

from ..utils import atomic_path, open_regular_file
from ._archive import MAGIC as ARCHIVE_MAGIC
from ._archive import (
    UnsavableError,
    check_plain,
    decode_plain,
    encode_archive,
    read_archive,
)
from ._crfsuite import (
    MAGIC,
    check_crfsuite_model,
    read_crfsuite,
    write_crfsuite,
)
from ._loaded_models import check_loaded, with_new_parameters
from ._skops import dump_skops, load_skops

__all__ = ["load", "save"]

_FORMAT = "sklearn_ssl_crf model file"
_PACKAGE = __name__.split(".")[0]
_PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")
_UNSAVABLE_HELP = ("a model file holds the package's estimators, featurizers and "
                   "scikit-learn pipelines of them, whose loading runs no code: save the "
                   "estimator alone (save(pipeline[-1], path)) and rebuild the pipeline "
                   "around it when loading, or name the file *.joblib to write a pickle, "
                   "which load reads only with trusted=True")


def _package_version():
    # Imported here: the package's __init__ imports this module.
    from .. import __version__

    return __version__


def _release(version):
    """``(major, minor)`` of a version string such as ``"0.1.0.dev0"``, or None."""
    match = re.match(r"(\d+)\.(\d+)", version) if type(version) is str else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def _format_of_name(path):
    """The format `save` writes for a file name."""
    name = str(path)
    if name.endswith(_PICKLE_SUFFIXES):
        return "pickle"
    for kind in ("crfsuite", "skops"):
        if name.endswith("." + kind):
            return kind
    return "archive"


def _format_of_file(name):
    """'archive', 'crfsuite', 'skops' (a zip archive), 'pickle' or None, from the first
    bytes of ``name``, which must be a regular file (`open_regular_file`)."""
    try:
        with open_regular_file(name) as file:
            start = file.read(len(ARCHIVE_MAGIC))
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}: no such file") from None
    if start == ARCHIVE_MAGIC:
        return "archive"
    if start[:4] == MAGIC:
        return "crfsuite"
    if start[:4] == b"PK\x03\x04":
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
        The file to write. Any name but those below (``*.model`` by convention) writes
        the package's own format: the package's estimators and featurizers, and
        scikit-learn pipelines of them, loaded without running any code from the file; a
        model holding anything else (a featurizer of your own) is refused here, saying
        what. A name ending in ``.joblib``, ``.pkl`` or ``.pickle`` writes a pickle, which
        holds anything and which `load` reads only with ``trusted=True``; ``.crfsuite``
        writes CRFsuite's model file, which python-crfsuite's ``Tagger`` and
        ``sklearn_crfsuite.CRF(model_filename=...)`` open (a fitted first-order CRF whose
        labels and attributes are strings, decoded by Viterbi; otherwise a ValueError says
        why not); ``.skops`` writes the skops format (needs the ``skops`` package).
        Only a regular file is written: a symbolic link is followed (the link stays; the
        file it leads to is replaced, or created), and a path that is or leads to a
        directory, a device such as ``/dev/null``, a named pipe or a socket, or a link
        through ``/proc`` such as ``/dev/stdout``, is refused with ``shutil.SpecialFileError``
        (an OSError) before anything is written. A failure to write (a full disk, no
        permission) raises an OSError of its kind naming ``path``.
    info : dict or None, default=None
        Facts about the model to keep beside it (training files, settings, scores), made
        of plain values: str, numbers, bools, None, NumPy scalars, and lists, tuples,
        sets and dicts of these (a TypeError names anything else, before a file is
        touched); `load` returns them with ``return_info=True``. A CRFsuite file has no
        place for them: give None.

    Raises
    ------
    TypeError
        If ``info`` or (in the package's format) ``model`` holds something the file cannot
        hold; the message names it and says how to save such a model.
    OSError
        If ``path`` is not a regular file (`shutil.SpecialFileError`) or cannot be
        written.

    See Also
    --------
    load : Read the file back.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sklearn_ssl_crf import CRF, load, save
    >>> X = [[{"word": "the"}, {"word": "cat"}]]
    >>> crf = CRF(max_iterations=10).fit(X, [["DT", "NN"]])
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tagger.model"
    >>> save(crf, path, info={"trained on": "one sentence"})
    >>> model, info = load(path, return_info=True)
    >>> model.predict(X), info
    ([['DT', 'NN']], {'trained on': 'one sentence'})
    """
    if info is not None and not isinstance(info, dict):
        raise TypeError(f"info must be a dict or None, got {type(info).__name__}")
    kind = _format_of_name(path)
    if kind == "crfsuite":
        if info:
            raise ValueError("a CRFsuite model file has no place for info; give info=None "
                             "or save as .model or .joblib")
        check_crfsuite_model(model)  # before a temporary file is made
        with atomic_path(path) as temporary:
            write_crfsuite(model, temporary)
        return
    try:
        check_plain(info or {}, "info")
    except UnsavableError as error:
        raise TypeError(f"{error}: info holds plain values (str, numbers, bools, None, and "
                        "lists, tuples, sets and dicts of these); convert it (str(path)) "
                        "or leave it out") from None
    header = {"format": _FORMAT, "version": _package_version(),
              "sklearn_version": sklearn.__version__, "info": dict(info or {})}
    if kind == "archive":
        try:
            archive = encode_archive(header, model)
        except UnsavableError as error:
            raise TypeError(f"{error}, which a model file cannot hold: "
                            f"{_UNSAVABLE_HELP}") from None
    # Written beside the file and renamed over it: a failed save leaves the old file.
    with atomic_path(path) as temporary:
        if kind == "skops":
            dump_skops({**header, "model": model}, temporary)
            return
        with open(temporary, "wb") as file:
            if kind == "archive":
                archive.write(file)
            else:
                joblib.dump(header, file)
                joblib.dump(model, file)


def load(path, *, return_info=False, trusted=False):
    """Read a model written by `save`, checking that this version of the package can use it.

    The format is recognised by the file's first bytes, whatever its name. A file in the
    package's format is read without running any of its code: it creates only the
    package's estimators and featurizers, scikit-learn pipelines and plain data, and the
    fitted weights are checked (their shapes against the labels and attributes, all
    finite). A skops file (written by earlier releases) is read with skops, trusting
    exactly the package's classes, skops' defaults and SciPy's sparse matrices. A CRFsuite
    model file (one written by python-crfsuite, sklearn-crfsuite, CRFsuite or `save`) is
    read without python-crfsuite into a fitted first-order `CRF` (the user guide's "Models
    trained by sklearn-crfsuite" says what maps to what). A pickle (``*.joblib``) is read
    only with ``trusted=True``. A file written by another major.minor release of the
    package is refused. Every size a file declares is checked against the file's own size
    before memory is allocated for it.

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
        version), or is damaged or crafted (the message names the file and says what is
        wrong), or needs types other than those above (skops), or is not a regular file.
    FileNotFoundError, IsADirectoryError
        If there is no file at ``path``.

    See Also
    --------
    save : Write a model file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sklearn_ssl_crf import CRF, load, save
    >>> X = [[{"word": "the"}, {"word": "cat"}]]
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tagger.model"
    >>> save(CRF(max_iterations=10).fit(X, [["DT", "NN"]]), path)
    >>> load(path).predict(X)
    [['DT', 'NN']]
    """
    name = os.fspath(path)
    kind = _format_of_file(name)
    if kind is None and _format_of_name(name) == "crfsuite":
        kind = "crfsuite"  # its reader says what is wrong with it
    if kind == "archive":
        header, build = read_archive(name)
        _check_header(header, name)
        info = decode_plain(header["info"], name, "info")
        model = build()
    elif kind == "crfsuite":
        model, info = read_crfsuite(name), {}
    elif kind == "skops":
        record = load_skops(name, lambda header: _check_header(header, name))
        _check_header(record, name)
        model, info = record.get("model"), record.get("info")
    elif kind == "pickle":
        if not trusted:
            raise ValueError(
                f"{name} is a pickle (joblib) file: loading it runs any code it holds. Pass "
                "trusted=True (the command line: --trusted) only if you made it or trust "
                "where it came from; save models as *.model to load them safely")
        with open(name, "rb") as file:
            try:
                header = joblib.load(file)
            except Exception:  # any unpickling failure: not a file of ours
                raise ValueError(f"{name} is not a {_PACKAGE} model file") from None
            _check_header(header, name)
            model, info = _unpickled_model(file, name, header), header.get("info")
    else:
        raise ValueError(f"{name} is not a {_PACKAGE} model file")
    if type(info) is not dict:
        raise ValueError(f"{name} is a damaged model file: its info is not a dict")
    check_loaded(model, name)
    model = with_new_parameters(model)
    return (model, dict(info)) if return_info else model


def _unpickled_model(file, name, header):
    """The model after the header of a pickle file; a pickle naming the package's modules
    as they were before they moved (issue #41) is refused with a message saying so."""
    try:
        return joblib.load(file)
    except (ModuleNotFoundError, AttributeError) as error:
        if _PACKAGE not in str(error):
            raise
        raise ValueError(
            f"{name} was pickled by {_PACKAGE} {header['version']} with modules that have "
            f"moved since ({error}); load it with the release that wrote it and save it "
            "as *.model, which does not depend on where the classes are") from None


def _check_header(header, name):
    """Raise ValueError naming ``name`` unless ``header`` is one `save` writes, of this
    major.minor release."""
    if type(header) is not dict or header.get("format") != _FORMAT:
        raise ValueError(f"{name} is not a {_PACKAGE} model file (written by save)")
    written, running = header.get("version"), _package_version()
    if _release(written) is None:
        raise ValueError(f"{name} is a damaged model file: its header has no version")
    if _release(written) != _release(running):
        raise ValueError(
            f"{name} was written by {_PACKAGE} {written}; this is {running}, which reads the "
            f"files of {'.'.join(map(str, _release(running)))}.x only: retrain the model, or "
            f"load it with {_PACKAGE} {written}"
        )
