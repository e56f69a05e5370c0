#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# What pmactl fsck tells (issue 20): its help says what --repair and
# --advanced do, the text findings name their part and offset, and the
# recovery summaries (fsck --recovery, inspect --recovery) count the
# HDPM file system's recovery too.

load pmad-helpers

setup() {
	pmalloc_setup
	DAMAGE="$PMAD_BUILDDIR/tests/corrupt/fsck-damage"
	HDAMAGE="$PMAD_BUILDDIR/tests/corrupt/hdpm-damage"
	[ -x "$DAMAGE" ] || fail "no $DAMAGE: build it with make check"
	[ -x "$HDAMAGE" ] || fail "no $HDAMAGE: build it with make check"
	P="$T/p"
	MAN=$BATS_TEST_DIRNAME/../../man/pmactl-fsck.1.adoc
	D=""
}

teardown() {
	[ -z "$D" ] || pmad_teardown
}

# text_lines JSON [PREFIX]: the text line of each finding of the JSON
# array on stdin, as fsck prints them: "SEV: CODE: MSG (part P, offset O)"
text_lines() {
	jq -r --arg p "${1:-}" '.[] | "\($p)\(.severity): \(.code): \(.message) (part \(.part), offset \(.offset))"'
}

# assert_text_findings JSON_ARRAY: every finding is a line of $output,
# and every finding line of $output is one of them
assert_text_findings() {
	local want line n=0
	want=$(text_lines "${2:-}" <<<"$1")
	[ -n "$want" ] || fail "no findings: $1"
	while IFS= read -r line; do
		assert_line "$line"
		n=$((n + 1))
	done <<<"$want"
	assert_equal "$(grep -cE "^${2:-}(error|warning|info): " <<<"$output")" "$n"
}

# man_option OPT: the text of OPT's entry in pmactl-fsck(1)'s OPTIONS,
# on one line
man_option() {
	awk -v o="*--$1*::" 'index($0, o) { on = 1; next }
		on && /^$/ { exit } on { printf "%s ", $0 }' "$MAN" |
		tr -s ' \t' ' '
}

@test "--help and pmactl-fsck(1) say what --repair and --advanced repair" {
	run --separate-stderr pmactl fsck --help
	assert_success
	local help
	help=$(tr -s ' \n' ' ' <<<"$output")
	[[ "$help" != *"what the library's recovery repairs"* ]] ||
		fail "stale --repair help: $output"
	local repair advanced
	repair=$(man_option repair)
	advanced=$(man_option advanced)
	[ -n "$repair" ] && [ -n "$advanced" ] || fail "no OPTIONS entries"
	# --repair: fsck's own stores, the library's open, the HDPM mount
	# and its leaks
	local what
	for what in "slab bitmap bank rebuilt" "damaged log slot" \
		"unmarked page map entries" "HDPM page log's torn tail" \
		"damaged header copy rewritten" "summary words" "log replay" \
		"torn log tails dropped" "HDPM mount" "(leaks) freed"; do
		[[ "$help" == *"$what"* ]] || fail "--help lacks '$what'"
		[[ "$repair" == *"$what"* ]] || fail "man --repair lacks '$what'"
	done
	# --advanced: what it drops, and that it says what is lost
	for what in "log cut at a damaged" "whole arena's log dropped" \
		"HDPM page log cut at a damaged entry"; do
		[[ "$help" == *"$what"* ]] || fail "--help lacks '$what'"
		[[ "$advanced" == *"$what"* ]] ||
			fail "man --advanced lacks '$what'"
	done
	[[ "$help" == *"listing what is lost"* ]] || fail "$output"
	[[ "$advanced" == *"listing what"* ]] || fail "$advanced"
}

@test "text findings name their part and offset, as the JSON does" {
	# part 0: the pool header copy A, at its offset
	"$DAMAGE" make "$P" >/dev/null || fail "fsck-damage make failed"
	"$DAMAGE" hdr-a "$P" || fail "fsck-damage hdr-a failed"
	run --separate-stderr pmactl fsck "$P"
	assert_equal "$status" 1
	assert_line --regexp "^error: pool-hdr-checksum: .* \(part 0, offset 0x2000\)$"
	# every finding, info too, of a heap over two parts damaged in part 1
	"$DAMAGE" make2 "$T/q" >/dev/null || fail "fsck-damage make2 failed"
	"$DAMAGE" slab-class "$T/q" 1 || fail "fsck-damage slab-class failed"
	run --separate-stderr pmactl --json fsck "$T/q"
	assert_equal "$status" 1
	local json
	json=$(jq -c .findings <<<"$output")
	jq -e 'any(.[]; .part == 1 and .code == "slab-class")' \
		<<<"$json" >/dev/null || fail "no slab-class in part 1: $json"
	run --separate-stderr pmactl fsck -v "$T/q"
	assert_equal "$status" 1
	assert_text_findings "$json"
	assert_line "inconsistent: $T/q (2 errors, 0 warnings)"
	# info findings, with -v only (a pool with no heap)
	mkpool "$T/r"
	run --separate-stderr pmactl --json fsck "$T/r"
	assert_success
	json=$(jq -c .findings <<<"$output")
	run --separate-stderr pmactl fsck -v "$T/r"
	assert_success
	assert_text_findings "$json"
	assert_line --regexp "^info: heap-none: .* \(part 0, offset 0x[0-9a-f]+\)$"
}

@test "through pmad, text findings name their part and offset too" {
	pmad_setup
	start_pmad
	run pmactl --socket "$S" create fs --size 16M
	assert_success
	stop_pmad
	run --separate-stderr "$HDAMAGE" make "$SD/fs.pool"
	assert_success
	run --separate-stderr "$HDAMAGE" page-shared "$SD/fs.pool"
	assert_success
	start_pmad
	run --separate-stderr pmactl --socket "$S" --json fsck fs
	assert_equal "$status" 1
	local json
	json=$(jq -c .findings <<<"$output")
	run --separate-stderr pmactl --socket "$S" fsck -v fs
	assert_equal "$status" 1
	assert_text_findings "$json"
	stop_pmad
}

# ------------------------------------------------------------ recovery

# hcrash KIND: a file system that hdpm-damage KIND leaves in $P
hcrash() {
	mkpool_size "$P" 16M
	run --separate-stderr "$HDAMAGE" make "$P"
	assert_success
	run --separate-stderr "$HDAMAGE" "$1" "$P"
	assert_success
}

# pending_json: inspect --recovery's "recovery" object of $P into $pending
pending_json() {
	run --separate-stderr pmactl --json inspect --recovery "$P"
	assert_success
	pending=$(jq -c .recovery <<<"$output")
}

# fsck_recovery_json: fsck --recovery --json of $P, exit 0; its
# "recovery" is inspect's object plus the check of the recovered state
fsck_recovery_json() {
	run --separate-stderr pmactl --json fsck --recovery "$P"
	assert_success
	assert_equal "$(jq -c '.recovery | del(.checked, .consistent_after,
		.errors_after, .findings)' <<<"$output")" "$pending"
	jq -e '.recovery.consistent_after and .recovery.errors_after == 0' \
		<<<"$output" >/dev/null || fail "$output"
}

# hdpm_recovered UNDID FINISHED MERGES: the hdpm-recovery finding of the
# last fsck --recovery --json says the mount did that on the private view
hdpm_recovered() {
	jq -e --arg m "undid $1 operation(s), finished $2, finished or undid $3 background merge(s)" \
		'[.recovery.findings[] | select(.code == "hdpm-recovery") |
		.message | contains($m)] == [true]' <<<"$output" \
		>/dev/null || fail "not '$1 $2 $3': $output"
}

@test "an interrupted HDPM operation: fsck and inspect --recovery count it" {
	hcrash crash-tx
	cp "$P" "$T/ref"
	# the journal slot of the operation, as fsck's check names it
	run --separate-stderr pmactl --json fsck "$P"
	assert_success
	local where
	where=$(jq -c '[.findings[] | select(.code ==
		"hdpm-journal-pending") | {part, offset}]' <<<"$output")
	assert_equal "$(jq length <<<"$where")" 1
	pending_json
	jq -e --argjson w "$where" '.needed and .operations == 0 and
		.hdpm.needed and (.hdpm.refused | not) and
		.hdpm.operations_to_undo == 1 and
		.hdpm.operations_to_finish == 0 and
		.hdpm.background_merges == 0 and
		(.hdpm.operations | length) == 1 and
		(.hdpm.operations[0] | .state == "active" and
		.records >= 1 and [{part, offset}] == $w)' \
		<<<"$pending" >/dev/null || fail "$pending"
	fsck_recovery_json
	hdpm_recovered 1 0 0
	local slot
	slot=$(jq .hdpm.operations[0].slot <<<"$pending")
	run --separate-stderr pmactl fsck --recovery "$P"
	assert_success
	assert_line "recovery: nothing in the heap (every log is empty)"
	assert_line "HDPM recovery: undo 1 interrupted operation, finish 0 committed operations, finish or undo 0 background merges (0 retired pages to free)"
	assert_line --regexp "^ +SLOT +OPERATION +STATE +RECORDS +MOUNT$"
	assert_line --regexp "^ +$slot +[0-9]+ +active +[0-9]+ +undoes it$"
	assert_line "recovered state: consistent (recovery ran on a private view: the pool is not written)"
	refute_output --partial "nothing to do"
	run --separate-stderr pmactl inspect --recovery "$P"
	assert_success
	assert_line "HDPM recovery: undo 1 interrupted operation, finish 0 committed operations, finish or undo 0 background merges (0 retired pages to free)"
	assert_line --regexp "^ +$slot +[0-9]+ +active +[0-9]+ +undoes it$"
	cmp "$P" "$T/ref" || fail "a --recovery wrote the pool"

	# the same operation committed (its state word's low byte): the
	# mount finishes it instead
	put_le "$P" $(($(jq -r .hdpm.operations[0].offset <<<"$pending"))) 1 2
	pending_json
	jq -e '.hdpm.operations_to_undo == 0 and
		.hdpm.operations_to_finish == 1 and
		.hdpm.operations[0].state == "committed"' <<<"$pending" \
		>/dev/null || fail "$pending"
	fsck_recovery_json
	hdpm_recovered 0 1 0
	run --separate-stderr pmactl fsck --recovery "$P"
	assert_success
	assert_line "HDPM recovery: undo 0 interrupted operations, finish 1 committed operation, finish or undo 0 background merges (0 retired pages to free)"
	assert_line --regexp "^ +$slot +[0-9]+ +committed +[0-9]+ +finishes it$"

	# a writable mount recovers for real: nothing is left to do
	run --separate-stderr pmactl gc "$P"
	assert_success
	pending_json
	jq -e '(.needed | not) and (.hdpm.needed | not) and
		.hdpm.operations == []' <<<"$pending" >/dev/null ||
		fail "$pending"
	fsck_recovery_json
	run --separate-stderr pmactl fsck --recovery "$P"
	assert_success
	assert_line "HDPM recovery: nothing (every journal is idle)"
	assert_line "recovered state: consistent (recovery ran on a private view: nothing to do)"
}

@test "an interrupted HDPM background merge: fsck and inspect --recovery count it" {
	hcrash crash-gc
	pending_json
	jq -e '.needed and .hdpm.needed and .hdpm.operations_to_undo == 0 and
		.hdpm.operations_to_finish == 0 and
		.hdpm.background_merges == 1 and .hdpm.merge_building and
		.hdpm.operations == []' <<<"$pending" >/dev/null ||
		fail "$pending"
	fsck_recovery_json
	hdpm_recovered 0 0 1
	run --separate-stderr pmactl fsck --recovery "$P"
	assert_success
	assert_line "HDPM recovery: undo 0 interrupted operations, finish 0 committed operations, finish or undo 1 background merge (0 retired pages to free)"
	refute_line --regexp "^ +SLOT "
	assert_line "recovered state: consistent (recovery ran on a private view: the pool is not written)"
}

@test "an HDPM journal the mount refuses: inspect --recovery says so" {
	hcrash journal-state
	pending_json
	jq -e '.hdpm.refused and (.hdpm.needed | not)' <<<"$pending" \
		>/dev/null || fail "$pending"
	run --separate-stderr pmactl inspect --recovery "$P"
	assert_success
	assert_line --regexp "^HDPM recovery: the mount refuses the file system"
}

@test "a heap without a file system: no HDPM recovery in either summary" {
	"$DAMAGE" make "$P" >/dev/null || fail "fsck-damage make failed"
	pending_json
	jq -e 'has("hdpm") | not' <<<"$pending" >/dev/null || fail "$pending"
	run --separate-stderr pmactl fsck --recovery "$P"
	assert_success
	refute_output --partial "HDPM"
	# a fresh HDPM file system: present, nothing to do
	mkpool_size "$T/q" 16M
	run --separate-stderr "$HDAMAGE" make "$T/q"
	assert_success
	run --separate-stderr pmactl --json inspect --recovery "$T/q"
	assert_success
	jq -e '.recovery.hdpm == {needed: false, refused: false,
		operations_to_undo: 0, operations_to_finish: 0,
		background_merges: 0, merge_building: false,
		retired_pages: 0, operations: []}' <<<"$output" >/dev/null ||
		fail "$output"
}

@test "a header copy an update tore: a warning --repair repairs, not damage" {
	"$DAMAGE" make "$P" >/dev/null || fail "fsck-damage make failed"
	# copy B's generation word one ahead, its seal not written: what a
	# crash leaves after the first store of an update
	local gen
	gen=$(od -An -tu8 -j $((POOL_HDR_B_OFF + 16)) -N8 "$P" | tr -d ' ')
	put_le "$P" $((POOL_HDR_B_OFF + 16)) 8 $((gen + 1))
	run --separate-stderr pmactl --json fsck "$P"
	assert_success
	jq -e '.consistent and .warnings == 1 and
		[.findings[] | select(.severity != "info") | [.code, .offset]]
		== [["pool-hdr-torn-update", "0x4000"]]' <<<"$output" \
		>/dev/null ||
		fail "$output"
	run --separate-stderr pmactl fsck --repair --yes "$P"
	assert_success
	assert_line "repaired: $P (1 finding repaired)"
	run --separate-stderr pmactl --json fsck "$P"
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	# two ahead is not what an update leaves: damage
	put_le "$P" $((POOL_HDR_B_OFF + 16)) 8 $((gen + 3))
	run --separate-stderr pmactl --json fsck "$P"
	assert_equal "$status" 1
	jq -e '[.findings[] | select(.severity == "error") | .code] ==
		["pool-hdr-checksum"]' <<<"$output" >/dev/null || fail "$output"
}
