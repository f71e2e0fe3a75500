"""Semi-supervised linear-chain conditional random fields with a scikit-learn API."""

from .sequences import SequenceMatrix

__version__ = "0.1.0.dev0"

__all__ = ["SequenceMatrix"]
