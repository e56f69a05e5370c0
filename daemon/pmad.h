/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad internals: one struct pmad holds the whole daemon state and is
 * passed explicitly (no globals). The daemon is single-threaded: an epoll
 * loop (loop.c) serves the control socket and signals; requests run to
 * completion through the handler table (handlers.c) on the pool table
 * (pools.c). Functions return 0 or a negative errno with the util errmsg
 * set; the caller decides whether that becomes an error reply or a log line.
 */
#ifndef PMAD_DAEMON_PMAD_H
#define PMAD_DAEMON_PMAD_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <json-c/json.h>

#include "config.h"

#define PMAD_MAX_CLIENTS 128
/* parts of a pool (lib/pool's POOL_MAX_PARTS) */
#define PMAD_PARTS_MAX 16

struct pma_heap;

struct pmad_client;

/* one client's lease of a pool: the region slots granted to it */
struct pmad_att {
	struct pmad_client *cl;
	uint64_t mask;
};

/* clients of one pool at a time (its region slots) */
#define PMAD_ATTS_MAX 64

/*
 * a pool pmad serves: open (heap != NULL: pmad's, exclusively), shared
 * (clients hold its regions, heap == NULL: pmad does not touch it), or
 * listed with why it is neither (err)
 */
struct pmad_pool {
	char *name;
	char *path; /* part 0 */
	struct pma_heap *heap; /* held open over part_fds */
	/* one descriptor per part, opened by pmad, kept while it serves the
	 * pool: the heap is opened over them, and they carry the pool's
	 * flock, exclusive with the heap, shared while clients hold regions
	 * (offline tools stay out either way). Clients never get these:
	 * each gets descriptors opened anew from part_paths (attach.c). */
	int part_fds[PMAD_PARTS_MAX];
	char *part_paths[PMAD_PARTS_MAX];
	unsigned nfds;
	int shared; /* no heap; flock shared; clients hold regions */
	unsigned regions; /* heap regions per part (slots: nparts x this) */
	unsigned format_regions; /* a heap formatted at open gets these */
	struct pmad_att atts[PMAD_ATTS_MAX]; /* leases, one per client */
	unsigned natts;
	uint64_t granted; /* the slots of atts[] */
	int reopen_pending; /* the last client closed it (pool_close): the
			       heap is reopened as soon as the reply is
			       sent (pmad_pools_reopen) */
	struct {
		pid_t pid; /* the last client's, kept for messages */
		uid_t uid;
		uint64_t attaches; /* grants since pmad started */
		uint64_t recoveries; /* clients that went away without
					closing: their regions were recovered */
		uint64_t last_recovery_us; /* time of the last one */
	} att;
	int err; /* positive errno of the failed open, 0 when open */
	char *errmsg; /* its message, NULL when open */
	unsigned clients; /* client sessions that opened it */
	int from_config; /* defined in the configuration */
	/* the heap's slab morphing policy (pmad.yaml heap:), applied at
	 * the next open; morph_pct -1: the library's default */
	int morph_pct, morph_idle;
	uint64_t size; /* all parts, bytes; 0 until opened */
	unsigned nparts;
	struct {
		uint64_t checkpoints; /* by services and compact requests */
		uint64_t checkpoint_failures;
		time_t last_checkpoint; /* wall clock; 0: never */
		uint64_t gc_runs; /* HDPM gc passes (requests, service) */
		uint64_t gc_failures;
		uint64_t gc_pages_merged;
		uint64_t gc_bytes_reclaimed;
		time_t last_gc; /* wall clock; 0: never */
		uint64_t compactions; /* pma_heap_compact (service, requests) */
		uint64_t compact_failures;
		uint64_t compact_bytes_reclaimed;
		time_t last_compact; /* wall clock; 0: never */
		/* the sync service (regions no client holds) */
		uint64_t syncs; /* masked opens of those regions */
		uint64_t sync_failures; /* -EBUSY not counted */
		uint64_t sync_frees_applied; /* ring entries they applied */
		time_t last_sync; /* wall clock; 0: never */
		uint64_t last_sync_us; /* how long it took */
	} svc;
};

/* a connected client, identified by SO_PEERCRED and SO_PEERGROUPS at
 * accept */
struct pmad_client {
	int fd;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	gid_t *groups; /* supplementary groups (may hold gid), or NULL */
	unsigned ngroups;
	struct pmad_pool **open; /* pools this client opened (pool_open) */
	unsigned nopen;
};

/* a namespace pool parts are placed on (ns.c) */
struct pmad_ns {
	int node;
	char *path; /* a directory: an fsdax mount, or a configured path */
	int is_auto; /* discovered through lib/ns */
};

struct pmad_opts {
	const char *config; /* --config, or NULL */
	const char *socket; /* --socket, or NULL */
	const char *state_dir; /* --state-dir, or NULL */
	int foreground; /* --foreground: log to stderr */
};

struct pmad_counters {
	uint64_t requests;
	uint64_t errors; /* error replies, denials included */
	uint64_t denied; /* EACCES / EPERM replies */
	uint64_t connections;
	uint64_t reloads;
	uint64_t reload_failures;
	uint64_t service_runs; /* background service rounds */
	uint64_t service_checkpoints; /* checkpoints they made */
	uint64_t service_gc_runs; /* rounds of the HDPM gc service */
	uint64_t service_gcs; /* gc passes it made */
	uint64_t service_gc_pages_merged; /* page logs they merged */
	uint64_t service_compact_runs; /* rounds of the compaction service */
	uint64_t service_compactions; /* compactions it made */
	uint64_t service_compact_bytes_reclaimed; /* file bytes they freed */
	time_t service_last_compact; /* wall clock of its last round; 0 */
	uint64_t service_sync_runs; /* rounds of the sync service */
	uint64_t service_syncs; /* masked opens it made */
	uint64_t service_sync_frees_applied; /* ring entries they applied */
};

struct pmad {
	struct pmad_opts opts;
	struct pmad_config *conf;
	const char *config_file; /* what a reload reads, NULL: none */
	char *socket_path; /* effective paths */
	char *state_dir;
	int epfd;
	int listen_fd;
	int sig_fd;
	int timer_fd; /* background services (services.c) */
	int gc_timer_fd; /* the HDPM gc service (services.c) */
	int compact_timer_fd; /* the compaction service (services.c) */
	int sync_timer_fd; /* the free-ring sync service (services.c) */
	int watch_timer_fd; /* pools held by unknown processes (services.c) */
	int own_socket; /* we bound it: unlink at exit */
	struct pmad_client *clients[PMAD_MAX_CLIENTS];
	unsigned nclients;
	struct pmad_pool **pools;
	unsigned npools;
	struct pmad_ns *ns; /* namespaces of this configuration */
	unsigned nns;
	struct pmad_counters count;
	struct timespec started;
	int stopping; /* a shutdown request or SIGTERM was seen */
	char *buf; /* PROTO_MSG_MAX receive buffer */
};

/* config.c's result applied: effective socket and state dir */
int pmad_paths_resolve(struct pmad *d);

/* ns.c: the namespaces, from the configuration or discovered */
int pmad_ns_load(struct pmad *d);
void pmad_ns_release(struct pmad *d);
/* the directory of node's first namespace, or NULL */
const char *pmad_ns_path(const struct pmad *d, int node);
/* the nodes that have a namespace, ascending, at most max */
unsigned pmad_ns_nodes(const struct pmad *d, int *nodes, unsigned max);
/* "namespaces": [{node, path, source}] into obj; 0 or -1 (ENOMEM) */
int pmad_ns_json(const struct pmad *d, struct json_object *obj);

/* pools.c: the pool table */
int pmad_pools_load(struct pmad *d); /* config pools + state dir scan */
void pmad_pools_release(struct pmad *d);
struct pmad_pool *pmad_pool_find(const struct pmad *d, const char *name);
/* a new entry of the table, not open yet */
int pmad_pool_add(struct pmad *d, const char *name, const char *path,
		  struct pmad_pool **ret_pool);
/* open the heap (recovery runs); a failure is kept in p and logged */
int pmad_pool_open_heap(struct pmad_pool *p, unsigned flags);
/* pmad's part descriptors (and paths), if not open yet */
int pmad_pool_fds_open(struct pmad_pool *p);
/* close them (dropping pmad's flock) */
void pmad_pool_fds_close(struct pmad_pool *p);
/* size, parts and regions per part from the pool header */
void pmad_pool_read_size(struct pmad_pool *p);
/* the util errmsg becomes p's error (positive err), logged */
void pmad_pool_fail(struct pmad_pool *p, int err);
/* parts.c: a configured pool with parts on the namespaces */
int pmad_pool_from_parts(struct pmad *d, const struct pmad_pool_conf *pc);
/* create a pool of size bytes in regions heap regions (1..16) owned by
 * uid/gid with mode */
int pmad_pool_create(struct pmad *d, const char *name, uint64_t size,
		     unsigned regions, uid_t uid, gid_t gid, mode_t mode,
		     struct pmad_pool **ret_pool);
/* want: 4 read, 2 write (or both); -EACCES with a message when denied */
int pmad_pool_access(const struct pmad_pool *p, const struct pmad_client *cl,
		     int want);
/* the pool as JSON: name, path, size, owner, group, mode, state, ... */
int pmad_pool_json(const struct pmad_pool *p, struct json_object **ret_obj);
/* lib/view's documents of an open pool (flags: enum view_flags): its
 * heap as "heap", its header, parts and regions as top-level keys */
int pmad_pool_heap_json(const struct pmad_pool *p, struct json_object *obj,
			unsigned flags);
int pmad_pool_view_json(const struct pmad_pool *p, struct json_object *obj,
			unsigned flags);
/* one pool of the stat request: state, size, usage, clients, services */
int pmad_pool_stat_json(const struct pmad_pool *p, unsigned flags,
			struct json_object **ret_obj);

/* handlers.c: one request packet in, one reply packet out */
void pmad_handle(struct pmad *d, struct pmad_client *cl, const char *buf,
		 size_t len);
/* send an error reply with the current util errmsg, or message */
int pmad_reply_error(struct pmad *d, struct pmad_client *cl, int err,
		     const char *message);
enum pmad_detach {
	PMAD_DETACH_CLOSE, /* pool_close: the client closed its heap */
	PMAD_DETACH_HANGUP, /* its connection went away: recover */
	PMAD_DETACH_STOP, /* pmad stops: leave the heap to the client */
};
/* the connection is gone (or pmad stops): detach every pool it holds */
void pmad_client_drop_opens(struct pmad_client *cl, enum pmad_detach why);

/* attach.c: region leases (pool_open, pool_close, a client's death) */
struct proto_grant;
/* lease free regions of p to cl: pmad gives up its heap; *ret_grant and
 * ret_fds (nfds of them, opened for cl, the caller closes them once
 * sent) are what the reply carries */
int pmad_pool_attach(struct pmad_pool *p, struct pmad_client *cl,
		     struct proto_grant *ret_grant, int *ret_fds);
/* more regions of p for cl, which has it open (pmad_pool_attach): one
 * free region per part, as pool_open grants them, or (slot >= 0) that
 * region slot alone (EBUSY naming its holder), into *ret_grant (no
 * descriptors: the client locks them on those it has,
 * pma_heap_add_regions); released with the others */
int pmad_pool_lease(struct pmad_pool *p, struct pmad_client *cl, int slot,
		    struct proto_grant *ret_grant);
/* end cl's lease of p: CLOSE gives its regions back (the heap reopens
 * after the reply when it was the last, pmad_pools_reopen), HANGUP
 * recovers them first, STOP leaves them to the client */
void pmad_pool_detach(struct pmad_pool *p, struct pmad_client *cl,
		      enum pmad_detach why);
/* open the heaps pool_close gave back (after the request's reply) */
void pmad_pools_reopen(struct pmad *d);
/* no lease left: open the whole heap again (or share the pool if
 * unknown processes hold regions) */
void pmad_pool_take_back(struct pmad_pool *p);
/* a pool that processes pmad does not know held, taken back once they
 * let go (the watch timer's round, every second) */
void pmad_pool_watch(struct pmad_pool *p);
/* while clients share p: apply the free-ring entries waiting for the
 * regions none of them holds (a masked open and close of those, the
 * entries applied into *ret_applied); 1 if it ran, 0 if p has no such
 * region, or -errno (-EBUSY: a region was held for a moment) */
int pmad_pool_sync(struct pmad_pool *p, uint64_t *ret_applied);
/* the regions of shared p no client holds, opened masked (*ret_heap NULL
 * when there is none; gone clients are recovered first) */
int pmad_pool_open_unleased(struct pmad_pool *p, struct pma_heap **ret_heap,
			    uint64_t *ret_mask);
/* clients of p whose connection closed are detached (their regions
 * recovered) now */
void pmad_pool_detach_gone(struct pmad_pool *p);
/* slots of p whose lock is held by an open pmad did not grant (pmad
 * restarted, or a recovery gave up); pmad's own opens count too */
uint64_t pmad_pool_slots_orphaned(const struct pmad_pool *p);
/* EBUSY with a message naming a holder, when p is shared */
int pmad_pool_busy(const struct pmad_pool *p);
/* "open", "attached" or "error" */
const char *pmad_pool_state(const struct pmad_pool *p);
/* holders, regions and attachment figures into a pool's JSON */
int pmad_pool_attach_json(const struct pmad_pool *p, struct json_object *o);

/* loop.c */
int pmad_socket_setup(struct pmad *d);
int pmad_loop(struct pmad *d);
void pmad_loop_release(struct pmad *d);
int pmad_reload(struct pmad *d);

/* services.c: a timerfd in the loop; arm again after a reload */
int pmad_services_setup(struct pmad *d);
int pmad_services_arm(struct pmad *d);
void pmad_services_run(struct pmad *d);
/* the HDPM gc service's round (gc_timer_fd) */
void pmad_services_gc(struct pmad *d);
/* the compaction service's round (compact_timer_fd) */
void pmad_services_compact(struct pmad *d);
/* the sync service's round (sync_timer_fd) */
void pmad_services_sync(struct pmad *d);
/* the watch timer's round (watch_timer_fd): pmad_pool_watch */
void pmad_services_watch(struct pmad *d);
/* checkpoint an open pool now, counted in its services' figures */
int pmad_pool_checkpoint(struct pmad_pool *p);
/* one HDPM gc pass on an open pool whose heap holds a file system
 * (view_hdpm_gc), counted in its services' figures */
struct view_gc;
int pmad_pool_gc(struct pmad_pool *p, struct view_gc *ret);
/* pma_heap_compact on an open pool, counted in its services' figures */
struct pma_compact_report;
int pmad_pool_compact(struct pmad_pool *p, struct pma_compact_report *ret);
/* fsck.c: check the pool read-only, quiesced (no client session, a
 * checkpoint first): *ret the result of pmactl --json fsck */
int pmad_pool_fsck(struct pmad_pool *p, struct json_object **ret);

/* logsink.c: journal when stderr is the journal, else stderr */
void pmad_log_setup(const struct pmad *d);

#endif
