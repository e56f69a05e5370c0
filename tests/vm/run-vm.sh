#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/run-vm.sh BUILDDIR -- `make check-vm`: stage the built pmactl,
# test-ns, pma-workload and pmabench (if built) with guest.sh, boot the
# 2-node pmem-vm guest three times (fsdax mounted -o dax, devdax, then
# sector + raw) and print the guest's checks as one TAP stream.
# pmem-vm: $PMEM_VM, else ../shared/tools/pmem-vm beside the source tree,
# else the vendored tests/vm/pmem-vm. Exit 0 only if every check passed.
set -u

builddir=$(cd "${1:?usage: run-vm.sh BUILDDIR}" && pwd) || exit 2
here=$(cd "$(dirname "$0")" && pwd)
srcdir=$(cd "$here/../.." && pwd)

pick_vm() {
	local c
	for c in "${PMEM_VM:-}" "$srcdir/../shared/tools/pmem-vm" "$here/pmem-vm"; do
		[ -n "$c" ] && [ -f "$c" ] && { echo "$c"; return 0; }
	done
	return 1
}
is_elf() { [ "$(head -c4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }
die() { echo "Bail out! run-vm: $*"; exit 1; }

vm=$(pick_vm) || die "pmem-vm not found (set PMEM_VM)"
jq=$(command -v jq) || die "jq not found on the host (apt-get install jq)"
progs=("$builddir/cmd/pmactl" "$builddir/tests/unit/test-ns"
	"$builddir/tests/lib/pma-workload")
# pmabench is built only with the bench peers (libpmemobj, jemalloc)
[ -f "$builddir/bench/pmabench" ] && progs+=("$builddir/bench/pmabench")
for f in "${progs[@]}"; do
	[ -f "$f" ] || die "$f is not built (make check-vm builds it)"
	is_elf "$f" || die "$f is a libtool wrapper, not an ELF: configure with --disable-shared"
done

stage=$(mktemp -d "${TMPDIR:-/tmp}/pmad-vm.XXXXXX")
trap 'rm -rf "$stage"' EXIT
cp "${progs[@]}" "$here/guest.sh" "$stage/"
echo "# pmem-vm: $vm"
# packages and the cached kernel + initramfs first (minutes on a fresh
# machine), so that the boot watchdog below times boots only
bash "$vm" --prepare >"$stage/prepare.log" 2>&1 || {
	sed 's/^/# /' "$stage/prepare.log"
	die "pmem-vm --prepare failed"
}

n=0
failed=0
# tap_line LINE: renumber the guest's "ok - ..." lines, the rest is diagnostics
tap_line() {
	case "$1" in
	"ok "*|"not ok "*)
		n=$((n + 1))
		case "$1" in "not ok"*) failed=$((failed + 1)) ;; esac
		printf '%s\n' "$1" | sed -E "s/^(not ok|ok) -? ?/\1 $n - /" ;;
	"#"*) printf '%s\n' "$1" ;;
	*) printf '# %s\n' "$1" ;;
	esac
}

# boot NAME LOG PMEM-VM-OPTIONS...: one guest boot running guest.sh NAME,
# output in LOG; its exit status in $rc. 126: the guest did not start
# guest.sh within $boot_timeout s (a QEMU/TCG boot stall: none of our code
# ran yet), and the VM was killed.
boot_timeout=${PMEM_VM_BOOT_TIMEOUT:-300}
boot() {
	local name=$1 log=$2 pid t=0
	shift 2
	setsid bash "$vm" -q -t 900 "$@" -d "$stage" -b "$jq" -- \
		sh ./guest.sh "$name" >"$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null && ! grep -q '^# guest.sh ' "$log"; do
		if [ "$t" -ge "$boot_timeout" ]; then
			# the whole session: timeout(1) runs QEMU in a
			# process group of its own
			pkill -TERM -s "$pid"
			for t in 1 2 3 4 5 6 7 8 9 10; do
				kill -0 "$pid" 2>/dev/null || break
				sleep 1
			done
			pkill -KILL -s "$pid"
			wait "$pid" 2>/dev/null
			rc=126
			return
		fi
		sleep 2
		t=$((t + 2))
	done
	wait "$pid"
	rc=$?
}

# phase NAME PMEM-VM-OPTIONS...: guest.sh NAME in a VM, booted again once
# if the first boot stalled
phase() {
	local name=$1 log=$stage/$1.log rc line before=$failed
	shift
	boot "$name" "$log" "$@"
	if [ "$rc" = 126 ]; then
		tap_line "# $name: no guest output after ${boot_timeout} s (boot stall); booting again"
		while IFS= read -r line; do tap_line "$line"; done <"$log"
		boot "$name" "$log" "$@"
	fi
	while IFS= read -r line; do tap_line "$line"; done <"$log"
	# guest.sh exits 1 only after a "not ok"; 124/125: timeout, boot
	# failure; 126: boot stall (boot)
	if [ "$rc" = 0 ] || { [ "$rc" = 1 ] && [ "$failed" -gt "$before" ]; }; then
		tap_line "ok - $name: VM booted and the guest checks ran"
	else
		tap_line "not ok - $name: VM run failed (exit $rc)"
	fi
}

phase fsdax -m -n fsdax
phase devdax -n devdax
phase sector-raw -n sector,raw
echo "1..$n"
echo "check-vm: $((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
