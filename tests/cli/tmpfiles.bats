#!/usr/bin/env bats
# etc/tmpfiles.d/dlstage.conf makes the example's tier roots and state_dir,
# root-owned and writable by root only, as systemd-tmpfiles does at boot.
load helpers

setup() {
    make_work
    snippet="$top_srcdir/etc/tmpfiles.d/dlstage.conf"  # absolute: --root would prefix a relative one
    example="$top_srcdir/etc/dlstage.toml"
}

@test "the snippet makes every tier root and the state_dir of the example" {
    for path in /dev/shm/dlstage /local/dlstage /var/spool/dlstage; do
        grep -q "^d  *$path  *0755 root root" "$snippet" || fail "snippet lacks $path"
    done
}

@test "the example's tier roots and state_dir are where the snippet says" {
    grep -q '"/dev/shm/dlstage/%j"' "$example" || fail "example tier shm moved: update the snippet"
    grep -q '"/local/dlstage/%j"' "$example" || fail "example tier ssd moved: update the snippet"
    grep -q '"/var/spool/dlstage"' "$example" || fail "example state_dir moved: update the snippet"
}

@test "systemd-tmpfiles creates them root's, mode 0755" {
    [ "$(id -u)" -eq 0 ] || skip "needs root"
    command -v systemd-tmpfiles >/dev/null || skip "needs systemd-tmpfiles"
    root="$work/root"
    mkdir -p "$root/dev/shm" "$root/local" "$root/var/spool"
    chmod 1777 "$root/dev/shm"
    systemd-tmpfiles --create --root="$root" "$snippet" >"$work/out" 2>"$work/err" ||
        { out=$(cat "$work/out"); err=$(cat "$work/err"); fail "systemd-tmpfiles refused the snippet"; }
    for path in /dev/shm/dlstage /local/dlstage /var/spool/dlstage; do
        [ "$(stat -c '%F %a %u %g' "$root$path")" = "directory 755 0 0" ] ||
            fail "$path: $(stat -c '%F %a %u %g' "$root$path")"
    done
}
