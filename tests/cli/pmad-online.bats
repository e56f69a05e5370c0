#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# pmactl online: with --socket (or $PMAD_SOCKET) create, list, inspect and
# stat reach the pools pmad serves through the pmad seam, and print what
# the offline commands print for the same pool; stat in text, JSON and
# node_exporter textfile format; offline commands on a pool pmad holds
# name pmad instead of waiting.

load pmad-helpers

setup() {
	pmad_setup
}

teardown() {
	pmad_teardown
}

@test "create, list, inspect and stat go to pmad with --socket" {
	start_pmad
	run --separate-stderr pmactl --socket "$S" create db --size 8M
	assert_success
	assert_line --regexp "^pool: +$SD/db.pool\$"
	assert_line --regexp '^size: +8 MiB in 1 part$'
	[ "$(stat -c %a "$SD/db.pool")" = 600 ]
	run pmactl --socket "$S" list
	assert_success
	assert_line --regexp "^db +8 MiB +root +root +0600 +open +0 +$SD/db.pool\$"
	run pmactl --socket "$S" --json inspect db
	assert_success
	[ "$(jq -r .parts[0].path <<<"$output")" = "$SD/db.pool" ]
	[ "$(jq -r .regions[0].type <<<"$output")" = pmalloc ]
	[ "$(jq -r 'has("heap")' <<<"$output")" = false ]
	run pmactl --socket "$S" --json inspect --heap db
	assert_success
	[ "$(jq -r .heap.narenas <<<"$output")" -ge 1 ]
	# $PMAD_SOCKET does what --socket does
	PMAD_SOCKET="$S" run pmactl --json stat db
	assert_success
	[ "$(jq -r '.pools | length' <<<"$output")" = 1 ]
	[ "$(jq -r .pools[0].name <<<"$output")" = db ]
	[ "$(jq -r .pools[0].size <<<"$output")" = 8388608 ]
	stop_pmad
}

@test "a pool looks the same through pmad and offline (text and JSON)" {
	start_pmad
	run pmactl --socket "$S" create same --size 4M --mode 0640
	assert_success
	pmactl --socket "$S" inspect --heap same >"$D/online.txt"
	pmactl --socket "$S" --json inspect --heap same >"$D/online.json"
	pmactl --socket "$S" --json --human inspect same >"$D/online-h.json"
	stop_pmad
	pmactl inspect --heap "$SD/same.pool" >"$D/offline.txt"
	pmactl --json inspect --heap "$SD/same.pool" >"$D/offline.json"
	pmactl --json --human inspect "$SD/same.pool" >"$D/offline-h.json"
	diff -u "$D/offline.txt" "$D/online.txt" || fail "text differs"
	# every offline key is there with the same value (pmad adds its own:
	# name, owner, mode, state, clients, source)
	jq -e --slurpfile on "$D/online.json" \
		'. as $off | [paths(scalars)] | all(. as $p |
		  $off | getpath($p) == ($on[0] | getpath($p)))' \
		"$D/offline.json" >/dev/null || fail "JSON differs"
	[ "$(jq -r .size "$D/online-h.json")" = "4 MiB" ]
	[ "$(jq -r .size "$D/offline-h.json")" = "4 MiB" ]
	[ "$(jq -r .mode "$D/online.json")" = 0640 ]
}

@test "offline commands on a pool pmad holds name pmad and do not wait" {
	start_pmad
	run pmactl --socket "$S" create held --size 4M
	assert_success
	run --separate-stderr timeout 10 pmactl inspect "$SD/held.pool"
	assert_failure 1
	assert_equal "$stderr" "pmactl: cannot open pool '$SD/held.pool': '$SD/held.pool': pool is held by pmad (pid $PMAD_PID); use --socket"
	run --separate-stderr timeout 10 pmactl stat "$SD/held.pool"
	assert_failure 1
	[[ "$stderr" == *"held by pmad (pid $PMAD_PID); use --socket" ]] ||
		fail "$stderr"
	run --separate-stderr timeout 10 pmactl create "$SD/held.pool" \
		--size 4M --force
	assert_failure 1
	[[ "$stderr" == *"held"* || "$stderr" == *"in use"* ]] || fail "$stderr"
	stop_pmad
	# once pmad is gone the same commands work
	run pmactl --json stat "$SD/held.pool"
	assert_success
	[ "$(jq -r .pools[0].state <<<"$output")" = closed ]
	[ "$(jq -r .pools[0].used <<<"$output")" = 0 ]
}

@test "through pmad, paths and --parts are refused with a reason" {
	start_pmad
	run --separate-stderr pmactl --socket "$S" inspect "$SD/x.pool"
	assert_failure 2
	[[ "$stderr" == *"is a path, but through pmad"* ]] || fail "$stderr"
	[[ "$stderr" == *"try 'pmactl inspect --help'"* ]] || fail "$stderr"
	run --separate-stderr pmactl --socket "$S" create a --size 4M \
		--parts "$D/p1"
	assert_failure 2
	[[ "$stderr" == *"--parts, --node and --force are not available through pmad"* ]] ||
		fail "$stderr"
	run --separate-stderr pmactl --socket "$S" create a
	assert_failure 2
	run --separate-stderr pmactl --socket "$S" create b --size 4M
	assert_success
	# --files goes through pmad (pmad-files.bats): b has no file system
	run --separate-stderr pmactl --socket "$S" inspect --files b
	assert_failure 1
	[[ "$stderr" == *"pool 'b' holds no HDPM file system (ENODATA)" ]] ||
		fail "$stderr"
	run --separate-stderr pmactl --socket "$S" stat nope
	assert_failure 1
	assert_equal "$stderr" "pmactl: stat nope: no pool 'nope' (ENOENT)"
	run --separate-stderr pmactl --socket "$S" create b --size 4M
	assert_failure 1
	assert_equal "$stderr" "pmactl: create b: pool 'b' already exists (EEXIST)"
	stop_pmad
	run --separate-stderr pmactl --socket "$D/none.sock" list
	assert_failure 1
	[[ "$stderr" == *"cannot reach pmad"* ]] || fail "$stderr"
	run --separate-stderr pmactl stat
	assert_failure 1
	[[ "$stderr" == *"which pool?"* ]] || fail "$stderr"
	run pmactl stat --help
	assert_success
	assert_line --index 0 "usage: pmactl --socket PATH stat [--json|--prometheus] [NAME]"
	run pmactl list --help
	assert_success
	assert_line --partial 'sizes with units; --json --human'
}

@test "list --human: sizes with units in text and JSON, online only" {
	start_pmad
	run pmactl --socket "$S" create big --size 1536M
	assert_success
	run pmactl --socket "$S" create small --size 4M
	assert_success
	run --separate-stderr pmactl --socket "$S" list --human
	assert_success
	assert_line --regexp '^big +1.5 GiB +root +root +0600 +open +0 '
	assert_line --regexp '^small +4 MiB +root +root +0600 +open +0 '
	# $PMAD_SOCKET: list always goes to pmad
	PMAD_SOCKET="$S" run --separate-stderr pmactl list --human
	assert_success
	assert_line --regexp '^big +1.5 GiB '
	run --separate-stderr pmactl --socket "$S" --json --human list
	assert_success
	[ "$(jq -r '.pools[] | select(.name == "big") | .size' <<<"$output")" = "1.5 GiB" ]
	[ "$(jq -r '.pools[] | select(.name == "small") | .size' <<<"$output")" = "4 MiB" ]
	# the key keeps its place; the other keys are the same as without -H
	local plain
	plain=$(pmactl --socket "$S" --json list)
	[ "$(jq -c '.pools[0] | keys_unsorted' <<<"$output")" = \
		"$(jq -c '.pools[0] | keys_unsorted' <<<"$plain")" ]
	[ "$(jq '.pools[] | select(.name == "big") | .size' <<<"$plain")" = 1610612736 ]
	stop_pmad
}

# prometheus_check FILE: node_exporter's textfile format, strictly: HELP
# and TYPE once per metric and before its samples, gauge or counter
# (counters named *_total), samples "pmad_NAME[{pool="..."}] INTEGER"
prometheus_check() {
	awk '
	/^# HELP / { if (help[$3]++) { print "dup HELP " $3; bad = 1 }
		     if ($3 !~ /^pmad_[a-z_]+$/) { print "name " $3; bad = 1 }
		     next }
	/^# TYPE / { if (!help[$3]) { print "TYPE before HELP " $3; bad = 1 }
		     if (type[$3]) { print "dup TYPE " $3; bad = 1 }
		     type[$3] = $4
		     if ($4 != "gauge" && $4 != "counter") { print "type " $4; bad = 1 }
		     if ($4 == "counter" && $3 !~ /_total$/) { print "counter " $3; bad = 1 }
		     next }
	/^#/ { print "comment: " $0; bad = 1; next }
	{ if ($0 !~ /^pmad_[a-z_]+(\{pool="([^"\\]|\\.)*"\})? [0-9]+$/) {
		print "sample: " $0; bad = 1; next }
	  name = $1; sub(/\{.*/, "", name)
	  if (!type[name]) { print "no TYPE for " name; bad = 1 }
	  samples++ }
	END { if (!samples) { print "no samples"; bad = 1 }; exit bad }
	' "$1"
}

@test "stat: text, JSON and prometheus; compact counts as a checkpoint" {
	cat >>"$CONF" <<-EOF
	services:
	  checkpoint_interval: 3600
	pools:
	  - name: cfg
	    size: 4M
	    owner: root
	    mode: 0600
	EOF
	start_pmad
	run pmactl --socket "$S" create two --size 4M
	assert_success
	run pmactl --socket "$S" --json pool compact two
	assert_success
	run pmactl --socket "$S" stat
	assert_success
	assert_line --regexp "^pmad pid $PMAD_PID, up [0-9]+ s, 1 client; [0-9]+ requests \\(0 errors, 0 denied\\)\$"
	assert_line --regexp '^services: checkpoints every 3600 s; 0 runs, 0 checkpoints$'
	assert_line 'services: background HDPM gc off'
	assert_line --regexp '^NAME +STATE +SIZE +USED +FREE +LOG +CLIENTS +CHECKPOINTS +LAST CHECKPOINT +GC/MERGED +MORPHED/MIXED$'
	assert_line --regexp '^cfg +open +4 MiB +0 B +[0-9.]+ MiB +0/[0-9]+ +0 +0 +- +0/0 +0/0$'
	assert_line --regexp '^two +open +4 MiB +0 B +[0-9.]+ MiB +0/[0-9]+ +0 +1 +20[0-9-]+ [0-9:]+ UTC +0/0 +0/0$'
	run pmactl --socket "$S" --json stat
	assert_success
	[ "$(jq -r .daemon.pid <<<"$output")" = "$PMAD_PID" ]
	[ "$(jq -r '.pools | map(.name) | join(",")' <<<"$output")" = cfg,two ]
	[ "$(jq -r '.pools[1].services.checkpoints' <<<"$output")" = 1 ]
	local now
	now=$(date +%s)
	[ "$(jq -r '.pools[1].services.last_checkpoint' <<<"$output")" -le "$now" ]
	[ "$(jq -r '.pools[1].services.last_checkpoint' <<<"$output")" -ge $((now - 60)) ]
	[ "$(jq -r '.pools[0].services | has("last_checkpoint")' <<<"$output")" = false ]
	pmactl --socket "$S" stat --prometheus >"$D/pmad.prom"
	prometheus_check "$D/pmad.prom" || fail "$(cat "$D/pmad.prom")"
	grep -qx 'pmad_pool_open{pool="two"} 1' "$D/pmad.prom"
	grep -qx 'pmad_pool_size_bytes{pool="cfg"} 4194304' "$D/pmad.prom"
	grep -qx 'pmad_pool_service_checkpoints_total{pool="two"} 1' "$D/pmad.prom"
	grep -qx "pmad_pool_last_checkpoint_timestamp_seconds{pool=\"two\"} [0-9]*" "$D/pmad.prom"
	! grep -q 'last_checkpoint_timestamp_seconds{pool="cfg"}' "$D/pmad.prom"
	# one pool by name
	run pmactl --socket "$S" stat --prometheus cfg
	assert_success
	! grep -q 'pool="two"' <<<"$output"
	run --separate-stderr pmactl --socket "$S" stat --json --prometheus
	assert_failure 2
	stop_pmad
}

@test "stat shows another uid only the pools it may read" {
	command -v setpriv >/dev/null || skip "setpriv not installed"
	[ "$(id -u)" = 0 ] || skip "needs root to switch to a second uid"
	start_pmad
	run pmactl --socket "$S" create root-only --size 4M
	assert_success
	local as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	run "${as_nobody[@]}" "$(command -v pmactl)" --socket "$S" create \
		theirs --size 4M
	assert_success
	run "${as_nobody[@]}" "$(command -v pmactl)" --socket "$S" --json stat
	assert_success
	[ "$(jq -r '.pools | map(.name) | join(",")' <<<"$output")" = theirs ]
	[ "$(jq -r .pools_hidden <<<"$output")" = 1 ]
	run --separate-stderr "${as_nobody[@]}" "$(command -v pmactl)" \
		--socket "$S" stat root-only
	assert_failure 1
	[[ "$stderr" == *"permission denied for uid 65534"*"(EACCES)" ]] ||
		fail "$stderr"
	# root sees both
	run pmactl --socket "$S" --json stat
	[ "$(jq -r '.pools | length' <<<"$output")" = 2 ]
	stop_pmad
}
