// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr_rogue - a misbehaving msgr2 peer for the kmsgr bad-input tests.
 *
 *   kmsgr_rogue [--life-ms N] server FAULT
 *   kmsgr_rogue [--life-ms N] client:IP:PORT:NONCE FAULT
 *
 * "server" listens on 127.0.0.1 at a free port, prints "PORT\n" on stdout
 * and serves one connection; "client:..." connects to a kmsgr listener
 * (NONCE: its address nonce).  Then it commits FAULT:
 *
 *   banner          a banner with a wrong magic ("ceph v3\n")
 *   garbage         a valid banner, then 4 KiB of random bytes
 *   hello-oversize  a valid banner, then a HELLO preamble (valid crc)
 *                   announcing a 1 MiB control segment
 *   preamble-crc    a full handshake (msgr2 engine, crc mode, auth none),
 *                   then a MESSAGE whose preamble crc is wrong
 *   segment-crc     a full handshake, then a MESSAGE whose front was
 *                   changed after its crc was computed
 *   oversize        a full handshake, then a MESSAGE preamble (valid crc)
 *                   announcing a 2 GiB front
 *   forged-reconnect  a full lossless handshake; then, on a second
 *                   connection, a SESSION_RECONNECT with the first one's
 *                   client cookie and a wrong server cookie (what a third
 *                   party that saw the cookie on the wire could send);
 *                   then a message (type 0x4322) on the first connection,
 *                   which must still be up
 *   resume-live     a full lossless handshake; the first message the
 *                   peer sends is read on that connection and never
 *                   acked; then, with that connection still open, a
 *                   second one resumes the session (SESSION_RECONNECT
 *                   with the right cookies and msg_seq 1): prints
 *                   "resume: ready" once the server took it
 *   silent          a full handshake, then silence: nothing more is sent,
 *                   not even an answer to a keepalive
 *   unacked         the same, but the session it accepts is lossless (a
 *                   server cookie): what the peer sends is never acked
 *   flood           as unacked, then 16 messages (type 0x4323, tid 0 to
 *                   15) of an 8 KiB data segment each, then silence
 *   withhold        a full handshake, then the first 77 bytes of a MESSAGE
 *                   (preamble, ceph_msg_header2 and its crc) announcing a
 *                   data segment of $KMSGR_ROGUE_DATA bytes (default
 *                   64 MiB), and nothing more
 *
 * and waits for the peer to close the connection: prints
 * "closed after N ms" and exits 0 when it did, "still open" and exits 1
 * when --life-ms (default 20000) passed first; 2 on usage or set-up errors.
 * The handshake uses the engine in kmod/msgr2/ (user-space port).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "msgr2.h"

#define ROGUE_PREAMBLE_LEN	32
#define ROGUE_PREAMBLE_CRC_OFF	28
#define ROGUE_HDR2_LEN		41
#define ROGUE_FRONT_LEN		100
#define ROGUE_MAX_IOV		64
#define ROGUE_FLOOD_MSGS	16
#define ROGUE_FLOOD_LEN		8192
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

enum rogue_fault {
	F_BANNER, F_GARBAGE, F_HELLO_OVERSIZE,
	F_PREAMBLE_CRC, F_SEGMENT_CRC, F_OVERSIZE, F_WITHHOLD,
	F_FORGED_RECONNECT, F_SILENT, F_UNACKED, F_RESUME_LIVE, F_FLOOD,
};

static const struct {
	const char *name;
	enum rogue_fault f;
} rogue_faults[] = {
	{ "banner", F_BANNER },
	{ "garbage", F_GARBAGE },
	{ "hello-oversize", F_HELLO_OVERSIZE },
	{ "preamble-crc", F_PREAMBLE_CRC },
	{ "segment-crc", F_SEGMENT_CRC },
	{ "oversize", F_OVERSIZE },
	{ "withhold", F_WITHHOLD },
	{ "forged-reconnect", F_FORGED_RECONNECT },
	{ "silent", F_SILENT },
	{ "unacked", F_UNACKED },
	{ "resume-live", F_RESUME_LIVE },
	{ "flood", F_FLOOD },
};

struct rogue {
	int fd;
	bool server;
	struct sockaddr_in peer;	/* client: kmsgr listener */
	u32 peer_nonce;
	enum rogue_fault fault;
	long long deadline;
	/* engine */
	struct msgr2_conn *conn;
	struct msgr2_session sess;
	struct msgr2_config cfg;
	struct msgr2_ops ops;
	struct msgr2_auth_none none;
	bool ready;
	bool reset;			/* the peer reset the session */
	unsigned int n_rx;		/* messages received */
	/* corruption of the engine's output: flip a byte at this offset */
	long long corrupt_at;		/* -1: none */
	long long tx_off;		/* bytes written since corrupt_at was set */
	struct msgr2_msg msg;
	u8 front[ROGUE_FRONT_LEN];
	struct msgr2_msg flood[ROGUE_FLOOD_MSGS];
	u8 flood_data[ROGUE_FLOOD_LEN];
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
	fprintf(stderr, "kmsgr_rogue: %s: %s\n", what, strerror(errno));
	exit(2);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const u8 *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- engine callbacks --------------------------------------------------- */

static int cb_rx_alloc(void *priv, struct msgr2_rx_msg *m)
{
	int i;

	for (i = 0; i < MSGR2_NSEG; i++) {
		m->buf[i] = m->len[i] ? malloc(m->len[i]) : NULL;
		if (m->len[i] && !m->buf[i])
			return -ENOMEM;
	}
	return 0;
}

static void cb_rx_msg(void *priv, struct msgr2_rx_msg *m, int status)
{
	struct rogue *r = priv;
	int i;

	if (!status)
		r->n_rx++;
	for (i = 0; i < MSGR2_NSEG; i++) {
		free(m->buf[i]);
		m->buf[i] = NULL;
	}
}

static void cb_tx_done(void *priv, struct msgr2_msg *m, int status)
{
}

static void cb_event(void *priv, enum msgr2_event ev, u64 arg)
{
	struct rogue *r = priv;

	if (ev == MSGR2_EV_READY)
		r->ready = true;
	if (ev == MSGR2_EV_SESSION_RESET)
		r->reset = true;
}

/* Send what the engine has; flip the byte at corrupt_at on the way. */
static int rogue_flush(struct rogue *r)
{
	struct msgr2_iov iov[ROGUE_MAX_IOV];
	size_t j, len;
	int n, i, ret;
	u8 *copy;

	for (;;) {
		n = msgr2_tx_iov(r->conn, iov, ROGUE_MAX_IOV);
		if (n <= 0)
			return n;
		for (i = 0; i < n; i++) {
			len = iov[i].len;
			if (r->corrupt_at >= r->tx_off &&
			    r->corrupt_at < r->tx_off + (long long)len) {
				/* never write into the engine's buffers */
				copy = malloc(len);
				if (!copy)
					return -ENOMEM;
				memcpy(copy, iov[i].base, len);
				j = (size_t)(r->corrupt_at - r->tx_off);
				copy[j] ^= 0x40;
				ret = write_all(r->fd, copy, len);
				free(copy);
				r->corrupt_at = -1;
			} else {
				ret = write_all(r->fd, iov[i].base, len);
			}
			if (ret)
				return ret;
			r->tx_off += (long long)len;
			ret = msgr2_tx_done(r->conn, len);
			if (ret < 0)
				return ret;
		}
	}
}

/* Feed what the socket has to the engine; -ECONNRESET on EOF. */
static int rogue_pump(struct rogue *r)
{
	ssize_t want, got;
	void *buf;
	int ret;

	for (;;) {
		want = msgr2_rx_want(r->conn, &buf);
		if (want <= 0)
			return (int)want;
		got = recv(r->fd, buf, (size_t)want, MSG_DONTWAIT);
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (got <= 0)
			return -ECONNRESET;
		ret = msgr2_rx_done(r->conn, (size_t)got);
		if (ret < 0)
			return ret;
	}
}

static int rogue_handshake(struct rogue *r)
{
	static const u8 zero_ip[4];
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	struct pollfd p;
	u32 nonce = 0x524f4755;	/* "ROGU" */
	int ret;

	r->ops.rx_alloc = cb_rx_alloc;
	r->ops.rx_msg = cb_rx_msg;
	r->ops.tx_done = cb_tx_done;
	r->ops.event = cb_event;
	r->cfg.features_supported = MSGR2_FEATURES_DEFAULT;
	r->cfg.n_modes = 1;
	r->cfg.modes[0] = MSGR2_MODE_CRC;
	r->cfg.n_auth = 1;
	r->cfg.auth[0] = &msgr2_auth_none_ops;
	r->cfg.auth_priv[0] = &r->none;
	r->cfg.ops = &r->ops;
	r->cfg.priv = r;
	strcpy(r->none.name, "rogue");
	if (r->server) {
		if (getsockname(r->fd, (struct sockaddr *)&sin, &sl))
			return -errno;
		/* our identity: the address the client dialled, nonce 0 */
		msgr2_addr_ipv4(&r->cfg.my_addrs.a[0], MSGR2_ADDR_MSGR2, 0,
				(const u8 *)&sin.sin_addr,
				ntohs(sin.sin_port));
		r->cfg.my_addrs.n = 1;
		sl = sizeof(sin);
		if (getpeername(r->fd, (struct sockaddr *)&sin, &sl))
			return -errno;
		r->cfg.role = MSGR2_SERVER;
		r->cfg.my_type = MSGR2_ENTITY_OSD;
		r->cfg.my_gid = 4242;
		r->cfg.global_seq = 7;
		r->none.entity_type = MSGR2_ENTITY_OSD;
		msgr2_addr_ipv4(&r->cfg.target, MSGR2_ADDR_MSGR2, 0,
				(const u8 *)&sin.sin_addr,
				ntohs(sin.sin_port));
	} else {
		r->cfg.role = MSGR2_CLIENT;
		r->cfg.my_type = MSGR2_ENTITY_CLIENT;
		r->cfg.global_seq = 1;
		r->none.entity_type = MSGR2_ENTITY_CLIENT;
		r->none.peer_type = MSGR2_ENTITY_OSD;
		msgr2_addr_ipv4(&r->cfg.my_addrs.a[0], MSGR2_ADDR_ANY, nonce,
				zero_ip, 0);
		r->cfg.my_addrs.n = 1;
		msgr2_addr_ipv4(&r->cfg.target, MSGR2_ADDR_MSGR2,
				r->peer_nonce,
				(const u8 *)&r->peer.sin_addr,
				ntohs(r->peer.sin_port));
	}
	r->conn = calloc(1, msgr2_conn_size());
	if (!r->conn)
		return -ENOMEM;
	msgr2_session_init(&r->sess, r->fault != F_FORGED_RECONNECT &&
			   r->fault != F_UNACKED &&
			   r->fault != F_RESUME_LIVE &&
			   r->fault != F_FLOOD);
	ret = msgr2_conn_init(r->conn, &r->cfg, &r->sess);
	if (ret)
		return ret;

	r->corrupt_at = -1;
	while (!r->ready) {
		ret = rogue_flush(r);
		if (ret < 0)
			break;
		if (now_ms() > r->deadline)
			return -ETIMEDOUT;
		p.fd = r->fd;
		p.events = POLLIN;
		if (poll(&p, 1, 100) > 0) {
			ret = rogue_pump(r);
			if (ret < 0)
				break;
		}
		ret = msgr2_tick(r->conn, (u64)now_ms());
		if (ret < 0)
			break;
	}
	if (!r->ready) {
		fprintf(stderr, "kmsgr_rogue: handshake failed: %s (%s)\n",
			msgr2_reason_str(msgr2_conn_reason(r->conn)),
			strerror(-ret));
		return ret ? ret : -EPROTO;
	}
	/*
	 * whatever follows READY (e.g. nothing) goes out unchanged; but
	 * resume-live must not ack a message that came with SERVER_IDENT
	 */
	return r->fault == F_RESUME_LIVE ? 0 : rogue_flush(r);
}

static void preamble(u8 *p, u8 tag, u32 nsegs, const u32 *len)
{
	u32 i;

	memset(p, 0, ROGUE_PREAMBLE_LEN);
	p[0] = tag;
	p[1] = (u8)nsegs;
	for (i = 0; i < nsegs; i++) {
		msgr2_put_le32(p + 2 + 6 * i, len[i]);
		msgr2_put_le16(p + 6 + 6 * i, 8);
	}
	msgr2_put_le32(p + ROGUE_PREAMBLE_CRC_OFF,
		       msgr2_crc32c(0, p, ROGUE_PREAMBLE_CRC_OFF));
}

static const u8 good_banner[26] = {
	'c', 'e', 'p', 'h', ' ', 'v', '2', '\n', 16, 0,
	1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
};

static int rogue_forged_reconnect(struct rogue *r);
static int rogue_resume_live(struct rogue *r);

/* A lossless session's messages, all of them out, then nothing more. */
static int rogue_flood(struct rogue *r)
{
	struct msgr2_msg *m;
	int i, ret;

	ret = rogue_handshake(r);
	if (ret)
		return ret;
	memset(r->flood_data, 0xf1, sizeof(r->flood_data));
	for (i = 0; i < ROGUE_FLOOD_MSGS; i++) {
		m = &r->flood[i];
		memset(m, 0, sizeof(*m));
		m->hdr.type = 0x4323;
		m->hdr.priority = 127;
		m->hdr.version = 1;
		m->hdr.tid = (u64)i;
		m->seg[MSGR2_DATA].base = r->flood_data;
		m->seg[MSGR2_DATA].len = sizeof(r->flood_data);
		ret = msgr2_send(&r->sess, m);
		if (ret)
			return ret;
	}
	return rogue_flush(r);
}

static int commit_fault(struct rogue *r)
{
	u8 buf[4096];
	u32 len[4];
	size_t i;
	int ret;

	switch (r->fault) {
	case F_BANNER:
		memcpy(buf, good_banner, sizeof(good_banner));
		buf[6] = '3';
		return write_all(r->fd, buf, sizeof(good_banner));
	case F_GARBAGE:
		ret = write_all(r->fd, good_banner, sizeof(good_banner));
		if (ret)
			return ret;
		srand(0x6a7b);
		for (i = 0; i < sizeof(buf); i++)
			buf[i] = (u8)rand();
		return write_all(r->fd, buf, sizeof(buf));
	case F_HELLO_OVERSIZE:
		ret = write_all(r->fd, good_banner, sizeof(good_banner));
		if (ret)
			return ret;
		len[0] = 1U << 20;
		preamble(buf, MSGR2_TAG_HELLO, 1, len);
		return write_all(r->fd, buf, ROGUE_PREAMBLE_LEN);
	case F_OVERSIZE:
		ret = rogue_handshake(r);
		if (ret)
			return ret;
		len[0] = ROGUE_HDR2_LEN;
		len[1] = 0x80000000U;
		len[2] = 0;
		len[3] = 0;
		preamble(buf, MSGR2_TAG_MESSAGE, 2, len);
		return write_all(r->fd, buf, ROGUE_PREAMBLE_LEN);
	case F_WITHHOLD:
		ret = rogue_handshake(r);
		if (ret)
			return ret;
		len[0] = ROGUE_HDR2_LEN;
		len[1] = 0;
		len[2] = 0;
		len[3] = getenv("KMSGR_ROGUE_DATA") ?
			 (u32)strtoul(getenv("KMSGR_ROGUE_DATA"), NULL, 0) :
			 64U << 20;
		preamble(buf, MSGR2_TAG_MESSAGE, 4, len);
		/* ceph_msg_header2: seq 1, type, priority 127, version 1 */
		memset(buf + ROGUE_PREAMBLE_LEN, 0, ROGUE_HDR2_LEN);
		msgr2_put_le64(buf + ROGUE_PREAMBLE_LEN, 1);
		msgr2_put_le16(buf + ROGUE_PREAMBLE_LEN + 16, 0x4321);
		msgr2_put_le16(buf + ROGUE_PREAMBLE_LEN + 18, 127);
		msgr2_put_le16(buf + ROGUE_PREAMBLE_LEN + 20, 1);
		msgr2_put_le16(buf + ROGUE_PREAMBLE_LEN + 37, 1);
		msgr2_put_le32(buf + ROGUE_PREAMBLE_LEN + ROGUE_HDR2_LEN,
			       msgr2_crc32c(~0U, buf + ROGUE_PREAMBLE_LEN,
					    ROGUE_HDR2_LEN));
		return write_all(r->fd, buf,
				 ROGUE_PREAMBLE_LEN + ROGUE_HDR2_LEN + 4);
	case F_FORGED_RECONNECT:
		return rogue_forged_reconnect(r);
	case F_RESUME_LIVE:
		return rogue_resume_live(r);
	case F_FLOOD:
		return rogue_flood(r);
	case F_SILENT:
	case F_UNACKED:
		return rogue_handshake(r);	/* wait_close() only drains */
	case F_PREAMBLE_CRC:
	case F_SEGMENT_CRC:
		ret = rogue_handshake(r);
		if (ret)
			return ret;
		memset(&r->msg, 0, sizeof(r->msg));
		for (i = 0; i < sizeof(r->front); i++)
			r->front[i] = (u8)i;
		r->msg.hdr.type = 0x4321;
		r->msg.hdr.priority = 127;
		r->msg.hdr.version = 1;
		r->msg.seg[MSGR2_FRONT].base = r->front;
		r->msg.seg[MSGR2_FRONT].len = sizeof(r->front);
		/*
		 * The frame starts at tx_off: preamble (32), ceph_msg_header2
		 * (41) and its crc (4), then the front.
		 */
		r->corrupt_at = r->tx_off + (r->fault == F_PREAMBLE_CRC ?
			ROGUE_PREAMBLE_CRC_OFF :
			ROGUE_PREAMBLE_LEN + ROGUE_HDR2_LEN + 4 + 10);
		ret = msgr2_send(&r->sess, &r->msg);
		if (ret)
			return ret;
		return rogue_flush(r);
	}
	return -EINVAL;
}

/*
 * Drive r->conn on r->fd for up to 5 s: until the peer resets the session,
 * or with @ready until it is READY, or the connection ends.
 */
static void rogue_drive(struct rogue *r, bool ready)
{
	struct pollfd p = { .fd = r->fd, .events = POLLIN };
	long long end = now_ms() + 5000;

	r->reset = false;
	r->ready = false;
	while (now_ms() < end && !r->reset && !(ready && r->ready)) {
		if (rogue_flush(r) < 0)
			break;
		if (poll(&p, 1, 50) > 0 && rogue_pump(r) < 0)
			break;
	}
}

/*
 * A second connection that tries to resume the first one's session with a
 * wrong server cookie; the server must answer with a reset and leave the
 * first connection alone, which then carries a message.
 */
static int rogue_forged_reconnect(struct rogue *r)
{
	struct msgr2_conn *c1 = r->conn, *c2;
	struct msgr2_session forged;
	int fd1 = r->fd, fd2, ret;

	ret = rogue_handshake(r);
	if (ret)
		return ret;
	fd2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd2 < 0 || connect(fd2, (struct sockaddr *)&r->peer,
			       sizeof(r->peer)))
		return -errno;
	c1 = r->conn;
	c2 = calloc(1, msgr2_conn_size());
	if (!c2)
		return -ENOMEM;
	msgr2_session_init(&forged, false);
	forged.client_cookie = r->sess.client_cookie;
	forged.server_cookie = r->sess.server_cookie ^ 0x5a5a;
	r->cfg.global_seq = 2;
	ret = msgr2_conn_init(c2, &r->cfg, &forged);
	if (ret)
		return ret;
	/* drive the second connection until it is reset, 5 s at most */
	r->conn = c2;
	r->fd = fd2;
	rogue_drive(r, false);
	printf("forged reconnect: %s, %s\n",
	       r->reset ? "reset by the server" : "not reset",
	       msgr2_reason_str(msgr2_conn_reason(c2)));
	msgr2_conn_release(c2);
	free(c2);
	close(fd2);
	r->conn = c1;
	r->fd = fd1;

	memset(&r->msg, 0, sizeof(r->msg));
	r->msg.hdr.type = 0x4322;
	r->msg.hdr.priority = 127;
	r->msg.hdr.version = 1;
	r->msg.seg[MSGR2_FRONT].base = r->front;
	r->msg.seg[MSGR2_FRONT].len = sizeof(r->front);
	ret = msgr2_send(&r->sess, &r->msg);
	if (ret)
		return ret;
	return rogue_flush(r);
}

/*
 * A client whose link broke one way resumes its session while the server
 * still holds the old connection: the server's first message was read on
 * it (and not acked), so the resume's msg_seq completes that message.
 * The new connection becomes the one wait_close() watches.
 */
static int rogue_resume_live(struct rogue *r)
{
	struct msgr2_session res;
	struct pollfd p;
	long long end;
	int fd2, ret;

	ret = rogue_handshake(r);
	if (ret)
		return ret;
	/* read (only: an ack would go out with a flush) the first message */
	for (end = now_ms() + 10000; now_ms() < end && !r->n_rx;) {
		p.fd = r->fd;
		p.events = POLLIN;
		if (poll(&p, 1, 50) > 0 && rogue_pump(r) < 0)
			break;
	}
	if (!r->n_rx) {
		printf("resume: no message to resume after\n");
		return -ETIMEDOUT;
	}
	fd2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd2 < 0 || connect(fd2, (struct sockaddr *)&r->peer,
			       sizeof(r->peer)))
		return -errno;
	/* the session as it is (cookies, in_seq 1), nothing queued */
	res = r->sess;
	res.conn = NULL;
	res.global_seq++;
	r->cfg.global_seq = res.global_seq;
	r->sess = res;
	/* the old connection stays open, unread, until the exit */
	r->conn = calloc(1, msgr2_conn_size());
	if (!r->conn)
		return -ENOMEM;
	ret = msgr2_conn_init(r->conn, &r->cfg, &r->sess);
	if (ret)
		return ret;
	r->fd = fd2;
	rogue_drive(r, true);
	printf("resume: %s, %s\n", r->ready ? "ready" :
	       r->reset ? "reset by the server" : "not ready",
	       msgr2_reason_str(msgr2_conn_reason(r->conn)));
	return rogue_flush(r);
}

/* Wait for EOF (or a reset) from the peer, draining what it sends. */
static int wait_close(struct rogue *r, long long t0)
{
	struct pollfd p = { .fd = r->fd, .events = POLLIN };
	char buf[4096];
	ssize_t n;

	while (now_ms() < r->deadline) {
		if (poll(&p, 1, 100) <= 0)
			continue;
		n = recv(r->fd, buf, sizeof(buf), 0);
		if (n <= 0) {
			printf("closed after %lld ms\n", now_ms() - t0);
			return 0;
		}
	}
	printf("still open\n");
	return 1;
}

static int parse_role(struct rogue *r, const char *s)
{
	char ip[64];
	unsigned int port, nonce;

	if (!strcmp(s, "server")) {
		r->server = true;
		return 0;
	}
	if (sscanf(s, "client:%63[0-9.]:%u:%u", ip, &port, &nonce) != 3 ||
	    !port || port > 65535)
		return -1;
	r->peer.sin_family = AF_INET;
	r->peer.sin_port = htons((u16)port);
	r->peer_nonce = nonce;
	return inet_pton(AF_INET, ip, &r->peer.sin_addr) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	struct rogue r = { .fd = -1 };
	long life = 20000;
	long long t0;
	int lfd, i = 1, one = 1, ret;
	size_t f;

	if (argc > 2 && !strcmp(argv[1], "--life-ms")) {
		life = strtol(argv[2], NULL, 10);
		i = 3;
	}
	if (argc - i != 2 || life <= 0 || parse_role(&r, argv[i]))
		goto usage;
	for (f = 0; f < ARRAY_SIZE(rogue_faults); f++)
		if (!strcmp(argv[i + 1], rogue_faults[f].name))
			break;
	if (f == ARRAY_SIZE(rogue_faults))
		goto usage;
	r.fault = rogue_faults[f].f;
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	r.deadline = now_ms() + life;

	if (r.server) {
		lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (lfd < 0)
			die("socket");
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) ||
		    listen(lfd, 4) ||
		    getsockname(lfd, (struct sockaddr *)&sin, &sl))
			die("listen");
		printf("%u\n", ntohs(sin.sin_port));
		r.fd = accept(lfd, NULL, NULL);
		if (r.fd < 0)
			die("accept");
		close(lfd);
	} else {
		r.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (r.fd < 0)
			die("socket");
		if (connect(r.fd, (struct sockaddr *)&r.peer, sizeof(r.peer)))
			die("connect");
	}
	setsockopt(r.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	t0 = now_ms();
	ret = commit_fault(&r);
	if (ret && ret != -EPIPE && ret != -ECONNRESET) {
		fprintf(stderr, "kmsgr_rogue: %s: %s\n", argv[i + 1],
			strerror(-ret));
		return 2;
	}
	ret = wait_close(&r, t0);
	if (r.conn)
		msgr2_conn_release(r.conn);
	close(r.fd);
	return ret;
usage:
	fprintf(stderr, "usage: kmsgr_rogue [--life-ms N] server|client:IP:PORT:NONCE FAULT\n"
		"faults: banner garbage hello-oversize preamble-crc segment-crc oversize withhold forged-reconnect silent unacked resume-live flood\n");
	return 2;
}
