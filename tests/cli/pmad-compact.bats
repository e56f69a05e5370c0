#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl compact through pmad (--socket): pmad compacts the heap it holds
# and answers with the document offline compact prints (same keys, same
# text); dry run; refused while a libpmad client holds the pool (EBUSY),
# for a path, for an unknown pool. inspect --slabs, stat's morph
# figures and morph through pmad.

load pmad-helpers

setup() {
	pmad_setup
	WORKLOAD="$PMAD_BUILDDIR/tests/lib/pma-workload"
	CLIENT="$PMAD_BUILDDIR/tests/pmad/pmad-client"
	[ -x "$WORKLOAD" ] || fail "no $WORKLOAD: build it with make check"
	export PMEM2_FORCE_GRANULARITY=CACHE_LINE
	SD=$(mktemp -d /dev/shm/pmad-bats.XXXXXX)
	HOLD_PID=""
}

teardown() {
	if [ -n "$HOLD_PID" ]; then
		kill -9 "$HOLD_PID" 2>/dev/null || true
		wait "$HOLD_PID" 2>/dev/null || true
	fi
	pmad_teardown
	rm -rf -- "${SD:?}"
}

# hold NAME: a libpmad client attaches pool NAME (HOLD_PID) until unhold
hold() {
	mkfifo "$D/in"
	"$CLIENT" "$S" hold "$1" <"$D/in" >"$D/hold.out" &
	HOLD_PID=$!
	exec 8>"$D/in"
	wait_for grep -q held "$D/hold.out"
}

# unhold: the client closes the pool and exits
unhold() {
	exec 8>&-
	wait "$HOLD_PID"
	HOLD_PID=""
	rm -f "$D/in"
}

allocated() {
	echo $(($(stat -c %b "$1") * 512))
}

# frag POOL: 64 MiB in pmad's state dir, 30000 blocks of 120 B, all but
# every 1000th freed (made offline: pmad picks it up at start)
frag() {
	run --separate-stderr pmactl create "$SD/$1.pool" --size 64M
	assert_success
	run --separate-stderr "$WORKLOAD" --frag "$SD/$1.pool" 30000 120 1000
	assert_success
}

@test "compact --socket: pmad compacts the heap it holds, blocks stay" {
	frag f
	frag g
	start_pmad
	local before
	before=$(allocated "$SD/f.pool")
	run --separate-stderr pmactl --socket "$S" compact --dry-run --json f
	assert_success
	local plan=$output
	jq -e '.dry_run == true and .holes_punched == false' <<<"$plan"
	[ "$(allocated "$SD/f.pool")" = "$before" ] || fail "the dry run punched"
	run --separate-stderr pmactl --socket "$S" compact --json f
	assert_success
	jq -e '.dry_run == false and .holes_punched == true' <<<"$output"
	jq -e '.slabs_released >= 1 and .log_records_after == 0' <<<"$output"
	jq -e '.bytes_reclaimed > 50000000' <<<"$output"
	[ "$(jq .slabs_released <<<"$plan")" = "$(jq .slabs_released <<<"$output")" ]
	[ "$(allocated "$SD/f.pool")" -lt $((before / 4)) ] ||
		fail "still $(allocated "$SD/f.pool") bytes allocated"
	local online=$output
	grep -q "pool 'f' compacted for uid" "$LOG" || fail "$(cat "$LOG")"
	# text through pmad
	run --separate-stderr pmactl --socket "$S" compact g
	assert_success
	assert_line --regexp '^[0-9]+ empty slabs? released$'
	assert_line --regexp '^reclaimed +[0-9.]+ [KMG]iB$'
	stop_pmad
	run --separate-stderr "$WORKLOAD" --frag-check "$SD/f.pool"
	assert_success
	assert_output "30 blocks intact"
	# offline compact prints the same keys
	run --separate-stderr pmactl compact --json "$SD/g.pool"
	assert_success
	[ "$(jq -c 'keys' <<<"$output")" = "$(jq -c 'keys' <<<"$online")" ] ||
		fail "offline $(jq -c keys <<<"$output") online $(jq -c keys <<<"$online")"
}

@test "inspect --slabs --socket shows what offline shows" {
	run --separate-stderr pmactl create "$SD/m.pool" --size 64M
	assert_success
	run --separate-stderr "$WORKLOAD" --frag "$SD/m.pool" 30000 120 10
	assert_success
	run --separate-stderr pmactl morph --class 192 "$SD/m.pool"
	assert_success
	run --separate-stderr pmactl inspect --slabs --json "$SD/m.pool"
	assert_success
	local offline
	offline=$(jq -c .slabs <<<"$output")
	jq -e '.mixed_count == 60' <<<"$offline"
	start_pmad
	run --separate-stderr pmactl --socket "$S" inspect --slabs --json m
	assert_success
	[ "$(jq -c .slabs <<<"$output")" = "$offline" ] ||
		fail "online $(jq -c .slabs <<<"$output")"
	# without --slabs no slabs key
	run --separate-stderr pmactl --socket "$S" inspect --json m
	assert_success
	jq -e 'has("slabs") | not' <<<"$output"
	run --separate-stderr pmactl --socket "$S" inspect --slabs m
	assert_success
	assert_line 'mixed slabs: 60'
	# stat shows the heap's morphing: none since pmad opened it, 60 mixed
	run --separate-stderr pmactl --socket "$S" --json stat m
	assert_success
	jq -e '.pools[0] | .slabs_morphed == 0 and .mixed_slabs == 60' <<<"$output"
	run --separate-stderr pmactl --socket "$S" stat m
	assert_success
	assert_line --regexp '^NAME +STATE .* +GC/MERGED +MORPHED/MIXED$'
	assert_line --regexp '^m +open .* +0/60$'
	run --separate-stderr pmactl --socket "$S" stat --prometheus m
	assert_success
	assert_line 'pmad_pool_mixed_slabs{pool="m"} 60'
	assert_line 'pmad_pool_slabs_morphed_total{pool="m"} 0'
	assert_line '# TYPE pmad_pool_slabs_morphed_total counter'
	stop_pmad
}

# the morph pass through pmad does what it does offline (on a copy of
# the same pool), dry run first; bad input and a held pool are refused
@test "morph --socket: pmad morphs the heap it holds, as offline" {
	run --separate-stderr pmactl create "$SD/m.pool" --size 64M
	assert_success
	run --separate-stderr "$WORKLOAD" --frag "$SD/m.pool" 30000 120 10
	assert_success
	cp "$SD/m.pool" "$D/copy"
	run --separate-stderr pmactl morph --json --class 192 "$D/copy"
	assert_success
	local want
	want=$(jq -c 'del(.dry_run)' <<<"$output")
	run --separate-stderr pmactl inspect --slabs --json "$D/copy"
	assert_success
	local slabs
	slabs=$(jq -c .slabs <<<"$output")
	start_pmad
	run --separate-stderr pmactl --socket "$S" morph --dry-run --json --class 192 m
	assert_success
	jq -e '.dry_run == true and .slabs_morphed == 60' <<<"$output"
	[ "$(jq -c 'del(.dry_run)' <<<"$output")" = "$want" ] ||
		fail "dry run $(jq -c . <<<"$output"), offline $want"
	run --separate-stderr pmactl --socket "$S" inspect --slabs --json m
	assert_success
	jq -e '.slabs.mixed_count == 0' <<<"$output"
	# bad input: pmactl's own checks, then pmad's
	run --separate-stderr pmactl --socket "$S" morph --class 100 m
	assert_failure 1
	[[ "$stderr" == *"no size class of 100 bytes (the nearest are 96 and 112"* ]] ||
		fail "$stderr"
	run --separate-stderr pmactl --socket "$S" morph --used 101 m
	assert_failure 2
	run --separate-stderr pmactl --socket "$S" morph --json --class 192 m
	assert_success
	jq -e '.dry_run == false' <<<"$output"
	[ "$(jq -c 'del(.dry_run)' <<<"$output")" = "$want" ] ||
		fail "online $(jq -c . <<<"$output"), offline $want"
	run --separate-stderr pmactl --socket "$S" inspect --slabs --json m
	assert_success
	[ "$(jq -c .slabs <<<"$output")" = "$slabs" ] ||
		fail "online $(jq -c .slabs <<<"$output"), offline $slabs"
	run --separate-stderr pmactl --socket "$S" --json stat m
	assert_success
	jq -e '.pools[0] | .slabs_morphed == 60 and .mixed_slabs == 60' <<<"$output"
	run --separate-stderr pmactl --socket "$S" morph m
	assert_success
	assert_line --regexp '^0 slabs morphed'
	# a pool a libpmad client holds is busy
	hold m
	run --separate-stderr pmactl --socket "$S" morph m
	assert_failure 1
	[[ "$stderr" == *"morph m: pool 'm' is attached by pid $HOLD_PID"*"(EBUSY)" ]] ||
		fail "$stderr"
	unhold
	stop_pmad
	# the old blocks are intact, the pool checks clean
	run --separate-stderr "$WORKLOAD" --frag-check "$SD/m.pool"
	assert_success
	assert_output "3000 blocks intact"
	run --separate-stderr pmactl fsck "$SD/m.pool"
	assert_success
}

@test "compact --socket: --human, refusals (attached pool, path, unknown pool)" {
	start_pmad
	run pmactl --socket "$S" pool create c --size 16M
	assert_success
	run --separate-stderr pmactl --socket "$S" compact --json --human c
	assert_success
	[[ "$(jq -r .file_bytes_before <<<"$output")" == *iB ]] || fail "$output"
	hold c
	run --separate-stderr pmactl --socket "$S" compact c
	assert_failure 1
	[[ "$stderr" == *"compact c: pool 'c' is attached by pid $HOLD_PID"*"(EBUSY)" ]] ||
		fail "$stderr"
	unhold
	run --separate-stderr pmactl --socket "$S" compact c
	assert_success
	run --separate-stderr pmactl --socket "$S" compact "$SD/c.pool"
	assert_failure 2
	[[ "$stderr" == *"is a path, but through pmad"* ]] || fail "$stderr"
	run --separate-stderr pmactl --socket "$S" compact nope
	assert_failure 1
	[[ "$stderr" == *"no pool 'nope' (ENOENT)"* ]] || fail "$stderr"
	stop_pmad
}

# compactions_ge POOL N: pmad's compaction service compacted POOL N times
compactions_ge() {
	[ "$(pmactl --socket "$S" --json stat "$1" |
		jq .pools[0].services.compactions)" -ge "$2" ]
}

@test "the compaction service compacts pmad's pools, not attached ones; fsck clean" {
	frag f
	cat >>"$CONF" <<-EOF
	services:
	  compact_interval: 1
	EOF
	local before
	before=$(allocated "$SD/f.pool")
	start_pmad
	run pmactl --socket "$S" pool create c --size 16M
	assert_success
	# c is attached by a libpmad client: the service leaves it alone
	hold c
	# a round may have compacted c before the client held it: from now
	# on its count must not move
	local c0
	c0=$(pmactl --socket "$S" --json stat c | jq .pools[0].services.compactions)
	wait_for compactions_ge f 2
	[ "$(allocated "$SD/f.pool")" -lt $((before / 4)) ] ||
		fail "still $(allocated "$SD/f.pool") of $before bytes allocated"
	run --separate-stderr pmactl --socket "$S" --json stat
	assert_success
	local doc=$output now
	now=$(date +%s)
	[ "$(jq .daemon.compact_interval <<<"$doc")" = 1 ]
	jq -e '.daemon.service_compact_runs >= 2' <<<"$doc"
	jq -e '.daemon.service_compactions >= 2' <<<"$doc"
	jq -e '.daemon.service_compact_bytes_reclaimed > 50000000' <<<"$doc"
	jq -e ".daemon.service_last_compact <= $now and .daemon.service_last_compact >= $now - 60" <<<"$doc"
	jq -e '.pools[] | select(.name == "f") | .services.compact_bytes_reclaimed > 50000000' <<<"$doc"
	jq -e '.pools[] | select(.name == "f") | .services.compact_failures == 0' <<<"$doc"
	jq -e ".pools[] | select(.name == \"f\") | .services.last_compact >= $now - 60" <<<"$doc"
	[ "$(jq '.pools[] | select(.name == "c") | .services.compactions' <<<"$doc")" = "$c0" ]
	[ "$c0" != 0 ] ||
		[ "$(jq '.pools[] | select(.name == "c") | .services | has("last_compact")' <<<"$doc")" = false ]
	run --separate-stderr pmactl --socket "$S" stat
	assert_success
	assert_line --regexp '^services: compaction every 1 s; [0-9]+ runs, [0-9]+ compactions, [0-9.]+ MiB reclaimed, last 20[0-9-]+ [0-9:]+ UTC$'
	run --separate-stderr pmactl --socket "$S" stat --prometheus
	assert_success
	assert_line 'pmad_compact_interval_seconds 1'
	assert_line --regexp '^pmad_service_compact_runs_total [1-9][0-9]*$'
	assert_line --regexp '^pmad_service_compactions_total [1-9][0-9]*$'
	assert_line --regexp '^pmad_pool_compactions_total\{pool="f"\} [1-9][0-9]*$'
	assert_line "pmad_pool_compactions_total{pool=\"c\"} $c0"
	assert_line 'pmad_pool_compact_failures_total{pool="f"} 0'
	assert_line --regexp '^pmad_pool_compact_reclaimed_bytes_total\{pool="f"\} [0-9]{8,}$'
	assert_line --regexp '^pmad_pool_last_compact_timestamp_seconds\{pool="f"\} [0-9]+$'
	[ "$c0" != 0 ] ||
		refute_line --partial 'pmad_pool_last_compact_timestamp_seconds{pool="c"}'
	# a compact request counts on the pool too
	local n
	n=$(pmactl --socket "$S" --json stat f | jq .pools[0].services.compactions)
	run --separate-stderr pmactl --socket "$S" compact f
	assert_success
	compactions_ge f $((n + 1))
	unhold
	stop_pmad
	run --separate-stderr pmactl fsck "$SD/f.pool"
	assert_success
	run --separate-stderr pmactl fsck "$SD/c.pool"
	assert_success
	run --separate-stderr "$WORKLOAD" --frag-check "$SD/f.pool"
	assert_success
	assert_output "30 blocks intact"
}

@test "compact_interval: off by default; a bad value names file, line, column" {
	start_pmad
	run --separate-stderr pmactl --socket "$S" --json stat
	assert_success
	[ "$(jq .daemon.compact_interval <<<"$output")" = 0 ]
	[ "$(jq .daemon.service_compact_runs <<<"$output")" = 0 ]
	run --separate-stderr pmactl --socket "$S" stat
	assert_line 'services: background compaction off'
	stop_pmad
	printf 'services:\n  compact_interval: -1\n' >"$D/bad.yaml"
	run --separate-stderr pmad --check-config --config "$D/bad.yaml"
	assert_failure
	[[ "$stderr" == *"$D/bad.yaml:2:21: compact_interval '-1' is not an integer 0..86400"* ]] ||
		fail "$stderr"
	printf 'services:\n  compact_interval: 86401\n' >"$D/bad.yaml"
	run --separate-stderr pmad --check-config --config "$D/bad.yaml"
	assert_failure
	[[ "$stderr" == *"$D/bad.yaml:2:21: compact_interval '86401' is not an integer 0..86400"* ]] ||
		fail "$stderr"
	printf 'services:\n  compact_interval: 600\n' >"$D/good.yaml"
	run --separate-stderr pmad --check-config --config "$D/good.yaml"
	assert_success
}
