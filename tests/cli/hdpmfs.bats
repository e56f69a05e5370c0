#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# hdpmfs: the HDPM file system mounted with FUSE and used by real
# programs: the shell's namespace tools, fio random 64 B-4 KiB writes and
# reads with crc32c verification (again after a remount), fsx-lite in both
# write modes, cp -r of a source tree + diff -r after a remount, and
# kill -9 of hdpmfs during fio and fsx-lite: after a remount every
# acknowledged operation is there. Tests that need a mount skip with a
# SKIP line when /dev/fuse is missing or mounting is refused.

load helpers

setup() {
	pmalloc_setup
	command -v hdpmfs >/dev/null || fail "hdpmfs not on PATH"
	FSX="${PMAD_BUILDDIR:?set PMAD_BUILDDIR}/tests/tools/fsx-lite"
	[ -x "$FSX" ] || fail "no $FSX: build it with make check"
	P="$T/fs.pool"
	M="$T/mnt"
	mkdir -p "$M"
	HPID=""
}

teardown() {
	if mountpoint -q "$M" 2>/dev/null; then
		fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" || true
	fi
	if [ -n "$HPID" ] && kill -0 "$HPID" 2>/dev/null; then
		kill -9 "$HPID" || true
	fi
	if [ -n "$HPID" ]; then
		wait "$HPID" 2>/dev/null || true
	fi
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

# fsx-lite's ack log says at least $1 operations were acknowledged
acked_at_least() {
	local n
	n=$(tail -1 "$T/ack" 2>/dev/null) || return 1
	[ "${n:-0}" -ge "$1" ]
}

# skip unless FUSE can mount here
need_fuse() {
	[ -c /dev/fuse ] || skip "SKIP: /dev/fuse is missing: no FUSE mounts here"
	command -v fusermount3 >/dev/null ||
		skip "SKIP: fusermount3 is missing (Debian package fuse3)"
}

# mount [hdpmfs options...]: hdpmfs $P on $M in the foreground, in the
# background; skips the test if the kernel refuses the mount
mount_fs() {
	[ -e "$P" ] || mkpool_size "$P" 128M
	hdpmfs "$P" "$M" -f "$@" 2>>"$T/hdpmfs.err" 3>&- &
	HPID=$!
	local i
	for ((i = 0; i < 200; i++)); do
		mountpoint -q "$M" && return 0
		if ! kill -0 "$HPID" 2>/dev/null; then
			wait "$HPID" || true
			HPID=""
			if grep -q "fuse: \|cannot mount on" "$T/hdpmfs.err"; then
				skip "SKIP: FUSE mount refused here: $(tail -1 "$T/hdpmfs.err")"
			fi
			fail "hdpmfs exited: $(cat "$T/hdpmfs.err")"
		fi
		sleep 0.1
	done
	fail "hdpmfs did not mount within 20 s"
}

umount_fs() {
	run fusermount3 -u "$M"
	assert_success
	# hdpmfs exits 0 after a clean unmount
	local rc=0
	wait "$HPID" || rc=$?
	HPID=""
	[ "$rc" -eq 0 ] || fail "hdpmfs exited with $rc: $(cat "$T/hdpmfs.err")"
}

# fio job: random 64 B-4 KiB writes over two 1 MiB files, crc32c headers
# (no verify state file: it would land in the current directory)
fio_job() {
	fio --name=v --directory="$M" --filename_format='fio.$jobnum.$filenum' \
		--size=2m --nrfiles=2 --bsrange=64-4k --ioengine=psync \
		--verify=crc32c --verify_fatal=1 --randseed=7 \
		--verify_state_save=0 --output-format=json "$@"
}

@test "hdpmfs --help, --version and usage errors" {
	run hdpmfs --help
	assert_success
	assert_output --partial "usage: hdpmfs POOL MOUNTPOINT"
	assert_output --partial "-o cow"
	run hdpmfs --version
	assert_success
	assert_output --partial "hdpmfs (pmad)"
	run hdpmfs
	[ "$status" -eq 2 ]
	assert_output --partial "missing POOL argument"
	run hdpmfs "$T/p"
	[ "$status" -eq 2 ]
	assert_output --partial "missing MOUNTPOINT argument"
	run hdpmfs "$T/p" "$M" extra
	[ "$status" -eq 2 ]
	assert_output --partial "too many arguments"
	run hdpmfs "$T/p" "$M" --no-such-option
	[ "$status" -eq 2 ]
}

@test "hdpmfs on a missing or bad pool fails with a message" {
	run hdpmfs "$T/none" "$M" -f
	[ "$status" -eq 1 ]
	assert_output --partial "cannot open the heap of '$T/none'"
	head -c 1M /dev/urandom >"$T/junk"
	run hdpmfs "$T/junk" "$M" -f
	[ "$status" -eq 1 ]
	assert_output --partial "cannot open the heap"
	! mountpoint -q "$M"
}

@test "namespace operations through the mount" {
	need_fuse
	mount_fs
	mkdir "$M/d" "$M/d/e"
	echo hello >"$M/d/f"
	[ "$(cat "$M/d/f")" = hello ]
	[ "$(stat -c %s "$M/d/f")" = 6 ]
	mv "$M/d/f" "$M/d/e/g"
	[ ! -e "$M/d/f" ]
	[ "$(cat "$M/d/e/g")" = hello ]
	run rmdir "$M/d/e"
	assert_failure
	assert_output --partial "not empty"
	run ls "$M/d/e"
	assert_output g
	echo more >>"$M/d/e/g"
	[ "$(cat "$M/d/e/g")" = "$(printf 'hello\nmore')" ]
	truncate -s 3 "$M/d/e/g"
	[ "$(cat "$M/d/e/g")" = hel ]
	rm "$M/d/e/g"
	rmdir "$M/d/e" "$M/d"
	[ -z "$(ls -A "$M")" ]
	run mkdir "$M/x/y"
	assert_failure
	df "$M" | grep -q hdpmfs
	umount_fs
}

@test "fio random 64 B-4 KiB writes verify, and verify again after a remount" {
	need_fuse
	command -v fio >/dev/null || skip "SKIP: fio is not installed"
	mount_fs
	run --separate-stderr fio_job --rw=randwrite
	assert_success
	[ "$(jq '.jobs[0].error' <<<"$output")" = 0 ]
	# the verify phase read back all that was written
	[ "$(jq '.jobs[0].write.io_bytes' <<<"$output")" = 2097152 ]
	[ "$(jq '.jobs[0].read.io_bytes' <<<"$output")" = 2097152 ]
	umount_fs
	mount_fs
	run --separate-stderr fio_job --rw=randwrite --verify_only
	assert_success
	[ "$(jq '.jobs[0].read.io_bytes' <<<"$output")" = 2097152 ]
	# the check is real: changed bytes fail it (a whole 4 KiB: one byte
	# can land in a verify header field fio does not check, such as its
	# time stamp, and pass; seen once under load)
	head -c 4096 /dev/zero | tr '\0' X |
		dd of="$M/fio.0.0" bs=4096 seek=1 conv=notrunc status=none
	run --separate-stderr fio_job --rw=randwrite --verify_only
	assert_failure
	umount_fs
}

@test "fio with the background GC thread merging: verify passes, again after a remount" {
	need_fuse
	command -v fio >/dev/null || skip "SKIP: fio is not installed"
	# free space is always "short": the thread merges while fio writes
	mount_fs -o gc_free_pct=100,gc_interval_ms=5
	run --separate-stderr fio_job --rw=randwrite --loops=4
	assert_success
	[ "$(jq '.jobs[0].error' <<<"$output")" = 0 ]
	[ "$(jq '.jobs[0].write.io_bytes' <<<"$output")" = 8388608 ]
	umount_fs
	# hdpmfs -f reports what its GC thread did at exit
	run grep -o 'background gc: [0-9]* steps, [0-9]* pages merged' \
		"$T/hdpmfs.err"
	assert_success
	merged=$(sed -n 's/.*steps, \([0-9]*\) pages merged.*/\1/p' <<<"$output" | tail -1)
	[ "$merged" -gt 0 ] || fail "the GC thread merged nothing: $output"
	mount_fs -o nogc
	run --separate-stderr fio_job --rw=randwrite --verify_only
	assert_success
	[ "$(jq '.jobs[0].read.io_bytes' <<<"$output")" = 2097152 ]
	umount_fs
}

@test "hdpmfs -o gc_free_pct above 100, gc_interval_ms 0: usage errors" {
	run hdpmfs "$T/p" "$M" -o gc_free_pct=101
	[ "$status" -eq 2 ]
	assert_output --partial "gc_free_pct must be 0..100"
	run hdpmfs "$T/p" "$M" -o gc_interval_ms=0
	[ "$status" -eq 2 ]
	assert_output --partial "gc_interval_ms must be 1..3600000"
}

@test "fio random mixed reads and writes of 64 B to 4 KiB with verification" {
	need_fuse
	command -v fio >/dev/null || skip "SKIP: fio is not installed"
	mount_fs
	# one job per block size: fio verifies mixed reads only against
	# blocks of the job's own fixed size
	run --separate-stderr fio --directory="$M" --size=512k \
		--ioengine=psync --rw=randrw --rwmixread=50 --verify=crc32c \
		--verify_fatal=1 --randseed=9 --verify_state_save=0 \
		--output-format=json \
		--name=b64 --bs=64 --name=b256 --bs=256 \
		--name=b1k --bs=1k --name=b4k --bs=4k
	assert_success
	[ "$(jq '[.jobs[].error] | add' <<<"$output")" = 0 ]
	[ "$(jq '[.jobs[] | select(.read.io_bytes > 0)] | length' <<<"$output")" = 4 ]
	umount_fs
}

@test "fsx-lite: random writes, truncates and reads, hybrid and cow" {
	need_fuse
	mount_fs
	run "$FSX" -n 3000 -s 11 -l 4096 -m 65536 "$M/small"
	assert_success
	assert_output --partial "3000 operations passed"
	run "$FSX" -n 1000 -s 12 "$M/large"
	assert_success
	umount_fs
	mount_fs -o cow
	run "$FSX" -n 1500 -s 13 -l 4096 -m 65536 "$M/cow"
	assert_success
	assert_output --partial "1500 operations passed"
	umount_fs
}

@test "cp -r of a source tree, unmount, remount, diff -r" {
	need_fuse
	mount_fs
	cp -r "$PMAD_SRCDIR/lib" "$M/lib"
	diff -r "$PMAD_SRCDIR/lib" "$M/lib"
	umount_fs
	mount_fs
	diff -r "$PMAD_SRCDIR/lib" "$M/lib"
	# renames and removals survive as well
	mv "$M/lib/hdpm" "$M/hdpm"
	rm -r "$M/lib/util"
	umount_fs
	mount_fs
	diff -r "$PMAD_SRCDIR/lib/hdpm" "$M/hdpm"
	[ ! -e "$M/lib/util" ]
	[ ! -e "$M/lib/hdpm" ]
	umount_fs
}

@test "kill -9 of hdpmfs during fio and fsx-lite: acknowledged data survive" {
	need_fuse
	command -v fio >/dev/null || skip "SKIP: fio is not installed"
	mount_fs
	fio_job --rw=randwrite --do_verify=0 --time_based --runtime=30 \
		>/dev/null 2>&1 3>&- &
	local fio_pid=$!
	"$FSX" -n 1000000 -s 21 -l 8192 -m 131072 -S -a "$T/ack" "$M/acked" \
		>"$T/fsx.out" 2>&1 3>&- &
	local fsx_pid=$!
	# well into both: fio has laid out its files, and at least 300
	# fsx-lite operations were acknowledged
	wait_for test -s "$M/fio.0.1"
	wait_for acked_at_least 300
	kill -9 "$HPID"
	wait "$HPID" || true
	HPID=""
	wait "$fio_pid" || true
	local fsx_rc=0
	wait "$fsx_pid" || fsx_rc=$?
	[ "$fsx_rc" -eq 1 ] # it saw the file system go away
	fusermount3 -u "$M" || fusermount3 -uz "$M"
	mount_fs
	run "$FSX" --verify "$T/ack" -s 21 -l 8192 -m 131072 "$M/acked"
	assert_success
	assert_output --partial "acknowledged operations verified"
	# every file reads to its end and fio's have their planned size at most
	cat "$M"/* >/dev/null
	local f
	for f in "$M"/fio.*; do
		[ "$(stat -c %s "$f")" -le 1048576 ]
	done
	# and the file system still takes a full verified fio run
	run --separate-stderr fio_job --rw=randwrite --filename_format='after.$filenum'
	assert_success
	umount_fs
}

@test "-o cow writes no page logs, hybrid does; gc waits for the unmount" {
	need_fuse
	mount_fs -o cow
	head -c 8192 /dev/urandom >"$M/f"
	printf 'small' | dd of="$M/f" bs=1 seek=100 conv=notrunc status=none
	umount_fs
	run --separate-stderr pmactl log --files --json "$P"
	assert_success
	[ "$(jq .log_chunks <<<"$output")" = 0 ]
	mount_fs
	printf 'small' | dd of="$M/f" bs=1 seek=200 conv=notrunc status=none
	# the pool is locked while mounted
	run --separate-stderr pmactl gc "$P"
	[ "$status" -eq 1 ]
	umount_fs
	run --separate-stderr pmactl log --files --json "$P"
	[ "$(jq .log_chunks <<<"$output")" = 1 ]
	[ "$(jq .live_bytes <<<"$output")" = 5 ]
	run --separate-stderr pmactl gc --json "$P"
	assert_success
	[ "$(jq .pages_merged <<<"$output")" = 1 ]
}
