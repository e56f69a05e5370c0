#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl morph (issue 19): a morph pass turns mostly free slabs into slabs
# of another class, their live blocks intact, fsck clean, new-class
# blocks then come from the morphed slabs; the dry run makes the same
# choices and changes nothing; pmactl inspect --slabs shows the slabs and
# the mixed ones; bad input (old layout, no such class, bad percentage,
# not a pool, no heap, pool in use, no pmad, usage) fails with a clear error
# and leaves the file as it was.

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

# morphable POOL [LAYOUT]: 64 MiB, 30000 blocks of 120 B (class 128 in
# every layout, 60 slabs of 508 blocks) written with a pattern, 9 of 10 freed: every slab
# is about 10% used
morphable() {
	mkpool_size "$1" 64M
	run --separate-stderr "$WORKLOAD" --frag "$1" 30000 120 10 ${2:+"$2"}
	assert_success
}

# intact_and_clean POOL: morphable's 3000 blocks hold their pattern and
# fsck finds nothing
intact_and_clean() {
	run --separate-stderr "$WORKLOAD" --frag-check "$1"
	assert_success
	assert_output "3000 blocks intact"
	run --separate-stderr pmactl fsck "$1"
	assert_success
}

@test "morph --class moves 10%-used slabs, old blocks stay intact" {
	morphable "$T/p"
	run --separate-stderr pmactl morph --json --class 192 "$T/p"
	assert_success
	jq -e '.dry_run == false and .used_pct == 20' <<<"$output"
	jq -e '.candidates == 60 and .slabs_morphed == 60' <<<"$output"
	jq -e '.moves | length == 1' <<<"$output"
	jq -e '.moves[0] | .from_block_size == 128 and .to_block_size == 192 and .slabs == 60' <<<"$output"
	# 3000 live old blocks of 128 B stay where they are
	jq -e '.live_bytes == 3000 * 128 and .moves[0].live_bytes == 3000 * 128' <<<"$output"
	jq -e '.bytes_morphed == 60 * 65536 and .free_bytes > 0' <<<"$output"
	intact_and_clean "$T/p"
	# the slabs are mixed: 128 B old blocks under 192 B blocks
	run --separate-stderr pmactl inspect --slabs --json "$T/p"
	assert_success
	jq -e '.slabs.mixed_count == 60' <<<"$output"
	jq -e '[.slabs.mixed[] | select(.old_block_size == 128 and .block_size == 192)] | length == 60' <<<"$output"
	jq -e '[.slabs.mixed[].old_live_blocks] | add == 3000' <<<"$output"
	jq -e '.slabs.classes == [{"part":0,"arena":0,"block_size":192,"slabs":60,"used_blocks":0,"free_blocks":.slabs.classes[0].free_blocks}]' <<<"$output"
	local free
	free=$(jq '.slabs.classes[0].free_blocks' <<<"$output")
	# blocks of the new class come from the morphed slabs (no new slab),
	# around the old ones: these are written with 0xa5, the old blocks
	# must keep their pattern
	run --separate-stderr "$WORKLOAD" --fill "$T/p" 3000 190
	assert_success
	run --separate-stderr pmactl inspect --slabs --json "$T/p"
	assert_success
	jq -e '.slabs.classes | length == 1' <<<"$output"
	jq -e ".slabs.classes[0] | .slabs == 60 and .used_blocks == 3000 and .free_blocks == $free - 3000" <<<"$output"
	intact_and_clean "$T/p"
	# nothing is left to morph into 192 B
	run --separate-stderr pmactl morph --json --class 192 "$T/p"
	assert_success
	jq -e '.candidates == 0 and .slabs_morphed == 0' <<<"$output"
}

@test "morph --dry-run reports the pass and changes nothing" {
	morphable "$T/p"
	cp "$T/p" "$T/copy"
	run --separate-stderr pmactl morph --dry-run --json --class 192 "$T/p"
	assert_success
	local plan=$output
	jq -e '.dry_run == true and .slabs_morphed == 60' <<<"$plan"
	cmp "$T/p" "$T/copy" || fail "the dry run changed the pool"
	run --separate-stderr pmactl morph -n "$T/p"
	assert_success
	cmp "$T/p" "$T/copy" || fail "the dry run changed the pool"
	run --separate-stderr pmactl morph --json --class 192 "$T/p"
	assert_success
	jq -e '.dry_run == false' <<<"$output"
	# the plan said what the pass then did
	for k in candidates slabs_morphed bytes_morphed live_bytes \
		free_bytes moves; do
		[ "$(jq -c ".$k" <<<"$plan")" = "$(jq -c ".$k" <<<"$output")" ] ||
			fail "$k: plan $(jq -c ".$k" <<<"$plan"), did $(jq -c ".$k" <<<"$output")"
	done
}

@test "morph without --class moves free space to the class with least" {
	morphable "$T/p"
	# a second class: 200 blocks of 190 B (192 B class), mostly used
	run --separate-stderr "$WORKLOAD" --fill "$T/p" 200 190
	assert_success
	run --separate-stderr pmactl morph --dry-run --json "$T/p"
	assert_success
	local plan=$output
	run --separate-stderr pmactl morph --json "$T/p"
	assert_success
	[ "$(jq -c .moves <<<"$plan")" = "$(jq -c .moves <<<"$output")" ] ||
		fail "plan $(jq -c .moves <<<"$plan"), did $(jq -c .moves <<<"$output")"
	jq -e '.moves | length == 1' <<<"$output"
	jq -e '.moves[0] | .from_block_size == 128 and .to_block_size == 192' <<<"$output"
	# about half: once 192 B has as many free bytes as 128 B keeps, stop
	jq -e '.slabs_morphed > 10 and .slabs_morphed < 50' <<<"$output"
	local n
	n=$(jq .slabs_morphed <<<"$output")
	run --separate-stderr pmactl inspect --slabs --json "$T/p"
	assert_success
	jq -e ".slabs.mixed_count == $n" <<<"$output"
	jq -e ".slabs.classes | map({(.block_size|tostring): .slabs}) | add == {\"128\": $((60 - n)), \"192\": $((1 + n))}" <<<"$output"
	# 128 B keeps more free bytes than 192 B got... and the reverse holds
	# for one slab more: a second pass finds nothing to move
	run --separate-stderr pmactl morph --json "$T/p"
	assert_success
	jq -e '.slabs_morphed == 0' <<<"$output"
	intact_and_clean "$T/p"
}

@test "morph of a heap of one class has no target" {
	morphable "$T/p"
	cp "$T/p" "$T/copy"
	run --separate-stderr pmactl morph "$T/p"
	assert_success
	assert_line --regexp '^0 slabs morphed \(60 candidates with <= 20% used\)$'
	run --separate-stderr "$WORKLOAD" --frag-check "$T/p"
	assert_success
}

@test "morph --used sets the threshold" {
	morphable "$T/p"
	# a 128 B slab has 508 blocks: 59 full slabs with 50 or 51 live
	# (9.8-10.04%), the last one 2 live of the 28 it got
	run --separate-stderr pmactl morph --json --used 5 --class 192 "$T/p"
	assert_success
	jq -e '.used_pct == 5 and .candidates == 1 and .slabs_morphed == 1' <<<"$output"
	jq -e '.live_bytes == 2 * 128' <<<"$output"
	run --separate-stderr pmactl morph --json -u 11 -c 192 "$T/p"
	assert_success
	jq -e '.used_pct == 11 and .candidates == 59 and .slabs_morphed == 59' <<<"$output"
}

@test "morph prints a human summary" {
	morphable "$T/p"
	run --separate-stderr pmactl morph --class 192 "$T/p"
	assert_success
	assert_line '60 slabs morphed (60 candidates with <= 20% used)'
	assert_line --regexp '^  128 B -> 192 B  60 slabs, 375 KiB live kept in place, [0-9.]+ MiB free$'
	assert_line 'bytes morphed   3.75 MiB'
	run --separate-stderr pmactl morph --class 1K --dry-run "$T/p"
	assert_success
	assert_line --regexp '^would be: 0 slabs morphed'
}

@test "inspect --slabs: slabs per class, no mixed slab on a fresh heap" {
	morphable "$T/p"
	run --separate-stderr pmactl inspect --slabs --json "$T/p"
	assert_success
	# 60 slabs of 508 blocks of 128 B, 3000 of them live
	jq -e '.slabs.classes == [{"part":0,"arena":0,"block_size":128,"slabs":60,"used_blocks":3000,"free_blocks":27480}]' <<<"$output"
	jq -e '.slabs.mixed_count == 0 and .slabs.mixed == []' <<<"$output"
	run --separate-stderr pmactl inspect --slabs "$T/p"
	assert_success
	assert_line 'slabs by class:'
	assert_line --regexp '^ +0 +0 +128 B +60 +3000 +27480$'
	assert_line 'mixed slabs: 0'
	run --separate-stderr pmactl morph --class 192 "$T/p"
	assert_success
	run --separate-stderr pmactl inspect --slabs "$T/p"
	assert_success
	assert_line 'mixed slabs: 60'
	assert_line --regexp '^ +PART +ARENA +OFFSET +OLD BLOCK +BLOCK +OLD LIVE +USED +FREE$'
	assert_line --regexp '^ +0 +0 +0x[0-9a-f]+ +128 B +192 B +5[01] +0 +[0-9]+$'
	run --separate-stderr pmactl inspect --slabs --json --human "$T/p"
	assert_success
	jq -e '.slabs.mixed[0].old_block_size == "128 B"' <<<"$output"
	# a pool without a heap has no slabs to show
	mkpool "$T/e"
	run --separate-stderr pmactl inspect --slabs "$T/e"
	assert_failure 1
	[[ "$stderr" == *"cannot open the heap of '$T/e'"* ]] || fail "$stderr"
}

@test "morph refuses a heap of layout 8 and leaves it alone" {
	morphable "$T/p" 8
	cp "$T/p" "$T/copy"
	run --separate-stderr pmactl morph --class 192 "$T/p"
	assert_failure 1
	[[ "$stderr" == *"morph pass over '$T/p' failed: heap layout version 8 cannot morph slabs (version 9 and later can"* ]] ||
		fail "stderr: $stderr"
	cmp "$T/p" "$T/copy"
	run --separate-stderr pmactl morph --dry-run "$T/p"
	assert_failure 1
	cmp "$T/p" "$T/copy"
}

@test "morph refuses a size that is no class and leaves the pool alone" {
	morphable "$T/p"
	cp "$T/p" "$T/copy"
	run --separate-stderr pmactl morph --class 100 "$T/p"
	assert_failure 1
	[[ "$stderr" == *"no size class of 100 bytes (the nearest are 96 and 112"* ]] ||
		fail "stderr: $stderr"
	cmp "$T/p" "$T/copy"
	run --separate-stderr pmactl morph --class 1G "$T/p"
	assert_failure 1
	[[ "$stderr" == *"no size class of 1073741824 bytes"* ]] ||
		fail "stderr: $stderr"
	cmp "$T/p" "$T/copy"
	# layout 10 has no 16-byte steps
	morphable "$T/q" 10
	cp "$T/q" "$T/copy"
	run --separate-stderr pmactl morph --class 144 "$T/q"
	assert_failure 1
	[[ "$stderr" == *"no size class of 144 bytes (the nearest are 128 and 192"* ]] ||
		fail "stderr: $stderr"
	cmp "$T/q" "$T/copy"
}

@test "morph refuses a bad percentage or size (usage, exit 2)" {
	morphable "$T/p"
	cp "$T/p" "$T/copy"
	local u
	for u in 0 101 -5 abc 20x ""; do
		run --separate-stderr pmactl morph --used "$u" "$T/p"
		assert_failure 2
		[[ "$stderr" == *"--used '$u' is not a percentage from 1 to 100"* ]] ||
			fail "--used $u: $stderr"
	done
	run --separate-stderr pmactl morph --class abc "$T/p"
	assert_failure 2
	[[ "$stderr" == *"--class 'abc' is not a block size"* ]] || fail "$stderr"
	run --separate-stderr pmactl morph --class 0 "$T/p"
	assert_failure 2
	cmp "$T/p" "$T/copy"
}

@test "morph refuses a file that is not a pool and leaves it alone" {
	head -c 1048576 /dev/urandom >"$T/junk"
	cp "$T/junk" "$T/copy"
	run --separate-stderr pmactl morph "$T/junk"
	assert_failure 1
	[[ "$stderr" == *"pmactl: cannot open the heap of '$T/junk'"* ]] ||
		fail "stderr: $stderr"
	cmp "$T/junk" "$T/copy"
	mkpool "$T/e"
	cp "$T/e" "$T/ecopy"
	run --separate-stderr pmactl morph "$T/e"
	assert_failure 1
	[[ "$stderr" == *"cannot open the heap of '$T/e'"* ]] || fail "$stderr"
	cmp "$T/e" "$T/ecopy"
}

@test "morph refuses a pool in use" {
	mkpool_size "$T/p" 8M
	local i
	"$WORKLOAD" --stress "$T/p" 60s >"$T/hold.out" 2>"$T/hold.err" 3>&- &
	HOLD_PID=$!
	for ((i = 0; i < 500; i++)); do
		grep -q running "$T/hold.out" 2>/dev/null && break
		sleep 0.01
	done
	grep -q running "$T/hold.out" || fail "writer: $(cat "$T/hold.err")"
	run --separate-stderr pmactl morph "$T/p"
	assert_failure 1
	[[ "$stderr" == *"cannot open the heap of '$T/p'"* ]] ||
		fail "stderr: $stderr"
	[[ "$stderr" == *"in use"* || "$stderr" == *"lock"* ]] ||
		fail "stderr does not say the pool is in use: $stderr"
	run --separate-stderr pmactl morph --dry-run "$T/p"
	assert_failure 1
}

@test "morph through a socket nobody serves fails clearly" {
	run --separate-stderr pmactl --socket "$T/none.sock" morph f
	assert_failure 1
	[[ "$stderr" == *"$T/none.sock"* ]] || fail "stderr: $stderr"
}

@test "morph usage errors exit 2" {
	run --separate-stderr pmactl morph
	assert_failure 2
	[[ "$stderr" == *"missing POOL argument"* ]] || fail "$stderr"
	run --separate-stderr pmactl morph a b
	assert_failure 2
	run --separate-stderr pmactl morph --bogus x
	assert_failure 2
	run --separate-stderr pmactl morph --help
	assert_success
	assert_output --partial "usage: pmactl morph [--class SIZE] [--used PCT]"
	run --separate-stderr pmactl help morph
	assert_success
	assert_output --partial "usage: pmactl morph"
	run --separate-stderr pmactl --help
	assert_success
	assert_output --partial "morph      morph mostly free slabs"
}

# one thread fills part 0 only (local-first); the pass walks both heaps
@test "morph of a pool of two parts" {
	run --separate-stderr pmactl create "$T/p" --size 64M --parts "$T/p1"
	assert_success
	run --separate-stderr "$WORKLOAD" --frag "$T/p" 30000 120 10
	assert_success
	run --separate-stderr pmactl inspect --slabs --json "$T/p"
	assert_success
	local slabs
	slabs=$(jq '[.slabs.classes[].slabs] | add' <<<"$output")
	run --separate-stderr pmactl morph --json --class 192 "$T/p"
	assert_success
	jq -e ".slabs_morphed == $slabs" <<<"$output"
	run --separate-stderr pmactl inspect --slabs --json "$T/p"
	assert_success
	jq -e ".slabs.mixed_count == $slabs" <<<"$output"
	jq -e "$slabs == 60 and ([.slabs.mixed[].part] | unique) == [0]" <<<"$output"
	intact_and_clean "$T/p"
}
