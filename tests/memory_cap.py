"""Running a piece of code in a child process whose memory is capped, so that an attack that
would take the machine's memory fails the test instead of taking the machine.

The cap is on the child's address space (``RLIMIT_AS``), set after its imports to what it
then uses plus ``extra_bytes``: a regression that allocates more than that gets a
MemoryError in the child (reported as such), never the kernel's out-of-memory killer.
"""

import json
import os
import subprocess
import sys
import textwrap

__all__ = ["run_capped"]

_PRELUDE = """
import json, resource, sys, traceback

def _virtual_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")

import numpy, scipy.sparse, sklearn, sklearn_ssl_crf  # noqa: F401  (counted in the base)
_cap = _virtual_bytes() + {extra_bytes}
resource.setrlimit(resource.RLIMIT_AS, (_cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
try:
{body}
    _outcome = {{"error": None}}
except BaseException as _error:
    _outcome = {{"error": type(_error).__name__, "message": str(_error),
                "traceback": traceback.format_exc()}}
sys.stdout.write("\\n@@outcome@@" + json.dumps(_outcome))
"""


def run_capped(code, extra_bytes=2**30, timeout=120, cwd=None):
    """Run ``code`` (Python source) in a child whose address space may grow by at most
    ``extra_bytes`` past what its imports take; returns ``{"error": None}`` or
    ``{"error": exception type name, "message": str(exception), "traceback": ...}``.

    A child that hangs past ``timeout`` seconds fails (``subprocess.TimeoutExpired``); one
    that dies without reporting raises AssertionError with its output.
    """
    body = textwrap.indent(textwrap.dedent(code), "    ")
    script = _PRELUDE.format(extra_bytes=int(extra_bytes), body=body or "    pass")
    # One BLAS thread: thread stacks and buffers would count against the cap.
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True,
                               text=True, timeout=timeout, cwd=cwd,
                               env={**os.environ, **env})
    marker = completed.stdout.rfind("@@outcome@@")
    if marker < 0:
        raise AssertionError(f"the capped child died (status {completed.returncode}):\n"
                             f"{completed.stdout[-2000:]}\n{completed.stderr[-4000:]}")
    return json.loads(completed.stdout[marker + len("@@outcome@@"):])
