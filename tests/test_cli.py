"""utils/cli.py: what every command does with errors, a closed pipe and a stop."""

import argparse
import io
import signal
import sys

import pytest

from training.interrupt import Interrupted
from utils.cli import OneLineErrorParser, non_negative_float, positive_int, run_command
from utils.errors import UserError


def raising(error: BaseException):
    def run() -> None:
        raise error

    return run


def test_a_user_error_is_one_line_and_status_1(capsys):
    assert run_command(raising(UserError("no such file: x"))) == 1
    assert capsys.readouterr().err == "error: no such file: x\n"


def test_done_is_0_and_says_nothing(capsys):
    assert run_command(lambda: None) == 0
    assert capsys.readouterr().err == ""


def test_ctrl_c_is_130_and_names_the_command_that_goes_on(capsys):
    assert run_command(raising(KeyboardInterrupt())) == 130
    assert capsys.readouterr().err == "\ninterrupted\n"
    assert run_command(raising(KeyboardInterrupt()), lambda: "python train.py hydra.run.dir=r") == 130
    assert capsys.readouterr().err == "\ninterrupted; continue with: python train.py hydra.run.dir=r\n"


def test_a_stop_on_sigterm_reports_its_signal_and_what_was_saved(capsys, tmp_path):
    stopped = Interrupted(signal.SIGTERM, 40, tmp_path / "step_40.pt")
    assert run_command(raising(stopped), lambda: "again") == 128 + signal.SIGTERM
    saved = tmp_path / "step_40.pt"
    assert capsys.readouterr().err == f"\nstopped by SIGTERM at step 40; saved {saved}; continue with: again\n"


def test_a_closed_pipe_is_not_an_error(monkeypatch):
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)  # closed, so that exiting prints no second error
    assert run_command(raising(BrokenPipeError())) == 0
    assert stderr.closed


def test_other_errors_are_not_hidden():
    with pytest.raises(ZeroDivisionError):
        run_command(raising(ZeroDivisionError()))


def test_a_bad_option_is_one_line_and_status_2(capsys):
    parser = OneLineErrorParser(prog="x")
    parser.add_argument("-b", type=positive_int)
    parser.add_argument("-a", type=non_negative_float)
    for argv, said in (
        (["-b", "0"], "must be at least 1, not 0"),
        (["-a", "-1"], "must be >= 0, not -1"),
        (["-a", "nan"], "must be >= 0, not nan"),
        (["--nope"], "unrecognized arguments: --nope"),
    ):
        with pytest.raises(SystemExit) as exited:
            parser.parse_args(argv)
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1, err


def test_option_types_reject_what_they_name():
    with pytest.raises(argparse.ArgumentTypeError):
        positive_int("-3")
    assert positive_int("3") == 3
