#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# The HDPM file system and the bookkeeping logs through pmad (--socket):
# inspect --files, log --files, log and gc print the same text and JSON
# as offline (lib/view builds the documents on both sides); the errors
# (unknown pool, no file system, a path, bad arguments, a second uid);
# a valgrind-clean pmad serving these requests.

load pmad-helpers

setup() {
	pmad_setup
	FILL="$PMAD_BUILDDIR/tests/tools/hdpm-fill"
	[ -x "$FILL" ] || fail "no $FILL: build it with make check"
	CLIENT="$PMAD_BUILDDIR/tests/pmad/pmad-client"
	[ -x "$CLIENT" ] || fail "no $CLIENT: build it with make check"
	export PMEM2_FORCE_GRANULARITY=CACHE_LINE
	mkdir -p "$SD"
	HOLD_PID=""
}

teardown() {
	if [ -n "$HOLD_PID" ]; then
		kill -9 "$HOLD_PID" 2>/dev/null || true
		wait "$HOLD_PID" 2>/dev/null || true
	fi
	pmad_teardown
}

# fill NAME: a 16 MiB pool in pmad's state dir with hdpm-fill's file
# system (made offline: pmad picks it up at start)
fill() {
	run --separate-stderr pmactl create "$SD/$1.pool" --size 16M
	assert_success
	run --separate-stderr "$FILL" "$SD/$1.pool"
	assert_success
}

# gc_runs_ge N: pmad's gc service ran at least N rounds
gc_runs_ge() {
	[ "$(pmactl --socket "$S" --json stat | jq .daemon.service_gc_runs)" -ge "$1" ]
}

# views OUT WHERE...: every view of the file system and the logs, text
# and JSON (--human too), into OUT.*; WHERE is a path or --socket S NAME
views() {
	local out=$1
	shift
	local pool=${*: -1} opts=("${@:1:$#-1}")
	pmactl "${opts[@]}" inspect --files "$pool" >"$out.inspect.txt"
	pmactl "${opts[@]}" --json inspect --files "$pool" >"$out.inspect.json"
	pmactl "${opts[@]}" log --files "$pool" >"$out.logf.txt"
	pmactl "${opts[@]}" --json log --files "$pool" >"$out.logf.json"
	pmactl "${opts[@]}" --json --human log --files "$pool" >"$out.logfh.json"
	pmactl "${opts[@]}" log "$pool" >"$out.log.txt"
	pmactl "${opts[@]}" --json log "$pool" >"$out.log.json"
	pmactl "${opts[@]}" --json log --arena 0 "$pool" >"$out.log0.json"
}

@test "inspect --files, log --files, log: the same online and offline" {
	fill f
	views "$D/off" "$SD/f.pool"
	start_pmad
	views "$D/on" --socket "$S" f
	stop_pmad
	local v
	for v in inspect.txt logf.txt logf.json logfh.json log.txt log.json \
		log0.json; do
		diff -u "$D/off.$v" "$D/on.$v" || fail "$v differs"
	done
	# inspect: the file system is the same; pmad adds its pool keys
	diff -u <(jq -S .hdpm "$D/off.inspect.json") \
		<(jq -S .hdpm "$D/on.inspect.json") || fail "hdpm differs"
	[ "$(jq .hdpm.file_count "$D/on.inspect.json")" = 1 ]
	[ "$(jq -r .state "$D/on.inspect.json")" = open ]
	# what hdpm.bats checks offline, seen through pmad
	[ "$(jq .log_chunks "$D/on.logf.json")" = 2 ]
	[ "$(jq .live_bytes "$D/on.logf.json")" = 164 ]
	[ "$(jq -r .live_bytes "$D/on.logfh.json")" = "164 B" ]
	grep -q "^2 page logs in 1 file" "$D/on.logf.txt"
	grep -q "files (HDPM):" "$D/on.inspect.txt"
	grep -Eq '^  /f +3 +8 KiB +2 +2 ' "$D/on.inspect.txt"
	grep -Eq "^[0-9]+ records? not checkpointed" "$D/on.log.txt"
	[ "$(jq .heap_parts "$D/on.log.json")" = 1 ]
}

@test "log through pmad: the records pmad's heap holds, as offline sees them" {
	fill f
	start_pmad
	# pmad checkpoints at open: a gc through pmad makes records
	run --separate-stderr pmactl --socket "$S" gc f
	assert_success
	pmactl --socket "$S" log f >"$D/on.txt"
	pmactl --socket "$S" --json log f >"$D/on.json"
	pmactl --socket "$S" --json --human log --arena 0.0 f >"$D/on-h.json"
	# killed, so nothing is checkpointed: offline reads the same logs
	kill -9 "$PMAD_PID"
	wait "$PMAD_PID" || true
	PMAD_PID=""
	pmactl log "$SD/f.pool" >"$D/off.txt"
	pmactl --json log "$SD/f.pool" >"$D/off.json"
	pmactl --json --human log --arena 0.0 "$SD/f.pool" >"$D/off-h.json"
	diff -u "$D/off.txt" "$D/on.txt" || fail "text differs"
	diff -u "$D/off.json" "$D/on.json" || fail "JSON differs"
	diff -u "$D/off-h.json" "$D/on-h.json" || fail "--human differs"
	[ "$(jq .count "$D/on.json")" -gt 0 ] || fail "no records: $(cat "$D/on.json")"
	grep -Eq '^ +0 +[0-9]+ +alloc +0x' "$D/on.txt" || fail "$(cat "$D/on.txt")"
}

@test "gc through pmad: the report offline gc prints, and logs are gone" {
	fill a
	fill b
	fill c
	fill d
	run --separate-stderr pmactl --json gc "$SD/a.pool"
	assert_success
	local off_json=$output
	run --separate-stderr pmactl gc "$SD/c.pool"
	assert_success
	local off_txt=$output
	start_pmad
	run --separate-stderr pmactl --socket "$S" --json gc b
	assert_success
	[ "$output" = "$off_json" ] || fail "online $output offline $off_json"
	[ "$(jq .pages_merged <<<"$output")" = 2 ]
	[ "$(jq .log_bytes_after <<<"$output")" = 0 ]
	run --separate-stderr pmactl --socket "$S" gc d
	assert_success
	[ "$output" = "$off_txt" ] || fail "online $output offline $off_txt"
	assert_line "merged 2 page logs; log bytes 288 B -> 0 B"
	grep -q "pool 'b': gc for uid $(id -u) (pid [0-9]*): 2 page logs" \
		"$LOG" || fail "$(cat "$LOG")"
	# nothing left to merge, seen through pmad
	run --separate-stderr pmactl --socket "$S" --json log --files b
	assert_success
	[ "$(jq .log_chunks <<<"$output")" = 0 ]
	run --separate-stderr pmactl --socket "$S" --json --human gc b
	assert_success
	[ "$(jq -r .bytes_reclaimed <<<"$output")" = "0 B" ]
	[ "$(jq .pages_merged <<<"$output")" = 0 ]
	stop_pmad
	# the merge is on media: offline sees it too
	run --separate-stderr pmactl --json log --files "$SD/b.pool"
	assert_success
	[ "$(jq .log_chunks <<<"$output")" = 0 ]
	[ "$(jq .file_count <<<"$output")" = 1 ]
}

@test "through pmad: unknown pool, no file system, a path, bad arguments" {
	fill f
	start_pmad
	run --separate-stderr pmactl --socket "$S" create plain --size 8M
	assert_success
	local cmd
	for cmd in "inspect --files" "log --files" log gc; do
		# shellcheck disable=SC2086
		run --separate-stderr pmactl --socket "$S" $cmd nope
		assert_failure 1
		[[ "$stderr" == *"no pool 'nope' (ENOENT)" ]] || fail "$stderr"
		# shellcheck disable=SC2086
		run --separate-stderr pmactl --socket "$S" $cmd "$SD/f.pool"
		assert_failure 2
		[[ "$stderr" == *"is a path, but through pmad"* ]] || fail "$stderr"
	done
	# a heap without a file system: refused, and none is made
	for cmd in "log --files" gc "log --files"; do
		# shellcheck disable=SC2086
		run --separate-stderr pmactl --socket "$S" $cmd plain
		assert_failure 1
		[[ "$stderr" == *"pool 'plain' holds no HDPM file system (ENODATA)" ]] ||
			fail "$stderr"
	done
	run --separate-stderr pmactl --socket "$S" inspect --files plain
	assert_failure 1
	assert_output --partial "plain"
	# the bookkeeping log of such a heap is there
	run --separate-stderr pmactl --socket "$S" --json log plain
	assert_success
	[ "$(jq .heap_parts <<<"$output")" = 1 ]
	# arenas that do not exist, and bad arguments of raw requests
	run --separate-stderr pmactl --socket "$S" log --arena 999 f
	assert_failure 1
	[[ "$stderr" == *"arena 999 does not exist (the heap has "*"(ENOENT)" ]] ||
		fail "$stderr"
	run --separate-stderr pmactl --socket "$S" log --arena 3.0 f
	assert_failure 1
	[[ "$stderr" == *"part 3 holds no heap (the heap has 1 part)"* ]] ||
		fail "$stderr"
	run "$SEND" "$S" "$(req pool_log '{"name":"f","arena":-1}')" \
		"$(req pool_log '{"name":"f","arena":"0"}')" \
		"$(req pool_log '{"name":"f","part":0}')" \
		"$(req pool_files '{"name":"f","pages":true}')" \
		"$(req gc '{}')"
	[ "${#lines[@]}" = 5 ] || fail "$output"
	[ "$(jq -r .error.errno <<<"${lines[0]}")" = EINVAL ]
	[ "$(jq -r .error.errno <<<"${lines[1]}")" = EINVAL ]
	[ "$(jq -r .error.message <<<"${lines[2]}")" = '"part" needs "arena"' ]
	[ "$(jq '.result.files[0].page_logs | length' <<<"${lines[3]}")" = 2 ]
	[ "$(jq -r .error.errno <<<"${lines[4]}")" = EINVAL ]
	alive
	stop_pmad
	# pmad made no file system in plain
	run --separate-stderr pmactl gc "$SD/plain.pool"
	assert_failure 1
	[[ "$stderr" == *"no HDPM file system in '$SD/plain.pool'"* ]] ||
		fail "$stderr"
}

@test "through pmad: a pool a libpmad client holds answers EBUSY" {
	fill f
	start_pmad
	mkfifo "$D/in"
	"$CLIENT" "$S" hold f <"$D/in" >"$D/hold.out" &
	HOLD_PID=$!
	exec 8>"$D/in"
	wait_for grep -q held "$D/hold.out"
	local cmd
	for cmd in "inspect --files" "log --files" log gc; do
		# shellcheck disable=SC2086
		run --separate-stderr pmactl --socket "$S" $cmd f
		assert_failure 1
		[[ "$stderr" == *"pool 'f' is attached by pid $HOLD_PID"*"(EBUSY)" ]] ||
			fail "$cmd: $stderr"
	done
	exec 8>&-
	wait "$HOLD_PID"
	HOLD_PID=""
	# given back: the file system is there again, unchanged
	run --separate-stderr pmactl --socket "$S" --json log --files f
	assert_success
	[ "$(jq .log_chunks <<<"$output")" = 2 ]
	stop_pmad
}

@test "through pmad: another uid may read a 0664 pool's files, not gc it" {
	command -v setpriv >/dev/null || skip "setpriv not installed"
	[ "$(id -u)" = 0 ] || skip "needs root to switch to a second uid"
	fill f
	fill g
	chmod 0664 "$SD/f.pool"
	chmod 0660 "$SD/g.pool"
	start_pmad
	local as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	local pmactl
	pmactl=$(command -v pmactl)
	run --separate-stderr "${as_nobody[@]}" "$pmactl" --socket "$S" \
		--json log --files f
	assert_success
	[ "$(jq .log_chunks <<<"$output")" = 2 ]
	run --separate-stderr "${as_nobody[@]}" "$pmactl" --socket "$S" gc f
	assert_failure 1
	[[ "$stderr" == *"pool 'f': permission denied for uid 65534"*"(EACCES)" ]] ||
		fail "$stderr"
	local cmd
	for cmd in "inspect --files" "log --files" log gc; do
		# shellcheck disable=SC2086
		run --separate-stderr "${as_nobody[@]}" "$pmactl" --socket "$S" \
			$cmd g
		assert_failure 1
		[[ "$stderr" == *"(EACCES)" ]] || fail "$cmd: $stderr"
	done
	grep -q "uid 65534 (pid [0-9]*): gc denied: pool 'f'" "$LOG" ||
		fail "no log line: $(cat "$LOG")"
	grep -q "uid 65534 (pid [0-9]*): pool_log denied: pool 'g'" "$LOG" ||
		fail "no log line: $(cat "$LOG")"
	# nothing was merged
	run --separate-stderr pmactl --socket "$S" --json log --files f
	[ "$(jq .log_chunks <<<"$output")" = 2 ]
	stop_pmad
}

@test "pmad serving files, log and gc requests is valgrind-clean" {
	command -v valgrind >/dev/null || skip "valgrind not installed"
	if ldd "$(command -v pmad)" | grep -q libasan; then
		skip "pmad is built with ASan, which valgrind cannot run"
	fi
	fill f
	fill g
	start_pmad valgrind --quiet --error-exitcode=1 --leak-check=full \
		--log-file="$D/valgrind.log"
	run pmactl --socket "$S" create plain --size 8M
	assert_success
	run pmactl --socket "$S" inspect --files --heap f
	assert_success
	run pmactl --socket "$S" --json --human log --files f
	assert_success
	run pmactl --socket "$S" log --arena 0 f
	assert_success
	run pmactl --socket "$S" log --arena 99 f
	assert_failure 1
	run pmactl --socket "$S" gc g
	assert_success
	run pmactl --socket "$S" --json gc g
	assert_success
	run pmactl --socket "$S" gc plain
	assert_failure 1
	run pmactl --socket "$S" inspect --files plain
	assert_failure 1
	run "$SEND" "$S" "$(req pool_log '{"name":"f","arena":"x"}')" \
		"$(req pool_files '{"name":"nope"}')"
	stop_pmad
	[ ! -s "$D/valgrind.log" ] || fail "$(cat "$D/valgrind.log")"
}

@test "the gc service merges the page logs of pools below gc_free_pct" {
	fill f
	fill busy
	cat >>"$CONF" <<-EOF
	services:
	  gc_free_pct: 100
	  gc_interval: 1
	EOF
	start_pmad
	run pmactl --socket "$S" create plain --size 8M
	assert_success
	# every heap has less than 100 % free: f and busy get a pass
	wait_for grep -q "pool 'f': background gc" "$LOG"
	wait_for grep -q "pool 'busy': background gc" "$LOG"
	grep -q "pool 'f': background gc ([0-9]* of [0-9]* bytes free): 2 page logs merged" \
		"$LOG" || fail "$(cat "$LOG")"
	run --separate-stderr pmactl --socket "$S" --json log --files f
	assert_success
	[ "$(jq .log_chunks <<<"$output")" = 0 ]
	# one pass each: once merged, a file system without logs is left
	# alone (a plain heap too: no file system is made)
	local runs
	runs=$(pmactl --socket "$S" --json stat | jq .daemon.service_gc_runs)
	wait_for gc_runs_ge $((runs + 2))
	run --separate-stderr pmactl --socket "$S" --json stat
	assert_success
	local doc=$output
	[ "$(jq .daemon.gc_free_pct <<<"$doc")" = 100 ]
	[ "$(jq .daemon.gc_interval <<<"$doc")" = 1 ]
	[ "$(jq .daemon.service_gcs <<<"$doc")" = 2 ]
	[ "$(jq .daemon.service_gc_pages_merged <<<"$doc")" = 4 ]
	[ "$(jq '.pools[] | select(.name == "f") | .services.gc_runs' <<<"$doc")" = 1 ]
	[ "$(jq '.pools[] | select(.name == "f") | .services.gc_pages_merged' <<<"$doc")" = 2 ]
	jq -e '.pools[] | select(.name == "f") | .services.last_gc > 0' <<<"$doc"
	[ "$(jq '.pools[] | select(.name == "plain") | .services.gc_runs' <<<"$doc")" = 0 ]
	[ "$(jq '.pools[] | select(.name == "plain") | .services | has("last_gc")' <<<"$doc")" = false ]
	run --separate-stderr pmactl --socket "$S" stat
	assert_success
	assert_line --regexp '^services: HDPM gc below 100% free, every 1 s; [0-9]+ runs, 2 passes, 4 page logs merged$'
	assert_line --regexp '^f +open +16 MiB .* +1/2 +0/0$'
	assert_line --regexp '^plain +open +8 MiB .* +- +0/0 +0/0$'
	run --separate-stderr pmactl --socket "$S" stat --prometheus
	assert_success
	assert_line 'pmad_gc_free_percent 100'
	assert_line 'pmad_service_gc_passes_total 2'
	assert_line 'pmad_pool_gc_runs_total{pool="f"} 1'
	assert_line 'pmad_pool_gc_pages_merged_total{pool="f"} 2'
	assert_line 'pmad_pool_gc_runs_total{pool="plain"} 0'
	assert_line --regexp '^pmad_pool_last_gc_timestamp_seconds\{pool="f"\} [0-9]+$'
	refute_line --partial 'pmad_pool_last_gc_timestamp_seconds{pool="plain"}'
	# a gc request counts on the pool too
	run --separate-stderr pmactl --socket "$S" --json gc f
	assert_success
	run --separate-stderr pmactl --socket "$S" --json stat f
	[ "$(jq '.pools[0].services.gc_runs' <<<"$output")" = 2 ]
	stop_pmad
	# offline: no file system was made in plain, f keeps its file
	run --separate-stderr pmactl gc "$SD/plain.pool"
	assert_failure 1
	run --separate-stderr pmactl --json inspect --files "$SD/f.pool"
	assert_success
	[ "$(jq .hdpm.file_count <<<"$output")" = 1 ]
}

@test "the gc service leaves pools with enough free space; off by default" {
	fill f
	cat >>"$CONF" <<-EOF
	services:
	  gc_free_pct: 1
	  gc_interval: 1
	EOF
	start_pmad
	wait_for gc_runs_ge 2
	run --separate-stderr pmactl --socket "$S" --json log --files f
	[ "$(jq .log_chunks <<<"$output")" = 2 ]
	run --separate-stderr pmactl --socket "$S" --json stat
	[ "$(jq .daemon.service_gcs <<<"$output")" = 0 ]
	stop_pmad
	# without the key: off
	printf 'log_level: info\n' >"$CONF"
	start_pmad
	run --separate-stderr pmactl --socket "$S" --json stat
	[ "$(jq .daemon.gc_free_pct <<<"$output")" = 0 ]
	[ "$(jq .daemon.gc_interval <<<"$output")" = 10 ]
	run --separate-stderr pmactl --socket "$S" stat
	assert_line 'services: background HDPM gc off'
	stop_pmad
}

@test "gc_free_pct and gc_interval: a bad value names file, line, column" {
	printf 'services:\n  gc_free_pct: 150\n' >"$D/bad.yaml"
	run --separate-stderr pmad --check-config --config "$D/bad.yaml"
	assert_failure
	[[ "$stderr" == *"$D/bad.yaml:2:16: gc_free_pct '150' is not an integer 0..100"* ]] ||
		fail "$stderr"
	printf 'services:\n  gc_free_pct: 20\n  gc_interval: 0\n' >"$D/bad.yaml"
	run --separate-stderr pmad --check-config --config "$D/bad.yaml"
	assert_failure
	[[ "$stderr" == *"$D/bad.yaml:3:16: gc_interval must be at least 1 second"* ]] ||
		fail "$stderr"
	printf 'services:\n  gc_free_pct: 20\n  gc_interval: 5\n' >"$D/good.yaml"
	run --separate-stderr pmad --check-config --config "$D/good.yaml"
	assert_success
}
