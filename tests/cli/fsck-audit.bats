#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# The finding codes of pmactl fsck (issue 20: "man page pmactl-fsck(1)
# with every finding code"), audited from the sources: every code the
# code can emit (a "word-word" string literal of the fsck sources) is a
# term of man/pmactl-fsck.1.adoc, and every term of the man page is a
# code of the sources. A new finding without its man entry, or a man
# entry whose code is gone or renamed, fails here. And every code of the
# man page is asserted by a test (issue 20: "assert the exact finding
# code"), but for the few on the allowlist below, each with its reason.

load helpers

setup() {
	[ -n "${PMAD_SRCDIR:-}" ] || PMAD_SRCDIR="$BATS_TEST_DIRNAME/../.."
	S="$PMAD_SRCDIR"
	[ -f "$S/man/pmactl-fsck.1.adoc" ] || fail "no sources at $S"
	T="$BATS_TEST_TMPDIR"
}

# the fsck sources: the checks, the repairs and the command
fsck_sources() {
	local f
	for f in "$S"/lib/*/fsck*.c "$S/cmd/fsck.c" "$S/daemon/fsck.c"; do
		[ -f "$f" ] && echo "$f"
	done
}

# every finding and repair note code in the sources, one a line: string
# literals of lowercase words joined by '-' (option names that match
# that pattern are not codes: listed here)
source_codes() {
	local notcodes='^(dry-run)$'
	fsck_sources | xargs grep -ho '"[a-z][a-z0-9]*\(-[a-z0-9]\+\)\+"' |
		tr -d '"' | grep -Ev "$notcodes" | sort -u
}

# every code the man page defines: the *code* terms of its definition
# lists (lines "*code*[, *code*...] (severity)::")
man_codes() {
	grep -E '^\*[a-z].*::$' "$S/man/pmactl-fsck.1.adoc" |
		grep -o '\*[a-z][a-z0-9]*\(-[a-z0-9]\+\)\+\*' | tr -d '*' |
		sort -u
}

@test "the audit finds the sources and the man page's codes" {
	source_codes >"$T/src"
	man_codes >"$T/man"
	# both lists are real: the codes every part of fsck emits
	[ "$(wc -l <"$T/src")" -gt 80 ] || fail "source codes: $(cat "$T/src")"
	[ "$(wc -l <"$T/man")" -gt 80 ] || fail "man codes: $(cat "$T/man")"
	grep -qx pool-hdr-checksum "$T/src" || fail "no pool code in sources"
	grep -qx log-record-type "$T/src" || fail "no heap code in sources"
	grep -qx hdpm-block-shared "$T/src" || fail "no hdpm code in sources"
	grep -qx repair-drops-record "$T/src" || fail "no repair note"
}

@test "every finding code the sources can emit is in pmactl-fsck(1)" {
	source_codes >"$T/src"
	man_codes >"$T/man"
	run comm -23 "$T/src" "$T/man"
	assert_success
	[ -z "$output" ] ||
		fail "codes missing from man/pmactl-fsck.1.adoc: $output"
}

@test "every code pmactl-fsck(1) lists exists in the sources" {
	source_codes >"$T/src"
	man_codes >"$T/man"
	run comm -13 "$T/src" "$T/man"
	assert_success
	[ -z "$output" ] ||
		fail "man codes no source emits: $output"
}

@test "every code the man page lists has a severity or is a repair note" {
	local line
	while IFS= read -r line; do
		case "$line" in
		*"(info"* | *"(warning"* | *"(error"* | "*repair-"*) ;;
		*) fail "no severity: $line" ;;
		esac
	done < <(grep -E '^\*[a-z].*::$' "$S/man/pmactl-fsck.1.adoc")
}

# the test files that can assert a code: the bats suites and the C
# tests; not the fuzz corpus (its seeds are named after codes), the
# damage makers of tests/corrupt, or this audit
test_files() {
	find "$S/tests" -type f \( -name '*.bats' -o -name '*.c' \) \
		! -path '*/fuzz/*' ! -path '*/corrupt/*' \
		! -name fsck-audit.bats | sort
}

# every code of the man page that a test names on a line that is not a
# comment or a test's title and does not assert its absence
# (refute_line, != or "| not"); a damage KIND (an argument of the damage
# tools and of the suites' helpers that run them) is no code, even when
# it is named like one
asserted_codes() {
	local code helpers='damaged|damaged2|damaged_only|warned|repaired|crashed'
	test_files | xargs cat |
		grep -Ev '^[[:space:]]*(#|\*|/\*|//|@test |rebuilt )' |
		grep -Ev 'refute|!= *"|\| *not' |
		sed -E -e 's/(\$H?DAMAGE"?[[:space:]]+)[a-z0-9-]+/\1KIND/g' \
			-e "s/^([[:space:]]*($helpers)[[:space:]]+)[a-z0-9-]+/\\1KIND/" \
			-e 's/^([[:space:]]*damaged_regions[[:space:]]+[0-9]+[[:space:]]+)[a-z0-9-]+/\1KIND/' \
			>"$T/lines"
	man_codes | while read -r code; do
		if grep -qE "(^|[^a-z0-9-])$code([^a-z0-9-]|\$)" "$T/lines"; then
			echo "$code"
		fi
	done
}

# the codes no realistic damage reaches, each with its reason (code, a
# tab, the reason): checks of fsck's own walk against the library's
# open of the same pool, which disagree only when one of them has a bug
untestable() {
	cat <<'EOF'
pool-open-refused	only when fsck's own pool checks found no error and pool_open still refuses: a disagreement of lib/pool and its fsck
extent-index-invalid	the free-extent index is not on media: the open builds it from the page map fsck has checked; only a library bug makes it inconsistent
extent-index-mismatch	the same index against the walk's free page count: only a library (or fsck) bug
heap-replay-mismatch	the read-only open's replay of the logs against fsck's replay of the same logs: they differ only on a bug of one
heap-slab-refused	the library's first use of every slab after fsck found every slab sound: only a disagreement of the two checks
recovery-checkpoint-failed	the checkpoint, on a private view, after a recovery that accepted the logs: nothing on media can fail it (a bug, or out of memory)
EOF
}

@test "every code of pmactl-fsck(1) is asserted by a test, or on the allowlist with a reason" {
	man_codes >"$T/man"
	asserted_codes >"$T/tested"
	untestable >"$T/allow.tsv"
	cut -f1 "$T/allow.tsv" | sort >"$T/allow"
	# every allowlisted code has a reason, is a code, and is untested
	run awk -F '\t' 'NF != 2 || length($2) < 20' "$T/allow.tsv"
	[ -z "$output" ] || fail "allowlist entries without a reason: $output"
	run comm -23 "$T/allow" "$T/man"
	[ -z "$output" ] || fail "allowlisted, not a code of the man page: $output"
	run comm -12 "$T/allow" "$T/tested"
	[ -z "$output" ] ||
		fail "allowlisted but asserted by a test (drop it from the list): $output"
	# and every other code is asserted
	sort -u "$T/tested" "$T/allow" >"$T/covered"
	run comm -23 "$T/man" "$T/covered"
	[ -z "$output" ] || fail "codes no test asserts: $output"
	# the audit is real: it finds most codes asserted
	[ "$(wc -l <"$T/tested")" -gt 100 ] ||
		fail "only $(wc -l <"$T/tested") codes found asserted"
}
