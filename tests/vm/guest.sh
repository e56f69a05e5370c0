#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/guest.sh MODE -- the checks that run inside the 2-node pmem-vm
# guest (dash, cwd = the staged dir with pmactl, test-ns and jq on PATH).
# MODE is fsdax (namespaces mounted -o dax on /mnt/pmemN), devdax or
# sector-raw (region0 sector, region1 raw: listing only). Prints
# one "ok - ..." / "not ok - ..." line per check (run-vm.sh numbers them)
# and exits 1 if any check failed.
set -u
mode=${1:?usage: guest.sh fsdax|devdax|sector-raw}
fails=0
tmp=/tmp/guest.$$
mkdir -p "$tmp"

pass() { echo "ok - $mode: $*"; }
fail() { echo "not ok - $mode: $*"; fails=$((fails + 1)); }
diag() { sed 's/^/#   /' "$@"; }

# check DESC CMD...: CMD must exit 0; its output is shown when it does not
check() {
	desc=$1; shift
	if "$@" >"$tmp/out" 2>&1; then pass "$desc"; else fail "$desc (exit $?)"; diag "$tmp/out"; fi
}

# json DESC FILE FILTER: jq FILTER must be true for the JSON in FILE
json() {
	if jq -e "$3" "$2" >/dev/null 2>"$tmp/jqerr"; then
		pass "$1"
	else
		fail "$1"; echo "#   jq filter: $3"; diag "$tmp/jqerr" "$2"
	fi
}

# run_json NAME CMD...: run CMD, keep stdout in $tmp/NAME.json
# shellcheck disable=SC2016 # $0/$@ expand in the inner sh
run_json() {
	name=$1; shift
	check "$*" sh -c '"$@" >"$0"' "$tmp/$name.json" "$@"
}

# lib/ns itself, including the VM-only case (emulated namespaces)
check "test-ns (lib/ns unit test in the guest)" env CMOCKA_MESSAGE_OUTPUT=TAP ./test-ns

if ! command -v pmactl >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1; then
	fail "pmactl and jq are staged in the guest"
	exit 1
fi

ns_checks_fsdax() {
	run_json ns pmactl ns --json
	json "ns lists two fsdax namespaces" "$tmp/ns.json" \
		'[.namespaces[] | select(.mode == "fsdax")] | length == 2'
	json "ns reports numa nodes 0 and 1" "$tmp/ns.json" \
		'[.namespaces[].numa_node] | sort == [0, 1]'
	json "ns: pmemN is on node N and mounted on /mnt/pmemN" "$tmp/ns.json" \
		'all(.namespaces[]; .device == "pmem\(.numa_node)"
		 and .dev_path == "/dev/\(.device)" and .mount == "/mnt/\(.device)")'
	json "ns: mount options say dax, uuids and sizes are set" "$tmp/ns.json" \
		'all(.namespaces[]; (.mount_options | test("dax"))
		 and (.uuid | length) == 36 and .size > 0 and (.bus | length) > 0)'
	check "pmactl ns (table) shows /mnt/pmem1" sh -c 'pmactl ns | grep -q /mnt/pmem1'
}

pool_checks_fsdax() {
	check "create /mnt/pmem1/pool --size 64M" pmactl create /mnt/pmem1/pool --size 64M
	run_json one pmactl inspect --json /mnt/pmem1/pool
	json "inspect: granularity CACHE_LINE on fsdax" "$tmp/one.json" \
		'.granularity == "CACHE_LINE"'
	json "inspect: part 0 on /mnt/pmem1 is on node 1" "$tmp/one.json" \
		'(.parts | length) == 1 and .parts[0].numa_node == 1 and .parts[0].devdax == false'

	check "create 2-part pool across /mnt/pmem0 and /mnt/pmem1" \
		pmactl create /mnt/pmem0/pool2 --size 64M --parts /mnt/pmem1/pool2
	run_json two pmactl inspect --json /mnt/pmem0/pool2
	json "inspect: 2-part pool reports nodes 0 and 1" "$tmp/two.json" \
		'[.parts[].numa_node] == [0, 1] and .granularity == "CACHE_LINE"'

	check "create 2-part pool with part 0 on node 1" \
		pmactl create /mnt/pmem1/pool3 --size 64M --parts /mnt/pmem0/pool3
	run_json three pmactl inspect --json /mnt/pmem1/pool3
	json "inspect: reversed pool reports nodes 1 and 0" "$tmp/three.json" \
		'[.parts[].numa_node] == [1, 0]'
}

ns_checks_devdax() {
	run_json ns pmactl ns --json
	json "ns lists two devdax namespaces" "$tmp/ns.json" \
		'[.namespaces[] | select(.mode == "devdax")] | length == 2'
	json "ns: daxN.0 is on node N, no mount" "$tmp/ns.json" \
		'all(.namespaces[]; .device == "dax\(.numa_node).0"
		 and .dev_path == "/dev/\(.device)" and .mount == null)'
	size0=$(cat /sys/bus/dax/devices/dax0.0/size)
	json "ns: dax0.0 size is the device size ($size0)" "$tmp/ns.json" \
		".namespaces[] | select(.device == \"dax0.0\") | .size == $size0"
}

pool_checks_devdax() {
	size0=$(cat /sys/bus/dax/devices/dax0.0/size)
	check "create /dev/dax0.0 --force (size = device)" pmactl create /dev/dax0.0 --force
	run_json dax pmactl inspect --json /dev/dax0.0
	json "inspect: devdax part 0 on node 0, whole device" "$tmp/dax.json" \
		".parts[0].devdax == true and .parts[0].numa_node == 0 and .parts[0].size == $size0"
	json "inspect: granularity CACHE_LINE on devdax" "$tmp/dax.json" \
		'.granularity == "CACHE_LINE"'

	check "create 2-part devdax pool /dev/dax0.0 + /dev/dax1.0" \
		pmactl create /dev/dax0.0 --parts /dev/dax1.0 --force
	run_json dax2 pmactl inspect --json /dev/dax0.0
	json "inspect: devdax pool reports nodes 0 and 1" "$tmp/dax2.json" \
		'[.parts[].numa_node] == [0, 1] and all(.parts[]; .devdax)'
}

# sector (BTT) on region0, raw on region1: listed, but no DAX
ns_checks_sector_raw() {
	run_json ns pmactl ns --json
	json "ns: sector namespace pmem0s on node 0" "$tmp/ns.json" \
		'.namespaces[0] | .mode == "sector" and .device == "pmem0s"
		 and .numa_node == 0 and .dev_path == "/dev/pmem0s" and .size > 0'
	json "ns: raw namespace pmem1 on node 1" "$tmp/ns.json" \
		'.namespaces[1] | .mode == "raw" and .device == "pmem1"
		 and .numa_node == 1 and .size > 0 and (.uuid | length) == 36'
}

case "$mode" in
fsdax) ns_checks_fsdax; pool_checks_fsdax ;;
devdax) ns_checks_devdax; pool_checks_devdax ;;
sector-raw) ns_checks_sector_raw ;;
*) fail "unknown mode"; exit 1 ;;
esac
rm -rf "$tmp"
[ "$fails" = 0 ]
