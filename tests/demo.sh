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
echo
echo "demo pool: $pool (+ $dir/demo.part1); remove with: rm -r $dir"
