#!/usr/bin/env bats
# dlstage pack: tar shards that extract back to the tree, keep samples
# together and balance sizes; a squashfs image; refusing to overwrite; bad
# input; devices and fifos.
load helpers

# The input, made once for the file: 3 classes x 20 samples (a .jpg of 1-50
# KB and a .cls), a symlink, an empty directory and a few modes that must
# survive.
setup_file() {
    input=$(mktemp -d /tmp/dlstage-cli-pack-XXXXXX)
    export input src="$input/src"
    mkdir -p "$src/empty"
    awk 'BEGIN { srand(7); for (i = 0; i < 60; i++) print int(1024 + rand() * 50 * 1024) }' >"$input/sizes"
    local i=0 cls s
    for cls in n01 n02 n03; do
        mkdir "$src/$cls"
        for s in $(seq 10 29); do
            i=$((i + 1))
            head -c "$(sed -n "${i}p" "$input/sizes")" /dev/urandom >"$src/$cls/${cls}_$s.jpg"
            echo "$cls" >"$src/$cls/${cls}_$s.cls"
        done
    done
    ln -s n01/n01_10.jpg "$src/latest.jpg"
    chmod 750 "$src/n02"
    chmod 600 "$src/n03/n03_10.jpg"
}
teardown_file() { rm -rf "$input"; }

# A tree's content and modes, for comparing with what comes back.
listing() { (cd "$1" && find . -mindepth 1 -printf '%p %m %y %l\n' | LC_ALL=C sort); }
same_tree() {
    diff -r "$src" "$1" >/dev/null || fail "$2: content differs"
    [ "$(listing "$src")" = "$(listing "$1")" ] || fail "$2: names, modes or types differ"
}
# Members of a shard that are not directories, as sample names.
samples_in() { tar -tf "$1" | grep -v '/$' | sed 's/\.[^/]*$//' | LC_ALL=C sort -u; }
size_of() { wc -c <"$1" | tr -d ' '; }
# pack_four: the input packed into 4 shards $work/shards/ds-00000[0-3].tar.
pack_four() {
    mkdir -p "$work/shards"
    run_dlstage pack --shards 4 "$src" "$work/shards/ds"
    expect_status 0
}

@test "progress lines while packing, and the time and rate at the end (tar and squashfs)" {
    mkdir -p "$work/big/d" "$work/big-shards"
    for i in $(seq 1 40); do head -c 8M /dev/zero >"$work/big/d/f$i.bin"; done
    DLSTAGE_PROGRESS=0.1 run_dlstage pack --shards 2 "$work/big" "$work/big-shards/x"
    expect_status 0
    grep -Eq '^dlstage: pack: [0-9.]+ [KMG]iB of 320\.0 MiB \([0-9]+%\), [0-9]+ of 40 files, [0-9.]+ GB/s' <<<"$err" ||
        fail "no progress line"
    grep -Eq '^dlstage: packed 40 files \(320\.0 MiB\) into 2 shards of .* in [0-9.]+ s \([0-9.]+ GB/s\)$' <<<"$err" ||
        fail "no summary with time and rate"
    doc_says man/dlstage.1 '^dlstage: packed .* shards' <<<"$err" || fail "dlstage(1) shows another summary"
    doc_says docs/admin-guide.md '^dlstage: packed .* shards' <<<"$err" || fail "the admin guide shows another summary"
    DLSTAGE_PROGRESS=0.1 run_dlstage pack "$work/big" "$work/big.sqfs"
    expect_status 0
    grep -Eq '^dlstage: packed 40 files \(320\.0 MiB\) into .*big\.sqfs \(.*\) in [0-9.]+ s \([0-9.]+ GB/s\)$' <<<"$err" ||
        fail "no squashfs summary with time and rate"
    DLSTAGE_PROGRESS=0 run_dlstage pack "$work/big" "$work/big2.sqfs"
    expect_status 1
    expect_err "dlstage: DLSTAGE_PROGRESS: invalid value '0': expected a number of seconds from 0.1 to 86400"
    [ ! -e "$work/big2.sqfs" ] || fail "an image made despite the bad value"
}

@test "pack --help" {
    run_dlstage pack --help
    expect_status 0
    expect_out "Usage: dlstage pack [--format squashfs|tar]"
}

# --- tar shards --------------------------------------------------------------
@test "4 shards that, all extracted, give the tree back" {
    pack_four
    expect_err "dlstage: packed 121 files ("
    expect_err "into 4 shards of "
    [ "$(ls "$work/shards")" = "$(printf 'ds-00000%s.tar\n' 0 1 2 3)" ] || fail "4 shards: $(ls "$work/shards")"
    mkdir "$work/x"
    for shard in "$work/shards"/ds-*.tar; do tar -xf "$shard" -C "$work/x"; done
    same_tree "$work/x" "all shards extracted"
}

@test "every sample in one shard, every class in every shard" {
    pack_four
    for shard in "$work/shards"/ds-*.tar; do samples_in "$shard"; done >"$work/samples"
    [ "$(wc -l <"$work/samples")" -eq 61 ] || fail "61 samples (60 and the symlink): $(wc -l <"$work/samples")"
    [ -z "$(sort "$work/samples" | uniq -d)" ] || fail "samples split: $(sort "$work/samples" | uniq -d)"
    for shard in "$work/shards"/ds-*.tar; do
        [ "$(samples_in "$shard" | grep -c '^n0[123]/')" -ge 3 ] || fail "$shard: too few samples"
        [ "$(tar -tf "$shard" | grep -c '^n0[123]/$')" -eq 3 ] || fail "$shard: not every class"
    done
}

# Balanced: shards differ by at most one sample (up to 50 KiB of .jpg with
# headers, 1 KiB of .cls and the class directory: 52 KiB) and 1 KiB of
# estimated headers.
@test "shards balanced in size" {
    pack_four
    largest=0 smallest=999999999
    for shard in "$work/shards"/ds-*.tar; do
        bytes=$(size_of "$shard")
        if [ "$bytes" -gt "$largest" ]; then largest=$bytes; fi
        if [ "$bytes" -lt "$smallest" ]; then smallest=$bytes; fi
    done
    [ $((largest - smallest)) -le $((53 * 1024)) ] || fail "unbalanced: $smallest..$largest bytes"
}

@test "the same tree gives the same bytes" {
    pack_four
    mkdir "$work/again"
    run_dlstage pack --shards 4 "$src" "$work/again/ds"
    for n in 0 1 2 3; do
        cmp -s "$work/shards/ds-00000$n.tar" "$work/again/ds-00000$n.tar" || fail "shard $n differs between runs"
    done
}

@test "existing shards are not overwritten" {
    pack_four
    run_dlstage pack --shards 4 "$src" "$work/shards/ds"
    expect_status 1
    expect_err "dlstage: $work/shards/ds-000000.tar exists; use --force to replace it"
}

@test "--force with fewer shards also removes the old ones beyond them" {
    pack_four
    run_dlstage pack --force --shards 2 "$src" "$work/shards/ds"
    expect_status 0
    [ "$(ls "$work/shards")" = "$(printf 'ds-00000%s.tar\n' 0 1)" ] || fail "--force: $(ls "$work/shards")"
}

@test "more shards than samples: one shard a sample" {
    pack_four
    run_dlstage pack --force --shards 100 "$src" "$work/shards/ds"
    expect_status 0
    expect_err "holds only 62 samples: writing 62 shards instead of 100"
}

@test "--shard-size bounds every shard" {
    pack_four
    run_dlstage pack --force --shard-size 200K "$src" "$work/shards/ds"
    expect_status 0
    for shard in "$work/shards"/ds-*.tar; do
        [ "$(size_of "$shard")" -le 204800 ] || fail "$shard above --shard-size 200K"
    done
}

# --- squashfs --------------------------------------------------------------------
needs_squashfs_tools() {
    command -v mksquashfs >/dev/null && command -v unsquashfs >/dev/null ||
        skip "mksquashfs or unsquashfs missing"
}

@test "a squashfs image that unsquashfs gives the tree back" {
    needs_squashfs_tools
    run_dlstage pack "$src" "$work/ds.sqfs"
    expect_status 0
    expect_err "dlstage: packed 121 files ("
    expect_err "of the input)"
    unsquashfs -no-progress -d "$work/sq" "$work/ds.sqfs" >/dev/null
    same_tree "$work/sq" "unsquashfs"
}

@test "an existing image is not overwritten; --force replaces it, leaving no temporary" {
    needs_squashfs_tools
    run_dlstage pack "$src" "$work/ds.sqfs"
    expect_status 0
    run_dlstage pack "$src" "$work/ds.sqfs"
    expect_status 1
    expect_err "dlstage: $work/ds.sqfs exists; use --force to replace it"
    run_dlstage pack --force --block-size 64K "$src" "$work/ds.sqfs"
    expect_status 0
    [ -z "$(ls "$work" | grep '\.tmp\.')" ] || fail "temporary left: $(ls "$work")"
}

# --- bad input -------------------------------------------------------------------
@test "DIR missing" {
    run_dlstage pack "$work/missing" "$work/o"
    expect_status 1
    expect_err "dlstage: cannot read $work/missing: No such file or directory"
}

@test "DIR a file" {
    run_dlstage pack "$src/n01/n01_10.cls" "$work/o"
    expect_status 1
    expect_err "is not a directory"
}

@test "OUT's directory missing" {
    run_dlstage pack "$src" "$work/nowhere/o"
    expect_status 1
    expect_err "directory '$work/nowhere' does not exist"
}

@test "--shards 0 is a usage error" {
    run_dlstage pack --shards 0 "$src" "$work/o"
    expect_status 2
    expect_err "dlstage: pack: --shards: invalid value '0': expected a whole number from 1 to 1000000"
    expect_err "Usage: dlstage pack [--format squashfs|tar]"
}

@test "malformed --shards are usage errors" {
    for bad in 4x -1 1e3 +4 99999999999999999999; do
        run_dlstage pack --shards "$bad" "$src" "$work/o"
        expect_status 2
        expect_err "dlstage: pack: --shards: invalid value '$bad': expected a whole number from 1 to 1000000"
    done
}

@test "--shard-size 1e3 is a usage error" {
    run_dlstage pack --shard-size 1e3 "$src" "$work/o"
    expect_status 2
    expect_err "dlstage: pack: --shard-size: invalid size '1e3': unknown unit 'e3'"
}

@test "--block-size -128K is a usage error" {
    run_dlstage pack --block-size=-128K "$src" "$work/o.sqfs"
    expect_status 2
    expect_err "dlstage: pack: --block-size: invalid size '-128K'"
}

@test "an unknown option is a usage error" {
    run_dlstage pack --bogus "$src" "$work/o"
    expect_status 2
    expect_err "dlstage: pack: unknown option '--bogus'"
}

@test "--shards with a squashfs OUT is a usage error" {
    run_dlstage pack --shards 2 "$src" "$work/o.sqfs"
    expect_status 2
}

@test "OUT missing is a usage error" {
    run_dlstage pack "$src"
    expect_status 2
}

@test "a fifo in DIR fails, leaving no output" {
    mkdir "$work/fifo-out"
    cp -R "$src" "$work/with-fifo"
    mkfifo "$work/with-fifo/n02/n02_99.jpg"
    run_dlstage pack --shards 4 "$work/with-fifo" "$work/fifo-out/ds"
    expect_status 1
    expect_err "dlstage: '$work/with-fifo/n02/n02_99.jpg' is a fifo"
    [ -z "$(ls "$work/fifo-out")" ] || fail "output left after a failure: $(ls "$work/fifo-out")"
}
