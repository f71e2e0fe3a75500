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
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise
