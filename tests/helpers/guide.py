"""The reading guide's links into the code (docs/guide.md): [`SYMBOL`](../PATH#LSTART-LEND), where
SYMBOL is a function, class or method (Class.method) defined in PATH and the lines are its
definition's, decorators included. tests/test_guide.py keeps them true; after moving code,

    .venv/bin/python tests/helpers/guide.py        # rewrites the guide's links to where each symbol is now
"""

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide.md"
LINK = re.compile(r"\[`(?P<symbol>[\w.]+)`\]\(\.\./(?P<path>[^)#\s]+)#L(?P<lines>[^)]*)\)")


def definition_lines(path: Path, symbol: str) -> tuple[int, int] | None:
    """First and last line of `symbol`'s definition in the Python file `path`; None if it has none."""
    nodes: list[ast.stmt] = ast.parse(path.read_text(encoding="utf-8")).body
    found = None
    for part in symbol.split("."):
        found = next(
            (
                n
                for n in nodes
                if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and n.name == part
            ),
            None,
        )
        if found is None:
            return None
        nodes = found.body
    assert found is not None and found.end_lineno is not None
    return min([found.lineno] + [d.lineno for d in found.decorator_list]), found.end_lineno


def link(symbol: str, path: str) -> str:
    """The guide's link to `symbol` in `path` as it is now."""
    lines = definition_lines(ROOT / path, symbol)
    if lines is None:
        raise SystemExit(f"{symbol} is not defined in {path}")
    return f"[`{symbol}`](../{path}#L{lines[0]}-L{lines[1]})"


def with_links_fixed(text: str) -> str:
    return LINK.sub(lambda m: link(m["symbol"], m["path"]), text)


if __name__ == "__main__":
    GUIDE.write_text(with_links_fixed(GUIDE.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"links of {GUIDE.relative_to(ROOT)} point where their symbols are now", file=sys.stderr)
