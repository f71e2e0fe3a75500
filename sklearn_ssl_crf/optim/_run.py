"""What the optimisers' runs share with their callers."""


class StopTraining(Exception):
    """Raised by a callback (an iteration's scorer) to end a run.

    Parameters
    ----------
    reason : str
        Why, as a token (``'no_improvement'``): the run's ``termination_condition``.
    message : str
        The same in words.
    entry : dict
        What the callback has for the iteration's log entry (its scores).
    """

    def __init__(self, reason, message, entry):
        super().__init__(reason, message, entry)
        self.reason, self.message, self.entry = reason, message, entry
