#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# PMAlloc after kill -9: pma-workload --stress (2 threads, mixed sizes) is
# killed at a random moment, then the crashed pool is read by pmactl log and
# inspect --heap, and pma-workload --verify recovers and checks it.

load helpers

setup() {
	pmalloc_setup
}

teardown() {
	if [ -n "${STRESS_PID:-}" ]; then
		kill -9 "$STRESS_PID" 2>/dev/null || true
	fi
}

# wait_for FILE TEXT: until FILE holds TEXT, at most 5 s
wait_for() {
	local i
	for ((i = 0; i < 500; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.01
	done
	fail "no '$2' in $1 after 5 s: $(cat "$1" "$T/stress.err")"
}

# stress_kill POOL MAX_MS [early]: start --stress on POOL, wait until it
# runs (with "early": do not wait, so the kill may hit recovery), sleep a
# random 0..MAX_MS ms, kill -9 it; it must not have exited on its own
stress_kill() {
	local rc
	"$WORKLOAD" --stress "$1" >"$T/stress.out" 2>"$T/stress.err" 3>&- &
	STRESS_PID=$!
	[ "${3:-}" = early ] || wait_for "$T/stress.out" running
	sleep "$(printf '0.%03d' $((RANDOM % $2)))"
	# if it exited on its own, the kill finds nothing: its status and
	# stderr below say why
	kill -9 "$STRESS_PID" 2>/dev/null || true
	rc=0
	wait "$STRESS_PID" || rc=$?
	STRESS_PID=
	[ "$rc" = 137 ] ||
		fail "stress exit $rc, not killed: $(cat "$T/stress.out" "$T/stress.err")"
}

# live blocks of the (crashed) heap as pmactl inspect --heap sees them
inspect_live() {
	run --separate-stderr pmactl inspect --heap --json "$1"
	assert_success
	jq '[.heap.classes[].used] + [.heap.extents] | add' <<<"$output"
}

# verify POOL: --verify passes; prints its live block count
verify() {
	run --separate-stderr "$WORKLOAD" --verify "$1"
	[ "$status" = 0 ] || fail "verify exit $status: $stderr"
	[[ "$output" == "verify: ok, "* ]] || fail "$output"
	sed -E 's/.* ([0-9]+) live blocks.*/\1/' <<<"$output"
}

@test "kill -9 during --stress, 5 rounds: log, inspect --heap and --verify" {
	local round live before
	mkpool_size "$T/p" 32M
	for round in 1 2 3 4 5; do
		stress_kill "$T/p" 200
		before=$(md5sum <"$T/p")
		run --separate-stderr pmactl log --json "$T/p"
		assert_success
		jq -e '.count == (.records | length)' <<<"$output" >/dev/null ||
			fail "round $round: log count: $output"
		live=$(inspect_live "$T/p")
		[ "$(md5sum <"$T/p")" = "$before" ] ||
			fail "round $round: log or inspect wrote the pool"
		# the read-only view is the state recovery makes
		[ "$(verify "$T/p")" = "$live" ] ||
			fail "round $round: inspect saw $live live blocks"
	done
}

@test "kill -9 soon after start (during recovery or the first ops)" {
	local round
	mkpool_size "$T/p" 32M
	stress_kill "$T/p" 100
	for round in 1 2 3 4 5; do
		stress_kill "$T/p" 30 early
		verify "$T/p" >/dev/null
	done
}

@test "--stress stops after OPS ops or SECONDSs and closes cleanly" {
	mkpool_size "$T/p" 32M
	run --separate-stderr "$WORKLOAD" --stress "$T/p" 5000
	assert_success
	assert_line --index 0 --partial "stress: running, seed"
	assert_line --index 1 --regexp "^stress: [0-9]+ allocs, [0-9]+ frees"
	run --separate-stderr "$WORKLOAD" --stress "$T/p" 0.2s
	assert_success
	run --separate-stderr pmactl log --json "$T/p"
	assert_success
	[ "$(jq .count <<<"$output")" = 0 ]
	verify "$T/p" >/dev/null
}

@test "--verify rejects a block named by two slots" {
	mkpool_size "$T/p" 32M
	run --separate-stderr "$WORKLOAD" --stress "$T/p" 500
	assert_success
	run --separate-stderr "$WORKLOAD" --corrupt "$T/p"
	assert_success
	run --separate-stderr "$WORKLOAD" --verify "$T/p"
	assert_failure 1
	[[ "$stderr" == *"name the same block"* ]] || fail "$stderr"
}

@test "--verify of a heap whose root is not a stress root fails" {
	mkpool_size "$T/p" 32M
	run --separate-stderr "$WORKLOAD" "$T/p" 10 64
	assert_success
	run --separate-stderr "$WORKLOAD" --verify "$T/p"
	assert_failure 1
	[[ "$stderr" == *"root"* ]] || fail "$stderr"
}

@test "pma-workload usage errors exit 2" {
	local args
	for args in "" "--stress" "--stress $T/p 12x" "--stress $T/p -1" \
		"--verify" "--verify a b" "--bogus $T/p" "$T/p 10" "$T/p x 64" \
		"$T/p 10 64 oops"; do
		# shellcheck disable=SC2086 # split args on purpose
		run --separate-stderr "$WORKLOAD" $args
		[ "$status" = 2 ] || fail "'$args': exit $status"
		[[ "$stderr" == *"usage: pma-workload"* ]] || fail "'$args': $stderr"
	done
	run --separate-stderr "$WORKLOAD" --help
	assert_success
	assert_output --partial "--stress PATH"
}
