"""A pseudo-terminal for a command under test, sized as a person's window is: a pty is made 0
columns wide, and a progress bar (tqdm) fits itself to 0 columns by drawing nothing."""

import fcntl
import os
import pty
import struct
import termios


def open_terminal(rows: int = 30, columns: int = 100) -> tuple[int, int]:
    """(controller, terminal): the command reads and writes `terminal`, the test `controller`."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    os.set_inheritable(terminal, True)
    return controller, terminal
