"""The code blocks of dlstage's documentation, for the tests that check
them (doc-toml-examples, doc-transcript): the README's fenced blocks and a
man page's .nf/.fi blocks, the latter as plain text."""
import re

ROFF_ESCAPES = (("\\(dq", '"'), ("\\-", "-"), ("\\e", "\\"), ("\\&", ""), ("\\(aq", "'"))


def markdown_blocks(text):
    """(language, body) of every fenced block."""
    return re.findall(r"```(\w*)\n(.*?)```", text, re.S)


def roff_plain(block):
    """A .nf/.fi block as the reader sees it: requests dropped, escapes undone."""
    text = "\n".join(l for l in block.splitlines() if not l.startswith("."))
    for escape, plain in ROFF_ESCAPES:
        text = text.replace(escape, plain)
    return text + "\n"


def man_blocks(text):
    return [roff_plain(b) for b in re.findall(r"^\.nf\n(.*?)^\.fi", text, re.S | re.M)]


def code_blocks(path):
    """Every block's text of a README (.md) or a man page."""
    text = open(path, encoding="utf-8").read()
    if path.endswith(".md"):
        return [body for _, body in markdown_blocks(text)]
    return man_blocks(text)
