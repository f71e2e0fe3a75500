"""What a fit leaves behind when it fails or is interrupted (Ctrl-C): nothing; and a
``partial_fit``: the estimator as it was before the call."""

import functools

import numpy as np

__all__ = ["unfitted_on_failure", "unchanged_on_failure"]


def unfitted_on_failure(fit):
    """Decorate a ``fit`` (outside scikit-learn's ``_fit_context``) so that, when it raises
    (``KeyboardInterrupt`` included), the estimator is left unfitted: its fitted
    attributes (``name_``) and the private state its fits keep (the class's ``_fit_state``
    names) are removed, so that it is never half-written (a new vocabulary beside an
    earlier fit's weights), nor silently left with an earlier fit. Other private attributes
    (scikit-learn's callback contexts) are not the fit's: they stay."""

    @functools.wraps(fit)
    def guarded(estimator, *args, **kwargs):
        try:
            return fit(estimator, *args, **kwargs)
        except BaseException:
            state = getattr(type(estimator), "_fit_state", ())
            for name in [name for name in vars(estimator)
                         if (name.endswith("_") and not name.startswith("__"))
                         or name in state]:
                delattr(estimator, name)
            raise

    return guarded


def unchanged_on_failure(partial_fit):
    """Decorate a ``partial_fit`` so that, when it raises (``KeyboardInterrupt`` included),
    the estimator is as it was before the call: at its last complete call (a stream's
    earlier batches are not lost), or unfitted before the first. Its attributes are put
    back, and so is the state of the objects that the calls change in place, named by
    the class's ``_partial_fit_state``: NumPy generators, and objects whose attributes
    are saved (copies of their arrays and lists). That costs a copy of the weights per
    call."""

    @functools.wraps(partial_fit)
    def guarded(estimator, *args, **kwargs):
        restore = _snapshot(estimator)
        try:
            return partial_fit(estimator, *args, **kwargs)
        except BaseException:
            restore()
            raise

    return guarded


def _snapshot(estimator):
    """A function that puts ``estimator`` back as it is now (`unchanged_on_failure`)."""
    saved = {name: list(value) if isinstance(value, list) else value
             for name, value in vars(estimator).items()}
    inner = {}
    for name in type(estimator)._partial_fit_state:
        value = saved.get(name)
        if isinstance(value, np.random.Generator):
            inner[name] = value.bit_generator.state
        elif value is not None:
            inner[name] = {key: item.copy() if isinstance(item, (np.ndarray, list)) else item
                           for key, item in vars(value).items()}

    def restore():
        vars(estimator).clear()
        vars(estimator).update(saved)
        for name, state in inner.items():
            if isinstance(saved[name], np.random.Generator):
                saved[name].bit_generator.state = state
            else:
                vars(saved[name]).clear()
                vars(saved[name]).update(state)

    return restore
