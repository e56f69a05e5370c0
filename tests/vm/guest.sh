#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/guest.sh MODE -- the checks that run inside the 2-node pmem-vm
# guest (dash, cwd = the staged dir with pmactl, test-ns, pma-workload,
# pmabench if built, and jq on PATH).
# MODE is fsdax (namespaces mounted -o dax on /mnt/pmemN), devdax or
# sector-raw (region0 sector, region1 raw: listing only). Prints
# one "ok - ..." / "not ok - ..." line per check (run-vm.sh numbers them)
# and exits 1 if any check failed.
set -u
mode=${1:?usage: guest.sh fsdax|devdax|sector-raw}
fails=0
tmp=/tmp/guest.$$
mkdir -p "$tmp"
# run-vm.sh's boot watchdog waits for this line (the guest is up)
echo "# guest.sh $mode: started"

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
	# a heap over both parts: a thread on each node's CPU gets blocks of
	# its node's part, whose pages the kernel puts on that node
	# shellcheck disable=SC2016 # $0 expands in the inner sh
	check "pmalloc over 2 parts: local-first, each node's pages on it" \
		sh -c 'pma-workload --numa "$1" --mempolicy >"$0" &&
			jq -se "length == 2 and ([.[].node] | sort) == [0, 1] and
				all(.[]; .in_part == .blocks and .page_on_node == .blocks)" "$0"' \
		"$tmp/numa.json" /mnt/pmem0/pool2
	# the issue's command: one part per node's namespace, shown by --numa
	check "create /mnt/pmem0/pool4 --size 64M --all-nodes" \
		pmactl create /mnt/pmem0/pool4 --size 64M --all-nodes
	check "pma-workload --numa on the --all-nodes pool" \
		pma-workload --numa /mnt/pmem0/pool4 --mempolicy
	run_json allnodes pmactl inspect --numa --json /mnt/pmem0/pool4
	json "inspect --numa: parts on nodes 0 and 1, blocks in both" "$tmp/allnodes.json" \
		'[.numa.parts[].node] == [0, 1] and all(.numa.parts[]; .used > 0)
		 and .parts[1].path == "/mnt/pmem1/pool4.part1"'

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

# ---------------------------------------------------------------- PMAlloc
# pma-workload --stress (2 threads, 1 B..256 KiB) is killed at random moments;
# after each kill pmactl log and inspect --heap read the crashed pool and
# pma-workload --verify recovers it: every slot names a live block of its
# size, none twice, no leak, and the heap still allocates.
KILL_ROUNDS=10

# rand N: a random number in [0, N) (dash has no $RANDOM)
rand() { echo $(($(od -An -N2 -tu2 /dev/urandom) % $1)); }

# wait_running PID: until --stress says "running" (at most 60 s, TCG is slow)
wait_running() {
	i=0
	while ! grep -q running "$tmp/stress.out" 2>/dev/null; do
		kill -0 "$1" 2>/dev/null || return 1
		i=$((i + 1))
		[ "$i" -le 1200 ] || return 1
		sleep 0.05
	done
}

# kill_round POOL: start --stress, wait until it runs, sleep 0..0.5 s, kill
# -9; 0 if it was killed (not exited), else its stderr is in $tmp/stress.err
kill_round() {
	pma-workload --stress "$1" >"$tmp/stress.out" 2>"$tmp/stress.err" &
	pid=$!
	if ! wait_running "$pid"; then
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		echo "no 'running' from --stress" >>"$tmp/stress.err"
		return 1
	fi
	sleep "$(printf '0.%03d' "$(rand 500)")"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null # no "Killed" from dash
	rc=$?
	[ "$rc" = 137 ] && return 0
	echo "--stress exit $rc, not killed" >>"$tmp/stress.err"
	return 1
}

# crash_round DESC POOL: one kill_round; log --json and inspect --heap --json
# of the crashed pool parse, --verify passes and keeps the blocks that the
# read-only inspect saw live
crash_round() {
	if ! kill_round "$2"; then
		fail "$1"; diag "$tmp/stress.err"; return
	fi
	if ! pmactl log --json "$2" >"$tmp/log.json" 2>"$tmp/out" ||
		! jq -e '.count == (.records | length)' "$tmp/log.json" >/dev/null; then
		fail "$1: pmactl log --json"; diag "$tmp/out"; return
	fi
	if ! pmactl inspect --heap --json "$2" >"$tmp/heap.json" 2>"$tmp/out"; then
		fail "$1: pmactl inspect --heap --json"; diag "$tmp/out"; return
	fi
	live=$(jq '[.heap.classes[].used] + [.heap.extents] | add' "$tmp/heap.json")
	if ! pma-workload --verify "$2" >"$tmp/out" 2>&1; then
		fail "$1: --verify"; diag "$tmp/out"; return
	fi
	case "$(cat "$tmp/out")" in
	*" $live live blocks"*) pass "$1: $(jq .count "$tmp/log.json") log records, $(cat "$tmp/out")" ;;
	*) fail "$1: inspect --heap saw $live live blocks"; diag "$tmp/out" ;;
	esac
}

# pmalloc_checks POOL NODE DEVDAX: a made pool at POOL, part 0 on NODE
pmalloc_checks() {
	pool=$1 node=$2
	run_json heap pmactl inspect --json "$pool"
	json "$pool: CACHE_LINE granularity, part 0 on node $node" "$tmp/heap.json" \
		".granularity == \"CACHE_LINE\" and (.parts | length) == 1
		 and .parts[0].numa_node == $node and .parts[0].devdax == $3"
	check "$pool: pma-workload --stress 2000 ops (formats the heap)" \
		pma-workload --stress "$pool" 2000
	r=0
	while [ "$r" -lt "$KILL_ROUNDS" ]; do
		r=$((r + 1))
		crash_round "$pool: kill -9 round $r/$KILL_ROUNDS" "$pool"
	done
	# the crashed state once more, through the json helper's checks
	kill_round "$pool" || { fail "$pool: last kill -9"; diag "$tmp/stress.err"; }
	run_json heap pmactl inspect --heap --json "$pool"
	json "$pool: inspect --heap --json after kill -9" "$tmp/heap.json" \
		'.heap.narenas >= 1 and .heap.size > 0 and .heap.used > 0
		 and .heap.free > 0 and .heap.largest_free_extent > 0
		 and (.heap.classes | length) > 0 and .granularity == "CACHE_LINE"'
	run_json log pmactl log --json "$pool"
	json "$pool: log --json after kill -9" "$tmp/log.json" \
		'.count == (.records | length) and all(.records[];
		 (.type | IN("alloc", "free", "rfree", "slab_new", "slab_free", "ext_alloc",
		  "ext_free", "ext_len", "ext_lfree", "ext_alloc1", "ext_free1",
		  "ext_lfree1", "sync_free", "slab_morph", "xfree"))
		 and (.offset | startswith("0x")))'
	check "$pool: pma-workload --verify after the last kill" \
		pma-workload --verify "$pool"
}

pmalloc_checks_fsdax() {
	for n in 0 1; do
		check "create /mnt/pmem$n/heap --size 64M" pmactl create /mnt/pmem$n/heap --size 64M
		pmalloc_checks /mnt/pmem$n/heap $n false
	done
	if ! command -v pmabench >/dev/null 2>&1; then
		pass "pmabench smoke on /mnt/pmem1 # SKIP pmabench not built (no bench peers)"
		return
	fi
	run_json bench pmabench -d /mnt/pmem1 -a pmalloc -m cache_line -n 2k -R 10k -s 64M -j
	if jq -se 'length == 17 and all(.[]; .error == null and .pm_mode == "CACHE_LINE")
		and (map(select(.bench == "recovery"))[0] | .live_after_recovery == .objects)
		and (map(select(.bench != "recovery")) | all(.[]; .sync_wait_frac >= 0
			and .sync_wait_frac <= 1 and ((.bench != "threadtest" and .bench != "larson-q") or .sync_wait_frac == 0)))' \
		"$tmp/bench.json" >/dev/null 2>"$tmp/jqerr"; then
		pass "pmabench: 16 bench rows + recovery, no error, CACHE_LINE"
	else
		fail "pmabench: 16 bench rows + recovery, no error, CACHE_LINE"; diag "$tmp/jqerr" "$tmp/bench.json"
	fi
}

pmalloc_checks_devdax() {
	for n in 0 1; do
		check "create /dev/dax$n.0 --force (one part)" pmactl create /dev/dax$n.0 --force
		pmalloc_checks /dev/dax$n.0 $n true
	done
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
fsdax) ns_checks_fsdax; pool_checks_fsdax; pmalloc_checks_fsdax ;;
devdax) ns_checks_devdax; pool_checks_devdax; pmalloc_checks_devdax ;;
sector-raw) ns_checks_sector_raw ;;
*) fail "unknown mode"; exit 1 ;;
esac
rm -rf "$tmp"
[ "$fails" = 0 ]
