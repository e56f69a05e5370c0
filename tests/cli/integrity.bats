#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Pool-level integrity (issue 15): a damaged header copy never rolls a pool
# back, every part is locked while its pool is open, files are compared by
# device and inode, create --force never follows a symlink nor overwrites a
# non-pool or a pool it cannot rebuild, and odd input is handled sanely.

load helpers

setup() {
	pmalloc_setup
	HOLD_PID=
}

teardown() {
	if [ -n "$HOLD_PID" ]; then
		kill -9 "$HOLD_PID" 2>/dev/null || true
		wait "$HOLD_PID" 2>/dev/null || true
	fi
}

POOL_HDR_INCOMPAT_OFF=48 # uint64 feat_incompat in struct pool_hdr

# hold POOL: a writer (pma-workload --stress) keeps POOL open for 60 s
hold() {
	local i
	"$WORKLOAD" --stress "$1" 60s >"$T/hold.out" 2>"$T/hold.err" 3>&- &
	HOLD_PID=$!
	for ((i = 0; i < 500; i++)); do
		grep -q running "$T/hold.out" 2>/dev/null && return 0
		sleep 0.01
	done
	fail "the writer did not start: $(cat "$T/hold.err")"
}

# heap_pool POOL: a pool with a PMAlloc heap (a region), as created
heap_pool() {
	mkpool_size "$1" 8M
	run --separate-stderr "$WORKLOAD" "$1" 4 100
	assert_success
}

# ------------------------------------------------------------ item 8

@test "out-of-range size and an empty path are usage errors" {
	run --separate-stderr pmactl create "$T/p" --size 18446744073709486080
	assert_failure 2
	[[ "$stderr" == *"too large"* ]] || fail "$stderr"
	run --separate-stderr pmactl create "" --size 1M
	assert_failure 2
	[[ "$stderr" == *"empty"* ]] || fail "$stderr"
}

@test "pmactl help help shows the help" {
	run --separate-stderr pmactl help help
	assert_success
	assert_output --partial "usage: pmactl"
}

@test "a long path does not cut the reason off" {
	local long=$T i
	for ((i = 0; i < 6; i++)); do
		long+=/$(printf 'd%.0s' {1..200})
	done
	run --separate-stderr pmactl inspect "$long/pool"
	assert_failure 1
	[[ "$stderr" == *"no such file" ]] || fail "$stderr"
	run --separate-stderr pmactl create "$long/pool" --size 1M
	assert_failure 1
	[[ "$stderr" == *"No such file or directory" ]] || fail "$stderr"
}

@test "control characters in paths are escaped" {
	local p=$T/a$'\n'b$'\e'[31mc
	run --separate-stderr pmactl create "$p" --size 1M
	assert_success
	assert_output --partial 'a\nb\x1b[31mc'
	[[ "$output" != *$'\e'* ]] || fail "raw escape in: $output"
	run --separate-stderr pmactl inspect "$p"x
	assert_failure 1
	[[ "$stderr" == *'a\nb\x1b[31mcx'* ]] || fail "$stderr"
	[ "$(wc -l <<<"$stderr")" = 1 ] || fail "$stderr"
	run --separate-stderr pmactl inspect -j "$p"
	assert_success
	[ "$(jq -r '.parts[0].path' <<<"$output")" = "$p" ]
}

@test "a NUMA node the machine does not have is refused" {
	run --separate-stderr pmactl create "$T/p" --size 1M --node 1000
	assert_failure 2
	[[ "$stderr" == *"node 1000"* ]] || fail "$stderr"
	[ ! -e "$T/p" ]
}
