/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl inspect: open a pool read-only and show its header, persistence
 * granularity, parts and regions, as aligned tables or one JSON document.
 * cmd_pool_print() is also what create prints. The JSON keys are API
 * (pmactl-inspect(1)): add new ones, never rename.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "files.h"
#include "pool/pool.h"
#include "recovery.h"
#include "util/json.h"

static const char inspect_usage[] =
	"usage: pmactl inspect [--json] [--human] [--heap] [--files]\n"
	"                      [--recovery] POOL\n"
	"\n"
	"Show a pool's header, granularity, parts and regions. The pool is\n"
	"opened read-only with a shared lock; POOL is its part 0.\n"
	"\n"
	"options:\n"
	"      --heap          also show the PMAlloc heap: arenas, logs, size\n"
	"                      classes, used/free bytes, largest free extent\n"
	"      --files         also show the HDPM file system: every file with\n"
	"                      its pages and page-log use\n"
	"      --recovery      also list what recovery still has to do in the\n"
	"                      heap: operations to replay per arena, torn log\n"
	"                      tails, remote frees pending\n" CMD_BASE_OPTIONS_HELP;

enum { OPT_HEAP = 256, OPT_FILES, OPT_RECOVERY };

static const struct option inspect_options[] = {
	CMD_BASE_OPTIONS,
	{ "heap", no_argument, NULL, OPT_HEAP },
	{ "files", no_argument, NULL, OPT_FILES },
	{ "recovery", no_argument, NULL, OPT_RECOVERY },
	{ NULL, 0, NULL, 0 },
};

static const char *region_type_name(uint32_t type)
{
	switch (type) {
	case POOL_REGION_FREE:
		return "free";
	case POOL_REGION_PMALLOC:
		return "pmalloc";
	case POOL_REGION_HDPM:
		return "hdpm";
	case POOL_REGION_USER:
		return "user";
	default:
		return "unknown";
	}
}

static uint64_t pool_total_size(const struct pool_hdr *hdr)
{
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < hdr->nparts && i < POOL_MAX_PARTS; i++)
		total += hdr->parts[i].size;
	return total;
}

/* the NUL-padded region name as a C string */
static void region_name(const struct pool_region *r,
			char out[POOL_REGION_NAME_LEN + 1])
{
	memcpy(out, r->name, POOL_REGION_NAME_LEN);
	out[POOL_REGION_NAME_LEN] = '\0';
}

/*
 * The path of part i, absolute: part 0 is opened by the path the user typed
 * and the others by the absolute path stored at create; showing all of
 * them absolute makes create and inspect print the same paths.
 */
static const char *part_path(const struct pool *pool, unsigned i,
			     char buf[PATH_MAX])
{
	const char *path = pool_part_path(pool, i);

	return realpath(path, buf) ? buf : path;
}

/* ------------------------------------------------------------ JSON */

static int json_header(const struct cmd_ctx *ctx, const struct pool *pool,
		       struct json_object *root)
{
	const struct pool_hdr *hdr = pool_header(pool);
	struct json_object *feat = json_object_new_object();
	char uuid[37], version[16];
	int err = 0; /* each helper returns 0 or -ENOMEM: OR them */

	if (!feat)
		return -ENOMEM;
	pool_uuid_format(hdr->uuid, uuid);
	snprintf(version, sizeof(version), "%u.%u", hdr->major, hdr->minor);
	err |= util_json_add_str(root, "uuid", uuid);
	err |= util_json_add_str(root, "version", version);
	err |= util_json_add_u64(root, "major", hdr->major);
	err |= util_json_add_u64(root, "minor", hdr->minor);
	err |= util_json_add_u64(root, "generation", hdr->generation);
	err |= util_json_add_str(root, "header_copy",
				 pool_header_copy(pool) ? "B" : "A");
	err |= util_json_add_bool(root, "header_other_valid",
				  pool_header_other_valid(pool));
	err |= util_json_add_bool(root, "header_damaged",
				  pool_header_damage(pool) != NULL);
	err |= util_json_add_u64(feat, "compat", hdr->feat_compat);
	err |= util_json_add_u64(feat, "incompat", hdr->feat_incompat);
	err |= util_json_add_u64(feat, "ro_compat", hdr->feat_ro_compat);
	err |= util_json_add_obj(root, "features", feat);
	err |= util_json_add_u64(root, "create_time", hdr->create_time);
	err |= util_json_add_str(root, "granularity",
				 pm_granularity_name(pool_granularity(pool)));
	err |= cmd_json_add_size(ctx, root, "size", pool_total_size(hdr));
	err |= util_json_add_u64(root, "nparts", hdr->nparts);
	return err ? -ENOMEM : 0;
}

static struct json_object *json_part(const struct cmd_ctx *ctx,
				     const struct pool *pool, unsigned i)
{
	const struct pool_part_entry *e = &pool_header(pool)->parts[i];
	struct json_object *part = json_object_new_object();
	char uuid[37], path[PATH_MAX];
	int err = 0;

	if (!part)
		return NULL;
	pool_uuid_format(e->uuid, uuid);
	err |= util_json_add_u64(part, "index", i);
	err |= util_json_add_str(part, "path", part_path(pool, i, path));
	err |= util_json_add_str(part, "uuid", uuid);
	err |= cmd_json_add_size(ctx, part, "size", e->size);
	if (e->node >= 0) /* unknown values are omitted */
		err |= util_json_add_i64(part, "numa_node", e->node);
	err |= util_json_add_bool(part, "devdax",
				  !!(e->flags & POOL_PART_DEVDAX));
	if (err) {
		json_object_put(part);
		return NULL;
	}
	return part;
}

static struct json_object *json_region(const struct cmd_ctx *ctx,
				       const struct pool_region *r, unsigned i)
{
	struct json_object *region = json_object_new_object();
	char name[POOL_REGION_NAME_LEN + 1];
	int err = 0;

	if (!region)
		return NULL;
	region_name(r, name);
	err |= util_json_add_u64(region, "index", i);
	err |= util_json_add_str(region, "type", region_type_name(r->type));
	err |= util_json_add_u64(region, "part", r->part);
	err |= util_json_add_hex(region, "offset", r->off);
	err |= cmd_json_add_size(ctx, region, "size", r->size);
	if (name[0])
		err |= util_json_add_str(region, "name", name);
	if (err) {
		json_object_put(region);
		return NULL;
	}
	return region;
}

/* append items 0..count-1 made by one of the two builders above */
static int json_array(const struct cmd_ctx *ctx, const struct pool *pool,
		      int regions, struct json_object *root)
{
	const struct pool_hdr *hdr = pool_header(pool);
	unsigned i, count = regions ? hdr->nregions : pool_part_count(pool);
	struct json_object *arr = json_object_new_array();
	struct json_object *item;

	if (!arr)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		item = regions ? json_region(ctx, &hdr->regions[i], i) :
				 json_part(ctx, pool, i);
		if (!item || json_object_array_add(arr, item) < 0) {
			json_object_put(item);
			json_object_put(arr);
			return -ENOMEM;
		}
	}
	return util_json_add_obj(root, regions ? "regions" : "parts", arr);
}

/* --recovery: what recovery still has to do, printed or (root) as
 * "recovery" in JSON */
static int recovery_show(const struct cmd_ctx *ctx, const char *path,
			 struct json_object *root)
{
	struct pma_fsck_pending p;
	struct json_object *o;
	int rc = pma_fsck_pending(path, &p);

	if (rc < 0)
		return cmd_error(ctx, "cannot read the logs of '%s': %s", path,
				 pma_errormsg());
	if (!root)
		rc = cmd_recovery_pending_print(&p);
	else if (!(o = cmd_recovery_pending_json(&p)))
		rc = -ENOMEM;
	else
		rc = util_json_add_obj(root, "recovery", o);
	if (rc < 0)
		return cmd_error(ctx, "cannot print the recovery: %s",
				 strerror(-rc));
	return CMD_EXIT_OK;
}

static int print_json(const struct cmd_ctx *ctx, const struct pool *pool,
		      const char *heap_path, const char *files_path,
		      const char *recovery_path)
{
	struct json_object *root = json_object_new_object();
	int rc;

	if (!root || json_header(ctx, pool, root) < 0 ||
	    json_array(ctx, pool, 0, root) < 0 ||
	    json_array(ctx, pool, 1, root) < 0) {
		json_object_put(root);
		return cmd_error(ctx,
				 "cannot build JSON output: out of memory");
	}
	if (heap_path) {
		rc = cmd_heap_json(ctx, heap_path, root);
		if (rc != CMD_EXIT_OK) {
			json_object_put(root);
			return rc;
		}
	}
	if (files_path) {
		rc = cmd_files_json(ctx, files_path, root);
		if (rc != CMD_EXIT_OK) {
			json_object_put(root);
			return rc;
		}
	}
	if (recovery_path) {
		rc = recovery_show(ctx, recovery_path, root);
		if (rc != CMD_EXIT_OK) {
			json_object_put(root);
			return rc;
		}
	}
	return cmd_json_print(ctx, root);
}

/* ------------------------------------------------------------ human */

static void print_granularity(enum pm_granularity gran)
{
	printf("granularity:  %s\n", pm_granularity_name(gran));
	if (gran != PM_GRAN_PAGE)
		return;
	printf("              note: this pool is on plain files, which persist"
	       " by msync (slow);\n"
	       "              use a fsdax/devdax namespace, or for testing on"
	       " tmpfs set\n"
	       "              PMEM2_FORCE_GRANULARITY=CACHE_LINE\n");
}

static void print_header(const struct pool *pool)
{
	const struct pool_hdr *hdr = pool_header(pool);
	char uuid[37], when[64], size[UTIL_SIZE_BUF], path[PATH_MAX];
	time_t t = (time_t)hdr->create_time;
	struct tm tm;

	pool_uuid_format(hdr->uuid, uuid);
	if (!gmtime_r(&t, &tm) ||
	    !strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(when, sizeof(when), "?");
	fputs("pool:         ", stdout);
	cmd_print_escaped(stdout, part_path(pool, 0, path));
	fputc('\n', stdout);
	printf("uuid:         %s\n", uuid);
	printf("version:      %u.%u\n", hdr->major, hdr->minor);
	printf("generation:   %" PRIu64 " (header copy %s%s)\n",
	       hdr->generation, pool_header_copy(pool) ? "B" : "A",
	       pool_header_other_valid(pool) ? "" : ", other copy invalid");
	if (pool_header_damage(pool))
		printf("header:       DAMAGED: %s\n", pool_header_damage(pool));
	printf("features:     compat 0x%" PRIx64 ", incompat 0x%" PRIx64
	       ", ro_compat 0x%" PRIx64 "\n",
	       hdr->feat_compat, hdr->feat_incompat, hdr->feat_ro_compat);
	printf("created:      %s (%" PRIu64 ")\n", when, hdr->create_time);
	print_granularity(pool_granularity(pool));
	printf("size:         %s in %u part%s\n",
	       cmd_size_str(pool_total_size(hdr), size, sizeof(size)),
	       hdr->nparts, hdr->nparts == 1 ? "" : "s");
}

static int print_parts(const struct pool *pool)
{
	static const char *const head[] = { "INDEX", "PATH", "UUID",
					    "SIZE",  "NODE", "DEVDAX" };
	const struct pool_hdr *hdr = pool_header(pool);
	char idx[16], uuid[37], size[UTIL_SIZE_BUF], node[16], path[PATH_MAX];
	const char *row[6] = { idx, NULL, uuid, size, node, NULL };
	struct cmd_table t;
	unsigned i;
	int rc;

	cmd_table_init(&t, 6, head, 1u << 0 | 1u << 3 | 1u << 4);
	for (i = 0; i < pool_part_count(pool); i++) {
		snprintf(idx, sizeof(idx), "%u", i);
		row[1] = part_path(pool, i, path);
		pool_uuid_format(hdr->parts[i].uuid, uuid);
		cmd_size_str(hdr->parts[i].size, size, sizeof(size));
		snprintf(node, sizeof(node), "%d", (int)hdr->parts[i].node);
		if (hdr->parts[i].node < 0)
			snprintf(node, sizeof(node), "-");
		row[5] = hdr->parts[i].flags & POOL_PART_DEVDAX ? "yes" : "no";
		cmd_table_add(&t, row);
	}
	printf("\nparts:\n");
	rc = cmd_table_print(&t, stdout, 2);
	cmd_table_release(&t);
	return rc;
}

static int print_regions(const struct pool *pool)
{
	static const char *const head[] = { "INDEX",  "TYPE", "PART",
					    "OFFSET", "SIZE", "NAME" };
	const struct pool_hdr *hdr = pool_header(pool);
	char idx[16], part[16], off[24], size[UTIL_SIZE_BUF];
	char name[POOL_REGION_NAME_LEN + 1];
	const char *row[6] = { idx, NULL, part, off, size, name };
	struct cmd_table t;
	unsigned i;
	int rc;

	printf("\nregions:%s\n", hdr->nregions ? "" : " none");
	if (!hdr->nregions)
		return 0;
	cmd_table_init(&t, 6, head, 1u << 0 | 1u << 2 | 1u << 4);
	for (i = 0; i < hdr->nregions && i < POOL_MAX_REGIONS; i++) {
		snprintf(idx, sizeof(idx), "%u", i);
		row[1] = region_type_name(hdr->regions[i].type);
		snprintf(part, sizeof(part), "%u", hdr->regions[i].part);
		snprintf(off, sizeof(off), "0x%" PRIx64, hdr->regions[i].off);
		cmd_size_str(hdr->regions[i].size, size, sizeof(size));
		region_name(&hdr->regions[i], name);
		cmd_table_add(&t, row);
	}
	rc = cmd_table_print(&t, stdout, 2);
	cmd_table_release(&t);
	return rc;
}

/* the pool, and with heap_path / files_path / recovery_path (the pool's
 * path) its heap, its HDPM files and its pending recovery as well */
static int pool_print(const struct cmd_ctx *ctx, const struct pool *pool,
		      const char *heap_path, const char *files_path,
		      const char *recovery_path)
{
	int rc;

	if (ctx->json)
		return print_json(ctx, pool, heap_path, files_path,
				  recovery_path);
	print_header(pool);
	if (print_parts(pool) < 0 || print_regions(pool) < 0)
		return cmd_error(ctx, "cannot print the pool: out of memory");
	rc = heap_path ? cmd_heap_print(ctx, heap_path) : CMD_EXIT_OK;
	if (rc == CMD_EXIT_OK && files_path)
		rc = cmd_files_print(ctx, files_path);
	if (rc == CMD_EXIT_OK && recovery_path) {
		putchar('\n');
		rc = recovery_show(ctx, recovery_path, NULL);
	}
	return rc;
}

int cmd_pool_print(const struct cmd_ctx *ctx, const struct pool *pool)
{
	return pool_print(ctx, pool, NULL, NULL, NULL);
}

int cmd_inspect(int argc, char **argv, struct cmd_ctx *ctx)
{
	int c, rc, heap = 0, files = 0, recovery = 0;

	while ((c = cmd_getopt(ctx, "inspect", argc, argv, CMD_BASE_OPTSTRING,
			       inspect_options)) != -1) {
		if (c == OPT_HEAP || c == OPT_FILES || c == OPT_RECOVERY) {
			*(c == OPT_HEAP	 ? &heap :
			  c == OPT_FILES ? &files :
					   &recovery) = 1;
			continue;
		}
		rc = cmd_base_option(c, ctx, "inspect", inspect_usage);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(ctx, "inspect", "missing POOL argument");
	if (optind + 1 < argc)
		return cmd_usage_error(ctx, "inspect",
				       "unexpected argument '%s'",
				       argv[optind + 1]);
	rc = cmd_pool_open(ctx, argv[optind],
			   POOL_OPEN_RDONLY | POOL_OPEN_SHOW_OLDER);
	if (rc != CMD_EXIT_OK)
		return rc;
	if (pool_header_damage(ctx->pool)) {
		/* shown, but a failure: the pool cannot be opened for writing
		 * and what is shown may predate its last changes */
		cmd_error(ctx, "pool '%s' is damaged: %s", argv[optind],
			  pool_header_damage(ctx->pool));
		rc = pool_print(ctx, ctx->pool, NULL, NULL, NULL);
		return rc == CMD_EXIT_OK ? CMD_EXIT_FAIL : rc;
	}
	return pool_print(ctx, ctx->pool, heap ? argv[optind] : NULL,
			  files ? argv[optind] : NULL,
			  recovery ? argv[optind] : NULL);
}
