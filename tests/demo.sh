#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job on a file-backed demo pool: what `./quickstart.sh demo` runs.
# Usage: tests/demo.sh BUILDDIR
set -euo pipefail
build=${1:?usage: demo.sh BUILDDIR}
pmactl="$build/cmd/pmactl"
dir=/dev/shm/pmad-demo
pool="$dir/demo.pool"

# tmpfs + CACHE_LINE: libpmem2 issues real clwb+sfence, like ADR hardware
export PMEM2_FORCE_GRANULARITY=CACHE_LINE
mkdir -p "$dir"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step "$pmactl" --version
step "$pmactl" ns
step "$pmactl" create "$pool" --size 256M --parts "$dir/demo.part1" --force
step "$pmactl" inspect "$pool"
step "$pmactl" inspect --json "$pool"

# a PMAlloc heap in the pool: 3000 allocations of 100 bytes, every third
# freed, then a simulated crash (no checkpoint, no close)
make -s -C "$build" tests/lib/pma-workload >/dev/null
step "$build/tests/lib/pma-workload" "$pool" 3000 100 crash
printf '\n\033[1m$ %s\033[0m\n' "$pmactl log $pool  (first lines)"
"$pmactl" log "$pool" >"$dir/log.txt"
head -12 "$dir/log.txt"
step "$pmactl" inspect --heap "$pool"
echo
echo "demo pool: $pool (+ $dir/demo.part1); remove with: rm -r $dir"
