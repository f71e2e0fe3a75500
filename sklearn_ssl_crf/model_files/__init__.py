"""Model files: `save` and `load`, the package's own format, skops and CRFsuite's."""

from ._save_load import load, save

__all__ = ["load", "save"]
