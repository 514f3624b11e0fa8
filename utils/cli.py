"""What the command-line programs (translate.py, heads.py) share: one-line errors, for options
and for everything a user can fix."""
import argparse
import logging
import sys
from typing import Callable

from utils.errors import UserError


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a bad option is one line on stderr instead of usage text plus error."""

    def error(self, message: str) -> None:
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


def run_command(run: Callable[[argparse.Namespace], None], args: argparse.Namespace) -> int:
    """Run a command's body; its exit status. 0: done, or the reader of its output left (`| head`);
    1: a UserError, said in one line; 130: Ctrl-C (what was written stays)."""
    logging.basicConfig(level=logging.ERROR, format="%(message)s")  # the commands print their own warnings
    try:
        run(args)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    return 0
