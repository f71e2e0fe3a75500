"""``train``: fit any estimator of the package on files, choose its settings on a dev file,
and write the model file."""

import argparse
import contextlib
import itertools
import sys
import time

from sklearn.pipeline import Pipeline

from ..estimators import (
    CRF,
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    NaturalGradientCRF,
    SelfTrainingCRF,
    SemiSupervisedCRF,
)
from ..features import WindowFeatures, WordClusters
from ..model_files import save
from ..training import describe_settings
from ._inputs import (
    FORMATS,
    UnlabelledFiles,
    add_sep_argument,
    check_readable,
    guess_format,
    read_labelled,
)
from ._scores import scores as dev_scores

ESTIMATORS = {
    "crf": CRF,
    "entropy": EntropyRegularizedCRF,
    "jiao": SemiSupervisedCRF,
    "self-training": SelfTrainingCRF,
    "ngd": NaturalGradientCRF,
    "graph-pr": GraphPRCRF,
}
# The settings an estimator may choose for itself (given one value: kept; several: the
# candidates; none: its 'auto' candidates), and the methods that take each.
SELECTABLE = {
    "c1": ("crf", "entropy", "jiao", "self-training", "graph-pr"),
    "c2": ("crf", "entropy", "jiao", "self-training", "graph-pr", "ngd"),
    "c2_transitions": ("crf", "entropy", "jiao", "self-training", "graph-pr", "ngd"),
    "gamma": ("entropy", "jiao", "ngd"),
    "proportion_weight": ("entropy", "jiao", "ngd"),
    "lam": ("graph-pr",),
}
NEEDS_UNLABELLED = ("entropy", "jiao", "self-training", "graph-pr")
# Methods that choose no setting of their own: every value must be given once.
FIXED_ONLY = ("ngd",)


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "train", help="train a tagger on labelled (and unlabelled) files",
        description="Train any estimator of the package on a labelled file and, for the "
        "semi-supervised methods, unlabelled files; write the model with --model. A setting "
        "not given is chosen by the estimator (by cross-validation over the training "
        "sentences, or on --dev); several values are its candidates.")
    data = parser.add_argument_group("data")
    data.add_argument("train", help="labelled training file (column file or CoNLL-U)")
    data.add_argument("--format", choices=("columns", "conllu"),
                      help="format of the labelled files (default: conllu for *.conllu, "
                      "else columns)")
    data.add_argument("--column", help="label column: its number in column files (default "
                      "-1, the last), upos or xpos in CoNLL-U (default upos)")
    data.add_argument("--token-columns", type=int, nargs="+", metavar="N",
                      help="columns of a column file that make a token (default: all but "
                      "the label; 0 for the words only, e.g. to match raw unlabelled text)")
    data.add_argument("--unlabelled", "--unlabeled", nargs="+", default=[], metavar="FILE",
                      help="unlabelled sentences (every method but crf, which reads them "
                      "only to learn --clusters)")
    data.add_argument("--unlabelled-format", choices=FORMATS,
                      help="format of the unlabelled files (default text: one sentence a "
                      "line, whitespace-tokenised)")
    data.add_argument("--dev", help="labelled dev file (format of the training file): "
                      "the settings are chosen on it instead of by cross-validation over the "
                      "training sentences, and its scores are reported")
    add_sep_argument(data, None, "whitespace")
    data.add_argument("--encoding", default="utf-8", help="encoding of every input file")

    _add_model_options(parser.add_argument_group("model"))

    features = parser.add_argument_group("features (WindowFeatures)")
    features.add_argument("--window", type=int, default=1,
                          help="neighbours on each side whose features are used")
    features.add_argument("--suffixes", type=int, nargs="*", default=[2, 3],
                          help="suffix lengths (none: no suffixes)")
    features.add_argument("--no-word-shape", action="store_true",
                          help="leave out the case, digit and hyphen flags")
    features.add_argument("--clusters", action="store_true",
                          help="add word clusters learned from the training and unlabelled "
                          "sentences (WordClusters)")
    features.add_argument("--word-vectors", type=float, metavar="SCALE",
                          help="with --clusters, add the word's vector at this scale (3 did "
                          "best on BC2GM)")

    parser.add_argument("--model", help="file to write the fitted model to (*.model by "
                        "convention): the package's format, which loads without running "
                        "code, unless the name ends in .joblib (a pickle, which tag and "
                        "evaluate load only with --trusted) or .skops")
    parser.add_argument("--checkpoint", metavar="DIR",
                        help="directory (made if missing) where the fit's optimisation runs "
                        "are checkpointed: after an interruption, the same command resumes "
                        "where it stopped, and ends with the model of an uninterrupted run; "
                        "delete the directory once the model is written")
    parser.add_argument("--checkpoint-every", type=int, metavar="N",
                        help="iterations (ngd: epochs) between two checkpoints (default 10)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(run=run)
    return parser


def _add_model_options(model):
    """The options of the estimator and its settings (the "model" group)."""
    model.add_argument("--method", choices=tuple(ESTIMATORS), default="crf",
                       help="crf: supervised; entropy: entropy regularisation (Mann & "
                       "McCallum 2007) with label proportions; jiao: Jiao et al. 2006; "
                       "self-training; ngd: natural-gradient SGD; graph-pr: graph-based "
                       "posterior regularisation (He et al. 2013). Default crf")
    model.add_argument("--order", type=int, choices=(1, 2), default=1,
                       help="Markov order of the label chain (default 1)")
    model.add_argument("--c1", type=float, nargs="+", help="L1 strength (default: chosen "
                       "among 0 and 0.1)")
    model.add_argument("--c2", type=float, nargs="+",
                       help="L2 strength (default: chosen among 1, 0.1, 0.01, 0.001)")
    model.add_argument("--c2-transitions", type=float, nargs="+",
                       help="L2 strength of the transition weights (default: --c2's; at "
                       "--order 2, chosen among --c2's, 0.01 and 0.001 unless --c1 and --c2 "
                       "are both given one value with --method crf)")
    model.add_argument("--gamma", type=float, nargs="+",
                       help="entropy weight (entropy, jiao, ngd; default: chosen)")
    model.add_argument("--proportion-weight", type=float, nargs="+",
                       help="label-proportion weight (entropy, jiao, ngd; default: chosen)")
    model.add_argument("--lam", type=float, nargs="+",
                       help="graph regularisation strength (graph-pr; default: chosen)")
    model.add_argument("--constraints", choices=("auto", "none", "bio", "iobes", "bilou"),
                       default="auto",
                       help="label sequences never predicted: auto (default) follows the "
                       "span scheme of the labels (no I-X after O with BIO tags) when the "
                       "training labels keep to it; none: no constraint")
    model.add_argument("--cv", type=int,
                       help="folds of the training sentences on which settings are chosen "
                       "without --dev (default 5)")
    model.add_argument("--max-iterations", type=int,
                       help="L-BFGS iterations (NGD: epochs); default: until converged")
    model.add_argument("--max-rounds", type=int,
                       help="self-training rounds (self-training; default 10)")
    model.add_argument("--selection-unlabelled", type=_sample_size, metavar="N|all",
                       help="unlabelled sentences on which the cross-validation folds run "
                       "the semi-supervised phase, a random sample weighted to stand for "
                       "all; the final fit reads all of them (entropy, jiao, self-training, "
                       "graph-pr; default 10000; all: every fold reads all of them)")
    model.add_argument("--em-iterations", type=int,
                       help="EM iterations at most (graph-pr; default 20)")
    model.add_argument("--batch-size", type=int, help="mini-batch size (ngd; default 16)")
    model.add_argument("--n-jobs", type=int, help="processes for the sums over sentences "
                       "(every method but ngd)")
    model.add_argument("--random-state", type=int,
                       help="seed of ngd's shuffling, of the cross-validation folds and of "
                       "the word clusters (default 0)")


def run(args):
    progress = _Progress(args.quiet)
    _check_options(args)
    check = [args.train, *args.unlabelled] + ([args.dev] if args.dev else [])
    for path in check:
        check_readable(path)
    settings = _settings(args)

    file_format = guess_format(args.train, args.format)
    args.stage = f"reading {args.train}"
    X, y = read_labelled(args.train, file_format, args.column, args.token_columns,
                         args.encoding, args.sep)
    # Read again, and featurised as they are read, at every fit: never all held as dicts.
    unlabelled = UnlabelledFiles(args.unlabelled, args.unlabelled_format, args.token_columns,
                                 args.encoding, args.sep)
    X_dev = y_dev = None
    if args.dev:
        args.stage = f"reading {args.dev}"
        X_dev, y_dev = read_labelled(args.dev, file_format, args.column, args.token_columns,
                                     args.encoding, args.sep)
    args.stage = "reading the first unlabelled sentence"
    token_columns = _token_columns(X, unlabelled, args)
    progress(f"read {len(X):,} labelled" + (f", {len(X_dev):,} dev" if args.dev else "")
             + " sentences" + (" (unlabelled files are streamed)" if unlabelled else ""))

    started = time.perf_counter()
    args.stage = "computing the features"
    window = _window_features(args)
    # Clusters are learned from every sentence, in two passes over the files.
    window.fit(_Concatenation(X, unlabelled) if args.clusters else X)
    features = window.transform(X)
    features_dev = window.transform(X_dev) if args.dev else None
    progress(f"features in {time.perf_counter() - started:.1f} s")

    estimator = _estimator(args, settings)
    if args.checkpoint:
        # Said even with --quiet: after a crash, this is where the work is.
        print(f"sklearn-ssl-crf train: checkpoints in {args.checkpoint} (the same command "
              "resumes from them)", file=sys.stderr, flush=True)
    progress(f"training {type(estimator).__name__}")
    args.stage = f"training {type(estimator).__name__}"
    fit_started = time.perf_counter()
    features_unlabelled = window.transform(iter(unlabelled)) if unlabelled else None
    with contextlib.redirect_stdout(sys.stderr):
        estimator.fit(features, y, **_fit_arguments(args.method, features_unlabelled,
                                                    features_dev, y_dev))
    seconds = time.perf_counter() - fit_started
    scores = ({f"dev {name}": value for name, value in dev_scores(
        y_dev, estimator.predict(features_dev), estimator.classes_).items()}
        if args.dev else {})
    progress(f"trained in {seconds:.1f} s" + "".join(
        f", {name} {value:.4f}" for name, value in scores.items()))
    chosen = getattr(estimator, "best_params_", None) or {
        name: value for name, value in estimator.get_params().items() if name in settings}

    # Progress is how this command reports, not part of the model: a loaded model is quiet.
    estimator.set_params(verbose=False)
    model = Pipeline([("features", window), ("model", estimator)])
    info = {
        "method": args.method,
        "settings": chosen,
        "format": file_format,
        "label_column": args.column,
        "token_columns": token_columns,
        "sep": args.sep,
        "train": str(args.train),
        "unlabelled": [str(path) for path in args.unlabelled],
        "dev": str(args.dev) if args.dev else None,
        **scores,
    }
    if args.model:
        if str(args.model).endswith((".joblib", ".pkl", ".pickle")):
            print(f"sklearn-ssl-crf train: {args.model} is a pickle: tag and evaluate load it "
                  "only with --trusted (any other name writes the package's safe format)",
                  file=sys.stderr)
        args.stage = f"writing {args.model}"
        save(model, args.model, info=info)
    _summary(args, estimator, chosen, scores, seconds, len(X), unlabelled.count or 0)
    return 0


# The selection sample's default size by method: the estimator's own (None: 'all').
_SAMPLE_SIZES = {
    method: ESTIMATORS[method]().selection_unlabeled or "all"
    for method in ("entropy", "jiao", "self-training", "graph-pr")}

# Options of one method or a few (with their defaults, or a default per method), and the
# methods that use them.
METHOD_OPTIONS = {
    "max_rounds": (10, ("self-training",)),
    "selection_unlabelled": (_SAMPLE_SIZES, tuple(_SAMPLE_SIZES)),
    "em_iterations": (20, ("graph-pr",)),
    "batch_size": (16, ("ngd",)),
}


def _check_options(args):
    """Refuse every option the chosen method would ignore, saying which methods use it
    (a command line never ignores what it is told); then fill in the defaults of the
    options whose default depends on it."""
    method = args.method
    problems = []
    users = {**SELECTABLE, **{name: methods for name, (_, methods) in METHOD_OPTIONS.items()}}
    for name, methods in users.items():
        if getattr(args, name) is not None and method not in methods:
            problems.append(f"--{name.replace('_', '-')} does nothing with --method "
                            f"{method}; it is for {_methods(methods)}")
    # `_estimator`'s plain CRF: c1 and c2 given one value each, c2_transitions at most one.
    fixed_crf = method == "crf" and all(
        values is not None and len(set(values)) == 1 for values in (args.c1, args.c2)
    ) and len(set(args.c2_transitions or [0])) == 1
    weighted = any(value > 0 for value in (args.gamma or []) + (args.proportion_weight or []))
    if method == "crf" and args.unlabelled and not args.clusters:
        problems.append("--method crf is supervised: it reads --unlabelled files only to "
                        "learn --clusters; give a semi-supervised method (entropy, jiao, "
                        "self-training, ngd or graph-pr) or --clusters")
    elif method in NEEDS_UNLABELLED and not args.unlabelled:
        problems.append(f"--method {method} needs --unlabelled files")
    elif method == "ngd" and args.unlabelled and not (weighted or args.clusters):
        problems.append("--method ngd reads --unlabelled files through --gamma or "
                        "--proportion-weight, which it does not choose: give a positive "
                        "weight (e.g. --gamma 0.1), or --clusters to learn clusters from them")
    elif method == "ngd" and weighted and not args.unlabelled:
        problems.append("--method ngd: --gamma and --proportion-weight weigh terms of "
                        "--unlabelled files, and none were given")
    if args.unlabelled_format is not None and not args.unlabelled:
        problems.append("--unlabelled-format does nothing without --unlabelled files")
    if args.selection_unlabelled is not None and args.dev:
        problems.append("--selection-unlabelled does nothing with --dev: the settings are "
                        "chosen on --dev by the fit that becomes the model, which reads "
                        "every unlabelled sentence")
    if args.cv is not None and (args.dev or method == "ngd" or fixed_crf):
        problems.append("--cv does nothing here: " + (
            "the settings are chosen on --dev" if args.dev else
            "this method chooses no setting (every setting is given one value)"))
    if args.random_state is not None and fixed_crf and not args.clusters:
        problems.append("--random-state does nothing here: a CRF of given c1 and c2 without "
                        "--clusters draws nothing at random")
    if args.n_jobs is not None and method == "ngd":
        problems.append("--n-jobs does nothing with --method ngd (its mini-batches run in "
                        "one process)")
    if args.checkpoint_every is not None and not args.checkpoint:
        problems.append("--checkpoint-every does nothing without --checkpoint")
    if problems:
        raise ValueError("; ".join(problems))
    defaults = {name: default.get(method) if isinstance(default, dict) else default
                for name, (default, _) in METHOD_OPTIONS.items()}
    for name, default in {**defaults, "cv": 5, "random_state": 0,
                          "checkpoint_every": 10}.items():
        if getattr(args, name) is None:
            setattr(args, name, default)


def _sample_size(text):
    """``--selection-unlabelled``: a positive number of sentences, or 'all'."""
    if text == "all":
        return text
    try:
        size = int(text)
    except ValueError:
        size = 0
    if size < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of sentences or "
                                         f"'all', got {text!r}")
    return size


def _methods(methods):
    return "--method " + (", ".join(methods[:-1]) + " and " + methods[-1]
                          if len(methods) > 1 else methods[0])


def _settings(args):
    """The selectable settings given on the command line: one value (kept as given) or
    several (the candidates the estimator chooses among)."""
    settings = {}
    for name, methods in SELECTABLE.items():
        values = getattr(args, name)
        if values is None or args.method not in methods:
            continue
        values = sorted(set(values))
        if len(values) > 1 and args.method in FIXED_ONLY:
            raise ValueError(f"--method {args.method} does not choose its settings: give "
                             f"one value of --{name.replace('_', '-')}")
        settings[name] = values[0] if len(values) == 1 else values
    return settings


def _token_columns(X, unlabelled, args):
    """Column indices making a token, as `tag` and `evaluate` must read them again;
    checks that the unlabelled tokens (of the first sentence) have the labelled ones'
    columns."""
    def n_columns(sentence):
        return len(sentence[0]) if isinstance(sentence[0], tuple) else 1

    n_labelled = n_columns(X[0])
    first = next(iter(unlabelled), None)
    if first is not None and n_columns(first) != n_labelled:
        n_unlabelled = n_columns(first)
        made_of = ("the columns of --token-columns" if args.token_columns else
                   "every column but the label")
        if unlabelled.file_format == "text":
            advice = ("train on the words only (--token-columns 0), or give column files "
                      "with the labelled tokens' columns (--unlabelled-format columns)")
        elif (n_unlabelled > n_labelled and not args.token_columns
              and guess_format(args.train, args.format) == "columns"):
            # The labelled tokens are every column but the label (`read_labelled`).
            label = int(args.column or -1) % (n_labelled + 1)
            columns = [str(i) for i in range(n_labelled + 1) if i != label]
            advice = ("if they still hold the label column, name the token columns of both "
                      f"files: --token-columns {' '.join(columns)}")
        else:
            advice = ("name the labelled file's token columns that the unlabelled files "
                      "have with --token-columns (e.g. --token-columns 0 for the words)")
        raise ValueError(
            f"the labelled tokens have {n_labelled} columns ({made_of}), the unlabelled "
            f"ones ({unlabelled.paths[0]}, first sentence) {n_unlabelled}: {advice}")
    return args.token_columns or list(range(n_labelled))


class _Concatenation:
    """The sentences of several collections one after the other, at each pass over them."""

    def __init__(self, *parts):
        self.parts = parts

    def __iter__(self):
        return itertools.chain.from_iterable(self.parts)


def _window_features(args):
    clusters = WordClusters(random_state=args.random_state) if args.clusters else None
    if args.word_vectors is not None and clusters is None:
        raise ValueError("--word-vectors needs --clusters")
    return WindowFeatures(window=args.window, suffixes=tuple(args.suffixes),
                          word_shape=not args.no_word_shape, clusters=clusters,
                          word_vectors=args.word_vectors)


def _estimator(args, settings):
    """The estimator: ``crf`` is `CRFCV` unless c1 and c2 are both given one value (and
    c2_transitions, if given, one value)."""
    common = {"order": args.order, "max_iterations": args.max_iterations,
              "constraints": None if args.constraints == "none" else args.constraints,
              "checkpoint": args.checkpoint, "checkpoint_every": args.checkpoint_every,
              **settings}
    method = ESTIMATORS[args.method]
    if args.method == "crf" and not (
            all(isinstance(settings.get(name), float) for name in ("c1", "c2"))
            and isinstance(settings.get("c2_transitions", 0.0), float)):
        method = CRFCV
    if method is not NaturalGradientCRF:
        common["n_jobs"] = args.n_jobs
    if method is not CRF and method is not NaturalGradientCRF:
        common.update(cv=args.cv, random_state=args.random_state)
    sample = {"selection_unlabeled": None if args.selection_unlabelled == "all"
              else args.selection_unlabelled}
    extra = {
        "entropy": sample, "jiao": sample,
        "self-training": {"max_rounds": args.max_rounds, **sample},
        "ngd": {"batch_size": args.batch_size, "random_state": args.random_state},
        "graph-pr": {"em_iterations": args.em_iterations, **sample},
    }.get(args.method, {})
    return method(verbose=not args.quiet, **common, **extra)


def _fit_arguments(method, features_unlabelled, features_dev, y_dev):
    arguments = {"X_dev": features_dev, "y_dev": y_dev}
    if method != "crf" and features_unlabelled is not None:
        arguments["X_unlabeled"] = features_unlabelled
    return arguments


def _summary(args, estimator, values, scores, seconds, n_labelled, n_unlabelled):
    lines = [
        f"method              {args.method} ({type(estimator).__name__}, order {args.order})",
        f"settings            {describe_settings(values) or 'defaults'}",
        f"sentences           {n_labelled:,} labelled, {n_unlabelled:,} unlabelled",
        f"features            {estimator.num_attributes_:,} attributes, "
        f"{len(estimator.classes_)} labels",
        f"training time       {seconds:.1f} s",
    ]
    lines += [f"{name:<20}{value:.4f}" for name, value in scores.items()]
    lines.append(f"model file          {args.model}" if args.model else
                 "model file          none (no --model given)")
    print("\n".join(lines))


class _Progress:
    """Progress lines on stderr, with the time since the start, unless quiet."""

    def __init__(self, quiet):
        self.quiet, self.started = quiet, time.perf_counter()

    def __call__(self, message):
        if not self.quiet:
            elapsed = time.perf_counter() - self.started
            print(f"[{elapsed:7.1f} s] {message}", file=sys.stderr, flush=True)
