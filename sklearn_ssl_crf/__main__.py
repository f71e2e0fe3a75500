"""``python -m sklearn_ssl_crf``: the command line (see `sklearn_ssl_crf.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
