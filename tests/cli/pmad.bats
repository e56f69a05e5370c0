#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmad: the daemon in the foreground on a temporary socket and state dir,
# driven by pmactl and by a raw client (tests/lib/pmad-send): every request
# and its errors, malformed packets (pmad stays up), permission denial for
# a second uid, SIGHUP reload, shutdown, restart, the systemd units, and a
# valgrind-clean session.

load helpers

setup() {
	common_setup
	SEND="${PMAD_BUILDDIR:?set PMAD_BUILDDIR}/tests/lib/pmad-send"
	[ -x "$SEND" ] || fail "no $SEND: build it with make check"
	command -v pmad >/dev/null || fail "pmad not on PATH"
	# world-traversable, so a second uid can reach the socket
	D=$(mktemp -d /tmp/pmad-bats.XXXXXX)
	chmod 755 "$D"
	S="$D/pmad.sock"
	SD="$D/state"
	LOG="$D/pmad.log"
	CONF="$D/pmad.yaml"
	PMAD_PID=""
	write_config
}

teardown() {
	if [ -n "$PMAD_PID" ] && kill -0 "$PMAD_PID" 2>/dev/null; then
		kill "$PMAD_PID"
		wait "$PMAD_PID" || true
	fi
	if [ -n "${D:-}" ]; then
		rm -rf -- "$D"
	fi
}

# the configuration of most tests: one pool "cfg", root's, mode 0600
write_config() {
	cat >"$CONF" <<-EOF
	socket:
	  mode: 0666
	log_level: info
	pools:
	  - name: cfg
	    size: 4M
	    owner: root
	    mode: 0600
	EOF
}

# wait (at most 20 s) until cmd succeeds
wait_for() {
	local i
	for ((i = 0; i < 200; i++)); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	fail "timed out waiting for: $*"
}

req() {
	printf '{"version":1,"op":"%s","args":%s}' "$1" "${2:-{\}}"
}

alive() {
	"$SEND" "$S" "$(req stats)"
}

# start_pmad [WRAPPER...]: pmad in the background, wait until it serves
start_pmad() {
	"$@" pmad --foreground --config "$CONF" --socket "$S" \
		--state-dir "$SD" 2>"$LOG" &
	PMAD_PID=$!
	wait_for alive
}

# stop_pmad: shutdown request, then the exit status must be 0
stop_pmad() {
	run "$SEND" "$S" "$(req shutdown)"
	assert_success
	assert_output '{"version":1,"result":{}}'
	wait "$PMAD_PID"
	PMAD_PID=""
	[ ! -e "$S" ] || fail "socket $S left behind"
}

# send PAYLOAD: one request; $output is the reply
send() {
	run "$SEND" "$S" "$@"
	assert_success
}

# expect_errno NAME PAYLOAD: the reply is an error with errno NAME
expect_errno() {
	local name=$1
	shift
	send "$@"
	[ "$(jq -r .error.errno <<<"$output")" = "$name" ] ||
		fail "expected $name, got: $output"
	[ -n "$(jq -r .error.message <<<"$output")" ] || fail "no message"
}

@test "pmad --help, --version and a bad option" {
	run pmad --help
	assert_success
	assert_line --partial "usage: pmad [--config FILE]"
	assert_output --partial "--check-config"
	run pmad --version
	assert_success
	assert_output --regexp '^pmad \(pmad\) [0-9.]+$'
	run --separate-stderr pmad --bogus
	assert_failure 2
	[[ "$stderr" == *"try 'pmad --help'"* ]] || fail "$stderr"
	run --separate-stderr pmad extra
	assert_failure 2
}

@test "pmad escapes bad options and arguments in its messages" {
	run --separate-stderr pmad $'--bo\ngus\e[31m'
	assert_failure 2
	[[ "$stderr" == *"'--bo\\ngus\\x1b[31m'"* ]] || fail "$stderr"
	[[ "$stderr" != *$'\e'* ]] || fail "raw escape: $stderr"
	run --separate-stderr pmad -q
	assert_failure 2
	[[ "$stderr" == *"invalid option '-q'"* ]] || fail "$stderr"
	run --separate-stderr pmad --config
	assert_failure 2
	[[ "$stderr" == *"requires an argument"* ]] || fail "$stderr"
	run --separate-stderr pmad $'x\ny'
	assert_failure 2
	[[ "$stderr" == *"unexpected argument 'x\\ny'"* ]] || fail "$stderr"
}

@test "--check-config accepts a good file and names line and column of a bad one" {
	run pmad --check-config --config "$CONF"
	assert_success
	assert_output "$CONF: ok (1 pool)"
	printf 'pools:\n  - name: x\n    size: 1M\n    mode: 0999\n' >"$CONF"
	run --separate-stderr pmad --check-config --config "$CONF"
	assert_failure 1
	[ "$stderr" = "pmad: $CONF:4:11: mode '0999' is not an octal mode 0..0777 (e.g. 0660)" ] ||
		fail "$stderr"
	printf 'pools:\n  - name: x\n   size: 1M\n' >"$CONF"
	run --separate-stderr pmad --check-config --config "$CONF"
	assert_failure 1
	[[ "$stderr" == "pmad: $CONF:3:4: did not find expected '-' indicator"* ]] ||
		fail "$stderr"
	run --separate-stderr pmad --check-config --config "$D/missing.yaml"
	assert_failure 1
	[[ "$stderr" == *"missing.yaml: No such file or directory"* ]] ||
		fail "$stderr"
}

@test "the configured pool is created, owned as configured and open" {
	start_pmad
	run pmactl --socket "$S" --json pool list
	assert_success
	[ "$(jq -r '.pools | length' <<<"$output")" = 1 ]
	[ "$(jq -r '.pools[0].name' <<<"$output")" = cfg ]
	[ "$(jq -r '.pools[0].state' <<<"$output")" = open ]
	[ "$(jq -r '.pools[0].mode' <<<"$output")" = 0600 ]
	[ "$(jq -r '.pools[0].source' <<<"$output")" = config ]
	[ "$(jq -r '.pools[0].size' <<<"$output")" = 4194304 ]
	[ "$(stat -c %a "$SD/cfg.pool")" = 600 ]
	grep -q "serving 1 pool on $S" "$LOG" || fail "$(cat "$LOG")"
	run pmactl --socket "$S" pool list
	assert_success
	assert_line --regexp '^NAME +SIZE +OWNER +GROUP +MODE +STATE +CLIENTS +PATH$'
	assert_line --regexp "^cfg +4 MiB +root +root +0600 +open +0 +$SD/cfg.pool\$"
	stop_pmad
}

@test "pmactl pool create, stat, inspect and compact through pmad" {
	start_pmad
	run --separate-stderr pmactl --socket "$S" pool create db --size 8M \
		--mode 0640
	assert_success
	assert_line --regexp '^name: +db$'
	assert_line --regexp '^mode: +0640$'
	assert_line --regexp '^heap size: +[0-9.]+ MiB$'
	run pmactl --socket "$S" --json pool stat db
	assert_success
	[ "$(jq -r .size <<<"$output")" = 8388608 ]
	[ "$(jq -r .heap.used <<<"$output")" = 0 ]
	[ "$(jq -r '.heap.size > 0' <<<"$output")" = true ]
	run pmactl --socket "$S" --json pool inspect db
	assert_success
	[[ "$(jq -r .uuid <<<"$output")" =~ ^[0-9a-f-]{36}$ ]]
	[ "$(jq -r '.regions[0].type' <<<"$output")" = pmalloc ]
	[ "$(jq -r '.parts[0].path' <<<"$output")" = "$SD/db.pool" ]
	[ "$(jq -r '.heap.classes | type' <<<"$output")" = array ]
	run pmactl --socket "$S" pool inspect db
	assert_success
	assert_line --regexp '^uuid: +[0-9a-f-]{36}$'
	run pmactl --socket "$S" --json pool compact db
	assert_success
	[ "$(jq -r .heap.log_records <<<"$output")" = 0 ]
	# PMAD_SOCKET is the default socket
	PMAD_SOCKET="$S" run pmactl --json pool list
	assert_success
	[ "$(jq -r '.pools | length' <<<"$output")" = 2 ]
	stop_pmad
}

@test "pmactl pool errors: exists, no such pool, bad arguments" {
	start_pmad
	run --separate-stderr pmactl --socket "$S" pool create cfg --size 1M
	assert_failure 1
	[ "$stderr" = "pmactl: pool create cfg: pool 'cfg' already exists (EEXIST)" ] ||
		fail "$stderr"
	run --separate-stderr pmactl --socket "$S" pool stat nope
	assert_failure 1
	[ "$stderr" = "pmactl: pool stat nope: no pool 'nope' (ENOENT)" ] ||
		fail "$stderr"
	run --separate-stderr pmactl --socket "$S" pool create bad/name --size 1M
	assert_failure 1
	[[ "$stderr" == *"invalid pool name"*"(EINVAL)" ]] || fail "$stderr"
	run --separate-stderr pmactl --socket "$S" pool create x
	assert_failure 2
	[[ "$stderr" == *"missing --size"* ]] || fail "$stderr"
	run --separate-stderr pmactl --socket "$S" pool frob
	assert_failure 2
	[[ "$stderr" == *"unknown subcommand 'frob'"* ]] || fail "$stderr"
	run --separate-stderr pmactl --socket "$D/none.sock" pool list
	assert_failure 1
	[[ "$stderr" == *"cannot reach pmad: cannot connect to '$D/none.sock'"* ]] ||
		fail "$stderr"
	run pmactl pool --help
	assert_success
	assert_line --partial "usage: pmactl [--socket PATH] pool list"
	stop_pmad
}

@test "malformed, truncated, oversized and unknown packets get errors; pmad stays up" {
	start_pmad
	expect_errno EBADMSG 'hello'
	expect_errno EBADMSG '{"version":1,"op":"stats"'
	expect_errno EBADMSG '{"version":1,"op":"stats"} {}'
	expect_errno EPROTO '{"op":"stats"}'
	expect_errno EPROTONOSUPPORT '{"version":2,"op":"stats"}'
	expect_errno EPROTO '{"version":1,"op":42}'
	expect_errno EPROTO '{"version":1,"op":"stats","args":[]}'
	expect_errno ENOSYS "$(req frobnicate)"
	expect_errno EINVAL "$(req pool_stat '{"name":7}')"
	expect_errno EINVAL "$(req pool_create '{"name":"a","size":"huge"}')"
	expect_errno EINVAL "$(req pool_create '{"name":"a","size":1048576,"mode":"rw"}')"
	run "$SEND" "$S" - < <(head -c 70000 /dev/zero)
	assert_success
	[ "$(jq -r .error.errno <<<"$output")" = EMSGSIZE ] || fail "$output"
	run "$SEND" "$S" - < <(head -c 300 /dev/urandom)
	assert_success
	[ "$(jq -r .error.errno <<<"$output")" = EBADMSG ] || fail "$output"
	# several bad packets on one connection, then a good one
	send 'x' '{}' "$(req stats)"
	[ "${#lines[@]}" = 3 ]
	[ "$(jq -r .result.pid <<<"${lines[2]}")" = "$PMAD_PID" ]
	[ "$(jq -r '.result.errors >= 13' <<<"${lines[2]}")" = true ]
	stop_pmad
}

@test "lease wants the pool open on the connection; release replies ENOTSUP" {
	start_pmad
	expect_errno EBADF "$(req lease '{"name":"cfg"}')"
	[[ "$output" == *"pool 'cfg' is not open on this connection: pool_open leases the first regions"* ]] ||
		fail "$output"
	expect_errno ENOENT "$(req lease '{"name":"nope"}')"
	expect_errno EOPNOTSUPP "$(req release '{"name":"cfg"}')"
	[[ "$output" == *"'release' of single regions is not supported"* ]] || fail "$output"
	stop_pmad
}

@test "pool_open grants a connection regions of the pool; pool_close gives them back" {
	start_pmad
	send "$(req pool_open '{"name":"cfg"}')" \
		"$(req pool_stat '{"name":"cfg"}')" \
		"$(req pool_open '{"name":"cfg"}')" \
		"$(req pool_close '{"name":"cfg"}')" \
		"$(req pool_close '{"name":"cfg"}')" \
		"$(req pool_stat '{"name":"cfg"}')"
	[ "$(jq -r .result.clients <<<"${lines[0]}")" = 1 ]
	[ "$(jq -r .result.state <<<"${lines[0]}")" = attached ]
	[ "$(jq -r .result.grant.scope <<<"${lines[0]}")" = regions ]
	[ "$(jq -c .result.grant.regions <<<"${lines[0]}")" = "[0]" ]
	# pmad stays away from a shared heap
	[ "$(jq -r .error.errno <<<"${lines[1]}")" = EBUSY ]
	[ "$(jq -r .error.errno <<<"${lines[2]}")" = EALREADY ]
	[ "$(jq -r .result.clients <<<"${lines[3]}")" = 0 ]
	[ "$(jq -r .result.state <<<"${lines[3]}")" = open ]
	[ "$(jq -r .error.errno <<<"${lines[4]}")" = EBADF ]
	[ "$(jq -r .result.state <<<"${lines[5]}")" = open ]
	# a connection that goes away gives its pool back (recovered)
	send "$(req pool_open '{"name":"cfg"}')"
	send "$(req pool_stat '{"name":"cfg"}')"
	[ "$(jq -r .result.clients <<<"$output")" = 0 ]
	[ "$(jq -r .result.client_recoveries <<<"$output")" = 1 ]
	stop_pmad
}

@test "pmad holds the pool: offline tools name it and do not wait" {
	start_pmad
	run --separate-stderr pmactl inspect --heap "$SD/cfg.pool"
	assert_failure 1
	[[ "$stderr" == *"cfg.pool"* ]] || fail "$stderr"
	# the holder is named (from /proc/locks), and the way around it
	[[ "$stderr" == *"pool is held by pmad (pid $PMAD_PID); use --socket" ]] ||
		fail "$stderr"
	# every offline command that opens the pool says the same
	run --separate-stderr pmactl log "$SD/cfg.pool"
	assert_failure
	[[ "$stderr" == *"held by pmad (pid $PMAD_PID); use --socket"* ]] ||
		fail "$stderr"
	run --separate-stderr pmactl fsck "$SD/cfg.pool"
	assert_failure
	[[ "$stderr" == *"held by pmad (pid $PMAD_PID); use --socket"* ]] ||
		fail "$stderr"
	stop_pmad
	run pmactl inspect "$SD/cfg.pool"
	assert_success
}

@test "another uid is denied a 0600 pool (EACCES, logged) and shutdown (EPERM)" {
	command -v setpriv >/dev/null || skip "setpriv not installed"
	[ "$(id -u)" = 0 ] || skip "needs root to switch to a second uid"
	start_pmad
	local as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	run --separate-stderr "${as_nobody[@]}" "$(command -v pmactl)" \
		--socket "$S" pool stat cfg
	assert_failure 1
	[[ "$stderr" == *"pool 'cfg': permission denied for uid 65534"*"(EACCES)" ]] ||
		fail "$stderr"
	grep -q "uid 65534 (pid [0-9]*): pool_stat denied: pool 'cfg'" "$LOG" ||
		fail "no log line: $(cat "$LOG")"
	run "${as_nobody[@]}" "$SEND" "$S" "$(req pool_open '{"name":"cfg"}')"
	[ "$(jq -r .error.errno <<<"$output")" = EACCES ] || fail "$output"
	# a pool nobody creates is nobody's; root may still look at it
	run "${as_nobody[@]}" "$(command -v pmactl)" --socket "$S" --json \
		pool create mine --size 2M
	assert_success
	[ "$(jq -r .owner <<<"$output")" = 65534 ]
	[ "$(jq -r .mode <<<"$output")" = 0600 ]
	run pmactl --socket "$S" --json pool stat mine
	assert_success
	run "${as_nobody[@]}" "$SEND" "$S" "$(req shutdown)"
	[ "$(jq -r .error.errno <<<"$output")" = EPERM ] || fail "$output"
	send "$(req stats)"
	[ "$(jq -r .result.denied <<<"$output")" = 3 ]
	stop_pmad
}

@test "a pool's group bits apply to the client's supplementary groups" {
	command -v setpriv >/dev/null || skip "setpriv not installed"
	[ "$(id -u)" = 0 ] || skip "needs root to switch to a second uid"
	start_pmad
	run pmactl --socket "$S" pool create grp --size 2M
	assert_success
	# root's pool, group 4242 may read and write it, others nothing
	chgrp 4242 "$SD/grp.pool"
	chmod 0660 "$SD/grp.pool"
	local pmactl
	pmactl=$(command -v pmactl)
	# 4242 only as a supplementary group (primary 65534): allowed
	run --separate-stderr setpriv --reuid=65534 --regid=65534 \
		--groups=100,4242 "$pmactl" --socket "$S" --json pool stat grp
	assert_success
	[ "$(jq -r .name <<<"$output")" = grp ]
	run --separate-stderr setpriv --reuid=65534 --regid=65534 \
		--groups=4242 "$pmactl" --socket "$S" --json stat
	assert_success
	[ "$(jq '[.pools[] | select(.name == "grp")] | length' <<<"$output")" = 1 ]
	# as the primary group: allowed as before
	run --separate-stderr setpriv --reuid=65534 --regid=4242 \
		--clear-groups "$pmactl" --socket "$S" --json pool stat grp
	assert_success
	# neither: denied, and the message names the client's uid and gid
	run --separate-stderr setpriv --reuid=65534 --regid=65534 \
		--groups=100 "$pmactl" --socket "$S" pool stat grp
	assert_failure 1
	[[ "$stderr" == *"pool 'grp': permission denied for uid 65534 gid 65534"*"(EACCES)" ]] ||
		fail "$stderr"
	# the group bits decide, not the other bits: 0606 denies the group
	chmod 0606 "$SD/grp.pool"
	run --separate-stderr setpriv --reuid=65534 --regid=65534 \
		--groups=4242 "$pmactl" --socket "$S" pool stat grp
	assert_failure 1
	[[ "$stderr" == *"(EACCES)" ]] || fail "$stderr"
	stop_pmad
}

@test "SIGHUP reloads; a bad new config keeps the old one and says why" {
	start_pmad
	cat >>"$CONF" <<-EOF
	  - name: added
	    size: 2M
	    mode: 0644
	EOF
	kill -HUP "$PMAD_PID"
	wait_for grep -q "configuration reloaded from $CONF (2 pools" "$LOG"
	run pmactl --socket "$S" --json pool stat added
	assert_success
	[ "$(jq -r .state <<<"$output")" = open ]
	[ "$(jq -r .mode <<<"$output")" = 0644 ]
	printf 'pools:\n  - name: x\n    size: lots\n' >"$CONF"
	kill -HUP "$PMAD_PID"
	wait_for grep -q "reload failed" "$LOG"
	grep -q "reload failed, keeping the current configuration: $CONF:3:11: size 'lots' is not a size" "$LOG" ||
		fail "$(cat "$LOG")"
	send "$(req stats)"
	[ "$(jq -r .result.reloads <<<"$output")" = 1 ]
	[ "$(jq -r .result.reload_failures <<<"$output")" = 1 ]
	[ "$(jq -r .result.pools <<<"$output")" = 2 ]
	stop_pmad
}

@test "shutdown, SIGTERM, restart finds created pools, one pmad per socket" {
	start_pmad
	run pmactl --socket "$S" pool create kept --size 2M
	assert_success
	# a second pmad on the same socket refuses to start
	run --separate-stderr pmad --foreground --config "$CONF" --socket "$S" \
		--state-dir "$D/other"
	assert_failure 1
	[[ "$stderr" == *"another pmad is serving $S"* ]] || fail "$stderr"
	stop_pmad
	start_pmad
	run pmactl --socket "$S" --json pool stat kept
	assert_success
	[ "$(jq -r .source <<<"$output")" = state_dir ]
	[ "$(jq -r .state <<<"$output")" = open ]
	kill -TERM "$PMAD_PID"
	wait "$PMAD_PID"
	PMAD_PID=""
	grep -q "Terminated received, stopping" "$LOG" || fail "$(cat "$LOG")"
}

@test "the embedded default serves without any config" {
	pmad --foreground --socket "$S" --state-dir "$SD" 2>"$LOG" &
	PMAD_PID=$!
	wait_for alive
	send "$(req stats)"
	[ "$(jq -r .result.config <<<"$output")" = "(embedded)" ] ||
		[ "$(jq -r .result.config <<<"$output")" = /etc/pmad/pmad.yaml ]
	[ "$(jq -r .result.state_dir <<<"$output")" = "$SD" ]
	stop_pmad
}

@test "pmad.service and pmad.socket pass systemd-analyze verify" {
	command -v systemd-analyze >/dev/null ||
		skip "systemd-analyze not installed"
	local units="$PMAD_SRCDIR/daemon" dir="$D/units"
	mkdir -p "$dir"
	# the unit names pmad by its installed path: point it at this build
	sed "s|@sbindir@|$PMAD_BUILDDIR/daemon|g" "$units/pmad.service.in" \
		>"$dir/pmad.service"
	cp "$units/pmad.socket" "$dir/pmad.socket"
	run systemd-analyze verify --man=no "$dir/pmad.service" \
		"$dir/pmad.socket"
	[ "$status" = 0 ] || fail "$output"
}

@test "a pmad session is valgrind-clean" {
	command -v valgrind >/dev/null || skip "valgrind not installed"
	if ldd "$(command -v pmad)" | grep -q libasan; then
		skip "pmad is built with ASan, which valgrind cannot run"
	fi
	# namespaces and a pool with parts on them (pools.c, ns.c, parts.c)
	mkdir "$D/ns0" "$D/ns1"
	cat >>"$CONF" <<-EOF
	  - {name: wide, size: 4M, parts: all-nodes}
	  - {name: lost, size: 4M, parts: [7]}
	namespaces:
	  - {node: 0, path: $D/ns0}
	  - {node: 1, path: $D/ns1}
	EOF
	PMAD_FAKE_NUMA=2 start_pmad valgrind --quiet --error-exitcode=1 \
		--leak-check=full --log-file="$D/valgrind.log"
	run pmactl --socket "$S" pool create v --size 2M
	assert_success
	send "$(req pool_list)" "$(req pool_inspect '{"name":"v"}')" \
		"$(req pool_open '{"name":"v"}')" 'garbage' "$(req lease)" \
		"$(req stat)" "$(req stat '{"name":"wide","human":true}')" \
		"$(req stat '{"name":"nope"}')" "$(req pool_compact '{"name":"v"}')" \
		"$(req pool_inspect '{"name":"wide","human":true}')"
	[ "$(jq -r .result.pools[0].nparts <<<"${lines[6]}")" = 2 ] ||
		fail "${lines[6]}"
	# the pmactl side of the seam, with pmad under valgrind
	run pmactl --socket "$S" create v2 --size 2M
	assert_success
	run pmactl --socket "$S" stat --prometheus
	assert_success
	run pmactl --socket "$S" inspect --heap wide
	assert_success
	run pmactl --socket "$S" morph --dry-run --class 192 v2
	assert_success
	run pmactl --socket "$S" --json morph v2
	assert_success
	run pmactl --socket "$S" morph --class 100 v2
	assert_failure 1
	run "$SEND" "$S" - < <(head -c 70000 /dev/zero)
	kill -HUP "$PMAD_PID"
	wait_for grep -q "configuration reloaded" "$LOG"
	stop_pmad
	[ ! -s "$D/valgrind.log" ] || fail "$(cat "$D/valgrind.log")"
}

@test "READY=1 reaches the notification socket after the pools are open" {
	"$SEND" --notify "$D/notify" >"$D/notify.out" &
	local rx=$!
	wait_for test -S "$D/notify"
	NOTIFY_SOCKET="$D/notify" start_pmad
	wait "$rx" || fail "no READY=1: $(cat "$D/notify.out")"
	grep -qx "READY=1" "$D/notify.out" || fail "$(cat "$D/notify.out")"
	grep -qx "STATUS=serving 1 pools" "$D/notify.out" ||
		fail "$(cat "$D/notify.out")"
	stop_pmad
}

@test "socket activation: pmad adopts the listening socket it is given" {
	command -v systemd-socket-activate >/dev/null ||
		skip "systemd-socket-activate not installed"
	systemd-socket-activate --seqpacket -l "$S" \
		pmad --foreground --config "$CONF" --state-dir "$SD" \
		2>"$LOG" &
	PMAD_PID=$!
	wait_for alive
	grep -q "adopted the listening socket from systemd" "$LOG" ||
		fail "$(cat "$LOG")"
	run pmactl --socket "$S" --json pool list
	assert_success
	[ "$(jq -r '.pools[0].name' <<<"$output")" = cfg ]
	send "$(req shutdown)"
	wait "$PMAD_PID"
	PMAD_PID=""
}

@test "services.checkpoint_interval runs the checkpoint service; reload turns it off" {
	cat >>"$CONF" <<-EOF
	services:
	  checkpoint_interval: 1
	EOF
	start_pmad
	wait_for eval '"$SEND" "$S" "$(req stats)" | jq -e ".result.service_runs >= 1"'
	send "$(req stats)"
	[ "$(jq -r .result.checkpoint_interval <<<"$output")" = 1 ]
	# nothing was allocated, so there was nothing to checkpoint
	[ "$(jq -r .result.service_checkpoints <<<"$output")" = 0 ]
	write_config
	kill -HUP "$PMAD_PID"
	wait_for grep -q "configuration reloaded" "$LOG"
	send "$(req stats)"
	[ "$(jq -r .result.checkpoint_interval <<<"$output")" = 0 ] ||
		fail "the service is still armed: $output"
	stop_pmad
}
