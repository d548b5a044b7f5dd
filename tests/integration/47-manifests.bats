#!/usr/bin/env bats
# Manifests at submit and in the stager: a current manifest
# gives submit a tree's size without a walk and lets the stager plan
# without one; a stale one is reported and the walk used.  Three catalog
# trees are added to the cluster's configuration for this file only.

load helpers

CONFIG="$DLSTAGE_TEST_DIR/dlstage.toml"
DATA="$DLSTAGE_TEST_DIR/work/47-manifests-data"

setup_file() {
    cp -p "$CONFIG" "$CONFIG.before-47"
    rm -rf "$DATA"
    # mlocked: a directory the user may pass through (x) but not list (r):
    # a walk as the user fails there, a plan from the manifest does not.
    mkdir -p "$DATA/mlocked/closed" "$DATA/mstale/sub" "$DATA/mhuge" "$DATA/macl/sub"
    echo one >"$DATA/mlocked/open.txt"
    echo two >"$DATA/mlocked/closed/inside.txt"
    chmod 0711 "$DATA/mlocked/closed"
    echo three >"$DATA/mstale/sub/a.txt"
    # Larger than shm's max_bytes (80M) and sparse: only a manifest tells.
    truncate -s 100M "$DATA/mhuge/zeros.bin"
    # macl: a file its mode lets everyone read and an ACL keeps from the
    # job's user.  The plan trusts the mode (no access() per file, issue
    # 26); the read's open must still refuse it, naming the file.
    echo five >"$DATA/macl/a.txt"
    echo six >"$DATA/macl/sub/denied.txt"
    chmod -R a+rX "$DATA/mstale" "$DATA/mhuge" "$DATA/mlocked/open.txt" "$DATA/mlocked/closed/inside.txt" "$DATA/macl"
    setfacl -m "u:$VCLUSTER_USER:---" "$DATA/macl/sub/denied.txt"
    chmod 0755 "$DATA" "$DATA/mlocked"
    cat >>"$CONFIG" <<TOML

[datasets.mlocked]
source = "$DATA/mlocked"
tiers  = ["shm"]

[datasets.mstale]
source = "$DATA/mstale"
tiers  = ["shm"]

[datasets.mhuge]
source = "$DATA/mhuge"
tiers  = ["shm", "ssd"]

[datasets.macl]
source = "$DATA/macl"
tiers  = ["shm"]
TOML
    for ds in mlocked mstale mhuge; do
        "$DLSTAGE_BIN" --config "$CONFIG" catalog scan "$ds"
    done
}

teardown_file() {
    mv "$CONFIG.before-47" "$CONFIG"
    rm -f "$STATE"/manifests/m{locked,stale,huge}.manifest
    rm -rf "$DATA"
}

@test "a tree the user cannot walk stages from its manifest, with no walk" {
    # Without the manifest the walk fails on the unlistable directory; so a
    # pass here means nothing was walked.
    run as_user srun -N2 --stage-data=mlocked:shm bash -c 'cat "$DLSTAGE_MLOCKED/closed/inside.txt"'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"dlstage: mlocked: planned from its manifest (no walk of the source)"* ]]
    doc_says "$ADMIN_GUIDE" 'planned from its manifest' tree=mlocked <<<"$output"
    [ "$(grep -c '^two$' <<<"$output")" -eq 2 ]
    assert_healthy
}

@test "the same tree without its manifest fails in the walk (the test above can fail)" {
    mv "$STATE/manifests/mlocked.manifest" "$STATE/manifests/mlocked.manifest.away"
    run as_user srun -N1 --stage-data=mlocked:shm true
    mv "$STATE/manifests/mlocked.manifest.away" "$STATE/manifests/mlocked.manifest"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"cannot read $DATA/mlocked/closed: Permission denied"* ]]
}

@test "a stale manifest is reported, and the walk stages what is there now" {
    echo four >"$DATA/mstale/sub/new.txt"
    chmod a+r "$DATA/mstale/sub/new.txt"
    run as_user srun -N2 --stage-data=mstale:shm bash -c 'cat "$DLSTAGE_MSTALE/sub/new.txt"'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"dlstage: manifest of mstale is older than its source ($DATA/mstale/sub changed at "*"): planning from a walk; run 'dlstage catalog scan mstale'"* ]]
    doc_says "$ADMIN_GUIDE" "manifest of imagenet is older than its source \\(/p" imagenet=mstale <<<"$output"
    [[ "$output" != *"planned from its manifest"* ]]
    [ "$(grep -c '^four$' <<<"$output")" -eq 2 ]
}

@test "submit refuses a tree too large for the tier from its manifest's size" {
    run as_user sbatch --parsable -N1 --stage-data=mhuge:shm --wrap true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"allows at most 80"* ]]
    # The same tree fits ssd (no max_bytes): accepted.
    run as_user sbatch --parsable -N1 --stage-data=mhuge:ssd --wrap true
    [ "$status" -eq 0 ]
    scancel "${lines[-1]%%;*}" || true
}

@test "a manifest others can write is not believed at submit, said in one line" {
    chmod 0666 "$STATE/manifests/mhuge.manifest"
    run as_user sbatch --parsable -N1 --stage-data=mhuge:shm --hold --wrap true
    chmod 0644 "$STATE/manifests/mhuge.manifest"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"dlstage: not using the manifest of mhuge: manifest '$STATE/manifests/mhuge.manifest' is writable by group or others (mode 0666)"* ]]
    doc_says "$ADMIN_GUIDE" 'not using the manifest of' imagenet=mhuge <<<"$output"
    scancel "${lines[-1]%%;*}" || true
}

@test "a file only an ACL keeps from the user (its mode allows): the read refuses it, nothing left, no drain" {
    # Mode 0644 and the tree is walked without asking the kernel per file:
    # only the open in the transfer finds out.
    [ "$(stat -c %a "$DATA/macl/sub/denied.txt")" = 644 ]
    run as_user cat "$DATA/macl/sub/denied.txt"
    [ "$status" -ne 0 ]
    run as_user srun -N2 --stage-data=macl:shm true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"dlstage: staging macl to shm failed on n"*": cannot read $DATA/macl/sub/denied.txt: Permission denied"* ]]
    assert_no_leftovers
    assert_healthy
}
