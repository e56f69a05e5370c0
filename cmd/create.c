/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl create: make a new pool of one or more parts (files or devdax
 * devices) and print it as inspect does. Everything the user typed is
 * validated here (exit 2) before lib/pool is asked to do anything (exit 1).
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "ns/ns.h"
#include "pool/pool.h"
#include "seam.h"
#include "show.h"
#include "util/size.h"

#define CREATE_MAX_NODE 1023 /* the kernel's largest MAX_NUMNODES - 1 */
#define CREATE_MAX_REGIONS 16 /* pma_config_set_regions' largest */

static const char create_usage[] =
	"usage: pmactl create POOL --size SIZE [--parts PATH[,PATH...]]\n"
	"                     [--node N[,N...]] [--regions K] [--mode MODE]\n"
	"                     [--force]\n"
	"       pmactl create POOL --size SIZE --all-nodes [--mode MODE] [--force]\n"
	"       pmactl --socket PATH create NAME --size SIZE [--mode MODE]\n"
	"\n"
	"Create a pool. POOL is part 0 (a file or a devdax device); --parts\n"
	"adds more parts, one per NUMA node. With --socket (or $PMAD_SOCKET)\n"
	"pmad creates the pool NAME, owned by you, in its state directory.\n"
	"\n"
	"options:\n"
	"  -s, --size SIZE     size of each part, a multiple of 64 KiB\n"
	"                      (4G, 512MiB, 1GB = 10^9);\n"
	"                      optional for devdax parts (default: the device)\n"
	"  -p, --parts LIST    comma-separated paths of parts 1, 2, ...\n"
	"  -n, --node LIST     NUMA node of each part (default: detected)\n"
	"  -r, --regions K     carve every part into K equal PMAlloc heap\n"
	"                      regions (a power of two, 1..16; default 1:\n"
	"                      no heap until a program opens it)\n"
	"  -A, --all-nodes     one part per NUMA node that has a mounted fsdax\n"
	"                      namespace: POOL (on one of them) is part 0, the\n"
	"                      others are NAME.partN on the other namespaces\n"
	"  -m, --mode MODE     octal file mode of new files (default 0660;\n"
	"                      through pmad 0600)\n"
	"  -f, --force         overwrite an existing file or pool\n" CMD_BASE_OPTIONS_HELP;

struct create_opts {
	const char *paths[POOL_MAX_PARTS];
	unsigned nparts;
	int nodes[POOL_MAX_PARTS];
	unsigned nnodes;
	uint64_t size; /* 0: not given */
	mode_t mode;
	int mode_given;
	int all_nodes; /* --all-nodes */
	unsigned flags; /* enum pool_create_flags */
	unsigned regions; /* --regions (1: none given) */
	char all_paths[POOL_MAX_PARTS][PATH_MAX]; /* --all-nodes' parts */
};

static const struct option create_options[] = {
	CMD_BASE_OPTIONS,
	{ "size", required_argument, NULL, 's' },
	{ "parts", required_argument, NULL, 'p' },
	{ "node", required_argument, NULL, 'n' },
	{ "all-nodes", no_argument, NULL, 'A' },
	{ "mode", required_argument, NULL, 'm' },
	{ "force", no_argument, NULL, 'f' },
	{ "regions", required_argument, NULL, 'r' },
	{ NULL, 0, NULL, 0 },
};

static int parse_size(const struct cmd_ctx *ctx, const char *arg,
		      uint64_t *ret_size)
{
	char buf[UTIL_SIZE_BUF];
	uint64_t size;
	int rc;

	rc = util_size_parse(arg, &size);
	if (rc == -ERANGE)
		return cmd_usage_error(ctx, "create", "size '%s' is too large",
				       arg);
	if (rc < 0)
		return cmd_usage_error(ctx, "create",
				       "invalid size '%s' (try 4G or 512MiB)",
				       arg);
	if (size < POOL_PART_MIN_SIZE)
		return cmd_usage_error(
			ctx, "create",
			"size '%s' is too small: a part needs at least %s", arg,
			cmd_size_str(POOL_PART_MIN_SIZE, buf, sizeof(buf)));
	if (size % POOL_ALIGN)
		return cmd_usage_error(
			ctx, "create", "size '%s' is not a multiple of %s", arg,
			cmd_size_str(POOL_ALIGN, buf, sizeof(buf)));
	/* byte offsets in a part must fit below the part index bits */
	if (size > POOL_OFF_MASK + 1)
		return cmd_usage_error(
			ctx, "create",
			"size '%s' is too large: a part has at most %s", arg,
			cmd_size_str(POOL_OFF_MASK + 1, buf, sizeof(buf)));
	*ret_size = size;
	return CMD_CONTINUE;
}

/* split a comma list in place (optarg lives in argv, which is writable) */
static int parse_paths(const struct cmd_ctx *ctx, char *arg,
		       struct create_opts *o)
{
	char *path;

	while ((path = strsep(&arg, ",")) != NULL) {
		if (*path == '\0')
			return cmd_usage_error(ctx, "create",
					       "empty path in --parts");
		if (o->nparts == POOL_MAX_PARTS)
			return cmd_usage_error(
				ctx, "create",
				"too many parts: a pool has at most %d",
				POOL_MAX_PARTS);
		o->paths[o->nparts++] = path;
	}
	return CMD_CONTINUE;
}

static int parse_nodes(const struct cmd_ctx *ctx, char *arg,
		       struct create_opts *o)
{
	char *item, *end;
	long node;

	o->nnodes = 0;
	while ((item = strsep(&arg, ",")) != NULL) {
		errno = 0;
		node = strtol(item, &end, 10);
		if (*item == '\0' || *end != '\0' || errno || node < 0 ||
		    node > CREATE_MAX_NODE)
			return cmd_usage_error(
				ctx, "create",
				"invalid NUMA node '%s' (expected 0..%d)", item,
				CREATE_MAX_NODE);
		if (o->nnodes == POOL_MAX_PARTS)
			return cmd_usage_error(
				ctx, "create",
				"too many nodes in --node: at most %d",
				POOL_MAX_PARTS);
		o->nodes[o->nnodes++] = (int)node;
	}
	return CMD_CONTINUE;
}

static int parse_mode(const struct cmd_ctx *ctx, const char *arg,
		      mode_t *ret_mode)
{
	unsigned long mode;
	char *end;

	errno = 0;
	mode = strtoul(arg, &end, 8);
	if (*arg == '\0' || *end != '\0' || errno || mode > 07777 ||
	    strspn(arg, "01234567") != strlen(arg))
		return cmd_usage_error(
			ctx, "create",
			"invalid mode '%s' (expected octal such as 0660)", arg);
	*ret_mode = (mode_t)mode;
	return CMD_CONTINUE;
}

/* --regions K: a power of two, 1..CREATE_MAX_REGIONS */
static int parse_regions(const struct cmd_ctx *ctx, const char *arg,
			 unsigned *ret_regions)
{
	unsigned long k;
	char *end;

	errno = 0;
	k = strtoul(arg, &end, 10);
	if (*arg < '0' || *arg > '9' || *end != '\0' || errno || k < 1 ||
	    k > CREATE_MAX_REGIONS || (k & (k - 1)))
		return cmd_usage_error(
			ctx, "create",
			"invalid --regions '%s' (a power of two, "
			"1..%u)",
			arg, CREATE_MAX_REGIONS);
	*ret_regions = (unsigned)k;
	return CMD_CONTINUE;
}

static int parse_option(int c, struct cmd_ctx *ctx, struct create_opts *o)
{
	switch (c) {
	case 's':
		return parse_size(ctx, optarg, &o->size);
	case 'p':
		return parse_paths(ctx, optarg, o);
	case 'n':
		return parse_nodes(ctx, optarg, o);
	case 'm':
		o->mode_given = 1;
		return parse_mode(ctx, optarg, &o->mode);
	case 'f':
		o->flags |= POOL_CREATE_FORCE;
		return CMD_CONTINUE;
	case 'A':
		o->all_nodes = 1;
		return CMD_CONTINUE;
	case 'r':
		return parse_regions(ctx, optarg, &o->regions);
	default:
		return cmd_base_option(c, ctx, "create", create_usage);
	}
}

/* POOL goes first: --parts only appends to paths[1..] */
static int parse_args(int argc, char **argv, struct cmd_ctx *ctx,
		      struct create_opts *o)
{
	int c, rc;

	o->nparts = 1;
	o->mode = 0660;
	o->regions = 1;
	while ((c = cmd_getopt(ctx, "create", argc, argv,
			       CMD_BASE_OPTSTRING "s:p:n:m:fAr:",
			       create_options)) != -1) {
		rc = parse_option(c, ctx, o);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(ctx, "create", "missing POOL argument");
	if (optind + 1 < argc)
		return cmd_usage_error(ctx, "create",
				       "unexpected argument '%s'",
				       argv[optind + 1]);
	if (argv[optind][0] == '\0')
		return cmd_usage_error(ctx, "create", "empty POOL path");
	o->paths[0] = argv[optind];
	return CMD_CONTINUE;
}

/* every node given with --node is online (in the fake topology if one is
 * set); node ids may have gaps, such as nodes 0 and 2 */
static int check_nodes(const struct cmd_ctx *ctx, const struct create_opts *o)
{
	char online[256];
	unsigned i;

	if (o->nnodes && o->nnodes != o->nparts)
		return cmd_usage_error(
			ctx, "create",
			"--node names %u node%s but the pool has %u part%s",
			o->nnodes, o->nnodes == 1 ? "" : "s", o->nparts,
			o->nparts == 1 ? "" : "s");
	for (i = 0; i < o->nnodes; i++) {
		if (ns_node_is_online(o->nodes[i]))
			continue;
		if (ns_nodes_online_format(online, sizeof(online)) < 0)
			memcpy(online + sizeof(online) - 4, "...", 4);
		return cmd_usage_error(ctx, "create",
				       "NUMA node %d does not exist or is not "
				       "online (online: %s)",
				       o->nodes[i], online);
	}
	return CMD_CONTINUE;
}

/* the mounted fsdax namespace whose mount point holds dir (both
 * resolved), or NULL */
static const struct ns_namespace *ns_of_dir(const struct ns_namespace *list,
					    size_t n, const char *dir)
{
	char rdir[PATH_MAX], rmnt[PATH_MAX];
	size_t i, len;

	if (!realpath(dir, rdir))
		return NULL;
	for (i = 0; i < n; i++) {
		if (strcmp(list[i].mode, "fsdax") != 0 || !list[i].mount[0] ||
		    !realpath(list[i].mount, rmnt))
			continue;
		len = strlen(rmnt);
		if (!strncmp(rdir, rmnt, len) &&
		    (rdir[len] == '/' || rdir[len] == '\0' ||
		     !strcmp(rmnt, "/")))
			return &list[i];
	}
	return NULL;
}

/*
 * --all-nodes: POOL is part 0, on a mounted fsdax namespace (its node is
 * that namespace's); every other node with one gets a part there, named
 * after POOL (NAME.partN), in node order.
 */
static int place_all_nodes(const struct cmd_ctx *ctx, struct create_opts *o)
{
	struct ns_namespace *list = NULL;
	const struct ns_namespace *home, *ns;
	char dirbuf[PATH_MAX], basebuf[PATH_MAX];
	size_t n = 0, i, k;
	int rc, used[POOL_MAX_PARTS];

	if (o->nparts > 1 || o->nnodes)
		return cmd_usage_error(ctx, "create",
				       "--all-nodes picks the parts and their "
				       "nodes: not with --parts or --node");
	rc = ns_list(&list, &n);
	if (rc < 0)
		return cmd_error(ctx, "cannot list the PM namespaces: %s",
				 ns_errormsg());
	snprintf(dirbuf, sizeof(dirbuf), "%s", o->paths[0]);
	snprintf(basebuf, sizeof(basebuf), "%s", o->paths[0]);
	home = ns_of_dir(list, n, dirname(dirbuf));
	if (!home || home->node < 0) {
		free(list);
		return cmd_usage_error(ctx, "create",
				       "--all-nodes: '%s' is not on a mounted "
				       "fsdax namespace with a NUMA node (see "
				       "pmactl ns)",
				       o->paths[0]);
	}
	o->nodes[0] = home->node;
	used[0] = home->node;
	o->nnodes = o->nparts = 1;
	for (;;) { /* the lowest node not used yet that has a namespace */
		ns = NULL;
		for (i = 0; i < n; i++) {
			if (strcmp(list[i].mode, "fsdax") != 0 ||
			    !list[i].mount[0] || list[i].node < 0)
				continue;
			for (k = 0; k < o->nparts && used[k] != list[i].node;
			     k++)
				;
			if (k == o->nparts && (!ns || list[i].node < ns->node))
				ns = &list[i];
		}
		if (!ns)
			break;
		if (o->nparts == POOL_MAX_PARTS) {
			free(list);
			return cmd_usage_error(
				ctx, "create",
				"--all-nodes: more than %d nodes",
				POOL_MAX_PARTS);
		}
		k = o->nparts++;
		if ((size_t)snprintf(o->all_paths[k], sizeof(o->all_paths[k]),
				     "%s/%s.part%zu", ns->mount,
				     basename(basebuf),
				     k) >= sizeof(o->all_paths[k])) {
			free(list);
			return cmd_usage_error(ctx, "create",
					       "--all-nodes: path too long");
		}
		o->paths[k] = o->all_paths[k];
		o->nodes[k] = used[k] = ns->node;
		o->nnodes = o->nparts;
	}
	free(list);
	return CMD_CONTINUE;
}

static int check_args(const struct cmd_ctx *ctx, const struct create_opts *o)
{
	unsigned i, j;
	int rc;

	rc = check_nodes(ctx, o);
	if (rc != CMD_CONTINUE)
		return rc;
	for (i = 0; i < o->nparts; i++)
		for (j = 0; j < i; j++)
			if (strcmp(o->paths[i], o->paths[j]) == 0)
				return cmd_usage_error(
					ctx, "create",
					"part '%s' is listed twice",
					o->paths[i]);
	if (o->size)
		return CMD_CONTINUE;
	for (i = 0; i < o->nparts; i++)
		if (ns_path_is_devdax(o->paths[i]) != 1)
			return cmd_usage_error(
				ctx, "create",
				"missing --size (required unless every part "
				"is a devdax device)");
	return CMD_CONTINUE;
}

int cmd_create(int argc, char **argv, struct cmd_ctx *ctx)
{
	struct create_opts opts = { 0 };
	struct json_object *doc = NULL;
	struct cmd_create_args args;
	int rc;

	rc = parse_args(argc, argv, ctx, &opts);
	if (rc != CMD_CONTINUE)
		return rc;
	if (opts.all_nodes && ctx->seam != &cmd_seam_local)
		return cmd_usage_error(ctx, "create",
				       "--all-nodes is not available through "
				       "pmad (its config places pools: "
				       "parts: all-nodes)");
	if (opts.all_nodes) {
		rc = place_all_nodes(ctx, &opts);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	rc = check_args(ctx, &opts);
	if (rc != CMD_CONTINUE)
		return rc;
	args = (struct cmd_create_args){
		.paths = opts.paths,
		.nparts = opts.nparts,
		.nodes = opts.nodes,
		.nnodes = opts.nnodes,
		.size = opts.size,
		.mode = opts.mode,
		.mode_given = opts.mode_given,
		.flags = opts.flags,
		.regions = opts.regions,
	};
	rc = ctx->seam->create(ctx, &args, &doc);
	return cmd_doc_print(ctx, rc, doc, cmd_show_pool);
}
