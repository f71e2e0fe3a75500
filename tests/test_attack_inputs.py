"""The standing attack suite of issue #40, inputs part: files that would make the readers or
the command line read without bound (a gzip bomb, ``/dev/zero``), files that are not files
(a directory, an unreadable one), and a run out of memory. Each must end in one clear error
naming the file (and the line), within a memory cap; real data near the limits still reads.
"""

import gzip
import io
import json
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest
from memory_cap import run_capped

from sklearn_ssl_crf import CRF
from sklearn_ssl_crf.cli import main
from sklearn_ssl_crf.datasets import (
    _text,
    iter_text,
    read_column_fields,
    read_columns,
    read_conllu,
    read_text,
)

REPOSITORY = Path(__file__).resolve().parent.parent

READERS = {
    "read_text": read_text,
    "iter_text": lambda path: list(iter_text(path)),
    "read_columns": read_columns,
    "read_column_fields": read_column_fields,
    "read_conllu": read_conllu,
}

# The documented limits, in characters.
MAX_LINE_CHARS, MAX_TOKEN_CHARS = 2**24, 2**16

LINE_LIMIT = "line 1: the line is longer than 16,777,216 characters, the readers' limit"


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    """1 GiB of 'a' without a line end in a 1 MB gzip file: 1,024 gzip members of 1 MiB each
    (gzip readers read concatenated members as one stream), built a member at a time."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.txt.gz"
    member = gzip.compress(b"a" * 2**20, compresslevel=9)
    with open(path, "wb") as f:
        for _ in range(1024):
            f.write(member)
    assert path.stat().st_size < 2**21
    return path


def _capped_outcomes(code, **names):
    """What ``code`` (run in a child capped at 1 GiB past its imports) put in its dict
    ``outcomes``; ``names`` are bound in the child to their JSON values."""
    bindings = "".join(f"{name} = {json.dumps(value)}\n" for name, value in names.items())
    # The child reports only an exception: the outcomes travel in one's message.
    carrier = "import json\n\nclass _Outcomes(Exception):\n    pass\n\n"
    result = run_capped(carrier + bindings + code + "\nraise _Outcomes(json.dumps(outcomes))\n",
                        cwd=REPOSITORY)
    assert result["error"] == "_Outcomes", result.get("traceback")
    return json.loads(result["message"])


_READ_EACH = """
from sklearn_ssl_crf.datasets import (
    iter_text, read_column_fields, read_columns, read_conllu, read_text)

outcomes = {}
for reader in (read_text, lambda p: list(iter_text(p)), read_columns, read_column_fields,
               read_conllu):
    try:
        reader(path)
        outcomes[len(outcomes)] = ["no error", ""]
    except (ValueError, MemoryError, OSError) as error:
        outcomes[len(outcomes)] = [type(error).__name__, str(error)]
"""


def test_gzip_bomb_stops_every_reader_at_the_line_limit(bomb):
    outcomes = _capped_outcomes(_READ_EACH, path=str(bomb))
    assert list(outcomes.values()) == [["ValueError", f"{bomb}, {LINE_LIMIT}; is it a text "
                                        "file of sentences?"]] * len(READERS)


def test_dev_zero_stops_every_reader_at_the_line_limit():
    outcomes = _capped_outcomes(_READ_EACH, path="/dev/zero")
    assert list(outcomes.values()) == [["ValueError", f"/dev/zero, {LINE_LIMIT}; is it a "
                                        "text file of sentences?"]] * len(READERS)


def _write(path, text):
    path.write_bytes(text.encode("utf-8"))
    return path


def test_a_200000_token_sentence_still_reads(tmp_path):
    words = [f"w{i % 9973}" for i in range(200_000)]
    line = " ".join(words)
    assert len(line) > 1_000_000
    raw = _write(tmp_path / "raw.txt", f"short one\n{line}\nlast\n")
    expected = [["short", "one"], words, ["last"]]
    assert read_text(raw) == expected
    assert list(iter_text(raw)) == expected
    columns = _write(tmp_path / "columns.txt", "".join(f"{w} O\n" for w in words))
    assert read_columns(columns, columns=0) == ([words], [["O"] * len(words)])
    # CoNLL-U keeps the sentence's text in a comment: one line as long as the raw text's.
    conllu = _write(tmp_path / "x.conllu", f"# text = {line}\n" + "".join(
        f"{i}\t{w}\t_\tX\t_\t_\t_\t_\t_\t_\n" for i, w in enumerate(words, 1)))
    assert read_conllu(conllu) == ([words], [["X"] * len(words)])


def test_line_limit_is_exact(tmp_path):
    # Words of the largest size allowed, so that only the line is too long.
    word = "a" * (MAX_TOKEN_CHARS - 1) + " "
    longest = (word * (MAX_LINE_CHARS // len(word) + 1))[:MAX_LINE_CHARS]
    path = _write(tmp_path / "long.txt", f"x\n{longest}\n")
    assert read_text(path) == [["x"], longest.split()]
    _write(path, f"x\n{longest}b\n")
    for reader in READERS.values():
        with pytest.raises(ValueError, match=r"long\.txt, line 2: the line is longer than "
                                             r"16,777,216 characters, the readers' limit"):
            reader(path)


@pytest.mark.parametrize("reader", list(READERS))
def test_word_limit_is_exact(tmp_path, reader):
    word = "w" * MAX_TOKEN_CHARS
    path = _write(tmp_path / "words.txt", f"a O\n{word} O\n\nb O\n")
    assert read_column_fields(path) == [[["a", "O"], [word, "O"]], [["b", "O"]]]
    _write(path, f"a O\n\nb O\n{word}w O\n")
    with pytest.raises(ValueError, match=r"words\.txt, line 4: a word is longer than "
                                         r"65,536 characters, the readers' limit"):
        READERS[reader](path)


@pytest.mark.parametrize("encoding", ["utf-8", "UTF8"])
def test_a_byte_order_mark_is_dropped_by_every_reader(tmp_path, encoding):
    bom = "\ufeff"
    columns = _write(tmp_path / "c.txt", bom + "He PRP B-NP\nran VBD B-VP\n")
    assert read_columns(columns, encoding=encoding) == (
        [[("He", "PRP"), ("ran", "VBD")]], [["B-NP", "B-VP"]])
    assert read_column_fields(columns, encoding=encoding)[0][0] == ["He", "PRP", "B-NP"]
    raw = tmp_path / "r.txt.gz"
    raw.write_bytes(gzip.compress((bom + "He ran\n").encode("utf-8")))
    assert read_text(raw, encoding=encoding) == [["He", "ran"]]
    assert list(iter_text(raw, encoding=encoding)) == [["He", "ran"]]
    conllu = _write(tmp_path / "x.conllu",
                    bom + "# sent_id = 1\n1\tHe\the\tPRON\tPRP\t_\t0\troot\t_\t_\n")
    assert read_conllu(conllu, encoding=encoding) == ([["He"]], [["PRON"]])
    # Only at the start of the file: elsewhere U+FEFF is a character of the text.
    assert read_text(_write(tmp_path / "r.txt", f"a\n{bom}b\n")) == [["a"], [f"{bom}b"]]


@pytest.mark.parametrize("reader", list(READERS))
def test_a_directory_is_not_read(tmp_path, reader):
    said = f"^{re.escape(str(tmp_path))}: is a directory, not a file$"
    with pytest.raises(IsADirectoryError, match=said):
        READERS[reader](tmp_path)


def test_block_boundaries_change_nothing(tmp_path, monkeypatch):
    # Blocks of a few bytes split CRLF pairs, multi-byte characters and the byte-order mark.
    rng = random.Random(0)
    pieces = ["w", "x y", " ", "\t", "\n", "\r", "\r\n", "\n\n", "é", "€", "𝄞", "\u2028"]
    path = tmp_path / "t.txt"
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(40)))
        monkeypatch.setattr(_text, "_BLOCK", rng.randint(1, 9))
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        expected = [line.split() for line in lines if line.split()]
        path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
        assert read_text(path) == expected, (text, _text._BLOCK)
        assert list(iter_text(path)) == expected, (text, _text._BLOCK)
        assert read_text(io.StringIO(text, newline="")) == expected, (text, _text._BLOCK)
        # A byte that is not UTF-8 is reported on its line, wherever the blocks end.
        path.write_bytes(text.encode("utf-8") + b"z\xff\n")
        with pytest.raises(ValueError, match=rf"t\.txt, line {len(lines)}: byte b'\\xff' "):
            read_text(path)


# --- the command line ---------------------------------------------------------------------


@pytest.fixture
def labelled(tmp_path):
    return _write(tmp_path / "train.txt", "".join(
        f"w{i} {'B-X' if i % 3 == 0 else 'O'}\n" + ("\n" if i % 5 == 4 else "")
        for i in range(40)))


def _error_line(capsys, argv):
    """The one line that the command ``argv`` writes on standard error, exiting with 2."""
    capsys.readouterr()
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err and err.count("\n") == 1, err
    return err


_CLI = """
import contextlib, io
from sklearn_ssl_crf.cli import main

err = io.StringIO()
with contextlib.redirect_stderr(err):
    status = main(argv)
outcomes = {"status": status, "stderr": err.getvalue()}
"""


def test_cli_stops_a_gzip_bomb_of_unlabeled_text(bomb, labelled):
    outcome = _capped_outcomes(_CLI, argv=[
        "train", str(labelled), "--method", "entropy", "--unlabelled", str(bomb),
        "--c2", "1", "--gamma", "0.1", "--proportion-weight", "1", "--quiet"])
    assert outcome == {"status": 2, "stderr": f"sklearn-ssl-crf train: error: {bomb}, "
                       f"{LINE_LIMIT}; is it a text file of sentences?\n"}


@pytest.mark.parametrize("unlabeled", [False, True])
def test_cli_reads_dev_zero_up_to_the_line_limit(labelled, unlabeled):
    argv = (["train", str(labelled), "--method", "self-training", "--unlabelled", "/dev/zero"]
            if unlabeled else ["train", "/dev/zero"])
    outcome = _capped_outcomes(_CLI, argv=[*argv, "--quiet"])
    assert outcome == {"status": 2, "stderr": f"sklearn-ssl-crf train: error: /dev/zero, "
                       f"{LINE_LIMIT}; is it a text file of sentences?\n"}


def test_cli_says_a_directory_is_a_directory(tmp_path, labelled, capsys):
    folder = tmp_path / "folder"
    folder.mkdir()
    said = f"error: {folder}: is a directory, not a file\n"
    for argv in (["train", str(folder)],
                 ["train", str(labelled), "--dev", str(folder)],
                 ["train", str(labelled), "--method", "entropy", "--unlabelled", str(folder)],
                 ["tag", str(folder), str(labelled)],
                 ["evaluate", str(folder), str(labelled)]):
        assert _error_line(capsys, argv).endswith(said), argv


def test_cli_says_an_unreadable_file_cannot_be_read(labelled, monkeypatch, capsys):
    # The tests may run as root, who reads any file: the system says what it says to others.
    access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kwargs: (
        False if Path(path) == labelled else access(path, mode, **kwargs)))
    assert _error_line(capsys, ["train", str(labelled), "--c1", "0", "--c2", "1"]) == (
        f"sklearn-ssl-crf train: error: {labelled}: permission denied\n")


def _bare_memory_error():
    raise MemoryError


@pytest.mark.parametrize("allocate, said", [
    # NumPy's own message names the array it could not allocate.
    (lambda: np.empty(2**43), "Unable to allocate 64.0 TiB for an array with shape "
                              "(8796093022208,) and data type float64"),
    (_bare_memory_error, "an allocation failed"),
])
def test_cli_reports_running_out_of_memory_in_one_line(labelled, monkeypatch, capsys,
                                                        allocate, said):
    monkeypatch.setattr(CRF, "fit", lambda self, *args, **kwargs: allocate())
    assert _error_line(capsys, ["train", str(labelled), "--c1", "0", "--c2", "1",
                                "--quiet"]) == (
        f"sklearn-ssl-crf train: out of memory while training CRF: {said}; give fewer or "
        "shorter sentences, fewer labels or features, or run on a machine with more memory\n")


def test_cli_runs_out_of_memory_under_a_cap_in_one_line(tmp_path):
    # 10,000 labels: a CRF's transition weights alone are 10,000² doubles, more than the cap.
    many_labels = _write(tmp_path / "labels.txt", "".join(
        f"w{i} L{i}\n" + ("\n" if i % 10 == 9 else "") for i in range(10_000)))
    outcome = _capped_outcomes(_CLI, argv=["train", str(many_labels), "--c1", "0",
                                           "--c2", "1", "--quiet"])
    assert outcome["status"] == 2
    assert outcome["stderr"].startswith("sklearn-ssl-crf train: ")
    assert outcome["stderr"].count("\n") == 1 and "Traceback" not in outcome["stderr"]
