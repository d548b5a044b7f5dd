#!/usr/bin/env bats
# Every man page is clean for mandoc -Tlint at warning level (once, a
# literal form feed once broke a line of dlstage.toml(5)), and renders.
load helpers

pages() { ls "$top_srcdir"/man/*.[158]; }

@test "mandoc -Tlint -Wwarning has nothing to say about any man page" {
    command -v mandoc >/dev/null || skip "no mandoc (scripts/install-deps installs it)"
    [ "$(pages | wc -l)" -ge 3 ] || fail "fewer man pages than expected: $(pages)"
    for page in $(pages); do
        out=$(mandoc -Tlint -Wwarning "$page" 2>&1) || fail "mandoc -Tlint $page: $out"
        [ -z "$out" ] || fail "mandoc -Tlint $page: $out"
    done
}

@test "every man page renders to text with its NAME and SYNOPSIS or DESCRIPTION" {
    command -v mandoc >/dev/null || skip "no mandoc"
    for page in $(pages); do
        text=$(mandoc -Tutf8 "$page" | col -b)
        grep -q '^NAME' <<<"$text" || fail "$page: no NAME"
        grep -Eq '^(SYNOPSIS|DESCRIPTION)' <<<"$text" || fail "$page: no SYNOPSIS or DESCRIPTION"
    done
}
