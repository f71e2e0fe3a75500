"""The handwritten letters (OCR) of Taskar et al.: one (letters x pixels) array per word,
ready for `~sklearn_ssl_crf.WindowRows`.
"""

import numpy as np

from ._corpora import _load_splits
from ._text import _read_lines, _tab_fields

# A line of the OCR letters file: id, letter, next_id, word_id, position, fold, then the
# pixels of a 16 x 8 image row by row.
_OCR_HEADER_FIELDS = 6


_OCR_PIXELS = 16 * 8


_OCR_FILENAME = "letters-folds0-4.data.gz"


def read_ocr_letters(path):
    """Read the OCR handwritten letters (Taskar et al. 2003; Kassel 1995), one array per word.

    Each line holds one letter image, tab-separated: ``id``, ``letter`` (a-z), ``next_id``
    (the id of the next letter of the word, -1 after the last), ``word_id``, ``position``
    (1 for the first letter of a word), ``fold``, then the 128 pixels (0 or 1) of a 16 x 8
    image, row by row. Words are rebuilt by following the ``next_id`` links; a trailing tab,
    blank lines and CRLF line ends are tolerated.

    Parameters
    ----------
    path : str, path-like or text file object
        The ``.data`` file, or a gzip-compressed ``.data.gz`` (by the file name). An open file
        is read from its current position.

    Returns
    -------
    images : list of ndarray of uint8, each of shape (n_letters, 128)
        The pixels of each word's letters, in reading order; words in the file order of their
        first letters.
    labels : list of list of str
        The letters of each word, aligned with ``images``.
    folds : ndarray of int64 of shape (n_words,)
        The cross-validation fold of each word.

    Raises
    ------
    ValueError
        If a line is malformed (field count, a letter outside a-z, a non-integer number, a
        pixel other than 0 or 1), or if the links do not form words: an id used twice, a
        ``next_id`` naming no letter or shared by two letters, a cycle, or a letter whose
        ``position``, ``word_id`` or ``fold`` disagrees with its place in the chain. The
        message names the file and the line number.

    See Also
    --------
    load_ocr : The corpus split by fold.
    sklearn_ssl_crf.features.WindowRows : CRF features from the pixels of each letter and
        its neighbours.

    Examples
    --------
    >>> import io
    >>> from sklearn_ssl_crf.datasets import read_ocr_letters
    >>> def line(id, letter, next_id, position, pixel):
    ...     fields = [id, letter, next_id, 7, position, 0] + [pixel] * 128
    ...     return "\\t".join(map(str, fields)) + "\\n"
    >>> text = line(5, "n", -1, 2, 1) + line(4, "o", 5, 1, 0)
    >>> images, labels, folds = read_ocr_letters(io.StringIO(text))
    >>> labels, folds
    ([['o', 'n']], array([0]))
    >>> images[0].shape, images[0][:, :3].tolist()
    ((2, 128), [[0, 0, 0], [1, 1, 1]])
    """
    name, lines = _read_lines(path, "utf-8")
    linenos, letters, numbers_, pixels = _parse_ocr_lines(name, lines)
    if not linenos:
        return [], [], np.zeros(0, dtype=np.int64)
    ids, next_ids, word_ids, positions, folds = np.array(numbers_, dtype=np.int64).T
    chains = _OcrChains(name, np.array(linenos), ids, next_ids)
    words = chains.words(positions, word_ids, folds)
    rows = words[words >= 0]
    stops = np.cumsum((words >= 0).sum(axis=1))[:-1]
    images = np.frombuffer("".join(pixels).encode("ascii"), dtype=np.uint8) - ord("0")
    images = images.reshape(-1, _OCR_PIXELS)[rows]
    labels = np.split(np.array(letters, dtype=object)[rows], stops)
    return np.split(images, stops), [word.tolist() for word in labels], folds[words[:, 0]]


def _parse_ocr_lines(name, lines):
    """Line numbers, letters, the five numbers (id, next_id, word_id, position, fold) and the
    pixel string (128 characters of 0/1) of every non-blank line."""
    n_fields = _OCR_HEADER_FIELDS + _OCR_PIXELS
    linenos, letters, numbers_, pixels = [], [], [], []
    for lineno, line in enumerate(lines, start=1):
        line = line.rstrip()
        if not line:
            continue
        fields = _tab_fields(line, n_fields, name, lineno,
                             f" ({_OCR_HEADER_FIELDS} then {_OCR_PIXELS} pixels)")
        letter = fields[1]
        if len(letter) != 1 or not "a" <= letter <= "z":
            raise ValueError(f"{name}, line {lineno}: the letter must be one of a-z, "
                             f"got {letter!r}")
        try:
            numbers_.append([int(fields[i]) for i in (0, 2, 3, 4, 5)])
        except ValueError:
            raise ValueError(f"{name}, line {lineno}: id, next_id, word_id, position and fold "
                             "must be integers") from None
        image = "".join(fields[_OCR_HEADER_FIELDS:])
        if len(image) != _OCR_PIXELS or image.strip("01"):
            raise ValueError(f"{name}, line {lineno}: pixels must be 0 or 1")
        linenos.append(lineno)
        letters.append(letter)
        pixels.append(image)
    return linenos, letters, numbers_, pixels


class _OcrChains:
    """The ``next_id`` links of the OCR letters as row indices, checked.

    ``successor[i]`` is the row of the letter after row ``i`` (-1: none); ``starts`` are the
    rows no letter links to, the first letters of the words, in file order.
    """

    def __init__(self, name, linenos, ids, next_ids):
        self.name, self.linenos = name, linenos
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        repeated = order[1:][sorted_ids[1:] == sorted_ids[:-1]]
        if repeated.size:
            self.fail(repeated.min(), f"id {ids[repeated.min()]} is used by an earlier line")
        linked = next_ids != -1
        where = np.minimum(np.searchsorted(sorted_ids, next_ids), ids.size - 1)
        dangling = np.flatnonzero(linked & (sorted_ids[where] != next_ids))
        if dangling.size:
            row = dangling[0]
            self.fail(row, f"next_id {next_ids[row]} is not the id of any letter")
        self.successor = np.where(linked, order[where], -1)
        targets = self.successor[linked]
        shared = np.flatnonzero(linked)[np.bincount(targets, minlength=ids.size)[targets] > 1]
        if shared.size:
            row = shared[1]
            self.fail(row, f"next_id {next_ids[row]} is also the next_id of another letter")
        self.starts = np.setdiff1d(np.arange(ids.size), targets)

    def fail(self, row, message):
        raise ValueError(f"{self.name}, line {self.linenos[row]}: {message}")

    def words(self, positions, word_ids, folds):
        """(n_words x longest word) rows of each word's letters in link order, -1 padded;
        checks that every letter is reached and agrees with its word's first letter."""
        # All chains are followed together, one letter of each per step. Each row has at
        # most one predecessor and the starts none, so a chain never revisits a row.
        columns = [self.starts]
        while (columns[-1] >= 0).any():
            current = columns[-1]
            columns.append(np.where(current >= 0, self.successor[current], -1))
        words = np.stack(columns[:-1], axis=1)
        reached = np.zeros(positions.size, dtype=bool)
        reached[words[words >= 0]] = True
        if not reached.all():
            self.fail(np.flatnonzero(~reached)[0], "this letter is on a cycle of next_id links")
        inside = words >= 0
        expected = np.broadcast_to(np.arange(1, words.shape[1] + 1), words.shape)
        wrong = inside & (positions[words] != expected)
        if wrong.any():
            row = words[wrong][0]
            self.fail(row, f"position {positions[row]}, but the next_id links make it letter "
                           f"{expected[wrong][0]} of its word")
        for values, what in ((word_ids, "word_id"), (folds, "fold")):
            wrong = inside & (values[words] != values[words[:, :1]])
            if wrong.any():
                row = words[wrong][0]
                self.fail(row, f"{what} {values[row]} differs from the {what} of its word's "
                               f"first letter")
        return words


def load_ocr(data_dir):
    """Load the OCR handwritten letters, split by cross-validation fold.

    The file is read with `read_ocr_letters`; its words are then grouped by the fold
    each belongs to.

    Parameters
    ----------
    data_dir : str or path-like
        Folder holding ``letters-folds0-4.data.gz`` (folds 0 to 4 of the OCR letters data of
        Taskar et al. 2003: 25,725 letters in 3,405 words, first letters removed).

    Returns
    -------
    splits : dict
        ``{fold: (images, labels)}`` for each fold in the file, in increasing order: per word,
        its (n_letters, 128) uint8 pixel array and its list of letters (see
        `read_ocr_letters`).

    See Also
    --------
    read_ocr_letters : Reads the file, with the fold of every word.

    Examples
    --------
    >>> from sklearn_ssl_crf.datasets import load_ocr
    >>> splits = load_ocr("path/to/ocr")  # doctest: +SKIP
    >>> images, labels = splits[0]  # doctest: +SKIP
    """
    images, labels, folds = _load_splits(data_dir, {"all": _OCR_FILENAME},
                                         read_ocr_letters)["all"]
    splits = {}
    for fold in np.unique(folds).tolist():
        members = np.flatnonzero(folds == fold)
        splits[fold] = ([images[i] for i in members], [labels[i] for i in members])
    return splits
