#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The kill -9 tests of tests/cli/libpmad.bats at full size, for reports:
# CLIENT_ROUNDS clients killed at random points (default 100), then
# PMAD_ROUNDS times pmad killed under load and restarted while its client
# still writes, the client killed, and every committed allocation checked
# (default 10); then 8 processes sharing a pool of 8 regions through
# pmad, CLIENT_ROUNDS of them killed at random points while pmad is
# killed and restarted PMAD_ROUNDS times under the load, the whole pool
# checked offline after (tests/pmad/pmad-procs). Pools on /dev/shm,
# CACHE_LINE persistence.
# Usage: tests/pmad/stress.sh BUILDDIR [CLIENT_ROUNDS [PMAD_ROUNDS]]
set -euo pipefail
build=${1:?usage: stress.sh BUILDDIR [CLIENT_ROUNDS [PMAD_ROUNDS]]}
client_rounds=${2:-100}
pmad_rounds=${3:-10}
export PMEM2_FORCE_GRANULARITY=CACHE_LINE
pmad="$build/daemon/pmad"
pmactl="$build/cmd/pmactl"
client="$build/tests/pmad/pmad-client"
procs="$build/tests/pmad/pmad-procs"
dir=$(mktemp -d /dev/shm/pmad-stress.XXXXXX)
pmad_pid="" wl_pid=""
cleanup() {
	[ -z "$wl_pid" ] || kill -9 "$wl_pid" 2>/dev/null || true
	if [ -n "$pmad_pid" ]; then
		kill "$pmad_pid" 2>/dev/null || true
		wait "$pmad_pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT

start_pmad() {
	"$pmad" --foreground --socket "$dir/s" --state-dir "$dir/sd" \
		2>>"$dir/pmad.log" &
	pmad_pid=$!
	for _ in $(seq 100); do
		"$pmactl" --socket "$dir/s" list >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "pmad did not start" >&2
	exit 1
}
count() {
	local c
	c=$(cat "$dir/count" 2>/dev/null) || c=0
	echo $((10#${c:-0}))
}

start_pmad
"$pmactl" --socket "$dir/s" create crash --size 64M >/dev/null
echo "# $client_rounds clients killed with SIGKILL at random points"
"$client" "$dir/s" crash-loop crash --rounds "$client_rounds" >"$dir/out"
echo "ok rounds: $(grep -c '^ok - round' "$dir/out"), committed blocks" \
	"all there: $(grep -c 'every committed block is there' "$dir/out")," \
	"no leak: $(grep -c '^ok - no leak' "$dir/out"), not ok: $(grep -c 'not ok' "$dir/out" || true)"
kill -0 "$pmad_pid"

echo "# $pmad_rounds times: pmad killed under load, restarted, client killed"
fails=0
for ((r = 0; r < pmad_rounds; r++)); do
	# the workload starts at op 0: a new pool each round (pmad has no
	# delete request; the scratch dir goes at the end)
	"$pmactl" --socket "$dir/s" create "load$r" --size 64M >/dev/null
	rm -f "$dir/count"
	"$client" "$dir/s" workload "load$r" --count-file "$dir/count" &
	wl_pid=$!
	target=$((1000 + RANDOM % 20000))
	until [ "$(count)" -ge "$target" ]; do sleep 0.01; done
	kill -9 "$pmad_pid"
	wait "$pmad_pid" 2>/dev/null || true
	start_pmad # the pool is busy for it: the client still writes
	kill -9 "$wl_pid"
	wait "$wl_pid" 2>/dev/null || true
	wl_pid=""
	if "$client" "$dir/s" verify "load$r" --count "$(count)" \
		>"$dir/v.out" && grep -q "(0 bad slots)" "$dir/v.out" &&
		grep -q "^ok - no leak" "$dir/v.out"; then
		echo "ok $r - pmad killed after $(count) committed ops: all there, no leak"
	else
		echo "not ok $r - $(cat "$dir/v.out")"
		fails=$((fails + 1))
	fi
done
kill -0 "$pmad_pid"
echo "pmad kills: $pmad_rounds, failures: $fails"

echo "# 8 processes share a pool; $client_rounds of them killed, pmad" \
	"killed and restarted $pmad_rounds times under the load"
"$pmactl" --socket "$dir/s" create many --size 256M --regions 8 >/dev/null
"$procs" "$dir/s" run many --procs 8 --ops $((client_rounds * 100000)) \
	--kills "$client_rounds" >"$dir/procs.out" 2>"$dir/procs.err" &
wl_pid=$!
for ((r = 0; r < pmad_rounds; r++)); do
	sleep 0.$((2 + RANDOM % 5))
	kill -0 "$wl_pid" 2>/dev/null || break
	kill -9 "$pmad_pid"
	wait "$pmad_pid" 2>/dev/null || true
	start_pmad
done
if ! wait "$wl_pid"; then
	wl_pid=""
	echo "not ok - the processes failed: $(cat "$dir/procs.out" "$dir/procs.err")"
	exit 1
fi
wl_pid=""
cat "$dir/procs.out"
kill "$pmad_pid"
wait "$pmad_pid" || true
pmad_pid=""
"$procs" "$dir/sd/many.pool" check - --root "$(awk '/^root/{print $2}' "$dir/procs.out")" ||
	fails=$((fails + 1))
"$pmactl" fsck "$dir/sd/many.pool" || fails=$((fails + 1))
echo "failures: $fails"
[ "$fails" = 0 ]
