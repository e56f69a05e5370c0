#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl fsck of an HDPM file system (issue 20): a clean file system
# checks consistent, every damage of tests/corrupt/hdpm-damage gives its
# exact finding code (exit 1, the pool not written), a torn page-log tail
# is repaired, a log damaged before its last entry only with --advanced,
# and the rest is not repaired (exit 3, nothing written); a repaired file
# system mounts, takes writes and checks clean again.

load pmad-helpers

setup() {
	pmalloc_setup
	DAMAGE="$PMAD_BUILDDIR/tests/corrupt/hdpm-damage"
	FILL="$PMAD_BUILDDIR/tests/tools/hdpm-fill"
	[ -x "$DAMAGE" ] || fail "no $DAMAGE: build it with make check"
	P="$T/p"
}

# pmad, if a test started it
teardown() {
	pmad_teardown
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

# a pool with the file system of hdpm-damage make
mkfs() {
	mkpool_size "$P" 16M
	run --separate-stderr "$DAMAGE" make "$P"
	assert_success
}

# damaged KIND CODE: a fresh file system damaged by KIND reports CODE
# (and only CODE) as an error, exit 1; fsck does not write the pool
damaged() {
	mkfs
	run --separate-stderr "$DAMAGE" "$1" "$P"
	assert_success
	local before
	before=$(md5sum <"$P")
	fsck_json "$P"
	assert_equal "$status" 1
	jq -e --arg c "$2" '[.findings[] | select(.severity == "error") |
		.code] | unique == [$c]' <<<"$output" >/dev/null ||
		fail "not exactly error $2: $output"
	[ "$(md5sum <"$P")" = "$before" ] || fail "fsck wrote the pool"
	run --separate-stderr pmactl fsck "$P"
	assert_equal "$status" 1
	assert_line --partial "error: $2: "
}

# works: the file system of $P mounts and takes writes (hdpm-damage
# work: small writes to /f and /g, a new file /w, each read back), a
# writable mount's gc runs on it, and it then checks clean
works() {
	run --separate-stderr "$DAMAGE" work "$P"
	assert_success
	run --separate-stderr pmactl --json inspect --files "$P"
	assert_success
	jq -e 'any(.hdpm.files[]; .path == "/w" and .size == 12288)' \
		<<<"$output" >/dev/null || fail "no /w: $output"
	run --separate-stderr pmactl gc "$P"
	assert_success
	fsck_json "$P"
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
}

@test "hdpm: a clean file system checks consistent, with no finding" {
	mkfs
	fsck_json "$P"
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	# hdpm-fill's too (hybrid and cow)
	mkpool_size "$T/q" 16M
	run --separate-stderr "$FILL" "$T/q"
	assert_success
	fsck_json "$T/q"
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	mkpool_size "$T/r" 16M
	run --separate-stderr "$FILL" "$T/r" cow
	assert_success
	fsck_json "$T/r" --recovery
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
}

@test "hdpm damage: a torn last log entry -> hdpm-log-checksum" {
	damaged log-torn hdpm-log-checksum
}
@test "hdpm damage: a log entry before the last -> hdpm-log-checksum" {
	damaged log-mid hdpm-log-checksum
}
@test "hdpm damage: a log entry's sequence -> hdpm-log-sequence" {
	damaged log-seq hdpm-log-sequence
}
@test "hdpm damage: a log entry past its page -> hdpm-log-bounds" {
	damaged log-bounds hdpm-log-bounds
}
@test "hdpm damage: a log tail off a position -> hdpm-log-tail-range" {
	damaged log-tail hdpm-log-tail-range
}
@test "hdpm damage: a log chunk that is no block -> hdpm-log-chunk" {
	damaged log-chunk hdpm-log-chunk
}
@test "hdpm damage: a page in two files -> hdpm-block-shared" {
	damaged page-shared hdpm-block-shared
}
@test "hdpm damage: a file's page free in the allocator -> hdpm-page-free" {
	damaged page-free hdpm-page-free
}
@test "hdpm damage: a page past the file's size -> hdpm-index-past-size" {
	damaged past-size hdpm-index-past-size
}
@test "hdpm damage: an inode of no kind -> hdpm-inode-mode" {
	damaged mode hdpm-inode-mode
}
@test "hdpm damage: a free inode with blocks -> hdpm-inode-free-blocks" {
	damaged free-blocks hdpm-inode-free-blocks
}
@test "hdpm damage: two entries of one name -> hdpm-dirent-duplicate" {
	damaged dup-name hdpm-dirent-duplicate
}
@test "hdpm damage: a name with '/' -> hdpm-dirent-name" {
	damaged bad-name hdpm-dirent-name
}
@test "hdpm damage: a file as a parent -> hdpm-dirent-parent" {
	damaged parent hdpm-dirent-parent
}
@test "hdpm damage: a directory loop -> hdpm-dirent-loop" {
	damaged loop hdpm-dirent-loop
}
@test "hdpm damage: the journal state -> hdpm-journal-state" {
	damaged journal-state hdpm-journal-state
}
@test "hdpm damage: the GC retire list -> hdpm-gc-journal" {
	damaged gc-journal hdpm-gc-journal
}
@test "hdpm damage: the inode table's size -> hdpm-itable" {
	damaged itable hdpm-itable
}
@test "hdpm damage: the superblock's version -> hdpm-super-version" {
	damaged version hdpm-super-version
}
@test "hdpm damage: the superblock's magic zeroed -> hdpm-super-magic, no format" {
	damaged magic hdpm-super-magic
	run --separate-stderr "$DAMAGE" work "$P"
	assert_failure
	[[ $stderr == *"no magic"*"a damaged file system"* ]] ||
		fail "not refused as damaged: $stderr"
	# the refused mount formatted nothing: the files' table is there
	run --separate-stderr pmactl fsck "$P"
	assert_equal "$status" 1
	assert_line --partial "error: hdpm-super-magic: "
	assert_line --partial "a damaged file system"
}
@test "hdpm damage: a page index of too many entries -> hdpm-index-invalid" {
	damaged index hdpm-index-invalid
}
@test "hdpm damage: a page that is a smaller live block -> hdpm-page-invalid" {
	damaged page-invalid hdpm-page-invalid
}
@test "hdpm damage: a page's zero tail of 65 bytes -> hdpm-page-zero-tail" {
	damaged zero-tail hdpm-page-zero-tail
}
@test "hdpm damage: the journal slots' block pointer off its block -> hdpm-journal-slots" {
	damaged journal-slots hdpm-journal-slots
}
@test "hdpm damage: a pending operation's record names a misaligned word -> hdpm-journal-record" {
	damaged crash-tx-record hdpm-journal-record
}
@test "hdpm --recovery: a journal state the mount refuses -> hdpm-recovery-refused after recovery" {
	damaged journal-state hdpm-journal-state
	cp "$P" "$T/ref"
	fsck_json "$P" --recovery
	assert_equal "$status" 1
	jq -e '.recovery.checked and .recovery.consistent_after == false and
		[.recovery.findings[] | select(.severity == "error") |
		.code] == ["hdpm-recovery-refused"]' <<<"$output" \
		>/dev/null || fail "$output"
	cmp "$P" "$T/ref" || fail "fsck --recovery wrote the pool"
}

@test "hdpm --repair: a torn page-log tail is dropped; the file reads the rest" {
	mkfs
	run --separate-stderr pmactl --json log --files "$P"
	assert_success
	local entries
	entries=$(jq .log_entries <<<"$output")
	"$DAMAGE" log-torn "$P"
	run --separate-stderr pmactl --json fsck --repair --yes "$P"
	assert_success
	jq -e '.repair == "repaired" and .errors_after_repair == 0 and
		[.repairs[].code] == ["repair-hdpm-log-tail"]' \
		<<<"$output" >/dev/null || fail "$output"
	fsck_json "$P"
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	# the torn entry is gone, the other entries stay
	run --separate-stderr pmactl --json log --files "$P"
	assert_success
	assert_equal "$(jq .log_entries <<<"$output")" "$((entries - 1))"
	works
}

@test "hdpm --repair: a log damaged before its end needs --advanced (exit 3, nothing written)" {
	damaged log-mid hdpm-log-checksum
	cp "$P" "$T/ref"
	run --separate-stderr pmactl fsck --repair --yes "$P"
	assert_equal "$status" 3
	assert_line --partial "error: hdpm-log-checksum: "
	cmp "$P" "$T/ref" || fail "a refused repair wrote the pool"
	run --separate-stderr pmactl fsck --repair --advanced --dry-run "$P"
	assert_equal "$status" 1
	assert_line --partial "would: repair-hdpm-log-cut: "
	assert_line --partial "the entries after it are lost"
	cmp "$P" "$T/ref" || fail "--dry-run wrote the pool"
	run --separate-stderr pmactl fsck --repair --yes --advanced "$P"
	assert_success
	assert_line --partial "repair: repair-hdpm-log-cut: "
	fsck_json "$P"
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	works
}

@test "hdpm --repair: damage it cannot prove safe to repair is refused (exit 3)" {
	local kind
	for kind in page-shared page-free mode dup-name loop past-size; do
		mkfs
		"$DAMAGE" "$kind" "$P"
		cp "$P" "$T/ref"
		run --separate-stderr pmactl fsck --repair --yes --advanced "$P"
		[ "$status" = 3 ] || fail "$kind: exit $status: $output"
		cmp "$P" "$T/ref" || fail "$kind: a refused repair wrote it"
		rm -f "$P"
	done
}

@test "hdpm leak: blocks no file names are hdpm-block-leaked; --repair frees them, files intact" {
	mkfs
	run --separate-stderr "$DAMAGE" leak "$P"
	assert_success
	local leaked=$output
	[ "$(wc -l <<<"$leaked")" = 2 ] || fail "offsets: $leaked"
	cp "$P" "$T/ref"
	fsck_json "$P"
	# a warning: the file system works, the space is lost
	assert_success
	assert_equal "$(jq -r '[.findings[] | select(.code ==
		"hdpm-block-leaked" and .severity == "warning") | .offset] |
		sort | .[]' <<<"$output")" "$(sort <<<"$leaked")"
	assert_equal "$(jq '.findings | length' <<<"$output")" 2
	jq -e 'all(.findings[]; .message | test("--repair frees it"))' \
		<<<"$output" >/dev/null || fail "no repair said: $output"
	local files used
	files=$(pmactl --json inspect --files "$P" | jq -S .files)
	used=$(pmactl --json inspect --heap "$P" | jq .heap.used)
	# --dry-run says what it would free and writes nothing
	run --separate-stderr pmactl fsck --repair --dry-run "$P"
	assert_success
	[ "$(grep -c "would: repair-hdpm-block-leaked: " <<<"$output")" = 2 ] ||
		fail "$output"
	cmp "$P" "$T/ref" || fail "--dry-run wrote the pool"
	run --separate-stderr pmactl fsck --repair --yes "$P"
	assert_success
	[ "$(grep -c "repair: repair-hdpm-block-leaked: " <<<"$output")" = 2 ] ||
		fail "$output"
	local off
	for off in $leaked; do
		assert_line --partial "block $off ("
	done
	fsck_json "$P"
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	# the files are as they were; the leaked bytes are free again
	[ "$(pmactl --json inspect --files "$P" | jq -S .files)" = "$files" ] ||
		fail "files changed"
	jq -ne --argjson a "$used" \
		--argjson b "$(pmactl --json inspect --heap "$P" | jq .heap.used)" \
		'$a - $b >= 200 + 20 * 4096' >/dev/null ||
		fail "used bytes $used -> $(pmactl --json inspect --heap "$P" | jq .heap.used)"
	works
}

# crashed KIND CODE: a child crashed by hdpm-damage KIND leaves info
# CODE and no error; --recovery mounts on a private view (hdpm-recovery
# says what it did), checks clean, and writes nothing; a real mount
# then leaves no finding at all
crashed() {
	mkfs
	run --separate-stderr "$DAMAGE" "$1" "$P"
	assert_success
	cp "$P" "$T/ref"
	fsck_json "$P"
	assert_success
	jq -e --arg c "$2" 'any(.findings[]; .code == $c and
		.severity == "info")' <<<"$output" >/dev/null ||
		fail "no info $2: $output"
	fsck_json "$P" --recovery
	assert_success
	jq -e '.recovery.consistent_after and .recovery.errors_after == 0 and
		any(.recovery.findings[]; .code == "hdpm-recovery")' \
		<<<"$output" >/dev/null || fail "$output"
	cmp "$P" "$T/ref" || fail "fsck --recovery wrote the pool"
	run --separate-stderr pmactl fsck -v --recovery "$P"
	assert_success
	assert_line --partial "after recovery: info: hdpm-recovery: "
	# a writable mount (pmactl gc) recovers for real: nothing left
	run --separate-stderr pmactl gc "$P"
	assert_success
	fsck_json "$P"
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
}

@test "hdpm crash inside a journaled operation: consistent; --recovery undoes it" {
	crashed crash-tx hdpm-journal-pending
}

@test "hdpm: a log record whose dest is the superblock's magic -> hdpm-log-dest" {
	mkfs
	run --separate-stderr "$DAMAGE" crash-write "$P"
	assert_success
	fsck_json "$P"
	assert_success
	run --separate-stderr "$PMAD_BUILDDIR/tests/corrupt/fsck-damage" \
		dest-root-obj "$P"
	assert_success
	cp "$P" "$T/ref"
	fsck_json "$P"
	assert_equal "$status" 1
	jq -e '[.findings[] | select(.severity == "error") | .code] ==
		["hdpm-log-dest"]' <<<"$output" >/dev/null ||
		fail "not exactly hdpm-log-dest: $output"
	run --separate-stderr pmactl fsck "$P"
	assert_equal "$status" 1
	assert_line --partial "(in the superblock), which HDPM never allocates"
	# not repaired: the redo would zero the magic; nothing written
	run --separate-stderr pmactl fsck --repair --yes "$P"
	assert_equal "$status" 3
	cmp "$P" "$T/ref" || fail "written"
}

@test "hdpm crash inside a background merge: consistent; --recovery finishes it" {
	crashed crash-gc hdpm-gc-pending
}

@test "hdpm through pmad: a client holds a region of the shared pool -> hdpm-not-checked (info)" {
	CLIENT="$PMAD_BUILDDIR/tests/pmad/pmad-client"
	pmad_setup
	start_pmad
	run pmactl --socket "$S" pool create sh --size 32M --regions 4
	assert_success
	stop_pmad
	run --separate-stderr "$DAMAGE" make "$SD/sh.pool"
	assert_success
	start_pmad
	# no client: pmad checks the file system too, no finding
	run --separate-stderr pmactl --socket "$S" --json fsck sh
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	# a client holds slot 0 (the file system's superblock is in its
	# region), a second one slot 1; the first one leaves
	mkfifo "$D/in" "$D/in2"
	# (bounded: a client whose fifo stays open would hold the test)
	timeout 120 "$CLIENT" "$S" hold sh <"$D/in" >"$D/h" &
	local h=$!
	exec 8>"$D/in"
	wait_for grep -q held "$D/h"
	# not fd 8: the first client sees its end when the test closes it
	timeout 120 "$CLIENT" "$S" hold sh <"$D/in2" >"$D/h2" 8>&- &
	local h2=$!
	exec 9>"$D/in2"
	wait_for grep -q held "$D/h2"
	exec 8>&-
	wait "$h"
	run --separate-stderr pmactl --socket "$S" --json fsck sh
	exec 9>&-
	wait "$h2"
	assert_success
	jq -e '.online and .consistent and .errors == 0 and
		[.findings[] | select(.code == "lease-held") | .message |
		contains("region slot 1 ")] == [true] and
		[.findings[] | select(.code == "hdpm-not-checked") |
		.severity] == ["info"]' <<<"$output" >/dev/null ||
		fail "$output"
	stop_pmad
}

@test "pmactl-fsck(1) lists every HDPM finding code" {
	local src=$BATS_TEST_DIRNAME/../.. code n=0
	local man=$src/man/pmactl-fsck.1.adoc
	for code in $(grep -ohE '"(hdpm|repair-hdpm)-[a-z-]+"' \
		"$src/lib/hdpm/fsck.c" | tr -d '"' | sort -u); do
		grep -q "\*$code\*" "$man" || fail "$code is not in $man"
		n=$((n + 1))
	done
	[ "$n" -ge 20 ] || fail "only $n codes found"
}

@test "a file system the heap's damage hides is checked after the heap's repair" {
	# the bank makes the read-only open refuse the heap: the first
	# check cannot look at the file system, whose version is bad
	mkfs
	run "$DAMAGE" version "$P"
	assert_success
	run "$PMAD_BUILDDIR/tests/corrupt/fsck-damage" bank-check "$P"
	assert_success
	run --separate-stderr pmactl fsck "$P"
	assert_equal "$status" 1
	assert_line --partial "error: slab-bitmap-bank-check: "
	refute_output --partial "hdpm-super-version"
	run --separate-stderr pmactl fsck --repair --yes "$P"
	assert_equal "$status" 3
	assert_line --partial "repair: repair-bank-bit: "
	assert_line --partial "after the heap's repair: error: hdpm-super-version: "
	[[ $stderr == *"the heap is repaired, but the HDPM file system"*"(the first: hdpm-super-version)"* ]] ||
		fail "stderr: $stderr"
	# the heap's repair stands; the file system is left as it was
	fsck_json "$P"
	assert_equal "$status" 1
	jq -e '[.findings[] | select(.severity == "error") | .code] ==
		["hdpm-super-version"]' <<<"$output" >/dev/null ||
		fail "not only hdpm-super-version: $output"
}
