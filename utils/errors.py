"""What the command-line entry points turn into one line and an exit status (utils/cli.py)."""


class UserError(Exception):
    """A problem the user can fix (paths, data, options): one line, without a traceback, exit 1."""


class Stopped(Exception):
    """The work stopped on a signal with what it had done saved (e.g. training's Interrupted):
    one line saying so, and the exit status a shell reports for that signal."""

    exit_code = 130
