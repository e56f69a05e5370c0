/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl ns: list the persistent memory namespaces (lib/ns, libndctl) with
 * their NUMA node, device and fsdax mount point. A machine without PM has
 * none: that is a normal, successful answer.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ns/ns.h"
#include "util/json.h"

static const char ns_usage[] =
	"usage: pmactl ns [--json] [--human]\n"
	"\n"
	"List persistent memory namespaces: bus, region, name, mode (fsdax,\n"
	"devdax, sector, raw), size, NUMA node, device and mount point.\n"
	"\n"
	"options:\n" CMD_BASE_OPTIONS_HELP;

static const struct option ns_options[] = {
	CMD_BASE_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* add key only when s is not empty (unknown values are omitted) */
static int json_add_nonempty(struct json_object *obj, const char *key,
			     const char *s)
{
	return s[0] ? util_json_add_str(obj, key, s) : 0;
}

static struct json_object *json_ns(const struct cmd_ctx *ctx,
				   const struct ns_namespace *ns)
{
	struct json_object *obj = json_object_new_object();
	int err = 0; /* each helper returns 0 or -ENOMEM: OR them */

	if (!obj)
		return NULL;
	err |= json_add_nonempty(obj, "bus", ns->bus);
	err |= json_add_nonempty(obj, "region", ns->region);
	err |= json_add_nonempty(obj, "name", ns->name);
	err |= json_add_nonempty(obj, "mode", ns->mode);
	err |= cmd_json_add_size(ctx, obj, "size", ns->size);
	if (ns->node >= 0)
		err |= util_json_add_i64(obj, "numa_node", ns->node);
	err |= json_add_nonempty(obj, "device", ns->device);
	err |= json_add_nonempty(obj, "dev_path", ns->dev_path);
	err |= json_add_nonempty(obj, "mount", ns->mount);
	err |= json_add_nonempty(obj, "mount_options", ns->mount_opts);
	err |= json_add_nonempty(obj, "uuid", ns->uuid);
	if (err) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

static int print_json(const struct cmd_ctx *ctx,
		      const struct ns_namespace *list, size_t count)
{
	struct json_object *root = json_object_new_object();
	struct json_object *arr = json_object_new_array();
	struct json_object *item;
	size_t i;

	if (!root || !arr)
		goto out_nomem;
	for (i = 0; i < count; i++) {
		item = json_ns(ctx, &list[i]);
		if (!item || json_object_array_add(arr, item) < 0) {
			json_object_put(item);
			goto out_nomem;
		}
	}
	if (util_json_add_obj(root, "namespaces", arr) < 0) {
		arr = NULL; /* util_json_add_obj took it */
		goto out_nomem;
	}
	return cmd_json_print(ctx, root);

out_nomem:
	json_object_put(arr);
	json_object_put(root);
	return cmd_error(ctx, "cannot build JSON output: out of memory");
}

static int print_table(const struct cmd_ctx *ctx,
		       const struct ns_namespace *list, size_t count)
{
	static const char *const head[] = {
		"BUS",	"REGION", "NAME",   "MODE",
		"SIZE", "NODE",	  "DEVICE", "MOUNT"
	};
	char size[UTIL_SIZE_BUF], node[16];
	const char *row[8];
	struct cmd_table t;
	size_t i;
	int rc;

	if (count == 0) {
		printf("no persistent memory namespaces found\n");
		return CMD_EXIT_OK;
	}
	cmd_table_init(&t, 8, head, 1u << 4 | 1u << 5);
	for (i = 0; i < count; i++) {
		snprintf(node, sizeof(node), "%d", list[i].node);
		row[0] = list[i].bus;
		row[1] = list[i].region;
		row[2] = list[i].name;
		row[3] = list[i].mode;
		row[4] = cmd_size_str(list[i].size, size, sizeof(size));
		row[5] = list[i].node >= 0 ? node : "-";
		row[6] = list[i].dev_path[0] ? list[i].dev_path : "-";
		row[7] = list[i].mount[0] ? list[i].mount : "-";
		cmd_table_add(&t, row);
	}
	rc = cmd_table_print(&t, stdout, 0);
	cmd_table_release(&t);
	if (rc < 0)
		return cmd_error(ctx, "cannot print namespaces: %s",
				 strerror(-rc));
	return CMD_EXIT_OK;
}

int cmd_ns(int argc, char **argv, struct cmd_ctx *ctx)
{
	struct ns_namespace *list = NULL;
	size_t count = 0;
	int c, rc;

	while ((c = cmd_getopt(ctx, "ns", argc, argv, CMD_BASE_OPTSTRING,
			       ns_options)) != -1) {
		rc = cmd_base_option(c, ctx, "ns", ns_usage);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	if (optind < argc)
		return cmd_usage_error(ctx, "ns", "unexpected argument '%s'",
				       argv[optind]);
	rc = ns_list(&list, &count);
	if (rc < 0)
		return cmd_error(ctx, "cannot list namespaces: %s",
				 ns_errormsg());
	if (ctx->json)
		rc = print_json(ctx, list, count);
	else
		rc = print_table(ctx, list, count);
	free(list);
	return rc;
}
