"""The commands README.md and docs/*.md show a user: every line of a fenced shell block, and every
inline code span that is a command (a known program or a script, with at least one argument)."""

import re
import shlex
from pathlib import Path

from helpers.commands import ROOT

SHELL_BLOCKS = {"bash", "sh", "shell", "console"}
PROGRAMS = {
    "make",
    "python",
    "python3",
    "tensorboard",
    "torchrun",
    ".venv/bin/python",
    ".venv/bin/tensorboard",
    ".venv/bin/torchrun",
    "cat",
    "export",
}
FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.M | re.S)
INLINE = re.compile(r"(?<!`)`([^`\n]+(?:\n[^`\n]+)?)`(?!`)")  # a span may wrap onto a second line


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def without_comment(line: str) -> str:
    """The line up to a `#` that starts a shell comment (after a space, outside quotes)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def block_commands(block: str) -> list[str]:
    commands, pending = [], ""
    for line in block.splitlines():
        line = pending + without_comment(line.strip())
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if line:
            commands.append(line)
    return commands


def is_command(span: str) -> bool:
    """An inline span a user would type: a known program, or a script by its path (bench/x.py; not a
    bare `translate.py --attention DIR`, which names an option), and an argument."""
    try:
        words = shlex.split(span)
    except ValueError:
        return False
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value before the program
        words = words[1:]
    return len(words) >= 2 and (words[0] in PROGRAMS or ("/" in words[0] and words[0].endswith((".py", ".sh"))))


def documented_commands() -> dict[str, list[str]]:
    """{command, its whitespace made single spaces: [where it is shown, "FILE:LINE", ...]}."""
    found: dict[str, list[str]] = {}
    for path in documents():
        text = path.read_text(encoding="utf-8")
        fenced = []
        for block in FENCE.finditer(text):
            fenced.append(block.span())
            if block[2] in SHELL_BLOCKS:
                line = text.count("\n", 0, block.start(3)) + 1
                for command in block_commands(block[3]):
                    found.setdefault(" ".join(command.split()), []).append(f"{path.name}:{line}")
        for span in INLINE.finditer(text):
            if any(start <= span.start() < end for start, end in fenced):
                continue
            command = " ".join(span[1].split())
            if is_command(command):
                line = text.count("\n", 0, span.start()) + 1
                found.setdefault(command, []).append(f"{path.name}:{line}")
    return found
