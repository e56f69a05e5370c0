/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl text printers of list and stat documents (show.h): the pool
 * table, per pool usage with pmad's services, and the same figures in
 * node_exporter's textfile collector format (Prometheus text format 0.0.4:
 * "# HELP" and "# TYPE" once per metric, then one sample per pool labelled
 * pool="NAME", every name prefixed pmad_).
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "show.h"

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

int cmd_show_list(struct json_object *doc)
{
	static const char *const head[] = { "NAME", "SIZE",  "OWNER",	"GROUP",
					    "MODE", "STATE", "CLIENTS", "PATH" };
	char size[UTIL_SIZE_BUF], owner[24], group[24], clients[24];
	struct json_object *pools = cmd_jobj(doc, "pools"), *p;
	const char *row[8];
	struct cmd_table t;
	size_t i;
	int rc;

	if (!pools || !json_object_is_type(pools, json_type_array))
		return -EPROTO;
	cmd_table_init(&t, 8, head, 0x42);
	for (i = 0; i < cmd_jlen(pools); i++) {
		p = json_object_array_get_idx(pools, i);
		snprintf(clients, sizeof(clients), "%" PRIu64,
			 cmd_ju64(p, "clients"));
		row[0] = cmd_jstr(p, "name");
		row[1] = cmd_size_str(cmd_ju64(p, "size"), size, sizeof(size));
		row[2] = user_name(cmd_ju64(p, "owner"), owner, sizeof(owner));
		row[3] = group_name(cmd_ju64(p, "group"), group, sizeof(group));
		row[4] = cmd_jstr(p, "mode");
		row[5] = cmd_jstr(p, "state");
		row[6] = clients;
		row[7] = cmd_jstr(p, "path");
		cmd_table_add(&t, row);
	}
	rc = t.nrows > 1 ? cmd_table_print(&t, stdout, 0) : 0;
	if (t.nrows == 1)
		puts("no pools");
	cmd_table_release(&t);
	return rc;
}

/* ------------------------------------------------------------ stat */

static const char *when_str(struct json_object *svc, const char *key, char *buf,
			    size_t len)
{
	struct json_object *v = cmd_jobj(svc, key);
	time_t t;
	struct tm tm;

	if (!v)
		return "-";
	t = (time_t)json_object_get_int64(v);
	if (!gmtime_r(&t, &tm) ||
	    !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		return "?";
	return buf;
}

/* the compaction service's line of the daemon's figures, and the blank
 * line before the pool table */
static void show_compact(struct json_object *d)
{
	char size[UTIL_SIZE_BUF], when[40];

	if (!cmd_ju64(d, "compact_interval")) {
		printf("services: background compaction off\n\n");
		return;
	}
	printf("services: compaction every %" PRIu64 " s; %" PRIu64
	       " runs, %" PRIu64 " compactions, %s reclaimed, last %s\n\n",
	       cmd_ju64(d, "compact_interval"),
	       cmd_ju64(d, "service_compact_runs"),
	       cmd_ju64(d, "service_compactions"),
	       cmd_size_str(cmd_ju64(d, "service_compact_bytes_reclaimed"),
			    size, sizeof(size)),
	       when_str(d, "service_last_compact", when, sizeof(when)));
}

/* the sync service's line (frees of blocks of regions no client holds) */
static void show_sync(struct json_object *d)
{
	if (!cmd_ju64(d, "sync_interval")) {
		printf("services: free-ring sync off\n");
		return;
	}
	printf("services: free-ring sync every %" PRIu64 " s; %" PRIu64
	       " runs, %" PRIu64 " syncs, %" PRIu64 " frees applied\n",
	       cmd_ju64(d, "sync_interval"), cmd_ju64(d, "service_sync_runs"),
	       cmd_ju64(d, "service_syncs"),
	       cmd_ju64(d, "service_sync_frees_applied"));
}

static void show_daemon(struct json_object *d)
{
	uint64_t interval = cmd_ju64(d, "checkpoint_interval");

	printf("pmad pid %" PRIu64 ", up %" PRIu64 " s, %" PRIu64
	       " client%s; %" PRIu64 " requests (%" PRIu64 " errors, %" PRIu64
	       " denied)\n",
	       cmd_ju64(d, "pid"), cmd_ju64(d, "uptime"),
	       cmd_ju64(d, "clients"), cmd_ju64(d, "clients") == 1 ? "" : "s",
	       cmd_ju64(d, "requests"), cmd_ju64(d, "errors"),
	       cmd_ju64(d, "denied"));
	if (interval)
		printf("services: checkpoints every %" PRIu64 " s; %" PRIu64
		       " runs, %" PRIu64 " checkpoints\n",
		       interval, cmd_ju64(d, "service_runs"),
		       cmd_ju64(d, "service_checkpoints"));
	else
		printf("services: background checkpoints off; %" PRIu64
		       " checkpoints on request\n",
		       cmd_ju64(d, "service_checkpoints"));
	if (cmd_ju64(d, "gc_free_pct"))
		printf("services: HDPM gc below %" PRIu64
		       "%% free, every %" PRIu64 " s; %" PRIu64
		       " runs, %" PRIu64 " passes, %" PRIu64
		       " page logs merged\n",
		       cmd_ju64(d, "gc_free_pct"), cmd_ju64(d, "gc_interval"),
		       cmd_ju64(d, "service_gc_runs"),
		       cmd_ju64(d, "service_gcs"),
		       cmd_ju64(d, "service_gc_pages_merged"));
	else
		printf("services: background HDPM gc off\n");
	show_sync(d);
	show_compact(d);
}

/* one table row of pool p into the cells of row (buffers in bufs) */
static void stat_row(struct json_object *p, char bufs[][40], const char **row)
{
	struct json_object *svc = cmd_jobj(p, "services");

	row[0] = cmd_jstr(p, "name");
	row[1] = cmd_jstr(p, "state");
	row[2] = cmd_size_str(cmd_ju64(p, "size"), bufs[0], 40);
	row[3] = cmd_jobj(p, "used") ?
			 cmd_size_str(cmd_ju64(p, "used"), bufs[1], 40) :
			 NULL;
	row[4] = cmd_jobj(p, "free") ?
			 cmd_size_str(cmd_ju64(p, "free"), bufs[2], 40) :
			 NULL;
	snprintf(bufs[3], 40, "%" PRIu64 "/%" PRIu64,
		 cmd_ju64(p, "log_records"), cmd_ju64(p, "log_capacity"));
	row[5] = cmd_jobj(p, "log_capacity") ? bufs[3] : NULL;
	snprintf(bufs[4], 40, "%" PRIu64, cmd_ju64(p, "clients"));
	row[6] = bufs[4];
	snprintf(bufs[5], 40, "%" PRIu64, cmd_ju64(svc, "checkpoints"));
	row[7] = svc ? bufs[5] : NULL;
	row[8] = svc ? when_str(svc, "last_checkpoint", bufs[6], 40) : NULL;
	snprintf(bufs[7], 40, "%" PRIu64 "/%" PRIu64, cmd_ju64(svc, "gc_runs"),
		 cmd_ju64(svc, "gc_pages_merged"));
	row[9] = cmd_jobj(svc, "gc_runs") ? bufs[7] : NULL;
	snprintf(bufs[8], 40, "%" PRIu64 "/%" PRIu64,
		 cmd_ju64(p, "slabs_morphed"), cmd_ju64(p, "mixed_slabs"));
	row[10] = cmd_jobj(p, "slabs_morphed") ? bufs[8] : NULL;
}

int cmd_show_stat(struct json_object *doc)
{
	static const char *const head[] = {
		"NAME",	     "STATE",	     "SIZE",
		"USED",	     "FREE",	     "LOG",
		"CLIENTS",   "CHECKPOINTS",  "LAST CHECKPOINT",
		"GC/MERGED", "MORPHED/MIXED"
	};
	struct json_object *pools = cmd_jobj(doc, "pools"), *p;
	char bufs[9][40];
	const char *row[11];
	struct cmd_table t;
	size_t i;
	int rc;

	if (!pools)
		return -EPROTO;
	if (cmd_jobj(doc, "daemon"))
		show_daemon(cmd_jobj(doc, "daemon"));
	cmd_table_init(&t, 11, head, 0x6fc);
	for (i = 0; i < cmd_jlen(pools); i++) {
		p = json_object_array_get_idx(pools, i);
		stat_row(p, bufs, row);
		cmd_table_add(&t, row);
		if (cmd_jstr(p, "error"))
			fprintf(stderr, "pmactl: pool '%s': %s\n",
				cmd_jstr(p, "name"), cmd_jstr(p, "error"));
	}
	rc = t.nrows > 1 ? cmd_table_print(&t, stdout, 0) : 0;
	if (t.nrows == 1)
		puts("no pools");
	cmd_table_release(&t);
	return rc;
}

/* ------------------------------------------------------------ prometheus */

enum metric_type { GAUGE, COUNTER };

struct metric {
	const char *name; /* after "pmad_" */
	const char *key; /* in the pool (or daemon) object */
	const char *help;
	enum metric_type type;
	int in_services; /* key is in the pool's "services" object */
};

static const struct metric pool_metrics[] = {
	{ "pool_size_bytes", "size", "Size of the pool (all parts).", GAUGE,
	  0 },
	{ "pool_heap_size_bytes", "heap_size",
	  "Size of the pool's PMAlloc heap.", GAUGE, 0 },
	{ "pool_used_bytes", "used", "Bytes in live allocations of the heap.",
	  GAUGE, 0 },
	{ "pool_free_bytes", "free",
	  "Bytes free in the heap (pages and slab blocks).", GAUGE, 0 },
	{ "pool_largest_free_extent_bytes", "largest_free_extent",
	  "Largest free extent of the heap.", GAUGE, 0 },
	{ "pool_log_records", "log_records",
	  "Bookkeeping log records not yet checkpointed.", GAUGE, 0 },
	{ "pool_log_capacity_records", "log_capacity",
	  "Bookkeeping log records all arenas can hold.", GAUGE, 0 },
	{ "pool_clients", "clients", "Client sessions holding the pool open.",
	  GAUGE, 0 },
	{ "pool_checkpoints_total", "checkpoints",
	  "Heap checkpoints since pmad opened the pool.", COUNTER, 0 },
	{ "pool_slabs_morphed_total", "slabs_morphed",
	  "Slabs the heap morphed to another size class since pmad opened "
	  "the pool.",
	  COUNTER, 0 },
	{ "pool_mixed_slabs", "mixed_slabs",
	  "Slabs holding live blocks of two size classes.", GAUGE, 0 },
	{ "pool_service_checkpoints_total", "checkpoints",
	  "Checkpoints pmad's services and compact requests made.", COUNTER,
	  1 },
	{ "pool_service_checkpoint_failures_total", "checkpoint_failures",
	  "Checkpoints pmad tried that failed.", COUNTER, 1 },
	{ "pool_last_checkpoint_timestamp_seconds", "last_checkpoint",
	  "Unix time of pmad's last checkpoint of the pool.", GAUGE, 1 },
	{ "pool_gc_runs_total", "gc_runs",
	  "HDPM gc passes on the pool (gc service and gc requests).", COUNTER,
	  1 },
	{ "pool_gc_failures_total", "gc_failures",
	  "HDPM gc passes on the pool that failed.", COUNTER, 1 },
	{ "pool_gc_pages_merged_total", "gc_pages_merged",
	  "HDPM page logs merged by gc passes.", COUNTER, 1 },
	{ "pool_gc_reclaimed_bytes_total", "gc_bytes_reclaimed",
	  "Heap bytes gc passes gave back.", COUNTER, 1 },
	{ "pool_last_gc_timestamp_seconds", "last_gc",
	  "Unix time of the last HDPM gc pass on the pool.", GAUGE, 1 },
	{ "pool_compactions_total", "compactions",
	  "Compactions of the pool (compaction service and compact requests).",
	  COUNTER, 1 },
	{ "pool_compact_failures_total", "compact_failures",
	  "Compactions of the pool that failed.", COUNTER, 1 },
	{ "pool_compact_reclaimed_bytes_total", "compact_bytes_reclaimed",
	  "File system bytes compactions of the pool gave back.", COUNTER, 1 },
	{ "pool_last_compact_timestamp_seconds", "last_compact",
	  "Unix time of the last compaction of the pool.", GAUGE, 1 },
	{ "pool_syncs_total", "syncs",
	  "Sync service rounds that opened the pool's regions no client "
	  "holds.",
	  COUNTER, 1 },
	{ "pool_sync_failures_total", "sync_failures",
	  "Sync service rounds on the pool that failed.", COUNTER, 1 },
	{ "pool_sync_frees_applied_total", "sync_frees_applied",
	  "Frees clients made of blocks of regions no client holds, applied "
	  "by the sync service.",
	  COUNTER, 1 },
	{ "pool_last_sync_timestamp_seconds", "last_sync",
	  "Unix time of the last sync service round on the pool.", GAUGE, 1 },
};

static const struct metric daemon_metrics[] = {
	{ "uptime_seconds", "uptime", "Seconds since pmad started.", GAUGE, 0 },
	{ "clients", "clients", "Connected clients.", GAUGE, 0 },
	{ "pools", "pools", "Pools pmad serves.", GAUGE, 0 },
	{ "requests_total", "requests", "Requests received.", COUNTER, 0 },
	{ "errors_total", "errors", "Error replies sent.", COUNTER, 0 },
	{ "denied_total", "denied", "Requests denied (EACCES, EPERM).", COUNTER,
	  0 },
	{ "connections_total", "connections", "Connections accepted.", COUNTER,
	  0 },
	{ "reloads_total", "reloads", "Configuration reloads.", COUNTER, 0 },
	{ "service_runs_total", "service_runs",
	  "Rounds of the background services.", COUNTER, 0 },
	{ "gc_free_percent", "gc_free_pct",
	  "The HDPM gc service runs on pools with less free (0: off).", GAUGE,
	  0 },
	{ "service_gc_runs_total", "service_gc_runs",
	  "Rounds of the HDPM gc service.", COUNTER, 0 },
	{ "service_gc_passes_total", "service_gcs",
	  "HDPM gc passes the gc service made.", COUNTER, 0 },
	{ "compact_interval_seconds", "compact_interval",
	  "Seconds between rounds of the compaction service (0: off).", GAUGE,
	  0 },
	{ "service_compact_runs_total", "service_compact_runs",
	  "Rounds of the compaction service.", COUNTER, 0 },
	{ "service_compactions_total", "service_compactions",
	  "Compactions the compaction service made.", COUNTER, 0 },
	{ "service_compact_reclaimed_bytes_total",
	  "service_compact_bytes_reclaimed",
	  "File system bytes the compaction service gave back.", COUNTER, 0 },
	{ "sync_interval_seconds", "sync_interval",
	  "Seconds between rounds of the sync service (0: off).", GAUGE, 0 },
	{ "service_sync_runs_total", "service_sync_runs",
	  "Rounds of the sync service.", COUNTER, 0 },
	{ "service_syncs_total", "service_syncs",
	  "Masked opens of regions no client holds the sync service made.",
	  COUNTER, 0 },
	{ "service_sync_frees_applied_total", "service_sync_frees_applied",
	  "Free-ring entries the sync service applied.", COUNTER, 0 },
};

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

static void prom_head(const struct metric *m)
{
	printf("# HELP pmad_%s %s\n# TYPE pmad_%s %s\n", m->name, m->help,
	       m->name, m->type == COUNTER ? "counter" : "gauge");
}

/* a label value: backslash, double quote and newline escaped */
static void prom_label(const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\\' || *s == '"')
			printf("\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", stdout);
		else
			putchar(*s);
	}
}

static void prom_pools(struct json_object *pools)
{
	struct json_object *p, *o, *v;
	size_t i, m;

	printf("# HELP pmad_pool_open 1 if pmad holds the pool open.\n"
	       "# TYPE pmad_pool_open gauge\n");
	for (i = 0; i < cmd_jlen(pools); i++) {
		p = json_object_array_get_idx(pools, i);
		fputs("pmad_pool_open{pool=\"", stdout);
		prom_label(cmd_jstr(p, "name"));
		printf("\"} %d\n",
		       strcmp(cmd_jstr(p, "state") ?: "", "open") == 0);
	}
	for (m = 0; m < NELEMS(pool_metrics); m++) {
		prom_head(&pool_metrics[m]);
		for (i = 0; i < cmd_jlen(pools); i++) {
			p = json_object_array_get_idx(pools, i);
			o = pool_metrics[m].in_services ?
				    cmd_jobj(p, "services") :
				    p;
			v = cmd_jobj(o, pool_metrics[m].key);
			if (!v) /* unknown values are omitted */
				continue;
			printf("pmad_%s{pool=\"", pool_metrics[m].name);
			prom_label(cmd_jstr(p, "name"));
			printf("\"} %" PRIu64 "\n",
			       (uint64_t)json_object_get_int64(v));
		}
	}
}

int cmd_show_prometheus(struct json_object *doc)
{
	struct json_object *d = cmd_jobj(doc, "daemon");
	size_t m;

	if (!cmd_jobj(doc, "pools"))
		return -EPROTO;
	for (m = 0; d && m < NELEMS(daemon_metrics); m++) {
		prom_head(&daemon_metrics[m]);
		printf("pmad_%s %" PRIu64 "\n", daemon_metrics[m].name,
		       cmd_ju64(d, daemon_metrics[m].key));
	}
	prom_pools(cmd_jobj(doc, "pools"));
	return ferror(stdout) ? -EIO : 0;
}
