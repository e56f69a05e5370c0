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
