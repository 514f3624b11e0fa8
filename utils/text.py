"""Text read the one way every reader here needs: UTF-8, one line per "\n"."""

from collections.abc import Iterable, Iterator

from utils.errors import UserError


def utf8_lines(stream: Iterable[bytes], name: str) -> Iterator[str]:
    """The lines of a binary stream, without their "\n" (or "\r\n"), decoded one at a time so
    that an error names its line.

    Lines end at "\n" alone: `str.splitlines()` also ends them at U+2028, U+0085 (NEL), form
    feed and others, and one such character inside a sentence of a parallel corpus would shift
    every later pair of its file against the other language's.
    """
    for number, raw in enumerate(stream, start=1):  # a binary stream splits at b"\n" only
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise UserError(f"{name} is not valid UTF-8 (line {number}, byte {e.start + 1} of the line)") from None
        yield line.removesuffix("\n").removesuffix("\r")
