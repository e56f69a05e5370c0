#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Pools shared by several processes through pmad (region leases,
# doc/shared-heaps.md "Leases"): pmad grants each client free regions and
# descriptors of its own; eight processes allocate and free each other's
# blocks while some are killed -9 (pmad recovers their regions), and while
# pmad itself is killed -9 and restarted; then the whole pool is checked
# offline (every word a live block, none twice, no leak) and by fsck.
# tests/pmad/pmad-procs is the multi-process client, pmad-client the
# single ones. Sizes fit make check; tests/pmad/stress.sh runs them full.

load pmad-helpers

setup() {
	pmad_setup
	CLIENT="$PMAD_BUILDDIR/tests/pmad/pmad-client"
	PROCS="$PMAD_BUILDDIR/tests/pmad/pmad-procs"
	[ -x "$PROCS" ] || fail "no $PROCS: build it with make check"
	export PMEM2_FORCE_GRANULARITY=CACHE_LINE
	SD=$(mktemp -d /dev/shm/pmad-bats.XXXXXX)
	chmod 755 "$SD"
	BG_PID=""
}

teardown() {
	if [ -n "$BG_PID" ]; then
		kill -9 "$BG_PID" 2>/dev/null || true
		wait "$BG_PID" 2>/dev/null || true
	fi
	pmad_teardown
	rm -rf -- "${SD:?}"
}

pool_json() { # pool_json NAME: its pool_list entry
	"$SEND" "$S" "$(req pool_list)" |
		jq -c --arg n "$1" '.result.pools[] | select(.name == $n)'
}

# check_pool NAME OUT: offline (pmad stopped), the table and fsck
check_pool() {
	local root
	root=$(awk '/^root/{print $2}' "$2")
	[ -n "$root" ] || fail "no root in $(cat "$2")"
	run "$PROCS" "$SD/$1.pool" check - --root "$root"
	[ "$status" = 0 ] || fail "$output"
	assert_output --partial "none twice"
	run pmactl fsck "$SD/$1.pool"
	assert_success
	assert_output --partial "consistent"
}

@test "pool create --regions: K regions, each granted to one client; stat shows the holders" {
	start_pmad
	run pmactl --socket "$S" pool create two --size 32M --regions 2
	assert_success
	[ "$(pool_json two | jq .regions)" = 2 ]
	[ "$(pool_json two | jq .regions_free)" = 2 ]
	run pmactl --socket "$S" pool create bad --size 32M --regions 3
	assert_failure 2
	assert_output --partial "invalid --regions '3'"
	send_raw() { run "$SEND" "$S" "$@"; }
	send_raw "$(req pool_create '{"name":"r","size":33554432,"regions":32}')" \
		"$(req pool_create '{"name":"r","size":33554432,"regions":"2"}')"
	[ "$(jq -r .error.errno <<<"${lines[0]}")" = EINVAL ] || fail "${lines[0]}"
	[[ "${lines[0]}" == *'must be a power of two 1..16'* ]] ||
		fail "${lines[0]}"
	[ "$(jq -r .error.errno <<<"${lines[1]}")" = EINVAL ] || fail "${lines[1]}"
	# two holders, each with its region; a third client: EBUSY naming one
	mkfifo "$SD/in1" "$SD/in2"
	"$CLIENT" "$S" hold two <"$SD/in1" >"$SD/h1" &
	local h1=$!
	exec 8>"$SD/in1"
	wait_for grep -q held "$SD/h1"
	"$CLIENT" "$S" hold two <"$SD/in2" >"$SD/h2" &
	local h2=$!
	exec 9>"$SD/in2"
	wait_for grep -q held "$SD/h2"
	[ "$(pool_json two | jq -r .state)" = attached ]
	[ "$(pool_json two | jq -c '[.holders[].regions[0]] | sort')" = "[0,1]" ]
	[ "$(pool_json two | jq -c '[.holders[].pid] | sort')" = \
		"$(printf '%s\n' "$h1" "$h2" | sort -n | jq -sc .)" ]
	[ "$(pool_json two | jq .regions_free)" = 0 ]
	run "$CLIENT" "$S" open two
	assert_failure 1
	assert_output --regexp "^-16: pmad: pool 'two': all 2 of its heap regions are held, by pid ($h1|$h2) and others"
	# offline tools stay out while clients hold regions
	run --separate-stderr pmactl inspect "$SD/two.pool"
	assert_failure 1
	[[ "$stderr" == *"use --socket"* ]] || fail "$stderr"
	exec 8>&- 9>&-
	wait "$h1" "$h2"
	wait_for eval '[ "$(pool_json two | jq -r .state)" = open ]'
	[ "$(pool_json two | jq .client_recoveries)" = 0 ]
	stop_pmad
}

@test "pmad_pool_grow, or a full allocation by itself: a client leases another region; fsck clean" {
	start_pmad
	run pmactl --socket "$S" pool create g --size 32M --regions 2
	assert_success
	mkfifo "$SD/in1"
	"$CLIENT" "$S" grow g <"$SD/in1" >"$SD/g1" &
	local g1=$!
	exec 8>"$SD/in1"
	wait_for grep -q grown "$SD/g1"
	[ "$(pool_json g | jq -c '[.holders[] | select(.pid == '"$g1"') | .regions[]] | sort')" = "[0,1]" ]
	[ "$(pool_json g | jq .regions_free)" = 0 ]
	run "$CLIENT" "$S" open g
	assert_failure 1
	assert_output --partial "all 2 of its heap regions are held, by pid $g1"
	exec 8>&-
	wait "$g1" || fail "$(cat "$SD/g1")"
	run cat "$SD/g1"
	refute_line --partial "not ok"
	assert_line --regexp "^ok - its region holds [0-9]+ blocks of 1 MiB, then -ENOMEM"
	assert_line "ok - pmad_pool_grow: "
	assert_line --regexp "^ok - a second grow: -EBUSY"
	assert_line --regexp "^ok - the -ENOMEM says growth is off: .*this client does not lease more regions by itself"
	wait_for eval '[ "$(pool_json g | jq -r .state)" = open ]'
	[ "$(pool_json g | jq .regions_free)" = 2 ]
	# the same without pmad_pool_grow: the allocation leases region 1
	run "$CLIENT" "$S" autogrow g
	[ "$status" = 0 ] || fail "$output"
	refute_line --partial "not ok"
	local one two
	one=$(grep -o "its region holds [0-9]*" "$SD/g1" | grep -o "[0-9]*$")
	two=$(awk '/^blocks/{print $2}' <<<"$output")
	[ "$two" -ge $((2 * one)) ] || fail "one region $one blocks, grown $two"
	grep -q "regions 0x2 leased to pid" "$LOG"
	wait_for eval '[ "$(pool_json g | jq -r .state)" = open ]'
	stop_pmad
	run pmactl fsck "$SD/g.pool"
	assert_success
}

@test "two clients in one process hold one region each; frees across them go through rings" {
	start_pmad
	run pmactl --socket "$S" pool create t --size 32M --regions 4
	assert_success
	run "$CLIENT" "$S" two t
	[ "$status" = 0 ] || fail "$output"
	refute_output --partial "not ok"
	stop_pmad
	run pmactl fsck "$SD/t.pool"
	assert_success
}

@test "8 processes share a pool through pmad, 12 killed -9: nothing lost, nothing leaked" {
	start_pmad
	run pmactl --socket "$S" pool create p --size 64M --regions 8
	assert_success
	run "$PROCS" "$S" run p --procs 8 --ops 40000 --kills 12
	[ "$status" = 0 ] || fail "$output"
	echo "$output" >"$SD/out"
	assert_output --regexp "8 processes, 12 kills, [0-9]+ ops, [1-9][0-9]* frees of another"
	[ "$(pool_json p | jq .client_recoveries)" = 12 ]
	[ "$(pool_json p | jq -r .state)" = open ]
	grep -q "recovered in" "$LOG" || fail "$(cat "$LOG")"
	stop_pmad
	check_pool p "$SD/out"
}

@test "kill -9 of pmad under an 8-process load; a new pmad shares the pool with them" {
	start_pmad
	run pmactl --socket "$S" pool create q --size 64M --regions 8
	assert_success
	"$PROCS" "$S" run q --procs 8 --ops 400000 --kills 40 >"$SD/out" \
		2>"$SD/err" &
	BG_PID=$!
	wait_for grep -q "^root" "$SD/out"
	sleep 0.2
	kill -9 "$PMAD_PID"
	wait "$PMAD_PID" || true
	PMAD_PID=""
	# the processes go on (they hold their regions); killed ones wait
	sleep 0.3
	start_pmad
	wait "$BG_PID" || fail "$(cat "$SD/out" "$SD/err")"
	BG_PID=""
	grep -q "^8 processes, 40 kills" "$SD/out" || fail "$(cat "$SD/out")"
	# processes of the old pmad closed while it was gone: that is fine
	wait_for eval '[ "$(pool_json q | jq -r .state)" = open ]'
	stop_pmad
	check_pool q "$SD/out"
}

@test "a restarted pmad shows regions held by processes it does not know, takes them back when let go" {
	start_pmad
	run pmactl --socket "$S" pool create u --size 32M --regions 2
	assert_success
	mkfifo "$SD/in"
	"$CLIENT" "$S" hold u <"$SD/in" >"$SD/h" &
	BG_PID=$!
	exec 8>"$SD/in"
	wait_for grep -q held "$SD/h"
	kill -9 "$PMAD_PID"
	wait "$PMAD_PID" || true
	PMAD_PID=""
	start_pmad
	[ "$(pool_json u | jq -r .state)" = error ]
	run "$CLIENT" "$S" open u
	assert_success
	assert_output opened
	[ "$(pool_json u | jq -r .state)" = attached ]
	[ "$(pool_json u | jq -c .regions_held_unknown)" = "[0]" ]
	[ "$(pool_json u | jq .regions_free)" = 1 ]
	# fsck through pmad: the unknown holder is a warning, region 1 is
	# checked (pmad opens it), region 0 is not
	run --separate-stderr pmactl --socket "$S" --json fsck u
	assert_success
	jq -e '.consistent == true and .warnings == 1' <<<"$output"
	jq -e '.findings[] | select(.code == "lease-unknown") | .message | contains("region slot 0 (region 0 of part 0) is held by a process pmad did not grant it to")' <<<"$output"
	jq -e '[.findings[] | select(.code == "region-not-held")] | length == 1' <<<"$output"
	# the holder dies (pmad, started after it, holds the fifo open too)
	# after the last client pmad knows has gone: nothing tells pmad, its
	# watch (every second) sees the region let go and takes the pool
	# back (the open recovers region 0)
	exec 8>&-
	kill -9 "$BG_PID"
	wait "$BG_PID" || true
	BG_PID=""
	wait_for eval '[ "$(pool_json u | jq -r .state)" = open ]'
	grep -q "pool 'u': the processes pmad did not know have let go" "$LOG"
	[ "$(pool_json u | jq .regions_free)" = 2 ]
	[ "$(pool_json u | jq .regions_held_unknown)" = null ]
	run "$CLIENT" "$S" open u
	assert_success
	[ "$(pool_json u | jq -r .state)" = open ]
	stop_pmad
	run pmactl fsck "$SD/u.pool"
	assert_success
}

@test "a restarted pmad opens a pool it found held once its holder dies" {
	start_pmad
	run pmactl --socket "$S" pool create e --size 32M --regions 2
	assert_success
	mkfifo "$SD/in"
	"$CLIENT" "$S" hold e <"$SD/in" >"$SD/h" &
	BG_PID=$!
	exec 8>"$SD/in"
	wait_for grep -q held "$SD/h"
	kill -9 "$PMAD_PID"
	wait "$PMAD_PID" || true
	PMAD_PID=""
	start_pmad
	# no client has come: pmad only tried its own open, which failed
	sleep 1.5
	[ "$(pool_json e | jq -r .state)" = error ]
	exec 8>&-
	kill -9 "$BG_PID"
	wait "$BG_PID" || true
	BG_PID=""
	wait_for eval '[ "$(pool_json e | jq -r .state)" = open ]'
	grep -q "pool 'e' is free again and open" "$LOG"
	# one failed open at the start, none while the holder lived
	[ "$(grep -c "pool 'e' .* cannot be opened" "$LOG")" = 1 ]
	stop_pmad
	run pmactl fsck "$SD/e.pool"
	assert_success
}

@test "pma_root in a client without slot 0: pmad leases slot 0 for it, or names its holder" {
	start_pmad
	run pmactl --socket "$S" pool create r --size 32M --regions 4
	assert_success
	# a holds slot 0 and makes no root; b (slot 1) cannot make it
	mkfifo "$SD/ina" "$SD/inb"
	"$CLIENT" "$S" hold r <"$SD/ina" >"$SD/a" &
	BG_PID=$!
	exec 8>"$SD/ina"
	wait_for grep -q held "$SD/a"
	"$CLIENT" "$S" root r <"$SD/inb" >"$SD/b" 8>&- &
	local b=$!
	exec 9>"$SD/inb"
	wait_for grep -q opened "$SD/b"
	echo >&9
	wait_for grep -q ": " "$SD/b"
	grep -q "^-16: no root object yet, and this open could not take region 0 of part 0 (slot 0), where it is made: pmad: pool 'r': region slot 0 (region 0 of part 0) is held by pid $BG_PID, which can make the root object" "$SD/b" ||
		fail "$(cat "$SD/b")"
	# a closes: b's next pma_root leases slot 0 and makes the root there
	exec 8>&-
	wait "$BG_PID"
	BG_PID=""
	echo >&9
	wait_for grep -q "^root" "$SD/b"
	local root
	root=$(awk '/^root/{print $2}' "$SD/b")
	[ "$(pool_json r | jq -c '.holders[0].regions')" = "[0,1]" ] ||
		fail "$(pool_json r)"
	grep -q "regions 0x1 leased to pid $b" "$LOG"
	# another client reads the same root (no lease: slot 0 is b's)
	run "$CLIENT" "$S" root r <<<"x"
	assert_success
	assert_line --regexp "^root $root block 0x[0-9a-f]+$"
	# bad lease arguments
	run "$SEND" "$S" "$(req lease '{"name":"r","slot":64}')"
	[ "$(jq -r .error.errno <<<"$output")" = EINVAL ] || fail "$output"
	[ "$(jq -r .error.message <<<"$output")" = '"slot" must be a region slot 0..63' ] ||
		fail "$output"
	exec 9>&-
	wait "$b"
	stop_pmad
	run pmactl fsck "$SD/r.pool"
	assert_success
}

@test "the sync service applies clients' frees of a region no client holds; stat shows it" {
	# the default: every second
	start_pmad
	run pmactl --socket "$S" pool create s --size 32M --regions 2
	assert_success
	run "$CLIENT" "$S" sync s --expect 1
	[ "$status" = 0 ] || fail "$output"
	assert_output --regexp "ok - pmad's sync service applied them: 0 pending after [0-9]+ ms"
	run --separate-stderr pmactl --socket "$S" --json stat
	assert_success
	local doc=$output now
	now=$(date +%s)
	[ "$(jq .daemon.sync_interval <<<"$doc")" = 1 ]
	jq -e '.daemon.service_sync_runs >= 1 and .daemon.service_syncs >= 1' <<<"$doc"
	[ "$(jq .daemon.service_sync_frees_applied <<<"$doc")" = 40 ]
	jq -e '.pools[] | select(.name == "s") | .services.sync_frees_applied == 40 and .services.sync_failures == 0' <<<"$doc"
	jq -e ".pools[] | select(.name == \"s\") | .services.syncs >= 1 and .services.last_sync >= $now - 60" <<<"$doc"
	run --separate-stderr pmactl --socket "$S" stat
	assert_success
	assert_line --regexp '^services: free-ring sync every 1 s; [1-9][0-9]* runs, [1-9][0-9]* syncs, 40 frees applied$'
	run --separate-stderr pmactl --socket "$S" stat --prometheus
	assert_success
	assert_line 'pmad_sync_interval_seconds 1'
	assert_line 'pmad_service_sync_frees_applied_total 40'
	assert_line 'pmad_pool_sync_frees_applied_total{pool="s"} 40'
	assert_line 'pmad_pool_sync_failures_total{pool="s"} 0'
	assert_line --regexp '^pmad_pool_syncs_total\{pool="s"\} [1-9][0-9]*$'
	stop_pmad
	run pmactl fsck "$SD/s.pool"
	assert_success
	# all 40 blocks are free: only the root is live
	run --separate-stderr pmactl inspect --heap --json "$SD/s.pool"
	assert_success
	jq -e '.heap.ring_frees_pending == 0' <<<"$output"
}

@test "sync_interval: 0 turns the sync service off; the frees wait; a bad value is refused" {
	cat >>"$CONF" <<-EOF
	services:
	  sync_interval: 0
	EOF
	start_pmad
	run pmactl --socket "$S" pool create s --size 32M --regions 2
	assert_success
	run "$CLIENT" "$S" sync s --expect 0
	[ "$status" = 0 ] || fail "$output"
	assert_output --partial "ok - with the service off they still wait: 40 pending"
	run --separate-stderr pmactl --socket "$S" stat
	assert_success
	assert_line 'services: free-ring sync off'
	[ "$(pmactl --socket "$S" --json stat s | jq .pools[0].services.syncs)" = 0 ]
	stop_pmad
	# pmad took the whole heap back when the client left: applied then
	run --separate-stderr pmactl inspect --heap --json "$SD/s.pool"
	assert_success
	jq -e '.heap.ring_frees_pending == 0' <<<"$output"
	printf 'services:\n  sync_interval: soon\n' >"$CONF"
	run pmad --check-config --config "$CONF"
	assert_failure
	assert_output --regexp "pmad.yaml:2:[0-9]+: .*sync_interval"
}
