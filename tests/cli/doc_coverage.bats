#!/usr/bin/env bats
# Every example message of the README, the guides and the man pages is checked by a
# test (tests/cli/doc-coverage): one a test holds to a run with doc_says or
# doc-transcript --message, the output of a transcript a test runs, or the
# version line the unit test finds.
load helpers

# coverage SRCDIR: run doc-coverage on SRCDIR; its output in $out, its exit in $status.
coverage() {
    run_merged "$top_srcdir/tests/cli/doc-coverage" "$1"
}

# A copy of the docs and the tests in $work/src, for a test to add to.
copy_sources() {
    mkdir -p "$work/src"
    cp -r "$top_srcdir/README.md" "$top_srcdir/docs" "$top_srcdir/man" "$top_srcdir/tests" "$work/src/"
}

@test "every example message of the README, the guides and the man pages is checked by a test" {
    coverage "$top_srcdir"
    expect_status 0
}

@test "an example message no test checks is named, and fails the check" {
    copy_sources
    printf '\n```\ndlstage: a message the docs show and no test provokes\n```\n' >>"$work/src/README.md"
    coverage "$work/src"
    expect_status 1
    [ "$out" = "doc-coverage: no test checks this example: README.md: dlstage: a message the docs show and no test provokes" ] ||
        fail "not named alone"
    # and a doc_says whose regex matches it is a check
    echo "doc_says \"\$README\" 'no test provokes'" >"$work/src/tests/cli/extra.bats"
    coverage "$work/src"
    expect_status 0
}

@test "a guide's example message no test checks is named too, and a doc_says naming the guide checks it" {
    copy_sources
    printf '\n```\ndlstage: a guide message no test provokes\n```\n' >>"$work/src/docs/user-guide.md"
    coverage "$work/src"
    expect_status 1
    [ "$out" = "doc-coverage: no test checks this example: docs/user-guide.md: dlstage: a guide message no test provokes" ] ||
        fail "not named alone"
    # a doc_says naming another document is no check of it
    echo "doc_says \"\$README\" 'guide message no test'" >"$work/src/tests/cli/extra.bats"
    coverage "$work/src"
    expect_status 1
    echo "doc_says \"\$USER_GUIDE\" 'guide message no test'" >"$work/src/tests/cli/extra.bats"
    coverage "$work/src"
    expect_status 0
}

@test "a Markdown doc in docs/ that doc-coverage does not read fails the check" {
    copy_sources
    printf '# A new guide\n' >"$work/src/docs/new-guide.md"
    coverage "$work/src"
    expect_status 1
    [ "$out" = "doc-coverage: docs/new-guide.md is not in DOCS: add it, with its variable in tests/integration/helpers.bash" ] ||
        fail "not named"
}

@test "a message the prose quotes (README \`...\`, a man page's .BR \"...\") no test checks is named too" {
    copy_sources
    printf '\nThe job then says `imagenet: frobnicated 3 of\n4 nodes` and goes on.\n' >>"$work/src/README.md"
    printf '.PP\nIt says\n.BR "dlstage: a quoted line nobody checks" .\n' >>"$work/src/man/dlstage.1"
    coverage "$work/src"
    expect_status 1
    [ "$out" = "doc-coverage: no test checks this example: README.md: imagenet: frobnicated 3 of 4 nodes
doc-coverage: no test checks this example: man/dlstage.1: dlstage: a quoted line nobody checks" ] || fail "not both named"
}

@test "an unpaired backtick in the README's text fails the check, naming its line" {
    copy_sources
    printf '\nA stray ` here would pair with the next span.\n' >>"$work/src/README.md"
    coverage "$work/src"
    expect_status 1
    [ "$out" = "doc_blocks: $work/src/README.md: an unpaired backtick in the text: A stray \` here would pair with the next span." ] ||
        fail "not named"
}
