"""Algebraic multigrid as the preconditioner of `GraphPropagation`'s solve (issue #30).

Draw 0 of ``bench_defaults.py``'s pools, as ``bench_propagation.py`` builds them. For each,
the time of ``GraphPropagation(graph=graph).fit`` (``--repeat`` runs, median), then the
same harmonic system ``(D - W)_FF q_F = W_FC q_C`` over the free vertices solved with
pyamg's hierarchies as the preconditioner of conjugate gradients: Ruge-Stuben and smoothed
aggregation (pyamg's defaults: a V-cycle with symmetric Gauss-Seidel, which takes one vector
at a time, so one solve per label), from the same start and to the same stopping rule (no
free vertex farther than 1e-6 from its neighbours' average). Prints the setup seconds, the
iterations per label (those a clamped neighbour of a free vertex holds), the seconds of the
solves and whether every free vertex gets the same label as from `GraphPropagation`.

Needs pyamg (``pip install pyamg``), which the package does not use::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_propagation_amg.py
"""

import time

import numpy as np
import pyamg
import scipy.sparse as sp
from bench_propagation import parse_arguments, pools
from scipy.sparse.csgraph import connected_components

from sklearn_ssl_crf import GraphPropagation
from sklearn_ssl_crf.utils._threads import single_threaded_blas

TOL = 1e-6
SOLVERS = {"Ruge-Stuben": pyamg.ruge_stuben_solver,
           "smoothed aggregation": pyamg.smoothed_aggregation_solver}


def free_system(graph, distributions, clamped):
    """The free vertices, ``(D - W)_FF``, the degrees and ``W_FC q_C``."""
    weights = sp.csr_matrix(graph.weights)
    degrees = np.asarray(weights.sum(axis=1)).ravel()
    _, components = connected_components(weights, directed=False)
    reached = np.isin(components, components[clamped])
    free = np.flatnonzero(~clamped & (degrees > 0) & reached)
    rows = weights[free]
    system = (sp.diags(degrees[free]) - rows[:, free]).tocsr()
    rhs = rows[:, clamped] @ distributions[clamped]
    return free, system, degrees[free], rhs


def preconditioned_cg(system, rhs, degrees, start, preconditioner):
    """Conjugate gradients on one label's column until max |r_v / d_v| <= TOL."""
    solution = start.copy()
    residual = rhs - system @ solution
    preconditioned = preconditioner(residual)
    direction = preconditioned.copy()
    norm = residual @ preconditioned
    iterations = 0
    while np.abs(residual / degrees).max() > TOL:
        iterations += 1
        product = system @ direction
        step = norm / (direction @ product)
        solution += step * direction
        residual -= step * product
        preconditioned = preconditioner(residual)
        new_norm = residual @ preconditioned
        direction = preconditioned + (new_norm / norm) * direction
        norm = new_norm
    return solution, iterations


def main(argv=None):
    args = parse_arguments(argv, __doc__)
    print("| pool | GP fit (s) | GP iterations | AMG | setup (s) | iterations per label | "
          "solves (s) | labels |")
    print("|---|---:|---:|---|---:|---:|---:|---|")
    for name, X, graph, y_partial, _, _ in pools(args.data_dir):
        with single_threaded_blas():
            seconds = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                gp = GraphPropagation(graph=graph).fit(X, y_partial)
                seconds.append(time.perf_counter() - started)
            lengths = [len(labels) for labels in gp.transduction_]
            labelled = np.repeat([labels is not None for labels in y_partial], lengths)
            vertices = graph.token_vertices[labelled]
            clamped = np.zeros(graph.n_vertices, dtype=bool)
            clamped[vertices[vertices >= 0]] = True
            q = gp.label_distributions_
            free, system, degrees, rhs = free_system(graph, q, clamped)
            shares = rhs.sum(axis=0) / rhs.sum()
            for solver_name, solver in SOLVERS.items():
                started = time.perf_counter()
                preconditioner = solver(system).aspreconditioner(cycle="V").matvec
                setup = time.perf_counter() - started
                started = time.perf_counter()
                # A label no clamped neighbour of a free vertex holds is 0 on every one.
                labels = np.flatnonzero(rhs.any(axis=0))
                columns = [preconditioned_cg(system, rhs[:, label], degrees,
                                             np.full(free.size, shares[label]), preconditioner)
                           for label in labels]
                solves = time.perf_counter() - started
                solution = np.zeros(rhs.shape)
                solution[:, labels] = np.stack([column for column, _ in columns], axis=1)
                iterations = [count for _, count in columns]
                same = (solution.argmax(axis=1) == q[free].argmax(axis=1)).all()
                print(f"| {name} | {np.median(seconds):.3f} | {gp.n_iter_} | {solver_name} | "
                      f"{setup:.3f} | {min(iterations)}-{max(iterations)} | {solves:.3f} | "
                      f"{'the same' if same else 'differ'} |", flush=True)


if __name__ == "__main__":
    main()
