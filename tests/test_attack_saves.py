"""Attacks on saves (issue #40): a save writes a regular file and nothing else.

Each case is made the way it breaks a save: a named pipe, socket, directory or device where
the file should be, links to files, to devices and to the process's own output, a process
killed or terminated while it writes, a full disk. Processes that must be signalled are
real child processes, told when to stop by what they print, never by a clock.
"""

import errno
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sklearn_ssl_crf
from sklearn_ssl_crf import CRF, load, save
from sklearn_ssl_crf.utils._files import atomic_path

#: The worktree whose package the child processes import (the one under test).
PACKAGE_ROOT = str(Path(sklearn_ssl_crf.__file__).resolve().parents[1])
#: A model any format can hold: the .crfsuite format takes a fitted first-order CRF.
X = [[{"word": "the"}, {"word": "cat"}], [{"word": "a"}, {"word": "dog"}]]
Y = [["DT", "NN"], ["DT", "NN"]]


@pytest.fixture(scope="module")
def crf():
    return CRF(max_iterations=10).fit(X, Y)


def loaded(path):
    return load(path, trusted=True)


def names(folder):
    return sorted(entry.name for entry in Path(folder).iterdir())


def refuses(crf, path, what):
    """``save`` to ``path`` raises an OSError naming it and saying what it is."""
    with pytest.raises(shutil.SpecialFileError, match=what) as refusal:
        save(crf, path)
    assert isinstance(refusal.value, OSError)
    assert repr(str(path)) in str(refusal.value)


SUFFIXES = [".joblib", ".crfsuite"]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_named_pipe_is_refused_without_writing_to_it(crf, tmp_path, suffix):
    path = tmp_path / f"model{suffix}"
    os.mkfifo(path)
    # A reader is there, so a save that opened the pipe would write into it, not hang.
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        refuses(crf, path, r"is a named pipe \(FIFO\), not a regular file")
        assert os.read(reader, 1) == b""
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert names(tmp_path) == [path.name]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_socket_is_refused(crf, tmp_path, suffix):
    path = tmp_path / f"s{suffix}"
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(path))
        refuses(crf, path, "is a socket, not a regular file")
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    assert names(tmp_path) == [path.name]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_directory_is_refused_and_kept(crf, tmp_path, suffix):
    path = tmp_path / f"model{suffix}"
    path.mkdir()
    (path / "inside").write_text("kept")
    refuses(crf, path, "is a directory, not a regular file")
    assert (path / "inside").read_text() == "kept"
    assert names(tmp_path) == [path.name]


@pytest.fixture
def character_device(tmp_path):
    """A character device to link to: as root (who could replace /dev/null itself), a copy
    of /dev/null's device in ``tmp_path``, so that a failing test breaks no system file."""
    if os.geteuid() != 0:
        return Path("/dev/null")
    device = tmp_path / "devices" / "null"
    device.parent.mkdir()
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
    except PermissionError:
        pytest.skip("root without the right to make a device (CAP_MKNOD)")
    return device


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_link_to_a_device_is_refused(crf, tmp_path, character_device, suffix):
    link = tmp_path / f"model{suffix}"
    link.symlink_to(character_device)
    refuses(crf, link, re.escape(f"leads to '{character_device}') is a character device"))
    assert link.is_symlink() and os.readlink(link) == str(character_device)
    assert stat.S_ISCHR(os.stat(character_device).st_mode)
    assert names(tmp_path) == sorted([link.name, *(["devices"] if os.geteuid() == 0 else [])])


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="no /proc/self/fd here")
@pytest.mark.parametrize("output", ["pipe", "file"])
def test_a_link_to_the_processs_own_output_is_refused(tmp_path, output):
    """A link to /proc/self/fd/1, saved to by a process whose output is a pipe or a file."""
    link = tmp_path / "model.joblib"
    link.symlink_to("/proc/self/fd/1")
    log = tmp_path / "log"
    with open(log, "w") as log_file:
        child = subprocess.run(
            [sys.executable, "-c", "import sys; from sklearn_ssl_crf import save; "
             "save({'weights': [1, 2]}, sys.argv[1])", str(link)],
            stdout=subprocess.PIPE if output == "pipe" else log_file, stderr=subprocess.PIPE,
            text=True, timeout=120, env={**os.environ, "PYTHONPATH": PACKAGE_ROOT})
    assert child.returncode == 1, child.stderr
    message = child.stderr.strip().splitlines()[-1]
    assert message.startswith("shutil.SpecialFileError: ")
    assert ("is a named pipe" if output == "pipe" else "goes through a link in /proc") in message
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    assert log.read_text() == "" and names(tmp_path) == ["log", "model.joblib"]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_link_is_kept_and_the_file_it_leads_to_replaced(crf, tmp_path, suffix):
    real, links = tmp_path / "real", tmp_path / "links"
    real.mkdir()
    links.mkdir()
    target = real / f"model{suffix}"
    target.write_bytes(b"old")
    target.chmod(0o640)
    link = links / f"model{suffix}"
    link.symlink_to(os.path.relpath(target, links))
    save(crf, link)
    assert link.is_symlink() and os.readlink(link) == os.path.relpath(target, links)
    assert loaded(target).predict(X) == Y
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the file's mode, kept
    assert names(real) == [target.name] and names(links) == [link.name]


def test_the_temporary_file_is_made_beside_the_file_a_link_leads_to(tmp_path):
    real, links = tmp_path / "real", tmp_path / "links"
    real.mkdir()
    links.mkdir()
    (links / "out.txt").symlink_to(real / "out.txt")
    with atomic_path(links / "out.txt") as temporary:
        # The rename that follows is on the target's own directory (and file system).
        assert Path(temporary).parent == real
        Path(temporary).write_text("done")
    assert (real / "out.txt").read_text() == "done" and (links / "out.txt").is_symlink()


def test_a_dangling_link_is_kept_and_its_file_created(tmp_path):
    # As `cp` through a link: the file the link names is made where the link says.
    (tmp_path / "real").mkdir()
    link = tmp_path / "model.joblib"
    link.symlink_to(Path("real") / "new.joblib")
    save({"weights": [1, 2]}, link)
    assert link.is_symlink() and os.readlink(link) == str(Path("real") / "new.joblib")
    assert stat.S_ISREG(os.lstat(tmp_path / "real" / "new.joblib").st_mode)
    assert loaded(link) == {"weights": [1, 2]}
    assert names(tmp_path / "real") == ["new.joblib"]


#: A process whose save blocks in the middle of writing the model: it prints the names in
#: the directory (the temporary file, holding the file's start, among them), then waits.
BLOCKED_SAVE = textwrap.dedent("""
    import json, os, signal, sys, threading
    from sklearn_ssl_crf import save

    # The signals' default actions, whatever the test runner inherited (under nohup,
    # SIGHUP is ignored, and a save keeps an ignored signal ignored).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

    class Blocking:
        def __reduce__(self):
            folder = os.path.dirname(sys.argv[1])
            print(json.dumps(sorted(os.listdir(folder))), flush=True)
            threading.Event().wait()  # until a signal ends the process
    save({"model": Blocking()}, sys.argv[1])
""")


@pytest.fixture
def blocked_save():
    """Start a child process blocked inside ``save(..., path)``: returns it, and the names
    in the directory then (the temporary file among them). Killed at the end of the test
    if it still runs (a save that outlived its signal)."""
    children = []

    def start(path):
        child = subprocess.Popen([sys.executable, "-c", BLOCKED_SAVE, str(path)],
                                 stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, "PYTHONPATH": PACKAGE_ROOT})
        children.append(child)
        listed = json.loads(child.stdout.readline())
        child.stdout.close()
        return child, listed

    yield start
    for child in children:
        child.kill()
        child.wait()


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGHUP"])
def test_a_save_terminated_by_a_signal_leaves_no_temporary_file(tmp_path, blocked_save,
                                                                 signal_name):
    path = tmp_path / "model.joblib"
    save({"version": "old"}, path)
    child, listed = blocked_save(path)
    assert len(listed) == 2 and path.name in listed  # the temporary file was there
    number = getattr(signal, signal_name)
    child.send_signal(number)
    # The signal still ends the process, as it would have without the save.
    assert child.wait(timeout=120) == -number
    assert names(tmp_path) == [path.name]
    assert loaded(path) == {"version": "old"}


def test_a_killed_saves_temporary_file_is_removed_by_the_next_save(tmp_path, blocked_save):
    path = tmp_path / "model.joblib"
    child, listed = blocked_save(path)
    child.kill()
    child.wait(timeout=120)
    [left] = names(tmp_path)
    # The name says which process wrote it (so that the next save knows it is dead).
    assert left.startswith(f".model.joblib.{child.pid}.") and left.endswith(".tmp")
    # Files the next save must keep: they are not exactly a dead process's temporary file
    # of this target (a live process's, another target's, a longer name, a directory).
    kept = [left.replace(f".{child.pid}.", f".{os.getpid()}."),
            left.replace(".model.joblib.", ".other.joblib."), left + ".keep", "model.joblib.tmp"]
    for name in kept:
        (tmp_path / name).write_text("someone else's")
    token = left.split(".")[-2]  # the random part: another one, in a directory
    directory = left.replace(token, "0" * len(token))
    (tmp_path / directory).mkdir()
    save({"version": "new"}, path)
    assert names(tmp_path) == sorted([path.name, directory, *kept])
    assert loaded(path) == {"version": "new"}


class _FullDisk:
    """A model whose writing fails as a full disk fails a write (no file named)."""

    def __reduce__(self):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _fail_fsync(monkeypatch, tmp_path):
    def full(handle):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)


def _fail_create(monkeypatch, tmp_path):
    real_open = os.open

    def refusing_open(name, flags, *args, **kwargs):
        if flags & os.O_CREAT and os.path.dirname(name) == str(tmp_path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)


def _fail_rename(monkeypatch, tmp_path):
    def read_only(source, destination):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), source, None, destination)

    monkeypatch.setattr(os, "replace", read_only)


@pytest.mark.parametrize("failure, number", [
    ("write", errno.ENOSPC), (_fail_fsync, errno.ENOSPC), (_fail_create, errno.EACCES),
    (_fail_rename, errno.EROFS)])
def test_a_failed_write_names_the_file_and_keeps_the_old_one(tmp_path, monkeypatch, failure,
                                                            number):
    path = tmp_path / "model.joblib"
    save({"version": "old"}, path)
    model = {"model": _FullDisk()} if failure == "write" else {"version": "new"}
    if failure != "write":
        failure(monkeypatch, tmp_path)
    with pytest.raises(OSError) as raised:
        save(model, path)
    monkeypatch.undo()
    error = raised.value
    # The same type and number, with the file that was being written named.
    assert type(error) is type(OSError(number, "")) and error.errno == number
    assert error.filename == str(path) and str(path) in str(error)
    assert os.strerror(number) in str(error)
    assert names(tmp_path) == [path.name] and loaded(path) == {"version": "old"}


def test_the_file_and_then_its_directory_are_synced(tmp_path, monkeypatch):
    real_fsync = os.fsync
    path = tmp_path / "model.joblib"
    save({"version": "old"}, path)
    old = path.stat().st_ino
    synced = []

    def recording_fsync(handle):
        # What is synced, and which file the path names then.
        status = os.fstat(handle)
        synced.append((stat.S_ISDIR(status.st_mode), status.st_ino, path.stat().st_ino))
        real_fsync(handle)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    save({"version": "new"}, path)
    new = path.stat().st_ino
    # The new file before it is renamed over the old one, the directory after.
    assert synced == [(False, new, old), (True, tmp_path.stat().st_ino, new)]
