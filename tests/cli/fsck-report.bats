#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# What pmactl fsck tells (issue 20): its help says what --repair and
# --advanced do, the text findings name their part and offset, and the
# recovery summaries (fsck --recovery, inspect --recovery) count the
# HDPM file system's recovery too.

load helpers

setup() {
	pmalloc_setup
	DAMAGE="$PMAD_BUILDDIR/tests/corrupt/fsck-damage"
	HDAMAGE="$PMAD_BUILDDIR/tests/corrupt/hdpm-damage"
	[ -x "$DAMAGE" ] || fail "no $DAMAGE: build it with make check"
	[ -x "$HDAMAGE" ] || fail "no $HDAMAGE: build it with make check"
	P="$T/p"
	MAN=$BATS_TEST_DIRNAME/../../man/pmactl-fsck.1.adoc
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
