#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl ns: namespace listing; on a machine without PM an empty list is a
# success, in human and JSON form.

load helpers

setup() {
	common_setup
}

have_pm() {
	compgen -G '/sys/bus/nd/devices/namespace*' >/dev/null
}

@test "ns --help" {
	run --separate-stderr pmactl ns --help
	assert_success
	assert_line --index 0 "usage: pmactl ns [--json] [--human]"
}

@test "ns takes no arguments" {
	run --separate-stderr pmactl ns extra
	assert_failure 2
	[[ "$stderr" == *"unexpected argument 'extra'"* ]]
	[[ "$stderr" == *"try 'pmactl ns --help'"* ]]
}

@test "without PM, ns says so and succeeds" {
	have_pm && skip "this machine has PM namespaces"
	run --separate-stderr pmactl ns
	assert_success
	assert_output "no persistent memory namespaces found"
	[ -z "$stderr" ]
}

@test "without PM, ns --json is an empty list" {
	have_pm && skip "this machine has PM namespaces"
	run --separate-stderr pmactl ns --json
	assert_success
	[ "$(jq -c . <<<"$output")" = '{"namespaces":[]}' ]
	run --separate-stderr pmactl -j ns
	assert_success
	[ "$(jq -c . <<<"$output")" = '{"namespaces":[]}' ]
}

@test "ns --json always parses and lists objects with the documented keys" {
	run --separate-stderr pmactl ns --json
	assert_success
	[ "$(jq -r '.namespaces | type' <<<"$output")" = array ]
	local allowed='["bus","region","name","mode","size","numa_node","device","dev_path","mount","mount_options","uuid"]'
	[ "$(jq -c "[.namespaces[] | keys_unsorted - $allowed | length] | add // 0" <<<"$output")" = 0 ]
}

@test "PMAD_FAKE_NUMA does not change the listing" {
	run --separate-stderr pmactl ns --json
	assert_success
	local real=$output
	run --separate-stderr env PMAD_FAKE_NUMA=2 pmactl ns --json
	assert_success
	[ "$(jq -S . <<<"$output")" = "$(jq -S . <<<"$real")" ]
	run --separate-stderr env PMAD_FAKE_NUMA=4:0=1,1=0 pmactl ns
	assert_success
}

@test "an invalid PMAD_FAKE_NUMA is reported" {
	run --separate-stderr env PMAD_FAKE_NUMA=bogus pmactl ns
	assert_failure 1
	assert_output ""
	[[ "$stderr" == "pmactl: invalid PMAD_FAKE_NUMA: "* ]]
}
