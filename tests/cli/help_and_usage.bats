#!/usr/bin/env bats
# --help, --version, usage errors and exit codes (0 ok, 1 failure, 2 usage).
load helpers

@test "--help lists the commands" {
    run_dlstage --help
    expect_status 0
    expect_out "Usage: dlstage [OPTIONS] COMMAND"
    expect_out "check-config"
    expect_out "catalog list"
    expect_out "stage [SPEC...]"
}

@test "-V prints the version" {
    run_dlstage -V
    expect_status 0
    expect_out "dlstage 0."
}

@test "no command is a usage error" {
    run_dlstage
    expect_status 2
    expect_err "dlstage: no command given"
    expect_err "Usage: dlstage [-c FILE] COMMAND [ARGS...]  (see 'dlstage --help')"
}

@test "a mistyped command or option gets a did-you-mean and one usage line" {
    run_dlstage stauts
    expect_status 2
    expect_err "dlstage: unknown command 'stauts' (did you mean 'status'?) (commands: check-config, catalog, stage, status, pack, prefetch, gc)"
    [ "$(printf '%s\n' "$err" | wc -l)" -eq 2 ] || fail "not two lines: $err"
    run_dlstage --verison
    expect_status 2
    expect_err "dlstage: unknown option '--verison' (did you mean '--version'?)"
    run_dlstage catalog lst
    expect_status 2
    expect_err "dlstage: unknown catalog subcommand 'lst' (did you mean 'list'?)"
    run_dlstage status --jobz 1
    expect_status 2
    expect_err "dlstage: status: unknown option '--jobz' (did you mean '--jobs'?)"
    expect_err "Usage: dlstage status [-h] [-a]"
    run_dlstage zzzzzzzz
    expect_status 2
    [[ "$err" != *"did you mean"* ]] || fail "a guess for a word nothing is close to: $err"
}

@test "an unknown command is a usage error" {
    run_dlstage frobnicate
    expect_status 2
    expect_err "dlstage: unknown command 'frobnicate'"
}

@test "an unknown option is a usage error" {
    run_dlstage --frob
    expect_status 2
    expect_err "unknown option '--frob'"
}

@test "--config without FILE is a usage error" {
    run_dlstage --config
    expect_status 2
}

@test "catalog without a subcommand is a usage error" {
    run_dlstage catalog
    expect_status 2
    expect_err "catalog needs a subcommand: list"
}

@test "an unknown catalog subcommand is a usage error" {
    run_dlstage catalog drop
    expect_status 2
}

@test "check-config with two files is a usage error" {
    run_dlstage check-config a b
    expect_status 2
}

@test "stage --help" {
    run_dlstage stage --help
    expect_status 0
    expect_out "Usage: dlstage stage"
}

@test "stage outside a job fails" {
    SLURM_JOB_ID= SLURM_JOB_NUM_NODES= SLURM_NNODES= run_dlstage stage imagenet
    expect_status 1
    expect_err "dlstage: stage runs inside a Slurm job"
}

@test "stage with a bad option is a usage error" {
    run_dlstage stage --bogus
    expect_status 2
    expect_err "stage: unknown option '--bogus'"
}

@test "stage without any request is a usage error" {
    SLURM_JOB_ID=1 SLURM_JOB_NUM_NODES=1 DLSTAGE_STAGE_DATA= run_dlstage stage
    expect_status 2
    expect_err "no SPEC given and the job has no --stage-data request"
}

@test "check-config --help" {
    run_dlstage check-config --help
    expect_status 0
    expect_out "Usage: dlstage check-config [FILE]"
}
