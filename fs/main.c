/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpmfs: mount the HDPM file system of a pool with FUSE.
 *
 *   hdpmfs POOL MOUNTPOINT [-o hybrid|cow] [-o nogc] [-o gc_free_pct=N]
 *          [-f] [-d] [-s] [-o FUSE options]
 *
 * Opens the pool's PMAlloc heap (formatting a heap region, and an HDPM
 * file system in its root, when there is none), mounts it and serves
 * FUSE requests with a multi-threaded loop until unmounted
 * (fusermount3 -u) or signalled. Exit status: 0 after a clean unmount, 1
 * when the pool cannot be opened or mounted, 2 for a usage error.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdpm.h"
#include "hdpmfs.h"
#include "pmalloc.h"
#include "util/log.h"

enum { EXIT_USAGE = 2 };

struct hdpmfs_opts {
	const char *pool;
	const char *mountpoint_seen; /* the second positional argument */
	int cow; /* -o cow */
	int nogc; /* -o nogc: no background GC thread */
	unsigned gc_free_pct; /* -o gc_free_pct=N */
	int show_help;
	int show_version;
	int extra_arg; /* a third positional argument */
};

enum { KEY_HELP, KEY_VERSION };

static const struct fuse_opt hdpmfs_opts_spec[] = {
	{ "hybrid", offsetof(struct hdpmfs_opts, cow), 0 },
	{ "cow", offsetof(struct hdpmfs_opts, cow), 1 },
	{ "nogc", offsetof(struct hdpmfs_opts, nogc), 1 },
	{ "gc_free_pct=%u", offsetof(struct hdpmfs_opts, gc_free_pct), 0 },
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END,
};

static void usage(FILE *f)
{
	fputs("usage: hdpmfs POOL MOUNTPOINT [options]\n"
	      "\n"
	      "Mount the HDPM file system kept in POOL's heap at MOUNTPOINT\n"
	      "(FUSE). A pool without a heap or file system gets one.\n"
	      "\n"
	      "options:\n"
	      "  -o hybrid       small writes go to per-page logs (default)\n"
	      "  -o cow          every write copies its pages (the baseline)\n"
	      "  -o nogc         no background GC thread\n"
	      "  -o gc_free_pct=N  background GC runs while free space is\n"
	      "                  below N % of the heap (default 20)\n"
	      "  -f              stay in the foreground\n"
	      "  -d              debug: foreground, log every request and "
	      "failure\n"
	      "  -s              one thread\n"
	      "  -o OPT[,OPT]    FUSE mount options (see fuse(8))\n"
	      "  -V, --version   show the version and exit\n"
	      "  -h, --help      show this help and exit\n"
	      "\n"
	      "Unmount with 'fusermount3 -u MOUNTPOINT'. See hdpmfs(1).\n",
	      f);
}

static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct hdpmfs_opts *o = data;

	(void)outargs;
	switch (key) {
	case KEY_HELP:
		o->show_help = 1;
		return 0;
	case KEY_VERSION:
		o->show_version = 1;
		return 0;
	case FUSE_OPT_KEY_NONOPT:
		if (!o->pool) {
			o->pool = arg;
			return 0; /* not for fuse_parse_cmdline */
		}
		if (!o->mountpoint_seen) {
			o->mountpoint_seen = arg;
			return 1;
		}
		o->extra_arg = 1;
		return 0;
	default:
		return 1; /* FUSE's own option */
	}
}

static int usage_error(const char *msg)
{
	fprintf(stderr, "hdpmfs: %s\ntry 'hdpmfs --help'\n", msg);
	return EXIT_USAGE;
}

/* parse argv into o and copts; -1 to go on, else the exit status */
static int parse_args(struct fuse_args *args, struct hdpmfs_opts *o,
		      struct fuse_cmdline_opts *copts)
{
	if (fuse_opt_parse(args, o, hdpmfs_opts_spec, opt_proc) != 0)
		return usage_error("bad options");
	if (o->show_help) {
		usage(stdout);
		return 0;
	}
	if (o->show_version) {
		printf("hdpmfs (%s) %s, libfuse %s\n", PACKAGE_NAME,
		       PACKAGE_VERSION, fuse_pkgversion());
		return 0;
	}
	if (!o->pool)
		return usage_error("missing POOL argument");
	if (!o->mountpoint_seen)
		return usage_error("missing MOUNTPOINT argument");
	if (o->extra_arg)
		return usage_error("too many arguments");
	if (o->gc_free_pct > 100)
		return usage_error("gc_free_pct must be 0..100");
	if (fuse_parse_cmdline(args, copts) != 0)
		return usage_error("bad FUSE options");
	return -1;
}

static int fs_open(struct hdpmfs *h, const char *pool,
		   const struct hdpmfs_opts *o)
{
	struct hdpm_gc_config cfg;
	int rc;

	rc = pma_heap_open(pool, PMA_HEAP_FORMAT, &h->heap);
	if (rc < 0) {
		fprintf(stderr, "hdpmfs: cannot open the heap of '%s': %s\n",
			pool, pma_errormsg());
		return 1;
	}
	hdpm_gc_config_init(&cfg);
	cfg.free_pct = o->gc_free_pct;
	/* the GC thread starts after fuse_daemonize's fork (serve) */
	rc = hdpm_mount_config(h->heap,
			       HDPM_NO_GC_THREAD |
				       (o->cow ? HDPM_COW_ONLY : HDPM_HYBRID),
			       &cfg, &h->fs);
	if (rc < 0) {
		fprintf(stderr, "hdpmfs: cannot mount '%s': %s\n", pool,
			hdpm_errormsg());
		pma_heap_close(h->heap);
		return 1;
	}
	return 0;
}

static void fs_close(struct hdpmfs *h, int foreground)
{
	struct hdpm_stats st;

	hdpm_gc_thread_stop(h->fs);
	hdpm_stats(h->fs, &st);
	if (foreground && st.bg_steps)
		fprintf(stderr,
			"hdpmfs: background gc: %llu steps, %llu pages "
			"merged, %llu merges lost to a write\n",
			(unsigned long long)st.bg_steps,
			(unsigned long long)st.bg_merges,
			(unsigned long long)st.bg_lost);
	hdpm_unmount(h->fs);
	pma_heap_close(h->heap);
}

/* mount se at copts->mountpoint and serve until unmounted */
static int serve(struct hdpmfs *h, struct fuse_session *se,
		 const struct fuse_cmdline_opts *copts, int gc)
{
	struct fuse_loop_config config;
	int rc = 1;

	if (fuse_set_signal_handlers(se) != 0)
		return 1;
	if (fuse_session_mount(se, copts->mountpoint) != 0) {
		fprintf(stderr, "hdpmfs: cannot mount on '%s'\n",
			copts->mountpoint);
		goto out_signals;
	}
	if (fuse_daemonize(copts->foreground) != 0)
		goto out_unmount;
	if (gc && hdpm_gc_thread_start(h->fs) < 0) {
		fprintf(stderr, "hdpmfs: %s\n", hdpm_errormsg());
		goto out_unmount;
	}
	memset(&config, 0, sizeof(config));
	config.clone_fd = copts->clone_fd;
	/* fuse_parse_cmdline's default (UINT_MAX) makes libfuse complain */
	config.max_idle_threads = copts->max_idle_threads == UINT_MAX ?
					  10 :
					  copts->max_idle_threads;
	rc = copts->singlethread ? fuse_session_loop(se) :
				   fuse_session_loop_mt(se, &config);
	rc = rc ? 1 : 0;
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
	return rc;
}

/* the session first: a bad FUSE option is a usage error, found before
 * the pool is opened */
static int run(struct hdpmfs *h, struct fuse_args *args,
	       const struct hdpmfs_opts *o,
	       const struct fuse_cmdline_opts *copts)
{
	struct fuse_session *se;
	int rc;

	se = fuse_session_new(args, &hdpmfs_ops, sizeof(hdpmfs_ops), h);
	if (!se) {
		fputs("hdpmfs: bad FUSE options\ntry 'hdpmfs --help'\n",
		      stderr);
		return EXIT_USAGE;
	}
	rc = fs_open(h, o->pool, o);
	if (rc == 0) {
		rc = serve(h, se, copts, !o->nogc && !o->cow);
		fs_close(h, copts->foreground);
	}
	fuse_session_destroy(se);
	return rc;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts copts;
	struct hdpmfs_opts o;
	struct hdpmfs h;
	int rc;

	memset(&o, 0, sizeof(o));
	o.gc_free_pct = 20;
	memset(&copts, 0, sizeof(copts));
	memset(&h, 0, sizeof(h));
	util_log_init();
	util_log_set_sink(util_log_stderr);
	rc = parse_args(&args, &o, &copts);
	if (rc >= 0)
		goto out_args;
	h.debug = copts.debug;
	pthread_mutex_init(&h.ns_lock, NULL);
	rc = run(&h, &args, &o, &copts);
	pthread_mutex_destroy(&h.ns_lock);
out_args:
	free(copts.mountpoint);
	fuse_opt_free_args(&args);
	return rc;
}
