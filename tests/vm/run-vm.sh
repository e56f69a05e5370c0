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

# phase NAME PMEM-VM-OPTIONS...: one guest boot running guest.sh NAME
phase() {
	local name=$1 log=$stage/$1.log rc line before=$failed
	shift
	bash "$vm" -q -t 900 "$@" -d "$stage" -b "$jq" -- sh ./guest.sh "$name" >"$log" 2>&1
	rc=$?
	while IFS= read -r line; do tap_line "$line"; done <"$log"
	# guest.sh exits 1 only after a "not ok"; 124/125: timeout, boot failure
	if [ "$rc" = 0 ] || { [ "$rc" = 1 ] && [ "$failed" -gt "$before" ]; }; then
		tap_line "ok - $name: VM booted and the guest checks ran"
	else
		tap_line "not ok - $name: VM run failed (pmem-vm exit $rc)"
	fi
}

phase fsdax -m -n fsdax
phase devdax -n devdax
phase sector-raw -n sector,raw
echo "1..$n"
echo "check-vm: $((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
