#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# A PMAlloc heap over the parts of a pool, one per NUMA node (issue 16), on
# a fake topology of two nodes (PMAD_FAKE_NUMA=2:0=0,1=1: CPU i on node
# i): the heap has a region in every part, a thread on each node's CPU
# allocates from its node's part, and pmactl inspect --numa shows the
# parts with their nodes, as text and JSON, alone or with --heap.

load helpers

setup() {
	pmalloc_setup
	export PMAD_FAKE_NUMA=2:0=0,1=1
	[ "$(nproc)" -ge 2 ] || skip "needs CPUs 0 and 1"
}

# numa_pool POOL: two 64 MiB parts on nodes 0 and 1, the heap filled
# from a thread on each node (pma-workload --numa)
numa_pool() {
	run --separate-stderr pmactl create "$1" --size 64M --parts "$1.1" \
		--node 0,1
	assert_success
	run --separate-stderr "$WORKLOAD" --numa "$1"
	assert_success
	# one line per part: all 64 blocks of the node's thread in its part
	[ "$(echo "$output" | jq -s 'length')" -eq 2 ]
	echo "$output" | jq -se 'all(.[]; .in_part == .blocks and
		.node == .part)'
}

@test "a heap over 2 parts: a region in each, blocks in the thread's node's part" {
	numa_pool "$T/p"
	run --separate-stderr pmactl inspect --json "$T/p"
	assert_success
	echo "$output" | jq -e '[.regions[] | select(.type == "pmalloc") |
		.part] == [0, 1]'
}

@test "inspect --numa --json: both parts with their nodes, arenas and use" {
	numa_pool "$T/p"
	run --separate-stderr pmactl inspect --numa --json "$T/p"
	assert_success
	echo "$output" | jq -e '.numa.parts | length == 2'
	echo "$output" | jq -e '[.numa.parts[].node] == [0, 1]'
	echo "$output" | jq -e 'all(.numa.parts[]; .narenas >= 2 and
		.used > 0 and .free > 0 and .remote_frees_pending == 0)'
	echo "$output" | jq -e '.numa.fallbacks == 0 and
		.numa.remote_part_frees == 0'
	# --numa alone: no heap object (asked for the parts only)
	echo "$output" | jq -e 'has("heap") | not'
}

@test "inspect --heap --numa --json: the heap with arenas of both parts" {
	numa_pool "$T/p"
	run --separate-stderr pmactl inspect --heap --numa --json "$T/p"
	assert_success
	echo "$output" | jq -e '.heap.parts == 2 and (.numa.parts | length) == 2'
	echo "$output" | jq -e '[.heap.arenas[].part] | unique == [0, 1]'
	echo "$output" | jq -e '.heap.size == ([.numa.parts[].size] | add)'
}

@test "inspect --numa as text: the parts table and the placement counters" {
	numa_pool "$T/p"
	run --separate-stderr pmactl inspect --numa "$T/p"
	assert_success
	assert_output --partial "heap parts (one per NUMA node"
	assert_output --regexp "PART +NODE +ARENAS"
	assert_output --regexp "
 +1 +1 +[0-9]+ "
	assert_output --partial "fallbacks: 0"
}

@test "a one-part heap: inspect --numa shows its single part" {
	mkpool_size "$T/one" 16M
	run --separate-stderr "$WORKLOAD" "$T/one" 100 64
	assert_success
	run --separate-stderr pmactl inspect --numa --json "$T/one"
	assert_success
	echo "$output" | jq -e '(.numa.parts | length) == 1 and
		.numa.parts[0].part == 0'
}

@test "inspect --numa of a pool without a heap fails and says why" {
	mkpool "$T/bare"
	run --separate-stderr pmactl inspect --numa "$T/bare"
	assert_failure
	[[ "$stderr" == *"has no pmalloc heap"* ]]
}

# two directories stand for fsdax namespaces on nodes 0 and 1
fake_ns() {
	mkdir -p "$T/ns0" "$T/ns1"
	export PMAD_FAKE_NS="0=$T/ns0,1=$T/ns1"
}

@test "create --all-nodes: POOL is part 0, a part on every other node's namespace" {
	fake_ns
	run --separate-stderr pmactl create "$T/ns1/pool" --size 16M \
		--all-nodes --json
	assert_success
	echo "$output" | jq -e '[.parts[] | .numa_node] == [1, 0]'
	echo "$output" | jq -e --arg p "$T/ns0/pool.part1" \
		'.parts[1].path == $p'
	run --separate-stderr "$WORKLOAD" --numa "$T/ns1/pool"
	assert_success
	run --separate-stderr pmactl inspect --numa --json "$T/ns1/pool"
	assert_success
	echo "$output" | jq -e '[.numa.parts[].node] == [1, 0]'
}

@test "create --all-nodes: bad combinations and a POOL off the namespaces" {
	fake_ns
	run --separate-stderr pmactl create "$T/pool" --size 16M --all-nodes
	assert_failure 2
	[[ "$stderr" == *"is not on a mounted fsdax namespace"* ]]
	run --separate-stderr pmactl create "$T/ns0/p" --size 16M \
		--all-nodes --parts "$T/ns1/q"
	assert_failure 2
	[[ "$stderr" == *"not with --parts or --node"* ]]
	[ ! -e "$T/ns0/p" ] && [ ! -e "$T/ns1/q" ]
}

@test "log over 2 parts: records name their part, --arena P.N picks one" {
	run --separate-stderr pmactl create "$T/p" --size 64M --parts "$T/p.1" \
		--node 0,1
	assert_success
	# a client on CPU 1 (node 1) that exits without closing the heap
	run --separate-stderr taskset -c 1 "$WORKLOAD" "$T/p" 300 100 crash
	assert_success
	run --separate-stderr pmactl log --json "$T/p"
	assert_success
	# the blocks in part 1 (the root object is in part 0)
	echo "$output" | jq -e '([.records[] | select(.part == 1)] | length) >= 300'
	echo "$output" | jq -e '([.records[].part] | unique) == [0, 1]'
	run --separate-stderr pmactl log --arena 1.0 --json "$T/p"
	assert_success
	echo "$output" | jq -e '.count > 0 and all(.records[]; .part == 1 and .arena == 0)'
	run --separate-stderr pmactl log "$T/p"
	assert_success
	assert_output --regexp "
 +1\.0 +[0-9]+ +(slab_new|alloc)"
	run --separate-stderr pmactl log --arena 3.0 "$T/p"
	assert_failure 1
	[[ "$stderr" == *"part 3 holds no heap"* ]]
	run --separate-stderr pmactl log --arena 1.x "$T/p"
	assert_failure 2
}

@test "a free of another part's block is logged xfree there; fsck and recovery take it" {
	run --separate-stderr pmactl create "$T/p" --size 64M --parts "$T/p.1" \
		--node 0,1
	assert_success
	# part 0's 64 blocks freed by the thread on node 1, then a crash
	run --separate-stderr "$WORKLOAD" --numa "$T/p" --xfree-crash
	assert_success
	run --separate-stderr pmactl log --json "$T/p"
	assert_success
	# in part 1's logs, each naming a block of part 0
	[ "$(jq '[.records[] | select(.type == "xfree")] | length' \
		<<<"$output")" -eq 64 ]
	jq -e 'all(.records[] | select(.type == "xfree");
		.part == 1 and (.offset | startswith("0x")) and
		.size == 256)' <<<"$output"
	run --separate-stderr pmactl log "$T/p"
	assert_success
	assert_output --partial "xfree"
	# a valid xfree is no damage
	run --separate-stderr pmactl fsck "$T/p"
	assert_success
	# recovery (on a private view) applies them in part 0
	run --separate-stderr pmactl fsck --recovery "$T/p"
	assert_success
	# the read-only view applies them too: part 0 holds the root alone
	# (8 KiB), part 1 its 64 blocks of 256 B
	run --separate-stderr pmactl inspect --numa --json "$T/p"
	assert_success
	jq -e '.numa.parts[0].used < .numa.parts[1].used' <<<"$output"
}

@test "a part on another node than the pool records: a warning, fsck part-node, placement by where it is" {
	fake_ns
	# recorded nodes 1,0 while the namespaces say 0,1 (a part moved)
	run --separate-stderr pmactl create "$T/ns0/p" --size 64M \
		--parts "$T/ns1/p.1" --node 1,0
	assert_success
	# each node's thread allocates from the part that is on its node
	run --separate-stderr "$WORKLOAD" --numa "$T/ns0/p"
	assert_success
	echo "$output" | jq -se 'length == 2 and all(.[]; .in_part == .blocks and .node == .part)'
	# an open says so at PMAD_LOG=warning (pmad logs warnings)
	run --separate-stderr env PMAD_LOG=warning pmactl inspect --numa \
		--json "$T/ns0/p"
	assert_success
	echo "$output" | jq -e '[.numa.parts[].node] == [0, 1]'
	[[ "$stderr" == *"warning: part 0 ('$T/ns0/p') is on NUMA node 0, the pool header records node 1"* ]] ||
		fail "$stderr"
	[[ "$stderr" == *"part 1 ('$T/ns1/p.1') is on NUMA node 1, the pool header records node 0 (moved to another node's namespace?): its heap is placed by node 1"* ]] ||
		fail "$stderr"
	run --separate-stderr pmactl fsck --json "$T/ns0/p"
	assert_success
	echo "$output" | jq -e '.consistent and .warnings == 2'
	echo "$output" | jq -e '[.findings[] | select(.code == "part-node") | .part] == [0, 1]'
	echo "$output" | jq -e '.findings[] | select(.part == 1 and .code == "part-node") | .message | startswith("part 1 (")'
	# the recorded nodes agree with where the parts are: no finding
	run --separate-stderr pmactl create "$T/ns0/q" --size 64M \
		--parts "$T/ns1/q.1" --node 0,1
	assert_success
	run --separate-stderr env PMAD_LOG=warning pmactl inspect "$T/ns0/q"
	assert_success
	[ -z "$stderr" ] || fail "$stderr"
	run --separate-stderr pmactl fsck --json "$T/ns0/q"
	assert_success
	echo "$output" | jq -e '.warnings == 0'
}
