#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl compact (issue 19): empty slabs released, holes punched in free
# runs (the file's allocated bytes drop), live blocks intact, the dry run
# changes nothing, and bad input (not a pool, no heap, pool in use, usage)
# fails with a clear error and leaves the file as it was.

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

# frag_pool POOL: 64 MiB, 30000 blocks of 120 B (class 128) written with
# a pattern, all but every 1000th freed (closed: one kept empty slab is left)
frag_pool() {
	mkpool_size "$1" 64M
	run --separate-stderr "$WORKLOAD" --frag "$1" 30000 120 1000
	assert_success
}

allocated() {
	echo $(($(stat -c %b "$1") * 512))
}

@test "compact releases empty slabs, punches free runs, keeps blocks" {
	frag_pool "$T/p"
	local before
	before=$(allocated "$T/p")
	run --separate-stderr pmactl compact --json "$T/p"
	assert_success
	jq -e '.dry_run == false and .holes_punched == true' <<<"$output"
	jq -e '.slabs_released >= 1 and .log_records_after == 0' <<<"$output"
	jq -e '.largest_free_after >= .largest_free_before' <<<"$output"
	jq -e '.bytes_reclaimed > 50000000' <<<"$output"
	jq -e ".file_bytes_before == $before" <<<"$output"
	[ "$(allocated "$T/p")" -lt $((before / 4)) ] ||
		fail "file still has $(allocated "$T/p") bytes allocated"
	run --separate-stderr "$WORKLOAD" --frag-check "$T/p"
	assert_success
	assert_output "30 blocks intact"
	run --separate-stderr pmactl fsck "$T/p"
	assert_success
	# a second compaction finds nothing left to release
	run --separate-stderr pmactl compact --json "$T/p"
	assert_success
	jq -e '.slabs_released == 0 and .bytes_reclaimed == 0' <<<"$output"
}

@test "compact of large freed extents gives their pages back" {
	mkpool_size "$T/p" 64M
	run --separate-stderr "$WORKLOAD" --frag "$T/p" 100 300000 10
	assert_success
	run --separate-stderr pmactl compact --json "$T/p"
	assert_success
	# 90 of the 100 extents of 300000 B (74 pages) were freed
	jq -e '.punched_bytes >= 90 * 74 * 4096' <<<"$output"
	run --separate-stderr "$WORKLOAD" --frag-check "$T/p"
	assert_success
	assert_output "10 blocks intact"
}

@test "compact of a pool of two parts punches both files" {
	run --separate-stderr pmactl create "$T/p" --size 64M --parts "$T/p1"
	assert_success
	run --separate-stderr "$WORKLOAD" --frag "$T/p" 30000 100 1000
	assert_success
	local before0 before1
	before0=$(allocated "$T/p")
	before1=$(allocated "$T/p1")
	run --separate-stderr pmactl compact --json "$T/p"
	assert_success
	jq -e ".file_bytes_before == $((before0 + before1))" <<<"$output"
	[ "$(allocated "$T/p")" -lt $((before0 / 4)) ] || fail "part 0 not punched"
	[ "$(allocated "$T/p1")" -lt $((before1 / 4)) ] || fail "part 1 not punched"
	run --separate-stderr "$WORKLOAD" --frag-check "$T/p"
	assert_success
	assert_output "30 blocks intact"
}

@test "compact --dry-run reports the compaction and changes nothing" {
	frag_pool "$T/p"
	cp "$T/p" "$T/copy"
	run --separate-stderr pmactl compact --dry-run --json "$T/p"
	assert_success
	local plan=$output
	jq -e '.dry_run == true and .holes_punched == false' <<<"$plan"
	cmp "$T/p" "$T/copy" || fail "the dry run changed the pool"
	run --separate-stderr pmactl compact --json "$T/p"
	assert_success
	# the plan said what the compaction then did
	for k in slabs_released free_runs_after largest_free_after \
		punched_bytes; do
		[ "$(jq ".$k" <<<"$plan")" = "$(jq ".$k" <<<"$output")" ] ||
			fail "$k: plan $(jq ".$k" <<<"$plan"), did $(jq ".$k" <<<"$output")"
	done
}

@test "compact prints a human summary" {
	frag_pool "$T/p"
	run --separate-stderr pmactl compact "$T/p"
	assert_success
	assert_line --regexp '^1 empty slab released$'
	assert_line --regexp '^reclaimed +[0-9.]+ MiB$'
}

@test "compact refuses a file that is not a pool and leaves it alone" {
	head -c 1048576 /dev/urandom >"$T/junk"
	cp "$T/junk" "$T/copy"
	run --separate-stderr pmactl compact "$T/junk"
	assert_failure 1
	[[ "$stderr" == *"pmactl: cannot open the heap of '$T/junk'"* ]] ||
		fail "stderr: $stderr"
	cmp "$T/junk" "$T/copy"
}

@test "compact refuses a pool without a heap and leaves it alone" {
	mkpool "$T/p"
	cp "$T/p" "$T/copy"
	run --separate-stderr pmactl compact "$T/p"
	assert_failure 1
	[[ "$stderr" == *"cannot open the heap of '$T/p'"* ]] ||
		fail "stderr: $stderr"
	cmp "$T/p" "$T/copy"
}

@test "compact refuses a pool in use" {
	mkpool_size "$T/p" 8M
	local i
	"$WORKLOAD" --stress "$T/p" 60s >"$T/hold.out" 2>"$T/hold.err" 3>&- &
	HOLD_PID=$!
	for ((i = 0; i < 500; i++)); do
		grep -q running "$T/hold.out" 2>/dev/null && break
		sleep 0.01
	done
	grep -q running "$T/hold.out" || fail "writer: $(cat "$T/hold.err")"
	run --separate-stderr pmactl compact "$T/p"
	assert_failure 1
	[[ "$stderr" == *"cannot open the heap of '$T/p'"* ]] ||
		fail "stderr: $stderr"
	run --separate-stderr pmactl compact --dry-run "$T/p"
	assert_failure 1
}

@test "compact usage errors exit 2" {
	run --separate-stderr pmactl compact
	assert_failure 2
	[[ "$stderr" == *"missing POOL argument"* ]] || fail "$stderr"
	run --separate-stderr pmactl compact a b
	assert_failure 2
	run --separate-stderr pmactl compact --bogus x
	assert_failure 2
	run --separate-stderr pmactl compact --help
	assert_success
	assert_output --partial "usage: pmactl compact"
}
