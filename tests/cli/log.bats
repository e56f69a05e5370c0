#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl log and pmactl inspect --heap: the PMAlloc heap seen read-only.

load helpers

setup() {
	pmalloc_setup
}

# heap_pool PATH COUNT SIZE [crash]: a 32 MiB pool whose heap saw COUNT
# allocations of SIZE bytes, every third freed
heap_pool() {
	mkpool_size "$1" 32M
	run --separate-stderr "$WORKLOAD" "$@"
	assert_success
}

@test "log --help" {
	run pmactl log --help
	assert_success
	assert_output --partial "usage: pmactl log"
}

@test "log of a cleanly closed heap has no records" {
	heap_pool "$T/p" 30 64
	run --separate-stderr pmactl log --json "$T/p"
	assert_success
	[ "$(jq .count <<<"$output")" = 0 ]
	run --separate-stderr pmactl log "$T/p"
	assert_success
	assert_output --partial "0 records not checkpointed"
}

@test "log after a crash shows what recovery will replay" {
	heap_pool "$T/p" 30 64 crash
	run --separate-stderr pmactl log --json "$T/p"
	assert_success
	local n allocs frees
	n=$(jq .count <<<"$output")
	allocs=$(jq '[.records[] | select(.type == "alloc")] | length' <<<"$output")
	frees=$(jq '[.records[] | select(.type == "free")] | length' <<<"$output")
	[ "$n" -eq "$(jq '.records | length' <<<"$output")" ]
	# 30 blocks + the root; 10 freed (the log may have been checkpointed
	# part-way, so at most that many)
	[ "$allocs" -ge 1 ] && [ "$allocs" -le 31 ] || fail "allocs=$allocs"
	[ "$frees" -le 10 ] || fail "frees=$frees"
	jq -e '.records[] | select(.type == "alloc") | .dest | startswith("0x")' \
		<<<"$output" >/dev/null
	run --separate-stderr pmactl log "$T/p"
	assert_success
	assert_output --partial "ARENA"
	assert_output --partial "alloc"
}

@test "log shows an extent op as one record in either log form" {
	# 300000 B: one log slot per op; 9000000 B (> 8 MiB): two. The pool
	# is large enough that freeing one 9 MB extent does not trigger a
	# checkpoint (a quarter of the heap pending)
	local p size step
	for p in 300000:1 9000000:2; do
		size=${p%%:*} step=${p##*:}
		mkpool_size "$T/p$size" 128M
		run --separate-stderr "$WORKLOAD" "$T/p$size" 2 "$size" crash
		assert_success
		run --separate-stderr pmactl log --json "$T/p$size"
		assert_success
		# the two allocations, then the free of the first one
		[ "$(jq -c '[.records[] | select(.type | startswith("ext")) | .type]' \
			<<<"$output")" = '["ext_alloc","ext_alloc","ext_lfree"]' ] ||
			fail "types: $output"
		# whole pages, at least the size asked for
		jq -e --argjson s "$size" '[.records[] |
			select(.type | startswith("ext")) | .size] |
			all(. >= $s and . % 4096 == 0)' <<<"$output" >/dev/null ||
			fail "sizes: $output"
		# consecutive extent ops are step slots apart
		jq -e --argjson k "$step" '[.records[] |
			select(.type | startswith("ext")) | .index] |
			.[1] - .[0] == $k and .[2] - .[1] == $k' \
			<<<"$output" >/dev/null || fail "indexes: $output"
	done
}

@test "log and inspect --heap never write the pool" {
	heap_pool "$T/p" 60 128 crash
	local before
	before=$(md5sum <"$T/p")
	run --separate-stderr pmactl log "$T/p"
	assert_success
	run --separate-stderr pmactl inspect --heap "$T/p"
	assert_success
	[ "$(md5sum <"$T/p")" = "$before" ]
}

@test "log --arena selects one arena; a missing arena is an error" {
	heap_pool "$T/p" 20 64 crash
	run --separate-stderr pmactl log --json --arena 0 "$T/p"
	assert_success
	[ "$(jq '[.records[] | select(.arena != 0)] | length' <<<"$output")" = 0 ]
	run --separate-stderr pmactl log --arena 999 "$T/p"
	assert_failure 1
	[[ "$stderr" == *"arena 999 does not exist"* ]] || fail "$stderr"
}

@test "log usage errors" {
	run --separate-stderr pmactl log
	assert_failure 2
	[[ "$stderr" == *"missing POOL"* ]] || fail "$stderr"
	run --separate-stderr pmactl log --arena x "$T/p"
	assert_failure 2
	[[ "$stderr" == *"invalid arena 'x'"* ]] || fail "$stderr"
}

@test "log and inspect --heap of a pool without a heap fail clearly" {
	mkpool_size "$T/p" 32M
	run --separate-stderr pmactl log "$T/p"
	assert_failure 1
	[[ "$stderr" == *"cannot open the heap"* ]] || fail "$stderr"
	run --separate-stderr pmactl inspect --heap "$T/p"
	assert_failure 1
	[[ "$stderr" == *"cannot open the heap"* ]] || fail "$stderr"
}

@test "inspect --heap reports classes and used blocks" {
	heap_pool "$T/p" 90 64
	run --separate-stderr pmactl inspect --heap --json "$T/p"
	assert_success
	# 90 allocated, every third freed: 60 live 64-byte blocks
	[ "$(jq '.heap.classes[] | select(.block_size == 64) | .used' <<<"$output")" = 60 ]
	[ "$(jq '.heap.used > 0 and .heap.free > 0' <<<"$output")" = true ]
	[ "$(jq '.heap.narenas >= 1' <<<"$output")" = true ]
	jq -e '.heap.largest_free_extent > 0' <<<"$output" >/dev/null
	run --separate-stderr pmactl inspect --heap "$T/p"
	assert_success
	assert_output --partial "heap:"
	assert_output --partial "largest free:"
	assert_output --partial "CLASS"
}

@test "inspect --heap shows each arena's slabs and log" {
	heap_pool "$T/p" 90 64 crash
	run --separate-stderr pmactl inspect --heap --json "$T/p"
	assert_success
	# one entry per arena; their slab blocks and log records add up to
	# the heap's (60 live 64-byte blocks and the root's slots, the
	# records recovery replays)
	[ "$(jq '.heap.arenas | length' <<<"$output")" = "$(jq .heap.narenas <<<"$output")" ]
	[ "$(jq '[.heap.arenas[].used] | add' <<<"$output")" = \
		"$(jq '.heap.used - .heap.extent_bytes' <<<"$output")" ]
	jq -e "[.heap.arenas[].used] | add >= $((60 * 64))" <<<"$output" >/dev/null
	[ "$(jq '[.heap.arenas[].log_records] | add' <<<"$output")" = \
		"$(jq .heap.log_records <<<"$output")" ]
	jq -e '[.heap.arenas[].log_records] | add > 0' <<<"$output" >/dev/null
	jq -e '.heap.arenas[0] | has("slabs") and has("free") and
		has("remote_frees") and has("local_free")' <<<"$output" >/dev/null
	run --separate-stderr pmactl inspect --heap "$T/p"
	assert_success
	assert_output --partial "arenas in use"
	assert_output --regexp "ARENA +SLABS +USED +FREE +LOG RECORDS +REMOTE FREES +LOCAL FREE"
}

@test "inspect --heap shows the page map summary open reads" {
	heap_pool "$T/p" 30 64
	run --separate-stderr pmactl inspect --heap --json "$T/p"
	assert_success
	[ "$(jq .heap.layout_version <<<"$output")" = 12 ]
	[ "$(jq .heap.map_group_size <<<"$output")" = 2097152 ]
	# a 32 MiB pool: about 15 groups of 2 MiB, one used by 30 blocks
	jq -e '.heap.map_groups >= 14 and .heap.map_groups <= 16' \
		<<<"$output" >/dev/null
	[ "$(jq .heap.map_groups_marked <<<"$output")" = 1 ]
	[ "$(jq .heap.map_summary_invalid <<<"$output")" = 0 ]
	run --separate-stderr pmactl inspect --heap "$T/p"
	assert_success
	assert_output --regexp "page map: +layout 12; open reads 1 of 1[456] groups of 2 MiB"
	refute_output --partial "warning:"
}

@test "inspect --heap after a crash counts the replayed state" {
	heap_pool "$T/p" 90 64 crash
	run --separate-stderr pmactl inspect --heap --json "$T/p"
	assert_success
	[ "$(jq '.heap.classes[] | select(.block_size == 64) | .used' <<<"$output")" = 60 ]
}
