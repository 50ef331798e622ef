// SPDX-License-Identifier: GPL-2.0
/*
 * monclient - talk to a real ceph-mon through the msgr2 engine.
 *
 * A plain TCP socket driven by poll(); the engine (client role) does the
 * protocol.  Commands run in order on one connection:
 *
 *   ping           MPing (2) -> MPing whose front is a JSON string with
 *                  "health" and "mon_status"; prints the JSON
 *   version WHAT   MMonGetVersion (19) -> MMonGetVersionReply (20); checks
 *                  the echoed handle and tid; prints version and oldest
 *   map            MMonGetMap (5) -> MMonMap (4); prints the fsid and the
 *                  monmap epoch
 *   redial         end the connection and make a new one with the same
 *                  session and auth state, as a client redials after a
 *                  fault; prints "redial mode crc|secure" at READY
 *
 * stdout: "mode crc|secure", then one line per command.  stderr: errors;
 * an engine failure is reported as "monclient: failed: MSGR2_R_<NAME>: ...".
 * Exit status 0 only when every command succeeded.
 *
 * With --serve it plays the mon instead (server role, entity type mon):
 * it listens on --addr (port 0: any; "port N" is printed first), accepts
 * one connection, authenticates it with --auth none or cephx (the one
 * entity --name with its key from --keyring, msgr2_auth_cephx_server_ops)
 * in --mode, prints "mode crc|secure" at READY and "message type T" for
 * the first message the client sends, and exits 0.  That is how a real
 * Ceph client (`ceph -s`) checks the engine's server side.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "msgr2.h"
#include "auth_cephx.h"

#define MSG_PING		2
#define MSG_MON_MAP		4
#define MSG_MON_GET_MAP		5
#define MSG_MON_GET_VERSION	19
#define MSG_MON_GET_VERSION_REPLY 20

#define MAX_FRONT		(16 << 20)
#define TX_SCRATCH_LEN		(256 << 10)
#define MAX_IOV			64

static const char *const reason_names[MSGR2_R__MAX] = {
	[MSGR2_R_NONE] = "MSGR2_R_NONE",
	[MSGR2_R_BANNER] = "MSGR2_R_BANNER",
	[MSGR2_R_BANNER_FEATURES] = "MSGR2_R_BANNER_FEATURES",
	[MSGR2_R_PREAMBLE_CRC] = "MSGR2_R_PREAMBLE_CRC",
	[MSGR2_R_SEGMENT_CRC] = "MSGR2_R_SEGMENT_CRC",
	[MSGR2_R_GCM_TAG] = "MSGR2_R_GCM_TAG",
	[MSGR2_R_UNKNOWN_TAG] = "MSGR2_R_UNKNOWN_TAG",
	[MSGR2_R_ORDER] = "MSGR2_R_ORDER",
	[MSGR2_R_OVERSIZE] = "MSGR2_R_OVERSIZE",
	[MSGR2_R_MALFORMED] = "MSGR2_R_MALFORMED",
	[MSGR2_R_LATE_STATUS] = "MSGR2_R_LATE_STATUS",
	[MSGR2_R_SIGNATURE] = "MSGR2_R_SIGNATURE",
	[MSGR2_R_AUTH] = "MSGR2_R_AUTH",
	[MSGR2_R_MISSING_FEATURES] = "MSGR2_R_MISSING_FEATURES",
	[MSGR2_R_PEER] = "MSGR2_R_PEER",
	[MSGR2_R_SEQ] = "MSGR2_R_SEQ",
	[MSGR2_R_WAIT] = "MSGR2_R_WAIT",
	[MSGR2_R_TIMEOUT] = "MSGR2_R_TIMEOUT",
	[MSGR2_R_EOF] = "MSGR2_R_EOF",
	[MSGR2_R_LOCAL] = "MSGR2_R_LOCAL",
	[MSGR2_R_NOMEM] = "MSGR2_R_NOMEM",
	[MSGR2_R_NONCE] = "MSGR2_R_NONCE",
	[MSGR2_R_BUSY] = "MSGR2_R_BUSY",
	[MSGR2_R_MODE] = "MSGR2_R_MODE",
};

struct options {
	struct sockaddr_in sin;
	const char *addr_str;
	u32 auth[MSGR2_MAX_AUTH];
	int n_auth;
	const char *name;		/* "client.admin" */
	const char *keyring;
	u32 mode;
	u32 timeout_ms;
	bool verbose;
	bool serve;
};

/* One inbound message, kept until the command loop looks at it. */
struct inmsg {
	struct msgr2_rx_msg m;
	bool ready;
};

struct client {
	int fd;
	struct msgr2_conn *conn;
	struct msgr2_session sess;
	struct msgr2_config cfg;
	struct msgr2_auth_none none;
	struct msgr2_auth_cephx cephx;
	struct msgr2_auth_cephx_server cephx_server;	/* --serve */
	struct msgr2_cephx_entity entity;		/* --serve */
	bool is_ready;
	bool conn_live;			/* @conn initialised, not released */
	u32 mode;
	struct inmsg in;		/* last completed inbound message */
	struct msgr2_msg tx[16];	/* outgoing messages, one per command */
	u8 tx_front[16][8 + 4 + 64];
	int n_tx;
	int tx_pending;			/* messages not yet given back */
	int tx_status;
	const struct options *opt;
};

static const char *prog = "monclient";

static void err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *reason_name(enum msgr2_reason r)
{
	if ((unsigned int)r < MSGR2_R__MAX && reason_names[r])
		return reason_names[r];
	return "MSGR2_R_?";
}

static void report_failure(struct client *cl, const char *where, int ret)
{
	enum msgr2_reason r = msgr2_conn_reason(cl->conn);

	err("failed: %s: %s (%s, %s)", reason_name(r), msgr2_reason_str(r),
	    where, strerror(ret < 0 ? -ret : ret));
}

/* ---- engine callbacks ---------------------------------------------------- */

static void free_in(struct inmsg *in)
{
	int i;

	for (i = 0; i < MSGR2_NSEG; i++) {
		free(in->m.buf[i]);
		in->m.buf[i] = NULL;
	}
	in->ready = false;
}

static int cb_rx_alloc(void *priv, struct msgr2_rx_msg *m)
{
	int i;

	for (i = 0; i < MSGR2_NSEG; i++) {
		m->buf[i] = NULL;
		if (!m->len[i])
			continue;
		if (m->len[i] > MAX_FRONT)
			return -EMSGSIZE;
		m->buf[i] = malloc(m->len[i]);
		if (!m->buf[i])
			goto nomem;
	}
	return 0;
nomem:
	while (i-- > 0) {
		free(m->buf[i]);
		m->buf[i] = NULL;
	}
	return -ENOMEM;
}

static void cb_rx_msg(void *priv, struct msgr2_rx_msg *m, int status)
{
	struct client *cl = priv;
	int i;

	if (status) {
		for (i = 0; i < MSGR2_NSEG; i++) {
			free(m->buf[i]);
			m->buf[i] = NULL;
		}
		return;
	}
	if (cl->opt->verbose)
		err("received message type %u tid %llu front %u",
		    m->hdr.type, (unsigned long long)m->hdr.tid,
		    m->len[MSGR2_FRONT]);
	/* keep the newest; the command loop consumes one at a time */
	free_in(&cl->in);
	cl->in.m = *m;
	cl->in.ready = true;
}

static void cb_tx_done(void *priv, struct msgr2_msg *m, int status)
{
	struct client *cl = priv;

	cl->tx_pending--;
	if (status && !cl->tx_status)
		cl->tx_status = status;
}

static void cb_event(void *priv, enum msgr2_event ev, u64 arg)
{
	struct client *cl = priv;

	switch (ev) {
	case MSGR2_EV_READY:
		cl->is_ready = true;
		break;
	case MSGR2_EV_AUTH_DONE:
		cl->mode = (u32)arg;
		break;
	default:
		break;
	}
}

static const struct msgr2_ops client_ops = {
	.rx_alloc = cb_rx_alloc,
	.rx_msg = cb_rx_msg,
	.tx_done = cb_tx_done,
	.event = cb_event,
};

/* ---- transport ---------------------------------------------------------- */

static int tcp_connect(const struct sockaddr_in *sin, u32 timeout_ms)
{
	struct pollfd pfd;
	socklen_t len;
	int fd, one = 1, e = 0, ret;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err("socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)sin, sizeof(*sin)) < 0) {
		if (errno != EINPROGRESS) {
			e = errno;
			goto fail;
		}
		pfd.fd = fd;
		pfd.events = POLLOUT;
		ret = poll(&pfd, 1, (int)timeout_ms);
		if (ret == 0) {
			e = ETIMEDOUT;
			goto fail;
		}
		len = sizeof(e);
		if (ret < 0 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
			e = errno;
		if (e)
			goto fail;
	}
	return fd;
fail:
	err("connect to %s:%u: %s", inet_ntoa(sin->sin_addr),
	    ntohs(sin->sin_port), strerror(e));
	close(fd);
	return -1;
}

/*
 * --serve: listen on @sin (port 0: any), print "port N", accept one
 * connection within @timeout_ms; fill @local and @peer.
 */
static int tcp_accept_one(struct sockaddr_in *sin, u32 timeout_ms,
			  struct sockaddr_in *local, struct sockaddr_in *peer)
{
	socklen_t len = sizeof(*local);
	struct pollfd pfd;
	int lfd, fd, one = 1;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		err("socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (const struct sockaddr *)sin, sizeof(*sin)) ||
	    listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)local, &len)) {
		err("listen on %s:%u: %s", inet_ntoa(sin->sin_addr),
		    ntohs(sin->sin_port), strerror(errno));
		close(lfd);
		return -1;
	}
	printf("port %u\n", ntohs(local->sin_port));
	pfd.fd = lfd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, (int)timeout_ms) != 1) {
		err("no connection within %u ms", timeout_ms);
		close(lfd);
		return -1;
	}
	len = sizeof(*peer);
	fd = accept4(lfd, (struct sockaddr *)peer, &len,
		     SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		err("accept: %s", strerror(errno));
	close(lfd);
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Send what the engine has queued; returns 0 or -errno (engine error). */
static int flush_tx(struct client *cl, bool *want_out)
{
	struct msgr2_iov iov[MAX_IOV];
	struct iovec sys[MAX_IOV];
	struct msghdr mh = { 0 };
	ssize_t sent;
	int n, i, ret;

	*want_out = false;
	for (;;) {
		n = msgr2_tx_iov(cl->conn, iov, MAX_IOV);
		if (n <= 0)
			return n;
		for (i = 0; i < n; i++) {
			sys[i].iov_base = iov[i].base;
			sys[i].iov_len = iov[i].len;
		}
		mh.msg_iov = sys;
		mh.msg_iovlen = n;
		sent = sendmsg(cl->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (sent < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				*want_out = true;
				return 0;
			}
			if (errno == EINTR)
				continue;
			/* peer went away: let the engine say so */
			if (cl->opt->verbose)
				err("send: %s", strerror(errno));
			ret = msgr2_rx_eof(cl->conn);
			return ret ? ret : -EPIPE;
		}
		ret = msgr2_tx_done(cl->conn, (size_t)sent);
		if (ret < 0)
			return ret;
	}
}

/* Read what is available; returns 0 or -errno (engine error). */
static int pump_rx(struct client *cl)
{
	void *buf;
	ssize_t want, got;
	int ret;

	for (;;) {
		want = msgr2_rx_want(cl->conn, &buf);
		if (want < 0)
			return (int)want;
		if (want == 0)
			return 0;
		got = recv(cl->fd, buf, (size_t)want, MSG_DONTWAIT);
		if (got < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			if (cl->opt->verbose)
				err("recv: %s", strerror(errno));
			ret = msgr2_rx_eof(cl->conn);
			return ret ? ret : -ECONNRESET;
		}
		if (got == 0) {
			ret = msgr2_rx_eof(cl->conn);
			return ret ? ret : -ECONNRESET;
		}
		ret = msgr2_rx_done(cl->conn, (size_t)got);
		if (ret < 0)
			return ret;
	}
}

/*
 * Drive the connection until @done(cl) holds or @deadline (ms) passes.
 * Returns 0 when done, -ETIMEDOUT at the deadline, or the engine's -errno.
 */
static int run_until(struct client *cl, bool (*done)(struct client *),
		     u64 deadline, const char *what)
{
	struct pollfd pfd;
	bool want_out;
	u64 now;
	int ret, wait;

	for (;;) {
		ret = flush_tx(cl, &want_out);
		if (ret < 0) {
			report_failure(cl, what, ret);
			return ret;
		}
		if (done(cl))
			return 0;
		now = now_ms();
		ret = msgr2_tick(cl->conn, now);
		if (ret < 0) {
			report_failure(cl, what, ret);
			return ret;
		}
		if (now >= deadline) {
			err("timed out after %u ms %s", cl->opt->timeout_ms,
			    what);
			return -ETIMEDOUT;
		}
		wait = (int)min_t(u64, deadline - now, 100);
		pfd.fd = cl->fd;
		pfd.events = POLLIN | (want_out ? POLLOUT : 0);
		pfd.revents = 0;
		ret = poll(&pfd, 1, wait);
		if (ret < 0 && errno != EINTR) {
			err("poll: %s", strerror(errno));
			return -errno;
		}
		if (ret > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
			ret = pump_rx(cl);
			if (ret < 0) {
				report_failure(cl, what, ret);
				return ret;
			}
		}
		ret = flush_tx(cl, &want_out);
		if (ret < 0) {
			report_failure(cl, what, ret);
			return ret;
		}
		if (done(cl))
			return 0;
	}
}

static bool is_ready(struct client *cl)
{
	return cl->is_ready;
}

static bool have_msg(struct client *cl)
{
	return cl->in.ready;
}

/* ---- auth setup --------------------------------------------------------- */

/* Find "key = BASE64" in section [@name] of a ceph keyring file. */
static int keyring_lookup(const char *path, const char *name, char *key,
			  size_t cap)
{
	char line[512], sect[128];
	bool in_sect = false;
	FILE *f;
	char *p, *q;

	f = fopen(path, "r");
	if (!f) {
		err("cannot open keyring %s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(sect, sizeof(sect), "[%s]", name);
	while (fgets(line, sizeof(line), f)) {
		p = line;
		while (isspace((unsigned char)*p))
			p++;
		q = p + strlen(p);
		while (q > p && isspace((unsigned char)q[-1]))
			*--q = '\0';
		if (*p == '[') {
			in_sect = !strcmp(p, sect);
			continue;
		}
		if (!in_sect || strncmp(p, "key", 3))
			continue;
		p += 3;
		while (isspace((unsigned char)*p))
			p++;
		if (*p != '=')
			continue;
		p++;
		while (isspace((unsigned char)*p))
			p++;
		if (strlen(p) >= cap)
			break;
		strcpy(key, p);
		fclose(f);
		return 0;
	}
	fclose(f);
	err("no key for %s in %s", name, path);
	return -1;
}

/* "client.admin" -> entity type CLIENT and id "admin" */
static int split_name(const char *name, u8 *type, const char **id)
{
	const char *dot = strchr(name, '.');

	if (!dot || strncmp(name, "client", (size_t)(dot - name)) ||
	    dot - name != 6 || !dot[1] || strlen(dot + 1) >= 64) {
		err("--name must look like client.ID, not '%s'", name);
		return -1;
	}
	*type = MSGR2_ENTITY_CLIENT;
	*id = dot + 1;
	return 0;
}

static int setup_auth(struct client *cl, const struct options *o)
{
	struct msgr2_config *cfg = &cl->cfg;
	char b64[256];
	const char *id;
	u8 type;
	int i, ret;

	if (split_name(o->name, &type, &id))
		return -1;
	cl->none.entity_type = type;
	snprintf(cl->none.name, sizeof(cl->none.name), "%s", id);

	for (i = 0; i < o->n_auth; i++) {
		if (o->auth[i] == MSGR2_AUTH_NONE) {
			cfg->auth[i] = &msgr2_auth_none_ops;
			cfg->auth_priv[i] = &cl->none;
			continue;
		}
		if (!o->keyring) {
			err("--auth cephx needs --keyring FILE");
			return -1;
		}
		if (keyring_lookup(o->keyring, o->name, b64, sizeof(b64)))
			return -1;
		ret = msgr2_cephx_parse_key(b64, cl->cephx.key);
		if (ret) {
			err("bad key for %s in %s: %s", o->name, o->keyring,
			    strerror(-ret));
			return -1;
		}
		if (o->serve) {
			/* the one entity this mon knows */
			cl->entity.entity_type = type;
			snprintf(cl->entity.name, sizeof(cl->entity.name),
				 "%s", id);
			memcpy(cl->entity.key, cl->cephx.key,
			       sizeof(cl->entity.key));
			msgr2_wipe(cl->cephx.key, sizeof(cl->cephx.key));
			cl->cephx_server.keys = &cl->entity;
			cl->cephx_server.n_keys = 1;
			cfg->auth[i] = &msgr2_auth_cephx_server_ops;
			cfg->auth_priv[i] = &cl->cephx_server;
			continue;
		}
		cl->cephx.entity_type = type;
		snprintf(cl->cephx.name, sizeof(cl->cephx.name), "%s", id);
		cl->cephx.want_keys = MSGR2_ENTITY_MON | MSGR2_ENTITY_OSD |
				      MSGR2_ENTITY_MDS | MSGR2_ENTITY_MGR;
		cfg->auth[i] = &msgr2_auth_cephx_ops;
		cfg->auth_priv[i] = &cl->cephx;
	}
	cfg->n_auth = (u32)o->n_auth;
	return 0;
}

/* ---- commands ------------------------------------------------------------ */

/* A message slot that lives as long as the client (the engine links it). */
static struct msgr2_msg *new_msg(struct client *cl, u8 **front)
{
	if (cl->n_tx >= (int)ARRAY_SIZE(cl->tx)) {
		err("too many commands");
		return NULL;
	}
	*front = cl->tx_front[cl->n_tx];
	return &cl->tx[cl->n_tx++];
}

static int send_msg(struct client *cl, struct msgr2_msg *m)
{
	int ret;

	cl->tx_pending++;
	ret = msgr2_send(&cl->sess, m);
	if (ret < 0) {
		cl->tx_pending--;
		err("msgr2_send: %s", strerror(-ret));
	}
	return ret;
}

/* Wait for a message of @type (others are dropped); 0 or -errno. */
static int wait_reply(struct client *cl, u16 type, const char *what)
{
	char desc[96];
	int ret;

	snprintf(desc, sizeof(desc), "waiting for the reply to %s", what);
	for (;;) {
		ret = run_until(cl, have_msg, now_ms() + cl->opt->timeout_ms,
				desc);
		if (ret < 0)
			return ret;
		if (cl->in.m.hdr.type == type)
			return 0;
		if (cl->opt->verbose)
			err("ignoring message type %u", cl->in.m.hdr.type);
		free_in(&cl->in);
	}
}

static void init_msg(struct msgr2_msg *m, u16 type, u16 version, u16 compat,
		     void *front, size_t front_len)
{
	memset(m, 0, sizeof(*m));
	m->hdr.type = type;
	m->hdr.priority = 127;
	m->hdr.version = version;
	m->hdr.compat_version = compat;
	m->seg[MSGR2_FRONT].base = front;
	m->seg[MSGR2_FRONT].len = front_len;
}

static int cmd_ping(struct client *cl)
{
	struct msgr2_msg *m;
	const u8 *f;
	u8 *front;
	u32 flen, slen;
	char *json;
	int ret;

	m = new_msg(cl, &front);
	if (!m)
		return -1;
	init_msg(m, MSG_PING, 1, 0, NULL, 0);
	ret = send_msg(cl, m);
	if (!ret)
		ret = wait_reply(cl, MSG_PING, "MPing");
	if (ret)
		return -1;
	f = cl->in.m.buf[MSGR2_FRONT];
	flen = cl->in.m.len[MSGR2_FRONT];
	slen = flen >= 4 ? msgr2_get_le32(f) : 0;
	if (flen < 4 || slen != flen - 4) {
		err("ping: reply front (%u bytes) is not one string", flen);
		goto bad;
	}
	json = strndup((const char *)f + 4, slen);
	if (!json) {
		err("ping: out of memory");
		goto bad;
	}
	if (!strstr(json, "\"health\"") || !strstr(json, "\"mon_status\"")) {
		err("ping: reply lacks \"health\" or \"mon_status\": %.200s",
		    json);
		free(json);
		goto bad;
	}
	printf("ping %s\n", json);
	free(json);
	free_in(&cl->in);
	return 0;
bad:
	free_in(&cl->in);
	return -1;
}

static int cmd_version(struct client *cl, const char *what)
{
	struct msgr2_msg *m;
	u8 *front;
	size_t wlen = strlen(what);
	const u8 *f;
	u64 handle;
	char desc[96];
	int ret;

	if (wlen > 64) {
		err("version: map name too long");
		return -1;
	}
	m = new_msg(cl, &front);
	if (!m)
		return -1;
	do {
		msgr2_random(&handle, sizeof(handle));
	} while (!handle);
	msgr2_put_le64(front, handle);
	msgr2_put_le32(front + 8, (u32)wlen);
	memcpy(front + 12, what, wlen);
	init_msg(m, MSG_MON_GET_VERSION, 1, 0, front, 12 + wlen);
	m->hdr.tid = handle;
	snprintf(desc, sizeof(desc), "MMonGetVersion(%s)", what);
	ret = send_msg(cl, m);
	if (!ret)
		ret = wait_reply(cl, MSG_MON_GET_VERSION_REPLY, desc);
	if (ret)
		return -1;
	f = cl->in.m.buf[MSGR2_FRONT];
	if (cl->in.m.len[MSGR2_FRONT] < 24) {
		err("version: reply front is %u bytes, want 24",
		    cl->in.m.len[MSGR2_FRONT]);
		goto bad;
	}
	if (msgr2_get_le64(f) != handle) {
		err("version: reply handle %#llx != request handle %#llx",
		    (unsigned long long)msgr2_get_le64(f),
		    (unsigned long long)handle);
		goto bad;
	}
	if (cl->in.m.hdr.tid != handle) {
		err("version: reply tid %#llx != request tid %#llx",
		    (unsigned long long)cl->in.m.hdr.tid,
		    (unsigned long long)handle);
		goto bad;
	}
	printf("version %s %llu oldest %llu\n", what,
	       (unsigned long long)msgr2_get_le64(f + 8),
	       (unsigned long long)msgr2_get_le64(f + 16));
	free_in(&cl->in);
	return 0;
bad:
	free_in(&cl->in);
	return -1;
}

static int cmd_map(struct client *cl)
{
	struct msgr2_msg *m;
	const u8 *f, *u;
	u8 *front;
	u32 flen;
	int ret;

	m = new_msg(cl, &front);
	if (!m)
		return -1;
	init_msg(m, MSG_MON_GET_MAP, 1, 1, NULL, 0);
	ret = send_msg(cl, m);
	if (!ret)
		ret = wait_reply(cl, MSG_MON_MAP, "MMonGetMap");
	if (ret)
		return -1;
	f = cl->in.m.buf[MSGR2_FRONT];
	flen = cl->in.m.len[MSGR2_FRONT];
	/* le32 len, MonMap: u8 v, u8 compat, le32 len, fsid[16], le32 epoch */
	if (flen < 4 + 6 + 16 + 4 || msgr2_get_le32(f) > flen - 4) {
		err("map: MMonMap front of %u bytes is too short", flen);
		goto bad;
	}
	u = f + 10;
	printf("map fsid %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	       "%02x%02x%02x%02x%02x%02x epoch %u\n",
	       u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
	       u[10], u[11], u[12], u[13], u[14], u[15],
	       msgr2_get_le32(f + 26));
	free_in(&cl->in);
	return 0;
bad:
	free_in(&cl->in);
	return -1;
}

static void drain_done(void *priv, struct msgr2_msg *m, int status)
{
	struct client *cl = priv;

	cl->tx_pending--;
}

/* ---- main ----------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: %s --addr IP:PORT [--auth none|cephx[,none|cephx]]\n"
		"       [--name client.admin] [--keyring FILE] [--mode crc|secure]\n"
		"       [--timeout-ms N] [-v] COMMAND...\n"
		"       %s --serve --addr IP:PORT [--auth ...] [--name ...]\n"
		"       [--keyring FILE] [--mode crc|secure] [--timeout-ms N]\n"
		"commands: ping | version osdmap|monmap|... | map\n", prog, prog);
	exit(2);
}

static int parse_addr(const char *s, struct sockaddr_in *sin)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535)
		return -1;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((u16)port);
	return inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : -1;
}

static int parse_auth(const char *s, struct options *o)
{
	char buf[64], *tok, *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	o->n_auth = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o->n_auth >= MSGR2_MAX_AUTH)
			return -1;
		if (!strcmp(tok, "none"))
			o->auth[o->n_auth++] = MSGR2_AUTH_NONE;
		else if (!strcmp(tok, "cephx"))
			o->auth[o->n_auth++] = MSGR2_AUTH_CEPHX;
		else
			return -1;
	}
	return o->n_auth ? 0 : -1;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option lopts[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "auth", required_argument, NULL, 'A' },
		{ "name", required_argument, NULL, 'n' },
		{ "keyring", required_argument, NULL, 'k' },
		{ "mode", required_argument, NULL, 'm' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "serve", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->auth[0] = MSGR2_AUTH_NONE;
	o->n_auth = 1;
	o->name = "client.admin";
	o->mode = MSGR2_MODE_CRC;
	o->timeout_ms = 10000;
	while ((c = getopt_long(argc, argv, "a:A:n:k:m:t:vsh", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'a':
			o->addr_str = optarg;
			if (parse_addr(optarg, &o->sin)) {
				err("bad --addr '%s' (want IPv4:PORT)", optarg);
				exit(2);
			}
			break;
		case 'A':
			if (parse_auth(optarg, o)) {
				err("bad --auth '%s'", optarg);
				exit(2);
			}
			break;
		case 'n':
			o->name = optarg;
			break;
		case 'k':
			o->keyring = optarg;
			break;
		case 'm':
			if (!strcmp(optarg, "crc")) {
				o->mode = MSGR2_MODE_CRC;
			} else if (!strcmp(optarg, "secure")) {
				o->mode = MSGR2_MODE_SECURE;
			} else {
				err("bad --mode '%s'", optarg);
				exit(2);
			}
			break;
		case 't':
			v = strtol(optarg, &end, 10);
			if (*end || v <= 0 || v > 3600000) {
				err("bad --timeout-ms '%s'", optarg);
				exit(2);
			}
			o->timeout_ms = (u32)v;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 's':
			o->serve = true;
			break;
		default:
			usage();
		}
	}
	if (!o->addr_str || (optind >= argc) != o->serve)
		usage();
	if (!o->serve && !o->sin.sin_port) {
		err("--addr needs a port");
		exit(2);
	}
}

static const char *mode_name(u32 mode)
{
	return mode == MSGR2_MODE_SECURE ? "secure" :
	       mode == MSGR2_MODE_CRC ? "crc" : "unknown";
}

/* Connect and run the handshake of cl->conn on cl->sess: 0 or -1. */
static int dial(struct client *cl, const char *when)
{
	int ret;

	cl->fd = tcp_connect(&cl->opt->sin, cl->opt->timeout_ms);
	if (cl->fd < 0)
		return -1;
	ret = msgr2_conn_init(cl->conn, &cl->cfg, &cl->sess);
	if (ret < 0) {
		err("msgr2_conn_init: %s", strerror(-ret));
		return -1;
	}
	cl->conn_live = true;
	/* the engine's own handshake timeout should fire first */
	if (run_until(cl, is_ready, now_ms() + cl->opt->timeout_ms + 5000,
		      when))
		return -1;
	cl->mode = msgr2_conn_mode(cl->conn);
	return 0;
}

/* End the connection, keep the session and the auth state. */
static void hang_up(struct client *cl)
{
	if (cl->conn_live)
		msgr2_conn_release(cl->conn);
	cl->conn_live = false;
	if (cl->fd >= 0)
		close(cl->fd);
	cl->fd = -1;
	cl->is_ready = false;
}

static int cmd_redial(struct client *cl)
{
	hang_up(cl);
	cl->cfg.global_seq++;
	if (dial(cl, "during the redial's handshake"))
		return -1;
	printf("redial mode %s\n", mode_name(cl->mode));
	return 0;
}

static int run_commands(struct client *cl, int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "ping")) {
			if (cmd_ping(cl))
				return -1;
		} else if (!strcmp(argv[i], "map")) {
			if (cmd_map(cl))
				return -1;
		} else if (!strcmp(argv[i], "redial")) {
			if (cmd_redial(cl))
				return -1;
		} else if (!strcmp(argv[i], "version") && i + 1 < argc) {
			if (cmd_version(cl, argv[++i]))
				return -1;
		} else {
			err("unknown command '%s'", argv[i]);
			return -1;
		}
	}
	return 0;
}

/*
 * What both roles configure alike: modes, timeout, scratch, callbacks,
 * auth; the connection object; a lossy session (mon clients are lossy).
 */
static int setup_common(struct client *cl, const struct options *o)
{
	cl->cfg.features_supported = MSGR2_FEATURES_DEFAULT;
	cl->cfg.n_modes = 1;
	cl->cfg.modes[0] = o->mode;
	cl->cfg.handshake_timeout_ms = o->timeout_ms;
	cl->cfg.tx_scratch = malloc(TX_SCRATCH_LEN);
	cl->cfg.tx_scratch_len = TX_SCRATCH_LEN;
	cl->cfg.ops = &client_ops;
	cl->cfg.priv = cl;
	cl->conn = calloc(1, msgr2_conn_size());
	if (!cl->conn || !cl->cfg.tx_scratch) {
		err("out of memory");
		return -1;
	}
	if (setup_auth(cl, o))
		return -1;
	msgr2_session_init(&cl->sess, true);
	return 0;
}

/* --serve: be the mon for one connection (see the head comment). */
static int serve(struct client *cl, const struct options *o)
{
	struct sockaddr_in local, peer;
	int ret = 1;

	cl->cfg.role = MSGR2_SERVER;
	cl->cfg.my_type = MSGR2_ENTITY_MON;
	if (setup_common(cl, o))
		return 1;
	cl->fd = tcp_accept_one((struct sockaddr_in *)&o->sin, o->timeout_ms,
				&local, &peer);
	if (cl->fd < 0)
		return 1;
	/* a mon's address has nonce 0; the client as we see it */
	msgr2_addr_ipv4(&cl->cfg.my_addrs.a[0], MSGR2_ADDR_MSGR2, 0,
			(const u8 *)&local.sin_addr, ntohs(local.sin_port));
	cl->cfg.my_addrs.n = 1;
	msgr2_addr_ipv4(&cl->cfg.target, MSGR2_ADDR_MSGR2, 0,
			(const u8 *)&peer.sin_addr, ntohs(peer.sin_port));
	ret = msgr2_conn_init(cl->conn, &cl->cfg, &cl->sess);
	if (ret < 0) {
		err("msgr2_conn_init: %s", strerror(-ret));
		return 1;
	}
	ret = 1;
	if (run_until(cl, is_ready, now_ms() + o->timeout_ms + 5000,
		      "during the handshake"))
		goto out;
	printf("mode %s\n", msgr2_conn_mode(cl->conn) == MSGR2_MODE_SECURE ?
	       "secure" : "crc");
	if (run_until(cl, have_msg, now_ms() + o->timeout_ms,
		      "waiting for the first message"))
		goto out;
	printf("message type %u\n", cl->in.m.hdr.type);
	ret = 0;
out:
	msgr2_conn_release(cl->conn);
	msgr2_session_drain(&cl->sess, drain_done, cl, -ECONNRESET);
	return ret;
}

int main(int argc, char **argv)
{
	static const u8 zero_ip[4];
	struct options o;
	struct client *cl;
	u32 nonce;
	int ret = 1;

	parse_options(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);

	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		err("out of memory");
		return 1;
	}
	cl->opt = &o;
	cl->fd = -1;
	if (o.serve) {
		ret = serve(cl, &o);
		if (cl->fd >= 0)
			close(cl->fd);
		goto out;
	}
	cl->cfg.role = MSGR2_CLIENT;
	cl->cfg.my_type = MSGR2_ENTITY_CLIENT;
	cl->cfg.peer_type = MSGR2_ENTITY_MON;
	do {
		msgr2_random(&nonce, sizeof(nonce));
	} while (!nonce);
	/* IP 0: the engine fills in the one the mon's HELLO reports */
	msgr2_addr_ipv4(&cl->cfg.my_addrs.a[0], MSGR2_ADDR_ANY, nonce,
			zero_ip, 0);
	cl->cfg.my_addrs.n = 1;
	msgr2_addr_ipv4(&cl->cfg.target, MSGR2_ADDR_MSGR2, 0,
			(const u8 *)&o.sin.sin_addr, ntohs(o.sin.sin_port));
	cl->cfg.global_seq = 1;
	if (setup_common(cl, &o))
		goto out;

	ret = 1;
	if (dial(cl, "during the handshake"))
		goto out_release;
	printf("mode %s\n", mode_name(cl->mode));
	if (run_commands(cl, argc - optind, argv + optind))
		goto out_release;
	ret = 0;
out_release:
	hang_up(cl);
	msgr2_session_drain(&cl->sess, drain_done, cl, -ECONNRESET);
out:
	free_in(&cl->in);
	free(cl->conn);
	free(cl->cfg.tx_scratch);
	free(cl);
	return ret;
}
