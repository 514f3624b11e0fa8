"""The one exception type for problems the user can fix (paths, data, options)."""


class UserError(Exception):
    """Printed by the command-line entry points as one line, without a traceback."""
