#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl dispatcher: help, version, global options, unknown commands.

load helpers

setup() {
	common_setup
}

@test "--help prints the usage and the commands on stdout" {
	run --separate-stderr pmactl --help
	assert_success
	assert_line --index 0 --partial "usage: pmactl"
	assert_output --partial "create"
	assert_output --partial "inspect"
	assert_output --partial "ns"
	[ -z "$stderr" ]
}

@test "-h is --help" {
	run --separate-stderr pmactl -h
	assert_success
	assert_line --index 0 --partial "usage: pmactl"
}

@test "-V and --version print the version" {
	run --separate-stderr pmactl -V
	assert_success
	assert_output --regexp '^pmactl \(pmad\) [0-9]+\.[0-9]+\.[0-9]+'
	run --separate-stderr pmactl --version
	assert_success
	assert_output --regexp '^pmactl \(pmad\) [0-9]+\.[0-9]+\.[0-9]+'
}

@test "no command is a usage error" {
	run --separate-stderr pmactl
	assert_failure 2
	assert_output ""
	[[ "$stderr" == *"no command given"* ]]
	[[ "$stderr" == *"usage: pmactl"* ]]
}

@test "an unknown command is a usage error" {
	run --separate-stderr pmactl frobnicate
	assert_failure 2
	assert_output ""
	[[ "$stderr" == *"'frobnicate' is not a pmactl command"* ]]
	[[ "$stderr" == *"try 'pmactl --help'"* ]]
}

@test "an unknown global option is a usage error" {
	run --separate-stderr pmactl --frobnicate inspect x
	assert_failure 2
	[[ "$stderr" == *"unrecognized option '--frobnicate'"* ]]
	[[ "$stderr" == *"try 'pmactl --help'"* ]]
}

@test "an unknown command option is a usage error naming the command" {
	run --separate-stderr pmactl inspect --frobnicate x
	assert_failure 2
	[[ "$stderr" == *"pmactl inspect: unrecognized option '--frobnicate'"* ]]
	[[ "$stderr" == *"try 'pmactl inspect --help'"* ]]
}

@test "help CMD and CMD --help print the command's usage on stdout" {
	local cmd
	for cmd in create inspect ns; do
		run --separate-stderr pmactl help "$cmd"
		assert_success
		assert_line --index 0 --partial "usage: pmactl $cmd"
		local via_help=$output
		run --separate-stderr pmactl "$cmd" --help
		assert_success
		[ "$output" = "$via_help" ]
		run --separate-stderr pmactl "$cmd" -h
		assert_success
		[ "$output" = "$via_help" ]
	done
}

@test "help alone prints pmactl's usage; help of an unknown command fails" {
	run --separate-stderr pmactl help
	assert_success
	assert_line --index 0 --partial "usage: pmactl"
	run --separate-stderr pmactl help frobnicate
	assert_failure 2
	[[ "$stderr" == *"'frobnicate' is not a pmactl command"* ]]
}

@test "create --help lists its options" {
	run --separate-stderr pmactl help create
	assert_success
	assert_output --partial "--size"
	assert_output --partial "--parts"
	assert_output --partial "--node"
	assert_output --partial "--mode"
	assert_output --partial "--force"
	assert_output --partial "--json"
}

@test "-j works before and after the command name, with equal output" {
	mkpool "$T/pool"
	run --separate-stderr pmactl -j inspect "$T/pool"
	assert_success
	local before
	before=$(jq -S . <<<"$output")
	run --separate-stderr pmactl inspect "$T/pool" -j
	assert_success
	[ "$(jq -S . <<<"$output")" = "$before" ]
	run --separate-stderr pmactl --json inspect --json "$T/pool"
	assert_success
	[ "$(jq -S . <<<"$output")" = "$before" ]
	run jq -r .uuid <<<"$before"
	assert_output --regexp '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
}

@test "-H with -j indents and prints sizes with units, same keys" {
	mkpool "$T/pool"
	run --separate-stderr pmactl -j inspect "$T/pool"
	assert_success
	local plain=$output
	run --separate-stderr pmactl -j -H inspect "$T/pool"
	assert_success
	[ "${#lines[@]}" -gt 1 ]
	[ "$(jq -r .size <<<"$output")" = "1 MiB" ]
	[ "$(jq -r '.parts[0].size' <<<"$output")" = "1 MiB" ]
	[ "$(jq -c '[paths]' <<<"$output")" = "$(jq -c '[paths]' <<<"$plain")" ]
	run --separate-stderr pmactl inspect "$T/pool" --json --human
	assert_success
	[ "$(jq -r .size <<<"$output")" = "1 MiB" ]
}

@test "a failed write to stdout is an error (exit 1)" {
	run --separate-stderr bash -c 'pmactl --help >/dev/full'
	assert_failure 1
	[[ "$stderr" == *"pmactl: cannot write to stdout"* ]]
}
