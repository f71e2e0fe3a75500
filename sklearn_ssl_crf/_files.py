"""Files written atomically: into a temporary file beside the target, then renamed over it,
so that a failed write never destroys (or half-writes) the file that was there."""

import contextlib
import os
import tempfile

__all__ = ["atomic_path"]


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on a clean exit it replaces ``path``.

    On an exception the temporary file is removed and ``path`` is left as it was.

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
    folder, name = os.path.split(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    os.close(handle)
    try:
        yield temporary
        # mkstemp's file is private (0600): give it the old file's mode, or a new file's.
        os.chmod(temporary, _mode_of(path))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def _mode_of(path):
    """The permission bits ``path`` has, or those a new file gets under the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
