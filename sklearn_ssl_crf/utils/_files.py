"""Files written atomically: into a temporary file beside the target, then renamed over it,
so that a failed write never destroys (or half-writes) the file that was there; and files
read only when they are regular ones (`open_regular_file`).

Only regular files are written: a path that leads to a directory, device, named pipe or
socket is refused before anything is made. Symbolic links are followed, as ``cp`` follows
them: the link stays and the file it leads to is replaced.
"""

import contextlib
import errno
import hashlib
import os
import platform
import re
import secrets
import shutil
import signal
import stat
import threading

__all__ = ["atomic_path", "open_regular_file"]

#: Stands for this machine in temporary names, so that a save never takes another machine's
#: temporary file on a shared file system for one left by a dead process of its own.
_HOST = hashlib.blake2b(platform.node().encode(), digest_size=4).hexdigest()
#: Signals whose default action ends the process without unwinding: while a file is written,
#: they raise `_Terminated` instead, so that the temporary file is removed.
_TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                     if hasattr(signal, name))


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``'s file; on a clean exit it replaces that file.

    The temporary file is written to disk (``fsync``) before it is renamed over the
    target, and the directory after. A new file gets the permissions ``0o666`` less the
    umask; an existing file keeps its own.

    If ``path`` is a symbolic link, it is followed (to the end of a chain of links): the
    link stays and the file it leads to is replaced, or created if the link dangles. The
    temporary file is made beside that file, so that the rename is atomic on its file
    system. A ``path`` that is, or leads to, anything but a regular file (a directory, a
    named pipe, a socket, a device such as ``/dev/null``, or a link through ``/proc`` such
    as ``/dev/stdout``, which names an open file) is refused before anything is made.

    On an exception, a KeyboardInterrupt, or a SIGTERM or SIGHUP received while the
    context is open (in the main thread, where these signals have their default action),
    the temporary file is removed and the file is left as it was; such a signal then ends
    the process as it would have. A temporary file left by a process of this machine that
    was killed (SIGKILL) while writing the same file is removed by the next `atomic_path`
    of it: its name (``.<name>.<process id>.<machine>.<random>.tmp``) says whose it is.

    Parameters
    ----------
    path : str or path-like
        The file to write.

    Yields
    ------
    temporary : str
        The path to write the contents to (an empty file, readable only by its owner).

    Raises
    ------
    shutil.SpecialFileError
        An OSError: ``path`` is, or leads to, something that is not a regular file (the
        message says what it is), or leads through ``/proc``.
    OSError
        Of the type and ``errno`` of the failure (no space left on the device, no
        permission, a read-only file system...), with ``path`` as its ``filename``, when
        the temporary file cannot be made, written or renamed; an OSError of the body
        of the ``with`` statement that names no other file is re-raised so too.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_path(target) as temporary:
    ...     _ = pathlib.Path(temporary).write_text("done")
    >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
    ('done', ['out.txt'])
    """
    path = os.fspath(path)
    target = _regular_target(path)
    folder, name = os.path.split(target)
    temporary = None
    try:
        with _signals_raise():
            _remove_stale_temporaries(folder, name)
            temporary = _temporary_path(folder, name)
            # Only this process's: never an existing file, nor a link planted at the name.
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            try:
                yield temporary
                _replace(temporary, path, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.remove(temporary)
                raise
    except OSError as error:
        if error.errno is None or error.filename not in (None, path, target, folder,
                                                         temporary):
            raise
        named = OSError(error.errno, f"{error.strerror} while writing", path, None,
                        _followed(path, target))
        if type(named) is not type(error):
            raise
        raise named from error


def open_regular_file(path):
    """``path`` opened for reading bytes, if it is a regular file.

    It is opened without blocking and then checked, so that a named pipe is never waited
    on and a device (``/dev/zero``) never read: IsADirectoryError for a directory,
    ValueError for any other file that is not a regular one, both naming ``path``.
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(f"{path} is a directory, not a regular file")
        if not stat.S_ISREG(mode):
            raise ValueError(f"{path} is not a regular file (it is {_kind(mode)})")
        return open(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def _regular_target(path):
    """The file that writing ``path`` replaces (``path`` with its links followed), if it is
    a regular file or absent; otherwise `shutil.SpecialFileError`."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        status = None
    target = os.path.realpath(path)
    if status is not None and not stat.S_ISREG(status.st_mode):
        raise _refusal(path, target, f"is {_kind(status.st_mode)}, not a regular file")
    if _through_proc(path):
        raise _refusal(path, target, "goes through a link in /proc, which names an open file "
                       "rather than a file of a directory")
    return target


def _through_proc(path):
    """Whether one of the links that ``path`` leads through lives in ``/proc`` (Linux's
    ``/proc/<pid>/fd/*``: their targets are open files, whatever the name they show)."""
    while os.path.islink(path):
        folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
        if folder == "/proc" or folder.startswith("/proc/"):
            return True
        path = os.path.join(folder, os.readlink(path))
    return False


def _kind(mode):
    kinds = {stat.S_ISDIR: "a directory", stat.S_ISFIFO: "a named pipe (FIFO)",
             stat.S_ISSOCK: "a socket", stat.S_ISCHR: "a character device",
             stat.S_ISBLK: "a block device", stat.S_ISLNK: "a symbolic link"}
    return next((kind for test, kind in kinds.items() if test(mode)), "a special file")


def _followed(path, target):
    """``target`` if ``path``'s links lead there, else None."""
    return None if target == os.path.abspath(path) else target


def _refusal(path, target, reason):
    where = repr(path)
    if _followed(path, target):
        where += f" (which leads to {target!r})"
    return shutil.SpecialFileError(
        f"{where} {reason}: nothing was written (it would have been replaced by a regular "
        "file); give the path of a regular file, or of a new one")


def _temporary_path(folder, name):
    """A new temporary file's path: the writing process, machine and a random part in it."""
    return os.path.join(folder, f".{name}.{os.getpid()}.{_HOST}.{secrets.token_hex(4)}.tmp")


def _remove_stale_temporaries(folder, name):
    """Remove the temporary files of ``name`` (exactly as `_temporary_path` names them) that
    a dead process of this machine left."""
    ours = re.compile(re.escape(f".{name}.") + r"([1-9][0-9]{0,9})\." + _HOST
                      + r"\.[0-9a-f]{8}\.tmp")
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            match = ours.fullmatch(entry.name)
            if match and entry.is_file(follow_symlinks=False) and _dead(int(match[1])):
                with contextlib.suppress(OSError):
                    os.remove(entry.path)


def _dead(pid):
    """Whether no process has the id ``pid`` (never said where that is not known)."""
    if os.name != "posix":  # elsewhere os.kill(pid, 0) ends the process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):  # another user's process, or an id no process has
        pass
    return False


def _replace(temporary, path, target):
    """Rename ``temporary`` over ``target``, both on disk, with ``target``'s permissions."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):  # it changed while the file was written
        raise _refusal(path, target, f"is {_kind(mode)}, not a regular file")
    handle = os.open(temporary, os.O_RDWR)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
    # The temporary file is private (0600): give it the old file's mode, or a new file's.
    os.chmod(temporary, stat.S_IMODE(mode) if mode is not None else _new_file_mode())
    os.replace(temporary, target)
    _fsync_directory(os.path.dirname(target))


def _new_file_mode():
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _fsync_directory(folder):
    """Write ``folder``'s entries (the rename) to disk, where the system can."""
    if os.name != "posix":  # a directory cannot be opened there
        return
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    except OSError as error:
        # Some file systems cannot sync a directory; the rename is done all the same.
        if error.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
    finally:
        os.close(handle)


class _Terminated(BaseException):
    """A terminating signal received while a file was written."""


@contextlib.contextmanager
def _signals_raise():
    """Within: SIGTERM and SIGHUP raise `_Terminated` (in the main thread, where they have
    their default action); at the end such a signal is sent again, to end the process."""
    replaced = []
    if threading.current_thread() is threading.main_thread():
        replaced = [number for number in _TERMINATING
                    if signal.getsignal(number) == signal.SIG_DFL]
    for number in replaced:
        signal.signal(number, _raise_terminated)
    received = None
    try:
        yield
    except _Terminated as terminated:
        received = terminated.args[0]
        raise
    finally:
        for number in replaced:
            if signal.getsignal(number) is _raise_terminated:  # not one set since
                signal.signal(number, signal.SIG_DFL)
        # Sent by the outermost of nested writes only, once every temporary file is gone.
        if received in replaced:
            os.kill(os.getpid(), received)  # returns only if the signal is blocked


def _raise_terminated(number, frame):
    raise _Terminated(number)
