"""The public API's docstrings pass numpydoc validation, with scikit-learn's exclusions."""

# As scikit-learn's maint_tools/test_docstrings.py: every public object is validated with
# numpydoc.validate, and the errors scikit-learn ignores are ignored here too.

import inspect
import types

import pytest

import sklearn_ssl_crf

numpydoc_validation = pytest.importorskip(
    "numpydoc.validate", reason="the docstring checks need numpydoc (pip install numpydoc)"
)

# Ignored everywhere (as in scikit-learn):
#  - RT02: the first line of a Returns entry may give the returned object's name;
#  - GL01, GL02: where the summary starts and the closing quotes end.
IGNORED = {"RT02", "GL01", "GL02"}
# Ignored on properties: unknown parameters (PR02), no docstring (GL08).
IGNORED_ON_PROPERTIES = {"PR02", "GL08"}
# Only classes and functions need an extended summary, a See Also section and examples.
IGNORED_ON_METHODS = {"EX01", "SA01", "ES01"}


def _members(name, obj):
    """(name, class or None, method name or None) of a public class or function, and of the
    public methods and properties a class defines itself."""
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return
    yield name, None, None
    if inspect.isclass(obj):
        for method, value in vars(obj).items():
            if method.startswith("_"):
                continue
            if inspect.isfunction(value) or isinstance(
                value, (property, classmethod, staticmethod)
            ):
                yield f"{name}.{method}", obj, method


def public_objects():
    """Everything in the package's ``__all__``, and for each public module listed there,
    everything in that module's ``__all__``."""
    for name in sklearn_ssl_crf.__all__:
        obj = getattr(sklearn_ssl_crf, name)
        if isinstance(obj, types.ModuleType):
            for member in obj.__all__:
                yield from _members(f"{obj.__name__}.{member}", getattr(obj, member))
        else:
            yield from _members(f"sklearn_ssl_crf.{name}", obj)


def filter_errors(errors, klass=None, method=None):
    """The numpydoc errors that count, as (code, message) pairs."""
    for code, message in errors:
        if code in IGNORED:
            continue
        if (
            code in IGNORED_ON_PROPERTIES
            and klass is not None
            and isinstance(getattr(klass, method, None), property)
        ):
            continue
        if method is not None and code in IGNORED_ON_METHODS:
            continue
        yield code, message


PUBLIC_OBJECTS = list(public_objects())


def test_public_objects_are_found():
    # Guards the enumeration itself: an empty list would make every check pass.
    names = [name for name, _, _ in PUBLIC_OBJECTS]
    assert "sklearn_ssl_crf.CRF" in names
    assert "sklearn_ssl_crf.CRF.fit" in names
    assert "sklearn_ssl_crf.metrics.span_f1_score" in names


@pytest.mark.parametrize(
    "name, klass, method", PUBLIC_OBJECTS, ids=[name for name, _, _ in PUBLIC_OBJECTS]
)
def test_docstring(name, klass, method):
    result = numpydoc_validation.validate(name)
    errors = list(filter_errors(result["errors"], klass, method))
    assert not errors, f"numpydoc errors in the docstring of {name}:\n" + "\n".join(
        f"  {code}: {message}" for code, message in errors
    )
