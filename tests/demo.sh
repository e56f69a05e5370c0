#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What `./quickstart.sh demo` runs: pmad on its embedded default (no
# configuration) serving a pool to a libpmad client that is killed with
# SIGKILL mid-workload and recovered; eight processes sharing one pool
# through pmad, some killed; then pmactl on a file-backed pool.
# Usage: tests/demo.sh BUILDDIR (in $PMAD_DEMO_DIR, default
# /dev/shm/pmad-demo)
set -euo pipefail
build=${1:?usage: demo.sh BUILDDIR}
pmactl="$build/cmd/pmactl"
dir=${PMAD_DEMO_DIR:-/dev/shm/pmad-demo}
pool="$dir/demo.pool"

# tmpfs + CACHE_LINE: libpmem2 issues real clwb+sfence, like ADR hardware
export PMEM2_FORCE_GRANULARITY=CACHE_LINE
mkdir -p "$dir"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }
say() { printf '\n\033[1m# %s\033[0m\n' "$*"; }

# ---- pmad: the daemon, and a program that uses a pool through libpmad
pmad="$build/daemon/pmad"
sock="$dir/pmad.sock"
count="$dir/count"
client="$build/tests/pmad/pmad-client"
procs="$build/tests/pmad/pmad-procs"
[ -x "$client" ] || make -s -C "$build" tests/pmad/pmad-client >/dev/null
[ -x "$procs" ] || make -s -C "$build" tests/pmad/pmad-procs >/dev/null
pmad_pid="" wl_pid=""
cleanup() {
	for p in $wl_pid $pmad_pid; do kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
rm -rf "$dir/state" "$sock" "$count"
say "pmad on its embedded default (no config file), pools in $dir/state"
printf '\033[1m$ %s\033[0m\n' "$pmad --foreground --socket $sock --state-dir $dir/state &"
"$pmad" --foreground --socket "$sock" --state-dir "$dir/state" \
	2>"$dir/pmad.log" &
pmad_pid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
step "$pmactl" --socket "$sock" create shared --size 64M
say "a libpmad client opens 'shared', allocates and frees in a loop"
"$client" "$sock" workload shared --count-file "$count" &
wl_pid=$!
until [ "$(cat "$count" 2>/dev/null || echo 0)" -ge 20000 ] 2>/dev/null; do
	kill -0 "$wl_pid" 2>/dev/null || { echo "the client failed" >&2; exit 1; }
	sleep 0.1
done
step "$pmactl" --socket "$sock" list
say "kill -9 the client in the middle of its work"
kill -9 "$wl_pid"
wait "$wl_pid" 2>/dev/null || true
wl_pid=""
committed=$((10#$(cat "$count")))
echo "it had committed $committed operations"
say "pmad saw the connection close and recovered the heap:"
for _ in $(seq 50); do grep -q "released by" "$dir/pmad.log" && break; sleep 0.1; done
grep "released by" "$dir/pmad.log" | tail -1
say "a new client finds every committed allocation, and nothing leaked"
step "$client" "$sock" verify shared --count "$committed"
step "$pmactl" --socket "$sock" stat shared

say "eight processes share one pool of 8 heap regions: pmad grants each a"
say "region; they allocate, free each other's blocks; 10 are killed -9"
step "$pmactl" --socket "$sock" create many --size 64M --regions 8
printf '\033[1m$ %s\033[0m\n' "$procs $sock run many --procs 8 --ops 400000 --kills 10"
"$procs" "$sock" run many --procs 8 --ops 400000 --kills 10 | tee "$dir/procs.out"
grep "recovered in" "$dir/pmad.log" | tail -3
step "$pmactl" --socket "$sock" stat many
kill "$pmad_pid"
wait "$pmad_pid" || true
pmad_pid=""
say "pmad stopped: the whole pool checked offline (nothing leaked)"
step "$procs" "$dir/state/many.pool" check - --root "$(awk '/^root/{print $2}' "$dir/procs.out")"
step "$pmactl" fsck "$dir/state/many.pool"

# ---- pmactl on a file-backed pool, offline

step "$pmactl" --version
step "$pmactl" ns
step "$pmactl" create "$pool" --size 256M --parts "$dir/demo.part1" --force
step "$pmactl" inspect "$pool"
step "$pmactl" inspect --json "$pool"

# a PMAlloc heap in the pool: 3000 allocations of 100 bytes, every third
# freed, then a simulated crash (no checkpoint, no close)
[ -x "$build/tests/lib/pma-workload" ] ||
	make -s -C "$build" tests/lib/pma-workload >/dev/null
step "$build/tests/lib/pma-workload" "$pool" 3000 100 crash
printf '\n\033[1m$ %s\033[0m\n' "$pmactl log $pool  (first lines)"
"$pmactl" log "$pool" >"$dir/log.txt"
head -12 "$dir/log.txt"
step "$pmactl" inspect --heap "$pool"
echo
echo "demo pool: $pool (+ $dir/demo.part1), pmad's pools in $dir/state;"
echo "remove with: rm -r $dir"
