// SPDX-License-Identifier: GPL-2.0
/*
 * test_lib - host-only tests of libkmsgr's pure helpers: address parsing
 * and formatting, Ceph key and keyring decoding, reason and event names;
 * and of its ring logic (completion helpers, when kmsgr_submit() enters
 * the kernel, busy-poll, the exported symbols) against a fake device; the
 * layout of the caller-allocated netlink structs.
 * No device needed.  Output is TAP; exit status 0 when every test passed.
 *
 *   make -C lib check
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "libkmsgr.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int tests, failures;

static void ok(int cond, const char *fmt, const char *arg)
{
	tests++;
	if (!cond)
		failures++;
	printf("%s %d - ", cond ? "ok" : "not ok", tests);
	printf(fmt, arg);
	putchar('\n');
}

/* Parse @in, expect @ret, and (on success) that it formats as @out. */
static void addr_case(const char *in, int ret, const char *out)
{
	struct kmsgr_addr a;
	char buf[80];
	int r;

	r = kmsgr_addr_parse(in, &a);
	if (ret || r) {
		ok(r == ret, "addr_parse \"%s\" fails with EINVAL", in);
		return;
	}
	kmsgr_addr_format(&a, buf, sizeof(buf));
	ok(!strcmp(buf, out), "addr round trip \"%s\"", in);
	if (strcmp(buf, out))
		printf("# got \"%s\" want \"%s\"\n", buf, out);
}

static void test_addr(void)
{
	struct kmsgr_addr a;

	addr_case("127.0.0.1:3300", 0, "127.0.0.1:3300");
	addr_case("v2:10.99.0.1:6800/1234", 0, "10.99.0.1:6800/1234");
	addr_case("0.0.0.0:0", 0, "0.0.0.0:0");
	addr_case("[::1]:3300", 0, "[::1]:3300");
	addr_case("[fe80::1%7]:1", 0, "[fe80::1%7]:1");
	addr_case("[2001:db8::2]:65535", 0, "[2001:db8::2]:65535");
	addr_case("127.0.0.1:65535", 0, "127.0.0.1:65535");
	addr_case("[::1]:0", 0, "[::1]:0");
	addr_case("127.0.0.1:0080", 0, "127.0.0.1:80");
	addr_case("127.0.0.1:1/4294967295", 0, "127.0.0.1:1/4294967295");
	addr_case("127.0.0.1", -EINVAL, NULL);
	/* ports: digits only, at most 65535, no wrap-around to a valid one */
	addr_case("127.0.0.1:", -EINVAL, NULL);
	addr_case("127.0.0.1:65536", -EINVAL, NULL);
	addr_case("[::1]:65536", -EINVAL, NULL);
	addr_case("127.0.0.1:4294967376", -EINVAL, NULL);	/* 2^32 + 80 */
	addr_case("127.0.0.1:18446744073709551617", -EINVAL, NULL);
	addr_case("127.0.0.1:18446744073709551696", -EINVAL, NULL);
	addr_case("127.0.0.1:99999999999999999999", -EINVAL, NULL);
	addr_case("[::1]:18446744073709551617", -EINVAL, NULL);
	addr_case("127.0.0.1:-1", -EINVAL, NULL);
	addr_case("127.0.0.1:+80", -EINVAL, NULL);
	addr_case("127.0.0.1: 80", -EINVAL, NULL);
	addr_case("127.0.0.1:80 ", -EINVAL, NULL);
	addr_case("127.0.0.1:0x50", -EINVAL, NULL);
	/* nonces: at most 2^32 - 1, no wrap-around either */
	addr_case("127.0.0.1:1/4294967296", -EINVAL, NULL);
	addr_case("127.0.0.1:1/18446744073709551617", -EINVAL, NULL);
	addr_case("127.0.0.1:1/-1", -EINVAL, NULL);
	addr_case("127.0.0.1:1/", -EINVAL, NULL);
	addr_case("127.0.0.1:33a", -EINVAL, NULL);
	addr_case("1.2.3:4", -EINVAL, NULL);
	addr_case("::1:3300", -EINVAL, NULL);
	addr_case("[::1]3300", -EINVAL, NULL);
	addr_case("[::1:3300", -EINVAL, NULL);
	addr_case("[]:1", -EINVAL, NULL);
	addr_case(":1", -EINVAL, NULL);
	addr_case("[fe80::1%nosuchif0]:1", -EINVAL, NULL);
	addr_case("1.2.3.4:1/x", -EINVAL, NULL);
	addr_case("", -EINVAL, NULL);

	kmsgr_addr_parse("10.0.0.2:3300", &a);
	ok(a.family == AF_INET && ntohs(a.port) == 3300 && a.addr[0] == 10 &&
	   a.addr[3] == 2 && !a.addr[4] && !a.reserved && !a.nonce,
	   "addr fields of %s", "10.0.0.2:3300");
}

#define KEY_OK		"AQAAAABlAAAAABAAAAECAwQFBgcICQoLDA0ODw=="

static void test_key(void)
{
	static const struct {
		const char *b64, *what;
	} bad[] = {
		{ "AgAAAABlAAAAABAAAAECAwQFBgcICQoLDA0ODw==", "type 2" },
		{ "AQAAAABlAAAAAA8AAAECAwQFBgcICQoLDA0ODw==", "length 15" },
		{ "AQAAAABlAAAAABAAAAECAwQFBgcICQoLDA0ODw=", "bad padding" },
		{ "AQAAAABlAAAAABAAAAECAwQFBgcICQoLDA0ODx==", "non-canonical" },
		{ "AQAAAABlAAAAABAAAAECAwQFBgcICQoLDA0O", "27 bytes" },
		{ "AQAAAABlAAAAABAAAAECAwQFBgcICQoLDA0ODwAA", "30 bytes" },
		{ "AQAAAABlAAAAABAAAAECAwQFBgcI*QoLDA0ODw==", "bad char" },
		{ "AQAAAABlAAAAABAAAAECAwQF=gcICQoLDA0ODw==", "inner =" },
		{ "", "empty" },
	};
	__u8 key[16];
	size_t i;
	int r, good;

	r = kmsgr_key_decode(KEY_OK, key);
	good = !r;
	for (i = 0; i < 16; i++)
		good &= key[i] == i;
	ok(good, "key_decode %s", "valid CryptoKey");
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		ok(kmsgr_key_decode(bad[i].b64, key) == -EINVAL,
		   "key_decode rejects %s", bad[i].what);
}

static char tmp_path[64];

static const char *write_file(const char *text)
{
	char *path = tmp_path;
	int fd;

	snprintf(tmp_path, sizeof(tmp_path), "/tmp/kmsgr-keyring-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		perror("test keyring");
		exit(1);
	}
	close(fd);
	return path;
}

static void keyring_case(const char *text, const char *name, int ret,
			 const char *what)
{
	const char *path = write_file(text);
	__u8 key[16];
	int r;

	memset(key, 0, sizeof(key));	/* not the last case's key */
	r = kmsgr_keyring_load(path, name, key);
	ok(r == ret && (ret || key[15] == 15), "keyring: %s", what);
	if (r != ret)
		printf("# got %d want %d\n", r, ret);
	unlink(path);
}

static void test_keyring(void)
{
	__u8 key[16];

	keyring_case("[mon.]\n\tkey = AQBogwxrJ94VLhAAIp60ZXwfaU24IqyrQEzSkw==\n"
		     "\tcaps mon = \"allow *\"\n"
		     "[client.admin]\n\tkey = " KEY_OK "\n"
		     "\tcaps mds = \"allow *\"\n",
		     "client.admin", 0, "client.admin after mon.");
	keyring_case("# comment\n; other\n[ client.admin ]\nkey=" KEY_OK "\t\n",
		     "client.admin", 0, "spaces and comments");
	keyring_case("[client.admin]\nkey = " KEY_OK "\n", "client.foo",
		     -ENOENT, "missing entity");
	keyring_case("[client.admin]\ncaps mon = \"allow *\"\n",
		     "client.admin", -ENOKEY, "section without key");
	keyring_case("[client.admin]\nkey = AQAAAABl\n", "client.admin",
		     -EINVAL, "truncated key");
	keyring_case("[client.admin\nkey = " KEY_OK "\n", "client.admin",
		     -EINVAL, "unterminated section");
	keyring_case("[client.admin]\njunk\n", "client.admin", -EINVAL,
		     "line without =");
	keyring_case("", "client.admin", -ENOENT, "empty file");
	ok(kmsgr_keyring_load("/nonexistent/keyring", "client.admin", key) ==
	   -ENOENT, "keyring: %s", "missing file");
}

static void test_names(void)
{
	ok(!strcmp(kmsgr_reason_str(KMSGR_REASON_EOF),
		   "connection closed by the peer"), "reason %s", "EOF");
	ok(!strcmp(kmsgr_reason_str(9999), "unknown reason"), "reason %s",
	   "out of range");
	ok(!strcmp(kmsgr_event_str(KMSGR_EV_UP), "up"), "event %s", "up");
	ok(!strcmp(kmsgr_event_str(0), "unknown"), "event %s", "0");
	ok(!strcmp(kmsgr_feature_name(2), "tcp"), "feature %s", "tcp");
	ok(!!strstr(kmsgr_strerror(-ETIME), "completion"),
	   "strerror %s", "ETIME");
	/* a session's protocol error is not called an ABI mismatch alone */
	ok(!strncmp(kmsgr_strerror(-EPROTO), "Protocol error", 14) &&
	   !!strstr(kmsgr_strerror(-EPROTO), "ABI"), "strerror %s", "EPROTO");
}

/* which DOWN events end the wait for a session (kmsgrctl, the fio engine) */
static void test_down_is_final(void)
{
	struct kmsgr_cqe c = {
		.kind = KMSGR_CQE_EVENT, .event = KMSGR_EV_DOWN,
		.reason = KMSGR_REASON_CONNECT, .res = -ECONNREFUSED,
	};

	ok(kmsgr_down_is_final(&c, 0, 1) == 1, "down: %s", "lossy, refused");
	ok(kmsgr_down_is_final(&c, 1, 0) == 1, "down: %s",
	   "lossless, first connection refused");
	ok(kmsgr_down_is_final(&c, 1, 1) == 0, "down: %s",
	   "lossless, refused after it was up: redialled");
	c.res = -ETIMEDOUT;
	ok(kmsgr_down_is_final(&c, 1, 0) == 0, "down: %s",
	   "lossless, first connection timed out: redialled");
	c.res = -ECONNREFUSED;
	c.reason = KMSGR_REASON_EOF;
	ok(kmsgr_down_is_final(&c, 1, 0) == 0, "down: %s",
	   "lossless, ECONNREFUSED but not at CONNECT: redialled");
	c.reason = KMSGR_REASON_EOF;
	c.res = 0;
	ok(kmsgr_down_is_final(&c, 0, 0) == 1, "down: %s", "lossy, EOF");
}

/* ---- a fake device for the ring logic ----------------------------------- */

/*
 * test_lib links libkmsgr.a, so the ioctl() and mmap() below stand in for
 * the C library's in kmsgr.o (the C library's own calls do not come here).
 * kmsgr_open("/dev/null") then meets a "module" that answers INFO and
 * SETUP, maps its rings in anonymous memory (with the counters on lines
 * of their own, KMSGR_SETUP_F_RING_LINES) and counts every ENTER.  Its
 * ENTER consumes SQEs (a NOP completes at once, as in the module), clears
 * KMSGR_RING_F_CQ_PAUSED, and fails a wait with ETIME instead of sleeping
 * when it has consumed nothing and too few CQEs are ready.
 */
#define FAKE_HEAD_OFF		64
#define FAKE_TAIL_OFF		128
#define FAKE_ENTRIES_OFF	192
/* where the CQ counters start: four entries before they wrap around */
#define FAKE_CQ_START		0xfffffffcU

static struct {
	int fd;				/* the instance's descriptor */
	struct kmsgr_setup setup;	/* what SETUP granted */
	struct kmsgr_ring *sq, *cq;
	__u32 *sq_head, *sq_tail, *cq_head, *cq_tail;
	struct kmsgr_sqe *sqes;
	struct kmsgr_cqe *cqes;
	unsigned int enters;		/* ENTER calls */
	unsigned int waits;		/* ... with KMSGR_ENTER_F_GETEVENTS */
	struct kmsgr_enter last;	/* the last ENTER's argument */
	int enter_errno;		/* ENTER fails so, consuming nothing */
} fake = { .fd = -1 };

/* extra KMSGR_FEAT_* bits the fake's INFO reports (outlives fake_open()) */
static __u64 fake_features;

static __u32 pow2(__u32 n)
{
	__u32 p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* Post a CQE as the kernel does: entry first, then the tail (release). */
static int fake_post(__u8 kind, __u64 user_data)
{
	__u32 tail = *fake.cq_tail;
	struct kmsgr_cqe *c;

	if (tail - __atomic_load_n(fake.cq_head, __ATOMIC_ACQUIRE) >=
	    fake.cq->entries)
		return -ENOSPC;
	c = &fake.cqes[tail & fake.cq->mask];
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->user_data = user_data;
	__atomic_store_n(fake.cq_tail, tail + 1, __ATOMIC_RELEASE);
	return 0;
}

static int fake_enter(struct kmsgr_enter *e)
{
	__u32 head = *fake.sq_head, n = 0, ready, want;
	struct kmsgr_sqe *sqe;

	fake.enters++;
	if (e->flags & KMSGR_ENTER_F_GETEVENTS)
		fake.waits++;
	fake.last = *e;
	if (fake.enter_errno) {
		errno = fake.enter_errno;
		return -1;
	}
	while (n < e->to_submit &&
	       head != __atomic_load_n(fake.sq_tail, __ATOMIC_ACQUIRE)) {
		sqe = &fake.sqes[head & fake.sq->mask];
		if (sqe->opcode == KMSGR_OP_NOP &&
		    fake_post(KMSGR_CQE_OP, sqe->user_data))
			break;
		head++;
		n++;
	}
	__atomic_store_n(fake.sq_head, head, __ATOMIC_RELEASE);
	fake.cq->flags = 0;		/* room or not: resumed */
	e->submitted = n;

	ready = *fake.cq_tail - *fake.cq_head;
	want = e->min_complete < fake.cq->entries ? e->min_complete :
	       fake.cq->entries;
	if (e->flags & KMSGR_ENTER_F_GETEVENTS && ready < want && !n) {
		errno = ETIME;
		return -1;
	}
	return (int)n;
}

int ioctl(int fd, unsigned long req, ...)
{
	struct kmsgr_setup *su;
	struct kmsgr_info *info;
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (_IOC_TYPE(req) != KMSGR_IOC_MAGIC)
		return (int)syscall(SYS_ioctl, fd, req, arg);

	switch (req) {
	case KMSGR_IOC_INFO:
		info = arg;
		info->abi_version = KMSGR_ABI_VERSION;
		info->features = KMSGR_FEAT_INFO | KMSGR_FEAT_RINGS |
				 KMSGR_FEAT_RING_LINES | fake_features;
		fake.fd = fd;
		return 0;
	case KMSGR_IOC_SETUP:
		su = arg;
		if (fd != fake.fd || su->flags != KMSGR_SETUP_F_RING_LINES)
			break;
		su->sq_entries = pow2(su->sq_entries);
		su->cq_entries = su->cq_entries ? pow2(su->cq_entries) :
				 2 * su->sq_entries;
		su->sq_ring_size = FAKE_ENTRIES_OFF +
				   su->sq_entries * sizeof(struct kmsgr_sqe);
		su->cq_ring_size = FAKE_ENTRIES_OFF +
				   su->cq_entries * sizeof(struct kmsgr_cqe);
		fake.setup = *su;
		return 0;
	case KMSGR_IOC_ENTER:
		if (fd == fake.fd && fake.cq)
			return fake_enter(arg);
		break;
	}
	errno = EINVAL;
	return -1;
}

/* A ring head of @entries at @r, counters at @start. */
static void fake_ring(struct kmsgr_ring *r, __u32 entries, __u32 start)
{
	r->entries = entries;
	r->mask = entries - 1;
	r->entries_off = FAKE_ENTRIES_OFF;
	r->head_off = FAKE_HEAD_OFF;
	r->tail_off = FAKE_TAIL_OFF;
	*(__u32 *)((char *)r + FAKE_HEAD_OFF) = start;
	*(__u32 *)((char *)r + FAKE_TAIL_OFF) = start;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	long ret;
	char *p;

	if (fd != fake.fd)
		return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd,
				       off);
	ret = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ret == -1)
		return MAP_FAILED;
	p = (char *)ret;
	if (off == (off_t)KMSGR_OFF_SQ_RING) {
		fake.sq = (struct kmsgr_ring *)p;
		fake_ring(fake.sq, fake.setup.sq_entries, 0);
		fake.sq_head = (__u32 *)(p + FAKE_HEAD_OFF);
		fake.sq_tail = (__u32 *)(p + FAKE_TAIL_OFF);
		fake.sqes = (struct kmsgr_sqe *)(p + FAKE_ENTRIES_OFF);
	} else if (off == (off_t)KMSGR_OFF_CQ_RING) {
		fake.cq = (struct kmsgr_ring *)p;
		fake_ring(fake.cq, fake.setup.cq_entries, FAKE_CQ_START);
		fake.cq_head = (__u32 *)(p + FAKE_HEAD_OFF);
		fake.cq_tail = (__u32 *)(p + FAKE_TAIL_OFF);
		fake.cqes = (struct kmsgr_cqe *)(p + FAKE_ENTRIES_OFF);
	}
	return p;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* Reap every CQE (no ENTER expected). */
static void fake_drain(struct kmsgr *k)
{
	kmsgr_cq_advance(k, kmsgr_cq_ready(k));
}

/* Open the fake instance; SETUP it unless @setup is 0. */
static struct kmsgr *fake_open(int setup)
{
	struct kmsgr_setup su = { .sq_entries = 8, .cq_entries = 16,
				  .buf_size = 1 << 20,
				  .rx_pool_size = 512 << 10 };
	struct kmsgr *k;

	memset(&fake, 0, sizeof(fake));
	fake.fd = -1;
	if (kmsgr_open("/dev/null", &k)) {
		printf("Bail out! kmsgr_open of the fake device failed\n");
		exit(1);
	}
	if (setup && kmsgr_setup(k, &su)) {
		printf("Bail out! kmsgr_setup of the fake device failed\n");
		exit(1);
	}
	return k;
}

static void test_busy_poll_args(void)
{
	struct kmsgr *k = fake_open(0);

	ok(kmsgr_set_busy_poll(NULL, 10) == -EINVAL, "busy_poll: %s",
	   "NULL handle refused");
	ok(kmsgr_set_busy_poll(k, KMSGR_BUSY_POLL_MAX_US + 1) == -EINVAL,
	   "busy_poll: %s", "10001 us refused");
	ok(kmsgr_set_busy_poll(k, UINT_MAX) == -EINVAL, "busy_poll: %s",
	   "UINT_MAX refused");
	ok(!kmsgr_set_busy_poll(k, KMSGR_BUSY_POLL_MAX_US), "busy_poll: %s",
	   "10000 us taken");
	ok(!kmsgr_set_busy_poll(k, 0), "busy_poll: %s", "0 (off) taken");
	kmsgr_close(k);
}

static void test_cq_before_setup(void)
{
	struct kmsgr *k = fake_open(0);
	struct kmsgr_cqe *c, *batch[4];
	unsigned int n = 0;
	__u32 head;

	kmsgr_for_each_cqe(k, head, c)
		n++;
	ok(!kmsgr_cq_ready(k) && !kmsgr_peek_cqe(k) && !n &&
	   !kmsgr_peek_batch_cqe(k, batch, 4) && !kmsgr_cq(k)->entries,
	   "cq helpers: %s", "empty ring before setup");
	ok(kmsgr_submit(k, 1, 0) == -EINVAL && kmsgr_cq_resume(k) == -EINVAL &&
	   kmsgr_wait_cqe(k, &c, 1) == -EINVAL && !fake.enters,
	   "cq helpers: %s", "-EINVAL before setup, no ENTER");
	kmsgr_close(k);
}

static void test_cq_helpers(void)
{
	struct kmsgr *k = fake_open(1);
	struct kmsgr_cq *cq = kmsgr_cq(k);
	struct kmsgr_cqe *c, *batch[8];
	unsigned int i, n, good;
	__u32 head;

	ok(cq->entries == 16 && cq->mask == 15 &&
	   (char *)cq->khead == (char *)fake.cq + FAKE_HEAD_OFF &&
	   (char *)cq->ktail == (char *)fake.cq + FAKE_TAIL_OFF &&
	   cq->kflags == &fake.cq->flags &&
	   (char *)cq->cqes == (char *)fake.cq + FAKE_ENTRIES_OFF,
	   "cq helpers: %s", "struct kmsgr_cq follows head_off/tail_off");

	/* five entries whose counters wrap around 2^32 */
	for (i = 1; i <= 5; i++)
		fake_post(KMSGR_CQE_OP, i);
	ok(kmsgr_cq_ready(k) == 5, "cq helpers: %s", "ready 5");

	n = kmsgr_peek_batch_cqe(k, batch, 3);
	good = n == 3;
	for (i = 0; i < n; i++)
		good &= batch[i]->user_data == i + 1;
	ok(good, "cq helpers: %s", "peek_batch 3 of 5, in order");

	n = 0;
	good = 1;
	kmsgr_for_each_cqe(k, head, c) {
		good &= c->user_data == n + 1 &&
			c == &cq->cqes[head & cq->mask];
		n++;
	}
	ok(good && n == 5 && head == *fake.cq_tail && kmsgr_cq_ready(k) == 5,
	   "cq helpers: %s", "for_each visits 5 in order, consumes none");

	kmsgr_cq_advance(k, 2);
	c = kmsgr_peek_cqe(k);
	ok(kmsgr_cq_ready(k) == 3 && c && c->user_data == 3,
	   "cq helpers: %s", "advance 2, peek the third");
	kmsgr_cqe_seen(k);
	n = kmsgr_peek_batch_cqe(k, batch, 8);
	ok(n == 2 && batch[0]->user_data == 4 && batch[1]->user_data == 5,
	   "cq helpers: %s", "seen, then peek_batch the last 2");
	kmsgr_cq_advance(k, n);
	ok(!kmsgr_cq_ready(k) && !kmsgr_peek_cqe(k) &&
	   !kmsgr_peek_batch_cqe(k, batch, 8) &&
	   *fake.cq_head == FAKE_CQ_START + 5 && !fake.enters,
	   "cq helpers: %s", "empty again, head past the wrap, no ENTER");

	/* advanced too far (an application bug): never past the tail */
	fake_post(KMSGR_CQE_OP, 6);
	kmsgr_cq_advance(k, 3);
	kmsgr_cqe_seen(k);
	ok(*fake.cq_head == *fake.cq_tail && !kmsgr_cq_ready(k) &&
	   !kmsgr_peek_cqe(k),
	   "cq helpers: %s", "advance beyond the ready ones stops at the tail");

	/* a head stored past the tail (a stray write): no entry is ready */
	fake_post(KMSGR_CQE_OP, 7);
	*fake.cq_head = *fake.cq_tail + 3;
	n = 0;
	kmsgr_for_each_cqe(k, head, c)
		if (++n > cq->entries)
			break;
	ok(!kmsgr_cq_ready(k) && !kmsgr_peek_cqe(k) && !n &&
	   !kmsgr_peek_batch_cqe(k, batch, 8),
	   "cq helpers: %s", "head past the tail: nothing to peek or visit");
	kmsgr_close(k);
}

/* The KMSGR_RING_F_CQ_PAUSED rule: an ENTER exactly when the flag is set. */
static void test_cq_paused(void)
{
	struct kmsgr *k = fake_open(1);
	struct kmsgr_cqe *c, *batch[4];
	struct kmsgr_sqe *sqe;
	unsigned int n = 0;
	__u32 head;

	ok(!kmsgr_peek_cqe(k) && !kmsgr_submit(k, 0, 0) && !fake.enters,
	   "paused: %s", "not paused: empty peek and submit make no ENTER");
	fake.cq->flags = KMSGR_RING_F_CQ_PAUSED;
	ok(!kmsgr_peek_cqe(k) && fake.enters == 1 &&
	   !fake.last.to_submit && !fake.last.flags && !fake.cq->flags,
	   "paused: %s", "empty peek_cqe enters (to_submit 0, no wait)");
	fake.cq->flags = KMSGR_RING_F_CQ_PAUSED;
	ok(!kmsgr_peek_batch_cqe(k, batch, 4) && fake.enters == 2,
	   "paused: %s", "empty peek_batch_cqe enters");
	fake.cq->flags = KMSGR_RING_F_CQ_PAUSED;
	ok(!kmsgr_submit(k, 0, 0) && fake.enters == 3, "paused: %s",
	   "submit with nothing pending enters");
	fake.cq->flags = KMSGR_RING_F_CQ_PAUSED;
	kmsgr_for_each_cqe(k, head, c)
		n++;
	ok(!n && fake.enters == 3, "paused: %s",
	   "for_each alone does not enter");
	kmsgr_cq_check_paused(k);
	ok(fake.enters == 4 && !fake.cq->flags, "paused: %s",
	   "check_paused enters");
	kmsgr_cq_check_paused(k);
	ok(fake.enters == 4, "paused: %s", "check_paused, not paused: none");

	/* an SQE taken but not yet filled stays the application's */
	sqe = kmsgr_get_sqe(k);
	fake.cq->flags = KMSGR_RING_F_CQ_PAUSED;
	ok(sqe && !kmsgr_peek_cqe(k) && fake.enters == 5 &&
	   *fake.sq_head == *fake.sq_tail && kmsgr_sq_pending(k) == 1,
	   "paused: %s", "a resume publishes no SQE the caller is filling");
	kmsgr_prep_nop(sqe, 0x5e);
	ok(kmsgr_submit(k, 0, 0) == 1 && (c = kmsgr_peek_cqe(k)) &&
	   c->user_data == 0x5e, "paused: %s",
	   "the SQE goes when submitted, as filled");
	kmsgr_close(k);
}

/* kmsgr_submit() and kmsgr_wait_cqe() enter only when they must. */
static void test_submit_no_syscall(void)
{
	struct kmsgr *k = fake_open(1);
	struct kmsgr_cqe *c;
	unsigned int i;

	for (i = 1; i <= 3; i++)
		fake_post(KMSGR_CQE_OP, i);
	ok(!kmsgr_submit(k, 3, 0) && !kmsgr_submit(k, 1, 1000) &&
	   !fake.enters, "no syscall: %s", "submit(3) with 3 ready");
	ok(!kmsgr_wait_cqe(k, &c, 0) && c->user_data == 1 && !fake.enters,
	   "no syscall: %s", "wait_cqe with 3 ready");
	ok(kmsgr_submit(k, 4, 1000) == -ETIME && fake.enters == 1 &&
	   fake.waits == 1 && fake.last.min_complete == 4,
	   "no syscall: %s", "submit(4) with 3 ready waits in ENTER");

	/* the kernel waits for at most a full CQ: so does the check */
	for (i = 4; i <= 16; i++)
		fake_post(KMSGR_CQE_OP, i);
	ok(!kmsgr_submit(k, 100, 0) && fake.enters == 1, "no syscall: %s",
	   "submit(100) with the 16-entry CQ full");
	fake_drain(k);

	/* something to submit: always an ENTER */
	fake_post(KMSGR_CQE_OP, 1);
	kmsgr_prep_nop(kmsgr_get_sqe(k), 42);
	ok(kmsgr_submit(k, 1, 0) == 1 && fake.enters == 2 &&
	   fake.last.to_submit == 1 && !kmsgr_sq_pending(k),
	   "no syscall: %s", "submit(1) with an SQE pending enters");
	ok(kmsgr_cq_ready(k) == 2, "no syscall: %s", "the NOP completed");
	fake_drain(k);
	kmsgr_close(k);
}

static void test_busy_poll(void)
{
	struct kmsgr *k = fake_open(1);
	struct kmsgr_cqe *c;
	__u64 t0, dt;
	int ret;

	/* off: one ENTER that submits and waits */
	kmsgr_prep_nop(kmsgr_get_sqe(k), 1);
	ok(kmsgr_submit(k, 1, 0) == 1 && fake.enters == 1 && fake.waits == 1,
	   "busy_poll: %s", "off: submit(1) is one waiting ENTER");
	fake_drain(k);

	/* on: submit without waiting, the spin sees the NOP's CQE */
	kmsgr_set_busy_poll(k, 1000);
	kmsgr_prep_nop(kmsgr_get_sqe(k), 2);
	ok(kmsgr_submit(k, 1, 0) == 1 && fake.enters == 2 && fake.waits == 1 &&
	   !(fake.last.flags & KMSGR_ENTER_F_GETEVENTS) && kmsgr_cq_ready(k),
	   "busy_poll: %s", "on: submit(1) submits, spins, does not sleep");
	fake_drain(k);
	kmsgr_prep_nop(kmsgr_get_sqe(k), 3);
	ret = kmsgr_wait_cqe(k, &c, 0);
	ok(!ret && c->user_data == 3 && fake.enters == 3 && fake.waits == 1,
	   "busy_poll: %s", "on: wait_cqe gets the NOP without sleeping");
	fake_drain(k);

	/* nothing comes: spin for the busy-poll time, then wait in ENTER */
	kmsgr_set_busy_poll(k, 2000);
	t0 = now_ns();
	ret = kmsgr_submit(k, 1, 0);
	dt = now_ns() - t0;
	ok(ret == -ETIME && dt >= 2000000 && fake.waits == 2,
	   "busy_poll: %s", "spins 2 ms, then waits in ENTER");
	if (dt < 2000000)
		printf("# spun %llu ns\n", (unsigned long long)dt);

	/* a shorter timeout ends the spin, and the call */
	kmsgr_set_busy_poll(k, KMSGR_BUSY_POLL_MAX_US);
	t0 = now_ns();
	ret = kmsgr_submit(k, 1, 500000);
	dt = now_ns() - t0;
	ok(ret == -ETIME && dt >= 500000 && fake.waits == 2,
	   "busy_poll: %s", "timeout 0.5 ms < busy-poll: -ETIME, no ENTER");
	kmsgr_close(k);
}

/*
 * A module with KMSGR_FEAT_BUSY_POLL spins itself: one ENTER that submits,
 * waits and carries the busy-poll time, and no spin in user space.
 */
static void test_busy_poll_kernel(void)
{
	struct kmsgr *k;
	__u64 t0, dt;

	fake_features = KMSGR_FEAT_BUSY_POLL;
	k = fake_open(1);
	fake_features = 0;
	ok(!strcmp(kmsgr_feature_name(16), "busy-poll"), "feature %s",
	   "busy-poll");

	kmsgr_set_busy_poll(k, 1000);
	kmsgr_prep_nop(kmsgr_get_sqe(k), 1);
	ok(kmsgr_submit(k, 1, 0) == 1 && fake.enters == 1 && fake.waits == 1 &&
	   fake.last.busy_poll_us == 1000 && fake.last.to_submit == 1,
	   "busy_poll: %s", "kernel: submit(1) is one ENTER with 1000 us");
	fake_drain(k);

	/* nothing comes: the (fake) kernel times out, the library not spun */
	kmsgr_set_busy_poll(k, KMSGR_BUSY_POLL_MAX_US);
	t0 = now_ns();
	ok(kmsgr_submit(k, 1, 0) == -ETIME && fake.waits == 2 &&
	   fake.last.busy_poll_us == KMSGR_BUSY_POLL_MAX_US,
	   "busy_poll: %s", "kernel: the wait goes to ENTER at once");
	dt = now_ns() - t0;
	ok(dt < KMSGR_BUSY_POLL_MAX_US * 1000ULL, "busy_poll: %s",
	   "kernel: no spin in user space");

	/* off: the field stays 0 */
	kmsgr_set_busy_poll(k, 0);
	kmsgr_prep_nop(kmsgr_get_sqe(k), 2);
	ok(kmsgr_submit(k, 1, 0) == 1 && !fake.last.busy_poll_us,
	   "busy_poll: %s", "kernel: off sends 0");
	kmsgr_close(k);
}

/*
 * The SQ side: a full SQ hands out nothing and says so, a wait submits
 * what is pending even when a CQE is ready, a wait with nothing coming
 * times out, and an ENTER the instance cannot take yet (EBUSY) is no error.
 */
static void test_sq(void)
{
	struct kmsgr *k = fake_open(1);
	struct kmsgr_cqe *c;
	unsigned int i, got = 0;

	for (i = 0; i < 8; i++) {
		struct kmsgr_sqe *sqe = kmsgr_get_sqe(k);

		if (sqe) {
			kmsgr_prep_nop(sqe, i);
			got++;
		}
	}
	ok(got == 8 && !kmsgr_get_sqe(k) && !kmsgr_sq_space(k) &&
	   kmsgr_sq_pending(k) == 8, "sq: %s",
	   "8 of an 8-entry SQ taken: the 9th get_sqe is NULL, no space");
	ok(kmsgr_submit(k, 0, 0) == 8 && kmsgr_sq_space(k) == 8 &&
	   !kmsgr_sq_pending(k) && kmsgr_get_sqe(k), "sq: %s",
	   "submitted: all 8 entries free again");
	kmsgr_submit(k, 0, 0);
	fake_drain(k);

	/* a CQE ready and a NOP pending: the wait returns the CQE, submits */
	fake_post(KMSGR_CQE_OP, 5);
	kmsgr_prep_nop(kmsgr_get_sqe(k), 7);
	i = fake.enters;
	ok(!kmsgr_wait_cqe(k, &c, 0) && c->user_data == 5 &&
	   fake.enters == i + 1 && fake.last.to_submit == 1 &&
	   !kmsgr_sq_pending(k), "sq: %s",
	   "wait_cqe with a CQE ready still submits the pending NOP");
	fake_drain(k);

	/* nothing ready, nothing coming: -ETIME (a hang fails by alarm) */
	alarm(10);
	ok(kmsgr_wait_cqe(k, &c, 2000000) == -ETIME && fake.last.flags &
	   KMSGR_ENTER_F_GETEVENTS, "sq: %s",
	   "wait_cqe with nothing coming times out: -ETIME");
	alarm(0);

	/* the instance takes no SQE yet: 0 consumed, the NOP stays */
	kmsgr_prep_nop(kmsgr_get_sqe(k), 8);
	fake.enter_errno = EBUSY;
	ok(!kmsgr_submit(k, 0, 0) && kmsgr_sq_pending(k) == 1, "sq: %s",
	   "ENTER says EBUSY: submit returns 0, the SQE stays pending");
	fake.enter_errno = 0;
	ok(kmsgr_submit(k, 0, 0) == 1 && !kmsgr_sq_pending(k), "sq: %s",
	   "then it is submitted");
	fake_drain(k);
	kmsgr_close(k);
}

/* The SQEs the prep helpers fill, field by field. */
static void test_prep(void)
{
	struct kmsgr_cqe recv = {
		.kind = KMSGR_CQE_RECV, .session = 3, .res = 7,
		.user_data = 99,
		.seg = { { 4096, 100 }, { 0, 0 }, { 8192, 4096 } },
	};
	struct kmsgr_sqe sqe;

	memset(&sqe, 0xa5, sizeof(sqe));
	kmsgr_prep_release(&sqe, &recv);
	ok(sqe.opcode == KMSGR_OP_RELEASE && sqe.session == 3 &&
	   sqe.flags == KMSGR_SQE_F_TOKEN && sqe.tid == 7 &&
	   sqe.user_data == 99 && !memcmp(sqe.seg, recv.seg, sizeof(sqe.seg)) &&
	   !sqe.token, "prep: %s", "release carries the RECV's token 7");
	recv.res = 0;
	kmsgr_prep_release(&sqe, &recv);
	ok(!sqe.flags && !sqe.tid, "prep: %s",
	   "release of a RECV without a token: no KMSGR_SQE_F_TOKEN");

	recv.res = 7;
	memset(&sqe, 0xa5, sizeof(sqe));
	kmsgr_prep_bdev_write_recv(&sqe, 2, 1 << 20, &recv, 55);
	ok(sqe.opcode == KMSGR_OP_BDEV_WRITE && sqe.session == 2 &&
	   sqe.tid == 1 << 20 && sqe.flags == KMSGR_SQE_F_RELEASE &&
	   sqe.token == 7 && sqe.user_data == 55 &&
	   sqe.seg[0].off == 8192 && sqe.seg[0].len == 4096 &&
	   !sqe.seg[1].len && !sqe.seg[2].len, "prep: %s",
	   "bdev_write_recv: the data segment at the device offset, released with token 7");
}

/*
 * The shared library still exports the completion helpers that became
 * inline, under their old version nodes, and they work on a handle.
 */
static void test_exported(void)
{
	static const struct {
		const char *name, *node;
	} syms[] = {
		{ "kmsgr_peek_cqe", "LIBKMSGR_0.2" },
		{ "kmsgr_cqe_seen", "LIBKMSGR_0.2" },
		{ "kmsgr_peek_batch_cqe", "LIBKMSGR_0.3" },
		{ "kmsgr_cq_advance", "LIBKMSGR_0.3" },
		{ "kmsgr_cq_resume", "LIBKMSGR_0.4" },
		{ "kmsgr_set_busy_poll", "LIBKMSGR_0.4" },
	};
	struct kmsgr_cqe *(*peek)(struct kmsgr *k);
	void (*seen)(struct kmsgr *k);
	unsigned int (*batch)(struct kmsgr *k, struct kmsgr_cqe **cqes,
			      unsigned int max);
	void (*advance)(struct kmsgr *k, unsigned int n);
	struct kmsgr_cqe *c, *b[4];
	void *fn[ARRAY_SIZE(syms)];
	struct kmsgr *k;
	unsigned int n;
	size_t i;
	void *so;

	so = dlopen(LIBKMSGR_SO, RTLD_NOW | RTLD_LOCAL);
	ok(!!so, "exported: %s", "dlopen " LIBKMSGR_SO);
	if (!so)
		return;
	for (i = 0; i < ARRAY_SIZE(syms); i++) {
		fn[i] = dlvsym(so, syms[i].name, syms[i].node);
		ok(!!fn[i], "exported: %s", syms[i].name);
		if (!fn[i])
			goto out;
	}
	peek = (struct kmsgr_cqe *(*)(struct kmsgr *))fn[0];
	seen = (void (*)(struct kmsgr *))fn[1];
	batch = (unsigned int (*)(struct kmsgr *, struct kmsgr_cqe **,
				  unsigned int))fn[2];
	advance = (void (*)(struct kmsgr *, unsigned int))fn[3];

	/* the library's copies on a handle of this program's libkmsgr.a */
	k = fake_open(1);
	for (i = 1; i <= 4; i++)
		fake_post(KMSGR_CQE_OP, i);
	n = batch(k, b, 4);
	ok(n == 4 && b[0]->user_data == 1 && b[3]->user_data == 4,
	   "exported: %s", "peek_batch_cqe sees 4");
	advance(k, 2);
	c = peek(k);
	ok(c && c->user_data == 3, "exported: %s", "cq_advance, peek_cqe");
	seen(k);
	seen(k);
	ok(!peek(k) && !batch(k, b, 4) && !kmsgr_cq_ready(k) && !fake.enters,
	   "exported: %s", "cqe_seen empties the CQ");
	kmsgr_close(k);
out:
	dlclose(so);
}

/*
 * The netlink structs are allocated by the caller: their layout is ABI.
 * struct kmsgr_instance_info took its last reserved words for the block
 * device totals (LIBKMSGR_0.7) and kept its size; struct
 * kmsgr_bdev_info keeps reserved words of its own.  The new calls are in
 * their own version node.
 */
static void test_nl_abi(void)
{
	static const char *const syms[] = {
		"kmsgr_nl_bdevs", "kmsgr_nl_bdev_get",
	};
	char buf[64];
	size_t i;
	void *so;

	snprintf(buf, sizeof(buf), "%zu %zu %zu",
		 sizeof(struct kmsgr_instance_info),
		 offsetof(struct kmsgr_instance_info, bdev_read_bytes),
		 offsetof(struct kmsgr_instance_info, bdev_write_bytes));
	ok(!strcmp(buf, "168 152 160"),
	   "nl abi: kmsgr_instance_info keeps its 168 bytes, bdev totals at 152 and 160 (%s)",
	   buf);
	snprintf(buf, sizeof(buf), "%zu %zu %zu %zu",
		 sizeof(struct kmsgr_bdev_info),
		 offsetof(struct kmsgr_bdev_info, name),
		 offsetof(struct kmsgr_bdev_info, ops),
		 offsetof(struct kmsgr_bdev_info, reserved));
	ok(!strcmp(buf, "208 32 104 160"),
	   "nl abi: kmsgr_bdev_info is 208 bytes, 48 of them reserved (%s)",
	   buf);

	so = dlopen(LIBKMSGR_SO, RTLD_NOW | RTLD_LOCAL);
	ok(!!so, "nl abi: %s", "dlopen " LIBKMSGR_SO);
	if (!so)
		return;
	for (i = 0; i < ARRAY_SIZE(syms); i++) {
		ok(dlvsym(so, syms[i], "LIBKMSGR_0.7") &&
		   !dlvsym(so, syms[i], "LIBKMSGR_0.6"),
		   "nl abi: %s is exported under LIBKMSGR_0.7", syms[i]);
	}
	dlclose(so);
}

int main(void)
{
	test_addr();
	test_key();
	test_keyring();
	test_names();
	test_down_is_final();
	test_busy_poll_args();
	test_cq_before_setup();
	test_cq_helpers();
	test_cq_paused();
	test_submit_no_syscall();
	test_sq();
	test_prep();
	test_busy_poll();
	test_busy_poll_kernel();
	test_exported();
	test_nl_abi();
	printf("1..%d\n", tests);
	return failures ? 1 : 0;
}
