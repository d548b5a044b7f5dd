#!/bin/sh
# dlstage pack: tar shards that extract back to the tree, keep samples
# together and balance sizes; a squashfs image; refusing to overwrite; bad
# input; devices and fifos.
. "${top_srcdir:-.}/tests/cli/lib.sh"
set -e

# 3 classes x 20 samples (a .jpg of 1-50 KB and a .cls), a symlink, an
# empty directory and a few modes that must survive.
src="$work/src"
mkdir -p "$src/empty"
awk 'BEGIN { srand(7); for (i = 0; i < 60; i++) print int(1024 + rand() * 50 * 1024) }' >"$work/sizes"
i=0
for cls in n01 n02 n03; do
    mkdir "$src/$cls"
    for s in $(seq 10 29); do
        i=$((i + 1))
        head -c "$(sed -n "${i}p" "$work/sizes")" /dev/urandom >"$src/$cls/${cls}_$s.jpg"
        echo "$cls" >"$src/$cls/${cls}_$s.cls"
    done
done
ln -s n01/n01_10.jpg "$src/latest.jpg"
chmod 750 "$src/n02"
chmod 600 "$src/n03/n03_10.jpg"

# A tree's content and modes, for comparing with what comes back.
listing() { (cd "$1" && find . -mindepth 1 -printf '%p %m %y %l\n' | LC_ALL=C sort); }
same_tree() {
    diff -r "$src" "$1" >/dev/null || fail "$2: content differs"
    [ "$(listing "$src")" = "$(listing "$1")" ] || fail "$2: names, modes or types differ"
}
# Members of a shard that are not directories, as sample names.
samples_in() { tar -tf "$1" | grep -v '/$' | sed 's/\.[^/]*$//' | LC_ALL=C sort -u; }
size_of() { wc -c <"$1" | tr -d ' '; }

run pack --help
expect_status 0 "pack --help"
expect_out "Usage: dlstage pack [--format squashfs|tar]" "pack --help"

# --- tar shards --------------------------------------------------------------
mkdir "$work/shards"
run pack --shards 4 "$src" "$work/shards/ds"
expect_status 0 "pack --shards 4"
expect_err "dlstage: packed 121 files (" "pack summary"
expect_err "into 4 shards of " "pack summary"
[ "$(ls "$work/shards")" = "$(printf 'ds-00000%s.tar\n' 0 1 2 3)" ] || fail "4 shards: $(ls "$work/shards")"

mkdir "$work/x"
for shard in "$work/shards"/ds-*.tar; do tar -xf "$shard" -C "$work/x"; done
same_tree "$work/x" "all shards extracted"

# Every sample in one shard; every class in every shard.
for shard in "$work/shards"/ds-*.tar; do samples_in "$shard"; done >"$work/samples"
[ "$(wc -l <"$work/samples")" -eq 61 ] || fail "61 samples (60 and the symlink): $(wc -l <"$work/samples")"
[ -z "$(sort "$work/samples" | uniq -d)" ] || fail "samples split: $(sort "$work/samples" | uniq -d)"
for shard in "$work/shards"/ds-*.tar; do
    [ "$(samples_in "$shard" | grep -c '^n0[123]/')" -ge 3 ] || fail "$shard: too few samples"
    [ "$(tar -tf "$shard" | grep -c '^n0[123]/$')" -eq 3 ] || fail "$shard: not every class"
done

# Balanced: shards differ by at most one sample (up to 50 KiB of .jpg with
# headers, 1 KiB of .cls and the class directory: 52 KiB) and 1 KiB of
# estimated headers.
largest=0 smallest=999999999
for shard in "$work/shards"/ds-*.tar; do
    bytes=$(size_of "$shard")
    if [ "$bytes" -gt "$largest" ]; then largest=$bytes; fi
    if [ "$bytes" -lt "$smallest" ]; then smallest=$bytes; fi
done
[ $((largest - smallest)) -le $((53 * 1024)) ] || fail "unbalanced: $smallest..$largest bytes"

# The same tree gives the same bytes.
mkdir "$work/again"
run pack --shards 4 "$src" "$work/again/ds"
for n in 0 1 2 3; do
    cmp -s "$work/shards/ds-00000$n.tar" "$work/again/ds-00000$n.tar" || fail "shard $n differs between runs"
done

run pack --shards 4 "$src" "$work/shards/ds"
expect_status 1 "pack over existing shards"
expect_err "dlstage: $work/shards/ds-000000.tar exists; use --force to replace it" "pack over existing shards"

# --force with fewer shards also removes the old ones beyond them.
run pack --force --shards 2 "$src" "$work/shards/ds"
expect_status 0 "pack --force"
[ "$(ls "$work/shards")" = "$(printf 'ds-00000%s.tar\n' 0 1)" ] || fail "--force: $(ls "$work/shards")"

run pack --force --shards 100 "$src" "$work/shards/ds"
expect_status 0 "more shards than samples"
expect_err "holds only 62 samples: writing 62 shards instead of 100" "more shards than samples"

run pack --force --shard-size 200K "$src" "$work/shards/ds"
expect_status 0 "pack --shard-size"
for shard in "$work/shards"/ds-*.tar; do
    [ "$(size_of "$shard")" -le 204800 ] || fail "$shard above --shard-size 200K"
done

# --- squashfs --------------------------------------------------------------------
if command -v mksquashfs >/dev/null && command -v unsquashfs >/dev/null; then
    run pack "$src" "$work/ds.sqfs"
    expect_status 0 "pack squashfs"
    expect_err "dlstage: packed 121 files (" "pack squashfs summary"
    expect_err "of the input)" "pack squashfs summary"
    unsquashfs -no-progress -d "$work/sq" "$work/ds.sqfs" >/dev/null
    same_tree "$work/sq" "unsquashfs"
    run pack "$src" "$work/ds.sqfs"
    expect_status 1 "squashfs over an existing image"
    expect_err "dlstage: $work/ds.sqfs exists; use --force to replace it" "squashfs over an existing image"
    run pack --force --block-size 64K "$src" "$work/ds.sqfs"
    expect_status 0 "squashfs --force"
    [ -z "$(ls "$work" | grep '\.tmp\.')" ] || fail "temporary left: $(ls "$work")"
else
    echo "mksquashfs or unsquashfs missing: squashfs checks skipped" >&2
fi

# --- bad input -------------------------------------------------------------------
run pack "$work/missing" "$work/o"
expect_status 1 "DIR missing"
expect_err "dlstage: cannot read '$work/missing': No such file or directory" "DIR missing"

run pack "$src/n01/n01_10.cls" "$work/o"
expect_status 1 "DIR a file"
expect_err "is not a directory" "DIR a file"

run pack "$src" "$work/nowhere/o"
expect_status 1 "OUT's directory missing"
expect_err "directory '$work/nowhere' does not exist" "OUT's directory missing"

run pack --shards 0 "$src" "$work/o"
expect_status 2 "--shards 0"
expect_err "dlstage: pack: --shards: invalid value '0': expected a whole number from 1 to 1000000" "--shards 0"
expect_err "Try 'dlstage pack --help'" "--shards 0"

for bad in 4x -1 1e3 +4 99999999999999999999; do
    run pack --shards "$bad" "$src" "$work/o"
    expect_status 2 "--shards $bad"
    expect_err "dlstage: pack: --shards: invalid value '$bad': expected a whole number from 1 to 1000000" "--shards $bad"
done
run pack --shard-size 1e3 "$src" "$work/o"
expect_status 2 "--shard-size 1e3"
expect_err "dlstage: pack: --shard-size: invalid size '1e3': unknown unit 'e3'" "--shard-size 1e3"
run pack --block-size=-128K "$src" "$work/o.sqfs"
expect_status 2 "--block-size -128K"
expect_err "dlstage: pack: --block-size: invalid size '-128K'" "--block-size -128K"

run pack --bogus "$src" "$work/o"
expect_status 2 "unknown option"
expect_err "dlstage: pack: unknown option '--bogus'" "unknown option"

run pack --shards 2 "$src" "$work/o.sqfs"
expect_status 2 "--shards with squashfs"

run pack "$src"
expect_status 2 "OUT missing"

mkdir "$work/fifo-out"
cp -R "$src" "$work/with-fifo"
mkfifo "$work/with-fifo/n02/n02_99.jpg"
run pack --shards 4 "$work/with-fifo" "$work/fifo-out/ds"
expect_status 1 "a fifo in DIR"
expect_err "dlstage: '$work/with-fifo/n02/n02_99.jpg' is a fifo" "a fifo in DIR"
[ -z "$(ls "$work/fifo-out")" ] || fail "output left after a failure: $(ls "$work/fifo-out")"

finish
