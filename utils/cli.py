"""What the command-line programs (train.py, translate.py, heads.py) share: one-line errors, for
options and for everything a user can fix, and their exit statuses."""

import argparse
import logging
import sys
from collections.abc import Callable
from typing import NoReturn

from utils.errors import Stopped, UserError


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a bad option is one line on stderr instead of usage text plus error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see --help)\n")


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {value}")
    return value


def non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {text}")
    return value


def os_error_line(error: OSError) -> str:
    """An OSError as the one line a user reads: what the system said, and of which file."""
    return f"error: {error.strerror or error}" + (f": {error.filename}" if error.filename else "")


def run_command(run: Callable[[], None], continue_with: Callable[[], str] | None = None) -> int:
    """Run a command's body; its exit status. 0: done, or the reader of its output left (`| head`);
    1: a UserError, or an OSError no earlier step turned into one (a full disk, a file it may not
    write), said in one line; 130 on Ctrl-C, or a Stopped's code: what was written stays, and
    `continue_with()`, if given, is the command that goes on from there."""
    logging.basicConfig(level=logging.ERROR, format="%(message)s")  # a no-op where Hydra set up logging
    try:
        run()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        sys.stderr.close()
        return 0
    except OSError as e:
        print(os_error_line(e), file=sys.stderr)
        return 1
    except (Stopped, KeyboardInterrupt) as e:  # KeyboardInterrupt: a Ctrl-C nothing caught before
        said = f"stopped by {e}" if isinstance(e, Stopped) else "interrupted"
        print(f"\n{said}" + (f"; continue with: {continue_with()}" if continue_with else ""), file=sys.stderr)
        return e.exit_code if isinstance(e, Stopped) else 130
    return 0
