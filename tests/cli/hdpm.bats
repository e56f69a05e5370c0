#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl log --files, inspect --files and gc: the HDPM file system of a
# pool (made by tests/tools/hdpm-fill, so no FUSE is needed): exact page
# log counts with live and dead bytes, JSON and text, gc reclaiming the
# logs, and the errors.

load helpers

setup() {
	pmalloc_setup
	FILL="${PMAD_BUILDDIR:?set PMAD_BUILDDIR}/tests/tools/hdpm-fill"
	[ -x "$FILL" ] || fail "no $FILL: build it with make check"
	P="$T/p"
	mkpool_size "$P" 16M
}

@test "log --files: per file and page, entries, live and dead bytes" {
	run "$FILL" "$P"
	assert_success
	run --separate-stderr pmactl log --files --json "$P"
	assert_success
	[ "$(jq .log_chunks <<<"$output")" = 2 ]
	[ "$(jq .log_entries <<<"$output")" = 3 ]
	[ "$(jq .live_bytes <<<"$output")" = 164 ]
	[ "$(jq .dead_bytes <<<"$output")" = 50 ]
	[ "$(jq -r '.files[0].path' <<<"$output")" = /f ]
	[ "$(jq '.files[0].page_logs | length' <<<"$output")" = 2 ]
	[ "$(jq '.files[0].page_logs[0].page' <<<"$output")" = 0 ]
	[ "$(jq '.files[0].page_logs[0].live_bytes' <<<"$output")" = 100 ]
	[ "$(jq '.files[0].page_logs[0].dead_bytes' <<<"$output")" = 50 ]
	[ "$(jq '.files[0].page_logs[1].live_bytes' <<<"$output")" = 64 ]
	jq -e '.files[0].page_logs[0].log_offset | startswith("0x")' \
		<<<"$output" >/dev/null
	run --separate-stderr pmactl log --files "$P"
	assert_success
	assert_output --partial "2 page logs in 1 file"
	assert_output --partial "FILE"
	assert_line --regexp '^/f +0 +2 '
	# --human keeps the keys, with units
	run --separate-stderr pmactl log --files --json --human "$P"
	assert_success
	[ "$(jq -r .live_bytes <<<"$output")" = "164 B" ]
}

@test "inspect --files lists the file system and its files" {
	run "$FILL" "$P"
	assert_success
	run --separate-stderr pmactl inspect --files --json "$P"
	assert_success
	[ "$(jq .hdpm.file_count <<<"$output")" = 1 ]
	[ "$(jq .hdpm.dir_count <<<"$output")" = 2 ]
	[ "$(jq .hdpm.inodes_used <<<"$output")" = 3 ]
	[ "$(jq .hdpm.needs_recovery <<<"$output")" = false ]
	[ "$(jq '.hdpm.files[0].size' <<<"$output")" = 8192 ]
	[ "$(jq '.hdpm.files[0].pages' <<<"$output")" = 2 ]
	[ "$(jq '.hdpm.files[0].log_pages' <<<"$output")" = 2 ]
	# the pool's own keys are still there
	jq -e .parts <<<"$output" >/dev/null
	run --separate-stderr pmactl inspect --files "$P"
	assert_success
	assert_output --partial "files (HDPM):"
	assert_output --partial "3 of 4096 used (1 files, 2 directories)"
	assert_line --regexp '^  /f +3 +8 KiB +2 +2 '
}

@test "gc merges every page log and reports the bytes reclaimed" {
	run "$FILL" "$P"
	assert_success
	run --separate-stderr pmactl gc --json "$P"
	assert_success
	[ "$(jq .pages_merged <<<"$output")" = 2 ]
	[ "$(jq .log_bytes_after <<<"$output")" = 0 ]
	[ "$(jq .dead_bytes_before <<<"$output")" = 50 ]
	# the logs are inside the page objects (no overflow chunk): each
	# merge frees a page object as big as the one it makes
	[ "$(jq .bytes_reclaimed <<<"$output")" = 0 ]
	[ "$(jq .heap_used_before <<<"$output")" = "$(jq .heap_used_after <<<"$output")" ]
	run --separate-stderr pmactl log --files --json "$P"
	[ "$(jq .log_chunks <<<"$output")" = 0 ]
	[ "$(jq '.files[0].size' <<<"$output")" = 8192 ]
	run --separate-stderr pmactl gc "$P"
	assert_success
	assert_output --partial "merged 0 page logs"
	assert_output --partial "reclaimed 0 B"
}

@test "a cow-only file system has no page logs" {
	run "$FILL" "$P" cow
	assert_success
	run --separate-stderr pmactl log --files --json "$P"
	assert_success
	[ "$(jq .log_chunks <<<"$output")" = 0 ]
	[ "$(jq .file_bytes <<<"$output")" = 8192 ]
}

@test "gc, log --files and inspect --files: errors and usage" {
	# a pool without a heap
	run --separate-stderr pmactl gc "$P"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"cannot open the heap of '$P'"* ]]
	# a heap whose root is something else: reported, nothing changed
	run "$WORKLOAD" "$P" 3 64
	assert_success
	local before
	before=$(md5sum <"$P")
	run --separate-stderr pmactl gc "$P"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"no HDPM file system in '$P'"* ]]
	run --separate-stderr pmactl log --files "$P"
	[ "$status" -eq 1 ]
	run --separate-stderr pmactl inspect --files "$P"
	[ "$status" -eq 1 ]
	[ "$(md5sum <"$P")" = "$before" ]
	run --separate-stderr pmactl gc "$T/none"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"cannot open the heap of '$T/none'"* ]]
	run --separate-stderr pmactl gc
	[ "$status" -eq 2 ]
	run --separate-stderr pmactl gc "$P" extra
	[ "$status" -eq 2 ]
	run --separate-stderr pmactl log --files --arena 0 "$P"
	[ "$status" -eq 2 ]
	run pmactl gc --help
	assert_success
	assert_output --partial "usage: pmactl gc"
	run pmactl help
	assert_output --partial "gc "
}

@test "hdpmbench --filebench: a row per personality and mode with flowop latencies" {
	local b="$PMAD_BUILDDIR/bench/hdpmbench"
	[ -x "$b" ] || fail "no $b: build it with make"
	run --separate-stderr "$b" --dir "$T" --filebench all --threads 1 \
		--scale 100 --loops 20 --json
	assert_success
	# 4 personalities x (hybrid, cow, ratio)
	[ "$(wc -l <<<"$output")" = 12 ]
	[ "$(jq -s 'map(select(has("mode") and .ops > 0 and .ops_per_sec > 0
		and .lat_median_ns > 0 and .lat_p99_ns >= .lat_median_ns
		and has("pm_bytes_per_user_byte"))) | length' <<<"$output")" = 8 ]
}

@test "hdpmbench: one row per phase and mode, hybrid writes less PM at 64 B" {
	local b="$PMAD_BUILDDIR/bench/hdpmbench"
	[ -x "$b" ] || fail "no $b: build it with make"
	run --separate-stderr "$b" --dir "$T" --set-size 1M --files 4 \
		--ops 2000 --json
	assert_success
	[ "$(wc -l <<<"$output")" = 12 ]
	# every row has the issue's keys
	[ "$(jq -s 'map(select(has("bench") and has("mode") and has("threads")
		and has("ops_per_sec") and has("lat_median_ns") and
		has("lat_p99_ns") and has("pm_bytes_per_user_byte"))) | length' \
		<<<"$output")" = 12 ]
	local hy cow
	hy=$(jq -s '.[] | select(.bench == "overwrite-64" and .mode == "hybrid")
		| .pm_bytes_per_user_byte' <<<"$output")
	cow=$(jq -s '.[] | select(.bench == "overwrite-64" and .mode == "cow")
		| .pm_bytes_per_user_byte' <<<"$output")
	# a 64 B CoW flushes the whole 4 KiB page: 64 lines of 64 B at least
	jq -n --argjson h "$hy" --argjson c "$cow" -e '$c >= 64 and $h < $c / 4' \
		>/dev/null || fail "hybrid $hy, cow $cow PM bytes per user byte"
	[ -z "$(ls -A "$T" | grep hdpmbench)" ] # its pools are removed
	run "$b" --mode nope
	[ "$status" -eq 2 ]
}
