#!/usr/bin/env bats
# The plugin exports only the SPANK symbols (spank/dlstage.map), and all of
# those slurmd needs.
load helpers

setup() {
    make_work
    so="$top_builddir/dlstage.so"
    [ -f "$so" ] || fail "no $so"
}

@test "the plugin exports exactly the SPANK symbols" {
    exported=$(nm -D --defined-only "$so" | awk '{print $3}' | sort | tr '\n' ' ')
    expected="plugin_name plugin_type plugin_version slurm_spank_exit slurm_spank_init slurm_spank_init_post_opt slurm_spank_job_epilog slurm_spank_job_prolog slurm_spank_local_user_init slurm_spank_task_init spank_plugin_version "
    [ "$exported" = "$expected" ] || fail "exports: got '$exported'"
}

@test "symbols slurmd resolves at load time stay undefined, not bundled" {
    nm -D --undefined-only "$so" | grep -q ' spank_option_register$' || fail "spank_option_register not imported"
}

@test "the plugin is hardened: full RELRO, immediate binding, stack protector, fortified calls" {
    flags=$(sed -n 's/^HARDENING_LDFLAGS = //p' "$top_builddir/Makefile")
    [ -n "$flags" ] || skip "configured without hardening (--disable-hardening or --enable-sanitizers)"
    readelf -lW "$so" | grep -q GNU_RELRO || fail "no RELRO segment"
    readelf -dW "$so" | grep -Eq 'BIND_NOW|FLAGS.*NOW' || fail "not bound now"
    nm -D --undefined-only "$so" | grep -Eq ' __stack_chk_fail(@|$)' || fail "no stack protector"
    nm -D --undefined-only "$so" | grep -Eq ' __[a-z]+_chk(@|$)' || fail "no fortified call (__*_chk)"
}
