/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl fsck: check a pool offline: the pool format (lib/pool/fsck.c),
 * then its PMAlloc heap (lib/pmalloc/fsck.c), then an HDPM file system
 * in the heap (lib/hdpm/fsck.c). Every finding has a stable
 * code and a severity (pmactl-fsck(1) lists them); the exit status follows
 * pmempool check: 0 consistent or repaired, 1 inconsistent (not repaired),
 * 2 usage, 3 cannot repair, 4 the check could not run. --repair runs
 * only when every error found is provably repairable: fsck's own stores
 * (pma_fsck_repair: bitmap banks, log slots, page map entries; HDPM page
 * log tails), then the library's crash-safe writable open (header copy,
 * summary words, log replay, torn tails) and the HDPM mount (journals),
 * then HDPM leaks freed; --advanced adds the destructive ones (a log cut
 * at a damaged record, an arena's log dropped, an HDPM page log cut),
 * each saying what is lost. It checks again afterwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "hdpm/fsck.h"
#include "pmalloc/fsck.h"
#include "pool/fsck.h"
#include "pool/pool.h"
#include "proto/proto.h"
#include "recovery.h"
#include "seam.h"
#include "util/errmsg.h"
#include "util/io.h"
#include "util/json.h"
#include "view/view.h"

enum fsck_exit {
	FSCK_EXIT_CONSISTENT = 0,
	FSCK_EXIT_INCONSISTENT = 1,
	FSCK_EXIT_USAGE = 2,
	FSCK_EXIT_CANNOT_REPAIR = 3,
	FSCK_EXIT_INTERNAL = 4,
};

static const char fsck_usage[] =
	"usage: pmactl fsck [--json] [--human] [--verbose] [--recovery]\n"
	"                   [--repair [--yes] [--dry-run] [--backup FILE]\n"
	"                   [--advanced]] POOL\n"
	"       pmactl --socket PATH fsck [--json] [--verbose] NAME\n"
	"\n"
	"Check the pool's format, its PMAlloc heap in every part (headers,\n"
	"region table, bookkeeping logs, page map, slabs, extents, root word)\n"
	"and an HDPM file system in it (journals, inodes, names, page indexes,\n"
	"page logs, blocks named twice or free). Each finding\n"
	"has a stable code (pmactl-fsck(1)). Without --repair nothing is\n"
	"written. Exit status: 0 consistent or repaired, 1 inconsistent, 2\n"
	"usage error, 3 cannot repair, 4 the check could not run. With\n"
	"--socket (or $PMAD_SOCKET) pmad checks the pool NAME it serves,\n"
	"read-only, after a checkpoint, if no client has it open.\n"
	"\n"
	"options:\n"
	"  -v, --verbose       also print informational findings\n"
	"  -r, --repair        repair, when every error found is provably\n"
	"                      repairable (else nothing is written): fsck's\n"
	"                      own repairs (a slab bitmap bank rebuilt from\n"
	"                      the logs, a damaged log slot and unmarked page\n"
	"                      map entries zeroed, an HDPM page log's torn\n"
	"                      tail dropped), then the library's writable\n"
	"                      open (a damaged header copy rewritten from the\n"
	"                      other, summary words, log replay, torn log\n"
	"                      tails dropped, the root word sealed) and the\n"
	"                      HDPM mount (interrupted operations undone or\n"
	"                      finished), then HDPM blocks no word names\n"
	"                      (leaks) freed; checks again afterwards\n"
	"  -y, --yes           repair without asking (else: a question per\n"
	"                      change on a terminal, one otherwise)\n"
	"  -n, --dry-run       write nothing; with --repair: say what would\n"
	"                      be repaired\n"
	"  -b, --backup FILE   with --repair: copy part 0 to FILE (part N to\n"
	"                      FILE.N) before writing anything\n"
	"  -A, --advanced      with --repair: also destructive repairs, each\n"
	"                      listing what is lost (--dry-run: what would\n"
	"                      be): a log cut at a damaged record (the records\n"
	"                      after it dropped), a whole arena's log dropped\n"
	"                      when its head cannot be trusted, an HDPM page\n"
	"                      log cut at a damaged entry\n"
	"  -R, --recovery      also say what recovery would redo, run it on a\n"
	"                      private copy-on-write view (the pool is not\n"
	"                      written) and check the state it leaves\n" CMD_BASE_OPTIONS_HELP;

static const struct option fsck_options[] = {
	CMD_BASE_OPTIONS,
	{ "verbose", no_argument, NULL, 'v' },
	{ "repair", no_argument, NULL, 'r' },
	{ "yes", no_argument, NULL, 'y' },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "backup", required_argument, NULL, 'b' },
	{ "recovery", no_argument, NULL, 'R' },
	{ "advanced", no_argument, NULL, 'A' },
	{ NULL, 0, NULL, 0 },
};

struct fsck_opts {
	int verbose, repair, yes, dry_run, recovery, advanced;
	const char *backup;
};

struct fsck_run {
	const struct cmd_ctx *ctx;
	const struct fsck_opts *opts;
	const char *path;
	struct json_object *arr; /* --json: the first check's findings */
	int quiet; /* the check after a repair: count only */
	const char *prefix; /* text findings: "after recovery: " */
	struct json_object *rec; /* --recovery --json: its object */
	unsigned long rec_errors; /* errors of the recovered state */
	unsigned long unrepairable; /* errors --repair does not repair */
	unsigned long need_advanced; /* of them, repaired with --advanced */
	unsigned long fixes; /* warnings and infos --repair repairs */
	unsigned long hdpm_recovered; /* --recovery: HDPM mount's work */
	int hdpm_unchecked; /* the heap did not open read-only */
	struct cmd_progress progress; /* the check's progress bar */
	struct json_object *repairs; /* --json: what the repair did */
	char first_unrepairable[64];
	/* per-change questions (stdin and stderr a terminal, no --yes):
	 * repairs the library's open or the HDPM mount make (asked as one
	 * change), and fsck's own repairs asked, declined */
	unsigned long rest_fixes;
	unsigned asked, declined;
};

static int finding_json(struct fsck_run *r, const struct pool_fsck_finding *f)
{
	return view_fsck_finding_json(f, r->arr);
}

static int finding(const struct pool_fsck_finding *f, void *arg)
{
	struct fsck_run *r = arg;

	if (!strcmp(f->code, "hdpm-recovery"))
		r->hdpm_recovered++;
	/* (an info too: a torn append the open drops) */
	if (f->severity != POOL_FSCK_ERROR &&
	    (pma_fsck_repairable(f->code) || (f->flags & POOL_FSCK_REPAIRABLE)))
		r->fixes++;
	if (!r->quiet &&
	    (pma_fsck_repairable(f->code) ||
	     (!strncmp(f->code, "hdpm-", 5) &&
	      (f->flags & (POOL_FSCK_REPAIRABLE | POOL_FSCK_ADVANCED)))))
		r->rest_fixes++;
	if (pma_fsck_blocks_repair(f, 0) && !pma_fsck_blocks_repair(f, 1) &&
	    !r->opts->advanced)
		r->need_advanced++;
	if (pma_fsck_blocks_repair(f, r->opts->advanced) && !r->unrepairable++)
		snprintf(r->first_unrepairable, sizeof(r->first_unrepairable),
			 "%s", f->code);
	if (r->quiet)
		return 0;
	if (r->arr)
		return finding_json(r, f);
	if (f->severity == POOL_FSCK_INFO && !r->opts->verbose)
		return 0;
	printf("%s%s: %s: ", r->prefix ? r->prefix : "",
	       pool_fsck_severity_name(f->severity), f->code);
	cmd_print_escaped(stdout, f->message);
	printf(" (part %u, offset 0x%" PRIx64 ")\n", f->part, f->off);
	return 0;
}

/* a pool this big (part 0, bytes) gets a progress bar on a terminal;
 * $PMACTL_PROGRESS_MIN overrides it */
#define FSCK_PROGRESS_MIN (1ULL << 30)

/* the progress bar: on a terminal, not for JSON, for a big pool */
static int fsck_wants_progress(const struct fsck_run *r)
{
	const char *env = getenv("PMACTL_PROGRESS_MIN");
	uint64_t min = FSCK_PROGRESS_MIN;
	struct stat st;

	if (!r->ctx->is_tty || r->ctx->json || r->quiet ||
	    stat(r->path, &st) < 0)
		return 0;
	if (env && *env)
		min = strtoull(env, NULL, 0);
	return (uint64_t)st.st_size >= min;
}

/* the HDPM file system in the heap, if there is one (a heap the
 * read-only open refuses: the heap's findings say why, and r is told) */
static int fsck_hdpm(struct fsck_run *r, struct pool_fsck_sink *sink)
{
	struct pma_heap *heap;
	int rc;

	if (pma_heap_open(r->path, PMA_HEAP_RDONLY, &heap) < 0) {
		r->hdpm_unchecked = 1;
		return 0;
	}
	rc = hdpm_fsck_heap(heap, sink);
	pma_heap_close(heap);
	return rc;
}

/* pool, heap, then HDPM into sink; 0, or FSCK_EXIT_INTERNAL after the
 * message */
static int fsck_check(struct fsck_run *r, struct pool_fsck_sink *sink)
{
	int rc;

	sink->fn = finding;
	sink->arg = r;
	cmd_progress_init(&r->progress, "checking");
	if (fsck_wants_progress(r)) {
		sink->progress = cmd_progress_update;
		sink->progress_arg = &r->progress;
	}
	rc = pool_fsck(r->path, sink);
	/* the heap is checked even after pool findings: it opens on any
	 * header copy the pool can open on, else says it was not checked */
	if (rc == 0)
		rc = pma_fsck(r->path, sink);
	if (rc == 0)
		rc = fsck_hdpm(r, sink);
	cmd_progress_done(&r->progress);
	if (rc == 0)
		return 0;
	cmd_error(r->ctx, "cannot check '%s': %s", r->path,
		  sink->rc < 0 ? strerror(-sink->rc) : pool_errormsg());
	return FSCK_EXIT_INTERNAL;
}

/* ------------------------------------------------------------ recovery */

/* --recovery, JSON: the pending work and the recovered state's check */
static int recovery_json(struct fsck_run *r, const struct cmd_recovery *p,
			 const char *not_run, struct json_object *findings,
			 unsigned long errors)
{
	struct json_object *o = p ? cmd_recovery_pending_json(p) :
				    json_object_new_object();
	int err = !o;

	if (!err && not_run) {
		err |= util_json_add_bool(o, "checked", 0);
		err |= util_json_add_str(o, "reason", not_run);
	} else if (!err) {
		err |= util_json_add_bool(o, "checked", 1);
		err |= util_json_add_bool(o, "consistent_after", !errors);
		err |= util_json_add_u64(o, "errors_after", errors);
		err |= util_json_add_obj(o, "findings", findings);
		findings = NULL;
	}
	json_object_put(findings);
	if (err) {
		json_object_put(o);
		return -ENOMEM;
	}
	r->rec = o;
	return 0;
}

/*
 * --recovery: what recovery still has to do (a read-only open), then
 * recovery on a private view of the pool and the check of what it
 * leaves. 0 or FSCK_EXIT_INTERNAL after the message.
 */
static int fsck_recovery(struct fsck_run *r)
{
	struct pool_fsck_sink sink = { .fn = finding, .arg = r };
	struct json_object *arr = r->arr, *findings = NULL;
	struct cmd_recovery p;
	int rc;

	rc = cmd_recovery_pending(r->path, &p);
	if (rc < 0)
		cmd_recovery_free(&p);
	if (rc == -ENOMEM)
		goto nomem;
	if (rc < 0) { /* the check above said why */
		if (!r->arr) {
			printf("recovery: not checked: ");
			cmd_print_escaped(stdout, pma_errormsg());
			putchar('\n');
			return 0;
		}
		return recovery_json(r, NULL, pma_errormsg(), NULL, 0) ?
			       FSCK_EXIT_INTERNAL :
			       0;
	}
	if (!r->arr && cmd_recovery_pending_print(&p) < 0)
		goto nomem_p;
	if (r->arr && !(findings = json_object_new_array()))
		goto nomem_p;
	r->arr = findings;
	r->prefix = "after recovery: ";
	rc = pma_fsck_recover_private(r->path, &sink, hdpm_fsck_recover);
	r->arr = arr;
	r->prefix = NULL;
	r->rec_errors = sink.counts[POOL_FSCK_ERROR];
	if (rc < 0) {
		cmd_recovery_free(&p);
		json_object_put(findings);
		cmd_error(r->ctx, "cannot check the recovery of '%s': %s",
			  r->path,
			  sink.rc < 0 ? strerror(-sink.rc) : pma_errormsg());
		return FSCK_EXIT_INTERNAL;
	}
	if (findings) {
		rc = recovery_json(r, &p, NULL, findings, r->rec_errors);
		cmd_recovery_free(&p);
		return rc ? FSCK_EXIT_INTERNAL : 0;
	}
	/* the work: the heap's and the file system's, as pending said and
	 * as the HDPM mount on the private view did (hdpm-recovery) */
	printf("recovered state: %s (recovery ran on a private view: %s)\n",
	       r->rec_errors ? "inconsistent" : "consistent",
	       cmd_recovery_needed(&p) || r->hdpm_recovered ?
		       "the pool is not written" :
		       "nothing to do");
	cmd_recovery_free(&p);
	return 0;
nomem_p:
	cmd_recovery_free(&p);
nomem:
	cmd_error(r->ctx, "cannot check the recovery: out of memory");
	return FSCK_EXIT_INTERNAL;
}

/* ------------------------------------------------------------ repair */

/* copy the file at from to a new file to (never overwritten), durably */
static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in, out, rc = 0;
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	while (rc == 0 && (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0)
			rc = errno == EINTR ? 0 : -errno;
		else
			rc = util_write_all(out, buf, (size_t)n);
	}
	if (rc == 0 && fsync(out) < 0)
		rc = -errno;
	if (close(out) < 0 && rc == 0)
		rc = -errno;
	close(in);
	return rc;
}

/* every part of the pool to opts->backup (part N > 0: backup.N) */
static int fsck_backup(struct fsck_run *r)
{
	char dst[4096];
	struct pool *pool;
	unsigned i;
	int rc;

	rc = pool_open(r->path, POOL_OPEN_RDONLY, &pool);
	if (rc < 0) {
		cmd_error(r->ctx, "cannot back up '%s': %s", r->path,
			  pool_errormsg());
		return FSCK_EXIT_INTERNAL;
	}
	for (i = 0; rc == 0 && i < pool_part_count(pool); i++) {
		if (i)
			snprintf(dst, sizeof(dst), "%s.%u", r->opts->backup, i);
		else
			snprintf(dst, sizeof(dst), "%s", r->opts->backup);
		rc = copy_file(pool_part_path(pool, i), dst);
		if (rc < 0)
			cmd_error(r->ctx, "cannot back up part %u to '%s': %s",
				  i, dst, strerror(-rc));
	}
	pool_close(&pool);
	return rc < 0 ? FSCK_EXIT_INTERNAL : 0;
}

static int fsck_ask_each(const struct fsck_run *r);

/* a note of the repair: what it does (or would do, or loses) */
static int repair_note(const struct pool_fsck_finding *f, void *arg)
{
	struct fsck_run *r = arg;
	struct json_object *o;
	int err;

	if (r->repairs) {
		o = json_object_new_object();
		if (!o)
			return -ENOMEM;
		err = util_json_add_str(o, "code", f->code);
		err |= util_json_add_hex(o, "offset", f->off);
		err |= util_json_add_str(o, "message", f->message);
		if (err || json_object_array_add(r->repairs, o) < 0) {
			json_object_put(o);
			return -ENOMEM;
		}
		return 0;
	}
	printf("%s: %s: ",
	       r->opts->dry_run || fsck_ask_each(r) ? "would" : "repair",
	       f->code);
	cmd_print_escaped(stdout, f->message);
	putchar('\n');
	return 0;
}

/* the HDPM repair after the heap's (its own stores, then a mount) */
static int repair_hdpm(struct fsck_run *r, unsigned flags,
		       struct pool_fsck_sink *notes)
{
	unsigned hflags = (r->opts->advanced ? HDPM_FSCK_ADVANCED : 0) |
			  ((flags & PMA_FSCK_DRY_RUN) ? HDPM_FSCK_DRY_RUN : 0);
	struct pma_heap *heap;
	int rc;

	rc = pma_heap_open(r->path,
			   (flags & PMA_FSCK_DRY_RUN) ? PMA_HEAP_RDONLY : 0,
			   &heap);
	if (rc < 0)
		return rc;
	rc = hdpm_fsck_repair(heap, hflags, notes);
	if (rc < 0 && rc != -ENOMEM)
		util_errmsg_prefix("HDPM");
	pma_heap_close(heap);
	return rc;
}

/*
 * A heap the first check could not open read-only hid its HDPM file
 * system: once the heap is repaired, the file system is checked (its
 * findings printed after the first check's) before its repair, which
 * is not tried if it has an error fsck does not repair: -EUCLEAN.
 */
static int hdpm_recheck(struct fsck_run *r)
{
	struct pool_fsck_sink sink = { .fn = finding, .arg = r };
	unsigned long before = r->unrepairable;
	int rc;

	if (!r->hdpm_unchecked)
		return 0;
	r->hdpm_unchecked = 0;
	r->prefix = "after the heap's repair: ";
	rc = fsck_hdpm(r, &sink);
	r->prefix = NULL;
	if (rc < 0 || sink.rc < 0)
		return rc < 0 ? rc : sink.rc;
	if (r->unrepairable == before)
		return 0;
	return util_errmsg_set(EUCLEAN,
			       "the heap is repaired, but the HDPM file system "
			       "it holds, checked only now, has %lu error%s "
			       "fsck does not repair (the first: %s)",
			       r->unrepairable - before,
			       r->unrepairable - before == 1 ? "" : "s",
			       r->first_unrepairable);
}

/* pma_fsck_repair_flags with the notes to stdout / r->repairs */
static int repair_run(struct fsck_run *r, unsigned flags)
{
	struct pool_fsck_sink notes = { .fn = repair_note, .arg = r };
	int rc;

	if (r->arr && !r->repairs && !(r->repairs = json_object_new_array()))
		return -ENOMEM;
	rc = pma_fsck_repair_flags(
		r->path, flags | (r->opts->advanced ? PMA_FSCK_ADVANCED : 0),
		&notes);
	if (rc == 0 && notes.rc == 0 && !(flags & PMA_FSCK_DRY_RUN))
		rc = hdpm_recheck(r);
	if (rc == 0 && notes.rc == 0)
		rc = repair_hdpm(r, flags, &notes);
	return notes.rc < 0 ? notes.rc : rc;
}

/* one answer on stdin: 1 for "y" (EOF, anything else: no) */
static int fsck_answer(void)
{
	char line[32];

	(void)fflush(stderr);
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	return line[0] == 'y' || line[0] == 'Y';
}

/* per-change questions: stdin and stderr are a terminal, no --yes */
static int fsck_ask_each(const struct fsck_run *r)
{
	return !r->opts->yes && !r->opts->dry_run && isatty(STDIN_FILENO) &&
	       isatty(STDERR_FILENO);
}

/* pma_fsck_repair_ask's question: one of fsck's own repairs, after the
 * notes that say what it does (printed as "would: ...") */
static int ask_change(const struct pool_fsck_finding *f, void *arg)
{
	struct fsck_run *r = arg;

	r->asked++;
	fprintf(stderr,
		"pmactl: repair %s at 0x%" PRIx64 " (part %u)%s? [y/N] ",
		f->code, f->off, f->part,
		(f->flags & POOL_FSCK_ADVANCED) ? ", losing what it lists" :
						  "");
	return fsck_answer();
}

/*
 * --repair, a question per change: fsck's own repairs one by one (a
 * declined one is left as it is), then the library's own repairs and
 * the HDPM file system's (its writable open and mount) as one more. 0,
 * or -errno with a message.
 */
static int repair_each(struct fsck_run *r)
{
	struct pool_fsck_sink notes = { .fn = repair_note, .arg = r };
	unsigned flags = PMA_FSCK_NO_OPEN |
			 (r->opts->advanced ? PMA_FSCK_ADVANCED : 0);
	struct pma_heap *heap;
	int rc, rest;

	if (r->arr && !r->repairs && !(r->repairs = json_object_new_array()))
		return -ENOMEM;
	rc = pma_fsck_repair_ask(r->path, flags, &notes, ask_change, r,
				 &r->declined);
	if (rc < 0 || notes.rc < 0)
		return notes.rc < 0 ? notes.rc : rc;
	rest = 0;
	if (r->rest_fixes) {
		r->asked++;
		fprintf(stderr,
			"pmactl: let the library's writable open and the "
			"file system's mount repair the rest (%lu finding%s: "
			"header copies, summary words, log replay, root "
			"check, HDPM page logs)? [y/N] ",
			r->rest_fixes, r->rest_fixes == 1 ? "" : "s");
		rest = fsck_answer();
		r->declined += !rest;
	}
	if (!rest && (r->rest_fixes || r->declined == r->asked))
		return 0;
	rc = pma_heap_open(r->path, 0, &heap);
	if (rc < 0)
		return rc;
	pma_heap_close(heap);
	rc = repair_hdpm(r, 0, &notes);
	return notes.rc < 0 ? notes.rc : rc;
}

/* ask on stderr, answer on stdin; 1 for yes */
static int fsck_confirm(const struct fsck_run *r, unsigned long errors)
{
	char line[32];

	fprintf(stderr, "pmactl: repair '%s' (%lu error%s)? [y/N] ", r->path,
		errors, errors == 1 ? "" : "s");
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	return line[0] == 'y' || line[0] == 'Y';
}

/*
 * --repair after a check that found errors: what it did in *ret_action,
 * and the exit status (ret_after: errors left when it repaired).
 */
static int fsck_repair(struct fsck_run *r, unsigned long errors,
		       const char **ret_action, unsigned long *ret_after)
{
	struct pool_fsck_sink sink = { 0 };
	int rc;

	*ret_action = "cannot_repair";
	if (r->unrepairable) {
		fprintf(stderr,
			"pmactl: cannot repair '%s': %lu error%s need a repair "
			"fsck does not do (the first: %s)\n",
			r->path, r->unrepairable,
			r->unrepairable == 1 ? "" : "s", r->first_unrepairable);
		if (r->need_advanced)
			fprintf(stderr,
				"pmactl: %lu of them only destructively: "
				"--advanced does it (--dry-run --advanced says "
				"what would be lost)\n",
				r->need_advanced);
		return FSCK_EXIT_CANNOT_REPAIR;
	}
	*ret_action = "would_repair";
	if (r->opts->dry_run) {
		rc = repair_run(r, PMA_FSCK_DRY_RUN);
		if (rc == -ENOMEM)
			return -ENOMEM;
		return errors ? FSCK_EXIT_INCONSISTENT : FSCK_EXIT_CONSISTENT;
	}
	*ret_action = "declined";
	if (!r->opts->yes && !fsck_ask_each(r) && !fsck_confirm(r, errors))
		return errors ? FSCK_EXIT_INCONSISTENT : FSCK_EXIT_CONSISTENT;
	*ret_action = "cannot_repair";
	if (r->opts->backup && (rc = fsck_backup(r)) != 0)
		return rc;
	rc = fsck_ask_each(r) ? repair_each(r) : repair_run(r, 0);
	if (rc == -ENOMEM)
		return -ENOMEM;
	if (rc < 0) {
		cmd_error(r->ctx, "cannot repair '%s': %s", r->path,
			  pool_errormsg());
		/* (the heap's repair was made: what is left, counted) */
		r->quiet = 1;
		if (rc == -EUCLEAN && fsck_check(r, &sink) == 0)
			*ret_after = sink.counts[POOL_FSCK_ERROR];
		return FSCK_EXIT_CANNOT_REPAIR;
	}
	r->quiet = 1;
	rc = fsck_check(r, &sink);
	if (rc)
		return rc;
	*ret_after = sink.counts[POOL_FSCK_ERROR];
	if (r->declined) {
		/* what was declined is left as it was: not a failure */
		*ret_action = r->declined == r->asked ? "declined" : "partial";
		return *ret_after ? FSCK_EXIT_INCONSISTENT :
				    FSCK_EXIT_CONSISTENT;
	}
	if (*ret_after)
		return FSCK_EXIT_CANNOT_REPAIR;
	*ret_action = "repaired";
	return FSCK_EXIT_CONSISTENT;
}

/* ------------------------------------------------------------ output */

static int fsck_text(const struct fsck_run *r, const struct pool_fsck_sink *s,
		     const char *action, unsigned long after)
{
	unsigned long errors = s->counts[POOL_FSCK_ERROR];
	unsigned long warnings = s->counts[POOL_FSCK_WARNING];

	if (r->declined)
		printf("%s: %s (%lu error%s found, %lu left; %u of %u "
		       "repair%s declined)\n",
		       after ? "inconsistent" : "repaired", r->path, errors,
		       errors == 1 ? "" : "s", after, r->declined, r->asked,
		       r->asked == 1 ? "" : "s");
	else if (!strcmp(action, "repaired") && errors)
		printf("repaired: %s (%lu error%s found, none left)\n", r->path,
		       errors, errors == 1 ? "" : "s");
	else if (!strcmp(action, "repaired"))
		printf("repaired: %s (%lu finding%s repaired)\n", r->path,
		       r->fixes, r->fixes == 1 ? "" : "s");
	else if (!strcmp(action, "would_repair") && errors)
		printf("would repair: %s (%lu error%s; run without "
		       "--dry-run)\n",
		       r->path, errors, errors == 1 ? "" : "s");
	else if (!strcmp(action, "would_repair"))
		printf("would repair: %s (%lu finding%s; run without "
		       "--dry-run)\n",
		       r->path, r->fixes, r->fixes == 1 ? "" : "s");
	else
		printf("%s: %s (%lu error%s, %lu warning%s%s%s)\n",
		       errors || r->rec_errors ? "inconsistent" : "consistent",
		       r->path, errors, errors == 1 ? "" : "s", warnings,
		       warnings == 1 ? "" : "s",
		       after ? "; errors left after the repair" : "",
		       r->rec_errors ? "; errors after recovery" : "");
	return 0;
}

static int fsck_json(struct fsck_run *r, const struct pool_fsck_sink *s,
		     const char *action, unsigned long after)
{
	unsigned long errors = s->counts[POOL_FSCK_ERROR];
	struct json_object *root = json_object_new_object();
	int err;

	if (!root) {
		json_object_put(r->arr);
		json_object_put(r->rec);
		json_object_put(r->repairs);
		return -ENOMEM;
	}
	err = util_json_add_str(root, "pool", r->path);
	err |= util_json_add_bool(root, "consistent",
				  !errors && !r->rec_errors);
	err |= util_json_add_u64(root, "errors", errors);
	err |= util_json_add_u64(root, "warnings",
				 s->counts[POOL_FSCK_WARNING]);
	err |= util_json_add_obj(root, "findings", r->arr);
	if (r->rec) {
		err |= util_json_add_obj(root, "recovery", r->rec);
		r->rec = NULL;
	}
	if (r->opts->repair) {
		err |= util_json_add_str(root, "repair", action);
		err |= util_json_add_u64(root, "errors_after_repair", after);
		err |= util_json_add_obj(root, "repairs",
					 r->repairs ? r->repairs :
						      json_object_new_array());
		r->repairs = NULL;
	}
	if (err) {
		json_object_put(root);
		return -ENOMEM;
	}
	return cmd_json_print(r->ctx, root) == CMD_EXIT_OK ? 0 : -EIO;
}

static int fsck_run(struct cmd_ctx *ctx, const char *path,
		    const struct fsck_opts *opts)
{
	struct fsck_run r = { .ctx = ctx, .opts = opts, .path = path };
	struct pool_fsck_sink sink = { 0 };
	unsigned long errors, after = 0;
	const char *action = "none";
	int rc, out;

	if (ctx->json && !(r.arr = json_object_new_array())) {
		cmd_error(ctx, "cannot build JSON output: out of memory");
		return FSCK_EXIT_INTERNAL;
	}
	rc = fsck_check(&r, &sink);
	if (rc) {
		json_object_put(r.arr);
		return rc;
	}
	errors = sink.counts[POOL_FSCK_ERROR];
	if (opts->recovery && (rc = fsck_recovery(&r)) != 0) {
		json_object_put(r.arr);
		return rc;
	}
	rc = errors || r.rec_errors ? FSCK_EXIT_INCONSISTENT :
				      FSCK_EXIT_CONSISTENT;
	if ((errors || r.fixes) && opts->repair)
		rc = fsck_repair(&r, errors, &action, &after);
	if (rc == -ENOMEM) {
		json_object_put(r.arr);
		json_object_put(r.repairs);
		cmd_error(ctx, "cannot repair: out of memory");
		return FSCK_EXIT_INTERNAL;
	}
	out = r.arr ? fsck_json(&r, &sink, action, after) :
		      fsck_text(&r, &sink, action, after);
	if (out == -ENOMEM)
		cmd_error(ctx, "cannot build JSON output: out of memory");
	return out < 0 ? FSCK_EXIT_INTERNAL : rc;
}

/* ------------------------------------------------------------ online */

/* one finding of pmad's reply, as finding() prints it */
static void online_finding(const struct fsck_opts *opts, struct json_object *f)
{
	struct json_object *v, *part, *off;
	const char *sev = "", *code = "", *msg = "";

	if (json_object_object_get_ex(f, "severity", &v))
		sev = json_object_get_string(v);
	if (json_object_object_get_ex(f, "code", &v))
		code = json_object_get_string(v);
	if (json_object_object_get_ex(f, "message", &v))
		msg = json_object_get_string(v);
	if (!strcmp(sev, "info") && !opts->verbose)
		return;
	printf("%s: %s: ", sev, code);
	cmd_print_escaped(stdout, msg);
	/* where, as finding() prints it (the offset: "0x..." in JSON) */
	if (json_object_object_get_ex(f, "part", &part) &&
	    json_object_object_get_ex(f, "offset", &off)) {
		printf(" (part %" PRId64 ", offset ",
		       json_object_get_int64(part));
		cmd_print_escaped(stdout, json_object_get_string(off));
		putchar(')');
	}
	putchar('\n');
}

/*
 * pmactl --socket S fsck NAME: pmad checks the pool it serves, quiesced
 * and read-only (pool_fsck request); no repair, no recovery check.
 */
static int fsck_online(struct cmd_ctx *ctx, const char *name,
		       const struct fsck_opts *opts)
{
	struct proto_reply rep = { .message = "" };
	struct json_object *args = json_object_new_object(), *v, *arr;
	uint64_t errors = 0, warnings = 0;
	size_t i;
	int rc;

	if (!args || util_json_add_str(args, "name", name)) {
		json_object_put(args);
		cmd_error(ctx, "out of memory");
		return FSCK_EXIT_INTERNAL;
	}
	rc = cmd_pmad_call(ctx, "pool_fsck", args, &rep);
	if (rc != CMD_EXIT_OK)
		return FSCK_EXIT_INTERNAL;
	if (rep.err) {
		cmd_error(ctx, "cannot check '%s' through pmad: %s (%s)", name,
			  rep.message, proto_errno_name(rep.err));
		proto_reply_release(&rep);
		return FSCK_EXIT_INTERNAL;
	}
	if (json_object_object_get_ex(rep.result, "errors", &v))
		errors = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(rep.result, "warnings", &v))
		warnings = (uint64_t)json_object_get_int64(v);
	if (ctx->json) {
		rc = cmd_json_print(ctx, json_object_get(rep.result));
	} else {
		if (json_object_object_get_ex(rep.result, "findings", &arr))
			for (i = 0; i < json_object_array_length(arr); i++)
				online_finding(opts, json_object_array_get_idx(
							     arr, i));
		printf("%s: %s (%" PRIu64 " error%s, %" PRIu64
		       " warning%s; checked by pmad)\n",
		       errors ? "inconsistent" : "consistent", name, errors,
		       errors == 1 ? "" : "s", warnings,
		       warnings == 1 ? "" : "s");
		rc = CMD_EXIT_OK;
	}
	proto_reply_release(&rep);
	if (rc != CMD_EXIT_OK)
		return FSCK_EXIT_INTERNAL;
	return errors ? FSCK_EXIT_INCONSISTENT : FSCK_EXIT_CONSISTENT;
}

static int fsck_option(int c, struct fsck_opts *o)
{
	switch (c) {
	case 'v':
		o->verbose = 1;
		return 1;
	case 'r':
		o->repair = 1;
		return 1;
	case 'y':
		o->yes = 1;
		return 1;
	case 'n':
		o->dry_run = 1;
		return 1;
	case 'b':
		o->backup = optarg;
		return 1;
	case 'R':
		o->recovery = 1;
		return 1;
	case 'A':
		o->advanced = 1;
		return 1;
	default:
		return 0;
	}
}

int cmd_fsck(int argc, char **argv, struct cmd_ctx *ctx)
{
	struct fsck_opts opts = { 0 };
	int c, rc;

	ctx->stdout_fail_rc = FSCK_EXIT_INTERNAL;
	while ((c = cmd_getopt(ctx, "fsck", argc, argv,
			       CMD_BASE_OPTSTRING "vryb:nRA", fsck_options)) !=
	       -1) {
		if (fsck_option(c, &opts))
			continue;
		rc = cmd_base_option(c, ctx, "fsck", fsck_usage);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(ctx, "fsck", "missing POOL argument");
	if (optind + 1 < argc)
		return cmd_usage_error(ctx, "fsck", "unexpected argument '%s'",
				       argv[optind + 1]);
	/* --dry-run alone is fine: a check writes nothing anyway */
	if (!opts.repair && (opts.yes || opts.backup || opts.advanced))
		return cmd_usage_error(ctx, "fsck",
				       "--yes, --backup and --advanced need "
				       "--repair");
	if (opts.recovery && opts.repair)
		return cmd_usage_error(ctx, "fsck",
				       "--recovery checks, it does not repair: "
				       "not with --repair");
	if (ctx->seam == &cmd_seam_pmad) {
		if (opts.repair || opts.recovery)
			return cmd_usage_error(
				ctx, "fsck",
				"through pmad (--socket, $PMAD_SOCKET) fsck "
				"only checks the pool pmad serves: %s needs "
				"the pool offline (stop pmad, then pmactl "
				"fsck %s POOL-PATH)",
				opts.repair ? "--repair" : "--recovery",
				opts.repair ? "--repair" : "--recovery");
		return fsck_online(ctx, argv[optind], &opts);
	}
	return fsck_run(ctx, argv[optind], &opts);
}
