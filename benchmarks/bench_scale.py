"""Scaling of `EntropyRegularizedCRF` with the unlabelled corpus, 10^4 to 10^6 sentences.

Corpus. The unlabelled sentences are the 12,574 BC2GM training sentences, repeated, each
repeat in a fresh shuffle (seeded), written once, one sentence per line, to a text file in
``--corpus-dir`` (a file long enough for the largest size is reused; a size reads its first
lines). They are streamed as ``fit(X_unlabeled=...)`` streams them:
``WindowFeatures().transform(islice(iter_text(path), size))``. The labelled data are 200
BC2GM training sentences (the first 200 of a permutation seeded 0; they are also in the
unlabelled corpus). Objective: ``gamma=0.1, proportion_weight=10, c2=0.01``.

Modes. ``single``: ``n_jobs=1``. ``n_jobs2``: ``n_jobs=2``, the chunks written once to
memory-mapped files that the main process and one loky worker map, each summing half.
``dask``: a `distributed.LocalCluster` of 2 worker processes of one thread each (with
dask's ``MALLOC_TRIM_THRESHOLD_`` unset, see `mode_context`), with
``joblib.parallel_config(backend="dask")`` around packing and evaluating; the chunks are
scattered to the workers once, and the main process keeps its own copy, so the data is
held twice on the machine.

Each (size, mode) runs in a fresh child process, so that its peak memory is its own;
modes run one after another for each size, so compare them within one run. The child

1. featurises and packs the data as `EntropyRegularizedCRF.fit` does ("featurise+pack
   s"; with n_jobs2 it includes writing the files, with dask the scatter);
2. trains the supervised start (fit's first phase, on the 200 labelled sentences);
3. evaluates the semi-supervised objective at that start (value and gradient of the
   labelled log-likelihood, the entropy and the label-proportion terms: two passes over
   the unlabelled chunks), once to warm up (workers start, files are mapped) and then
   ``--repeat`` times: "s/evaluation" is the median, "us/token" that per unlabelled token.

Memory. "packed MB": the arrays of the unlabelled chunks (CSR matrix with float32
values, and the chain layout's index arrays). "main peak RSS": ru_maxrss of the child,
which includes featurising, when the streamed blocks are held unpacked (float64 values)
before being packed; "main after pack": its RSS once packed. "workers' peak RSS": VmHWM of
each worker process (loky or dask), also sampled every 0.2 s (in the JSON). With n_jobs2
the mapped file pages count in the RSS of every process that touches them, so RSS sums
count them more than once; "PSS" (main + workers, after the evaluations) shares them out
and is the memory the run takes on the machine.

``--full-fit SIZE`` runs one complete ``fit`` (supervised and semi-supervised phases,
``max_iterations`` at its default, None, unless ``--max-iterations``) on SIZE sentences in
``--full-fit-mode``, and reports its wall time, iterations, evaluations and peak memory.
With ``--dev``, the fit scores BC2GM's devel sentences after every semi-supervised
iteration (``fit(X_dev=..., y_dev=...)`` at fixed settings scores, keeping the last iterate)
and the report gives the dev span F1 along the phase: how many iterations the unlabelled
text needs.

``--default-fit SIZE`` runs `EntropyRegularizedCRF` with its defaults (selection by 5
folds, ``random_state=0``) on SIZE sentences and then a fit at the settings it chose with
``early_stopping=False``, alternated ``--repeat`` times, and reports the seconds of each,
their ratio and the main process's peak memory during each (issue #43: what selection adds
to a fit over a large pool).

Results are merged into ``--json`` (key: kind/size/mode); ``--report`` prints the tables
of that file without running anything. A run stops a child whose machine-wide memory use
passes ``--memory-limit-gb``.

Usage::

    python benchmarks/bench_scale.py [--sizes 10000 100000 1000000] \\
        [--modes single n_jobs2 dask] [--repeat 5] [--json /tmp/bench_scale.json] \\
        [--full-fit SIZE [--full-fit-mode single] [--max-iterations N] [--dev]] \\
        [--default-fit SIZE [--full-fit-mode single] [--repeat 2] [--default-only]]
        [--report]

How to read: "s/evaluation" should grow linearly with the tokens (log-log slope near 1)
and "us/token" stay flat; memory should be the packed data plus a constant (the derived
"memory minus packed" lines); n_jobs2 and dask should approach 2x on 2 idle cores.
"""

import argparse
import contextlib
import hashlib
import json
import math
import os
import platform
import resource
import signal
import subprocess
import sys
import threading
import time
from itertools import islice
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_JSON = Path("/tmp/bench_scale.json")
DEFAULT_CORPUS_DIR = Path("/tmp/bench_scale")
MODES = ("single", "n_jobs2", "dask")
N_JOBS = {"single": 1, "n_jobs2": 2, "dask": None}  # dask: joblib counts the cluster's cores
# One fit at fixed settings (no selection: a scale benchmark times one training run).
OBJECTIVE = {"gamma": 0.1, "proportion_weight": 10, "c1": 0.0, "c2": 0.01,
             "early_stopping": False, "semi_supervised_iterations": None}
N_LABELLED = 200
LABELLED_SEED = 0
CORPUS_SEED = 0
MB = 1024 ** 2


# -- data --------------------------------------------------------------------------------


def bc2gm_train(data_dir):
    from sklearn_ssl_crf.datasets import load_bc2gm

    return load_bc2gm(Path(data_dir) / "bc2gm")["train"]


def labelled_sentences(data_dir):
    """The 200 labelled sentences: the first of a permutation seeded 0, as draw 0 of
    the retired bench_ssl_accuracy.py (and of bench_defaults.py's part ner)."""
    import numpy as np

    X, y = bc2gm_train(data_dir)
    chosen = np.random.default_rng(LABELLED_SEED).permutation(len(X))[:N_LABELLED]
    return [X[i] for i in chosen], [y[i] for i in chosen]


def corpus_file(data_dir, corpus_dir, n_sentences):
    """A text file whose first ``n_sentences`` lines are the corpus: an existing one if it is
    long enough (all are prefixes of the same sequence of shuffles), else written now."""
    corpus_dir.mkdir(parents=True, exist_ok=True)
    for size, path in sorted((int(path.stem.rsplit("_", 1)[1]), path)
                             for path in corpus_dir.glob("bc2gm_train_shuffled_*.txt")):
        if size >= n_sentences:
            return path
    path = corpus_dir / f"bc2gm_train_shuffled_{n_sentences}.txt"
    partial = path.with_suffix(".partial")
    write_shuffled_repeats(bc2gm_train(data_dir)[0], n_sentences, partial)
    partial.rename(path)  # only a complete file is ever found by the glob above
    return path


def write_shuffled_repeats(sentences, n_sentences, path):
    """Write ``n_sentences`` lines: the sentences in a fresh seeded shuffle per repeat."""
    import numpy as np

    rng = np.random.default_rng(CORPUS_SEED)
    lines = np.array([" ".join(tokens) + "\n" for tokens in sentences], dtype=object)
    with open(path, "w", encoding="utf-8") as file:
        for first in range(0, n_sentences, len(lines)):
            order = rng.permutation(len(lines))[:n_sentences - first]
            file.writelines(lines[order])


def unlabelled_stream(path, n_sentences, features):
    """The first ``n_sentences`` of the corpus as feature dicts, read lazily."""
    from sklearn_ssl_crf.datasets import iter_text

    return features.transform(islice(iter_text(path), n_sentences))


# -- memory ------------------------------------------------------------------------------


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def rss_mb(pid=None):
    import psutil

    return psutil.Process(pid).memory_info().rss / MB


def high_water_mb(pid):
    """Peak RSS of a live process of this machine (VmHWM)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def pss_mb(pids):
    """Proportional set size of processes summed: shared pages counted once overall."""
    import psutil

    return sum(psutil.Process(pid).memory_full_info().pss for pid in pids) / MB


def loky_worker_pids():
    import psutil

    return [child.pid for child in psutil.Process().children()
            if "popen_loky_posix" in " ".join(child.cmdline())]


class PeakSampler(threading.Thread):
    """Samples the RSS of the processes ``find_pids()`` names every ``interval`` seconds
    in the background, keeping each one's largest (a context manager)."""

    def __init__(self, find_pids, interval=0.2):
        super().__init__(daemon=True)
        self.find_pids, self.interval = find_pids, interval
        self.peaks_mb = {}
        self._done = threading.Event()

    def run(self):
        while not self._done.is_set():
            self.sample()
            self._done.wait(self.interval)

    def sample(self):
        import psutil

        for pid in self.find_pids():
            with contextlib.suppress(psutil.NoSuchProcess):
                self.peaks_mb[pid] = max(self.peaks_mb.get(pid, 0.0), rss_mb(pid))

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info):
        self._done.set()
        self.join()
        self.sample()


def packed_bytes(data):
    """Bytes of the arrays of a `ChunkedSequences`' chunks: the CSR matrix's, and those of
    the chunk and its chain layout (lengths, token order, row indices), each once."""
    import numpy as np

    matrix_total = total = 0
    for chunk in data.chunks:
        matrix = (chunk.matrix.data, chunk.matrix.indices, chunk.matrix.indptr)
        others = [value for owner in (chunk, chunk.layout) for value in vars(owner).values()
                  if isinstance(value, np.ndarray)]
        unique = {id(array): array for array in (*matrix, *others)}
        matrix_total += sum(array.nbytes for array in matrix)
        total += sum(array.nbytes for array in unique.values())
    return total, matrix_total


# -- modes -------------------------------------------------------------------------------


@contextlib.contextmanager
def parallel_mode(mode):
    """The context of a mode: the dask client (with the joblib dask backend active) for
    'dask', None otherwise."""
    if mode != "dask":
        yield None
        return
    import dask
    import distributed
    from joblib import parallel_config

    # Dask's nanny sets MALLOC_TRIM_THRESHOLD_ in its workers, which turns off glibc's
    # adaptive mmap threshold: every large NumPy temporary is then mapped afresh, and one
    # evaluation took 1.4-2.3x as long in a worker as in this process. Unset, the same.
    with (dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_":
                           None}),
          distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   dashboard_address=None) as cluster,
          distributed.Client(cluster) as client,
          parallel_config(backend="dask")):
        yield client


def worker_pid_finder(mode, client):
    """A function giving the pids of the mode's worker processes (loky workers start with
    the first evaluation, so they are looked up at every call)."""
    if mode == "n_jobs2":
        return loky_worker_pids
    if mode == "dask":
        pids = sorted(client.run(os.getpid).values())
        return lambda: pids
    return lambda: []


def dask_worker_rss_mb(client):
    import psutil

    return sorted(rss / MB for rss in client.run(
        lambda: psutil.Process().memory_info().rss).values())


def worker_memory(pids, sampler):
    """Per worker: VmHWM and the sampled peak, in MB."""
    return [{"pid": pid, "peak_rss_mb": high_water_mb(pid),
             "sampled_peak_rss_mb": sampler.peaks_mb.get(pid, float("nan"))}
            for pid in pids]


# -- child: one size in one mode -----------------------------------------------------------


def build_data(model, X, y, stream):
    """The packed labelled and unlabelled data, built as `EntropyRegularizedCRF.fit` builds
    them, and the seconds of featurising and of packing."""
    from sklearn_ssl_crf.estimators._base import unlabeled_sequences
    from sklearn_ssl_crf.objective import target_proportions

    started = time.perf_counter()
    sequences, labelled, codes, streamed = model._fit_inputs_and_stream(X, y, stream,
                                                                        model.min_freq)
    featurised = time.perf_counter()
    unlabelled = unlabeled_sequences(sequences, labelled)
    labelled_data = model._chunked(sequences[labelled], codes)
    streamed.insert(0, sequences[unlabelled])
    unlabelled_data = model._chunked(streamed)  # empties streamed, freeing each block
    del sequences
    model.target_proportions_ = target_proportions(model.label_proportions,
                                                   model.classes_, codes)
    packed = time.perf_counter()
    return labelled_data, unlabelled_data, featurised - started, packed - featurised


def fixed_fold(model, labelled_data, layout):
    """The labelled data at OBJECTIVE's priors, as fit's training path holds it."""
    from sklearn_ssl_crf.training._records import Fold

    # No restriction to the labelled attributes: the start runs over every weight.
    return Fold(labelled_data, layout, c1=OBJECTIVE["c1"], c2=OBJECTIVE["c2"],
                restricted=(None, None))


def supervised_start(model, fold):
    """fit's first phase: L-BFGS on the labelled log-likelihood from zero weights."""
    import numpy as np

    return model._supervised_start(fold, np.zeros(fold.layout.size))


def timed(function, *args):
    started = time.perf_counter()
    function(*args)
    return time.perf_counter() - started


class OtherCpu:
    """Cores that processes other than ``pids`` kept busy during a block (a context
    manager): the machine's busy CPU time less that of ``pids``, per second of the block.
    Above ~0.2, another job competed with the run and its times (and speed-ups) suffer."""

    def __init__(self, pids):
        self.pids = pids

    def _clocks(self):
        import psutil

        machine = psutil.cpu_times()
        own = sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in self.pids)
        return machine.user + machine.nice + machine.system, own, time.perf_counter()

    def __enter__(self):
        self.start = self._clocks()
        return self

    def __exit__(self, *exc_info):
        (machine, own, wall), (machine0, own0, wall0) = self._clocks(), self.start
        self.cores = ((machine - machine0) - (own - own0)) / (wall - wall0)


def measure_scale(job):
    import numpy as np

    from sklearn_ssl_crf import EntropyRegularizedCRF, WindowFeatures
    from sklearn_ssl_crf.utils._threads import single_threaded_blas

    X_labelled, y_labelled = labelled_sentences(job["data_dir"])
    features = WindowFeatures().fit(X_labelled)
    mode = job["mode"]
    with parallel_mode(mode) as client:
        model = EntropyRegularizedCRF(**OBJECTIVE, n_jobs=N_JOBS[mode])
        rss_before = rss_mb()
        labelled_data, unlabelled_data, featurise_s, pack_s = build_data(
            model, features.transform(X_labelled), y_labelled,
            unlabelled_stream(job["corpus"], job["size"], features))
        rss_after_pack = rss_mb()
        workers_after_scatter = dask_worker_rss_mb(client) if client else None
        fold = fixed_fold(model, labelled_data, model._weight_layout(labelled_data))
        started = time.perf_counter()
        start = supervised_start(model, fold)
        supervised_s = time.perf_counter() - started
        objective, _ = model._semi_supervised_objective(
            fold, unlabelled_data, model.target_proportions_, OBJECTIVE["gamma"],
            OBJECTIVE["proportion_weight"])
        find_workers = worker_pid_finder(mode, client)
        # fit's BLAS setting. Warm-up: the first evaluation starts the loky workers, and
        # each process's first pass over its memory-mapped chunks faults their pages in.
        with (single_threaded_blas(),
              PeakSampler(lambda: [os.getpid(), *find_workers()]) as sampler):
            warmup_s = [timed(objective, start.x) for _ in range(job["warmup"])]
            with OtherCpu([os.getpid(), *find_workers()]) as other:
                seconds = [timed(objective, start.x) for _ in range(job["repeat"])]
        workers = worker_memory(find_workers(), sampler)
        pss = pss_mb([os.getpid(), *find_workers()])
        workers_after = dask_worker_rss_mb(client) if client else None
    lengths = [chunk.lengths for chunk in unlabelled_data.chunks]
    packed, matrix = packed_bytes(unlabelled_data)
    return {
        "sentences": int(sum(map(len, lengths))),
        "tokens": int(sum(chunk.n_tokens for chunk in unlabelled_data.chunks)),
        "chunks": len(unlabelled_data.chunks),
        "attributes": model.num_attributes_,
        "weights": int(fold.layout.size),
        "packed_mb": packed / MB,
        "packed_matrix_mb": matrix / MB,
        "featurise_s": featurise_s,
        "pack_s": pack_s,
        "supervised_s": supervised_s,
        "supervised_iterations": start.n_iter,
        "warmup_evaluation_s": warmup_s,
        "evaluation_s": seconds,
        "evaluation_median_s": float(np.median(seconds)),
        "other_cpu_cores": other.cores,
        "main_rss_before_mb": rss_before,
        "main_rss_after_pack_mb": rss_after_pack,
        "main_sampled_peak_during_evaluations_mb": sampler.peaks_mb[os.getpid()],
        "main_peak_rss_mb": peak_rss_mb(),
        "workers": workers,
        "dask_workers_rss_after_scatter_mb": workers_after_scatter,
        "dask_workers_rss_after_evaluations_mb": workers_after,
        "pss_main_and_workers_mb": pss,
    }


def phase_summary(log, phase):
    """Iterations, evaluations and seconds of one phase of ``training_log_``."""
    entries = [entry for entry in log if entry["phase"] == phase and entry["num"] > 0]
    if not entries:
        return {"iterations": 0, "evaluations": 0, "seconds": 0.0}
    # The semi-supervised phase's iteration 0 is one more evaluation, at the start.
    extra = 1 if phase == "semi-supervised" else 0
    return {"iterations": len(entries),
            "evaluations": entries[-1]["n_evaluations"] + extra,
            "seconds": entries[-1]["time"]}


def measure_full_fit(job):
    from sklearn_ssl_crf import EntropyRegularizedCRF, WindowFeatures
    from sklearn_ssl_crf.datasets import load_bc2gm

    X_labelled, y_labelled = labelled_sentences(job["data_dir"])
    features = WindowFeatures().fit(X_labelled)
    dev = {}
    if job.get("dev"):
        X_dev, y_dev = load_bc2gm(Path(job["data_dir"]) / "bc2gm")["devel"]
        dev = {"X_dev": features.transform(X_dev), "y_dev": y_dev}
    mode = job["mode"]
    with parallel_mode(mode) as client:
        find_workers = worker_pid_finder(mode, client)
        model = EntropyRegularizedCRF(**OBJECTIVE, n_jobs=N_JOBS[mode],
                                      max_iterations=job["max_iterations"])
        with PeakSampler(lambda: [os.getpid(), *find_workers()], interval=1.0) as sampler:
            started = time.perf_counter()
            model.fit(features.transform(X_labelled), y_labelled,
                      X_unlabeled=unlabelled_stream(job["corpus"], job["size"], features),
                      **dev)
            wall_s = time.perf_counter() - started
        workers = worker_memory(find_workers(), sampler)
    return {
        "sentences": job["size"],
        "max_iterations": job["max_iterations"],
        "dev": bool(dev),
        # The dev span F1 after each semi-supervised iteration (0: the phase's start).
        "dev_span_f1": {"semi-supervised": model.validation_scores_} if dev else None,
        "best_iteration": model.best_iteration_,
        "wall_s": wall_s,
        "supervised": phase_summary(model.training_log_, "supervised"),
        "semi_supervised": phase_summary(model.training_log_, "semi-supervised"),
        "n_iter": model.n_iter_,
        "termination": model.termination_condition_,
        "attributes": model.num_attributes_,
        "main_peak_rss_mb": peak_rss_mb(),
        "workers": workers,
    }


def measure_default_fit(job):
    """`EntropyRegularizedCRF` with its defaults (selection by 5 folds), then at the
    settings it chose with ``early_stopping=False`` (the fit of a user who fixes them),
    alternated ``repeat`` times; each fit's wall seconds and the main process's sampled
    peak RSS during it."""
    import numpy as np
    from sklearn.base import clone

    from sklearn_ssl_crf import EntropyRegularizedCRF, WindowFeatures

    X_labelled, y_labelled = labelled_sentences(job["data_dir"])
    features = WindowFeatures().fit(X_labelled)
    X = features.transform(X_labelled)
    mode = job["mode"]
    fits, chosen = [], None  # the default fit runs first and sets what the fixed fit takes
    with parallel_mode(mode) as client:
        find_workers = worker_pid_finder(mode, client)
        default = EntropyRegularizedCRF(n_jobs=N_JOBS[mode], random_state=0)
        for _ in range(job["repeat"]):
            for name in ("default",) if job.get("default_only") else ("default", "fixed"):
                model = clone(default)
                if name == "fixed":
                    model.set_params(early_stopping=False, **chosen)
                with PeakSampler(lambda: [os.getpid(), *find_workers()],
                                 interval=1.0) as sampler:
                    started = time.perf_counter()
                    model.fit(X, y_labelled, X_unlabeled=unlabelled_stream(
                        job["corpus"], job["size"], features))
                    wall_s = time.perf_counter() - started
                if name == "default":
                    chosen, iteration = model.best_params_, model.best_iteration_
                # The model, to compare across modes; every process's peak, main first.
                digest = hashlib.sha256(np.concatenate([model.state_weights_.ravel(),
                                                        model.transition_weights_.ravel()]))
                # The last fit's phases (a default fit's refit): its optimisation's seconds.
                phases = {phase: phase_summary(model.training_log_, phase)
                          for phase in ("supervised", "semi-supervised")}
                fits.append({"fit": name, "wall_s": wall_s, "n_iter": model.n_iter_,
                             "phases": phases,
                             "peak_rss_mb": max(sampler.peaks_mb.values()),
                             "process_peaks_mb": list(sampler.peaks_mb.values()),
                             "weights_sha256": digest.hexdigest()[:16]})
    return {"sentences": job["size"], "best_params": chosen, "best_iteration": iteration,
            "fits": fits, "main_peak_rss_mb": peak_rss_mb()}


def child(job):
    measure = {"fit": measure_full_fit, "default": measure_default_fit}.get(
        job["kind"], measure_scale)
    result = {"kind": job["kind"], "size": job["size"], "mode": job["mode"],
              "repeat": job.get("repeat"), **measure(job),
              "date": time.strftime("%Y-%m-%d %H:%M"), "host": platform.node(),
              "cpus": os.cpu_count()}
    print(json.dumps(result), flush=True)


# -- parent --------------------------------------------------------------------------------


def machine_used_gb():
    import psutil

    memory = psutil.virtual_memory()
    return (memory.total - memory.available) / 1024 ** 3


def wait_for_idle(max_wait_s, busy_cores=0.3, window_s=5.0):
    """Wait, at most ``max_wait_s``, until the machine keeps fewer than ``busy_cores``
    cores busy over ``window_s`` (another job's tests, say), so that the next child runs
    alone; returns the cores busy at the last look."""
    import psutil

    deadline = time.monotonic() + max_wait_s
    while True:
        busy = psutil.cpu_percent(interval=window_s) / 100 * psutil.cpu_count()
        if busy < busy_cores or time.monotonic() >= deadline:
            return busy


def run_child(job, memory_limit_gb):
    """Run one job in a fresh process (its own session, so that it and its workers can be
    stopped together) and return its JSON result; stop it if the machine's memory use
    passes ``memory_limit_gb``."""
    process = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(job)],
                               stdout=subprocess.PIPE, text=True, start_new_session=True)
    started, peak_used = time.perf_counter(), 0.0
    while True:
        try:
            output, _ = process.communicate(timeout=1.0)
            break
        except subprocess.TimeoutExpired:
            peak_used = max(peak_used, machine_used_gb())
            if peak_used > memory_limit_gb:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return {"kind": job["kind"], "size": job["size"], "mode": job["mode"],
                        "error": f"stopped: the machine used {peak_used:.1f} GB"}
    if process.returncode:
        return {"kind": job["kind"], "size": job["size"], "mode": job["mode"],
                "error": f"child exited with status {process.returncode}"}
    result = json.loads(output.strip().splitlines()[-1])
    result.update(child_wall_s=time.perf_counter() - started, machine_peak_used_gb=peak_used)
    return result


def load_results(path):
    return json.loads(path.read_text()) if path.exists() else {}


def save_result(path, result):
    """Merge one result into the JSON file, under kind/size/mode (and, for fits, the
    iteration cap and whether a dev set was scored)."""
    results = load_results(path)
    key = f"{result['kind']}/{result['size']}/{result['mode']}"
    if result["kind"] == "fit":
        key += f"/{result.get('max_iterations')}" + ("/dev" if result.get("dev") else "")
    results[key] = result
    path.write_text(json.dumps(results, indent=1))


# -- report --------------------------------------------------------------------------------


def workers_peak(result):
    return " / ".join(f"{worker['peak_rss_mb']:,.0f}" for worker in result["workers"]) or "-"


def scale_table(rows):
    lines = ["| sentences | mode | tokens | packed MB | featurise+pack s | s/evaluation | "
             "main peak RSS MB | main after pack MB | workers' peak RSS MB | "
             "PSS main+workers MB | us/token/evaluation | other CPU (cores) |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['size']:,} | {r['mode']} | {r['error']} ||||||||||")
            continue
        lines.append(
            f"| {r['sentences']:,} | {r['mode']} | {r['tokens']:,} | {r['packed_mb']:,.0f} | "
            f"{r['featurise_s'] + r['pack_s']:,.1f} | {r['evaluation_median_s']:.3f} | "
            f"{r['main_peak_rss_mb']:,.0f} | {r['main_rss_after_pack_mb']:,.0f} | "
            f"{workers_peak(r)} | {r['pss_main_and_workers_mb']:,.0f} | "
            f"{1e6 * r['evaluation_median_s'] / r['tokens']:.2f} | "
            f"{r['other_cpu_cores']:.2f} |")
    return lines


def growth_exponent(low, high, value):
    """Log-log slope of ``value(row)`` against the tokens between two rows."""
    return (math.log(value(high) / value(low))
            / math.log(high["tokens"] / low["tokens"]))


def growth_lines(by_mode):
    measures = {"s/evaluation": lambda r: r["evaluation_median_s"],
                "featurise+pack": lambda r: r["featurise_s"] + r["pack_s"],
                "main peak RSS": lambda r: r["main_peak_rss_mb"]}
    lines = ["Growth exponents (log-log slope against the unlabelled tokens, between "
             "consecutive sizes):"]
    for mode, rows in by_mode.items():
        for low, high in zip(rows, rows[1:]):
            lines.append(f"- {mode}, {low['sentences']:,} -> {high['sentences']:,}: " + ", ".join(
                f"{name} {growth_exponent(low, high, value):.2f}"
                for name, value in measures.items()))
    return lines


def memory_lines(by_mode):
    lines = ["Memory minus packed data (MB): main peak RSS - packed; main after pack - "
             "packed; workers' peaks summed - packed; PSS main+workers - packed:"]
    for mode, rows in by_mode.items():
        for r in rows:
            packed = r["packed_mb"]
            workers = (f"{sum(w['peak_rss_mb'] for w in r['workers']) - packed:,.0f}"
                       if r["workers"] else "-")
            lines.append(f"- {mode}, {r['sentences']:,}: {r['main_peak_rss_mb'] - packed:,.0f}; "
                         f"{r['main_rss_after_pack_mb'] - packed:,.0f}; {workers}; "
                         f"{r['pss_main_and_workers_mb'] - packed:,.0f}")
    return lines


def projection_lines(by_mode):
    """Main peak + workers' peaks, extrapolated linearly in the tokens from the two largest
    sizes to ten times the largest."""
    lines = ["Projected peak memory at 10x the largest size (linear in the tokens through "
             "the two largest sizes; main peak RSS + workers' peaks, GB):"]
    for mode, rows in by_mode.items():
        if len(rows) < 2:
            continue
        low, high = rows[-2:]
        totals = [r["main_peak_rss_mb"] + sum(w["peak_rss_mb"] for w in r["workers"])
                  for r in (low, high)]
        per_token = (totals[1] - totals[0]) / (high["tokens"] - low["tokens"])
        projected = totals[1] + per_token * 9 * high["tokens"]
        lines.append(f"- {mode}: {projected / 1024:.1f} GB at {10 * high['sentences']:,} "
                     f"sentences ({per_token * MB:.0f} bytes per token beyond "
                     f"{totals[1] - per_token * high['tokens']:,.0f} MB)")
    return lines


def speedup_lines(rows):
    lines = ["Speed-up over single (median s/evaluation of single / of the mode):"]
    by_size = {}
    for r in rows:
        by_size.setdefault(r["size"], {})[r["mode"]] = r["evaluation_median_s"]
    for size, times in sorted(by_size.items()):
        if "single" in times:
            lines.append(f"- {size:,}: " + ", ".join(
                f"{mode} {times['single'] / times[mode]:.2f}x" for mode in MODES[1:]
                if mode in times))
    return lines


def fit_table(rows):
    lines = ["| sentences | mode | max_iterations | wall s | supervised iterations / "
             "evaluations | semi-supervised iterations / evaluations | s/evaluation "
             "(semi-supervised) | termination | main peak RSS MB | workers' peak RSS MB |",
             "|---:|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['size']:,} | {r['mode']} | {r['error']} |||||||")
            continue
        semi = r["semi_supervised"]
        per_evaluation = semi["seconds"] / max(semi["evaluations"] - 1, 1)
        lines.append(
            f"| {r['sentences']:,} | {r['mode']} | {r['max_iterations']} | "
            f"{r['wall_s']:,.0f} | {r['supervised']['iterations']} / "
            f"{r['supervised']['evaluations']} | {semi['iterations']} / "
            f"{semi['evaluations']} | {per_evaluation:.2f} | {r['termination']} | "
            f"{r['main_peak_rss_mb']:,.0f} | {workers_peak(r)} |")
    return lines


def dev_table(rows, marks=(0, 10, 20, 50, 100, 200, 500)):
    lines = ["| sentences | mode | " + " | ".join(f"iteration {k}" for k in marks)
             + " | last (iteration) | best (iteration) |",
             "|---:|---|" + "---:|" * (len(marks) + 2)]
    for r in rows:
        scores = r["dev_span_f1"]["semi-supervised"]
        best = max(range(len(scores)), key=scores.__getitem__)
        cells = [f"{100 * scores[k]:.2f}" if k < len(scores) else "-" for k in marks]
        lines.append(f"| {r['sentences']:,} | {r['mode']} | " + " | ".join(cells)
                     + f" | {100 * scores[-1]:.2f} ({len(scores) - 1}) | "
                     f"{100 * scores[best]:.2f} ({best}) |")
    return lines


def report(results):
    order = {mode: k for k, mode in enumerate(MODES)}

    def key(r):
        return r["size"], order[r["mode"]]

    scale = sorted((r for r in results.values() if r["kind"] == "scale"), key=key)
    fits = sorted((r for r in results.values() if r["kind"] == "fit"), key=key)
    defaults = sorted((r for r in results.values() if r["kind"] == "default"), key=key)
    lines = []
    if scale:
        done = [r for r in scale if "error" not in r]
        by_mode = {mode: [r for r in done if r["mode"] == mode] for mode in MODES}
        by_mode = {mode: rows for mode, rows in by_mode.items() if rows}
        repeats = sorted({(r["repeat"], len(r["warmup_evaluation_s"])) for r in done})
        lines += ["One evaluation at the supervised start: median of (repeats, warm-up "
                  f"evaluations before them) = {repeats}; {N_LABELLED} labelled sentences.",
                  ""]
        lines += scale_table(scale) + [""]
        for part in (growth_lines(by_mode), memory_lines(by_mode),
                     projection_lines(by_mode), speedup_lines(done)):
            lines += part + [""]
    if fits:
        lines += ["Complete fits (supervised phase, then semi-supervised):", ""]
        lines += fit_table(fits) + [""]
        scored = [r for r in fits if r.get("dev_span_f1")]
        if scored:
            lines += ["Dev span F1 (BC2GM devel) along the semi-supervised phase (iteration 0:"
                      " its start, the supervised model):", ""]
            lines += dev_table(scored) + [""]
    if defaults:
        lines += ["Default fits (selection) against fixed-setting fits at their choice:", ""]
        lines += default_table(defaults) + [""]
    print("\n".join(lines))


def default_table(rows):
    lines = ["| sentences | mode | chosen | default fit s | fixed fit s | ratio (median) | "
             "peak RSS MB (default / fixed) | every process's peak MB | models |",
             "|---:|---|---|---|---|---:|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['size']:,} | {r['mode']} | {r['error']} |||||")
            continue
        seconds = {name: [f["wall_s"] for f in r["fits"] if f["fit"] == name]
                   for name in ("default", "fixed")}
        ratios = sorted(d / f for d, f in zip(seconds["default"], seconds["fixed"]))
        # A --default-only run has no fixed fit: no ratio.
        ratio = f"{ratios[len(ratios) // 2]:.2f}" if ratios else "-"
        peaks = {name: f"{max(found):,.0f}" if found else "-" for name, found in (
            (name, [f["peak_rss_mb"] for f in r["fits"] if f["fit"] == name])
            for name in ("default", "fixed"))}
        lines.append(
            f"| {r['sentences']:,} | {r['mode']} | {r['best_params']}, iteration "
            f"{r['best_iteration']} | " + " / ".join(f"{s:,.0f}" for s in seconds["default"])
            + " | " + (" / ".join(f"{s:,.0f}" for s in seconds["fixed"]) or "-")
            + f" | {ratio} | {peaks['default']} / {peaks['fixed']} | "
            + " / ".join(", ".join(f"{mb:,.0f}" for mb in f.get("process_peaks_mb", []))
                         for f in r["fits"][:2])
            + " | " + ", ".join(f.get("weights_sha256", "-") for f in r["fits"][:2]) + " |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--corpus-dir", type=Path, default=DEFAULT_CORPUS_DIR,
                        help="where the corpus text file is written (default: %(default)s)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000],
                        help="unlabelled sentences")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--repeat", type=int, default=5, help="timed evaluations")
    parser.add_argument("--warmup", type=int, default=2, help="evaluations before them")
    parser.add_argument("--full-fit", type=int, metavar="SIZE",
                        help="instead of the evaluations, one complete fit on SIZE sentences")
    parser.add_argument("--default-fit", type=int, metavar="SIZE",
                        help="instead, the default fit (selection) on SIZE sentences and a "
                             "fixed-setting fit at its choice, --repeat times alternated")
    parser.add_argument("--default-only", action="store_true",
                        help="with --default-fit, no fixed fit: the default fit's time, "
                             "memory and model alone (to compare the model across modes)")
    parser.add_argument("--full-fit-mode", choices=MODES, default="single")
    parser.add_argument("--max-iterations", type=int, default=None,
                        help="max_iterations of the full fit (default: the estimator's, None)")
    parser.add_argument("--dev", action="store_true",
                        help="the full fit scores BC2GM's devel sentences at every iteration")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--report", action="store_true",
                        help="print the tables of --json without running anything")
    parser.add_argument("--memory-limit-gb", type=float, default=20.0,
                        help="stop a child when the machine uses more (default: %(default)s)")
    parser.add_argument("--wait-idle", type=float, default=600, metavar="SECONDS",
                        help="before each child, wait up to this long for an idle machine "
                             "(default: %(default)s)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    if args.report:
        report(load_results(args.json))
        return
    one_fit = args.full_fit or args.default_fit
    sizes = [one_fit] if one_fit else args.sizes
    corpus = corpus_file(args.data_dir, args.corpus_dir, max(sizes))
    common = {"data_dir": args.data_dir, "corpus": str(corpus)}
    if args.default_fit:
        jobs = [{"kind": "default", "size": args.default_fit, "mode": args.full_fit_mode,
                 "repeat": args.repeat, "default_only": args.default_only, **common}]
    elif args.full_fit:
        jobs = [{"kind": "fit", "size": args.full_fit, "mode": args.full_fit_mode,
                 "max_iterations": args.max_iterations, "dev": args.dev, **common}]
    else:
        jobs = [{"kind": "scale", "size": size, "mode": mode, "repeat": args.repeat,
                 "warmup": args.warmup, **common}
                for size in sizes for mode in args.modes]
    for job in jobs:
        busy = wait_for_idle(args.wait_idle)
        if busy >= 0.3:
            print(f"starting although {busy:.1f} cores are busy", file=sys.stderr)
        result = run_child(job, args.memory_limit_gb)
        print(json.dumps(result), file=sys.stderr, flush=True)
        save_result(args.json, result)
    report(load_results(args.json))


if __name__ == "__main__":
    main()
