"""The package's layout: every folder imports only the folders below it (utilities, data,
kernels, the weights-to-potentials map, chunk sums, objective terms, optimisers, the
training path, the estimators, model files, the command line), only through their
``__init__`` and public names; a few modules at the root; and functions and modules of a
readable size, counted in lines of code (not docstrings or comments)."""

import ast
import io
import tokenize
from pathlib import Path

import sklearn_ssl_crf

PACKAGE = Path(sklearn_ssl_crf.__file__).parent

# What each folder may import from the rest of the package. The order is the pipeline's:
# a folder imports only folders above it in this table.
ALLOWED = {
    "utils": set(),
    "inference": set(),
    "optim": set(),
    "datasets": set(),
    "metrics": set(),
    "potentials": {"inference"},
    "parallel": {"inference", "potentials", "utils"},
    "objective": {"inference", "parallel", "potentials", "utils"},
    "graph": {"utils"},
    "features": {"datasets", "utils"},
    "training": {"inference", "objective", "optim", "parallel", "potentials", "utils"},
    "estimators": {"utils", "inference", "optim", "datasets", "metrics", "potentials",
                   "parallel", "objective", "graph", "features", "training"},
    # The package's version, written into every model file, is the root's.
    "model_files": {"estimators", "features", "graph", "metrics", "optim", "utils",
                    "__version__"},
    "cli": {"utils", "datasets", "metrics", "features", "graph", "estimators", "training",
            "model_files"},
}
ROOT_MODULES = {"__init__.py", "__main__.py"}
MAX_MODULE_CODE_LINES = 400
MAX_FUNCTION_CODE_LINES = 100


def imports(source, parts):
    """``(target, names)`` of every import of the package in a module, given its ``source``
    and the folders ``parts`` it sits in below the package: ``target`` the package path it
    imports from (a list of names), ``names`` what it imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        names = [alias.name for alias in node.names]
        if node.level:
            base = list(parts[:len(parts) - node.level + 1])
            found.append((base + (node.module.split(".") if node.module else []), names))
        elif (node.module or "").startswith("sklearn_ssl_crf."):
            found.append((node.module.split(".")[1:], names))
    return found


def folder_imports(source, parts):
    """The top-level names of the package (folders, or names imported from the root) that
    a module imports."""
    return {target[0] if target else name for target, names in imports(source, parts)
            for name in (names if not target else names[:1])}


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, path.relative_to(PACKAGE).parent.parts


def test_every_folder_has_its_place_in_the_table():
    folders = {path.name for path in PACKAGE.iterdir()
               if path.is_dir() and (path / "__init__.py").exists()}
    assert folders == set(ALLOWED)


def test_each_folder_imports_only_the_folders_below_it():
    for path, parts in modules():
        if not parts:
            continue
        outside = folder_imports(path.read_text(), parts) - {parts[0]}
        assert outside <= ALLOWED[parts[0]], (
            f"{path.relative_to(PACKAGE)} imports {sorted(outside - ALLOWED[parts[0]])}")


def test_no_private_name_is_imported_from_another_folder():
    for path, parts in modules():
        here = parts[0] if parts else None
        for target, names in imports(path.read_text(), parts):
            if not target or target[0] == here:
                continue
            private = [part for part in target[1:] if part.startswith("_")] + [
                name for name in names if name.startswith("_") and name != "__version__"]
            assert not private, (f"{path.relative_to(PACKAGE)} imports {private} from "
                                 f"{'.'.join(target)}: import public names from the folder")


def test_the_root_holds_only_the_package_and_its_entry_point():
    assert {path.name for path in PACKAGE.glob("*.py")} == ROOT_MODULES


def test_the_rules_read_every_kind_of_import():
    # The oracle itself: what a kernel module would import, read correctly.
    source = ("from ..estimators._crf import CRF\nfrom . import chain\n"
              "from ..objective._weights import x\nfrom sklearn_ssl_crf.graph import knn_graph"
              "\nimport numpy\nfrom .. import __version__\n")
    assert folder_imports(source, ("inference",)) == {"estimators", "inference",
                                                      "objective", "graph", "__version__"}
    assert [t for t, _ in imports(source, ("inference",))] == [
        ["estimators", "_crf"], ["inference"], ["objective", "_weights"], ["graph"], []]


def code_lines(source):
    """Numbers of the lines of ``source`` that hold code: not blank, not only a comment, not
    in a docstring."""
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE,
                              tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            lines.update(range(token.start[0], token.end[0] + 1))
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            lines -= set(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def test_code_lines_leave_out_docstrings_and_comments():
    source = ('"""Module\n\ndoc."""\n\n# a comment\nx = 1  # code\n\n\ndef f(a,\n      b):\n'
              '    """Doc\n    string."""\n    return (a +\n            b)\n')
    assert sorted(code_lines(source)) == [6, 9, 10, 13, 14]


def test_modules_and_functions_are_of_a_readable_size():
    too_long = {}
    for path, _ in modules():
        source = path.read_text()
        lines = code_lines(source)
        name = str(path.relative_to(PACKAGE))
        if len(lines) > MAX_MODULE_CODE_LINES:
            too_long[name] = len(lines)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = len([line for line in lines if node.lineno <= line <= node.end_lineno])
                if n > MAX_FUNCTION_CODE_LINES:
                    too_long[f"{name}:{node.name}"] = n
    assert too_long == {}
