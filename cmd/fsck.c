/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl fsck: check a pool offline without writing it: the pool format
 * (lib/pool/fsck.c), then its PMAlloc heap (lib/pmalloc/fsck.c). Every
 * finding has a stable code and a severity (pmactl-fsck(1) lists them);
 * the exit status follows pmempool check: 0 consistent, 1 inconsistent,
 * 2 usage, 3 cannot repair (kept for --repair), 4 the check could not run.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "pmalloc/fsck.h"
#include "pool/fsck.h"
#include "util/json.h"

enum fsck_exit {
	FSCK_EXIT_CONSISTENT = 0,
	FSCK_EXIT_INCONSISTENT = 1,
	FSCK_EXIT_USAGE = 2,
	FSCK_EXIT_CANNOT_REPAIR = 3,
	FSCK_EXIT_INTERNAL = 4,
};

static const char fsck_usage[] =
	"usage: pmactl fsck [--json] [--human] [--verbose] [--dry-run] POOL\n"
	"\n"
	"Check the pool's format and its PMAlloc heap (headers, region table,\n"
	"bookkeeping logs, page map, slabs, extents, root word) without\n"
	"writing it. Each finding has a stable code (pmactl-fsck(1)).\n"
	"Exit status: 0 consistent, 1 inconsistent, 2 usage error, 4 the\n"
	"check could not run.\n"
	"\n"
	"options:\n"
	"  -v, --verbose       also print informational findings\n"
	"  -n, --dry-run       write nothing (fsck never writes without a\n"
	"                      repair, which is not implemented yet)\n" CMD_BASE_OPTIONS_HELP;

static const struct option fsck_options[] = {
	CMD_BASE_OPTIONS,
	{ "verbose", no_argument, NULL, 'v' },
	{ "dry-run", no_argument, NULL, 'n' },
	{ NULL, 0, NULL, 0 },
};

struct fsck_run {
	const struct cmd_ctx *ctx;
	int verbose;
	struct json_object *arr; /* --json */
};

static int finding_json(struct fsck_run *r, const struct pool_fsck_finding *f)
{
	struct json_object *o = json_object_new_object();
	int err;

	if (!o)
		return -ENOMEM;
	err = util_json_add_str(o, "code", f->code);
	err |= util_json_add_str(o, "severity",
				 pool_fsck_severity_name(f->severity));
	err |= util_json_add_u64(o, "part", f->part);
	err |= util_json_add_hex(o, "offset", f->off);
	err |= util_json_add_str(o, "message", f->message);
	if (err || json_object_array_add(r->arr, o) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return 0;
}

static int finding(const struct pool_fsck_finding *f, void *arg)
{
	struct fsck_run *r = arg;

	if (r->arr)
		return finding_json(r, f);
	if (f->severity == POOL_FSCK_INFO && !r->verbose)
		return 0;
	printf("%s: %s: ", pool_fsck_severity_name(f->severity), f->code);
	cmd_print_escaped(stdout, f->message);
	putchar('\n');
	return 0;
}

static int fsck_summary(struct fsck_run *r, const char *path,
			const struct pool_fsck_sink *sink)
{
	unsigned long errors = sink->counts[POOL_FSCK_ERROR];
	unsigned long warnings = sink->counts[POOL_FSCK_WARNING];
	struct json_object *root;
	int err, rc;

	if (!r->arr) {
		printf("%s: %s (%lu error%s, %lu warning%s)\n",
		       errors ? "inconsistent" : "consistent", path, errors,
		       errors == 1 ? "" : "s", warnings,
		       warnings == 1 ? "" : "s");
		return errors ? FSCK_EXIT_INCONSISTENT : FSCK_EXIT_CONSISTENT;
	}
	root = json_object_new_object();
	if (!root) {
		json_object_put(r->arr);
		cmd_error(r->ctx, "cannot build JSON output: out of memory");
		return FSCK_EXIT_INTERNAL;
	}
	err = util_json_add_str(root, "pool", path);
	err |= util_json_add_bool(root, "consistent", !errors);
	err |= util_json_add_u64(root, "errors", errors);
	err |= util_json_add_u64(root, "warnings", warnings);
	err |= util_json_add_obj(root, "findings", r->arr);
	if (err) {
		json_object_put(root);
		cmd_error(r->ctx, "cannot build JSON output: out of memory");
		return FSCK_EXIT_INTERNAL;
	}
	rc = cmd_json_print(r->ctx, root);
	if (rc != CMD_EXIT_OK)
		return FSCK_EXIT_INTERNAL;
	return errors ? FSCK_EXIT_INCONSISTENT : FSCK_EXIT_CONSISTENT;
}

static int fsck_run(struct cmd_ctx *ctx, const char *path, int verbose)
{
	struct fsck_run r = { .ctx = ctx, .verbose = verbose };
	struct pool_fsck_sink sink = { .fn = finding, .arg = &r };
	int rc;

	if (ctx->json && !(r.arr = json_object_new_array())) {
		cmd_error(ctx, "cannot build JSON output: out of memory");
		return FSCK_EXIT_INTERNAL;
	}
	rc = pool_fsck(path, &sink);
	/* the heap is checked even after pool findings: it opens on any
	 * header copy the pool can open on, else says it was not checked */
	if (rc == 0)
		rc = pma_fsck(path, &sink);
	if (rc < 0) {
		json_object_put(r.arr);
		cmd_error(ctx, "cannot check '%s': %s", path,
			  sink.rc < 0 ? strerror(-sink.rc) : pool_errormsg());
		return FSCK_EXIT_INTERNAL;
	}
	return fsck_summary(&r, path, &sink);
}

int cmd_fsck(int argc, char **argv, struct cmd_ctx *ctx)
{
	int c, rc, verbose = 0;

	while ((c = getopt_long(argc, argv, CMD_BASE_OPTSTRING "vn",
				fsck_options, NULL)) != -1) {
		if (c == 'v') {
			verbose = 1;
			continue;
		}
		if (c == 'n')
			continue; /* nothing is written anyway */
		rc = cmd_base_option(c, ctx, "fsck", fsck_usage);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(ctx, "fsck", "missing POOL argument");
	if (optind + 1 < argc)
		return cmd_usage_error(ctx, "fsck", "unexpected argument '%s'",
				       argv[optind + 1]);
	return fsck_run(ctx, argv[optind], verbose);
}
