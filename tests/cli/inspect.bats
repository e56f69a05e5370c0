#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl inspect: human and JSON output, and every way a pool can be broken
# detected with its own message and exit 1.

load helpers

setup() {
	common_setup
}

teardown() {
	exec 9<&- 2>/dev/null || true
}

# broken ARGS...: pmactl inspect ARGS fails with exit 1 and one message
# line "pmactl: cannot open pool 'P': ..."; the reason is left in $reason
broken() {
	run --separate-stderr pmactl inspect "$@"
	assert_failure 1
	assert_output ""
	[ "$(wc -l <<<"$stderr")" -eq 1 ] || fail "one line expected: $stderr"
	[[ "$stderr" == "pmactl: cannot open pool '${*: -1}': "* ]] ||
		fail "unexpected message: $stderr"
	reason=${stderr#"pmactl: cannot open pool '${*: -1}': "}
	[ -n "$reason" ]
}

@test "human output shows header, granularity, parts and regions" {
	PMAD_FAKE_NUMA=2 mkpool "$T/p0" --parts "$T/p1" --node 0,1 -j
	local uuid
	uuid=$(jq -r .uuid <<<"$output")
	run --separate-stderr pmactl inspect "$T/p0"
	assert_success
	assert_line "pool:         $T/p0"
	assert_line "uuid:         $uuid"
	assert_line "version:      1.0"
	assert_line --regexp '^generation: +[0-9]+ \(header copy [AB](, other copy invalid)?\)$'
	assert_line --regexp '^features: +compat 0x0, incompat 0x0, ro_compat 0x0$'
	assert_line --regexp '^created: +[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC \([0-9]+\)$'
	assert_line --regexp '^granularity: +(PAGE|CACHE_LINE|BYTE)$'
	assert_line --regexp '^size: +2 MiB in 2 parts$'
	assert_line "parts:"
	assert_line --regexp '^  INDEX +PATH +UUID +SIZE +NODE +DEVDAX$'
	assert_line --regexp "^      0  $T/p0 +[0-9a-f-]{36} +1 MiB +0  no$"
	assert_line --regexp "^      1  $T/p1 +[0-9a-f-]{36} +1 MiB +1  no$"
	assert_line --regexp '^regions:'
	[ -z "$stderr" ]
}

@test "JSON has the documented keys and types" {
	mkpool "$T/p0" --parts "$T/p1"
	run --separate-stderr pmactl inspect --json "$T/p0"
	assert_success
	local j=$output
	[ "$(jq -c 'keys_unsorted - ["header_copy", "header_other_valid", "header_damaged"]' <<<"$j")" = \
		'["uuid","version","major","minor","generation","features","create_time","granularity","size","nparts","parts","regions"]' ]
	[ "$(jq -c '.features | keys' <<<"$j")" = '["compat","incompat","ro_compat"]' ]
	[ "$(jq -r '[.major, .minor, .generation, .create_time, .size, .nparts] | map(type) | unique | join(",")' <<<"$j")" = number ]
	[ "$(jq -r '[.uuid, .version, .granularity] | map(type) | unique | join(",")' <<<"$j")" = string ]
	# nodes of plain files are unknown here, and unknown values are omitted
	[ "$(jq -c '[.parts[] | keys_unsorted - ["numa_node"]] | unique' <<<"$j")" = \
		'[["index","path","uuid","size","devdax"]]' ]
	[ "$(jq -r '[.parts[] | .devdax | type] | unique | join(",")' <<<"$j")" = boolean ]
	[ "$(jq -r '.header_copy' <<<"$j")" = A ] || [ "$(jq -r '.header_copy' <<<"$j")" = B ]
	[ "$(jq -r '.header_other_valid | type' <<<"$j")" = boolean ]
}

@test "inspect takes exactly one POOL" {
	run --separate-stderr pmactl inspect
	assert_failure 2
	[[ "$stderr" == *"missing POOL argument"* ]]
	[[ "$stderr" == *"try 'pmactl inspect --help'"* ]]
	run --separate-stderr pmactl inspect a b
	assert_failure 2
	[[ "$stderr" == *"unexpected argument 'b'"* ]]
}

@test "a nonexistent path" {
	broken "$T/none"
	[[ "${reason,,}" == *"no such file"* ]] || fail "$reason"
}

@test "a directory" {
	mkdir "$T/dir"
	broken "$T/dir"
	[[ "$reason" == *"not a pmad pool"* ]] || fail "$reason"
	[[ "$reason" == *"neither a regular file nor a devdax device"* ]] || fail "$reason"
}

@test "every corruption is detected with a distinct message" {
	local -A seen=()
	local r

	# not a pool: random bytes
	head -c 1M /dev/urandom >"$T/random"
	broken "$T/random"
	seen[not_a_pool]=$reason

	# an empty file
	: >"$T/empty"
	broken "$T/empty"
	seen[empty]=$reason

	# wrong version (headers otherwise valid)
	mkpool "$T/ver"
	set_major "$T/ver" 99
	broken "$T/ver"
	seen[version]=$reason

	# checksum mismatch in both header copies
	mkpool "$T/csum"
	flip_byte "$T/csum" $((POOL_HDR_A_OFF + 0x1000))
	flip_byte "$T/csum" $((POOL_HDR_B_OFF + 0x1000))
	broken "$T/csum"
	seen[checksum]=$reason

	# missing part
	mkpool "$T/m0" --parts "$T/m1"
	rm "$T/m1"
	broken "$T/m0"
	seen[missing]=$reason

	# part of another pool copied over ours
	mkpool "$T/a0" --parts "$T/a1"
	mkpool "$T/b0" --parts "$T/b1"
	cp "$T/b1" "$T/a1"
	broken "$T/a0"
	seen[foreign]=$reason

	# parts 1 and 2 swapped
	mkpool "$T/s0" --parts "$T/s1,$T/s2"
	mv "$T/s1" "$T/tmp" && mv "$T/s2" "$T/s1" && mv "$T/tmp" "$T/s2"
	broken "$T/s0"
	seen[swapped]=$reason

	# truncated part
	mkpool "$T/t0" --parts "$T/t1"
	truncate -s 512K "$T/t1"
	broken "$T/t0"
	seen[truncated]=$reason

	for r in "${!seen[@]}"; do
		echo "# $r: ${seen[$r]}" >&3
	done
	local count
	count=$(printf '%s\n' "${seen[@]}" | sort -u | wc -l)
	[ "$count" -eq "${#seen[@]}" ] || fail "messages are not distinct"
}

@test "not a pool" {
	head -c 1M /dev/urandom >"$T/random"
	broken "$T/random"
	[[ "$reason" == *"not a pmad pool"* ]] || fail "$reason"
}

@test "wrong format version" {
	mkpool "$T/pool"
	set_major "$T/pool" 99
	broken "$T/pool"
	[[ "$reason" == *"version"* ]] || fail "$reason"
	[[ "$reason" == *"99"* ]] || fail "$reason"
}

@test "checksum mismatch in both header copies" {
	mkpool "$T/pool"
	flip_byte "$T/pool" $((POOL_HDR_A_OFF + 100))
	flip_byte "$T/pool" $((POOL_HDR_B_OFF + 100))
	broken "$T/pool"
	[[ "$reason" == *"checksum"* ]] || fail "$reason"
}

@test "a corrupt part header is detected" {
	mkpool "$T/p0" --parts "$T/p1"
	flip_byte "$T/p1" 100
	broken "$T/p0"
	[[ "$reason" == *"checksum"* ]] || fail "$reason"
	[[ "$reason" == *"$T/p1"* ]] || fail "$reason"
}

# header_copy_off A|B: offset of that pool header copy
header_copy_off() {
	if [ "$1" = A ]; then echo "$POOL_HDR_A_OFF"; else echo "$POOL_HDR_B_OFF"; fi
}

@test "a corrupt spare header copy is survived" {
	mkpool "$T/pool" -j
	local uuid cur spare
	uuid=$(jq -r .uuid <<<"$output")
	cur=$(jq -r .header_copy <<<"$output")
	spare=A
	[ "$cur" = B ] || spare=B
	flip_byte "$T/pool" $(($(header_copy_off "$spare") + 0x1000))
	run --separate-stderr pmactl inspect -j "$T/pool"
	assert_success
	[ "$(jq -r .uuid <<<"$output")" = "$uuid" ]
	[ "$(jq -r .header_copy <<<"$output")" = "$cur" ]
	[ "$(jq -r .header_other_valid <<<"$output")" = false ]
}

@test "a corrupt current header copy falls back to the other one" {
	mkpool "$T/pool" -j
	local uuid cur
	uuid=$(jq -r .uuid <<<"$output")
	cur=$(jq -r .header_copy <<<"$output")
	if [ "$(jq -r .header_other_valid <<<"$output")" != true ]; then
		skip "a new pool has only one valid header copy (copy $cur)"
	fi
	flip_byte "$T/pool" $(($(header_copy_off "$cur") + 0x1000))
	run --separate-stderr pmactl inspect -j "$T/pool"
	assert_success
	[ "$(jq -r .uuid <<<"$output")" = "$uuid" ]
	[ "$(jq -r .header_copy <<<"$output")" != "$cur" ]
	[ "$(jq -r .header_other_valid <<<"$output")" = false ]
}

@test "missing part" {
	mkpool "$T/p0" --parts "$T/p1,$T/p2"
	rm "$T/p2"
	broken "$T/p0"
	[[ "$reason" == *"$T/p2"* ]] || fail "$reason"
	[[ "$reason" == *"missing"* || "$reason" == *"No such file"* ]] || fail "$reason"
}

@test "part from another pool" {
	mkpool "$T/a0" --parts "$T/a1"
	mkpool "$T/b0" --parts "$T/b1"
	cp "$T/b1" "$T/a1"
	broken "$T/a0"
	[[ "$reason" == *"another pool"* ]] || fail "$reason"
}

@test "part 0 of another pool is not accepted as a part" {
	mkpool "$T/a0" --parts "$T/a1"
	mkpool "$T/b0"
	cp "$T/b0" "$T/a1"
	broken "$T/a0"
}

@test "swapped parts" {
	mkpool "$T/p0" --parts "$T/p1,$T/p2"
	mv "$T/p1" "$T/tmp" && mv "$T/p2" "$T/p1" && mv "$T/tmp" "$T/p2"
	broken "$T/p0"
	[[ "$reason" != *"another pool"* ]] || fail "$reason"
}

@test "truncated files" {
	mkpool "$T/pool"
	truncate -s 256K "$T/pool"
	broken "$T/pool"
	local r0=$reason
	mkpool "$T/p0" --parts "$T/p1"
	truncate -s 512K "$T/p1"
	broken "$T/p0"
	[[ "$reason" == *"$T/p1"* ]] || fail "$reason"
	# a file cut inside its headers
	mkpool "$T/short"
	truncate -s 4K "$T/short"
	broken "$T/short"
	[ -n "$r0" ]
}

@test "a read-only pool can be inspected" {
	mkpool "$T/p0" --parts "$T/p1" -j
	local created=$output
	chmod 0444 "$T/p0" "$T/p1"
	run --separate-stderr pmactl inspect -j "$T/p0"
	assert_success
	[ "$(jq -S . <<<"$output")" = "$(jq -S . <<<"$created")" ]
}

@test "a pool locked by a writer is reported in use" {
	mkpool "$T/pool"
	# hold an exclusive flock on a separate open file description
	exec 9<"$T/pool"
	flock -x -n 9
	broken "$T/pool"
	[[ "$reason" == *"in use"* || "$reason" == *"locked"* ]] || fail "$reason"
	exec 9<&-
	run --separate-stderr pmactl inspect "$T/pool"
	assert_success
}

@test "a shared lock (another reader) does not block inspect" {
	mkpool "$T/pool"
	exec 9<"$T/pool"
	flock -s -n 9
	run --separate-stderr pmactl inspect "$T/pool"
	assert_success
	exec 9<&-
}
