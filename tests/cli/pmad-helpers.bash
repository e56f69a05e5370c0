# SPDX-License-Identifier: BSD-3-Clause
# Shared setup of the bats suites that run pmad: a temporary socket and
# state dir, pmad in the foreground, stopped by a shutdown request.
# (tests/cli/pmad.bats keeps its own copy of these from before.)

load helpers

pmad_setup() {
	common_setup
	SEND="${PMAD_BUILDDIR:?set PMAD_BUILDDIR}/tests/lib/pmad-send"
	[ -x "$SEND" ] || fail "no $SEND: build it with make check"
	command -v pmad >/dev/null || fail "pmad not on PATH"
	# world-traversable, so a second uid can reach the socket
	D=$(mktemp -d /tmp/pmad-bats.XXXXXX)
	chmod 755 "$D"
	S="$D/pmad.sock"
	SD="$D/state"
	LOG="$D/pmad.log"
	CONF="$D/pmad.yaml"
	PMAD_PID=""
	printf 'socket:\n  mode: 0666\nlog_level: info\n' >"$CONF"
}

pmad_teardown() {
	if [ -n "$PMAD_PID" ] && kill -0 "$PMAD_PID" 2>/dev/null; then
		kill "$PMAD_PID"
		wait "$PMAD_PID" || true
	fi
	if [ -n "${D:-}" ]; then
		rm -rf -- "$D"
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

req() {
	printf '{"version":1,"op":"%s","args":%s}' "$1" "${2:-{\}}"
}

alive() {
	"$SEND" "$S" "$(req stats)"
}

# start_pmad [WRAPPER...]: pmad in the background, wait until it serves
start_pmad() {
	"$@" pmad --foreground --config "$CONF" --socket "$S" \
		--state-dir "$SD" 2>"$LOG" &
	PMAD_PID=$!
	wait_for alive
}

# stop_pmad: shutdown request, then the exit status must be 0
stop_pmad() {
	run "$SEND" "$S" "$(req shutdown)"
	assert_success
	wait "$PMAD_PID"
	PMAD_PID=""
}
