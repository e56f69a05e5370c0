#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Pool-level integrity (issue 15): a damaged header copy never rolls a pool
# back, every part is locked while its pool is open, files are compared by
# device and inode, create --force never follows a symlink nor overwrites a
# non-pool or a pool it cannot rebuild, and odd input is handled sanely.

load helpers

setup() {
	pmalloc_setup
	HOLD_PID=
}

teardown() {
	if [ -n "$HOLD_PID" ]; then
		kill -9 "$HOLD_PID" 2>/dev/null || true
		wait "$HOLD_PID" 2>/dev/null || true
	fi
}

POOL_HDR_INCOMPAT_OFF=48 # uint64 feat_incompat in struct pool_hdr

# hold POOL: a writer (pma-workload --stress) keeps POOL open for 60 s
hold() {
	local i
	"$WORKLOAD" --stress "$1" 60s >"$T/hold.out" 2>"$T/hold.err" 3>&- &
	HOLD_PID=$!
	for ((i = 0; i < 500; i++)); do
		grep -q running "$T/hold.out" 2>/dev/null && return 0
		sleep 0.01
	done
	fail "the writer did not start: $(cat "$T/hold.err")"
}

# heap_pool POOL: a pool with a PMAlloc heap (a region), as created
heap_pool() {
	mkpool_size "$1" 8M
	run --separate-stderr "$WORKLOAD" "$1" 4 100
	assert_success
}

# ------------------------------------------------------------ item 2

@test "a damaged newest header copy never shows an older region table" {
	heap_pool "$T/p"
	run --separate-stderr pmactl inspect -j "$T/p"
	assert_success
	local cur
	cur=$(jq -r .header_copy <<<"$output")
	if [ "$cur" = A ]; then cur=$POOL_HDR_A_OFF; else cur=$POOL_HDR_B_OFF; fi
	flip_byte "$T/p" $((cur + 0x1000))
	run --separate-stderr pmactl inspect -j "$T/p"
	if [ "$status" = 0 ]; then
		# a fallback is fine only to a copy of the same state
		[ "$(jq -r '.regions | length' <<<"$output")" = 1 ] ||
			fail "rolled back: $output"
	else
		assert_failure 1
	fi
	# a writable open of the same state works and rewrites the copy
	run --separate-stderr "$WORKLOAD" "$T/p" 1 100
	assert_success
	run --separate-stderr pmactl inspect -j "$T/p"
	assert_success
	[ "$(jq -r .header_other_valid <<<"$output")" = true ]
	[ "$(jq -r '.regions | length' <<<"$output")" = 1 ]
}

@test "a damaged newest copy over an older one refuses the open" {
	mkpool_size "$T/p" 8M
	# copy A of generation 1, before the heap's region was added
	dd if="$T/p" of="$T/old-a" bs=8192 skip=1 count=1 status=none
	run --separate-stderr "$WORKLOAD" "$T/p" 4 100
	assert_success
	# as if an update stopped after its first copy: A is older, B newest
	dd if="$T/old-a" of="$T/p" bs=8192 seek=1 count=1 conv=notrunc \
		status=none
	run --separate-stderr pmactl inspect -j "$T/p"
	assert_success
	[ "$(jq -r '.regions | length' <<<"$output")" = 1 ]
	flip_byte "$T/p" $((POOL_HDR_B_OFF + 0x1000))
	run --separate-stderr "$WORKLOAD" "$T/p" 1 100
	assert_failure
	[[ "$stderr" == *"damaged"* ]] || fail "$stderr"
	[[ "$stderr" == *"older"* ]] || fail "$stderr"
	# read-only inspect shows the older copy, says so and exits 1
	run --separate-stderr pmactl inspect -j "$T/p"
	assert_failure 1
	[ "$(jq -r .header_damaged <<<"$output")" = true ]
	[ "$(jq -r .generation <<<"$output")" = 1 ]
	[[ "$stderr" == *"damaged"* ]] || fail "$stderr"
	run --separate-stderr pmactl inspect "$T/p"
	assert_failure 1
	assert_output --partial "DAMAGED"
}

@test "read-only commands report a damaged copy of the same state" {
	local cur cmd
	heap_pool "$T/p"
	run --separate-stderr pmactl inspect -j "$T/p"
	cur=$(jq -r .header_copy <<<"$output")
	if [ "$cur" = A ]; then cur=$POOL_HDR_A_OFF; else cur=$POOL_HDR_B_OFF; fi
	flip_byte "$T/p" $((cur + 0x1000))
	for cmd in inspect "inspect --heap" log "log -j" "inspect --heap -j"; do
		# shellcheck disable=SC2086 # cmd holds options
		run --separate-stderr pmactl $cmd "$T/p"
		assert_success
		[[ "$stderr" == "pmactl: warning: pool '$T/p': pool header copy "*" is invalid"*"same state"* ]] ||
			fail "$cmd: $stderr"
		[ "$(wc -l <<<"$stderr")" = 1 ] || fail "$cmd: $stderr"
	done
	# a writable open rewrites the copy; then nothing is reported
	run --separate-stderr "$WORKLOAD" "$T/p" 1 100
	assert_success
	run --separate-stderr pmactl log "$T/p"
	assert_success
	[ -z "$stderr" ] || fail "$stderr"
}

@test "read-only commands refuse a damaged copy over an older one" {
	mkpool_size "$T/p" 8M
	dd if="$T/p" of="$T/old-a" bs=8192 skip=1 count=1 status=none
	run --separate-stderr "$WORKLOAD" "$T/p" 4 100
	assert_success
	dd if="$T/old-a" of="$T/p" bs=8192 seek=1 count=1 conv=notrunc \
		status=none
	flip_byte "$T/p" $((POOL_HDR_B_OFF + 0x1000))
	# as the writable open: the heap's state may be newer than copy A
	run --separate-stderr pmactl log "$T/p"
	assert_failure 1
	[[ "$stderr" == *"may hold an older state"* ]] || fail "$stderr"
	run --separate-stderr pmactl inspect --heap -j "$T/p"
	assert_failure 1
	[ "$(jq -r .header_damaged <<<"$output")" = true ]
	[ "$(jq -r .heap <<<"$output")" = null ]
}

@test "an unknown incompat feature in one copy refuses the open" {
	mkpool "$T/p"
	put_le "$T/p" $((POOL_HDR_B_OFF + POOL_HDR_INCOMPAT_OFF)) 8 $((1 << 40))
	fix_csum "$T/p" "$POOL_HDR_B_OFF" "$POOL_HDR_CSUM_LEN"
	run --separate-stderr pmactl inspect "$T/p"
	assert_failure 1
	[[ "$stderr" == *"unknown incompatible features"* ]] || fail "$stderr"
	run --separate-stderr "$WORKLOAD" "$T/p" 1 100
	assert_failure
}

# ------------------------------------------------------------ item 3

@test "create refuses every part of an open pool" {
	run --separate-stderr pmactl create "$T/x" --size 8M --parts "$T/x1"
	assert_success
	hold "$T/x"
	cp "$T/x1" "$T/x1.before"
	run --separate-stderr pmactl create "$T/y" --size 1M --parts "$T/x1" \
		--force
	assert_failure 1
	[[ "$stderr" == *"in use"* ]] || fail "$stderr"
	[ ! -e "$T/y" ]
	run --separate-stderr pmactl create "$T/x1" --size 1M --force
	assert_failure 1
	[[ "$stderr" == *"in use"* ]] || fail "$stderr"
	cmp -n 4096 "$T/x1" "$T/x1.before"
}

# ------------------------------------------------------------ item 4

@test "the same file under two spellings is refused" {
	run --separate-stderr pmactl create "$T/./c" --size 1M --parts "$T/c"
	assert_failure 1
	[[ "$stderr" == *"same file"* ]] || fail "$stderr"
	[ ! -e "$T/c" ]
	mkpool "$T/c"
	run --separate-stderr pmactl create "$T/c" --size 1M --force \
		--parts "$T/./c"
	assert_failure 1
	[[ "$stderr" == *"same file"* ]] || fail "$stderr"
	run --separate-stderr pmactl inspect "$T/c"
	assert_success
}

# ------------------------------------------------------------ item 5

@test "create --force does not follow a symlink" {
	echo precious >"$T/target"
	ln -s "$T/target" "$T/link"
	run --separate-stderr pmactl create "$T/link" --size 1M --force
	assert_failure 1
	[[ "$stderr" == *"symbolic link"* ]] || fail "$stderr"
	[ "$(cat "$T/target")" = precious ]
}

@test "create --force does not overwrite a file that is not a pool" {
	echo precious >"$T/f"
	run --separate-stderr pmactl create "$T/f" --size 1M --force
	assert_failure 1
	[[ "$stderr" == *"not a pmad pool"* ]] || fail "$stderr"
	[ "$(cat "$T/f")" = precious ]
	# an empty file holds nothing to lose
	: >"$T/e"
	run --separate-stderr pmactl create "$T/e" --size 1M --force
	assert_success
}

@test "create --force applies --mode to a reused file" {
	mkpool "$T/p" --mode 0600
	[ "$(stat -c %a "$T/p")" = 600 ]
	run --separate-stderr pmactl create "$T/p" --size 1M --force --mode 0640
	assert_success
	[ "$(stat -c %a "$T/p")" = 640 ]
}

# ------------------------------------------------------------ item 6

# no_fill CMD...: run CMD unable to write past 64 MiB (so that a create
# that does not check the space first fails instead of filling the disk)
no_fill() {
	run --separate-stderr bash -c 'trap "" XFSZ; ulimit -f 65536; "$@"' \
		no_fill "$@"
}

@test "create checks the free space first" {
	local avail size
	avail=$(df --output=avail -B1 "$T" | tail -1)
	size=$(((avail / 65536 + 16384) * 65536))
	no_fill pmactl create "$T/big" --size "$size"
	assert_failure 1
	[[ "$stderr" == *"not enough space"* ]] || fail "$stderr"
	[ ! -e "$T/big" ]
	mkpool "$T/p" -j
	local uuid
	uuid=$(jq -r .uuid <<<"$output")
	no_fill pmactl create "$T/p" --size "$size" --force
	assert_failure 1
	[[ "$stderr" == *"not enough space"* ]] || fail "$stderr"
	run --separate-stderr pmactl inspect -j "$T/p"
	assert_success
	[ "$(jq -r .uuid <<<"$output")" = "$uuid" ]
}

@test "a failed create --force leaves the old pool intact" {
	mkpool "$T/p" -j
	local uuid
	uuid=$(jq -r .uuid <<<"$output")
	# 128 MiB does not fit below the 64 MiB file size limit
	no_fill pmactl create "$T/p" --size 128M --force
	assert_failure 1
	run --separate-stderr pmactl inspect -j "$T/p"
	assert_success
	[ "$(jq -r .uuid <<<"$output")" = "$uuid" ]
	# nothing left of the new pool's file
	[ "$(ls -A "$T" | grep -c pmad)" = 0 ] || fail "left: $(ls -A "$T")"
}

# ------------------------------------------------------------ item 8

@test "out-of-range size and an empty path are usage errors" {
	run --separate-stderr pmactl create "$T/p" --size 18446744073709486080
	assert_failure 2
	[[ "$stderr" == *"too large"* ]] || fail "$stderr"
	run --separate-stderr pmactl create "" --size 1M
	assert_failure 2
	[[ "$stderr" == *"empty"* ]] || fail "$stderr"
}

@test "pmactl help help shows the help" {
	run --separate-stderr pmactl help help
	assert_success
	assert_output --partial "usage: pmactl"
}

@test "a long path does not cut the reason off" {
	local long=$T i
	for ((i = 0; i < 6; i++)); do
		long+=/$(printf 'd%.0s' {1..200})
	done
	run --separate-stderr pmactl inspect "$long/pool"
	assert_failure 1
	[[ "$stderr" == *"no such file" ]] || fail "$stderr"
	run --separate-stderr pmactl create "$long/pool" --size 1M
	assert_failure 1
	[[ "$stderr" == *"No such file or directory" ]] || fail "$stderr"
}

@test "control characters in paths are escaped" {
	local p=$T/a$'\n'b$'\e'[31mc
	run --separate-stderr pmactl create "$p" --size 1M
	assert_success
	assert_output --partial 'a\nb\x1b[31mc'
	[[ "$output" != *$'\e'* ]] || fail "raw escape in: $output"
	run --separate-stderr pmactl inspect "$p"x
	assert_failure 1
	[[ "$stderr" == *'a\nb\x1b[31mcx'* ]] || fail "$stderr"
	[ "$(wc -l <<<"$stderr")" = 1 ] || fail "$stderr"
	run --separate-stderr pmactl inspect -j "$p"
	assert_success
	[ "$(jq -r '.parts[0].path' <<<"$output")" = "$p" ]
}

@test "a NUMA node the machine does not have is refused" {
	run --separate-stderr pmactl create "$T/p" --size 1M --node 1000
	assert_failure 2
	[[ "$stderr" == *"node 1000"* ]] || fail "$stderr"
	[ ! -e "$T/p" ]
}

# ------------------------------------------------- create across parts

# old_pool: a 3-part pool p, p1, p2 with a heap; saves its files and uuid
old_pool() {
	run --separate-stderr pmactl create "$T/p" --size 8M \
		--parts "$T/p1,$T/p2"
	assert_success
	run --separate-stderr "$WORKLOAD" "$T/p" 4 100
	assert_success
	run --separate-stderr pmactl inspect -j "$T/p"
	assert_success
	OLD_UUID=$(jq -r .uuid <<<"$output")
	mkdir "$T/saved"
	cp "$T/p" "$T/p1" "$T/p2" "$T/saved/"
}

# restore the old pool's files, drop anything a create left
old_restore() {
	rm -f "$T"/.*pmad-new
	cp "$T/saved/p" "$T/saved/p1" "$T/saved/p2" "$T/"
}

# after a killed create (label $1): the old pool, intact to the byte, or
# the new one, complete; and a plain retry succeeds and leaves no aside file
old_or_new() {
	local uuid f
	run --separate-stderr pmactl inspect -j "$T/p"
	[ "$status" = 0 ] || fail "$1: neither pool opens: $stderr"
	[ "$(jq -r '.parts | length' <<<"$output")" = 3 ] ||
		fail "$1: $output"
	uuid=$(jq -r .uuid <<<"$output")
	if [ "$uuid" = "$OLD_UUID" ]; then
		for f in p p1 p2; do
			cmp -s "$T/$f" "$T/saved/$f" || fail "$1: $f changed"
		done
		run --separate-stderr pmactl inspect --heap "$T/p"
		assert_success
		OLD_SEEN=$((OLD_SEEN + 1))
	else
		[ "$(jq -r '.regions | length' <<<"$output")" = 0 ] ||
			fail "$1: $output"
		NEW_SEEN=$((NEW_SEEN + 1))
	fi
	run --separate-stderr pmactl create "$T/p" --size 1M --force \
		--parts "$T/p1,$T/p2"
	[ "$status" = 0 ] || fail "$1: the retry failed: $stderr"
	[ -z "$(ls -A "$T" | grep pmad-new)" ] || fail "$1: left $(ls -A "$T")"
}

@test "create --force killed at a rename leaves the old or the new pool" {
	command -v strace >/dev/null || skip "no strace"
	local w
	old_pool
	OLD_SEEN=0 NEW_SEEN=0
	for w in 1 2 3; do
		old_restore
		run strace -f -o /dev/null -e trace=rename,renameat,renameat2 \
			-e inject=rename:signal=KILL:when=$w \
			pmactl create "$T/p" --size 1M --force \
			--parts "$T/p1,$T/p2"
		[ "$status" = 137 ] || fail "rename $w: not killed: $output"
		old_or_new "killed at rename $w"
	done
	[ "$OLD_SEEN" -ge 1 ] && [ "$NEW_SEEN" -ge 1 ]
}

@test "create --force killed at any step leaves the old or the new pool" {
	local n
	old_pool
	OLD_SEEN=0 NEW_SEEN=0
	for ((n = 1; n < 40; n++)); do
		old_restore
		run env PMAD_TEST_CRASH_AT=create:$n pmactl create "$T/p" \
			--size 1M --force --parts "$T/p1,$T/p2"
		[ "$status" = 0 ] && break
		[ "$status" = 137 ] || fail "step $n: $output"
		old_or_new "killed at step $n"
	done
	# 3 parts built aside, headers, sync, 3 renames
	[ "$n" -ge 9 ] || fail "only $((n - 1)) crash points"
	[ "$OLD_SEEN" -ge 5 ] && [ "$NEW_SEEN" -ge 3 ]
}

@test "a new create killed at any step leaves nothing or the pool" {
	local n
	for ((n = 1; n < 40; n++)); do
		rm -f "$T/p" "$T/p1" "$T/p2"
		run env PMAD_TEST_CRASH_AT=create:$n pmactl create "$T/p" \
			--size 1M --parts "$T/p1,$T/p2"
		[ "$status" = 0 ] && break
		[ "$status" = 137 ] || fail "step $n: $output"
		if [ -e "$T/p" ]; then
			run --separate-stderr pmactl inspect -j "$T/p"
			[ "$status" = 0 ] || fail "step $n: $stderr"
		else
			[ ! -e "$T/p1" ] && [ ! -e "$T/p2" ] ||
				fail "step $n: parts without part 0"
		fi
		# the retry needs no --force when nothing is in place
		[ -e "$T/p" ] && continue
		run --separate-stderr pmactl create "$T/p" --size 1M \
			--parts "$T/p1,$T/p2"
		[ "$status" = 0 ] || fail "step $n: the retry failed: $stderr"
		[ -z "$(ls -A "$T" | grep pmad-new)" ] ||
			fail "step $n: left $(ls -A "$T")"
	done
	[ "$n" -ge 9 ] || fail "only $((n - 1)) crash points"
}

@test "an open finishes the renames of a create killed after its commit" {
	local uuid
	old_pool
	# killed right after part 0's rename, the commit
	run env PMAD_TEST_CRASH_AT=create:6 pmactl create "$T/p" --size 1M \
		--force --parts "$T/p1,$T/p2"
	assert_failure 137
	[ -e "$T/.p1.pmad-new" ] && [ -e "$T/.p2.pmad-new" ] ||
		fail "$(ls -A "$T")"
	# read-only: uses the parts where they are, changes nothing
	run --separate-stderr pmactl inspect -j "$T/p"
	assert_success
	uuid=$(jq -r .uuid <<<"$output")
	[ "$uuid" != "$OLD_UUID" ]
	[ "$(jq -r '.parts[1].path' <<<"$output")" = "$T/.p1.pmad-new" ]
	[ -e "$T/.p1.pmad-new" ]
	# writable: moves them in place
	run --separate-stderr "$WORKLOAD" "$T/p" 1 100
	assert_success
	[ -z "$(ls -A "$T" | grep pmad-new)" ] || fail "left $(ls -A "$T")"
	run --separate-stderr pmactl inspect -j "$T/p"
	assert_success
	[ "$(jq -r .uuid <<<"$output")" = "$uuid" ]
	[ "$(jq -r '.parts[2].path' <<<"$output")" = "$T/p2" ]
}

# ------------------------------------------------- getopt messages

# stderr of a usage error: exit 2, no raw control character, and exactly
# two lines (the message, then "try ...")
usage_escaped() {
	assert_failure 2
	[[ "$stderr" != *$'\e'* ]] || fail "raw escape in: $stderr"
	[ "$(wc -l <<<"$stderr")" = 2 ] || fail "$stderr"
	[[ "$stderr" == *"$1"* ]] || fail "want '$1' in: $stderr"
}

@test "bad options are escaped in usage errors" {
	run --separate-stderr pmactl create $'--si\nze\e[31m' 1M "$T/p"
	usage_escaped "pmactl create: unrecognized option '--si\\nze\\x1b[31m'"
	run --separate-stderr pmactl inspect $'-\e'
	usage_escaped "pmactl inspect: invalid option -- '\\x1b'"
	run --separate-stderr pmactl $'--x\ny' inspect "$T/p"
	usage_escaped "pmactl: unrecognized option '--x\\ny'"
	run --separate-stderr pmactl $'-\n' inspect "$T/p"
	usage_escaped "pmactl: invalid option -- '\\n'"
	run --separate-stderr pmactl create --force=$'\e[2J' "$T/p"
	usage_escaped "pmactl create: option '--force' doesn't allow an argument"
	run --separate-stderr pmactl log -jx$'\t' "$T/p"
	usage_escaped "pmactl log: invalid option -- 'x'"
	run --separate-stderr pmactl create "$T/p" -s
	usage_escaped "pmactl create: option requires an argument -- 's'"
	run --separate-stderr pmactl create "$T/p" --h
	usage_escaped "pmactl create: option '--h' is ambiguous"
	[ ! -e "$T/p" ]
}

# ------------------------------------------------- --node with gaps

@test "--node accepts online nodes only, whose ids may have gaps" {
	export PMAD_FAKE_NUMA=@0,2
	run --separate-stderr pmactl create "$T/p" --size 1M --parts "$T/p1" \
		--node 0,1
	assert_failure 2
	[[ "$stderr" == *"node 1 "*"online: 0,2"* ]] || fail "$stderr"
	[ ! -e "$T/p" ]
	run --separate-stderr pmactl create "$T/p" --size 1M --parts "$T/p1" \
		--node 2,0 -j
	assert_success
	[ "$(jq -c '[.parts[].numa_node]' <<<"$output")" = "[2,0]" ]
	# without --node, plain files go round the online nodes
	run --separate-stderr pmactl create "$T/q" --size 1M \
		--parts "$T/q1,$T/q2" -j
	assert_success
	[ "$(jq -c '[.parts[].numa_node]' <<<"$output")" = "[0,2,0]" ]
}
