#!/usr/bin/env bats
# The transcripts of the docs ("$ command" and what it prints) are what
# the command prints: each is read from the README, a guide or a man page with
# tests/cli/doc-transcript and compared with a run of the command.  Those
# that need Slurm (sbatch, dlstage status) are in
# tests/integration/56-doc-transcripts.bats.
load helpers

# columns TEXT: each line's columns (separated by two spaces or more) joined
# by '|', for tables whose widths follow their content.
columns() { sed -E 's/ {2,}/|/g'; }

@test "user guide: a mistyped command gets the did-you-mean line and the usage line" {
    expected=$(doc_transcript "$top_srcdir/docs/user-guide.md" 'dlstage stauts') || fail "$expected"
    "$DLSTAGE" stauts >"$work/out" 2>&1 && status=0 || status=$?
    expect_status 2
    out=$(cat "$work/out")
    [ "$out" = "$expected" ] || fail "the user guide shows: $expected"
}

@test "dlstage(1): check-config names a mistyped key of the example configuration, line and all" {
    expected=$(doc_transcript "$top_srcdir/man/dlstage.1" 'dlstage check-config /etc/dlstage/dlstage.toml') || fail "$expected"
    line=$(grep -oE 'toml:[0-9]+:' <<<"$expected" | head -n1 | tr -dc 0-9)
    # The example configuration with that line's max_bytes mistyped.
    sed -n "${line}p" "$top_srcdir/etc/dlstage.toml" | grep -q '^max_bytes ' || fail "line $line of etc/dlstage.toml is not a max_bytes line"
    sed "${line}s/^max_bytes /max_byte  /" "$top_srcdir/etc/dlstage.toml" >"$work/dlstage.toml"
    "$DLSTAGE" check-config "$work/dlstage.toml" >"$work/out" 2>&1 && status=0 || status=$?
    expect_status 1
    out=$(sed "s|$work/dlstage.toml|/etc/dlstage/dlstage.toml|g" "$work/out")
    [ "$out" = "$expected" ] || fail "dlstage(1) shows: $expected"
}

@test "dlstage(1): catalog list of the example configuration has the columns and rows shown" {
    expected=$(doc_transcript "$top_srcdir/man/dlstage.1" 'dlstage catalog list') || fail "$expected"
    run_dlstage --config "$top_srcdir/etc/dlstage.toml" catalog list
    expect_status 0
    # Header and every column but SIZE and FILES (this machine has no datasets).
    [ "$(head -n1 <<<"$out" | columns)" = "$(head -n1 <<<"$expected" | columns)" ] || fail "header: $expected"
    [ "$(columns <<<"$out" | cut -d'|' -f1-5)" = "$(columns <<<"$expected" | cut -d'|' -f1-5)" ] ||
        fail "rows: $expected"
}

@test "doc-transcript fails on a transcript the docs do not show" {
    run doc_transcript "$top_srcdir/README.md" 'dlstage frobnicate'
    [ "$status" -eq 1 ]
    [[ "$output" == *"shows no transcript of 'dlstage frobnicate'"* ]]
}

# A doc with a message in a code block and one quoted in the prose.
same_message_doc() {
    printf '%s\n' 'Text.' '```' 'dlstage: staged tree to shm on 3 nodes in 0.21 s' '```' \
        'The second waits (`imagenet: waiting: job 815 on n12 (pid 4411)' 'is staging it`) and reuses it.' >"$work/doc.md"
}

@test "doc-transcript --same-message: a code block's line is the whole line, numbers and paths aside" {
    same_message_doc
    echo "dlstage: staged tree to shm on 2 nodes in 1.5 s" | doc_transcript --same-message "$work/doc.md" 'staged tree'
    run doc_transcript --same-message "$work/doc.md" 'staged tree' <<<"dlstage: staged tree to shm on 2 nodes in 1.5 s (fast)"
    [ "$status" -eq 1 ]
    [[ "$output" == *"doc:    dlstage: staged tree to shm on # nodes in # s"* ]]
}

@test "doc-transcript --same-message: a message the prose quotes is found inside a line, at word boundaries" {
    same_message_doc
    [ "$(doc_transcript --message "$work/doc.md" 'waiting: job')" = "imagenet: waiting: job 815 on n12 (pid 4411) is staging it" ]
    doc_transcript --same-message "$work/doc.md" 'waiting: job' imagenet=big \
        <<<"dlstage: big: waiting: job 7 on n1 (pid 42) is staging it"
    run doc_transcript --same-message "$work/doc.md" 'waiting: job' imagenet=big \
        <<<"dlstage: mybig: waiting: job 7 on n1 (pid 42) is staging it"
    [ "$status" -eq 1 ]
    run doc_transcript --same-message "$work/doc.md" 'waiting: job' imagenet=big \
        <<<"dlstage: big: waiting: job 7 on n1 (pid 42) is copying it"
    [ "$status" -eq 1 ]
}

@test "doc-transcript --same-message: a quote beginning with dlstage: is the start of the line; '... ' quotes a part" {
    printf '%s\n' 'It says `dlstage: packed 3 files in 0.1 s` and' 'then `... 2 entries changed since it' \
        'was cached`.' '```' 'dlstage: staged tree to shm' '```' 'Or `dlstage: staged tree to shm`.' >"$work/doc.md"
    doc_transcript --same-message "$work/doc.md" 'packed' <<<"dlstage: packed 40 files in 2.5 s (0.1 GB/s)"
    doc_transcript --same-message "$work/doc.md" 'packed' <<<"sbatch: dlstage: packed 40 files in 2.5 s"
    run doc_transcript --same-message "$work/doc.md" 'packed' <<<"note: dlstage: packed 40 files in 2.5 s"
    [ "$status" -eq 1 ]
    doc_transcript --same-message "$work/doc.md" 'entries changed' \
        <<<"dlstage: t: staging it on n1: 1 entries missing, 3 entries changed since it was cached"
    run doc_transcript --same-message "$work/doc.md" 'entries changed' <<<"dlstage: t: 3 entries changed"
    [ "$status" -eq 1 ]
    # The same text in a block and quoted is one message, a whole line as the block shows it.
    [ "$(doc_transcript --message "$work/doc.md" 'staged tree')" = "dlstage: staged tree to shm" ]
    run doc_transcript --same-message "$work/doc.md" 'staged tree' <<<"dlstage: staged tree to shm on 3 nodes"
    [ "$status" -eq 1 ]
}

# admin_guide_lines FIRST_LINE_REGEX: the admin guide's code block whose
# first line matches, its comments dropped and /p/data under $work: the
# lines to run.
admin_guide_lines() {
    doc_transcript --commands "$top_srcdir/docs/admin-guide.md" "$1" | sed -e "s|/p/data/|$work/p/data/|g"
}

# A small ImageFolder-like tree at $work/p/data/imagenet: 300 files in 3
# class directories.
make_imagenet() {
    local c i
    for c in n01 n02 n03; do
        mkdir -p "$work/p/data/imagenet/$c"
        for i in $(seq 100); do printf '%s %s\n' "$c" "$i" >"$work/p/data/imagenet/$c/$i.jpg"; done
    done
}

@test "admin guide: the dlstage pack lines, run as written with /p/data under a test directory" {
    make_imagenet
    lines=$(admin_guide_lines '^dlstage pack ')
    [ "$(wc -l <<<"$lines")" -eq 2 ] || fail "the pack block: $lines"
    while IFS= read -r line; do
        # shellcheck disable=SC2086
        "$DLSTAGE" ${line#dlstage } >"$work/out" 2>&1 || fail "$line: $(cat "$work/out")"
    done <<<"$lines"
    unsquashfs -l "$work/p/data/imagenet.sqfs" | grep -q 'n02/57.jpg' || fail "the image lacks a file"
    # The second line's output is a prefix: /p/data/imagenet-000000.tar ...
    [ "$(ls "$work/p/data"/imagenet-*.tar | wc -l)" -eq 256 ] || fail "not 256 shards"
    [ -f "$work/p/data/imagenet-000000.tar" ] || fail "no imagenet-000000.tar"
}

@test "admin guide: the catalog scan and show lines, run as written for an imagenet of the catalog" {
    make_imagenet
    cat >"$work/dlstage.toml" <<TOML
[site]
state_dir    = "$work/state"
manifest_dir = "$work/manifests"
[tiers.shm]
path = "/dev/shm/dlstage/%j"
[datasets.imagenet]
source = "$work/p/data/imagenet"
tiers  = ["shm"]
TOML
    mkdir -p "$work/manifests"
    lines=$(admin_guide_lines '^dlstage catalog scan ')
    [ "$(wc -l <<<"$lines")" -eq 3 ] || fail "the catalog block: $lines"
    while IFS= read -r line; do
        # shellcheck disable=SC2086
        DLSTAGE_CONFIG="$work/dlstage.toml" "$DLSTAGE" ${line#dlstage } >"$work/out" 2>&1 || fail "$line: $(cat "$work/out")"
        echo "$line" >>"$work/all"
        cat "$work/out" >>"$work/all"
    done <<<"$lines"
    [ -s "$work/manifests/imagenet.manifest" ] || fail "no manifest_dir/imagenet.manifest"
    grep -Eq '^changed +no: ' "$work/all" || fail "show did not say 'changed  no': $(cat "$work/all")"
    python3 -c 'import json, sys; assert json.load(sys.stdin)["changes"] == 0' <"$work/out" || fail "--json: $(cat "$work/out")"
}
