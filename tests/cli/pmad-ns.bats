#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmad namespaces: pools with "parts: all-nodes" or "parts: [N, ...]" are
# multi-part pools, one part per node on that node's namespace, with the
# namespaces listed in pmad.yaml or discovered (namespaces: auto) through
# lib/ns. Namespaces are faked with directories (PMAD_FAKE_NS) and nodes
# with PMAD_FAKE_NUMA.

load pmad-helpers

setup() {
	pmad_setup
	mkdir "$D/ns0" "$D/ns1"
	export PMAD_FAKE_NUMA=2
}

teardown() {
	pmad_teardown
}

@test "explicit namespaces: one part per node, on each node's namespace" {
	cat >>"$CONF" <<-EOF
	namespaces:
	  - {node: 0, path: $D/ns0}
	  - {node: 1, path: $D/ns1}
	pools:
	  - {name: wide, size: 4M, parts: all-nodes, mode: 0640}
	  - {name: one, size: 4M, parts: [1]}
	  - {name: lost, size: 4M, parts: [0, 2]}
	EOF
	run pmad --check-config --config "$CONF"
	assert_success
	start_pmad
	run pmactl --socket "$S" --json inspect wide
	assert_success
	[ "$(jq -r .nparts <<<"$output")" = 2 ]
	[ "$(jq -r .size <<<"$output")" = 8388608 ]
	[ "$(jq -r '.parts | map(.path) | join(" ")' <<<"$output")" = \
		"$D/ns0/wide.pool $D/ns1/wide.part1" ]
	[ "$(jq -r '.parts | map(.numa_node) | join(",")' <<<"$output")" = 0,1 ]
	[ "$(stat -c %a "$D/ns0/wide.pool")" = 640 ]
	[ "$(stat -c %a "$D/ns1/wide.part1")" = 640 ]
	run pmactl --socket "$S" --json inspect one
	assert_success
	[ "$(jq -r '.parts[0].path' <<<"$output")" = "$D/ns1/one.pool" ]
	[ "$(jq -r '.parts[0].numa_node' <<<"$output")" = 1 ]
	# a node without a namespace: listed as an error that says so
	run pmactl --socket "$S" --json stat
	assert_success
	[ "$(jq -r '.pools[] | select(.name == "lost") | .state' <<<"$output")" = error ]
	[ "$(jq -r '.pools[] | select(.name == "lost") | .error' <<<"$output")" = \
		"pool 'lost': no namespace on node 2 for part 1" ]
	[ "$(jq -r '.daemon.namespaces | map(.source) | join(",")' <<<"$output")" = \
		config,config ]
	[ ! -e "$D/ns0/lost.pool" ] || fail "a part of 'lost' was made"
	grep -q "pool 'lost': no namespace on node 2 for part 1" "$LOG"
	stop_pmad
	# the pool is a plain multi-part pool: offline tools open it
	run pmactl --json inspect --heap "$D/ns0/wide.pool"
	assert_success
	[ "$(jq -r .nparts <<<"$output")" = 2 ]
	# and pmad opens it again, without creating anything
	start_pmad
	run pmactl --socket "$S" --json stat wide
	assert_success
	[ "$(jq -r .pools[0].state <<<"$output")" = open ]
	[ "$(jq -r .pools[0].nparts <<<"$output")" = 2 ]
	! grep -q "created pool 'wide'" "$LOG"
	stop_pmad
}

@test "namespaces: auto discovers fsdax mounts through lib/ns" {
	cat >>"$CONF" <<-EOF
	namespaces: auto
	pools:
	  - {name: spread, size: 4M, parts: all-nodes}
	EOF
	export PMAD_FAKE_NS="1=$D/ns1,0=$D/ns0"
	# pmactl ns sees the same fake namespaces
	run pmactl --json ns
	assert_success
	[ "$(jq -r '.namespaces | map("\(.numa_node)=\(.mount)") | join(" ")' <<<"$output")" = \
		"1=$D/ns1 0=$D/ns0" ] || fail "$output"
	start_pmad
	run pmactl --socket "$S" --json stat
	assert_success
	[ "$(jq -r '.daemon.namespaces | map("\(.node)=\(.path)=\(.source)") | join(" ")' <<<"$output")" = \
		"1=$D/ns1=auto 0=$D/ns0=auto" ]
	run pmactl --socket "$S" --json inspect spread
	assert_success
	[ "$(jq -r '.parts | map("\(.numa_node):\(.path)") | join(" ")' <<<"$output")" = \
		"0:$D/ns0/spread.pool 1:$D/ns1/spread.part1" ]
	grep -q "namespace on node 1: $D/ns1 (discovered)" "$LOG"
	stop_pmad
}

@test "namespaces: auto with none found leaves the pool in error, pmad serves" {
	cat >>"$CONF" <<-EOF
	namespaces: auto
	pools:
	  - {name: spread, size: 4M, parts: all-nodes}
	  - {name: plain, size: 4M}
	EOF
	export PMAD_FAKE_NS=""
	start_pmad
	run pmactl --socket "$S" --json stat
	assert_success
	[ "$(jq -r '.pools[] | select(.name == "spread") | .error' <<<"$output")" = \
		"pool 'spread': parts on all nodes, but no namespace is configured or found" ]
	[ "$(jq -r '.pools[] | select(.name == "plain") | .state' <<<"$output")" = open ]
	stop_pmad
}

@test "a reload places a new pool on a namespace added meanwhile" {
	cat >"$D/base.yaml" <<-EOF
	socket:
	  mode: 0666
	namespaces:
	  - {node: 0, path: $D/ns0}
	EOF
	cp "$D/base.yaml" "$CONF"
	start_pmad
	cat >>"$CONF" <<-EOF
	  - {node: 1, path: $D/ns1}
	pools:
	  - {name: later, size: 4M, parts: [1, 0]}
	EOF
	kill -HUP "$PMAD_PID"
	wait_for grep -q "configuration reloaded" "$LOG"
	run pmactl --socket "$S" --json inspect later
	assert_success
	[ "$(jq -r '.parts | map("\(.numa_node):\(.path)") | join(" ")' <<<"$output")" = \
		"1:$D/ns1/later.pool 0:$D/ns0/later.part1" ]
	stop_pmad
}
