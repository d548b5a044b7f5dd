#!/bin/sh
# The plugin exports only the SPANK symbols (spank/dlstage.map), and all of
# those slurmd needs.
. "${top_srcdir:-.}/tests/cli/lib.sh"
set -e
so="$top_builddir/.libs/dlstage.so"
[ -f "$so" ] || { echo "no $so"; exit 1; }
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | sort | tr '\n' ' ')
expected="plugin_name plugin_type plugin_version slurm_spank_init slurm_spank_init_post_opt slurm_spank_job_epilog slurm_spank_job_prolog slurm_spank_local_user_init slurm_spank_task_init spank_plugin_version "
[ "$exported" = "$expected" ] || { out=$exported; err=""; fail "exports: got '$exported'"; }
# Symbols that slurmd resolves at load time must stay undefined, not bundled.
nm -D --undefined-only "$so" | grep -q ' spank_option_register$' || { out=""; err=""; fail "spank_option_register not imported"; }
finish
