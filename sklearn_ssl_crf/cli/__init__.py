"""The command line: ``sklearn-ssl-crf`` or ``python -m sklearn_ssl_crf``.

Subcommands ``train``, ``tag``, ``evaluate`` and ``demo`` (the default). Warnings are one
line each on stderr, each once. Errors in the input (a missing or malformed file, a bad
setting) print one line naming what is wrong, with the file and line where there is one,
and exit with status 2; so does running out of memory, naming what the command was doing
(the ``stage`` a command sets on its ``args``).
"""

import argparse
import os
import sys
import warnings

from . import demo, evaluate, tag, train

_PROG = "sklearn-ssl-crf"


def build_parser():
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="Semi-supervised linear-chain CRFs: train taggers on labelled and "
        "unlabelled sentences, tag text, evaluate. With no command, runs the demo.")
    subparsers = parser.add_subparsers(title="commands", dest="command")
    for module in (train, tag, evaluate, demo):
        module.add_parser(subparsers)
    return parser


def _one_line_warnings(command):
    """A ``warnings.showwarning`` that prints each warning once, as one line on stderr
    naming the command, without Python's source line."""
    shown = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        if text not in shown:
            shown.add(text)
            print(f"{_PROG} {command}: warning: {text}", file=sys.stderr, flush=True)

    return show


def main(argv=None):
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit
    status."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv or ["demo"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = _one_line_warnings(args.command)
            return args.run(args)
    except BrokenPipeError:
        # The reader of our output went away (``| head``): stop quietly, as Python's
        # documentation advises, with stdout pointed at devnull for the final flush.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        where = getattr(args, "checkpoint", None)
        print(f"{_PROG} {args.command}: interrupted" + (
            f"; the same command resumes from the checkpoints in {where}" if where else ""),
            file=sys.stderr)
        return 130
    except MemoryError as error:
        # Inputs too large for this machine: what was being done and what the allocation
        # was (NumPy's message names the array), not a traceback.
        stage = getattr(args, "stage", f"running {args.command}")
        print(f"{_PROG} {args.command}: out of memory while {stage}: "
              f"{str(error) or 'an allocation failed'}; give fewer or shorter sentences, fewer "
              "labels or features, or run on a machine with more memory", file=sys.stderr)
        return 2
    except (ValueError, OSError, ImportError) as error:
        # Bad input, not a bug of ours: one line, no traceback (argparse's status for
        # usage errors is 2 as well).
        print(f"{_PROG} {args.command}: error: {error}", file=sys.stderr)
        return 2
