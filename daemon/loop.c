/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad event loop: one epoll set with the listening socket (adopted from
 * systemd when socket-activated, else bound here), a signalfd (SIGHUP
 * reloads, SIGTERM/SIGINT stop), the services' timerfd and the clients. epoll data holds the fd;
 * the listening and signal fds are recognized by value, clients by their
 * slot in d->clients.
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "pmad.h"
#include "proto/proto.h"
#include "util/errmsg.h"
#include "util/log.h"

#define LISTEN_BACKLOG 64
#define MAX_EVENTS 32

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return util_errmsg_set(errno, "epoll_ctl: %s", strerror(errno));
	return 0;
}

/* a live pmad already answers on path: never steal its socket */
static int socket_in_use(const char *path)
{
	int fd = proto_connect(path);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

static int socket_bind(struct pmad *d, const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path))
		return util_errmsg_set(ENAMETOOLONG,
				       "socket path '%s' is too long", path);
	if (socket_in_use(path))
		return util_errmsg_set(EADDRINUSE, "another pmad is serving %s",
				       path);
	memcpy(addr.sun_path, path, strlen(path) + 1);
	(void)unlink(path); /* a stale socket of a dead pmad */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return util_errmsg_set(errno, "socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(fd, LISTEN_BACKLOG) < 0) {
		close(fd);
		return util_errmsg_set(errno, "cannot listen on %s: %s", path,
				       strerror(errno));
	}
	d->own_socket = 1;
	d->listen_fd = fd;
	return 0;
}

/* socket mode and group from the configuration (a bound socket only) */
static void socket_perms(const struct pmad *d)
{
	if (chmod(d->socket_path, d->conf->socket_mode) < 0)
		util_warn("cannot chmod %s to %04o: %s", d->socket_path,
			  (unsigned)d->conf->socket_mode, strerror(errno));
	if (d->conf->socket_group != (gid_t)-1 &&
	    chown(d->socket_path, (uid_t)-1, d->conf->socket_group) < 0)
		util_warn("cannot chgrp %s to %u: %s", d->socket_path,
			  (unsigned)d->conf->socket_group, strerror(errno));
}

/* systemd passed us the listening socket (pmad.socket) */
static int socket_adopt(struct pmad *d)
{
	int n = sd_listen_fds(1);

	if (n <= 0)
		return 0;
	if (n > 1 || sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_SEQPACKET, 1,
				       NULL, 0) <= 0)
		return util_errmsg_set(EINVAL,
				       "socket activation passed %d fds; pmad "
				       "needs one listening AF_UNIX "
				       "SOCK_SEQPACKET socket",
				       n);
	d->listen_fd = SD_LISTEN_FDS_START;
	util_info("adopted the listening socket from systemd");
	return 1;
}

static int signals_setup(struct pmad *d)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return util_errmsg_set(errno, "sigprocmask: %s",
				       strerror(errno));
	d->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (d->sig_fd < 0)
		return util_errmsg_set(errno, "signalfd: %s", strerror(errno));
	return epoll_add(d->epfd, d->sig_fd);
}

int pmad_socket_setup(struct pmad *d)
{
	int rc;

	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epfd < 0)
		return util_errmsg_set(errno, "epoll_create1: %s",
				       strerror(errno));
	rc = signals_setup(d);
	if (rc == 0)
		rc = socket_adopt(d);
	if (rc == 0) {
		rc = socket_bind(d, d->socket_path);
		if (rc == 0)
			socket_perms(d);
	}
	if (rc < 0)
		return rc;
	(void)signal(SIGPIPE, SIG_IGN);
	rc = epoll_add(d->epfd, d->listen_fd);
	return rc < 0 ? rc : pmad_services_setup(d);
}

static void client_close(struct pmad *d, unsigned slot)
{
	struct pmad_client *cl = d->clients[slot];

	util_dbg("client pid %d uid %u disconnected", (int)cl->pid,
		 (unsigned)cl->uid);
	/* a connection that goes away takes its attachments with it; when
	 * pmad stops, their holders keep them */
	pmad_client_drop_opens(cl, d->stopping ? PMAD_DETACH_STOP :
						 PMAD_DETACH_HANGUP);
	(void)epoll_ctl(d->epfd, EPOLL_CTL_DEL, cl->fd, NULL);
	close(cl->fd);
	free(cl->groups);
	free(cl);
	d->clients[slot] = d->clients[--d->nclients];
}

/* a connection beyond PMAD_MAX_CLIENTS gets one error packet */
static void client_refuse(struct pmad *d, int fd)
{
	struct pmad_client tmp = { .fd = fd };

	(void)pmad_reply_error(d, &tmp, EMFILE,
			       "pmad has too many clients; try again later");
	close(fd);
}

/*
 * The peer's supplementary groups (SO_PEERGROUPS, Linux 4.13: the groups
 * of the process that connected, as SO_PEERCRED's uid and gid), so pool
 * group permissions apply to them too. On failure the client keeps its
 * primary gid alone and a warning says why.
 */
static void peer_groups(int fd, struct pmad_client *cl)
{
	socklen_t len = 32 * sizeof(gid_t);
	gid_t *groups = NULL, *g;
	int tries;

	for (tries = 0; tries < 3; tries++) {
		g = realloc(groups, len ? len : sizeof(gid_t));
		if (!g)
			break;
		groups = g;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) ==
		    0) {
			cl->groups = groups;
			cl->ngroups = (unsigned)(len / sizeof(gid_t));
			return;
		}
		/* ERANGE: len is the size needed now; the groups may change
		 * between the calls, so try again a few times */
		if (errno != ERANGE)
			break;
	}
	util_warn("pid %d: SO_PEERGROUPS: %s; only its primary group counts",
		  (int)cl->pid, strerror(errno));
	free(groups);
}

static void client_accept(struct pmad *d)
{
	struct pmad_client *cl;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd;

	fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR)
			util_warn("accept: %s", strerror(errno));
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		util_warn("SO_PEERCRED: %s", strerror(errno));
		close(fd);
		return;
	}
	d->count.connections++;
	if (d->nclients == PMAD_MAX_CLIENTS) {
		util_warn("refusing pid %d: %d clients connected", cred.pid,
			  PMAD_MAX_CLIENTS);
		client_refuse(d, fd);
		return;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl || epoll_add(d->epfd, fd) < 0) {
		free(cl);
		close(fd);
		return;
	}
	cl->fd = fd;
	cl->uid = cred.uid;
	cl->gid = cred.gid;
	cl->pid = cred.pid;
	peer_groups(fd, cl);
	d->clients[d->nclients++] = cl;
	util_dbg("client pid %d uid %u connected", (int)cl->pid,
		 (unsigned)cl->uid);
}

/* one packet from a client; 0 keeps it, -1 closes it */
static int client_read(struct pmad *d, struct pmad_client *cl)
{
	long n = proto_recv(cl->fd, d->buf, PROTO_MSG_MAX);

	if (n == -EAGAIN)
		return 0;
	if (n == -EMSGSIZE) {
		d->count.requests++;
		(void)pmad_reply_error(d, cl, EMSGSIZE, util_errmsg());
		return 0;
	}
	if (n <= 0)
		return -1;
	pmad_handle(d, cl, d->buf, (size_t)n);
	return 0;
}

static void client_event(struct pmad *d, int fd, unsigned events)
{
	unsigned i;

	for (i = 0; i < d->nclients && d->clients[i]->fd != fd; i++)
		;
	if (i == d->nclients)
		return;
	if ((events & EPOLLIN) && client_read(d, d->clients[i]) == 0)
		return;
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		client_close(d, i);
}

static void signal_event(struct pmad *d)
{
	struct signalfd_siginfo si;

	while (read(d->sig_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			(void)pmad_reload(d);
			continue;
		}
		util_info("%s received, stopping",
			  strsignal((int)si.ssi_signo));
		d->stopping = 1;
	}
}

int pmad_loop(struct pmad *d)
{
	struct epoll_event ev[MAX_EVENTS];
	int i, n;

	while (!d->stopping) {
		n = epoll_wait(d->epfd, ev, MAX_EVENTS, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return util_errmsg_set(errno, "epoll_wait: %s",
					       strerror(errno));
		for (i = 0; i < n && !d->stopping; i++) {
			if (ev[i].data.fd == d->listen_fd)
				client_accept(d);
			else if (ev[i].data.fd == d->sig_fd)
				signal_event(d);
			else if (ev[i].data.fd == d->timer_fd)
				pmad_services_run(d);
			else if (ev[i].data.fd == d->gc_timer_fd)
				pmad_services_gc(d);
			else if (ev[i].data.fd == d->compact_timer_fd)
				pmad_services_compact(d);
			else if (ev[i].data.fd == d->sync_timer_fd)
				pmad_services_sync(d);
			else if (ev[i].data.fd == d->watch_timer_fd)
				pmad_services_watch(d);
			else
				client_event(d, ev[i].data.fd, ev[i].events);
		}
	}
	return 0;
}

void pmad_loop_release(struct pmad *d)
{
	d->stopping = 1;
	while (d->nclients)
		client_close(d, d->nclients - 1);
	if (d->listen_fd >= 0)
		close(d->listen_fd);
	if (d->own_socket)
		(void)unlink(d->socket_path);
	if (d->sig_fd >= 0)
		close(d->sig_fd);
	if (d->timer_fd >= 0)
		close(d->timer_fd);
	if (d->gc_timer_fd >= 0)
		close(d->gc_timer_fd);
	if (d->compact_timer_fd >= 0)
		close(d->compact_timer_fd);
	if (d->sync_timer_fd >= 0)
		close(d->sync_timer_fd);
	if (d->watch_timer_fd >= 0)
		close(d->watch_timer_fd);
	if (d->epfd >= 0)
		close(d->epfd);
	d->listen_fd = d->sig_fd = d->timer_fd = d->gc_timer_fd = -1;
	d->compact_timer_fd = d->sync_timer_fd = d->watch_timer_fd = -1;
	d->epfd = -1;
}
