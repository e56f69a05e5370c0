#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl fsck through pmad (issue 20): with --socket (or $PMAD_SOCKET)
# pmad checks the pool it serves, read-only, after a checkpoint and only
# while no client session has it open; it finds what the offline check
# finds; --repair and --recovery are refused with a clear error.

load pmad-helpers

setup() {
	pmad_setup
	HDAMAGE="$PMAD_BUILDDIR/tests/corrupt/hdpm-damage"
	[ -x "$HDAMAGE" ] || fail "no $HDAMAGE: build it with make check"
}

teardown() {
	pmad_teardown
}

@test "fsck through pmad: a clean pool is consistent (text and JSON, exit 0)" {
	start_pmad
	run pmactl --socket "$S" create db --size 8M
	assert_success
	run --separate-stderr pmactl --socket "$S" fsck db
	assert_success
	assert_output "consistent: db (0 errors, 0 warnings; checked by pmad)"
	PMAD_SOCKET="$S" run --separate-stderr pmactl --json fsck db
	assert_success
	jq -e '.pool == "db" and .online and .consistent and .errors == 0 and
		(.findings | length) == 0' <<<"$output" >/dev/null ||
		fail "$output"
	# pmad checkpointed it first (the quiesce): once per fsck
	run --separate-stderr pmactl --socket "$S" --json stat db
	assert_success
	jq -e '.pools[0].services.checkpoints >= 2' <<<"$output" \
		>/dev/null || fail "$output"
	stop_pmad
}

@test "fsck through pmad finds what the offline check finds (an HDPM page in two files)" {
	start_pmad
	run pmactl --socket "$S" create fs --size 16M
	assert_success
	stop_pmad
	run --separate-stderr "$HDAMAGE" make "$SD/fs.pool"
	assert_success
	run --separate-stderr "$HDAMAGE" page-shared "$SD/fs.pool"
	assert_success
	run --separate-stderr pmactl --json fsck "$SD/fs.pool"
	assert_equal "$status" 1
	local offline
	offline=$(jq -c '[.findings[] | select(.severity == "error") |
		{code, part, offset}]' <<<"$output")
	start_pmad
	before=$(md5sum <"$SD/fs.pool")
	run --separate-stderr pmactl --socket "$S" --json fsck fs
	assert_equal "$status" 1
	assert_equal "$(jq -c '[.findings[] | select(.severity == "error") |
		{code, part, offset}]' <<<"$output")" "$offline"
	jq -e '.errors == 1 and .consistent == false and
		.findings[0].code == "hdpm-block-shared"' <<<"$output" \
		>/dev/null || fail "$output"
	run --separate-stderr pmactl --socket "$S" fsck fs
	assert_equal "$status" 1
	assert_line --partial "error: hdpm-block-shared: "
	assert_line "inconsistent: fs (1 error, 0 warnings; checked by pmad)"
	stop_pmad
}

@test "fsck through pmad: --repair and --recovery are refused (exit 2), a lost lease is found" {
	start_pmad
	run pmactl --socket "$S" create db --size 8M
	assert_success
	run --separate-stderr pmactl --socket "$S" fsck --repair --yes db
	assert_equal "$status" 2
	[[ "$stderr" == *"--repair needs the pool offline"* ]] || fail "$stderr"
	run --separate-stderr pmactl --socket "$S" fsck --recovery db
	assert_equal "$status" 2
	[[ "$stderr" == *"--recovery needs the pool offline"* ]] || fail "$stderr"
	# a raw request with repair is refused by pmad too
	run "$SEND" "$S" "$(req pool_fsck '{"name":"db","repair":true}')"
	assert_success
	[[ "$output" == *EROFS* ]] || fail "$output"
	# a client session that was granted the pool's one region but
	# never opened it (a raw request: nothing holds the region's lock)
	# on the same connection (the session ends with it): the heap is
	# the client's, the lease is lost
	run "$SEND" "$S" "$(req pool_open '{"name":"db"}')" \
		"$(req pool_fsck '{"name":"db"}')"
	assert_success
	jq -e '.result.consistent == true' <<<"${lines[1]}"
	jq -e '[.result.findings[].code] | index("heap-not-checked") and index("lease-lost")' <<<"${lines[1]}"
	[[ "${lines[1]}" == *"region slot 0 (region 0 of part 0) is leased to pid"*"but no open holds its lock"* ]] ||
		fail "${lines[1]}"
	# closed again: checked
	run --separate-stderr pmactl --socket "$S" fsck db
	assert_success
	# a pool pmad does not serve
	run --separate-stderr pmactl --socket "$S" fsck nosuch
	assert_equal "$status" 4
	[[ "$stderr" == *"cannot check 'nosuch' through pmad"* ]] ||
		fail "$stderr"
	stop_pmad
}

@test "fsck through pmad of a shared pool: the regions no client holds, the leases" {
	CLIENT="$PMAD_BUILDDIR/tests/pmad/pmad-client"
	start_pmad
	run pmactl --socket "$S" pool create sh --size 32M --regions 4
	assert_success
	mkfifo "$D/in"
	"$CLIENT" "$S" hold sh <"$D/in" >"$D/h" &
	local h=$!
	exec 8>"$D/in"
	wait_for grep -q held "$D/h"
	run --separate-stderr pmactl --socket "$S" --json fsck sh
	exec 8>&-
	wait "$h"
	assert_success
	local doc=$output
	jq -e '.consistent == true and .online == true and .errors == 0 and .warnings == 0' <<<"$doc"
	# slot 0 is the client's: a lease, not walked; slots 1..3 walked
	[ "$(jq -c '[.findings[] | select(.code == "lease-held")] | length' <<<"$doc")" = 1 ]
	jq -e ".findings[] | select(.code == \"lease-held\") | .message | contains(\"region slot 0 (region 0 of part 0) is leased to pid $h\")" <<<"$doc"
	[ "$(jq -c '[.findings[] | select(.code == "region-not-held")] | length' <<<"$doc")" = 1 ]
	jq -e '[.findings[].code] | index("heap-not-checked") | not' <<<"$doc"
	# and once the client is gone, the whole heap again
	wait_for eval '[ "$(pmactl --socket "$S" --json list | jq -r ".pools[] | select(.name == \"sh\") | .state")" = open ]'
	run --separate-stderr pmactl --socket "$S" --json fsck sh
	assert_success
	jq -e '[.findings[].code] | (index("lease-held") or index("region-not-held")) | not' <<<"$output"
	stop_pmad
}
