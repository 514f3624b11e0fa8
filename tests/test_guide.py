"""docs/guide.md, the reading guide: every link into the code spans the definition it names (its
commands run with the others of docs/: test_documented_commands.py)."""

from helpers.guide import GUIDE, LINK, ROOT, definition_lines


def test_every_link_into_the_code_spans_the_definition_it_names():
    text = GUIDE.read_text(encoding="utf-8")
    links = list(LINK.finditer(text))
    assert len(links) >= 25  # a link for each idea of each section
    for found in links:
        symbol, path = found["symbol"], found["path"]
        lines = definition_lines(ROOT / path, symbol)
        assert lines is not None, f"{symbol} is no longer defined in {path}"
        assert found["lines"] == f"{lines[0]}-L{lines[1]}", (
            f"{found[0]} should be #L{lines[0]}-L{lines[1]}: run .venv/bin/python tests/helpers/guide.py"
        )
        code = (ROOT / path).read_text(encoding="utf-8").splitlines()[lines[0] - 1 : lines[1]]
        first = next(line for line in code if not line.lstrip().startswith("@"))  # decorators come first
        assert f" {symbol.split('.')[-1]}" in first  # the range starts at the definition itself


def test_every_section_the_issue_asks_for_is_there_in_order():
    headings = [line for line in GUIDE.read_text(encoding="utf-8").splitlines() if line.startswith("## ")]
    for words, heading in zip(
        [
            "keys and values",
            "sqrt(d_k)",
            "padding mask",
            "look-ahead mask",
            "Heads",
            "cross-attention",
            "Positional",
            "encoder and decoder layers",
            "loss",
            "beam search",
            "ATTENTION tab",
        ],
        headings,
    ):
        assert words in heading, (words, heading)
