#!/usr/bin/env bats
# The systemd units shipped for dlstage gc: systemd-analyze finds nothing
# to say about them, and the service stays in the node's mount namespace
# (gc must detach the node's own mounts and reach tiers anywhere).
load helpers

units() {
    sed "s|^ExecStart=.*|ExecStart=$DLSTAGE gc|" "$top_builddir/etc/systemd/dlstage-gc.service" \
        > "$work/dlstage-gc.service"
    cp "$top_srcdir/etc/systemd/dlstage-gc.timer" "$work/"
}

@test "systemd units: the service runs 'dlstage gc' from bindir, once, started by the timer" {
    grep -qx "ExecStart=.*/dlstage gc" "$top_builddir/etc/systemd/dlstage-gc.service" || fail "no ExecStart"
    grep -qx "Type=oneshot" "$top_builddir/etc/systemd/dlstage-gc.service" || fail "not oneshot"
    grep -q "@bindir@" "$top_builddir/etc/systemd/dlstage-gc.service" && fail "@bindir@ left"
    grep -qx "RandomizedDelaySec=50min" "$top_srcdir/etc/systemd/dlstage-gc.timer" || fail "no random delay"
    grep -qx "WantedBy=timers.target" "$top_srcdir/etc/systemd/dlstage-gc.timer" || fail "not enabled by timers.target"
}

@test "systemd units: systemd-analyze verify has nothing to say" {
    command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
    units
    (cd "$work" && systemd-analyze verify --man=no ./dlstage-gc.service ./dlstage-gc.timer) \
        >"$work/out" 2>&1 && status=0 || status=$?
    out=$(cat "$work/out")
    expect_status 0
    expect_no_out
}

@test "systemd units: no directive that gives the service a mount namespace of its own" {
    for directive in ProtectSystem ProtectHome PrivateTmp PrivateDevices PrivateMounts ReadOnlyPaths \
        ReadWritePaths InaccessiblePaths TemporaryFileSystem BindPaths ProtectKernelTunables \
        ProtectKernelModules ProtectKernelLogs ProtectControlGroups ProtectProc ProtectHostname RootDirectory; do
        ! grep -q "^$directive=" "$top_builddir/etc/systemd/dlstage-gc.service" || fail "$directive set"
    done
}
