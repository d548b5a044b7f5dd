#!/bin/sh
# --help, --version, usage errors and exit codes (0 ok, 1 failure, 2 usage).
. "${top_srcdir:-.}/tests/cli/lib.sh"
set -e

run --help
expect_status 0 "--help"
expect_out "Usage: dlstage [OPTIONS] COMMAND" "--help"
expect_out "check-config" "--help"
expect_out "catalog list" "--help"

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

run check-config --help
expect_status 0 "check-config --help"
expect_out "Usage: dlstage check-config [FILE]" "check-config --help"

finish
