#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl fsck (issue 20): clean and crashed pools check consistent (exit
# 0), every damage of the corruption suite gives its exact finding code
# and exit 1, garbage never crashes it, fsck never writes the pool, and
# the exit codes 2 (usage) and 4 (cannot check).

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

# fsck_json POOL: run pmactl fsck --json (output and status in $output,
# $status); the JSON must parse and its counts must match its findings
fsck_json() {
	run --separate-stderr pmactl --json fsck "$1"
	jq -e '.errors == ([.findings[] | select(.severity == "error")] |
		length) and .consistent == (.errors == 0)' <<<"$output" \
		>/dev/null || fail "bad JSON ($status): $output $stderr"
}

# assert_code CODE: the last fsck_json reported CODE as an error
assert_code() {
	jq -e --arg c "$1" 'any(.findings[]; .code == $c and
		.severity == "error")' <<<"$output" >/dev/null ||
		fail "no error $1 in: $output"
}

# damaged KIND CODE: a fresh base pool, damaged by KIND, reports CODE
# and exits 1; the pool is not written by fsck
damaged() {
	"$DAMAGE" make "$T/p" || fail "fsck-damage make failed"
	"$DAMAGE" "$1" "$T/p" || fail "fsck-damage $1 failed"
	local before
	before=$(md5sum <"$T/p")
	fsck_json "$T/p"
	assert_equal "$status" 1
	assert_code "$2"
	[ "$(md5sum <"$T/p")" = "$before" ] || fail "fsck wrote the pool"
	# the human output names the same code, and exits the same way
	run --separate-stderr pmactl fsck "$T/p"
	assert_equal "$status" 1
	assert_line --partial "error: $2: "
	assert_line --partial "inconsistent: $T/p"
}

# errors_are CODE...: the errors of the last fsck_json are CODE... and
# no other code
errors_are() {
	local want
	want=$(printf '%s\n' "$@" | jq -R . | jq -sc 'unique')
	jq -e --argjson w "$want" '[.findings[] | select(.severity == "error") |
		.code] | unique == $w' <<<"$output" >/dev/null ||
		fail "errors are not exactly $*: $output"
}

# damaged_only KIND CODE...: damaged KIND CODE (the first), and the
# errors are exactly CODE...
damaged_only() {
	damaged "$1" "$2"
	shift
	fsck_json "$T/p"
	errors_are "$@"
}

# warned KIND SEVERITY CODE: a fresh base pool damaged by KIND is
# consistent (exit 0) with CODE its one finding, of SEVERITY; fsck does
# not write the pool
warned() {
	"$DAMAGE" make "$T/p" || fail "fsck-damage make failed"
	"$DAMAGE" "$1" "$T/p" || fail "fsck-damage $1 failed"
	local before
	before=$(md5sum <"$T/p")
	fsck_json "$T/p"
	assert_equal "$status" 0
	jq -e --arg s "$2" --arg c "$3" '[.findings[] | [.severity, .code]] ==
		[[$s, $c]]' <<<"$output" >/dev/null ||
		fail "not exactly $2 $3: $output"
	[ "$(md5sum <"$T/p")" = "$before" ] || fail "fsck wrote the pool"
}

# needs_advanced POOL: --repair --yes exits 3 saying only --advanced
# repairs it, and leaves POOL as $T/ref holds it
needs_advanced() {
	run --separate-stderr pmactl fsck --repair --yes "$1"
	assert_equal "$status" 3
	[[ "$stderr" == *"only destructively: --advanced does it"* ]] ||
		fail "stderr: $stderr"
	cmp "$1" "$T/ref" || fail "written without --advanced"
}

@test "a clean pool with a heap is consistent (exit 0, no findings)" {
	mkpool_size "$T/p" 8M
	run --separate-stderr "$WORKLOAD" "$T/p" 4 100
	assert_success
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	run --separate-stderr pmactl fsck "$T/p"
	assert_success
	assert_output "consistent: $T/p (0 errors, 0 warnings)"
}

@test "a pool without a heap is consistent; -v shows heap-none" {
	mkpool "$T/p"
	run --separate-stderr pmactl fsck -v "$T/p"
	assert_success
	assert_line --partial "info: heap-none: "
}

@test "un-checkpointed records (a crashed child) check consistent" {
	"$DAMAGE" make "$T/p"
	run --separate-stderr pmactl --json log "$T/p"
	assert_success
	[ "$(jq .count <<<"$output")" -gt 10 ] || fail "no records: $output"
	fsck_json "$T/p"
	assert_equal "$status" 0
}

@test "kill -9 during --stress, 5 rounds: consistent before and after recovery" {
	local round
	mkpool_size "$T/p" 32M
	for round in 1 2 3 4 5; do
		"$WORKLOAD" --stress "$T/p" >"$T/stress.out" 2>&1 3>&- &
		STRESS_PID=$!
		sleep "0.$((RANDOM % 300 + 100))"
		kill -9 "$STRESS_PID"
		wait "$STRESS_PID" || true
		STRESS_PID=
		fsck_json "$T/p"
		[ "$status" = 0 ] || fail "round $round, crashed: $output"
		run --separate-stderr "$WORKLOAD" --verify "$T/p"
		assert_success
		fsck_json "$T/p"
		[ "$status" = 0 ] || fail "round $round, recovered: $output"
		# recovered: not even a warning or a torn tail left
		assert_equal "$(jq '.findings | length' <<<"$output")" 0
	done
}

@test "damage: a checksum bit of pool header copy A -> pool-hdr-checksum" {
	damaged hdr-a pool-hdr-checksum
}

@test "damage: a checksum bit of pool header copy B -> pool-hdr-checksum" {
	damaged hdr-b pool-hdr-checksum
}

@test "damage: a bit of part 0's header -> part-hdr-checksum" {
	damaged part-hdr part-hdr-checksum
}

@test "damage: part 0 truncated by 64 KiB -> part-truncated" {
	damaged truncate part-truncated
}

@test "damage: region past its part, resealed -> region-range" {
	damaged region region-range
}

@test "damage: a bit of the heap header -> heap-hdr-checksum" {
	damaged heap-hdr heap-hdr-checksum
}

@test "damage: a bit of head_gen -> heap-head-gen-check" {
	damaged head-gen heap-head-gen-check
}

@test "damage: a bit of an arena's current head -> arena-head-check" {
	damaged arena-head arena-head-check
}

@test "damage: a bit of a log record in the window -> log-record-damaged" {
	damaged log-record log-record-damaged
}

@test "damage: a sealed log record of an unknown type -> log-record-type" {
	damaged log-type log-record-type
	assert_line --partial "has unknown record type 0"
	refute_line --partial "log-record-damaged"
}

@test "damage: a redone allocation's dest word in a slab header -> log-op-dest" {
	damaged dest-slab log-op-dest
	assert_line --partial "is in the header of the slab at"
}

@test "a writable open refuses a redo into a slab header; the pool is untouched" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" dest-slab "$T/p"
	cp "$T/p" "$T/ref"
	# fsck names the record; the open refuses the same record and slab
	fsck_json "$T/p"
	assert_equal "$status" 1
	local rec slab
	rec=$(jq -r '.findings[] | select(.code == "log-op-dest") | .message' \
		<<<"$output")
	[[ "$rec" =~ arena\ 0\ log\ record\ ([0-9]+).*dest\ word\ (0x[0-9a-f]+).*slab\ at\ (0x[0-9a-f]+) ]] ||
		fail "$rec"
	slab="arena 0 record ${BASH_REMATCH[1]}: dest word ${BASH_REMATCH[2]} is in the header of the slab at ${BASH_REMATCH[3]} of part 0 (allocator metadata): the redo of the allocation would overwrite it (damaged log)"
	run --separate-stderr "$WORKLOAD" --verify "$T/p"
	assert_failure
	[[ "$stderr" == *"heap '$T/p': $slab"* ]] || fail "$stderr"
	cmp "$T/p" "$T/ref" || fail "the refused open wrote the pool"
	# --recovery runs the same refusal on its private view
	run --separate-stderr pmactl fsck --recovery "$T/p"
	assert_equal "$status" 1
	assert_line --partial "recovery-refused: "
	assert_line --partial "$slab"
	cmp "$T/p" "$T/ref" || fail "fsck --recovery wrote the pool"
}

@test "damage: a slab header's class id 63 -> slab-class" {
	damaged slab-class slab-class
}

@test "damage: a bit of a slab bitmap bank -> slab-bitmap-bank-check" {
	damaged bitmap-bank slab-bitmap-bank-check
}

@test "damage: a bit of a slab's page map entry -> pmap-entry-check" {
	damaged pmap-entry pmap-entry-check
}

@test "damage: a checked extent entry inside an extent -> pmap-overlap" {
	damaged pmap-overlap pmap-overlap
}

@test "damage: a bit of a page map summary word -> pmap-summary-check" {
	damaged summary pmap-summary-check
}

@test "damage: a bit of the root word -> root-check" {
	damaged root-word root-check
}

# the pool and part headers (lib/pool/fsck.c)

@test "damage: part 0 cut to 100 bytes -> pool-too-small" {
	damaged_only too-small pool-too-small
}

@test "damage: pool header copy A all zero -> pool-hdr-unwritten" {
	damaged_only hdr-a-zero pool-hdr-unwritten
}

@test "damage: both pool header copies zero -> pool-hdr-unwritten, pool-hdr-none" {
	damaged_only hdr-zero pool-hdr-none pool-hdr-unwritten
	assert_equal "$(jq '[.findings[] | select(.code ==
		"pool-hdr-unwritten")] | length' <<<"$output")" 2
}

@test "damage: a bit of copy A's magic -> pool-hdr-magic" {
	damaged_only hdr-magic pool-hdr-magic
}

@test "damage: copy A of another major version, resealed -> pool-hdr-version, pool-hdr-damaged-state" {
	damaged_only hdr-version pool-hdr-version pool-hdr-damaged-state
	# it may be a newer state: not rolled back, not repaired
	cp "$T/p" "$T/ref"
	run --separate-stderr pmactl fsck --repair --yes "$T/p"
	assert_equal "$status" 3
	cmp "$T/p" "$T/ref" || fail "written"
}

@test "damage: copy A's header size 0, resealed -> pool-hdr-invalid (the heap not opened)" {
	damaged_only hdr-invalid pool-hdr-invalid pool-hdr-damaged-state \
		heap-open-refused
}

@test "damage: copy B another state of the same generation -> pool-hdr-generation" {
	damaged_only hdr-gen pool-hdr-generation
}

@test "damage: copy B one generation older -> pool-hdr-stale-copy (warning)" {
	warned hdr-stale warning pool-hdr-stale-copy
}

@test "damage: an unknown read-only feature -> pool-feature-ro-compat (warning), not repaired" {
	warned ro-compat warning pool-feature-ro-compat
	cp "$T/p" "$T/ref"
	run --separate-stderr pmactl fsck --repair --yes "$T/p"
	assert_success
	cmp "$T/p" "$T/ref" || fail "written"
}

@test "damage: region 0 of type free, resealed -> region-invalid" {
	damaged_only region-invalid region-invalid
}

@test "damage: a region over the heap's, resealed -> region-overlap" {
	damaged_only region-overlap region-overlap
}

@test "damage: a bit of the part header's magic -> part-hdr-magic" {
	damaged_only part-magic part-hdr-magic
}

@test "damage: the part header of another major version, resealed -> part-hdr-version" {
	damaged_only part-version part-hdr-version
}

@test "damage: the part header naming 0 parts, resealed -> part-hdr-invalid" {
	damaged_only part-invalid part-hdr-invalid
}

@test "damage: the part header's size 64 KiB short, resealed -> part-size-mismatch" {
	damaged_only part-size part-size-mismatch
}

# the heap (lib/pmalloc/fsck*.c)

@test "damage: a bit of the heap header's magic -> heap-hdr-magic" {
	damaged_only heap-magic heap-hdr-magic
}

@test "damage: a heap of a newer layout version, resealed -> heap-hdr-version" {
	damaged_only heap-version heap-hdr-version
}

@test "damage: the heap header's page count past its region, resealed -> heap-hdr-geometry" {
	damaged_only heap-geometry heap-hdr-geometry
}

@test "damage: the root word naming a free page, sealed -> root-not-live" {
	damaged_only root-not-live root-not-live
}

@test "damage: the root word's check cleared -> root-unsealed (warning)" {
	warned root-unsealed warning root-unsealed
}

# the slabs below are the root object's (no log record names another):
# the root is then not live either
@test "damage: a bit of a slab's magic -> slab-magic" {
	damaged_only slab-magic slab-magic root-not-live
}

@test "damage: a slab header naming the other arena -> slab-owner" {
	damaged_only slab-owner slab-owner
}

@test "damage: a slab header's block count one short -> slab-geometry" {
	damaged_only slab-geometry slab-geometry root-not-live
}

@test "damage: a bitmap bit past a slab's last block, the bank resealed -> slab-bitmap-stray" {
	damaged_only slab-stray slab-bitmap-stray
}

@test "damage: an extent's page map entry of kind FREEING, checked -> pmap-entry-kind" {
	damaged_only pmap-kind pmap-entry-kind
}

@test "damage: a slab's page map entry naming arena 63, checked -> pmap-slab-entry" {
	damaged_only pmap-slab pmap-slab-entry root-not-live
}

@test "damage: the last extent's entry past the data area, checked -> pmap-extent-range" {
	damaged_only pmap-range pmap-extent-range
}

@test "damage: the heap header all zero -> heap-unformatted (info)" {
	warned heap-zero info heap-unformatted
}

# damaged_regions K KIND CODE...: a pool of create --regions K, damaged
# by KIND, exits 1 with the errors exactly CODE...; fsck does not write it
damaged_regions() {
	local k=$1 kind=$2
	shift 2
	run --separate-stderr pmactl create "$T/p" --size 8M --regions "$k"
	assert_success
	"$DAMAGE" "$kind" "$T/p" || fail "fsck-damage $kind failed"
	local before
	before=$(md5sum <"$T/p")
	fsck_json "$T/p"
	assert_equal "$status" 1
	errors_are "$@"
	[ "$(md5sum <"$T/p")" = "$before" ] || fail "fsck wrote the pool"
}

@test "damage: one of 4 heap regions made a user region -> heap-regions (3 in part 0)" {
	damaged_regions 4 region-user heap-regions heap-open-refused
	jq -e 'any(.findings[]; .code == "heap-regions" and
		(.message | contains("part 0 holds 3 heap regions")))' \
		<<<"$output" >/dev/null || fail "$output"
}

@test "damage: a bit of a free ring's consumer word check -> ring-cons-check" {
	damaged_regions 2 xcons ring-cons-check
}

# the logs: valid records (their checksums match) that say wrong things

@test "damage: a valid record two slots past a log's end -> log-record-after-end" {
	damaged_only rec-after-end log-record-after-end
}

@test "damage: a free of the heap header appended -> log-op-range" {
	damaged_only op-range log-op-range
}

@test "damage: an allocation in a page no slab holds appended -> log-op-target" {
	damaged_only op-target log-op-target
}

@test "damage: a SLAB_NEW of class 255 appended -> log-op-invalid" {
	damaged_only op-invalid log-op-invalid
}

@test "damage: a SLAB_MORPH from a class the slab is not appended -> slab-morph-log" {
	damaged_only morph-log slab-morph-log
}

@test "damage: an XFREE appended to a layout 9 heap's log -> log-op-version" {
	"$DAMAGE" make-v9 "$T/p" || fail "fsck-damage make-v9 failed"
	fsck_json "$T/p"
	assert_equal "$status" 0
	"$DAMAGE" xfree-old "$T/p" || fail "fsck-damage xfree-old failed"
	local before
	before=$(md5sum <"$T/p")
	fsck_json "$T/p"
	assert_equal "$status" 1
	errors_are log-op-version
	jq -e 'any(.findings[]; .message |
		contains("a heap of layout version 9 has no such record"))' \
		<<<"$output" >/dev/null || fail "$output"
	[ "$(md5sum <"$T/p")" = "$before" ] || fail "fsck wrote the pool"
}

@test "damage: a remote free of a block the window freed appended -> log-block-conflict" {
	damaged_only block-conflict log-block-conflict
	assert_line --partial "is already free there"
}

@test "damage: half a record after a log's end -> log-torn-tail (info)" {
	warned torn-tail info log-torn-tail
	run --separate-stderr pmactl fsck -v "$T/p"
	assert_success
	assert_line --partial "info: log-torn-tail: "
	# --repair drops it (the library's open), and says so
	run --separate-stderr pmactl fsck --repair --yes "$T/p"
	assert_success
	assert_line "repaired: $T/p (1 finding repaired)"
	fsck_json "$T/p"
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
}

@test "random garbage of several sizes: exit 1 with findings, never a crash" {
	local size
	for size in 0 100 5000 70000 300000 2000000; do
		head -c "$size" /dev/urandom >"$T/g"
		fsck_json "$T/g"
		assert_equal "$status" 1
		[ "$(jq .errors <<<"$output")" -gt 0 ] || fail "$output"
	done
}

@test "random bytes over the heap metadata: never a crash, exit 0 or 1" {
	local i off n
	"$DAMAGE" make "$T/base"
	for i in $(seq 1 40); do
		cp "$T/base" "$T/p"
		# 1..4 random bytes in [64 KiB, 256 KiB): heap header, arena
		# descriptors, logs, page map (the base pool's metadata)
		for n in $(seq 1 $((RANDOM % 4 + 1))); do
			off=$((65536 + (RANDOM * 32768 + RANDOM) % 196608))
			put_le "$T/p" "$off" 1 $((RANDOM % 256))
		done
		run --separate-stderr pmactl fsck "$T/p"
		[ "$status" = 0 ] || [ "$status" = 1 ] ||
			fail "trial $i: exit $status: $stderr"
		[ -z "$stderr" ] || fail "trial $i: stderr: $stderr"
		if [ "$status" = 0 ]; then
			# consistent means the library accepts it too
			run --separate-stderr pmactl inspect --heap "$T/p"
			assert_success
		fi
	done
}

@test "usage errors exit 2; --help exits 0" {
	run --separate-stderr pmactl fsck
	assert_equal "$status" 2
	assert_equal "$stderr" "pmactl: missing POOL argument
try 'pmactl fsck --help'"
	run --separate-stderr pmactl fsck a b
	assert_equal "$status" 2
	run --separate-stderr pmactl fsck --frobnicate a
	assert_equal "$status" 2
	run --separate-stderr pmactl fsck --help
	assert_success
	assert_line --partial "usage: pmactl fsck"
	run --separate-stderr pmactl help fsck
	assert_success
}

@test "a pool that cannot be read exits 4 with a message" {
	run --separate-stderr pmactl fsck "$T/nonexistent"
	assert_equal "$status" 4
	assert_equal "$stderr" "pmactl: cannot check '$T/nonexistent': No such file or directory"
	mkdir "$T/dir"
	run --separate-stderr pmactl fsck "$T/dir"
	assert_equal "$status" 4
}

@test "--dry-run changes nothing and reports the same" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" slab-class "$T/p"
	run --separate-stderr pmactl fsck --dry-run "$T/p"
	assert_equal "$status" 1
	assert_line --partial "error: slab-class: "
}

@test "pmactl-fsck(1) lists every finding code the checkers report" {
	local src=$BATS_TEST_DIRNAME/../.. code
	local man=$src/man/pmactl-fsck.1.adoc
	for code in $(grep -ohE '"(part|pool|region|heap|arena|log|pmap|slab|root|extent|recovery|repair)-[a-z-]+"' \
		"$src/lib/pool/fsck.c" "$src/lib/pmalloc/"fsck*.c |
		tr -d '"' | sort -u); do
		grep -q "\*$code\*" "$man" || fail "$code is not in $man"
	done
}

@test "exit 4 when the report cannot be written or the backup file exists; the pool untouched" {
	"$DAMAGE" make "$T/p"
	run pmactl fsck "$T/p"
	assert_success
	run bash -c 'pmactl fsck "$1" >/dev/full' _ "$T/p"
	assert_failure 4
	assert_output --partial "cannot write to stdout"
	"$DAMAGE" summary "$T/p"
	cp "$T/p" "$T/damaged"
	: >"$T/bk"
	run --separate-stderr pmactl fsck --repair --yes --backup "$T/bk" "$T/p"
	assert_failure 4
	[[ "$stderr" == *"$T/bk"* ]] || fail "$stderr"
	cmp "$T/p" "$T/damaged" || fail "the pool changed"
	[ ! -s "$T/bk" ] || fail "the existing file was written"
}

@test "--repair: a damaged header copy and summary word are repaired (exit 0)" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" hdr-b "$T/p"
	"$DAMAGE" summary "$T/p"
	cp "$T/p" "$T/damaged"
	run --separate-stderr pmactl --json fsck --repair --yes \
		--backup "$T/bk" "$T/p"
	assert_success
	assert_equal "$(jq -r .repair <<<"$output")" repaired
	assert_equal "$(jq .errors <<<"$output")" 2
	assert_equal "$(jq .errors_after_repair <<<"$output")" 0
	# the backup is the pool as it was before the repair
	cmp "$T/bk" "$T/damaged" || fail "backup differs from the damaged pool"
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	# and the library opens it and reads every slab
	run --separate-stderr pmactl inspect --heap "$T/p"
	assert_success
	# and it works: a workload, then clean again
	run --separate-stderr "$WORKLOAD" "$T/p" 2 200
	assert_success
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
}

@test "--repair --dry-run and a declined --repair write nothing (exit 1)" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" summary "$T/p"
	local before
	before=$(md5sum <"$T/p")
	run --separate-stderr pmactl fsck --repair --dry-run "$T/p"
	assert_equal "$status" 1
	assert_line "would repair: $T/p (1 error; run without --dry-run)"
	[ "$(md5sum <"$T/p")" = "$before" ] || fail "--dry-run wrote the pool"
	run --separate-stderr pmactl fsck --repair "$T/p" <<<"n"
	assert_equal "$status" 1
	[[ "$stderr" == *"[y/N]"* ]] || fail "no question: $stderr"
	[ "$(md5sum <"$T/p")" = "$before" ] || fail "declined, but written"
	run --separate-stderr pmactl fsck --repair "$T/p" <<<"y"
	assert_success
	assert_line "repaired: $T/p (1 error found, none left)"
}

@test "--repair of damage it cannot repair: exit 3, nothing written" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" slab-class "$T/p"
	local before
	before=$(md5sum <"$T/p")
	run --separate-stderr pmactl fsck --repair --yes --backup "$T/bk" "$T/p"
	assert_equal "$status" 3
	[[ "$stderr" == *"cannot repair '$T/p': "*"(the first: slab-class)"* ]] ||
		fail "stderr: $stderr"
	[ "$(md5sum <"$T/p")" = "$before" ] || fail "the pool was written"
	[ ! -e "$T/bk" ] || fail "a backup was made for nothing"
	run --separate-stderr pmactl --json fsck --repair --yes "$T/p"
	assert_equal "$status" 3
	assert_equal "$(jq -r .repair <<<"$output")" cannot_repair
}

@test "--repair of a consistent pool does nothing (exit 0)" {
	"$DAMAGE" make "$T/p"
	local before
	before=$(md5sum <"$T/p")
	run --separate-stderr pmactl --json fsck --repair --yes "$T/p"
	assert_success
	assert_equal "$(jq -r .repair <<<"$output")" none
	[ "$(md5sum <"$T/p")" = "$before" ] || fail "the pool was written"
}

@test "--yes or --backup without --repair is a usage error (exit 2)" {
	"$DAMAGE" make "$T/p"
	run --separate-stderr pmactl fsck --yes "$T/p"
	assert_equal "$status" 2
	assert_equal "$stderr" "pmactl: --yes, --backup and --advanced need --repair
try 'pmactl fsck --help'"
	run --separate-stderr pmactl fsck --backup "$T/bk" "$T/p"
	assert_equal "$status" 2
}

@test "parts: a missing part -> part-missing, a foreign part -> part-uuid-mismatch" {
	mkpool "$T/a" --parts "$T/a1"
	mkpool "$T/b" --parts "$T/b1"
	fsck_json "$T/a"
	assert_equal "$status" 0
	cp "$T/a1" "$T/a1.orig"
	cp "$T/b1" "$T/a1"
	fsck_json "$T/a"
	assert_equal "$status" 1
	assert_code part-uuid-mismatch
	rm "$T/a1"
	fsck_json "$T/a"
	assert_equal "$status" 1
	assert_code part-missing
	# the heap is then not checked, and says so
	jq -e 'any(.findings[]; .code == "heap-not-checked")' <<<"$output" \
		>/dev/null || fail "$output"
	cp "$T/a1.orig" "$T/a1"
	fsck_json "$T/a"
	assert_equal "$status" 0
}

@test "a pool a writer holds cannot be checked (exit 4, in use)" {
	mkpool_size "$T/p" 8M
	"$WORKLOAD" --stress "$T/p" 60s >"$T/hold.out" 2>"$T/hold.err" 3>&- &
	STRESS_PID=$!
	local i
	for ((i = 0; i < 500; i++)); do
		grep -q running "$T/hold.out" 2>/dev/null && break
		sleep 0.01
	done
	grep -q running "$T/hold.out" || fail "the writer did not start"
	run --separate-stderr pmactl fsck "$T/p"
	assert_equal "$status" 4
	assert_equal "$stderr" "pmactl: cannot check '$T/p': pool is in use by another process"
}

# ------------------------------------------------------------ --recovery

# mtime_of FILE: its modification time in nanoseconds
mtime_of() {
	stat -c %.9Y "$1"
}

@test "--recovery: what recovery would redo, on a private view; the pool is untouched" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" torn-tail "$T/p"
	cp "$T/p" "$T/ref"
	local mtime ops
	mtime=$(mtime_of "$T/p")
	run --separate-stderr pmactl --json log "$T/p"
	assert_success
	ops=$(jq .count <<<"$output")
	[ "$ops" -gt 10 ] || fail "no records: $output"
	fsck_json_recovery "$T/p"
	assert_success
	jq -e --argjson ops "$ops" '.recovery.checked and .recovery.needed and
		.recovery.operations == $ops and
		.recovery.torn_tails == 1 and .recovery.arenas_pending == 2 and
		.recovery.remote_frees_pending > 0 and
		([.recovery.arenas[].operations] | add) == $ops and
		(.recovery.arenas[] | select(.arena == 0) | .torn_tail) and
		.recovery.consistent_after and .recovery.errors_after == 0 and
		.consistent' <<<"$output" >/dev/null || fail "$output"
	cmp "$T/p" "$T/ref" || fail "fsck --recovery wrote the pool"
	assert_equal "$(mtime_of "$T/p")" "$mtime"
	run --separate-stderr pmactl fsck --recovery "$T/p"
	assert_success
	assert_line --regexp "^recovery: replay $ops operations in 2 arenas, drop 1 torn tail, [0-9]+ remote frees pending$"
	assert_line "recovered state: consistent (recovery ran on a private view: the pool is not written)"
	cmp "$T/p" "$T/ref" || fail "fsck --recovery wrote the pool"
	assert_equal "$(mtime_of "$T/p")" "$mtime"
}

# fsck_json_recovery POOL: pmactl --json fsck --recovery, JSON checked
fsck_json_recovery() {
	run --separate-stderr pmactl --json fsck --recovery "$1"
	jq -e '.errors == ([.findings[] | select(.severity == "error")] |
		length) and (.recovery.checked | not) or
		.recovery.errors_after == ([.recovery.findings[] |
		select(.severity == "error")] | length)' <<<"$output" \
		>/dev/null || fail "bad JSON ($status): $output $stderr"
}

@test "--recovery after recovery: nothing to do; inspect --recovery agrees" {
	"$DAMAGE" make "$T/p"
	run --separate-stderr pmactl inspect --recovery "$T/p"
	assert_success
	assert_line --regexp "^recovery: replay [0-9]+ operations in 2 arenas, drop 0 torn tails"
	assert_line --regexp "^ +ARENA +HEAD +TAIL +OPS +TORN +RFREE-PENDING +OPS BY TYPE$"
	run --separate-stderr pmactl --json inspect --recovery "$T/p"
	assert_success
	local pending=$output
	fsck_json_recovery "$T/p"
	assert_success
	assert_equal "$(jq -c '.recovery | del(.checked, .consistent_after,
		.errors_after, .findings)' <<<"$output")" \
		"$(jq -c .recovery <<<"$pending")"
	# a writable open recovers and checkpoints at close
	run --separate-stderr "$WORKLOAD" "$T/p" 1 1
	assert_success
	run --separate-stderr pmactl --json inspect --recovery "$T/p"
	assert_success
	jq -e '.recovery.needed == false and .recovery.operations == 0 and
		(.recovery.arenas | length) == 0' <<<"$output" >/dev/null ||
		fail "$output"
	run --separate-stderr pmactl fsck --recovery "$T/p"
	assert_success
	assert_line "recovery: nothing (every log is empty)"
	assert_line "recovered state: consistent (recovery ran on a private view: nothing to do)"
}

@test "--recovery of a log the heap's open refuses: not checked, exit 1" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" log-record "$T/p"
	cp "$T/p" "$T/ref"
	fsck_json_recovery "$T/p"
	assert_equal "$status" 1
	assert_code log-record-damaged
	jq -e '(.recovery.checked | not) and (.recovery.reason | test("damaged"))' \
		<<<"$output" >/dev/null || fail "$output"
	run --separate-stderr pmactl fsck --recovery "$T/p"
	assert_equal "$status" 1
	assert_line --partial "recovery: not checked: "
	cmp "$T/p" "$T/ref" || fail "fsck --recovery wrote the pool"
	run --separate-stderr pmactl inspect --recovery "$T/p"
	assert_equal "$status" 1
	[[ "$stderr" == *"cannot read the logs of '$T/p': "* ]] || fail "$stderr"
}

@test "--recovery with --repair is a usage error (exit 2)" {
	"$DAMAGE" make "$T/p"
	run --separate-stderr pmactl fsck --recovery --repair "$T/p"
	assert_equal "$status" 2
	[[ "$stderr" == *"--recovery checks, it does not repair"* ]] ||
		fail "$stderr"
}

# ------------------------------------------------------------ repairs

# repaired KIND CODE NOTE: a fresh base pool damaged by KIND reports
# CODE (an error or a warning); --repair --yes repairs it with the note
# NOTE (none if NOTE is "": the writable open repairs it), and the pool
# then checks
# clean, opens, takes a workload and checks clean again
repaired() {
	"$DAMAGE" make "$T/p" || fail "fsck-damage make failed"
	"$DAMAGE" "$1" "$T/p" || fail "fsck-damage $1 failed"
	fsck_json "$T/p"
	jq -e --arg c "$2" 'any(.findings[]; .code == $c)' <<<"$output" \
		>/dev/null || fail "no $2 in: $output"
	run --separate-stderr pmactl --json fsck --repair --yes "$T/p"
	assert_success
	assert_equal "$(jq -r .repair <<<"$output")" repaired
	[ -z "$3" ] ||
		jq -e --arg n "$3" 'any(.repairs[]; .code == $n)' \
			<<<"$output" >/dev/null ||
		fail "no repair $3 in: $output"
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	run --separate-stderr "$WORKLOAD" "$T/p" 2 200
	assert_success
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
}

@test "repair: pool header copy A all zero -> pool-hdr-unwritten, rewritten" {
	repaired hdr-a-zero pool-hdr-unwritten ""
}

@test "repair: a bit of copy A's magic -> pool-hdr-magic, rewritten" {
	repaired hdr-magic pool-hdr-magic ""
}

@test "repair: copy B one generation older -> pool-hdr-stale-copy, rewritten" {
	repaired hdr-stale pool-hdr-stale-copy ""
}

@test "repair: the root word's check cleared -> root-unsealed, sealed" {
	repaired root-unsealed root-unsealed ""
}

@test "--advanced: a valid record past a log's end -> log-record-after-end, the log cut there" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" rec-after-end "$T/p"
	cp "$T/p" "$T/ref"
	needs_advanced "$T/p"
	run --separate-stderr pmactl --json fsck --repair --yes --advanced \
		"$T/p"
	assert_success
	assert_equal "$(jq -r .repair <<<"$output")" repaired
	jq -e 'any(.repairs[]; .code == "repair-drops-record")' \
		<<<"$output" >/dev/null || fail "$output"
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	run --separate-stderr "$WORKLOAD" "$T/p" 2 200
	assert_success
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
}

@test "repair: a bitmap bank bit past the last block -> slab-bitmap-bank-check, rebuilt" {
	repaired bitmap-bank slab-bitmap-bank-check repair-bank-rebuild
}

@test "repair: a bit of a bank's check word -> slab-bitmap-bank-check, restored" {
	repaired bank-check slab-bitmap-bank-check repair-bank-bit
}

@test "repair: a damaged slot ahead of a log's end -> log-slot-damaged, zeroed" {
	repaired slot-ahead log-slot-damaged repair-log-slot
}

@test "repair: a page map entry in an unmarked group -> pmap-entry-unmarked, zeroed" {
	repaired unmarked pmap-entry-unmarked repair-pmap-unmarked
}

# rebuilt KIND...: damages KIND... of a fresh base pool give a
# slab-bitmap-bank-check that --repair rebuilds from the evidence
# (repair-bank-rebuild); the pool then checks clean, every root slot
# names the block of the same size as before the damage, and it takes a
# workload
rebuilt() {
	"$DAMAGE" make "$T/p" || fail "fsck-damage make failed"
	"$DAMAGE" list "$T/p" >"$T/before" || fail "list failed"
	local kind
	for kind in "$@"; do
		"$DAMAGE" "$kind" "$T/p" || fail "fsck-damage $kind failed"
	done
	fsck_json "$T/p"
	assert_equal "$status" 1
	assert_code slab-bitmap-bank-check
	jq -e '.findings[] | select(.code == "slab-bitmap-bank-check") |
		.message | test("--repair rebuilds it")' <<<"$output" \
		>/dev/null || fail "$output"
	run --separate-stderr pmactl --json fsck --repair --yes "$T/p"
	assert_success
	assert_equal "$(jq -r .repair <<<"$output")" repaired
	jq -e 'any(.repairs[]; .code == "repair-bank-rebuild")' \
		<<<"$output" >/dev/null || fail "$output"
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	"$DAMAGE" list "$T/p" >"$T/after" || fail "list failed"
	diff "$T/before" "$T/after" || fail "the blocks changed"
	run --separate-stderr "$WORKLOAD" "$T/p" 2 200
	assert_success
	fsck_json "$T/p"
	assert_equal "$status" 0
}

@test "repair: a bank with a stray bit and one more -> rebuilt (strays cleared, one bit from the check)" {
	# bitmap-bank sets a bit past the last block; a second bit, in the
	# bank's first word, is one no record names
	"$DAMAGE" make "$T/p"
	"$DAMAGE" list "$T/p" >"$T/before"
	"$DAMAGE" bitmap-bank "$T/p"
	fsck_json "$T/p"
	local hex off b
	hex=$(jq -r '.findings[] | select(.code == "slab-bitmap-bank-check") |
		.offset' <<<"$output")
	off=$((16#${hex#0x}))
	b=$(dd if="$T/p" bs=1 skip="$off" count=1 2>/dev/null | od -An -tu1)
	printf "\\x$(printf %02x $((b ^ 4)))" |
		dd of="$T/p" bs=1 seek="$off" conv=notrunc 2>/dev/null
	run --separate-stderr pmactl fsck --repair --yes "$T/p"
	assert_success
	assert_line --partial "--repair rebuilds it (1 bit from the logs' records and the slab's block count, 1 from its check)"
	assert_line --regexp "^repair: repair-bank-rebuild: .* bank 0 rebuilt \(2 words stored\)"
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	"$DAMAGE" list "$T/p" >"$T/after"
	diff "$T/before" "$T/after" || fail "the blocks changed"
}

@test "repair: a bank with 3 wrong bits -> rebuilt from the log, the block count and the check" {
	rebuilt bank-window
}

@test "repair: a bank two bits off that no record names is not repaired (exit 3, says why)" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" bank-two "$T/p"
	cp "$T/p" "$T/ref"
	run --separate-stderr pmactl fsck --repair --yes "$T/p"
	assert_equal "$status" 3
	assert_line --regexp "^error: slab-bitmap-bank-check: .*not repaired: [0-9]+ of its blocks' bits are named by no record of the logs, so their state is unknown"
	refute_line --partial "by exactly one bit"
	refute_line --partial "rebuilds it"
	cmp "$T/p" "$T/ref" || fail "the pool was written"
}

@test "--advanced: a damaged log record: exit 3 without it, says what is lost, repairs with it" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" log-record "$T/p"
	cp "$T/p" "$T/ref"
	needs_advanced "$T/p"
	# --dry-run --advanced: every record after the damaged one is listed
	run --separate-stderr pmactl --json fsck --repair --dry-run --advanced "$T/p"
	assert_equal "$status" 1
	assert_equal "$(jq -r .repair <<<"$output")" would_repair
	local lost
	lost=$(jq '[.repairs[] | select(.code == "repair-drops-record")] |
		length' <<<"$output")
	[ "$lost" -gt 5 ] || fail "lost: $output"
	jq -e '.repairs[0].message | test("unreadable")' <<<"$output" \
		>/dev/null || fail "the damaged record itself: $output"
	cmp "$T/p" "$T/ref" || fail "--dry-run wrote the pool"
	run --separate-stderr pmactl fsck --repair --yes --advanced "$T/p"
	assert_success
	assert_equal "$(grep -c '^repair: repair-drops-record: .*the operation is lost$' <<<"$output")" \
		"$((lost - 1))"
	assert_line "repaired: $T/p (1 error found, none left)"
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	run --separate-stderr "$WORKLOAD" "$T/p" 2 200
	assert_success
	fsck_json "$T/p"
	assert_equal "$status" 0
}

@test "--advanced: a log record of an unknown type: open says so, repaired with --advanced" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" log-type "$T/p"
	# recovery's own error names the type, not a checksum
	run --separate-stderr "$WORKLOAD" "$T/p" 1 10
	assert_failure
	[[ "$stderr$output" == *"unknown record type 0"* ]] ||
		fail "open: $output $stderr"
	[[ "$stderr$output" != *"fails its checksum"* ]] ||
		fail "open: $output $stderr"
	cp "$T/p" "$T/ref"
	needs_advanced "$T/p"
	run --separate-stderr pmactl --json fsck --repair --dry-run --advanced "$T/p"
	assert_equal "$status" 1
	local lost
	lost=$(jq '[.repairs[] | select(.code == "repair-drops-record")] |
		length' <<<"$output")
	[ "$lost" -gt 2 ] || fail "lost: $output"
	run --separate-stderr pmactl fsck --repair --yes --advanced "$T/p"
	assert_success
	assert_line --partial "error: log-record-type: "
	assert_equal "$(grep -c '^repair: repair-drops-record: ' <<<"$output")" \
		"$lost"
	assert_line "repaired: $T/p (1 error found, none left)"
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	run --separate-stderr "$WORKLOAD" "$T/p" 2 200
	assert_success
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
}

@test "--advanced: a damaged arena head: exit 1, refused without --advanced, its log dropped with it" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" list "$T/p" >"$T/before"
	"$DAMAGE" arena-head "$T/p"
	cp "$T/p" "$T/ref"
	# the check: exit 1, says what --advanced would do, writes nothing
	fsck_json "$T/p"
	assert_equal "$status" 1
	assert_code arena-head-check
	jq -e 'any(.findings[]; .code == "arena-head-check" and
		(.message | test("--repair --advanced drops the arena.s log \\(head set to record [0-9]+")))' \
		<<<"$output" >/dev/null || fail "message: $output"
	cmp "$T/p" "$T/ref" || fail "fsck wrote the pool"
	# the library refuses the heap
	run --separate-stderr "$WORKLOAD" "$T/p" 1 10
	assert_failure
	cmp "$T/p" "$T/ref" || fail "a refused open wrote the pool"
	# --repair without --advanced: exit 3, byte for byte, says why
	needs_advanced "$T/p"
	# --dry-run --advanced: the records listed, nothing written
	run --separate-stderr pmactl --json fsck --repair --dry-run --advanced "$T/p"
	assert_equal "$status" 1
	assert_equal "$(jq -r .repair <<<"$output")" would_repair
	local lost
	lost=$(jq '[.repairs[] | select(.code == "repair-drops-arena-record")] |
		length' <<<"$output")
	[ "$lost" -gt 10 ] || fail "lost: $output"
	cmp "$T/p" "$T/ref" || fail "--dry-run wrote the pool"
	# --advanced: every possibly lost operation listed, then clean
	run --separate-stderr pmactl fsck --repair --yes --advanced "$T/p"
	assert_success
	assert_equal "$(grep -c '^repair: repair-drops-arena-record: arena 0 log record [0-9]* (.*) at 0x.*: 0x[0-9a-f]*, dest 0x[0-9a-f]*: .*possibly lost$' <<<"$output")" \
		"$lost"
	assert_line --regexp "^repair: repair-drops-arena: arena 0: head set to [0-9]+, .* the $lost operations listed are possibly lost$"
	# arena 1's frees of blocks arena 0's dropped records allocate
	assert_line --regexp "^repair: repair-drops-arena-free: arena 1 log record [0-9]+ \((rfree|ext_free)\) "
	assert_line "repaired: $T/p (1 error found, none left)"
	local repaired=$output
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	# arena 1's blocks (odd slots) are as they were, but for blocks whose
	# free through arena 0 was dropped (listed: live again)
	"$DAMAGE" list "$T/p" >"$T/after"
	local freed slot block size
	freed=$(sed -n 's/^repair: repair-drops-arena-record: .* (rfree) at 0x[0-9a-f]*: \(0x[0-9a-f]*\),.*/\1/p' <<<"$repaired")
	while read -r slot block size; do
		[ $((slot % 2)) = 1 ] || continue
		grep -qx "$slot $block $size" "$T/before" && continue
		grep -qx "$block" <<<"$freed" ||
			fail "arena 1's slot $slot changed: $block $size"
	done <"$T/after"
	# the pool opens, allocates and frees, and checks clean after
	run --separate-stderr "$WORKLOAD" "$T/p" 2 200
	assert_success
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
}

@test "--advanced: a damaged head of an arena that never logged: dropped at its start, nothing lost" {
	mkpool_size "$T/p" 64M
	run --separate-stderr "$WORKLOAD" "$T/p" 4 100
	assert_success
	# arena 2 of the 3 (one thread: arena 0 logs): both check words of
	# its descriptor (descriptors at the heap region + 4 KiB, a line
	# each; check[] at +16) damaged, so the current one fails
	local region desc
	region=$(pmactl --json inspect "$T/p" | jq -r '.regions[] |
		select(.type == "pmalloc") | .offset')
	desc=$((region + 4096 + 2 * 64))
	flip_byte "$T/p" $((desc + 16))
	flip_byte "$T/p" $((desc + 24))
	fsck_json "$T/p"
	assert_equal "$status" 1
	assert_code arena-head-check
	jq -e 'any(.findings[]; .code == "arena-head-check" and
		(.message | test("its log was never written: head set to [0-9]+, nothing is lost")))' \
		<<<"$output" >/dev/null || fail "message: $output"
	run --separate-stderr pmactl fsck --repair --yes --advanced "$T/p"
	assert_success
	refute_line --partial "repair-drops-arena-record"
	assert_line --regexp "^repair: repair-drops-arena: arena 2: head set to [0-9]+, .* the 0 operations listed"
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	run --separate-stderr "$WORKLOAD" "$T/p" 4 100
	assert_success
	fsck_json "$T/p"
	assert_equal "$status" 0
}

@test "--advanced on a terminal: the arena drop is one question; declined, nothing written" {
	command -v script >/dev/null || skip "script(1) not installed"
	"$DAMAGE" make "$T/p"
	"$DAMAGE" arena-head "$T/p"
	cp "$T/p" "$T/ref"
	run script -qec "pmactl fsck --repair --advanced '$T/p'" /dev/null <<<$'n'
	assert_equal "$status" 1
	assert_output --partial "would: repair-drops-arena: arena 0: head set to "
	assert_output --partial "pmactl: repair arena-head-check at 0x"
	assert_output --partial "losing what it lists? [y/N]"
	assert_output --partial "(1 error found, 1 left; 1 of 1 repair declined)"
	cmp "$T/p" "$T/ref" || fail "a declined drop was written"
	run script -qec "pmactl fsck --repair --advanced '$T/p'" /dev/null <<<$'y'
	assert_success
	assert_output --partial "repaired: $T/p (1 error found, none left)"
	fsck_json "$T/p"
	assert_equal "$status" 0
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
}

@test "--advanced: a dropped arena's bank no record explains: not repaired (exit 3, says why)" {
	"$DAMAGE" make "$T/p"
	"$DAMAGE" head-bank-two "$T/p"
	cp "$T/p" "$T/ref"
	run --separate-stderr pmactl fsck --repair --yes --advanced "$T/p"
	assert_equal "$status" 3
	assert_line --partial "error: arena-head-check: "
	assert_line --regexp "^error: slab-bitmap-bank-check: .*\(its arena's log is one --advanced drops: no replay would rewrite it\); not repaired"
	[[ "$stderr" == *"(the first: slab-bitmap-bank-check)"* ]] ||
		fail "stderr: $stderr"
	cmp "$T/p" "$T/ref" || fail "the pool was written"
}

@test "--repair on a terminal asks per change: a declined one is left, the others made" {
	command -v script >/dev/null || skip "script(1) not installed"
	"$DAMAGE" make "$T/p"
	"$DAMAGE" list "$T/p" >"$T/before"
	"$DAMAGE" slot-ahead "$T/p"
	"$DAMAGE" bank-window "$T/p"
	cp "$T/p" "$T/ref"
	# every change declined: nothing written
	run script -qec "pmactl fsck --repair '$T/p'" /dev/null <<<$'n\nn'
	assert_equal "$status" 1
	assert_output --partial "pmactl: repair log-slot-damaged at 0x"
	assert_output --partial "pmactl: repair slab-bitmap-bank-check at 0x"
	assert_output --partial "would: repair-bank-rebuild: "
	assert_output --partial "(2 errors found, 2 left; 2 of 2 repairs declined)"
	cmp "$T/p" "$T/ref" || fail "declined changes were written"
	# the log slot declined, the bank rebuilt
	run script -qec "pmactl fsck --repair '$T/p'" /dev/null <<<$'n\ny'
	assert_equal "$status" 1
	assert_output --partial "(2 errors found, 1 left; 1 of 2 repairs declined)"
	fsck_json "$T/p"
	assert_equal "$status" 1
	assert_equal "$(jq -r '[.findings[] | .code] | join(" ")' <<<"$output")" \
		log-slot-damaged
	"$DAMAGE" list "$T/p" >"$T/after"
	diff "$T/before" "$T/after" || fail "the blocks changed"
	# the log slot, accepted this time (JSON)
	run script -qec "pmactl --json fsck --repair '$T/p'" /dev/null <<<$'y'
	assert_success
	[[ "$output" == *'"repair":"repaired"'* ]] || fail "$output"
	fsck_json "$T/p"
	assert_success
	assert_equal "$(jq '.findings | length' <<<"$output")" 0
	# stdin not a terminal: one question, as before (EOF declines)
	"$DAMAGE" slot-ahead "$T/p"
	cp "$T/p" "$T/ref"
	run --separate-stderr pmactl fsck --repair "$T/p" </dev/null
	assert_equal "$status" 1
	[[ "$stderr" == *"repair '$T/p' (1 error)? [y/N]"* ]] || fail "$stderr"
	cmp "$T/p" "$T/ref" || fail "a declined repair wrote the pool"
}

@test "--advanced without --repair is a usage error (exit 2)" {
	"$DAMAGE" make "$T/p"
	run --separate-stderr pmactl fsck --advanced "$T/p"
	assert_equal "$status" 2
}

# ------------------------------------------------------------ progress

@test "progress bar: on a terminal for a big pool, never for JSON or a pipe" {
	command -v script >/dev/null || skip "script(1) not installed"
	"$DAMAGE" make "$T/p"
	# a big pool: here, bigger than PMACTL_PROGRESS_MIN bytes
	run script -qec "PMACTL_PROGRESS_MIN=1 pmactl fsck '$T/p' 2>&1 >/dev/null" /dev/null
	assert_success
	assert_output --partial "checking  ["
	assert_output --partial "100%"
	# the default threshold is 1 GiB: this pool is small
	run script -qec "pmactl fsck '$T/p' 2>&1 >/dev/null" /dev/null
	assert_success
	refute_output --partial "checking"
	run script -qec "PMACTL_PROGRESS_MIN=1 pmactl --json fsck '$T/p' 2>&1 >/dev/null" /dev/null
	assert_success
	refute_output --partial "checking"
	PMACTL_PROGRESS_MIN=1 run --separate-stderr pmactl fsck "$T/p"
	assert_success
	[ -z "$stderr" ] || fail "stderr is not a terminal: $stderr"
}
