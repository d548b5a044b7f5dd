"""The code blocks of dlstage's documentation, for the tests that check
them (doc-toml-examples, doc-transcript, doc-coverage): the fenced blocks
of the README and the guides (Markdown) and a man page's .nf/.fi blocks, the latter as plain text; and the
messages the prose quotes inline."""
import re
import sys

ROFF_ESCAPES = (("\\(dq", '"'), ("\\-", "-"), ("\\e", "\\"), ("\\&", ""), ("\\(aq", "'"))

# What a quoted message looks like: "dlstage: ...", "sbatch: dlstage: ...",
# "NAME: what happened ..." (at least three words after the name), the start
# of a staging summary ("staged NAME to TIER ..."), or the end of a line
# ("... 2 entries changed since it was cached").
QUOTED_MESSAGE = re.compile(r"^(sbatch: )?(dlstage: )?[\w-]+: \S+( \S+){2,}|^staged \S+ to |^\.\.\. \S+( \S+){2,}")
# A Markdown code span: a run of backticks, text within one paragraph, a run
# as long (`` `a quote` `` holds backticks).
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.S)
ROFF_FONT = re.compile(r"\\f(\[[^]]*\]|\(..|.)")
FENCED_BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.S)


def markdown_blocks(text):
    """(language, body) of every fenced block."""
    return FENCED_BLOCK.findall(text)


def without_comment(line):
    """A shell line without its trailing "# comment"."""
    return re.sub(r"\s+#.*$", "", line)


def command_of(line):
    """The command of a transcript's "$ " line."""
    return without_comment(line[2:]).strip()


def roff_unescaped(text):
    text = ROFF_FONT.sub("", text)
    for escape, plain in ROFF_ESCAPES:
        text = text.replace(escape, plain)
    return text


def roff_plain(block):
    """A .nf/.fi block as the reader sees it: requests dropped, escapes undone."""
    return roff_unescaped("\n".join(l for l in block.splitlines() if not l.startswith("."))) + "\n"


MAN_BLOCK = re.compile(r"^\.nf\n(.*?)^\.fi", re.S | re.M)


def man_blocks(text):
    return [roff_plain(b) for b in MAN_BLOCK.findall(text)]


def code_blocks(path):
    """Every block's text of a Markdown doc (.md) or a man page."""
    text = open(path, encoding="utf-8").read()
    if path.endswith(".md"):
        return [body for _, body in markdown_blocks(text)]
    return man_blocks(text)


def inline_quotes(path):
    """What the prose of path quotes: a Markdown doc's `code spans` outside its
    fenced blocks (a span broken over lines joined with one space), a man
    page's quoted macro arguments (.B "dlstage: ...", .BR "..." ,) outside
    .nf/.fi, font changes dropped.  A backtick left unpaired would pair
    wrongly and hide what follows: it is an error."""
    text = open(path, encoding="utf-8").read()
    if path.endswith(".md"):
        prose = FENCED_BLOCK.sub("", text)
        left = CODE_SPAN.sub("", prose)
        if "`" in left:
            line = next(l for l in left.splitlines() if "`" in l)
            sys.exit(f"doc_blocks: {path}: an unpaired backtick in the text: {line.strip()}")
        return [re.sub(r"\s*\n\s*", " ", body.strip()) for _, body in CODE_SPAN.findall(prose)]
    prose = MAN_BLOCK.sub("", text)
    return [roff_unescaped(arg) for line in prose.splitlines()
            if line.startswith(".") and not line.startswith('.\\"')
            for arg in re.findall(r'"([^"]+)"', line)]


def inline_messages(path):
    """The messages the prose of path quotes, each once."""
    return list(dict.fromkeys(q for q in inline_quotes(path) if QUOTED_MESSAGE.match(q)))
