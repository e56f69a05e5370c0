#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl fsck over a heap of two parts (issue 20): a clean and a
# crashed 2-part pool check consistent, damage in part 1's heap is found
# with its exact code and part (JSON "part", message "part 1: "),
# --repair and --repair --advanced make their stores in part 1, and
# --recovery replays both parts' logs on a private view without writing
# either file. The pools come from tests/corrupt/fsck-damage make2 (two
# threads take the parts in turn; dest words cross parts; each thread
# frees the other part's blocks; a child crashes with records in every
# log) and from pma-workload --stress on a fake 2-node topology.

load helpers

setup() {
	pmalloc_setup
	DAMAGE="$PMAD_BUILDDIR/tests/corrupt/fsck-damage"
	[ -x "$DAMAGE" ] || fail "no $DAMAGE: build it with make check"
}

teardown() {
	if [ -n "${STRESS_PID:-}" ]; then
		kill -9 "$STRESS_PID" 2>/dev/null || true
		wait "$STRESS_PID" 2>/dev/null || true
	fi
}

# fsck_json POOL [ARGS]: pmactl --json fsck, the JSON parsed and counted
fsck_json() {
	local pool=$1
	shift
	run --separate-stderr pmactl --json fsck "$@" "$pool"
	jq -e '.errors == ([.findings[] | select(.severity == "error")] |
		length) and .consistent == (.errors == 0 and
		(.recovery.consistent_after // true))' <<<"$output" \
		>/dev/null || fail "bad JSON ($status): $output $stderr"
}

# damaged2 KIND CODE: a fresh 2-part pool, part 1's heap damaged by KIND,
# reports CODE as an error of part 1 (and nothing of part 0), exit 1
damaged2() {
	"$DAMAGE" make2 "$T/p" || fail "fsck-damage make2 failed"
	"$DAMAGE" "$1" "$T/p" 1 || fail "fsck-damage $1 failed"
	local b0 b1
	b0=$(md5sum <"$T/p")
	b1=$(md5sum <"$T/p.1")
	fsck_json "$T/p"
	assert_equal "$status" 1
	jq -e --arg c "$2" 'any(.findings[]; .code == $c and
		.severity == "error" and .part == 1 and
		(.message | startswith("part 1: ")))' <<<"$output" \
		>/dev/null || fail "no error $2 in part 1: $output"
	jq -e 'all(.findings[]; .part == 1)' <<<"$output" >/dev/null ||
		fail "a finding outside part 1: $output"
	[ "$(md5sum <"$T/p")" = "$b0" ] || fail "fsck wrote part 0"
	[ "$(md5sum <"$T/p.1")" = "$b1" ] || fail "fsck wrote part 1"
	run --separate-stderr pmactl fsck "$T/p"
	assert_equal "$status" 1
	assert_line --partial "error: $2: part 1: "
}

# the heap of each part has records in its logs (a crashed child)
@test "2 parts: a crashed pool checks consistent; both parts' logs hold records" {
	"$DAMAGE" make2 "$T/p"
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '[.findings[] | select(.severity != "info")] |
		length' <<<"$output")" 0
	run --separate-stderr pmactl --json inspect --recovery "$T/p"
	assert_success
	jq -e '[.recovery.arenas[] | select(.operations > 0) | .part] |
		unique == [0, 1]' <<<"$output" >/dev/null ||
		fail "not both parts pending: $output"
	run --separate-stderr pmactl fsck "$T/p"
	assert_success
	assert_output "consistent: $T/p (0 errors, 0 warnings)"
}

@test "2 parts, damage in part 1: page map entry -> pmap-entry-check" {
	damaged2 pmap-entry pmap-entry-check
}

@test "2 parts, damage in part 1: heap header -> heap-hdr-checksum" {
	damaged2 heap-hdr heap-hdr-checksum
}

@test "2 parts, damage in part 1: arena head -> arena-head-check" {
	damaged2 arena-head arena-head-check
}

@test "2 parts, damage in part 1: a log record -> log-record-damaged" {
	damaged2 log-record log-record-damaged
}

@test "2 parts, damage in part 1: overlapping extents -> pmap-overlap" {
	damaged2 pmap-overlap pmap-overlap
}

@test "2 parts, damage in part 1: slab class -> slab-class" {
	damaged2 slab-class slab-class
}

@test "2 parts: part 1's damaged slot ahead is repaired (fsck's store in part 1)" {
	damaged2 slot-ahead log-slot-damaged
	cp "$T/p" "$T/ref0"
	run --separate-stderr pmactl --json fsck --repair --yes \
		--backup "$T/bk" "$T/p"
	assert_success
	jq -e '.repair == "repaired" and .errors_after_repair == 0 and
		any(.repairs[]; .code == "repair-log-slot" and
		(.message | startswith("part 1: ")))' <<<"$output" \
		>/dev/null || fail "$output"
	# both parts backed up (part 1 as FILE.1), before the repair
	[ -f "$T/bk" ] && [ -f "$T/bk.1" ] || fail "no backup of both parts"
	fsck_json "$T/p"
	assert_success
	assert_equal "$(jq '[.findings[] | select(.severity != "info")] |
		length' <<<"$output")" 0
	# and it opens and works
	run --separate-stderr "$WORKLOAD" "$T/p" 2 50
	assert_success
	fsck_json "$T/p"
	assert_success
}

@test "2 parts: part 1's summary word and unmarked entries are repaired" {
	"$DAMAGE" make2 "$T/p"
	"$DAMAGE" summary "$T/p" 1
	fsck_json "$T/p"
	assert_equal "$status" 1
	jq -e 'any(.findings[]; .code == "pmap-summary-check" and .part == 1)' \
		<<<"$output" >/dev/null || fail "$output"
	run --separate-stderr pmactl fsck --repair --yes "$T/p"
	assert_success
	assert_line "repaired: $T/p (1 error found, none left)"
	"$DAMAGE" unmarked "$T/p" 1
	fsck_json "$T/p"
	assert_success
	jq -e 'any(.findings[]; .code == "pmap-entry-unmarked" and
		.severity == "warning" and .part == 1)' <<<"$output" \
		>/dev/null || fail "$output"
	run --separate-stderr pmactl fsck --repair --yes "$T/p"
	assert_success
	assert_line --partial "repair: repair-pmap-unmarked: part 1: "
	fsck_json "$T/p"
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
}

@test "2 parts: a damaged log record of part 1 needs --advanced, which drops it" {
	damaged2 log-record log-record-damaged
	run --separate-stderr pmactl fsck --repair --yes "$T/p"
	assert_equal "$status" 3
	run --separate-stderr pmactl fsck --repair --yes --advanced "$T/p"
	assert_success
	assert_line --partial "repair: repair-drops-record: part 1: "
	fsck_json "$T/p"
	assert_success
	assert_equal "$(jq '[.findings[] | select(.severity != "info")] |
		length' <<<"$output")" 0
}

@test "2 parts: a damaged arena head of part 1 needs --advanced, which drops its log there" {
	damaged2 arena-head arena-head-check
	cp "$T/p" "$T/ref0"
	cp "$T/p.1" "$T/ref1"
	run --separate-stderr pmactl fsck --repair --yes "$T/p"
	assert_equal "$status" 3
	cmp "$T/p" "$T/ref0" || fail "part 0 written without --advanced"
	cmp "$T/p.1" "$T/ref1" || fail "part 1 written without --advanced"
	run --separate-stderr pmactl fsck --repair --yes --advanced "$T/p"
	assert_success
	assert_line --regexp "^repair: repair-drops-arena-record: part 1: arena 0 log record [0-9]+ "
	assert_line --regexp "^repair: repair-drops-arena: part 1: arena 0: head set to [0-9]+"
	fsck_json "$T/p"
	assert_success
	assert_equal "$(jq '[.findings[] | select(.severity != "info")] |
		length' <<<"$output")" 0
}

@test "2 parts: --recovery replays both parts on a private view, writes neither file" {
	"$DAMAGE" make2 "$T/p"
	"$DAMAGE" torn-tail "$T/p" 1
	cp "$T/p" "$T/ref0"
	cp "$T/p.1" "$T/ref1"
	fsck_json "$T/p" --recovery
	assert_success
	jq -e '.recovery.checked and .recovery.needed and
		.recovery.consistent_after and .recovery.errors_after == 0 and
		.recovery.torn_tails == 1 and
		(.recovery.arenas[] | select(.part == 1 and .arena == 0) |
		.torn_tail) and
		([.recovery.arenas[] | select(.operations > 0) | .part] |
		unique == [0, 1])' <<<"$output" >/dev/null || fail "$output"
	cmp "$T/p" "$T/ref0" || fail "fsck --recovery wrote part 0"
	cmp "$T/p.1" "$T/ref1" || fail "fsck --recovery wrote part 1"
	run --separate-stderr pmactl fsck --recovery "$T/p"
	assert_success
	assert_line --regexp "^ +PART +ARENA +HEAD +TAIL +OPS +TORN +RFREE-PENDING +OPS BY TYPE$"
	assert_line "recovered state: consistent (recovery ran on a private view: the pool is not written)"
}

# kill_rounds POOL N: N rounds of kill -9 during --stress; after each,
# fsck --recovery says recovery is consistent, the recovered pool
# verifies and fsck finds nothing
kill_rounds() {
	local round
	for round in $(seq "$2"); do
		"$WORKLOAD" --stress "$1" >"$T/stress.out" 2>&1 3>&- &
		STRESS_PID=$!
		sleep "0.$((RANDOM % 300 + 200))"
		kill -9 "$STRESS_PID"
		wait "$STRESS_PID" || true
		STRESS_PID=
		fsck_json "$1" --recovery
		[ "$status" = 0 ] || fail "round $round, crashed: $output"
		jq -e '.recovery.consistent_after' <<<"$output" >/dev/null ||
			fail "round $round: $output"
		run --separate-stderr "$WORKLOAD" --verify "$1"
		assert_success
		fsck_json "$1"
		[ "$status" = 0 ] || fail "round $round, recovered: $output"
		assert_equal "$(jq '.findings | length' <<<"$output")" 0
	done
}

@test "2 parts on 2 fake nodes: kill -9 during --stress, 3 rounds: consistent, recovery consistent" {
	[ "$(nproc)" -ge 2 ] || skip "needs CPUs 0 and 1"
	export PMAD_FAKE_NUMA=2:0=0,1=1
	run --separate-stderr pmactl create "$T/p" --size 32M --parts "$T/p.1" \
		--node 0,1
	assert_success
	kill_rounds "$T/p" 3
	# the stress threads used both parts' heaps
	run --separate-stderr pmactl --json inspect --numa "$T/p"
	assert_success
	jq -e '(.numa.parts | length) == 2' <<<"$output" >/dev/null ||
		fail "$output"
}

@test "2 parts: a dest word in the other part's heap metadata -> log-op-dest" {
	local part
	for part in 0 1; do
		"$DAMAGE" make2 "$T/p"
		"$DAMAGE" dest-meta "$T/p" "$part"
		fsck_json "$T/p"
		assert_equal "$status" 1
		# the record is in part $part's log, its dest in the other part
		# (dest: byte 0x10040 of the other part, its heap header)
		local dest=0x10040
		[ "$part" = 1 ] || dest=0x100000000010040
		jq -e --argjson p "$part" --arg d "dest word $dest " \
			'any(.findings[]; .code == "log-op-dest" and
			.part == $p and (.message | contains($d)))' \
			<<<"$output" >/dev/null || fail "part $part: $output"
	done
}

@test "2 parts of 2 regions: kill -9 during --stress, 2 rounds: consistent, recovery consistent" {
	[ "$(nproc)" -ge 2 ] || skip "needs CPUs 0 and 1"
	export PMAD_FAKE_NUMA=2:0=0,1=1
	run --separate-stderr pmactl create "$T/p" --size 32M --parts "$T/p.1" \
		--node 0,1 --regions 2
	assert_success
	kill_rounds "$T/p" 2
}
