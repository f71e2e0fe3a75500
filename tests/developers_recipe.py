"""The recipe for a new estimator in ``docs/developers.rst``, run as it is written: its code
block (the one that starts ``# recipe: a new estimator``) becomes the module
``developers_recipe_estimator``, registered so that its estimator pickles."""

import sys
import textwrap
import types
from pathlib import Path

DEVELOPERS = Path(__file__).resolve().parents[1] / "docs" / "developers.rst"
MARKER = "# recipe: a new estimator"
MODULE = "developers_recipe_estimator"


def recipe_source(text):
    """The code block of ``text`` (reStructuredText) whose first line is `MARKER`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == MARKER)
    indent = len(lines[start]) - len(lines[start].lstrip())
    block = []
    for line in lines[start:]:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break  # the block ends at the first line indented less than its first
        block.append(line)
    return textwrap.dedent("\n".join(block))


def load_recipe():
    """The module the recipe defines (made once)."""
    if MODULE not in sys.modules:
        module = types.ModuleType(MODULE)
        sys.modules[MODULE] = module
        exec(compile(recipe_source(DEVELOPERS.read_text()), str(DEVELOPERS), "exec"),
             module.__dict__)
    return sys.modules[MODULE]
