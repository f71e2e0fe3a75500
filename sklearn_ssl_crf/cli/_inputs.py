"""The command line's input files: labelled, unlabelled and to-be-tagged sentences.

Formats: ``columns`` (one token per line, fields separated by whitespace or ``--sep``, a
blank line between sentences, CoNLL-2000 style), ``conllu`` (Universal Dependencies) and
``text`` (one sentence per line, whitespace-tokenised; unlabelled only). Every reader error
names the file and, where there is one, the line.
"""

import argparse
import os
import stat

from ..datasets import iter_text, read_column_fields, read_columns, read_conllu, read_text

FORMATS = ("columns", "conllu", "text")


def guess_format(path, given):
    """``given`` if set, else ``conllu`` for ``*.conllu`` files and ``columns`` otherwise."""
    if given is not None:
        return given
    return "conllu" if str(path).removesuffix(".gz").endswith(".conllu") else "columns"


def add_sep_argument(parser, default, default_help):
    """Add ``--sep``, the column separator of column files (``default``: its value when not
    given, or ``argparse.SUPPRESS``; ``default_help`` says what it is)."""
    parser.add_argument("--sep", type=_separator, default=default, metavar="SEP",
                        help="separator of the fields of column files: tab (or \\t), "
                        "whitespace (runs of spaces and tabs) or any string; default "
                        + default_help)


def _separator(text):
    """``--sep``'s value as the readers' ``sep``: None for runs of whitespace."""
    if text == "whitespace":
        return None
    sep = {"tab": "\t", "\\t": "\t"}.get(text, text)
    if not sep:
        raise argparse.ArgumentTypeError("the separator must not be empty")
    return sep


def read_labelled(path, file_format, column, token_columns, encoding, sep):
    """Sentences and labels of a labelled file.

    ``column`` is the label column: an int for column files (default the last), ``upos`` or
    ``xpos`` for CoNLL-U. ``token_columns`` (list of int or None: all but the label) picks
    the columns that make a token in column files, whose fields are separated by ``sep``
    (None: runs of whitespace).
    """
    file_format = guess_format(path, file_format)
    if file_format == "text":
        raise ValueError(f"{path}: raw text has no labels; give a column or CoNLL-U file")
    if file_format == "conllu":
        if token_columns is not None:
            raise ValueError("--token-columns applies to column files, not CoNLL-U")
        if sep is not None:
            raise ValueError("--sep applies to column files, not CoNLL-U")
        label = "upos" if column is None else column
        if label not in ("upos", "xpos"):
            raise ValueError(f"--column for a CoNLL-U file is upos or xpos, got {label!r}")
        sequences, labels = read_conllu(path, column=label, encoding=encoding)
    else:
        sequences, labels = read_columns(
            path, columns=token_columns, label_column=_column_index(column), sep=sep,
            encoding=encoding)
    _check_not_empty(path, sequences)
    return sequences, labels


class UnlabelledFiles:
    """The sentences of unlabelled files (raw text, or column files whose tokens are
    ``token_columns``, default every column, of fields separated by ``sep``), read again at
    each pass over them.

    Raw text is read a block of lines at a time (`datasets.iter_text`), so a pass holds a
    megabyte of it, and a featurised pass (``WindowFeatures().transform(iter(files))``)
    streams into ``fit``; column and CoNLL-U files are read a file at a time. ``count`` is
    the number of sentences of the last complete pass (None before one).
    """

    def __init__(self, paths, file_format, token_columns, encoding, sep):
        self.paths = list(paths)
        self.file_format = "text" if file_format is None else file_format
        self.token_columns = token_columns
        self.encoding = encoding
        self.sep = sep
        self.count = None

    def __bool__(self):
        return bool(self.paths)

    def __iter__(self):
        count = 0
        for path in self.paths:
            first = count
            for sentence in self._sentences(path):
                count += 1
                yield sentence
            if count == first:
                _check_not_empty(path, [])
        self.count = count

    def _sentences(self, path):
        if self.file_format == "text":
            return iter_text(path, encoding=self.encoding)
        if self.file_format == "conllu":
            return read_conllu(path, encoding=self.encoding)[0]
        return _read_token_columns(path, self.token_columns, self.encoding, self.sep)


def read_to_tag(path, file_format, token_columns, encoding, sep):
    """Sentences to tag, with the fields to echo in the output (``sep`` separates the fields
    of column files).

    Returns ``(sequences, rows)``: ``rows[i][j]`` is the list of fields printed before the
    predicted label of token ``j`` of sentence ``i`` (the whole input line for column
    files, the word for text and CoNLL-U). A blank line of text is an empty sentence.
    Tokens of column files are made of their ``token_columns``, as the model was trained
    on.
    """
    file_format = "text" if file_format is None else file_format
    if len(token_columns) > 1 and file_format != "columns":
        raise ValueError(
            f"{path}: the model was trained on tokens of {len(token_columns)} columns (the "
            f"word and its annotations), but {file_format} input has words only; give a "
            f"column file with those columns (--format columns)"
        )
    if file_format == "columns":
        rows = read_column_fields(path, sep=sep, encoding=encoding)
        _check_not_empty(path, rows)
        if max(token_columns) >= len(rows[0][0]):
            raise ValueError(
                f"{path}: its lines have {len(rows[0][0])} columns; the model needs columns "
                f"{token_columns}, as in its training file")
        sequences = [[_pick(fields, token_columns) for fields in sentence] for sentence in rows]
        return sequences, rows
    if file_format == "conllu":
        sequences, _ = read_conllu(path, encoding=encoding)
    else:
        # Blank lines are empty sentences: output sentence i is input line i + 1.
        sequences = read_text(path, encoding=encoding, keep_blank_lines=True)
    _check_not_empty(path, sequences)
    return sequences, [[[word] for word in sentence] for sentence in sequences]


def _pick(fields, keep):
    """A token made of the ``keep`` fields: the str for one, else a tuple."""
    return fields[keep[0]] if len(keep) == 1 else tuple(fields[i] for i in keep)


def _read_token_columns(path, token_columns, encoding, sep):
    """Tokens of an unlabelled column file made of ``token_columns`` (default: all)."""
    rows = read_column_fields(path, sep=sep, encoding=encoding)
    if not rows:
        return rows
    n_fields = len(rows[0][0])
    keep = list(range(n_fields)) if token_columns is None else token_columns
    if not all(-n_fields <= i < n_fields for i in keep):
        raise ValueError(f"{path}: --token-columns {keep} do not exist in a line of "
                         f"{n_fields} columns")
    return [[_pick(fields, keep) for fields in sentence] for sentence in rows]


def _column_index(column):
    if column is None:
        return -1
    try:
        return int(column)
    except ValueError:
        raise ValueError(f"--column for a column file is a column number, got {column!r}") \
            from None


def _check_not_empty(path, sequences):
    if not sequences:
        raise ValueError(f"{path}: no sentences (the file is empty)")


def check_readable(path):
    """A clear error for an input file that cannot be read, before any work: missing, a
    directory or not readable. Other files than regular ones (``/dev/stdin``, a named pipe)
    are read: the readers bound what they take from them."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except PermissionError:
        raise ValueError(f"{path}: permission denied") from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"{path}: is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{path}: permission denied")
