/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl pool: the pools pmad serves, through its control socket
 * (--socket, $PMAD_SOCKET or the default path): list, create, stat,
 * inspect, compact. Each subcommand is one request (lib/proto); the reply's
 * result is printed as text, or as it came with --json. pmad's errors are
 * shown with their errno name and exit 1.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "proto/proto.h"
#include "seam.h"
#include "show.h"
#include "util/size.h"

static const char pool_usage[] =
	"usage: pmactl [--socket PATH] pool list\n"
	"       pmactl [--socket PATH] pool create NAME --size SIZE "
	"[--regions K]\n"
	"                                  [--mode MODE]\n"
	"       pmactl [--socket PATH] pool stat|inspect|compact NAME\n"
	"\n"
	"Ask pmad about the pools it serves, or create one. The socket is\n"
	"--socket (a global option), $PMAD_SOCKET, or the default\n"
	"(/run/pmad/pmad.sock; $XDG_RUNTIME_DIR/pmad/pmad.sock for users).\n"
	"\n"
	"subcommands:\n"
	"  list                every pool: size, owner, mode, state\n"
	"  create NAME         a new pool owned by you in pmad's state dir\n"
	"  stat NAME           a pool and its heap usage\n"
	"  inspect NAME        stat plus header, parts, regions, size classes\n"
	"  compact NAME        checkpoint the heap (apply and truncate logs)\n"
	"\n"
	"options:\n"
	"  -s, --size SIZE     create: size of the pool (64M, 1GiB)\n"
	"  -r, --regions K     create: heap regions (a power of two, 1..16;\n"
	"                      default 1): K processes can share the pool\n"
	"  -m, --mode MODE     create: octal mode (default 0600)\n" CMD_BASE_OPTIONS_HELP;

static const struct option pool_options[] = {
	CMD_BASE_OPTIONS,
	{ "size", required_argument, NULL, 's' },
	{ "mode", required_argument, NULL, 'm' },
	{ "regions", required_argument, NULL, 'r' },
	{ NULL, 0, NULL, 0 },
};

struct pool_opts {
	const char *sub; /* list, create, ... */
	const char *name;
	const char *size;
	const char *mode;
	const char *regions;
};

/* subcommands: request op and whether NAME is needed */
static const struct {
	const char *sub;
	const char *op;
	int needs_name;
} pool_subs[] = {
	{ "list", "pool_list", 0 },	  { "create", "pool_create", 1 },
	{ "stat", "pool_stat", 1 },	  { "inspect", "pool_inspect", 1 },
	{ "compact", "pool_compact", 1 },
};

#define NSUBS (sizeof(pool_subs) / sizeof(pool_subs[0]))

static int parse_args(int argc, char **argv, struct cmd_ctx *ctx,
		      struct pool_opts *o, size_t *ret_sub)
{
	int c, rc;
	size_t i;

	while ((c = cmd_getopt(ctx, "pool", argc, argv,
			       CMD_BASE_OPTSTRING "s:m:r:", pool_options)) !=
	       -1) {
		if (c == 's')
			o->size = optarg;
		else if (c == 'm')
			o->mode = optarg;
		else if (c == 'r')
			o->regions = optarg;
		else if ((rc = cmd_base_option(c, ctx, "pool", pool_usage)) !=
			 CMD_CONTINUE)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(ctx, "pool", "missing subcommand");
	o->sub = argv[optind++];
	for (i = 0; i < NSUBS && strcmp(pool_subs[i].sub, o->sub) != 0; i++)
		;
	if (i == NSUBS)
		return cmd_usage_error(ctx, "pool", "unknown subcommand '%s'",
				       o->sub);
	if (pool_subs[i].needs_name && optind < argc)
		o->name = argv[optind++];
	if (pool_subs[i].needs_name && !o->name)
		return cmd_usage_error(ctx, "pool", "missing NAME");
	if (optind < argc)
		return cmd_usage_error(ctx, "pool", "unexpected argument '%s'",
				       argv[optind]);
	if ((o->size || o->mode || o->regions) && strcmp(o->sub, "create") != 0)
		return cmd_usage_error(ctx, "pool",
				       "--size, --regions and --mode are for "
				       "create");
	if (strcmp(o->sub, "create") == 0 && !o->size)
		return cmd_usage_error(ctx, "pool", "missing --size");
	*ret_sub = i;
	return CMD_CONTINUE;
}

/* --regions K: a power of two, 1..16, or -1 */
static int regions_parse(const char *s)
{
	unsigned long k;
	char *end;

	errno = 0;
	k = strtoul(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || k < 1 || k > 16 ||
	    (k & (k - 1)))
		return -1;
	return (int)k;
}

static int check_create_args(const struct cmd_ctx *ctx,
			     const struct pool_opts *o)
{
	uint64_t size;

	if (util_size_parse(o->size, &size) < 0 || size == 0)
		return cmd_usage_error(ctx, "pool",
				       "invalid size '%s' (try 64M or 1GiB)",
				       o->size);
	if (o->mode &&
	    (!*o->mode || strspn(o->mode, "01234567") != strlen(o->mode)))
		return cmd_usage_error(ctx, "pool",
				       "invalid mode '%s' (expected octal "
				       "such as 0600)",
				       o->mode);
	if (o->regions && regions_parse(o->regions) < 0)
		return cmd_usage_error(ctx, "pool",
				       "invalid --regions '%s' (a power of "
				       "two, 1..16)",
				       o->regions);
	return CMD_CONTINUE;
}

static struct json_object *build_args(const struct pool_opts *o)
{
	struct json_object *args = json_object_new_object();
	int err = !args;

	if (args && o->name)
		err |= json_object_object_add(args, "name",
					      json_object_new_string(o->name));
	if (args && o->size)
		err |= json_object_object_add(args, "size",
					      json_object_new_string(o->size));
	if (args && o->mode)
		err |= json_object_object_add(args, "mode",
					      json_object_new_string(o->mode));
	if (args && o->regions)
		err |= json_object_object_add(
			args, "regions",
			json_object_new_int(regions_parse(o->regions)));
	if (err) {
		json_object_put(args);
		return NULL;
	}
	return args;
}

static const char *user_name(uint64_t uid, char *buf, size_t len)
{
	struct passwd *pw = getpwuid((uid_t)uid);

	if (pw)
		return pw->pw_name;
	snprintf(buf, len, "%" PRIu64, uid);
	return buf;
}

static const char *group_name(uint64_t gid, char *buf, size_t len)
{
	struct group *gr = getgrgid((gid_t)gid);

	if (gr)
		return gr->gr_name;
	snprintf(buf, len, "%" PRIu64, gid);
	return buf;
}

static void print_field(const char *key, const char *value)
{
	if (value)
		printf("%-14s %s\n", key, value);
}

static void print_size(const char *key, struct json_object *o, const char *jkey)
{
	char buf[UTIL_SIZE_BUF];

	if (json_object_object_get_ex(o, jkey, NULL))
		print_field(key,
			    cmd_size_str(cmd_ju64(o, jkey), buf, sizeof(buf)));
}

static void print_heap(struct json_object *result)
{
	struct json_object *h;
	char buf[32];

	if (!json_object_object_get_ex(result, "heap", &h))
		return;
	print_size("heap size:", h, "size");
	print_size("used:", h, "used");
	print_size("free:", h, "free");
	print_size("largest free:", h, "largest_free_extent");
	snprintf(buf, sizeof(buf), "%" PRIu64 " of %" PRIu64,
		 cmd_ju64(h, "log_records"), cmd_ju64(h, "log_capacity"));
	print_field("log records:", buf);
	snprintf(buf, sizeof(buf), "%" PRIu64, cmd_ju64(h, "narenas"));
	print_field("arenas:", buf);
}

static void print_header(struct json_object *h)
{
	struct json_object *parts, *p;
	char buf[UTIL_SIZE_BUF], line[4200];
	size_t i;

	print_field("uuid:", cmd_jstr(h, "uuid"));
	print_field("version:", cmd_jstr(h, "version"));
	print_field("granularity:", cmd_jstr(h, "granularity"));
	if (!json_object_object_get_ex(h, "parts", &parts))
		return;
	for (i = 0; i < json_object_array_length(parts); i++) {
		p = json_object_array_get_idx(parts, i);
		snprintf(line, sizeof(line), "%s  %s  node %s",
			 cmd_size_str(cmd_ju64(p, "size"), buf, sizeof(buf)),
			 cmd_jstr(p, "path"),
			 cmd_jstr(p, "numa_node") ? cmd_jstr(p, "numa_node") :
						    "?");
		print_field(i == 0 ? "parts:" : "", line);
	}
}

static void print_pool(struct json_object *result)
{
	char buf[UTIL_SIZE_BUF], owner[24], group[24];

	print_field("name:", cmd_jstr(result, "name"));
	print_field("path:", cmd_jstr(result, "path"));
	print_field("size:",
		    cmd_size_str(cmd_ju64(result, "size"), buf, sizeof(buf)));
	print_field("owner:",
		    user_name(cmd_ju64(result, "owner"), owner, sizeof(owner)));
	print_field("group:", group_name(cmd_ju64(result, "group"), group,
					 sizeof(group)));
	print_field("mode:", cmd_jstr(result, "mode"));
	print_field("state:", cmd_jstr(result, "state"));
	print_field("error:", cmd_jstr(result, "error"));
	print_field("clients:", cmd_jstr(result, "clients"));
	print_header(result);
	print_heap(result);
}

static int print_result(const struct cmd_ctx *ctx, const char *sub,
			struct json_object *result)
{
	int rc;

	if (ctx->json)
		return cmd_json_print(ctx, json_object_get(result));
	if (strcmp(sub, "list") == 0) {
		rc = cmd_show_list(result);
		if (rc < 0)
			return cmd_error(ctx, "unexpected reply from pmad");
	} else {
		print_pool(result);
	}
	return CMD_EXIT_OK;
}

int cmd_pool(int argc, char **argv, struct cmd_ctx *ctx)
{
	struct pool_opts opts = { .sub = "" };
	struct proto_reply rep = { .message = "" };
	struct json_object *args;
	size_t sub = 0;
	int rc;

	rc = parse_args(argc, argv, ctx, &opts, &sub);
	if (rc == CMD_CONTINUE && strcmp(opts.sub, "create") == 0)
		rc = check_create_args(ctx, &opts);
	if (rc != CMD_CONTINUE)
		return rc;
	args = build_args(&opts);
	if (!args)
		return cmd_error(ctx, "out of memory");
	rc = cmd_pmad_call(ctx, pool_subs[sub].op, args, &rep);
	if (rc != CMD_EXIT_OK)
		return rc;
	if (rep.err)
		rc = cmd_error(ctx, "pool %s%s%s: %s (%s)", opts.sub,
			       opts.name ? " " : "", opts.name ? opts.name : "",
			       rep.message, proto_errno_name(rep.err));
	else
		rc = print_result(ctx, opts.sub, rep.result);
	proto_reply_release(&rep);
	return rc;
}
