"""What a fit (or a model file) needs in memory, checked against what the process can have
before anything of that size is allocated: too large a problem is refused with its numbers,
not met by a MemoryError from deep inside, or by the kernel's out-of-memory killer.
"""

import resource
from pathlib import Path

__all__ = ["available_memory", "check_fit_memory", "check_memory"]

_FLOAT = 8  # bytes of a float64
_GiB = 2**30
# A limit this large is no limit (cgroup v1 writes 2^63 rounded down to a page).
_UNLIMITED = 2**60

#: Per-token work arrays that a chain's forward-backward holds at once at least: the
#: potentials, the forward and the backward lattices (the marginals and gradients come on
#: top of them).
_LATTICES = 3

#: Transition-sized arrays held at once at least: the potentials and the summed pair
#: marginals (their gradient).
_TRANSITION_ARRAYS = 2


def available_memory():
    """Bytes this process can still allocate, or None where nothing tells.

    The least of: the system's available memory (``MemAvailable`` and free swap, from
    ``/proc/meminfo``), the address-space limit (``RLIMIT_AS``'s soft limit) minus the
    process's address space (``VmSize``), and its control group's memory limit minus its
    usage (cgroup v2's ``memory.max`` and ``memory.current``, or v1's ``limit_in_bytes``
    and ``usage_in_bytes``).
    """
    bounds = []
    meminfo = _fields("/proc/meminfo")
    if "MemAvailable" in meminfo:
        # Swap counts: a fit that swaps still ends, and refusing it would be wrong.
        bounds.append(meminfo["MemAvailable"] + meminfo.get("SwapFree", 0))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    size = _fields("/proc/self/status").get("VmSize")
    if soft != resource.RLIM_INFINITY and size is not None:
        bounds.append(max(soft - size, 0))
    cgroup = _cgroup_headroom()
    if cgroup is not None:
        bounds.append(cgroup)
    return min(bounds, default=None)


def _fields(path):
    """The ``name: value kB`` lines of a /proc file, in bytes ({} where unreadable)."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return {}
    fields = {}
    for line in lines:
        name, _, value = line.partition(":")
        parts = value.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            fields[name] = int(parts[0]) * 1024
    return fields


def _cgroup_headroom():
    """The process's control group's memory limit minus its usage, or None."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    root = Path("/sys/fs/cgroup")
    for line in lines:
        _, controllers, group = line.split(":", 2)
        group = group.lstrip("/")
        if controllers == "":  # v2
            places, files = [root / group, root], ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):  # v1
            places = [root / "memory" / group, root / "memory"]
            files = ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        for place in places:
            try:
                limit, usage = ((place / name).read_text().strip() for name in files)
            except OSError:
                continue  # a namespaced group sees itself at the root
            if limit == "max" or not (limit.isdigit() and usage.isdigit()):
                break
            if int(limit) < _UNLIMITED:
                return max(int(limit) - int(usage), 0)
            break
    return None


def check_memory(parts, subject, advice=""):
    """Raise ValueError when the sum of ``parts`` (what -> bytes) is more than this process
    can have (`available_memory`; nothing is checked where that is unknown).

    The message starts with ``subject`` (what needs the memory), names each part, and ends
    with ``advice``.
    """
    need = sum(parts.values())
    available = available_memory()
    if available is None or need <= available:
        return
    listed = ", ".join(f"{what} {_size(size)}" for what, size in parts.items() if size)
    raise ValueError(f"{subject} needs at least about {_size(need)} ({listed}), more than "
                     f"the {_size(available)} this process can have" + (
                         f"; {advice}" if advice else ""))


def _size(n_bytes):
    if n_bytes >= 0.1 * _GiB:
        return f"{n_bytes / _GiB:.1f} GiB"
    return f"{n_bytes / 2**20:.1f} MiB"


def check_fit_memory(n_labels, n_attributes, work_tokens, weight_copies, *, order=1,
                     all_possible_states=True, all_possible_transitions=True):
    """Raise ValueError when training a CRF needs more memory than the process can have.

    The need is a lower bound of a fit's peak, made of the arrays that it holds at once at
    least (the fits measured peaked 1.7 to 2.6 times higher), so that no fit that would
    have fitted is refused:

    - the weights, ``weight_copies`` vectors of them (L-BFGS's pairs, the iterate, the
      gradient, the search direction and the trial point): the state weights (attributes
      x labels) when every pair has one (``all_possible_states``), the transitions
      (labels^2, and at order 2 the label triples too) when all are allowed; and at least
      one dense copy of them all (the fitted ``state_weights_`` and transitions);
    - the per-token potentials and lattices of the largest block of ``work_tokens``
      tokens summed at once: S values per token, S the labels, or the label pairs at
      order 2 with every transition allowed;
    - the transition potentials and their gradient: labels^2 values, labels^3 at order 2.

    Parameters
    ----------
    n_labels, n_attributes : int
    work_tokens : int
        Tokens whose lattices are held at once (a chunk, a mini-batch).
    weight_copies : int
        Weight vectors held at once by the optimiser.
    order : {1, 2}, default=1
    all_possible_states, all_possible_transitions : bool, default=True
        The estimator's settings: False gives weights to seen pairs only.
    """
    labels, attributes = int(n_labels), int(n_attributes)
    transitions = labels**2 if order == 1 else labels**2 * (labels + 3)
    vector = (labels * attributes if all_possible_states else 0) + (
        transitions if all_possible_transitions else 0)
    # At order 2 with some transitions forbidden, the chain runs over the allowed pairs
    # and triples only, which the settings do not tell: counted as at order 1.
    second_order = order == 2 and all_possible_transitions
    states = labels**2 if second_order else labels
    transition_work = labels**2 * (labels + 1) if second_order else labels**2
    parts = {
        f"the weights ({attributes:,} attributes x {labels:,} labels and the transitions, "
        f"{weight_copies} copies)":
            _FLOAT * max(weight_copies * vector, labels * attributes + transitions),
        f"per-token potentials and lattices ({int(work_tokens):,} tokens x {states:,} "
        f"states, {_LATTICES} arrays)": _FLOAT * _LATTICES * int(work_tokens) * states,
        f"transition potentials and gradient ({transition_work:,} values, "
        f"{_TRANSITION_ARRAYS} arrays)": _FLOAT * _TRANSITION_ARRAYS * transition_work,
    }
    check_memory(parts, f"a CRF of order {order} over {labels:,} labels and "
                 f"{attributes:,} attributes",
                 "fewer labels (merge the rare ones), fewer attributes (min_freq), "
                 + ("order=1, " if order == 2 else "") + "or more memory would fit")
