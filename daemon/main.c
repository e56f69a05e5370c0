/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad: the persistent-memory pool daemon. Startup order: options, config
 * (an error stops here), logging, state dir, control socket (so a second
 * pmad fails before touching any pool), pools opened and recovered, then
 * READY=1 and the event loop. pmad never forks: systemd (Type=notify) or
 * the caller supervises it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "ns/ns.h"
#include "pmad.h"
#include "proto/proto.h"
#include "util/errmsg.h"
#include "util/escape.h"
#include "util/log.h"

enum { OPT_CHECK_CONFIG = 256 };

static const char usage_text[] =
	"usage: pmad [--config FILE] [--socket PATH] [--state-dir DIR]\n"
	"            [--foreground] [--check-config]\n"
	"\n"
	"Serve persistent-memory pools over a control socket; see pmad(8).\n"
	"\n"
	"options:\n"
	"  -c, --config FILE    configuration (default " PMAD_CONFIG_DEFAULT
	";\n"
	"                       without it an embedded default is used)\n"
	"  -s, --socket PATH    control socket (default: the config's, or\n"
	"                       $XDG_RUNTIME_DIR/pmad/pmad.sock or\n"
	"                       /run/pmad/pmad.sock)\n"
	"  -d, --state-dir DIR  where file-backed pools live (default: the\n"
	"                       config's, or $XDG_RUNTIME_DIR/pmad or /run/pmad)\n"
	"  -f, --foreground     log to stderr even under systemd (pmad never\n"
	"                       forks either way)\n"
	"      --check-config   validate the configuration and exit 0 or 1\n"
	"  -V, --version        show the version and exit\n"
	"  -h, --help           show this help and exit\n";

static const struct option longopts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "socket", required_argument, NULL, 's' },
	{ "state-dir", required_argument, NULL, 'd' },
	{ "foreground", no_argument, NULL, 'f' },
	{ "check-config", no_argument, NULL, OPT_CHECK_CONFIG },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* "pmad: WHAT 'ARG'" with ARG escaped, and the --help hint */
static void usage_error(const char *what, const char *arg)
{
	char *esc = util_escape(arg);

	fprintf(stderr, "pmad: %s '%s'\ntry 'pmad --help'\n", what,
		esc ? esc : "?");
	free(esc);
}

/* getopt_long's '?' or ':' (opterr 0, optstring with ':') */
static void bad_option(int c, int argc, char **argv)
{
	const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	char opt[3] = { '-', (char)optopt, 0 };

	if (!strncmp(arg, "--", 2))
		usage_error(c == ':' ? "option requires an argument:" :
				       "unknown or ambiguous option",
			    arg);
	else
		usage_error(c == ':' ? "option requires an argument:" :
				       "invalid option",
			    opt);
}

/* returns -1 to go on, or the exit status */
static int parse_args(int argc, char **argv, struct pmad_opts *o,
		      int *check_only)
{
	int c;

	/* getopt's own messages would print the option raw */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:s:d:fVh", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case 's':
			o->socket = optarg;
			break;
		case 'd':
			o->state_dir = optarg;
			break;
		case 'f':
			o->foreground = 1;
			break;
		case OPT_CHECK_CONFIG:
			*check_only = 1;
			break;
		case 'V':
			printf("pmad (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
			return 0;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			bad_option(c, argc, argv);
			return 2;
		}
	}
	if (optind < argc) {
		usage_error("unexpected argument", argv[optind]);
		return 2;
	}
	return -1;
}

/* --config FILE must exist; the default file may be absent */
static int config_load(const struct pmad_opts *o, struct pmad_config **conf,
		       const char **ret_file)
{
	const char *file = o->config ? o->config : PMAD_CONFIG_DEFAULT;
	int rc = pmad_config_load(file, conf);

	*ret_file = file;
	if (rc == -ENOENT && !o->config) {
		*ret_file = NULL;
		return pmad_config_default(conf);
	}
	return rc;
}

static int check_config(const struct pmad_opts *o)
{
	struct pmad_config *conf;
	const char *file;

	if (config_load(o, &conf, &file) < 0) {
		fprintf(stderr, "pmad: %s\n", util_errmsg());
		return 1;
	}
	printf("%s: ok (%u pool%s)\n", file ? file : "embedded default",
	       conf->npools, conf->npools == 1 ? "" : "s");
	pmad_config_free(conf);
	return 0;
}

static char *runtime_dir(void)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char *s;

	if (geteuid() != 0 && xdg && *xdg)
		return asprintf(&s, "%s/pmad", xdg) < 0 ? NULL : s;
	return strdup("/run/pmad");
}

int pmad_paths_resolve(struct pmad *d)
{
	char buf[4096];

	if (d->opts.state_dir)
		d->state_dir = strdup(d->opts.state_dir);
	else if (d->conf->state_dir)
		d->state_dir = strdup(d->conf->state_dir);
	else
		d->state_dir = runtime_dir();
	if (d->opts.socket)
		d->socket_path = strdup(d->opts.socket);
	else if (d->conf->socket_path)
		d->socket_path = strdup(d->conf->socket_path);
	else if (proto_default_socket(buf, sizeof(buf)) == 0)
		d->socket_path = strdup(buf);
	if (!d->state_dir || !d->socket_path)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (mkdir(d->state_dir, 0755) < 0 && errno != EEXIST)
		return util_errmsg_set(errno, "cannot create state dir %s: %s",
				       d->state_dir, strerror(errno));
	return 0;
}

int pmad_reload(struct pmad *d)
{
	struct pmad_config *conf;
	const char *file;
	int rc;

	(void)sd_notify(0, "RELOADING=1");
	rc = config_load(&d->opts, &conf, &file);
	if (rc < 0) {
		d->count.reload_failures++;
		util_err("reload failed, keeping the current configuration: "
			 "%s",
			 util_errmsg());
		(void)sd_notify(0, "READY=1");
		return rc;
	}
	if ((conf->socket_path && !d->conf->socket_path) ||
	    (conf->socket_path &&
	     strcmp(conf->socket_path, d->conf->socket_path) != 0))
		util_warn("the socket path changed: it takes effect at the "
			  "next restart");
	pmad_config_free(d->conf);
	d->conf = conf;
	pmad_log_setup(d);
	if (pmad_services_arm(d) < 0)
		util_err("reload: %s", util_errmsg());
	rc = pmad_pools_load(d);
	if (rc < 0)
		util_err("reload: %s", util_errmsg());
	d->count.reloads++;
	util_info("configuration reloaded from %s (%u pools configured)",
		  file ? file : "the embedded default", conf->npools);
	(void)sd_notify(0, "READY=1");
	return rc;
}

static int serve(struct pmad *d)
{
	int rc;

	rc = pmad_paths_resolve(d);
	/* PMAD_FAKE_NUMA: a fake topology for tests, as pmactl takes it */
	if (rc == 0)
		rc = ns_topology_init();
	if (rc == 0)
		rc = pmad_socket_setup(d);
	if (rc == 0)
		rc = pmad_pools_load(d);
	if (rc < 0) {
		util_err("%s", util_errmsg());
		return 1;
	}
	util_info("serving %u pool%s on %s (state dir %s, pid %d)", d->npools,
		  d->npools == 1 ? "" : "s", d->socket_path, d->state_dir,
		  (int)getpid());
	(void)sd_notifyf(0, "READY=1\nSTATUS=serving %u pools\nMAINPID=%d",
			 d->npools, (int)getpid());
	rc = pmad_loop(d);
	(void)sd_notify(0, "STOPPING=1");
	if (rc < 0) {
		util_err("%s", util_errmsg());
		return 1;
	}
	util_info("stopped");
	return 0;
}

int main(int argc, char **argv)
{
	struct pmad d = { .epfd = -1,
			  .listen_fd = -1,
			  .sig_fd = -1,
			  .timer_fd = -1,
			  .gc_timer_fd = -1,
			  .compact_timer_fd = -1,
			  .sync_timer_fd = -1,
			  .watch_timer_fd = -1 };
	int check_only = 0, rc;

	rc = parse_args(argc, argv, &d.opts, &check_only);
	if (rc >= 0)
		return rc;
	if (check_only)
		return check_config(&d.opts);
	if (config_load(&d.opts, &d.conf, &d.config_file) < 0) {
		fprintf(stderr, "pmad: %s\n", util_errmsg());
		return 1;
	}
	pmad_log_setup(&d);
	/* "pmad" in /proc/PID/comm, whatever the binary is called (lt-pmad,
	 * valgrind): pmactl names the holder of a locked pool by it */
	(void)prctl(PR_SET_NAME, "pmad", 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &d.started);
	d.buf = malloc(PROTO_MSG_MAX);
	rc = d.buf ? serve(&d) : 1;
	pmad_loop_release(&d);
	pmad_pools_release(&d);
	pmad_config_free(d.conf);
	free(d.socket_path);
	free(d.state_dir);
	free(d.buf);
	return rc;
}
