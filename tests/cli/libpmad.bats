#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# libpmad against pmad on a temporary socket and state dir (on /dev/shm,
# CACHE_LINE persistence): open/allocate/close/reopen, one attachment at
# a time (EBUSY), kill -9 of clients mid-workload and of pmad under load
# (every committed allocation stays, nothing leaks, pmad stays up), raw
# pool_open packets (error replies), a valgrind-clean session.
# tests/pmad/pmad-client is the libpmad client.

load pmad-helpers

setup() {
	pmad_setup
	CLIENT="$PMAD_BUILDDIR/tests/pmad/pmad-client"
	[ -x "$CLIENT" ] || fail "no $CLIENT: build it with make check"
	export PMEM2_FORCE_GRANULARITY=CACHE_LINE
	SD=$(mktemp -d /dev/shm/pmad-bats.XXXXXX)
	chmod 755 "$SD"
	HOLD_PID=""
	WL_PID=""
}

teardown() {
	local p
	for p in $HOLD_PID $WL_PID; do
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	pmad_teardown
	rm -rf -- "${SD:?}"
}

# send PAYLOAD...: one connection; $output has a reply per line
send() {
	run "$SEND" "$S" "$@"
	assert_success
}

# the errno name of reply line N of the last send
errno_of() {
	jq -r .error.errno <<<"${lines[$1]}"
}

pool_field() { # pool_field NAME KEY: from pool_list
	"$SEND" "$S" "$(req pool_list)" |
		jq -r --arg n "$1" ".result.pools[] | select(.name == \$n) | .$2"
}

@test "libpmad: open, pma_root, allocate, close, reopen; EBUSY, ENOENT, no pmad" {
	start_pmad
	run pmactl --socket "$S" pool create basic --size 16M
	assert_success
	run "$CLIENT" "$S" basic basic
	assert_success
	refute_output --partial "not ok"
	assert_line --partial "second open: -EBUSY naming pid"
	assert_line --partial "reopen sees the 64 blocks and their data"
	# two closes, one connection that went away with the pool (the
	# EALREADY client disconnects with its heap: a close, not a crash)
	[ "$(pool_field basic attaches)" = 2 ]
	[ "$(pool_field basic client_recoveries)" = 0 ]
	[ "$(pool_field basic state)" = open ]
	stop_pmad
}

@test "libpmad: pmad_pool_create makes a pool pmad serves; EEXIST, EINVAL" {
	start_pmad
	run "$CLIENT" "$S" create made --size 16777216
	assert_success
	assert_output created
	run "$CLIENT" "$S" open made
	assert_success
	assert_output opened
	[ "$(pool_field made size)" = 16777216 ]
	run "$CLIENT" "$S" create made --size 16777216
	assert_failure
	assert_output --partial "-17: "
	run "$CLIENT" "$S" create nosize --size 0
	assert_failure
	assert_output --partial "-22: "
	stop_pmad
}

@test "libpmad: pmad_pool_stats reads the pool's attaches and recoveries" {
	local us
	start_pmad
	run pmactl --socket "$S" pool create st --size 16M
	assert_success
	run "$CLIENT" "$S" stats st
	assert_success
	assert_output "attaches=0 recoveries=0 last_recovery_us=0"
	mkfifo "$D/in"
	"$CLIENT" "$S" hold st <"$D/in" >"$D/hold.out" &
	HOLD_PID=$!
	exec 8>"$D/in"
	wait_for grep -q held "$D/hold.out"
	kill -9 "$HOLD_PID"
	wait "$HOLD_PID" || true
	HOLD_PID=""
	exec 8>&-
	recovered() { [ "$(pool_field st client_recoveries)" = 1 ]; }
	wait_for recovered
	us=$(pool_field st last_recovery_us)
	run "$CLIENT" "$S" stats st
	assert_success
	assert_output "attaches=1 recoveries=1 last_recovery_us=$us"
	run "$CLIENT" "$S" stats nosuch
	assert_failure
	assert_output --partial "-2: "
	stop_pmad
}

@test "an attached pool: pmad shows the holder, stays away, offline tools stay out" {
	start_pmad
	run pmactl --socket "$S" pool create held --size 16M
	assert_success
	mkfifo "$D/in"
	"$CLIENT" "$S" hold held <"$D/in" >"$D/hold.out" &
	HOLD_PID=$!
	exec 8>"$D/in"
	wait_for grep -q held "$D/hold.out"
	[ "$(pool_field held state)" = attached ]
	[ "$(pool_field held holder_pid)" = "$HOLD_PID" ]
	[ "$(pool_field held clients)" = 1 ]
	send "$(req pool_stat '{"name":"held"}')" \
		"$(req pool_compact '{"name":"held"}')" \
		"$(req pool_open '{"name":"held"}')" \
		"$(req stat '{"name":"held"}')"
	[ "$(errno_of 0)" = EBUSY ] || fail "${lines[0]}"
	[ "$(errno_of 1)" = EBUSY ] || fail "${lines[1]}"
	[ "$(errno_of 2)" = EBUSY ] || fail "${lines[2]}"
	[[ "${lines[2]}" == *"all 1 of its heap regions are held, by pid $HOLD_PID"* ]] ||
		fail "${lines[2]}"
	[[ "${lines[0]}" == *"attached by pid $HOLD_PID"* ]] || fail "${lines[0]}"
	# stat lists it without heap figures
	[ "$(jq -r '.result.pools[0].state' <<<"${lines[3]}")" = attached ]
	[ "$(jq -r '.result.pools[0].holder_pid' <<<"${lines[3]}")" = "$HOLD_PID" ]
	run pmactl --socket "$S" stat --prometheus
	assert_success
	assert_line "pmad_pool_open{pool=\"held\"} 0"
	# the lock stays pmad's: offline tools are sent to --socket
	run --separate-stderr pmactl inspect "$SD/held.pool"
	assert_failure 1
	[[ "$stderr" == *"held by pmad (pid $PMAD_PID); use --socket"* ]] ||
		fail "$stderr"
	exec 8>&-
	wait "$HOLD_PID"
	HOLD_PID=""
	[ "$(pool_field held state)" = open ]
	[ "$(pool_field held client_recoveries)" = 0 ]
	run pmactl --socket "$S" --json pool stat held
	assert_success
	stop_pmad
}

@test "libpmad as another uid: -EACCES with pmad's message, then a pool of its own" {
	command -v setpriv >/dev/null || skip "setpriv not installed"
	[ "$(id -u)" = 0 ] || skip "needs root to switch to a second uid"
	chmod 755 "$SD"
	start_pmad
	run pmactl --socket "$S" pool create rootonly --size 16M --mode 0600
	assert_success
	local as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	run "${as_nobody[@]}" "$CLIENT" "$S" open rootonly
	assert_failure 1
	[[ "$output" == "-13: pmad: pool 'rootonly': permission denied for uid 65534"* ]] ||
		fail "$output"
	run "${as_nobody[@]}" "$(command -v pmactl)" --socket "$S" pool create mine \
		--size 16M
	assert_success
	run "${as_nobody[@]}" "$CLIENT" "$S" open mine
	assert_success
	assert_output opened
	stop_pmad
}

@test "a client that forks: the pool stays attached until every copy of the connection is gone" {
	start_pmad
	run pmactl --socket "$S" pool create fk --size 16M
	assert_success
	run "$CLIENT" "$S" fork fk
	[ "$status" = 0 ] || fail "$output"
	assert_line --partial "keeps the connection: -EBUSY naming pid"
	assert_line --partial "ok - after the child is gone the pool opens"
	# the holder and its child went away without pool_close: recovered
	[ "$(pool_field fk client_recoveries)" = 1 ]
	stop_pmad
}

# the fdinfo flags (octal) of pmad's descriptors of "$1", one per line
pmad_fd_flags() {
	local f
	for f in /proc/"$PMAD_PID"/fd/*; do
		[ "$(readlink "$f")" = "$1" ] || continue
		awk '/^flags:/{print $2}' /proc/"$PMAD_PID"/fdinfo/"${f##*/}"
	done
}

@test "flags a client sets on its descriptors never reach pmad's (its own open file descriptions)" {
	start_pmad
	run pmactl --socket "$S" pool create fl --size 16M
	assert_success
	run "$CLIENT" "$S" setfl fl
	assert_success
	[ "$output" -ge 1 ] || fail "no descriptor of the pool: $output"
	run pmad_fd_flags "$SD/fl.pool"
	[ -n "$output" ] || fail "pmad holds no descriptor of the pool"
	local fl
	for fl in $output; do
		# O_APPEND 02000, O_NONBLOCK 04000
		[ $((8#$fl & 8#6000)) = 0 ] || fail "flags $fl left on pmad's descriptor"
	done
	run "$CLIENT" "$S" basic fl
	assert_success
	stop_pmad
}

@test "kill -9 of a client mid-workload, 20 times: committed blocks stay, nothing leaks" {
	start_pmad
	run pmactl --socket "$S" pool create crash --size 64M
	assert_success
	run "$CLIENT" "$S" crash-loop crash --rounds 20
	[ "$status" = 0 ] || fail "$output"
	[ "$(grep -c '^ok - round' <<<"$output")" = 20 ]
	[ "$(grep -c '^ok - no leak' <<<"$output")" = 20 ]
	refute_output --partial "not ok"
	alive
	[ "$(pool_field crash client_recoveries)" = 20 ]
	[ "$(pool_field crash state)" = open ]
	stop_pmad
}

# the count file holds the number of committed ops
count() {
	local c
	c=$(cat "$D/count" 2>/dev/null) || c=0
	echo $((10#${c:-0}))
}

@test "kill -9 of pmad under load; restart while the client runs, then kill it" {
	start_pmad
	run pmactl --socket "$S" pool create load --size 64M
	assert_success
	"$CLIENT" "$S" workload load --count-file "$D/count" &
	WL_PID=$!
	wait_for eval '[ "$(count)" -ge 2000 ]'
	kill -9 "$PMAD_PID"
	wait "$PMAD_PID" || true
	PMAD_PID=""
	# the client goes on without pmad: it has the heap
	local before
	before=$(count)
	wait_for eval '[ "$(count)" -gt '"$before"' ]'
	# a new pmad cannot open the pool under it: listed as busy
	start_pmad
	[ "$(pool_field load state)" = error ]
	[[ "$(pool_field load error)" == *"in use by"* ]] ||
		fail "$(pool_field load error)"
	kill -9 "$WL_PID"
	wait "$WL_PID" || true
	WL_PID=""
	# the next open finds it free: recovery, then the check
	run "$CLIENT" "$S" verify load --count "$(count)"
	[ "$status" = 0 ] || fail "$output"
	assert_line --partial "every committed block is there (0 bad slots)"
	assert_line --partial "no leak"
	alive
	grep -q "pool 'load' is free again and open" "$LOG" || fail "$(cat "$LOG")"
	stop_pmad
}

@test "raw pool_open packets: each bad one gets an error reply, pmad stays up" {
	start_pmad
	run pmactl --socket "$S" pool create raw --size 16M
	assert_success
	send "$(req pool_open)" \
		"$(req pool_open '{"name":5}')" \
		"$(req pool_open '{"name":"ra\u0000w"}')" \
		"$(req pool_open '{"name":"../raw"}')" \
		"$(req pool_open '{"name":"nope"}')" \
		'{"version":2,"op":"pool_open","args":{"name":"raw"}}' \
		'{"version":1,"op":"pool_open","args":{"name":"raw"' \
		'{"version":1,"op":"pool_open","args":["raw"]}' \
		'{"version":1,"op":"pool_open","args":{"name":"raw"}} x' \
		"$(req pool_close '{"name":"raw"}')"
	[ "$(errno_of 0)" = EINVAL ] || fail "${lines[0]}"
	[ "$(errno_of 1)" = EINVAL ] || fail "${lines[1]}"
	[ "$(errno_of 2)" = EINVAL ] || fail "${lines[2]}"
	[ "$(errno_of 3)" = EINVAL ] || fail "${lines[3]}"
	[ "$(errno_of 4)" = ENOENT ] || fail "${lines[4]}"
	[ "$(errno_of 5)" = EPROTONOSUPPORT ] || fail "${lines[5]}"
	[ "$(errno_of 6)" = EBADMSG ] || fail "${lines[6]}"
	[ "$(errno_of 7)" = EPROTO ] || fail "${lines[7]}"
	[ "$(errno_of 8)" = EBADMSG ] || fail "${lines[8]}"
	[ "$(errno_of 9)" = EBADF ] || fail "${lines[9]}"
	# oversized: dropped whole before parsing
	run "$SEND" "$S" - < <(printf '{"version":1,"op":"pool_open","args":{"name":"%s"}}' \
		"$(head -c 70000 /dev/zero | tr '\0' r)")
	[ "$(jq -r .error.errno <<<"$output")" = EMSGSIZE ] || fail "$output"
	# a good one: the grant (the descriptors are dropped by pmad-send),
	# and the pool comes back when the connection goes
	send "$(req pool_open '{"name":"raw"}')" "$(req pool_open '{"name":"raw"}')"
	[ "$(jq -c .result.grant <<<"${lines[0]}")" = \
		'{"regions":[0],"version":2,"scope":"regions","access":"rw","parts":1}' ] ||
		fail "${lines[0]}"
	[ "$(errno_of 1)" = EALREADY ] || fail "${lines[1]}"
	alive
	[ "$(pool_field raw state)" = open ]
	[ "$(pool_field raw client_recoveries)" = 1 ]
	run "$CLIENT" "$S" basic raw
	assert_success
	stop_pmad
}

@test "a pmad session with libpmad clients is valgrind-clean" {
	command -v valgrind >/dev/null || skip "valgrind not installed"
	if ldd "$(command -v pmad)" | grep -q libasan; then
		skip "pmad is built with ASan, which valgrind cannot run"
	fi
	start_pmad valgrind --quiet --error-exitcode=1 --leak-check=full \
		--log-file="$D/valgrind.log"
	run pmactl --socket "$S" pool create v --size 16M
	assert_success
	run pmactl --socket "$S" pool create w --size 16M
	assert_success
	run "$CLIENT" "$S" basic v
	assert_success
	run "$CLIENT" "$S" crash-loop w --rounds 3
	[ "$status" = 0 ] || fail "$output"
	send "$(req pool_open '{"name":"v"}')" "$(req pool_close '{"name":"v"}')" \
		"$(req pool_open '{"name":"nope"}')" "$(req pool_open '{"name":"w"}')"
	stop_pmad
	[ ! -s "$D/valgrind.log" ] || fail "$(cat "$D/valgrind.log")"
}

@test "the Quick start demo (tests/demo.sh) runs: pmad, a killed client, recovery" {
	PMAD_DEMO_DIR="$SD/demo" run "$PMAD_SRCDIR/tests/demo.sh" "$PMAD_BUILDDIR"
	[ "$status" = 0 ] || fail "$output"
	assert_output --partial "attached"
	assert_output --regexp "released by pid [0-9]+ \(its connection closed\); recovered in"
	assert_output --regexp "8 processes, 10 kills, [0-9]+ ops"
	assert_output --partial "none twice"
	assert_output --regexp "ok - count [0-9]+: every committed block is there \(0 bad slots\)"
	assert_output --partial "ok - no leak"
	refute_output --partial "not ok"
}
