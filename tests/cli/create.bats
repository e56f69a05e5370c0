#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl create: pools of 1 and 3 parts, every field round-tripped through
# inspect --json, options applied, and every usage error with its message.

load helpers

setup() {
	common_setup
	SHM=""
}

teardown() {
	if [ -n "$SHM" ]; then
		rm -rf -- "$SHM"
	fi
}

uuid_re='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'

# usage_error MESSAGE ARGS...: pmactl create ARGS exits 2 with MESSAGE
usage_error() {
	local msg=$1
	shift
	run --separate-stderr pmactl create "$@"
	assert_failure 2
	assert_output ""
	[[ "$stderr" == *"$msg"* ]] || fail "expected '$msg' in: $stderr"
	[[ "$stderr" == *"try 'pmactl create --help'"* ]] ||
		fail "no hint in: $stderr"
}

@test "create a one-part pool and show it" {
	run --separate-stderr pmactl create "$T/pool" --size 1M
	assert_success
	assert_line --regexp '^uuid: +[0-9a-f-]{36}$'
	assert_line --regexp '^version: +1\.0$'
	assert_line --regexp '^granularity: +(PAGE|CACHE_LINE|BYTE)$'
	assert_line --regexp '^size: +1 MiB in 1 part$'
	assert_output --partial "$T/pool"
	[ -f "$T/pool" ]
	[ "$(stat -c %s "$T/pool")" -eq $((1024 * 1024)) ]
}

@test "create prints the same JSON document inspect does" {
	run --separate-stderr pmactl create "$T/pool" --size 2M --json
	assert_success
	local created
	created=$(jq -S . <<<"$output")
	run --separate-stderr pmactl inspect --json "$T/pool"
	assert_success
	[ "$(jq -S . <<<"$output")" = "$created" ]
}

@test "JSON of a one-part pool has every key" {
	mkpool "$T/pool" --json
	local j=$output
	[[ "$(jq -r .uuid <<<"$j")" =~ $uuid_re ]]
	[ "$(jq -r .version <<<"$j")" = "1.0" ]
	[ "$(jq -r .major <<<"$j")" = 1 ]
	[ "$(jq -r .minor <<<"$j")" = 0 ]
	[ "$(jq -r '.generation | type' <<<"$j")" = number ]
	[ "$(jq -r '.features | [.compat, .incompat, .ro_compat] | map(type) | unique[]' <<<"$j")" = number ]
	local now
	now=$(date +%s)
	[ "$(jq -r .create_time <<<"$j")" -le "$now" ]
	[ "$(jq -r .create_time <<<"$j")" -gt $((now - 600)) ]
	[ "$(jq -r .size <<<"$j")" = 1048576 ]
	[ "$(jq -r .nparts <<<"$j")" = 1 ]
	[ "$(jq -r '.parts | length' <<<"$j")" = 1 ]
	[ "$(jq -r '.parts[0].index' <<<"$j")" = 0 ]
	[ "$(jq -r '.parts[0].path' <<<"$j")" = "$T/pool" ]
	[[ "$(jq -r '.parts[0].uuid' <<<"$j")" =~ $uuid_re ]]
	[ "$(jq -r '.parts[0].size' <<<"$j")" = 1048576 ]
	[ "$(jq -r '.parts[0].devdax' <<<"$j")" = false ]
	[ "$(jq -r '.regions | type' <<<"$j")" = array ]
}

@test "a three-part pool round-trips paths, nodes, uuids and sizes" {
	PMAD_FAKE_NUMA=3 mkpool "$T/p0" --parts "$T/p1,$T/p2" --node 0,1,2 --json
	local created=$output
	run --separate-stderr pmactl inspect --json "$T/p0"
	assert_success
	local j=$output
	[ "$(jq -S . <<<"$j")" = "$(jq -S . <<<"$created")" ]
	[ "$(jq -r .nparts <<<"$j")" = 3 ]
	[ "$(jq -r .size <<<"$j")" = $((3 * 1048576)) ]
	local i
	for i in 0 1 2; do
		[ "$(jq -r ".parts[$i].index" <<<"$j")" = "$i" ]
		[ "$(jq -r ".parts[$i].path" <<<"$j")" = "$T/p$i" ]
		[ "$(jq -r ".parts[$i].numa_node" <<<"$j")" = "$i" ]
		[ "$(jq -r ".parts[$i].size" <<<"$j")" = 1048576 ]
		[[ "$(jq -r ".parts[$i].uuid" <<<"$j")" =~ $uuid_re ]]
		[ "$(stat -c %s "$T/p$i")" -eq 1048576 ]
	done
	# four distinct UUIDs: the pool and each part
	[ "$(jq -r '[.uuid, .parts[].uuid] | unique | length' <<<"$j")" = 4 ]
}

@test "--parts may be given more than once and short options work" {
	PMAD_FAKE_NUMA=4 mkpool "$T/p0" -p "$T/p1" -p "$T/p2" -n 3,2,1 -j
	[ "$(jq -r '[.parts[].path] | join(" ")' <<<"$output")" = "$T/p0 $T/p1 $T/p2" ]
	[ "$(jq -r '[.parts[].numa_node] | join(",")' <<<"$output")" = "3,2,1" ]
}

@test "--node is stored for a one-part pool and shown by inspect" {
	PMAD_FAKE_NUMA=6 mkpool "$T/pool" --node 5
	run --separate-stderr pmactl inspect "$T/pool"
	assert_success
	assert_line --regexp "^ +0 +$T/pool +[0-9a-f-]{36} +1 MiB +5 +no$"
}

@test "--mode is applied to every part" {
	mkpool "$T/p0" --parts "$T/p1" --mode 0640
	[ "$(stat -c %a "$T/p0")" = 640 ]
	[ "$(stat -c %a "$T/p1")" = 640 ]
	mkpool "$T/q" --mode 600
	[ "$(stat -c %a "$T/q")" = 600 ]
}

@test "the default mode is 0660" {
	mkpool "$T/pool"
	[ "$(stat -c %a "$T/pool")" = 660 ]
}

@test "an existing pool is not overwritten without --force" {
	mkpool "$T/pool" -j
	local uuid
	uuid=$(jq -r .uuid <<<"$output")
	run --separate-stderr pmactl create "$T/pool" --size 1M
	assert_failure 1
	assert_output ""
	[[ "$stderr" == "pmactl: cannot create pool '$T/pool': "* ]]
	[[ "$stderr" == *"exists"* ]]
	# untouched
	run --separate-stderr pmactl inspect -j "$T/pool"
	assert_success
	[ "$(jq -r .uuid <<<"$output")" = "$uuid" ]
}

@test "--force overwrites an existing pool with a new one" {
	mkpool "$T/pool" -j
	local uuid
	uuid=$(jq -r .uuid <<<"$output")
	mkpool "$T/pool" --force --size 2M -j
	local new
	new=$(jq -r .uuid <<<"$output")
	[ "$new" != "$uuid" ]
	run --separate-stderr pmactl inspect -j "$T/pool"
	assert_success
	[ "$(jq -r .uuid <<<"$output")" = "$new" ]
	[ "$(jq -r .size <<<"$output")" = 2097152 ]
}

@test "--force overwrites a pool, never an ordinary file" {
	echo hello >"$T/file"
	run --separate-stderr pmactl create "$T/file" --size 1M
	assert_failure 1
	[[ "$stderr" == "pmactl: cannot create pool '$T/file': "* ]]
	run --separate-stderr pmactl create "$T/file" --size 1M -f
	assert_failure 1
	[[ "$stderr" == *"is not a pmad pool part"* ]] || fail "$stderr"
	mkpool "$T/pool"
	mkpool "$T/pool" -f
}

@test "usage error: missing POOL" {
	usage_error "missing POOL argument" --size 1M
}

@test "usage error: extra argument" {
	usage_error "unexpected argument 'extra'" "$T/pool" extra --size 1M
	[ ! -e "$T/pool" ]
}

@test "usage error: missing --size for a file part" {
	usage_error "missing --size (required unless every part is a devdax device)" "$T/pool"
	[ ! -e "$T/pool" ]
}

@test "usage error: invalid sizes" {
	usage_error "invalid size '4X' (try 4G or 512MiB)" "$T/pool" --size 4X
	usage_error "invalid size '' (try 4G or 512MiB)" "$T/pool" --size ''
	usage_error "invalid size '-1M' (try 4G or 512MiB)" "$T/pool" --size -1M
	usage_error "size '99999999999999999999' is too large" "$T/pool" --size 99999999999999999999
	[ ! -e "$T/pool" ]
}

@test "usage error: size too small for a part, or not aligned" {
	usage_error "size '64K' is too small: a part needs at least 128 KiB" "$T/pool" --size 64K
	usage_error "size '0' is too small: a part needs at least 128 KiB" "$T/pool" --size 0
	usage_error "size '200K' is not a multiple of 64 KiB" "$T/pool" --size 200K
	usage_error "size '1000000' is not a multiple of 64 KiB" "$T/pool" --size 1000000
	[ ! -e "$T/pool" ]
}

@test "usage error: invalid modes" {
	usage_error "invalid mode '999' (expected octal such as 0660)" "$T/pool" --size 1M --mode 999
	usage_error "invalid mode 'rw' (expected octal such as 0660)" "$T/pool" --size 1M --mode rw
	usage_error "invalid mode '0x1ff' (expected octal such as 0660)" "$T/pool" --size 1M --mode 0x1ff
	usage_error "invalid mode '-0660' (expected octal such as 0660)" "$T/pool" --size 1M --mode -0660
	usage_error "invalid mode '17777' (expected octal such as 0660)" "$T/pool" --size 1M --mode 17777
	[ ! -e "$T/pool" ]
}

@test "usage error: invalid NUMA nodes" {
	usage_error "invalid NUMA node 'a' (expected 0..1023)" "$T/pool" --size 1M --node a
	usage_error "invalid NUMA node '-1' (expected 0..1023)" "$T/pool" --size 1M --node -1
	usage_error "invalid NUMA node '1024' (expected 0..1023)" "$T/pool" --size 1M --node 1024
	usage_error "invalid NUMA node '' (expected 0..1023)" "$T/pool" --size 1M --node 0,
	[ ! -e "$T/pool" ]
}

@test "usage error: --node list length differs from the number of parts" {
	usage_error "--node names 2 nodes but the pool has 1 part" "$T/p0" --size 1M --node 0,1
	usage_error "--node names 1 node but the pool has 3 parts" "$T/p0" --size 1M --parts "$T/p1,$T/p2" --node 0
	[ ! -e "$T/p0" ]
	[ ! -e "$T/p1" ]
}

@test "usage error: too many parts" {
	local parts="" i
	for i in $(seq 1 16); do
		parts+="${parts:+,}$T/p$i"
	done
	usage_error "too many parts: a pool has at most 16" "$T/p0" --size 1M --parts "$parts"
	[ ! -e "$T/p0" ]
	# 16 parts is the limit and works
	parts=${parts%,*}
	mkpool "$T/p0" --size 128K --parts "$parts" -j
	[ "$(jq -r .nparts <<<"$output")" = 16 ]
}

@test "usage error: a path listed twice or empty" {
	usage_error "part '$T/p1' is listed twice" "$T/p0" --size 1M --parts "$T/p1,$T/p1"
	usage_error "part '$T/p0' is listed twice" "$T/p0" --size 1M --parts "$T/p0"
	usage_error "empty path in --parts" "$T/p0" --size 1M --parts "$T/p1,,$T/p2"
	[ ! -e "$T/p0" ]
}

@test "usage error: an option without its argument" {
	run --separate-stderr pmactl create "$T/pool" --size
	assert_failure 2
	[[ "$stderr" == *"pmactl create: option '--size' requires an argument"* ]]
	[[ "$stderr" == *"try 'pmactl create --help'"* ]]
}

@test "operation error: a part in a missing directory" {
	run --separate-stderr pmactl create "$T/nodir/pool" --size 1M
	assert_failure 1
	assert_output ""
	[[ "$stderr" == "pmactl: cannot create pool '$T/nodir/pool': "* ]]
	[[ "$stderr" == *"No such file or directory"* ]]
}

@test "operation error: the file system is too small" {
	SHM=$(mktemp -d /dev/shm/pmad-cli.XXXXXX)
	mkdir "$SHM/small"
	if ! mount -t tmpfs -o size=1m tmpfs "$SHM/small" 2>/dev/null; then
		skip "cannot mount a small tmpfs (needs root)"
	fi
	run --separate-stderr pmactl create "$SHM/small/pool" --size 4M
	umount "$SHM/small"
	assert_failure 1
	[[ "$stderr" == "pmactl: cannot create pool '$SHM/small/pool': "* ]]
	[[ "$stderr" == *"not enough space"* ]]
}

@test "a pool on tmpfs with PMEM2_FORCE_GRANULARITY=CACHE_LINE is CACHE_LINE" {
	SHM=$(mktemp -d /dev/shm/pmad-cli.XXXXXX)
	PMEM2_FORCE_GRANULARITY=CACHE_LINE mkpool "$SHM/pool" -j
	[ "$(jq -r .granularity <<<"$output")" = CACHE_LINE ]
	run --separate-stderr env PMEM2_FORCE_GRANULARITY=CACHE_LINE pmactl inspect "$SHM/pool"
	assert_success
	assert_line --regexp '^granularity: +CACHE_LINE$'
	refute_output --partial "msync"
}

@test "a pool in a plain file is PAGE, with a note on how to do better" {
	run --separate-stderr env -u PMEM2_FORCE_GRANULARITY pmactl create "$T/pool" --size 1M -j
	assert_success
	[ "$(jq -r .granularity <<<"$output")" = PAGE ]
	run --separate-stderr env -u PMEM2_FORCE_GRANULARITY pmactl inspect "$T/pool"
	assert_success
	assert_line --regexp '^granularity: +PAGE$'
	assert_output --partial "msync"
	assert_output --partial "PMEM2_FORCE_GRANULARITY=CACHE_LINE"
	assert_output --partial "fsdax/devdax"
}

@test "no progress bar when stderr is not a terminal" {
	run --separate-stderr pmactl create "$T/pool" --size 4M
	assert_success
	[ -z "$stderr" ]
}

@test "a progress bar is drawn when stderr is a terminal" {
	command -v script >/dev/null || skip "script(1) not installed"
	run script -qec "pmactl create '$T/pool' --size 64M >/dev/null" /dev/null
	assert_success
	assert_output --partial "creating  ["
	assert_output --partial "100%"
	assert_output --partial "64 MiB/64 MiB"
}

@test "create --regions 2: two equal heap regions per part, fsck clean" {
	run --separate-stderr pmactl create "$T/pool" --size 32M \
		--parts "$T/pool.1" --regions 2
	assert_success
	run --separate-stderr pmactl --json inspect "$T/pool"
	assert_success
	jq -e '[.regions[] | select(.type == "pmalloc")] |
		length == 4 and
		([.[] | select(.part == 0)] | length) == 2 and
		([.[] | select(.part == 1)] | length) == 2 and
		([.[].size] | unique | length) == 1' <<<"$output" >/dev/null ||
		fail "regions: $output"
	# the heap is formatted: every region is walked, nothing found
	run --separate-stderr pmactl --json fsck -v "$T/pool"
	assert_success
	jq -e '.consistent and .errors == 0 and
		all(.findings[]; .code != "heap-unformatted")' \
		<<<"$output" >/dev/null || fail "fsck: $output"
	run --separate-stderr pmactl --json inspect --heap "$T/pool"
	assert_success
	jq -e '.heap.parts == 2 and .heap.regions_per_part == 2 and
		.heap.narenas > 0' <<<"$output" \
		>/dev/null || fail "heap: $output"
}

@test "create --regions 1 is a plain pool: no heap region made" {
	run --separate-stderr pmactl create "$T/pool" --size 1M --regions 1
	assert_success
	run --separate-stderr pmactl --json inspect "$T/pool"
	assert_success
	assert_equal "$(jq '.regions | length' <<<"$output")" 0
}

@test "usage error: --regions not a power of two in 1..16, nothing created" {
	local k
	for k in 3 0 32 -2 2x ""; do
		usage_error "invalid --regions '$k' (a power of two, 1..16)" \
			"$T/pool" --size 32M --regions "$k"
		[ ! -e "$T/pool" ] || fail "--regions '$k' created the pool"
	done
}

@test "operation error: parts too small for --regions 16, nothing left" {
	run --separate-stderr pmactl create "$T/pool" --size 2M --regions 16
	assert_failure 1
	[[ "$stderr" == *"no free space in the pool for a heap of 16 regions"* ]] ||
		fail "stderr: $stderr"
	[ ! -e "$T/pool" ] || fail "the pool was left behind"
}
