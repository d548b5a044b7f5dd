#!/bin/sh
# --help, --version, usage errors and exit codes (0 ok, 1 failure, 2 usage).
. "${top_srcdir:-.}/tests/cli/lib.sh"
set -e

run --help
expect_status 0 "--help"
expect_out "Usage: dlstage [OPTIONS] COMMAND" "--help"
expect_out "check-config" "--help"
expect_out "catalog list" "--help"
expect_out "stage [SPEC...]" "--help"

run -V
expect_status 0 "-V"
expect_out "dlstage 0." "-V"

run
expect_status 2 "no command"
expect_err "dlstage: no command given" "no command"
expect_err "Try 'dlstage --help'" "no command"

run frobnicate
expect_status 2 "unknown command"
expect_err "dlstage: unknown command 'frobnicate'" "unknown command"

run --frob
expect_status 2 "unknown option"
expect_err "unknown option '--frob'" "unknown option"

run --config
expect_status 2 "--config without FILE"

run catalog
expect_status 2 "catalog without subcommand"
expect_err "catalog needs a subcommand: list" "catalog without subcommand"

run catalog drop
expect_status 2 "unknown catalog subcommand"

run check-config a b
expect_status 2 "two files"

run stage --help
expect_status 0 "stage --help"
expect_out "Usage: dlstage stage" "stage --help"

SLURM_JOB_ID= SLURM_JOB_NUM_NODES= SLURM_NNODES= run stage imagenet
expect_status 1 "stage outside a job"
expect_err "dlstage: stage runs inside a Slurm job" "stage outside a job"

run stage --bogus
expect_status 2 "stage with a bad option"
expect_err "stage: unknown option '--bogus'" "stage with a bad option"

SLURM_JOB_ID=1 SLURM_JOB_NUM_NODES=1 DLSTAGE_STAGE_DATA= run stage
expect_status 2 "stage without any request"
expect_err "no SPEC given and the job has no --stage-data request" "stage without any request"

run check-config --help
expect_status 0 "check-config --help"
expect_out "Usage: dlstage check-config [FILE]" "check-config --help"

finish
