"""What the command-line programs (translate.py, heads.py) share: one-line option errors."""
import argparse


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
