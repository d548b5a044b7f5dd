#!/usr/bin/env bats
# The transcripts of the README, the guides and dlstage(1) that need
# Slurm, as written: each is read from the doc (tests/cli/doc-transcript)
# and compared with what the real sbatch or dlstage status prints on the
# test cluster.  The submission examples run against the guides' own little
# site: a copy of
# the cluster's slurm.conf whose plugstack.conf loads the same plugin with
# a configuration of two datasets, imagenet (a sparse 140 GiB file, so its
# size is known at submission) and coco (ssd only), on the tiers shm, ssd and
# scratch.  The examples that stage (the quick start, the shared tier, the
# node cache, dlstage(1)'s sbatch line) run on the test cluster itself,
# with its node count and tier names where the docs' differ.

load helpers

# block_of DOC FIRST_LINE_REGEX: the code block of DOC whose first line
# matches, without its fences.
block_of() {
    doc_transcript --block "$1" "$2"
}

# The by-hand cluster of testing.md's test goes also when that test fails
# midway: its daemons would outlive the run (issue 45), and a munged left
# running breaks the next cluster's authentication.
teardown() {
    [ ! -d "$DLSTAGE_TEST_DIR/by-hand" ] ||
        "$BATS_TEST_DIRNAME/../cluster/vcluster" down --dir "$DLSTAGE_TEST_DIR/by-hand" >/dev/null 2>&1 || true
}

setup_file() {
    local site="$DLSTAGE_TEST_DIR/readme-site"
    rm -rf "$site"
    mkdir -p "$site/data"
    chmod 0755 "$site" "$site/data"
    truncate -s 140G "$site/data/imagenet"
    truncate -s 1M "$site/data/coco"
    chmod 0644 "$site/data/imagenet" "$site/data/coco"
    cat >"$site/dlstage.toml" <<TOML
[site]
state_dir    = "$DLSTAGE_TEST_DIR/state"
default_tier = "shm"

[tiers.shm]
path = "/dev/shm/dlstage/%j"

[tiers.ssd]
path = "/local/dlstage/%j"

[tiers.scratch]
path    = "$DLSTAGE_TEST_DIR/scratch/readme/%u"
scope   = "shared"
cleanup = "keep"

[datasets.imagenet]
source      = "$site/data/imagenet"
tiers       = ["shm", "ssd", "scratch"]
description = "ILSVRC2012 train"

[datasets.coco]
source = "$site/data/coco"
tiers  = ["ssd"]
TOML
    echo "required $DLSTAGE_PLUGIN config=$site/dlstage.toml" >"$site/plugstack.conf"
    sed "s|^PlugStackConfig=.*|PlugStackConfig=$site/plugstack.conf|" "$SLURM_CONF" >"$site/slurm.conf"
    chmod 0644 "$site/dlstage.toml" "$site/plugstack.conf" "$site/slurm.conf"
}

# as_readme_user CMD...: as_user, with the guides' site (readme-site).
as_readme_user() {
    (cd "$(user_workdir)" && printf '#!/bin/sh\ntrue\n' >job.sh && cp job.sh train.sh && chmod 0644 job.sh train.sh &&
        runuser -u "$VCLUSTER_USER" -- env SLURM_CONF="$DLSTAGE_TEST_DIR/readme-site/slurm.conf" PATH="$PATH" "$@")
}

# same_transcript DOC COMMAND: COMMAND (as the doc writes it, run as the
# test user against the guides' site) prints what DOC shows, and submits
# nothing.
same_transcript() {
    local expected before
    expected=$(doc_transcript "$1" "$2") || { echo "$expected"; return 1; }
    before=$(job_ids)
    # shellcheck disable=SC2086
    run as_readme_user $2
    [ "$status" -ne 0 ] || { echo "exit 0: $output"; return 1; }
    [ "$output" = "$expected" ] || { printf 'prints:\n%s\ndoc shows:\n%s\n' "$output" "$expected"; return 1; }
    [ -z "$(new_job_ids "$before")" ]
}

# readme_training_dir DIR: the README's train.sh, `python` (Debian has
# python3), dlstage, and a train.py that says what it got, in DIR, the
# test user's.
readme_training_dir() {
    local dir=$1
    mkdir -p "$dir/bin"
    ln -sf /usr/bin/python3 "$dir/bin/python"
    ln -sf "$DLSTAGE_BIN" "$dir/bin/dlstage"
    block_of "$README" '^#!/bin/bash' >"$dir/train.sh"
    sed -n 2p "$dir/train.sh" | grep -qx '# train.sh'
    grep -q 'python train.py --data "$DLSTAGE_IMAGENET"' "$dir/train.sh"
    printf '%s\n' 'import os, sys' \
        'data = sys.argv[sys.argv.index("--data") + 1] if "--data" in sys.argv else os.environ["DLSTAGE_IMAGENET"]' \
        'n = sum(len(f) for _, _, f in os.walk(data))' \
        'staged = os.environ["DLSTAGE_DATASETS"]' \
        'print(f"train.py on {os.uname().nodename}: {data} holds {n} files; staged: {staged}")' \
        >"$dir/train.py"
    chown -R "$VCLUSTER_USER" "$dir"
}

# two_jobs_as_written DIR BLOCK_REGEX SED: the user guide's block of two sbatch
# lines (comments dropped, SED applied: this cluster's node count and
# tier names), from DIR: the "first job", and once it has ended the
# "later" one; sets first and second (job ids).
two_jobs_as_written() {
    local dir=$1 block line job
    block=$(doc_transcript --commands "$USER_GUIDE" "$2")
    [ "$(wc -l <<<"$block")" -eq 2 ] || { echo "no longer two lines: $block"; return 1; }
    first= second=
    while read -r line; do
        line=$(sed -E "$3" <<<"$line")
        run as_user env PATH="$dir/bin:$PATH" bash -c "cd '$dir' && $line"
        echo "$line: $output"
        [ "$status" -eq 0 ] || return 1
        job=${output##Submitted batch job }
        wait_job_gone "$job" 120
        if [ -z "$first" ]; then first=$job; else second=$job; fi
    done <<<"$block"
    cat "$dir/slurm-$first.out" "$dir/slurm-$second.out"
}

@test "user guide and spank-dlstage(8): an unknown dataset is refused at submission with the line shown" {
    same_transcript "$USER_GUIDE" 'sbatch --stage-data=imagnet job.sh'
    doc_says "$MAN8" "unknown dataset 'imagnet'" <<<"$output"
}

@test "user guide: a tier the dataset does not allow is refused with the line shown" {
    same_transcript "$USER_GUIDE" 'sbatch --stage-data=coco:shm job.sh'
}

@test "admin guide: a dataset larger than the job's memory on /dev/shm is refused with the line shown" {
    same_transcript "$ADMIN_GUIDE" 'sbatch --mem=64G --stage-data=imagenet:shm train.sh'
}

@test "user guide: sbatch --stage-data=help job.sh prints the header, the imagenet row's columns and the shm tier shown" {
    expected=$(doc_transcript "$USER_GUIDE" 'sbatch --stage-data=help job.sh')
    run as_readme_user sbatch --stage-data=help job.sh
    [ "$status" -eq 0 ]
    [ "$(sed -n 1p <<<"$output")" = "$(sed -n 1p <<<"$expected")" ]
    columns() { sed -E 's/ {2,}/|/g'; }
    [ "$(sed -n 2p <<<"$output" | columns)" = "$(sed -n 2p <<<"$expected" | columns)" ]
    # NAME, TIERS and DESCRIPTION of the row (FORMAT, SIZE and FILES are the
    # guide's tree, here a file).
    doc_row=$(grep '^imagenet ' <<<"$expected" | columns)
    row=$(grep '^imagenet ' <<<"$output" | columns)
    [ "$(cut -d'|' -f1,2 <<<"$row")|$(awk -F'|' '{print $NF}' <<<"$row")" = \
        "$(cut -d'|' -f1,2 <<<"$doc_row")|$(awk -F'|' '{print $NF}' <<<"$doc_row")" ] || { echo "$row / $doc_row"; false; }
    grep -qxF 'Tiers:' <<<"$output"
    grep -qxF "$(grep '^  shm: ' <<<"$expected")" <<<"$output"
}

@test "user guide and dlstage(1): dlstage status has the columns shown" {
    run as_user sbatch --parsable -N1 --stage-data=sample --wrap true
    [ "$status" -eq 0 ]
    job=${output%%;*}
    for _ in $(seq 60); do
        run as_user "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status -j "$job"
        [ "$status" -eq 0 ] && [ "$(wc -l <<<"$output")" -ge 2 ] && break
        sleep 1
    done
    header=$(head -n1 <<<"$output" | tr -s ' ')
    for doc in "$USER_GUIDE" "$MAN1"; do
        expected=$(doc_transcript "$doc" 'dlstage status')
        [ "$(head -n1 <<<"$expected" | tr -s ' ')" = "$header" ] || { echo "$doc: $expected / $header"; false; }
    done
}

@test "examples/pytorch/train.sbatch as written: imagenet staged to every node, one sharded epoch per task" {
    local dir out job
    dir=$(user_workdir)
    mkdir -p "$dir/examples/pytorch"
    cp "$BATS_TEST_DIRNAME/../../examples/pytorch/epoch.py" "$BATS_TEST_DIRNAME/../../examples/pytorch/train.sbatch" \
        "$dir/examples/pytorch/"
    chmod -R a+rX "$dir/examples"
    # The script's own request and options; only the resources are the test
    # cluster's (its nodes have 2 CPUs and little memory), given on the
    # command line, which takes precedence over #SBATCH lines.
    run sbatch_wait as_user sbatch --parsable --cpus-per-task=1 --mem=0 --time=5 --output="$dir/train.out" \
        examples/pytorch/train.sbatch
    job=${output%%;*}
    out=$(cat "$dir/train.out" 2>/dev/null)
    [ "$status" -eq 0 ] || { echo "sbatch: $output"; echo "$out"; false; }
    grep -q "^imagenet is at /dev/shm/dlstage/$job/imagenet on every node (staged: imagenet)$" <<<"$out" || { echo "$out"; false; }
    # Two tasks, each its share of the 24 images, decoded.
    [ "$(grep -cE '^epoch_s=[0-9.]+ images=12$' <<<"$out")" -eq 2 ] || { echo "$out"; false; }
    assert_healthy
}

@test "README: the quick start's commands, run line by line (3 nodes for 4, a test val.sqfs for the site's)" {
    local dir block script job
    dir=$(user_workdir)
    block=$(doc_transcript --commands "$README" '^dlstage catalog list')
    [ "$(wc -l <<<"$block")" -eq 6 ] || { echo "the quick start is no longer 6 lines: $block"; false; }
    # The test site: its 3 nodes, its squashfs image as the user's val.sqfs.
    readme_training_dir "$dir"
    mkdir -p "$dir/p/scratch/me"
    cp "$DLSTAGE_TEST_DIR/data/m/tree.sqfs" "$dir/p/scratch/me/val.sqfs"
    chown -R "$VCLUSTER_USER" "$dir"
    script=$(sed -E -e 's/-N4/-N3/g' -e "s|/p/scratch/me/val.sqfs|$dir/p/scratch/me/val.sqfs|g" <<<"$block")
    # The lines in order; salloc gets the next line on its shell's input.
    run as_user env PATH="$dir/bin:$PATH" DLSTAGE_CONFIG="$DLSTAGE_TEST_DIR/dlstage.toml" bash -c "
        set -e
        $(sed -n 1p <<<"$script") | grep -E '^imagenet +'
        for line in '$(sed -n 2p <<<"$script")' '$(sed -n 3p <<<"$script")'; do
            \$line | sed 's/^Submitted batch job /JOB /'
        done
        $(sed -n 4p <<<"$script")
        echo '$(sed -n 6p <<<"$script")' | $(sed -n 5p <<<"$script")
    "
    echo "$output"
    [ "$status" -eq 0 ]
    grep -Eq '^imagenet +' <<<"$output"
    # srun: on each of 3 nodes, before its task.
    [ "$(grep -cE '^train.py on n[123]: /dev/shm/dlstage/[0-9]+/imagenet holds 24 files; staged: imagenet$' <<<"$output")" -eq 3 ]
    # salloc's dlstage stage staged it.
    grep -Eq 'dlstage: staged imagenet to shm on 3 nodes' <<<"$output"
    # Both batch jobs ran train.sh with their data.
    for job in $(sed -n 's/^JOB //p' <<<"$output"); do
        wait_job_gone "$job" 120
        out=$(cat "$dir/slurm-$job.out")
        grep -Eq "^train.py on n[123]: /dev/shm/dlstage/$job/imagenet holds 24 files; staged: imagenet(,val)?$" <<<"$out" || { echo "$job: $out"; false; }
    done
    grep -q "staged: imagenet,val" "$dir"/slurm-*.out
    assert_healthy
}

@test "admin guide: check-config --explain of the site example with its two overrides, for alice in group vision (dlstest here)" {
    local config="$DLSTAGE_TEST_DIR/readme-site/explain.toml" expected
    # The admin guide's site example and its overrides example, as one
    # file: the line numbers the transcript names.
    { block_of "$ADMIN_GUIDE" '^\[site\]$' && echo && block_of "$ADMIN_GUIDE" '^\[\[overrides\]\]$'; } >"$config"
    chmod 0644 "$config"
    expected=$(doc_transcript "$ADMIN_GUIDE" 'dlstage check-config --explain --partition gpu --user alice')
    run as_user env DLSTAGE_CONFIG="$config" "$DLSTAGE_BIN" check-config --explain --partition gpu --user "$VCLUSTER_USER"
    [ "$status" -eq 0 ]
    output=$(sed -e "s|$config|/etc/dlstage/dlstage.toml|" -e "s/user=$VCLUSTER_USER, groups=$VCLUSTER_USER,/user=alice, groups=alice,/" <<<"$output")
    [ "$output" = "$expected" ] || { printf 'prints:\n%s\ndoc shows:\n%s\n' "$output" "$expected"; false; }
}

@test "user guide: the shared-tier example (3 nodes for 8): the first job copies once, the next reuses the copy" {
    local dir copy="$DLSTAGE_TEST_DIR/scratch/dlstage/$VCLUSTER_USER"
    dir=$(user_workdir)
    readme_training_dir "$dir"
    forget_kept_copy "$copy" imagenet
    two_jobs_as_written "$dir" '^sbatch -N8 --stage-data=imagenet:scratch' 's/-N8/-N3/'
    doc_says "$USER_GUIDE" 'staged imagenet to scratch' <"$dir/slurm-$first.out"
    doc_says "$USER_GUIDE" 'imagenet: reused the copy' <"$dir/slurm-$second.out"
    grep -q "^train.py on n[123]: $copy/imagenet holds 24 files; staged: imagenet$" "$dir/slurm-$second.out"
    ! grep -q "staged imagenet" "$dir/slurm-$second.out" || false
    assert_healthy
}

@test "user guide: the node-cache example (3 nodes for 4, its ssd is cache here): the second job hits on every node" {
    local dir entry=/local/dlcache/.cache/$VCLUSTER_USER
    dir=$(user_workdir)
    readme_training_dir "$dir"
    forget_kept_copy "$entry" imagenet n1 n2 n3
    two_jobs_as_written "$dir" '^sbatch -N4 --stage-data=imagenet:ssd' 's/-N4/-N3/; s/imagenet:ssd/imagenet:cache/'
    grep -q "staged imagenet to cache on 3 nodes" "$dir/slurm-$first.out"
    doc_says "$USER_GUIDE" 'imagenet: cache hit on 4 of 4' <"$dir/slurm-$second.out"
    grep -q "cache hit on 3 of 3 nodes" "$dir/slurm-$second.out"
    grep -q "^train.py on n[123]: $entry/imagenet holds 24 files; staged: imagenet$" "$dir/slurm-$second.out"
    forget_kept_copy "$entry" imagenet n1 n2 n3   # the cache as 54-cache left it
    assert_healthy
}

@test "testing.md: the test cluster by hand, line by line (in a directory of this test for /tmp/vc)" {
    local first='^eval "\$\(tests/cluster/vcluster up ' block script plugin dir="$DLSTAGE_TEST_DIR/by-hand" ctlds
    rm -rf "$dir"
    block=$(block_of "$TESTING_DOC" "$first")
    [ "$(wc -l <<<"$block")" -eq 4 ] || { echo "no longer 4 lines: $block"; false; }
    grep -q '# n1 n2 n3$' <<<"$block"   # what the test checks below
    # The plugin as the doc's line names it (_build in the checkout) is
    # loaded by the test user's srun: a checkout under a private (0700)
    # directory is out of its reach, so a readable copy stands in for it.
    plugin="$DLSTAGE_TEST_DIR/by-hand-plugin/dlstage.so"
    install -D -m 0755 "$BATS_TEST_DIRNAME/../../_build/dlstage.so" "$plugin"
    chmod 0755 "$(dirname "$plugin")"
    script=$(doc_transcript --commands "$TESTING_DOC" "$first" | sed -E "s|/tmp/vc\\b|$dir|g; s|\\\$PWD/_build/dlstage\\.so|$plugin|g")
    grep -qF -- "--plugin $plugin" <<<"$script" || { echo "the doc's line no longer names \$PWD/_build/dlstage.so: $script"; false; }
    live_slurmctlds() { ps -C slurmctld -o stat= | grep -vc '^Z'; }  # a zombie has stopped too
    ctlds=$(live_slurmctlds)
    # From the source tree, whose _build the doc's line names; the
    # second cluster's own SLURM_CONF, not this one's.
    run env -u SLURM_CONF -u VCLUSTER_DIR bash -ec "cd '$BATS_TEST_DIRNAME/../..' && $script"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -xE 'n[123]' <<<"$output" | sort | tr '\n' ' ')" = "n1 n2 n3 " ]
    grep -q "^vcluster: down: $dir$" <<<"$output"
    for _ in $(seq 50); do [ "$(live_slurmctlds)" -eq "$ctlds" ] && break; sleep 0.2; done
    [ "$(live_slurmctlds)" -eq "$ctlds" ] || { pgrep -a slurmctld; false; }
    assert_healthy   # this cluster did not notice
}

@test "dlstage(1): its sbatch line as written: imagenet in /dev/shm on the 3 nodes before job.sh" {
    local dir line job
    dir=$(user_workdir)
    printf '%s\n' '#!/bin/sh' 'srun -N3 sh -c '"'"'echo "$(hostname) $DLSTAGE_IMAGENET $(find "$DLSTAGE_IMAGENET" -type f | wc -l)"'"'" >"$dir/job.sh"
    chown "$VCLUSTER_USER" "$dir/job.sh"
    line=$(doc_transcript --block "$MAN1" '^sbatch -N3 --stage-data=imagenet:shm job.sh$')
    [ "$(wc -l <<<"$line")" -eq 1 ]
    run as_user bash -c "cd '$dir' && $line"
    echo "$output"
    [ "$status" -eq 0 ]
    job=${output##Submitted batch job }
    wait_job_gone "$job" 120
    cat "$dir/slurm-$job.out"
    [ "$(grep -cE "^n[123] /dev/shm/dlstage/$job/imagenet 24$" "$dir/slurm-$job.out")" -eq 3 ]
    [ "$(job_state "$job")" = COMPLETED ]
}

@test "spank-dlstage(8): this cluster runs with its plugstack.conf line's form and its PrologFlags line" {
    local line
    line=$(doc_transcript --block "$MAN8" '^required .*/dlstage.so config=')
    [ "$(wc -l <<<"$line")" -eq 1 ]
    # the man page's paths are a Debian site's; check-packages holds them to the package
    read -r kind plugin config <<<"$line"
    [ "$kind" = required ] && [[ $plugin == /*/dlstage.so ]] && [[ $config == config=/etc/dlstage/dlstage.toml ]]
    grep -qE "^required $DLSTAGE_PLUGIN config=$DLSTAGE_TEST_DIR/dlstage.toml( |$)" "$VCLUSTER_DIR/plugstack.conf"
    line=$(doc_transcript --block "$MAN8" 'PrologFlags=')
    grep -qxF "$(sed 's/^ *//' <<<"$line")" "$SLURM_CONF"
}
