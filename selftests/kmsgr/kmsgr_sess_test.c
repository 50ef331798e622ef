// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - sessions between two instances, on the raw uapi
 * (libkmsgr only to ask INFO whether a variant can run): two instances in
 * one process, A listens (lossless), B connects to it (lossless, crc, auth
 * none).  Variants: over TCP on 127.0.0.1, and over RDMA on the guest's
 * NIC address (KMSGR_VM_IP from tools/vm/run --rxe, and kmsgr_rdma.ko
 * loaded; SKIP without them).
 *
 * Over both transports (fixture sess): exchange, close_in_flight,
 * bad_connect.  TCP only (fixture sess_tcp): reconnect (kills the TCP
 * connection with ss -K).
 *
 *  exchange        ACCEPTED + UP on A, UP on B; messages with front,
 *                  middle and data both ways arrive with their header
 *                  fields and bytes in receive-pool slices; SENDs complete
 *                  with 0; RELEASE; the instances cannot see each other's
 *                  ids; CLOSE gives CLOSED (reason NONE) on B and DOWN on A;
 *                  a second CLOSE of the id fails with ENOENT.
 *  reconnect       the TCP connection is killed (ss -K) twice: both ends
 *                  post DOWN then UP on the same session ids (the server
 *                  session is resumed), and messages flow again.
 *  close_in_flight 64 messages of 256 KiB queued both ways, then both
 *                  files closed at once: the module tears everything down
 *                  (the instance counter returns to 0).
 *  bad_connect     malformed CONNECT/LISTEN arguments fail with EINVAL (or
 *                  EOPNOTSUPP), and so does a key_desc naming another
 *                  service's logon key ("cifs:..."; a "kmsgr:" one that
 *                  is not there: ENOKEY); a connect to a closed port
 *                  gives a lossy session CLOSED with reason CONNECT.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "kmsgr_ring_util.h"

#define BUF_SIZE	(8U << 20)
#define POOL_SIZE	(4U << 20)
#define TX_SIZE		(BUF_SIZE - POOL_SIZE)

struct inst {
	int fd;
	struct kmsgr_setup setup;
	uint8_t *sqmap, *cqmap, *buf;
	struct kmsgr_ring *sq, *cq;
	struct kmsgr_sqe *sqes;
	struct kmsgr_cqe *cqes;
	uint32_t tx_off;		/* bump allocator in the app's part */
};

static int inst_open(struct inst *in)
{
	memset(in, 0, sizeof(*in));
	in->fd = open(KMSGR_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (in->fd < 0)
		return -errno;
	in->setup.sq_entries = 128;
	in->setup.cq_entries = 512;
	in->setup.buf_size = BUF_SIZE;
	in->setup.rx_pool_size = POOL_SIZE;
	if (ioctl(in->fd, KMSGR_IOC_SETUP, &in->setup))
		return -errno;
	in->sqmap = mmap(NULL, in->setup.sq_ring_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, in->fd, KMSGR_OFF_SQ_RING);
	in->cqmap = mmap(NULL, in->setup.cq_ring_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, in->fd, KMSGR_OFF_CQ_RING);
	in->buf = mmap(NULL, in->setup.buf_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED, in->fd, KMSGR_OFF_BUF);
	if (in->sqmap == MAP_FAILED || in->cqmap == MAP_FAILED ||
	    in->buf == MAP_FAILED)
		return -errno;
	in->sq = (struct kmsgr_ring *)in->sqmap;
	in->cq = (struct kmsgr_ring *)in->cqmap;
	in->sqes = (struct kmsgr_sqe *)(in->sqmap + in->sq->entries_off);
	in->cqes = (struct kmsgr_cqe *)(in->cqmap + in->cq->entries_off);
	return 0;
}

static void inst_close(struct inst *in)
{
	if (in->sqmap && in->sqmap != MAP_FAILED)
		munmap(in->sqmap, in->setup.sq_ring_size);
	if (in->cqmap && in->cqmap != MAP_FAILED)
		munmap(in->cqmap, in->setup.cq_ring_size);
	if (in->buf && in->buf != MAP_FAILED)
		munmap(in->buf, in->setup.buf_size);
	if (in->fd >= 0)
		close(in->fd);
	in->fd = -1;
	in->sqmap = in->cqmap = in->buf = NULL;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Publish one SQE and submit it; returns ENTER's result. */
static int submit(struct inst *in, const struct kmsgr_sqe *sqe)
{
	uint32_t tail = in->sq->tail;
	struct kmsgr_enter e = { .to_submit = 1 };

	in->sqes[tail & in->sq->mask] = *sqe;
	__atomic_store_n(&in->sq->tail, tail + 1, __ATOMIC_RELEASE);
	return ioctl(in->fd, KMSGR_IOC_ENTER, &e);
}

/* Next CQE within @ms, copied out; 0 or -ETIMEDOUT. */
static int next_cqe(struct inst *in, struct kmsgr_cqe *out, int ms)
{
	uint64_t end = now_ms() + ms;
	struct kmsgr_enter e = {
		.min_complete = 1,
		.flags = KMSGR_ENTER_F_GETEVENTS,
		.timeout_ns = 50000000,
	};
	uint32_t head, tail;

	for (;;) {
		head = in->cq->head;
		tail = __atomic_load_n(&in->cq->tail, __ATOMIC_ACQUIRE);
		if (head != tail) {
			*out = in->cqes[head & in->cq->mask];
			__atomic_store_n(&in->cq->head, head + 1,
					 __ATOMIC_RELEASE);
			return 0;
		}
		if (now_ms() > end)
			return -ETIMEDOUT;
		ioctl(in->fd, KMSGR_IOC_ENTER, &e);
	}
}

/* Wait for an EVENT CQE (other CQEs are a failure here). */
static int wait_event(struct inst *in, struct kmsgr_cqe *c, int ms)
{
	int ret = next_cqe(in, c, ms);

	if (ret)
		return ret;
	return c->kind == KMSGR_CQE_EVENT ? 0 : -EPROTO;
}

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

static int check(const uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 9)))
			return -1;
	return 0;
}

static struct kmsgr_slice tx_slice(struct inst *in, uint32_t len,
				   uint32_t seed)
{
	struct kmsgr_slice s = { 0, 0 };

	if (!len)
		return s;
	if (in->tx_off + len > TX_SIZE)
		in->tx_off = 0;
	s.off = in->tx_off;
	s.len = len;
	fill(in->buf + s.off, len, seed);
	in->tx_off += (len + 63) & ~63U;
	return s;
}

static void prep_send(struct inst *in, struct kmsgr_sqe *sqe, uint32_t sess,
		      uint16_t type, uint64_t tid, const uint32_t len[3],
		      uint32_t seed)
{
	int i;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = KMSGR_OP_SEND;
	sqe->type = type;
	sqe->version = 3;
	sqe->compat_version = 1;
	sqe->session = sess;
	sqe->tid = tid;
	sqe->user_data = tid;
	for (i = 0; i < 3; i++)
		sqe->seg[i] = tx_slice(in, len[i], seed + i);
}

/* IPv4 address @ip and @port (host order); 0, or -1 if @ip is none. */
static int ipv4_addr(struct kmsgr_addr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->port = htons(port);
	return inet_pton(AF_INET, ip, a->addr) == 1 ? 0 : -1;
}

FIXTURE(sess) {
	const char *why;		/* set: SKIP with this reason */
	struct kt_xprt x;		/* transport and address */
	struct inst a, b;
	struct kmsgr_listen l;
	struct kmsgr_connect c;
	uint32_t sa;			/* A's accepted session */
};

KT_XPRT_VARIANTS(sess);

/* The set-up of both fixtures: two instances, sessions over @transport. */
static void sess_open(struct __test_metadata *_metadata,
		      FIXTURE_DATA(sess) *self, uint32_t transport)
{
	self->a.fd = self->b.fd = -1;
	self->why = kmsgr_missing(1);
	if (!self->why)
		self->why = kt_xprt_init(&self->x, transport);
	if (self->why)
		return;
	ASSERT_EQ(0, inst_open(&self->a));
	ASSERT_EQ(0, inst_open(&self->b));
}

static void sess_close(FIXTURE_DATA(sess) *self)
{
	inst_close(&self->a);
	inst_close(&self->b);
}

FIXTURE_SETUP(sess)
{
	sess_open(_metadata, self, variant->transport);
}

FIXTURE_TEARDOWN(sess)
{
	sess_close(self);
}

/* LISTEN on A, CONNECT from B, wait for ACCEPTED + UP and UP. */
static void sess_up(struct __test_metadata *_metadata,
		    FIXTURE_DATA(sess) *self)
{
	struct kmsgr_cqe e;

	memset(&self->l, 0, sizeof(self->l));
	ASSERT_EQ(0, ipv4_addr(&self->l.addr, self->x.ip, 0));
	self->l.transport = self->x.transport;
	self->l.flags = KMSGR_SESS_F_LOSSLESS;
	self->l.user_data = 0x1111;
	ASSERT_EQ(0, ioctl(self->a.fd, KMSGR_IOC_LISTEN, &self->l));
	ASSERT_NE(0, self->l.id);
	ASSERT_EQ(AF_INET, self->l.bound.family);
	ASSERT_NE(0, self->l.bound.port);

	memset(&self->c, 0, sizeof(self->c));
	self->c.addr = self->l.bound;
	self->c.transport = self->x.transport;
	self->c.flags = KMSGR_SESS_F_LOSSLESS;
	self->c.auth = KMSGR_AUTH_NONE;
	strcpy(self->c.name, "kmsgrtest");
	self->c.user_data = 0x2222;
	ASSERT_EQ(0, ioctl(self->b.fd, KMSGR_IOC_CONNECT, &self->c));
	ASSERT_NE(0, self->c.id);

	ASSERT_EQ(0, wait_event(&self->a, &e, 20000));
	EXPECT_EQ(KMSGR_EV_ACCEPTED, e.event);
	EXPECT_EQ(0x1111, e.user_data);
	self->sa = e.session;
	ASSERT_NE(0, self->sa);
	ASSERT_NE(self->l.id, self->sa);
	ASSERT_EQ(0, wait_event(&self->a, &e, 20000));
	EXPECT_EQ(KMSGR_EV_UP, e.event)
		TH_LOG("event %u reason %u res %d", e.event, e.reason, e.res);
	EXPECT_EQ(self->sa, e.session);
	ASSERT_EQ(0, wait_event(&self->b, &e, 20000));
	EXPECT_EQ(KMSGR_EV_UP, e.event)
		TH_LOG("event %u reason %u res %d", e.event, e.reason, e.res);
	EXPECT_EQ(self->c.id, e.session);
	EXPECT_EQ(0x2222, e.user_data);
}

/*
 * Send @n messages from @from on @sess and check them on @to (session
 * @to_sess, events carry @to_ud); then wait for the SEND CQEs.
 */
static void exchange(struct __test_metadata *_metadata, struct inst *from,
		     uint32_t sess, struct inst *to, uint32_t to_sess,
		     uint64_t to_ud, int n, uint32_t seed)
{
	static const uint32_t lens[][3] = {
		{ 100, 0, 0 }, { 8, 3000, 70000 }, { 4096, 1, 1 << 20 },
		{ 0, 0, 5 }, { 0, 0, 0 },
	};
	struct kmsgr_cqe c;
	struct kmsgr_sqe sqe;
	int i, k, sends = 0, recvs = 0;

	for (i = 0; i < n; i++) {
		prep_send(from, &sqe, sess, 100 + i, seed + i,
			  lens[i % 5], seed * 10 + i * 3);
		ASSERT_EQ(1, submit(from, &sqe));
	}
	while (recvs < n) {
		ASSERT_EQ(0, next_cqe(to, &c, 20000));
		ASSERT_EQ(KMSGR_CQE_RECV, c.kind);
		EXPECT_EQ(to_sess, c.session);
		EXPECT_EQ(to_ud, c.user_data);
		EXPECT_EQ(100 + recvs, c.type);
		EXPECT_EQ(3, c.version);
		EXPECT_EQ(seed + recvs, c.tid);
		for (k = 0; k < 3; k++) {
			EXPECT_EQ(lens[recvs % 5][k], c.seg[k].len);
			if (!c.seg[k].len)
				continue;
			EXPECT_GE(c.seg[k].off, TX_SIZE);
			EXPECT_LE(c.seg[k].off + c.seg[k].len, BUF_SIZE);
			EXPECT_EQ(0, check(to->buf + c.seg[k].off,
					   c.seg[k].len,
					   seed * 10 + recvs * 3 + k));
		}
		memset(&sqe, 0, sizeof(sqe));
		sqe.opcode = KMSGR_OP_RELEASE;
		memcpy(sqe.seg, c.seg, sizeof(sqe.seg));
		ASSERT_EQ(1, submit(to, &sqe));
		recvs++;
	}
	while (sends < n) {
		ASSERT_EQ(0, next_cqe(from, &c, 20000));
		ASSERT_EQ(KMSGR_CQE_SEND, c.kind);
		EXPECT_EQ(0, c.res);
		EXPECT_EQ(sess, c.session);
		EXPECT_EQ(seed + sends, c.user_data);	/* in order */
		sends++;
	}
}

TEST_F_TIMEOUT(sess, exchange, 120)
{
	struct kmsgr_close cl = { 0 };
	struct kmsgr_sqe sqe;
	struct kmsgr_cqe e;
	uint32_t lens[3] = { 10, 0, 0 };

	if (self->why)
		SKIP(return, "%s", self->why);
	sess_up(_metadata, self);
	exchange(_metadata, &self->b, self->c.id, &self->a, self->sa, 0x1111,
		 10, 1000);
	exchange(_metadata, &self->a, self->sa, &self->b, self->c.id, 0x2222,
		 10, 2000);

	/* isolation: B has no object with the id of A's session */
	prep_send(&self->b, &sqe, self->sa, 1, 1, lens, 1);
	if (self->sa != self->c.id) {
		ASSERT_EQ(1, submit(&self->b, &sqe));
		ASSERT_EQ(0, next_cqe(&self->b, &e, 5000));
		EXPECT_EQ(KMSGR_CQE_SEND, e.kind);
		EXPECT_EQ(-ENOENT, e.res);
		cl.id = self->sa;
		EXPECT_EQ(-1, ioctl(self->b.fd, KMSGR_IOC_CLOSE, &cl));
		EXPECT_EQ(ENOENT, errno);
	}

	/* CLOSE: CLOSED on B; the lossless server side goes DOWN */
	cl.id = self->c.id;
	ASSERT_EQ(0, ioctl(self->b.fd, KMSGR_IOC_CLOSE, &cl));
	ASSERT_EQ(0, wait_event(&self->b, &e, 5000));
	EXPECT_EQ(KMSGR_EV_CLOSED, e.event);
	EXPECT_EQ(KMSGR_REASON_NONE, e.reason);
	ASSERT_EQ(0, wait_event(&self->a, &e, 20000));
	EXPECT_EQ(KMSGR_EV_DOWN, e.event);
	EXPECT_EQ(self->sa, e.session);
	EXPECT_EQ(KMSGR_REASON_EOF, e.reason);
	EXPECT_EQ(-1, ioctl(self->b.fd, KMSGR_IOC_CLOSE, &cl));
	EXPECT_EQ(ENOENT, errno);
	/* SEND on the closed id */
	prep_send(&self->b, &sqe, self->c.id, 1, 1, lens, 1);
	ASSERT_EQ(1, submit(&self->b, &sqe));
	ASSERT_EQ(0, next_cqe(&self->b, &e, 5000));
	EXPECT_EQ(-ENOENT, e.res);
	/* close the waiting server session and the listener */
	cl.id = self->sa;
	ASSERT_EQ(0, ioctl(self->a.fd, KMSGR_IOC_CLOSE, &cl));
	ASSERT_EQ(0, wait_event(&self->a, &e, 5000));
	EXPECT_EQ(KMSGR_EV_CLOSED, e.event);
	cl.id = self->l.id;
	ASSERT_EQ(0, ioctl(self->a.fd, KMSGR_IOC_CLOSE, &cl));
}

/* Collect events of @in until @n arrived; returns a bitmask of kinds seen. */
static void expect_events(struct __test_metadata *_metadata, struct inst *in,
			  uint32_t sess, const uint8_t *want, int n)
{
	struct kmsgr_cqe e;
	int i;

	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, wait_event(in, &e, 30000));
		EXPECT_EQ(want[i], e.event)
			TH_LOG("event %u reason %u res %d", e.event, e.reason,
			       e.res);
		EXPECT_EQ(sess, e.session);
	}
}

static void reconnect(struct __test_metadata *_metadata,
		      FIXTURE_DATA(sess) *self)
{
	static const uint8_t down_up[] = { KMSGR_EV_DOWN, KMSGR_EV_UP };
	char cmd[128];
	int round;

	if (self->why)
		SKIP(return, "%s", self->why);
	sess_up(_metadata, self);
	exchange(_metadata, &self->b, self->c.id, &self->a, self->sa, 0x1111,
		 5, 3000);
	for (round = 0; round < 2; round++) {
		/* kill the TCP connection; both ends see DOWN then UP */
		snprintf(cmd, sizeof(cmd),
			 "ss -K 'sport = :%u' >/dev/null 2>&1",
			 ntohs(self->l.bound.port));
		if (system(cmd))
			SKIP(return, "ss -K failed (no INET_DIAG_DESTROY?)");
		expect_events(_metadata, &self->b, self->c.id, down_up, 2);
		expect_events(_metadata, &self->a, self->sa, down_up, 2);
		exchange(_metadata, &self->b, self->c.id, &self->a, self->sa,
			 0x1111, 10, 4000 + round * 100);
		exchange(_metadata, &self->a, self->sa, &self->b, self->c.id,
			 0x2222, 10, 5000 + round * 100);
	}
}

/* The TCP-only tests: the fixture sess over TCP, no variants. */
FIXTURE(sess_tcp) {
	FIXTURE_DATA(sess) s;
};

FIXTURE_SETUP(sess_tcp)
{
	sess_open(_metadata, &self->s, KMSGR_XPRT_TCP);
}

FIXTURE_TEARDOWN(sess_tcp)
{
	sess_close(&self->s);
}

TEST_F_TIMEOUT(sess_tcp, reconnect, 120)
{
	reconnect(_metadata, &self->s);
}

TEST_F_TIMEOUT(sess, close_in_flight, 120)
{
	uint32_t lens[3] = { 512, 4096, 256 << 10 };
	struct kmsgr_sqe sqe;
	int i;

	if (self->why)
		SKIP(return, "%s", self->why);
	sess_up(_metadata, self);
	for (i = 0; i < 64; i++) {
		prep_send(&self->b, &sqe, self->c.id, 7, i, lens, i);
		ASSERT_EQ(1, submit(&self->b, &sqe));
		prep_send(&self->a, &sqe, self->sa, 8, i, lens, i);
		ASSERT_EQ(1, submit(&self->a, &sqe));
	}
	inst_close(&self->a);
	inst_close(&self->b);
	for (i = 0; i < 100 && kmsgr_instances() > 0; i++)
		usleep(50000);
	EXPECT_EQ(0, kmsgr_instances());
}

/*
 * CONNECT (cephx, @c set up otherwise) naming a logon key of another
 * service, which the caller holds: EINVAL, its secret never used; one of
 * kmsgr's own that is not there: ENOKEY.  @c's key_desc is 0 after.
 */
static void logon_key_refusals(struct __test_metadata *_metadata, int fd,
			       struct kmsgr_connect *c)
{
	static const char other[] = "cifs:kmsgr-selftest";
	static const char missing[] = "kmsgr:client.kmsgr-selftest-none";
	uint8_t secret[16] = "another-service!";
	long serial;

	/* KEY_SPEC_PROCESS_KEYRING: gone with this process */
	serial = syscall(__NR_add_key, "logon", other, secret, sizeof(secret),
			 -2);
	ASSERT_LT(0, serial) TH_LOG("add_key logon %s: %s", other,
				    strerror(errno));
	c->key_desc = (uintptr_t)other;
	EXPECT_EQ(-1, ioctl(fd, KMSGR_IOC_CONNECT, c));
	EXPECT_EQ(EINVAL, errno);
	c->key_desc = (uintptr_t)missing;
	EXPECT_EQ(-1, ioctl(fd, KMSGR_IOC_CONNECT, c));
	EXPECT_EQ(ENOKEY, errno);
	c->key_desc = 0;
	syscall(__NR_keyctl, 3 /* KEYCTL_REVOKE */, serial);
}

TEST_F_TIMEOUT(sess, bad_connect, 60)
{
	struct kmsgr_connect c;
	struct kmsgr_listen l;
	struct kmsgr_cqe e;
	uint8_t key[16] = { 1 };

	if (self->why)
		SKIP(return, "%s", self->why);
	memset(&c, 0, sizeof(c));
	/* nothing listens on port 1 */
	ASSERT_EQ(0, ipv4_addr(&c.addr, self->x.ip, 1));
	c.transport = self->x.transport;
	c.auth = KMSGR_AUTH_NONE;
	strcpy(c.name, "x");

	c.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->b.fd, KMSGR_IOC_CONNECT, &c));
	EXPECT_EQ(EINVAL, errno);
	c.reserved[1] = 0;
	c.flags = 1U << 7;
	EXPECT_EQ(-1, ioctl(self->b.fd, KMSGR_IOC_CONNECT, &c));
	EXPECT_EQ(EINVAL, errno);
	c.flags = KMSGR_SESS_F_SECURE;	/* secure needs cephx */
	EXPECT_EQ(-1, ioctl(self->b.fd, KMSGR_IOC_CONNECT, &c));
	EXPECT_EQ(EINVAL, errno);
	c.flags = 0;
	c.auth = KMSGR_AUTH_CEPHX;	/* cephx needs a 16-byte key */
	c.key = (uintptr_t)key;
	c.key_len = 8;
	EXPECT_EQ(-1, ioctl(self->b.fd, KMSGR_IOC_CONNECT, &c));
	EXPECT_EQ(EINVAL, errno);
	c.key_len = 16;
	c.key = 8;			/* bad pointer */
	EXPECT_EQ(-1, ioctl(self->b.fd, KMSGR_IOC_CONNECT, &c));
	EXPECT_EQ(EFAULT, errno);
	c.key = 0;
	c.key_len = 0;
	logon_key_refusals(_metadata, self->b.fd, &c);
	c.auth = KMSGR_AUTH_NONE;
	c.transport = 99;
	EXPECT_EQ(-1, ioctl(self->b.fd, KMSGR_IOC_CONNECT, &c));
	c.transport = self->x.transport;
	c.addr.family = 12345;
	EXPECT_EQ(-1, ioctl(self->b.fd, KMSGR_IOC_CONNECT, &c));
	ASSERT_EQ(0, ipv4_addr(&c.addr, self->x.ip, 1));
	memset(c.name, 'n', sizeof(c.name));	/* no NUL */
	EXPECT_EQ(-1, ioctl(self->b.fd, KMSGR_IOC_CONNECT, &c));
	EXPECT_EQ(EINVAL, errno);
	strcpy(c.name, "x");

	memset(&l, 0, sizeof(l));
	ASSERT_EQ(0, ipv4_addr(&l.addr, self->x.ip, 0));
	l.transport = self->x.transport;
	l.flags = KMSGR_SESS_F_SECURE;
	EXPECT_EQ(-1, ioctl(self->a.fd, KMSGR_IOC_LISTEN, &l));
	l.flags = 0;
	l.addr.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->a.fd, KMSGR_IOC_LISTEN, &l));
	EXPECT_EQ(EINVAL, errno);

	/* refused: a lossy session is CLOSED with reason CONNECT */
	ASSERT_EQ(0, ioctl(self->b.fd, KMSGR_IOC_CONNECT, &c));
	ASSERT_EQ(0, wait_event(&self->b, &e, 20000));
	EXPECT_EQ(KMSGR_EV_CLOSED, e.event);
	EXPECT_EQ(KMSGR_REASON_CONNECT, e.reason);
	EXPECT_EQ(-ECONNREFUSED, e.res);
	EXPECT_EQ(c.id, e.session);
}

TEST_HARNESS_MAIN
