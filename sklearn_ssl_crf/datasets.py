"""Sequence-labelling data: readers for column-formatted corpora and a synthetic generator.

The text readers return plain Python lists: ``sequences`` (one list of tokens per sentence)
and ``labels`` (one list of str tags per sentence). The handwriting reader `read_ocr_letters`
returns one (letters x pixels) array per word instead, ready for `WindowRows`. The synthetic
generator `make_sequences` draws from a hidden Markov model whose words are ambiguous on their
own, so that a model of label transitions (a CRF) beats any per-token classifier.
"""

import gzip
import numbers
import string
from operator import itemgetter
from pathlib import Path

import numpy as np
from sklearn.utils import check_random_state

__all__ = [
    "load_bc2gm",
    "load_conll2000",
    "load_ocr",
    "load_ud_english_ewt",
    "make_sequences",
    "read_column_fields",
    "read_columns",
    "read_conllu",
    "read_ocr_letters",
    "read_text",
    "iter_text",
]

_DOCSTART = "-DOCSTART-"
_CONLLU_FIELDS = 10
_CONLLU_FORM = 1
_CONLLU_TAG_COLUMN = {"upos": 3, "xpos": 4}
# A line of the OCR letters file: id, letter, next_id, word_id, position, fold, then the
# pixels of a 16 x 8 image row by row.
_OCR_HEADER_FIELDS = 6
_OCR_PIXELS = 16 * 8
_OCR_FILENAME = "letters-folds0-4.data.gz"
# Dirichlet concentration of each label's distribution over its own words (see
# `_random_emissions`); tuned so that with the defaults the true-HMM Viterbi decoder beats
# the Bayes per-token classifier by about 11 points of token accuracy.
_WORD_CONCENTRATION = 0.3


def _read_lines(source, encoding):
    """Name and lines of a path (gzip-compressed when it ends in ``.gz``) or open text file,
    read in one go (much faster than iterating)."""
    if hasattr(source, "read"):
        return str(getattr(source, "name", "<file>")), source.read().split("\n")
    opener = gzip.open if str(source).endswith(".gz") else open
    with opener(source, "rb") as f:
        data = f.read()
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise _decoding_error(source, data.count(b"\n", 0, error.start) + 1, data, error,
                              encoding) from None
    # As universal newlines would: CRLF and CR become LF. Splitting on "\n" only (not
    # str.splitlines) keeps tokens that contain exotic line separators such as U+2028 intact.
    return str(source), text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _decoding_error(source, lineno, data, error, encoding):
    byte = data[error.start:error.start + 1]
    return ValueError(f"{source}, line {lineno}: byte {byte!r} is not valid {encoding} "
                      f"({error.reason}); give the file's encoding")


def _column_indices(columns, label_column, n_fields, name, lineno):
    """Normalise ``columns`` and ``label_column`` to non-negative indices for rows of
    ``n_fields`` fields."""
    def normalise(index, what):
        if (
            not isinstance(index, numbers.Integral)
            or isinstance(index, bool)
            or not -n_fields <= index < n_fields
        ):
            raise ValueError(
                f"{name}, line {lineno}: {what} {index!r} does not exist in a line of "
                f"{n_fields} columns"
            )
        return int(index) % n_fields

    label = normalise(label_column, "label_column")
    if columns is None:
        if n_fields < 2:
            raise ValueError(
                f"{name}, line {lineno}: a labelled token line needs a token and a label, "
                f"found 1 column"
            )
        return [i for i in range(n_fields) if i != label], label
    if isinstance(columns, numbers.Integral):
        columns = [columns]
    keep = [normalise(i, "column") for i in columns]
    if not keep:
        raise ValueError("columns must name at least one column")
    if label in keep:
        raise ValueError(f"columns {list(columns)} include the label column {label_column}")
    return keep, label


def read_columns(path, columns=None, label_column=-1, sep=None, encoding="utf-8"):
    """Read a column-formatted sequence-labelling file (CoNLL-2000 style, or ``token<TAB>tag``).

    One token per line, its fields separated by ``sep``; a blank line ends a sentence. Lines
    starting with ``-DOCSTART-`` are document markers and are skipped (they also end a
    sentence). Repeated blank lines, trailing whitespace, CRLF line ends and a missing final
    blank line are tolerated.

    Parameters
    ----------
    path : str, path-like or text file object
        The file to read. An open file is read from its current position.
    columns : int, sequence of int or None, default=None
        Columns making up a token (negative indices count from the end). ``None`` keeps every
        column except the label column.
    label_column : int, default=-1
        Column holding the tag.
    sep : str or None, default=None
        Field separator; ``None`` splits on runs of whitespace. Use ``"\\t"`` when tokens may
        contain spaces.
    encoding : str, default="utf-8"
        Encoding used when ``path`` is a path.

    Returns
    -------
    sequences : list of list
        One list of tokens per sentence. A token is the str field when one column is kept,
        else a tuple of the kept fields in the order of ``columns`` (for example
        ``(word, POS)`` for CoNLL-2000).
    labels : list of list of str
        The tags, aligned with ``sequences``.

    Raises
    ------
    ValueError
        If a line has a different number of fields than the first token line of the file
        (the message names the file and the line number), or if a requested column does not
        exist.

    Examples
    --------
    >>> import io
    >>> from sklearn_ssl_crf.datasets import read_columns
    >>> text = "He PRP B-NP\\nreckons VBZ B-VP\\n\\nThe DT B-NP\\n"
    >>> sequences, labels = read_columns(io.StringIO(text))
    >>> sequences
    [[('He', 'PRP'), ('reckons', 'VBZ')], [('The', 'DT')]]
    >>> labels
    [['B-NP', 'B-VP'], ['B-NP']]
    >>> read_columns(io.StringIO(text), columns=0)[0]
    [['He', 'reckons'], ['The']]
    """
    name, lines = _read_lines(path, encoding)
    rows, first_line = _column_rows(name, lines, sep)
    if not rows:
        return [], []
    keep, label = _column_indices(columns, label_column, len(rows[0][0]), name, first_line)
    # itemgetter returns the bare field for one index and a tuple for several, exactly the
    # token type documented above.
    get_token = itemgetter(*keep)
    sequences = [[get_token(fields) for fields in sentence] for sentence in rows]
    labels = [[fields[label] for fields in sentence] for sentence in rows]
    return sequences, labels


def read_column_fields(path, sep=None, encoding="utf-8"):
    """Read a column-formatted file as it is: the fields of every token, no label split.

    The layout is `read_columns`'s (one token per line, a blank line or ``-DOCSTART-`` ends
    a sentence), with or without a label column: use it for unlabelled column files, or
    to keep every field of a file.

    Parameters
    ----------
    path : str, path-like or text file object
        The file to read (gzip-compressed when its name ends in ``.gz``).
    sep : str or None, default=None
        Field separator; ``None`` splits on runs of whitespace.
    encoding : str, default="utf-8"
        Encoding used when ``path`` is a path.

    Returns
    -------
    sentences : list of list of list of str
        The fields of each token of each sentence.

    Raises
    ------
    ValueError
        If a line has a different number of fields than the first token line, or a byte is
        not valid in ``encoding`` (the message names the file and the line number).

    Examples
    --------
    >>> import io
    >>> from sklearn_ssl_crf.datasets import read_column_fields
    >>> read_column_fields(io.StringIO("He PRP\\nran VBD\\n\\nGo VB\\n"))
    [[['He', 'PRP'], ['ran', 'VBD']], [['Go', 'VB']]]
    """
    name, lines = _read_lines(path, encoding)
    return _column_rows(name, lines, sep)[0]


def _column_rows(name, lines, sep):
    """The fields of each token of each sentence, and the line number of the first token;
    checks that every token line has as many fields as the first."""
    sentences, sentence = [], []
    n_fields = first_line = None
    for lineno, line in enumerate(lines, start=1):
        line = line.rstrip()
        fields = line.split(sep) if line else None
        if fields is None or fields[0] == _DOCSTART:
            if sentence:
                sentences.append(sentence)
                sentence = []
            continue
        if n_fields is None:
            n_fields, first_line = len(fields), lineno
        elif len(fields) != n_fields:
            raise ValueError(
                f"{name}, line {lineno}: expected {n_fields} columns (as on the first token "
                f"line), found {len(fields)}"
            )
        sentence.append(fields)
    if sentence:
        sentences.append(sentence)
    return sentences, first_line


def read_conllu(path, column="upos", encoding="utf-8"):
    """Read the words and part-of-speech tags of a CoNLL-U file (Universal Dependencies).

    Comment lines (``#``), multi-word token ranges (IDs such as ``3-4``) and empty nodes
    (IDs such as ``5.1``) are skipped, so the result holds the syntactic words of each
    sentence.

    Parameters
    ----------
    path : str, path-like or text file object
        The file to read.
    column : {"upos", "xpos"}, default="upos"
        Which tag to return: universal (column 4) or language-specific (column 5).
    encoding : str, default="utf-8"
        Encoding used when ``path`` is a path.

    Returns
    -------
    sequences : list of list of str
        The FORM of each word, one list per sentence.
    labels : list of list of str
        The tags, aligned with ``sequences``.

    Raises
    ------
    ValueError
        If a non-blank, non-comment line does not have 10 tab-separated fields, or a word's
        tag is ``_`` (no tag; the message names the file and the line number), or if
        ``column`` is unknown.

    Examples
    --------
    >>> import io
    >>> from sklearn_ssl_crf.datasets import read_conllu
    >>> text = ("# text = Don't\\n"
    ...         "1-2\\tDon't\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\n"
    ...         "1\\tDo\\tdo\\tAUX\\tVBP\\t_\\t2\\taux\\t_\\t_\\n"
    ...         "2\\tn't\\tnot\\tPART\\tRB\\t_\\t0\\troot\\t_\\t_\\n\\n")
    >>> read_conllu(io.StringIO(text))
    ([['Do', "n't"]], [['AUX', 'PART']])
    """
    if column not in _CONLLU_TAG_COLUMN:
        raise ValueError(f"column must be one of {sorted(_CONLLU_TAG_COLUMN)}, got {column!r}")
    tag_index = _CONLLU_TAG_COLUMN[column]
    name, lines = _read_lines(path, encoding)
    sequences, labels = [], []
    words, tags = [], []
    for lineno, line in enumerate(lines, start=1):
        # Strip only the line end: in CoNLL-U, spaces may belong to a field.
        line = line.rstrip("\r\n")
        if not line.strip():
            if words:
                sequences.append(words)
                labels.append(tags)
                words, tags = [], []
            continue
        if line.startswith("#"):
            continue
        fields = _tab_fields(line, _CONLLU_FIELDS, name, lineno)
        if "-" in fields[0] or "." in fields[0]:
            continue
        if fields[tag_index] == "_":
            raise ValueError(f"{name}, line {lineno}: the word has no {column} tag ('_')")
        words.append(fields[_CONLLU_FORM])
        tags.append(fields[tag_index])
    if words:
        sequences.append(words)
        labels.append(tags)
    return sequences, labels


def read_text(path, encoding="utf-8"):
    """Read raw text for unlabelled training or tagging: one sentence per line.

    Tokens are separated by runs of whitespace; blank lines are skipped.

    Parameters
    ----------
    path : str, path-like or text file object
        The file to read (gzip-compressed when its name ends in ``.gz``).
    encoding : str, default="utf-8"
        Encoding used when ``path`` is a path.

    Returns
    -------
    sequences : list of list of str
        The tokens of each non-blank line.

    Raises
    ------
    ValueError
        If a byte of the file is not valid in ``encoding`` (the message names the file and
        the line number).

    Examples
    --------
    >>> import io
    >>> from sklearn_ssl_crf.datasets import read_text
    >>> read_text(io.StringIO("The cat sat .\\n\\nIt ran .\\n"))
    [['The', 'cat', 'sat', '.'], ['It', 'ran', '.']]
    """
    _, lines = _read_lines(path, encoding)
    return [tokens for tokens in map(str.split, lines) if tokens]


def iter_text(path, encoding="utf-8"):
    """Read raw text lazily, one sentence per line: `read_text` as a generator.

    Only one line is in memory at a time, so millions of unlabelled sentences can be
    featurised and packed as they are read (``X_unlabeled`` of the estimators takes any
    iterable). Each pass over the file needs a new generator.

    Parameters
    ----------
    path : str, path-like or text file object
        The file to read (gzip-compressed when its name ends in ``.gz``).
    encoding : str, default="utf-8"
        Encoding used when ``path`` is a path.

    Yields
    ------
    tokens : list of str
        The tokens of each non-blank line.

    Raises
    ------
    ValueError
        When the line being read holds a byte that is not valid in ``encoding`` (the
        message names the file and the line number).

    Examples
    --------
    >>> import io
    >>> from sklearn_ssl_crf.datasets import iter_text
    >>> sentences = iter_text(io.StringIO("The cat sat .\\n\\nIt ran .\\n"))
    >>> next(sentences)
    ['The', 'cat', 'sat', '.']
    >>> list(sentences)
    [['It', 'ran', '.']]
    """
    if hasattr(path, "read"):
        for line in path:
            tokens = line.split()
            if tokens:
                yield tokens
        return
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode(encoding)
            except UnicodeDecodeError as error:
                raise _decoding_error(path, lineno, raw, error, encoding) from None
            tokens = line.split()
            if tokens:
                yield tokens


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
    sklearn_ssl_crf.featurize.WindowRows : CRF features from the pixels of each letter and
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


def _tab_fields(line, n_fields, name, lineno, layout=""):
    """The tab-separated fields of line ``lineno`` of file ``name``; there must be
    ``n_fields`` (``layout`` says what they are, for the error message)."""
    fields = line.split("\t")
    if len(fields) != n_fields:
        raise ValueError(f"{name}, line {lineno}: expected {n_fields} tab-separated "
                         f"fields{layout}, found {len(fields)}")
    return fields


def _load_splits(data_dir, filenames, reader, **kwargs):
    """``{split: reader(file)}`` for those of ``filenames`` present in ``data_dir``."""
    data_dir = Path(data_dir)
    splits = {
        split: reader(data_dir / filename, **kwargs)
        for split, filename in filenames.items()
        if (data_dir / filename).is_file()
    }
    if not splits:
        raise FileNotFoundError(f"none of {sorted(filenames.values())} found in {data_dir}")
    return splits


def load_conll2000(data_dir):
    """Load the CoNLL-2000 chunking corpus from a folder holding ``train.txt``/``test.txt``.

    Parameters
    ----------
    data_dir : str or path-like
        Folder of the corpus (files ``word POS chunk`` per line).

    Returns
    -------
    splits : dict
        ``{"train": (sequences, labels), "test": (sequences, labels)}`` for the files
        present; tokens are ``(word, POS)`` tuples, labels are chunk tags such as ``"B-NP"``.

    Examples
    --------
    >>> from sklearn_ssl_crf.datasets import load_conll2000
    >>> splits = load_conll2000("path/to/conll2000")  # doctest: +SKIP
    >>> X_train, y_train = splits["train"]  # doctest: +SKIP
    """
    return _load_splits(data_dir, {"train": "train.txt", "test": "test.txt"}, read_columns)


def load_bc2gm(data_dir):
    """Load the BioCreative II gene-mention corpus (IOB form) from a folder of ``.tsv`` files.

    Parameters
    ----------
    data_dir : str or path-like
        Folder holding ``train.tsv``, ``devel.tsv`` and ``test.tsv`` (``token<TAB>tag``).

    Returns
    -------
    splits : dict
        ``{"train": ..., "devel": ..., "test": ...}`` of ``(sequences, labels)`` for the files
        present; tokens are str, labels are ``"B-GENE"``, ``"I-GENE"`` or ``"O"``.

    Examples
    --------
    >>> from sklearn_ssl_crf.datasets import load_bc2gm
    >>> X_train, y_train = load_bc2gm("path/to/bc2gm")["train"]  # doctest: +SKIP
    """
    filenames = {"train": "train.tsv", "devel": "devel.tsv", "test": "test.tsv"}
    return _load_splits(data_dir, filenames, read_columns, sep="\t")


def load_ud_english_ewt(data_dir, column="upos"):
    """Load Universal Dependencies English-EWT words and part-of-speech tags.

    Parameters
    ----------
    data_dir : str or path-like
        Folder holding ``en_ewt-ud-{train,dev,test}.conllu``.
    column : {"upos", "xpos"}, default="upos"
        Universal or Penn Treebank tags.

    Returns
    -------
    splits : dict
        ``{"train": ..., "dev": ..., "test": ...}`` of ``(sequences, labels)`` for the files
        present; tokens are the word forms.

    Examples
    --------
    >>> from sklearn_ssl_crf.datasets import load_ud_english_ewt
    >>> X_dev, y_dev = load_ud_english_ewt("path/to/ud_english_ewt")["dev"]  # doctest: +SKIP
    """
    filenames = {split: f"en_ewt-ud-{split}.conllu" for split in ("train", "dev", "test")}
    return _load_splits(data_dir, filenames, read_conllu, column=column)


def load_ocr(data_dir):
    """Load the OCR handwritten letters, split by cross-validation fold.

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


def _bio_labels(n_types):
    """``["O", "B-A", "I-A", "B-B", "I-B", ...]``: O is 0, B-t is 2t + 1, I-t is 2t + 2."""
    return ["O"] + [f"{prefix}-{t}" for t in string.ascii_uppercase[:n_types] for prefix in "BI"]


def _inside_labels(n_types):
    """Indices of the I-t labels in `_bio_labels` order (B-t is the index just before)."""
    return np.arange(n_types) * 2 + 2


def _bio_allowed(n_types):
    """Allowed starts and transitions of BIO tags: I-t never starts a sequence and only
    follows B-t or I-t."""
    n_labels = 2 * n_types + 1
    inside = _inside_labels(n_types)
    allowed_start = np.ones(n_labels, dtype=bool)
    allowed_start[inside] = False
    allowed = np.ones((n_labels, n_labels), dtype=bool)
    allowed[:, inside] = False
    allowed[inside - 1, inside] = True
    allowed[inside, inside] = True
    return allowed_start, allowed


def _random_transitions(n_types, stickiness, rng):
    """Start and transition probabilities: random over the allowed BIO moves, plus extra mass
    ``stickiness`` on continuing the current segment (O -> O, B-t -> I-t, I-t -> I-t)."""
    allowed_start, allowed = _bio_allowed(n_types)
    start = np.zeros(allowed_start.size)
    start[allowed_start] = rng.dirichlet(np.ones(allowed_start.sum()))
    transitions = np.zeros(allowed.shape)
    for row, mask in zip(transitions, allowed):
        row[mask] = rng.dirichlet(np.ones(mask.sum()))
    continuation = np.zeros(allowed.shape)
    continuation[0, 0] = 1.0
    inside = _inside_labels(n_types)
    continuation[inside - 1, inside] = 1.0
    continuation[inside, inside] = 1.0
    return start, (1 - stickiness) * transitions + stickiness * continuation


def _random_emissions(n_types, vocabulary_size, noise, rng):
    """Emission probabilities over word ids: each label mostly emits words of its own group
    (O words, or words of its entity type -- shared by B-t and I-t, so that B and I are told
    apart by context), and with probability ``noise`` a word of a pool shared by all labels."""
    n_labels = 2 * n_types + 1
    # Groups: shared pool (a quarter), O words (three eighths), the rest split between types;
    # tiny vocabularies still leave at least one word to each group.
    n_shared = max(1, min(vocabulary_size // 4, vocabulary_size - 1 - n_types))
    n_outside = max(1, min((vocabulary_size - n_shared) // 2,
                           vocabulary_size - n_shared - n_types))
    bounds = np.linspace(n_shared + n_outside, vocabulary_size, n_types + 1).astype(int)
    # Words are assigned to groups at random so a word's id says nothing about its group.
    word_ids = rng.permutation(vocabulary_size)
    shared = word_ids[:n_shared]
    own_group = [word_ids[n_shared:n_shared + n_outside]]
    for t in range(n_types):
        type_words = word_ids[bounds[t]:bounds[t + 1]]
        own_group += [type_words, type_words]
    emissions = np.zeros((n_labels, vocabulary_size))
    for label, words in enumerate(own_group):
        # A concentration below 1 gives each label a few frequent words (as in text), and
        # B-t and I-t different favourites among their common words; the shared pool keeps
        # a flat draw so that its words stay ambiguous.
        own = rng.dirichlet(np.full(words.size, _WORD_CONCENTRATION))
        emissions[label, words] = (1 - noise) * own
        emissions[label, shared] += noise * rng.dirichlet(np.ones(shared.size))
    return emissions


def _cdf(probabilities):
    """Cumulative sums along the last axis, ending at exactly 1.

    Dividing by the total (rather than clipping) keeps zero-probability outcomes -- the
    forbidden BIO moves -- impossible to draw, whatever the rounding.
    """
    cdf = np.cumsum(probabilities, axis=-1)
    return cdf / cdf[..., -1:]


def _sample_hmm(start, transitions, emissions, lengths, rng):
    """Label and word ids of sequences of the given lengths, all sequences in lock-step.

    Draws use the inverse CDF: the outcome is the number of cumulative sums <= a uniform.
    """
    n_sequences, max_length = lengths.size, int(lengths.max(initial=0))
    states = np.zeros((n_sequences, max_length), dtype=np.intp)
    u = rng.uniform(size=(n_sequences, max_length, 1))
    if max_length:
        states[:, 0] = (_cdf(start) <= u[:, 0]).sum(axis=-1)
    transition_cdf = _cdf(transitions)
    for position in range(1, max_length):
        previous = states[:, position - 1]
        states[:, position] = (transition_cdf[previous] <= u[:, position]).sum(axis=-1)
    words = np.zeros_like(states)
    u = rng.uniform(size=states.shape)
    # One label at a time: a (tokens x vocabulary) comparison would not fit in memory.
    for label, cdf in enumerate(_cdf(emissions)):
        mask = states == label
        words[mask] = np.searchsorted(cdf, u[mask], side="right")
    return states, words


def _word_features(words):
    """sklearn-crfsuite style feature dicts: the word and its two neighbours."""
    features = []
    for i, word in enumerate(words):
        token = {"bias": 1.0, "word": word}
        if i > 0:
            token["-1:word"] = words[i - 1]
        else:
            token["BOS"] = True
        if i < len(words) - 1:
            token["+1:word"] = words[i + 1]
        else:
            token["EOS"] = True
        features.append(token)
    return features


def _check_int(value, name, low, high=None):
    """Raise ValueError unless ``value`` is an int in ``[low, high]``."""
    if (
        not isinstance(value, numbers.Integral)
        or isinstance(value, bool)
        or value < low
        or (high is not None and value > high)
    ):
        bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be an int {bounds}, got {value!r}")


def make_sequences(
    n_sequences=200,
    *,
    n_types=2,
    vocabulary_size=300,
    min_length=5,
    max_length=25,
    noise=0.3,
    stickiness=0.5,
    features="words",
    return_params=False,
    random_state=None,
):
    """Generate a synthetic BIO tagging problem from a hidden Markov model.

    Labels are BIO tags of ``n_types`` entity types named ``A``, ``B``, ... (``"O"``,
    ``"B-A"``, ``"I-A"``, ``"B-B"``, ``"I-B"``, ...), so span-level metrics apply. They follow
    a random Markov chain that respects BIO: a sequence never starts with ``I-t``, and ``I-t``
    only follows ``B-t`` or ``I-t``. Each label emits a word from its own group (words of
    ``O``, or words of type ``t``, the latter shared by ``B-t`` and ``I-t``), or, with
    probability ``noise``, from a pool of ambiguous words common to all labels. A word alone
    thus often leaves its label uncertain (in particular B-t versus I-t), while the
    neighbouring labels settle it: a model of transitions (a CRF) clearly beats per-token
    classification. With the defaults, Viterbi decoding with the true parameters gets about
    90% of tokens right, the Bayes-optimal per-token classifier about 79%.

    All generating parameters are drawn from ``random_state`` too, so a training and a test
    set from the same distribution must come from one call (then split them).

    Parameters
    ----------
    n_sequences : int, default=200
        Number of sequences.
    n_types : int, default=2
        Number of entity types (1 to 26); there are ``2 * n_types + 1`` labels.
    vocabulary_size : int, default=300
        Number of distinct words (at least ``n_types + 2``); words are named ``"w000"``, ...
        and their names carry no information about their labels.
    min_length, max_length : int, default=5, 25
        Sequence lengths are drawn uniformly from ``[min_length, max_length]``.
    noise : float in [0, 1], default=0.3
        Probability that a token comes from the pool of words shared by all labels.
    stickiness : float in [0, 1], default=0.5
        Extra probability of continuing the current segment (``O -> O``, ``B-t -> I-t``,
        ``I-t -> I-t``); the rest of each transition row is random over the allowed moves.
    features : {"words", "dict"}, default="words"
        ``"words"`` gives each token as its str word; ``"dict"`` gives sklearn-crfsuite
        style feature dicts: ``{"bias": 1.0, "word": w, "-1:word": ..., "+1:word": ...}``,
        with ``"BOS"``/``"EOS"`` flags in place of missing neighbours.
    return_params : bool, default=False
        Also return the generating parameters.
    random_state : int, RandomState instance or None, default=None
        Seed of all random draws, for reproducible output.

    Returns
    -------
    X : list of list
        ``n_sequences`` sequences of tokens (str words, or dicts if ``features="dict"``).
    y : list of list of str
        The BIO labels, aligned with ``X``.
    params : dict
        Only if ``return_params``: ``"labels"`` (list of str, the label order below),
        ``"vocabulary"`` (list of str, the word order below), ``"start_proba"`` (ndarray of
        shape (n_labels,)), ``"transition_proba"`` (shape (n_labels, n_labels), row = from),
        ``"emission_proba"`` (shape (n_labels, vocabulary_size)).

    Examples
    --------
    >>> from sklearn_ssl_crf.datasets import make_sequences
    >>> X, y = make_sequences(n_sequences=3, random_state=0)
    >>> len(X), [len(x) == len(t) for x, t in zip(X, y)]
    (3, [True, True, True])
    >>> sorted({label for labels in y for label in labels})
    ['B-A', 'B-B', 'I-A', 'I-B', 'O']
    >>> X, y = make_sequences(n_sequences=1, features="dict", random_state=0)
    >>> sorted(X[0][0])
    ['+1:word', 'BOS', 'bias', 'word']
    """
    _check_int(n_sequences, "n_sequences", 0)
    _check_int(n_types, "n_types", 1, len(string.ascii_uppercase))
    _check_int(vocabulary_size, "vocabulary_size", n_types + 2)
    _check_int(min_length, "min_length", 1)
    _check_int(max_length, "max_length", min_length)
    for value, name in ((noise, "noise"), (stickiness, "stickiness")):
        if not isinstance(value, numbers.Real) or not 0 <= value <= 1:
            raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    if features not in ("words", "dict"):
        raise ValueError(f"features must be 'words' or 'dict', got {features!r}")

    rng = check_random_state(random_state)
    start, transitions = _random_transitions(n_types, stickiness, rng)
    emissions = _random_emissions(n_types, vocabulary_size, noise, rng)
    lengths = rng.randint(min_length, max_length + 1, size=n_sequences)
    states, word_ids = _sample_hmm(start, transitions, emissions, lengths, rng)

    labels = _bio_labels(n_types)
    width = len(str(vocabulary_size - 1))
    vocabulary = [f"w{i:0{width}d}" for i in range(vocabulary_size)]
    X = [[vocabulary[w] for w in row[:n]] for row, n in zip(word_ids, lengths)]
    y = [[labels[s] for s in row[:n]] for row, n in zip(states, lengths)]
    if features == "dict":
        X = [_word_features(words) for words in X]
    if not return_params:
        return X, y
    params = {
        "labels": labels,
        "vocabulary": vocabulary,
        "start_proba": start,
        "transition_proba": transitions,
        "emission_proba": emissions,
    }
    return X, y, params

