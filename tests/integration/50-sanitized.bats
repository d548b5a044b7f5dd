#!/usr/bin/env bats
# The staging path built with ASan and UBSan (configure --enable-sanitizers;
# scripts/test installs that build and sets DLSTAGE_SAN_BIN to its bin
# directory): dlstage stage and dlstage-stager on 3 nodes, as the test
# user, through salloc and srun like any job.  A sanitizer report stops the
# program that made it and its text reaches the output, so staging must
# succeed with none.  The plugin (never sanitized: slurmd loads it) is the
# cluster's usual one.

load helpers

# srun passes the environment to the ranks.  detect_leaks=0: Open MPI leaks
# at exit, in components it has dlclose'd, whose stacks no suppression can
# match; dlstage's own leaks are checked by make check in the sanitizer build.
SAN_ENV=(ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
SAN_REPORT='AddressSanitizer|LeakSanitizer|runtime error:'

setup_file() {
    [ -n "${DLSTAGE_SAN_BIN:-}" ] || {
        echo "DLSTAGE_SAN_BIN is not set: run through scripts/test, which builds _build-san and sets it" >&2
        return 1
    }
}

# no_sanitizer_report: $output holds no report.
no_sanitizer_report() {
    if grep -Eq "$SAN_REPORT" <<<"$output"; then
        echo "sanitizer report in the output"
        return 1
    fi
}

@test "DLSTAGE_SAN_BIN holds a dlstage and a dlstage-stager built with ASan and UBSan" {
    # The stager as installed: PREFIX/libexec/dlstage beside PREFIX/bin.
    for program in dlstage ../libexec/dlstage/dlstage-stager; do
        ldd "$DLSTAGE_SAN_BIN/$program" | grep -q 'libasan\.so'
        ldd "$DLSTAGE_SAN_BIN/$program" | grep -q 'libubsan\.so'
    done
}

@test "sanitized: salloc stages a tree, extracted shards and an extracted image on 3 nodes, with no report" {
    run as_user env "${SAN_ENV[@]}" salloc -N3 --stage-data=tree:shm,shards-x:ssd,image-x:ssd bash -c \
        "$DLSTAGE_SAN_BIN/dlstage stage && srun -N3 bash -c 'echo \$(hostname) \$($DIGEST \$DLSTAGE_TREE) \$($DIGEST \$DLSTAGE_SHARDS_X) \$($DIGEST \$DLSTAGE_IMAGE_X)'"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q '^dlstage: staged tree to shm on 3 nodes ' <<<"$output"
    grep -q '^dlstage: staged shards-x to ssd on 3 nodes ' <<<"$output"
    grep -q '^dlstage: staged image-x to ssd on 3 nodes ' <<<"$output"
    no_sanitizer_report
    want=$("$DIGEST" "$DATA/tree")
    each_node_says "$output" "$want $want $want"
}

@test "sanitized: a malformed knob is refused with one line before anything is launched" {
    run as_user env "${SAN_ENV[@]}" DLSTAGE_WINDOW=4x salloc -N1 --stage-data=tree:shm \
        bash -c "$DLSTAGE_SAN_BIN/dlstage stage; echo \"stage exit \$?\""
    echo "$output"
    grep -qx "dlstage: DLSTAGE_WINDOW: invalid value '4x': expected a whole number from 1 to 256" <<<"$output"
    grep -qx 'stage exit 1' <<<"$output"
    if grep -q 'dlstage: staging tree' <<<"$output"; then
        echo "the stager ran"
        return 1
    fi
    no_sanitizer_report
}
