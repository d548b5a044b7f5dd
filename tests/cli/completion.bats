#!/usr/bin/env bats
# Bash completion (etc/bash_completion.d/dlstage): subcommands, options, and
# the catalog's dataset and tier names, as bash would ask for them.
load helpers

setup() {
    make_work
    mkdir -p "$work/tree"
    printf 'abc' > "$work/tree/f"
    cat > "$work/dlstage.toml" <<TOML
[tiers.shm]
path = "/dev/shm/dlstage/%j"
[tiers.ssd]
path = "/local/dlstage/%j"
[datasets.imagenet]
source = "$work/tree"
tiers = ["shm", "ssd"]
[datasets.imagenet-val]
source = "$work/tree"
tiers = ["ssd"]
[datasets.coco]
source = "$work/tree"
tiers = ["shm"]
TOML
}

# complete WORDS...: what _dlstage offers for the last word (the command
# line so far), one per line, sorted.  dlstage is the build's, and the
# configuration the test's.
complete_words() {
    out=$(PATH="$top_builddir:$PATH" DLSTAGE_CONFIG="$work/dlstage.toml" bash -c '
        source "$1/etc/bash_completion.d/dlstage"
        shift
        COMP_WORDS=("$@")
        COMP_CWORD=$(($# - 1))
        _dlstage
        printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$top_srcdir" "$@")
}

@test "completion: subcommands, and global options" {
    complete_words dlstage st
    [ "$out" = "$(printf 'stage\nstatus')" ] || fail "st: $out"
    complete_words dlstage --v
    [ "$out" = "--version" ] || fail "--v: $out"
    complete_words dlstage c
    [ "$out" = "$(printf 'catalog\ncheck-config')" ] || fail "c: $out"
    complete_words dlstage pr
    [ "$out" = "prefetch" ] || fail "pr: $out"
}

@test "completion: dataset names, and NAME:TIER with the tiers the catalog allows" {
    complete_words dlstage stage ima
    [ "$out" = "$(printf 'imagenet\nimagenet-val')" ] || fail "stage ima: $out"
    complete_words dlstage stage imagenet:
    [ "$out" = "$(printf 'imagenet:shm\nimagenet:ssd')" ] || fail "stage imagenet: $out"
    complete_words dlstage stage coco:s
    [ "$out" = "coco:shm" ] || fail "stage coco:s: $out"
    complete_words dlstage catalog show c
    [ "$out" = "coco" ] || fail "catalog show c: $out"
    complete_words dlstage status --dataset imagenet-
    [ "$out" = "imagenet-val" ] || fail "status --dataset: $out"
    complete_words dlstage prefetch co
    [ "$out" = "coco" ] || fail "prefetch co: $out"
}

@test "completion: a subcommand's options and their values" {
    complete_words dlstage status --no
    [ "$out" = "$(printf -- '--node\n--noheader')" ] || fail "status --no: $out"
    complete_words dlstage status -t ca
    [ "$out" = "cache-hit" ] || fail "status -t: $out"
    complete_words dlstage pack --format s
    [ "$out" = "squashfs" ] || fail "pack --format: $out"
    complete_words dlstage catalog l
    [ "$out" = "list" ] || fail "catalog l: $out"
    complete_words dlstage gc --tier s
    [ "$out" = "$(printf 'shm\nssd')" ] || fail "gc --tier: $out"
}

@test "completion: the --config on the line is the catalog asked" {
    sed 's/datasets.coco/datasets.other/' "$work/dlstage.toml" > "$work/other.toml"
    complete_words dlstage --config "$work/other.toml" stage o
    [ "$out" = "other" ] || fail "with --config: $out"
}
