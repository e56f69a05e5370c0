#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# hdpmfs-fio.sh: fio through the FUSE mount (hdpmfs), hybrid vs cow.
# For each run and mode (hybrid and cow alternating): a fresh pool, hdpmfs
# in the foreground, a file laid out with 1 MiB writes, then one job per
# shape (random writes of 64 B, 256 B, 1 KiB, 4 KiB, then 4 KiB random
# reads), psync, queue depth 1, time based. Prints one row per job: IOPS
# and completion latency p50 / p99 / p99.9 in microseconds.
#
#   bench/hdpmfs-fio.sh [-b BUILDDIR] [-d DIR] [-t SECONDS] [-n RUNS]
#                       [-j JOBS] [-s]
#     -b  build tree holding fs/hdpmfs and cmd/pmactl (default: ./build,
#         else PATH)
#     -d  where the pool and the mount point go (default /dev/shm)
#     -t  seconds per job (default 5); -n runs per mode (default 1)
#     -j  fio jobs (threads) per shape, each on its own file (default 1)
#     -s  run hdpmfs single-threaded (-s)
#
# Exits 77 with a "SKIP:" line when fio, python3, /dev/fuse or
# fusermount3 is missing or the kernel refuses the mount, 2 on bad usage.
set -eu

build=./build
dir=/dev/shm
secs=5
runs=1
jobs=1
single=""
while getopts b:d:t:n:j:s opt; do
	case $opt in
	b) build=$OPTARG ;;
	d) dir=$OPTARG ;;
	t) secs=$OPTARG ;;
	n) runs=$OPTARG ;;
	j) jobs=$OPTARG ;;
	s) single=-s ;;
	*)
		echo "usage: $0 [-b BUILDDIR] [-d DIR] [-t SECONDS] [-n RUNS] [-j JOBS] [-s]" >&2
		exit 2
		;;
	esac
done
for v in "$secs" "$runs" "$jobs"; do
	case $v in
	'' | *[!0-9]* | 0)
		echo "$0: -t, -n and -j take a positive number" >&2
		exit 2
		;;
	esac
done

skip() {
	echo "SKIP: $*"
	exit 77
}

command -v fio >/dev/null || skip "fio is not installed"
command -v python3 >/dev/null || skip "python3 is not installed (parses fio's JSON)"
[ -c /dev/fuse ] || skip "/dev/fuse is missing: no FUSE mounts here"
command -v fusermount3 >/dev/null || skip "fusermount3 is missing (Debian package fuse3)"

hdpmfs=$build/fs/hdpmfs
pmactl=$build/cmd/pmactl
[ -x "$hdpmfs" ] || hdpmfs=$(command -v hdpmfs) || {
	echo "$0: no hdpmfs in $build/fs or PATH" >&2
	exit 2
}
[ -x "$pmactl" ] || pmactl=$(command -v pmactl) || {
	echo "$0: no pmactl in $build/cmd or PATH" >&2
	exit 2
}

work=$(mktemp -d "$dir/hdpmfs-fio.XXXXXX")
mnt=$work/mnt
pool=$work/fs.pool
mkdir "$mnt"
hpid=""

unmount() {
	if mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" || true
	fi
	if [ -n "$hpid" ]; then
		wait "$hpid" 2>/dev/null || true
		hpid=""
	fi
}

cleanup() {
	unmount
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

# mount MODE: a fresh pool, hdpmfs in the background until mounted
mount_fs() {
	rm -f "$pool"
	"$pmactl" create "$pool" --size $((256 + 64 * jobs))M >/dev/null
	PMEM2_FORCE_GRANULARITY=${PMEM2_FORCE_GRANULARITY:-CACHE_LINE} \
		"$hdpmfs" "$pool" "$mnt" -f -o "$1" $single 2>"$work/hdpmfs.err" &
	hpid=$!
	i=0
	while ! mountpoint -q "$mnt"; do
		if ! kill -0 "$hpid" 2>/dev/null; then
			wait "$hpid" || true
			hpid=""
			skip "FUSE mount refused here: $(tail -1 "$work/hdpmfs.err")"
		fi
		i=$((i + 1))
		[ $i -lt 200 ] || {
			echo "$0: hdpmfs did not mount in 20 s" >&2
			exit 1
		}
		sleep 0.1
	done
}

# job NAME RW BS: one fio job on the laid-out files, one row printed
job() {
	fio --name="$1" --directory="$mnt" --filename_format='f$jobnum' \
		--size=16m --bs="$3" --rw="$2" --ioengine=psync --iodepth=1 \
		--numjobs="$jobs" --group_reporting --time_based \
		--runtime="$secs" --randseed=3 --output-format=json \
		>"$work/$1.json"
	python3 - "$work/$1.json" "$mode" "$1" "$jobs" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
side = j["write"] if j["write"]["io_bytes"] else j["read"]
pct = side["clat_ns"].get("percentile", {})
us = lambda k: pct.get(k, 0) / 1000.0
print("%-14s %-6s %4s %10.0f %9.1f %9.1f %9.1f" % (sys.argv[3], sys.argv[2],
      sys.argv[4], side["iops"], us("50.000000"), us("99.000000"),
      us("99.900000")))
EOF
}

printf '%-14s %-6s %4s %10s %9s %9s %9s\n' job mode thr iops p50_us \
	p99_us p999_us
r=0
while [ $r -lt "$runs" ]; do
	for mode in hybrid cow; do
		mount_fs "$mode"
		# lay out the files with 1 MiB writes
		fio --name=layout --directory="$mnt" --filename_format='f$jobnum' \
			--size=16m --bs=1m --rw=write --ioengine=psync \
			--numjobs="$jobs" --output=/dev/null
		job randwrite-64 randwrite 64
		job randwrite-256 randwrite 256
		job randwrite-1k randwrite 1k
		job randwrite-4k randwrite 4k
		job randread-4k randread 4k
		unmount
	done
	r=$((r + 1))
done
