"""Estimators whose parameters are passed by keyword only.

sklearn-crfsuite's ``CRF`` takes its parameters in another order than ours (``algorithm,
min_freq, all_possible_states, ...``): code that passes them by position would run and mean
something else. Every ``__init__`` of a subclass of `KeywordOnlyParameters` is
keyword-only, and a positional call gets a TypeError naming the parameters it would have
set.
"""

import functools
import inspect

__all__ = ["KeywordOnlyParameters"]


class KeywordOnlyParameters:
    """Mixin: the ``__init__`` each subclass defines takes keyword arguments only.

    The ``__init__`` keeps its signature (scikit-learn reads the parameters from it); a
    call with positional arguments raises a TypeError naming them.

    Examples
    --------
    >>> from sklearn_ssl_crf import CRF
    >>> CRF("lbfgs", 0.1)
    Traceback (most recent call last):
    ...
    TypeError: CRF takes its parameters by keyword: CRF('lbfgs', 0.1) would set algorithm=...
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return
        parameters = list(inspect.signature(init).parameters.values())[1:]
        if any(p.kind is not p.KEYWORD_ONLY for p in parameters):
            raise TypeError(f"{cls.__name__}.__init__ must take keyword-only parameters")
        names = [p.name for p in parameters]

        @functools.wraps(init)
        def keyword_only(self, *args, **kwargs):
            if args:
                raise TypeError(_positional_message(type(self).__name__, names, args))
            init(self, **kwargs)

        cls.__init__ = keyword_only


def _positional_message(name, names, args):
    given = ", ".join(map(repr, args))
    meant = ", ".join(f"{parameter}={value!r}" for parameter, value in zip(names, args))
    return (f"{name} takes its parameters by keyword: {name}({given}) would set {meant}; "
            "name each parameter (sklearn-crfsuite's CRF, for one, takes them in another "
            "order: algorithm, min_freq, all_possible_states, ...)")
