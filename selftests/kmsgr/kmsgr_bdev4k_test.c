// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - received payloads written to a device with 4 KiB
 * logical blocks (a 4Kn namespace): the receive pool places a data
 * segment whose length is a non-zero multiple of 4 KiB at a 4 KiB-aligned
 * offset of the buffer area (kmod/mem.c, kmsgr_pool_alloc_msg()), so that
 * BDEV_WRITE with KMSGR_SQE_F_RELEASE takes it straight from the pool.
 *
 *  attach_reports_4k         ATTACH_BDEV reports lbs and pbs 4096 (as
 *                            BLKSSZGET and BLKPBSZGET say); a WRITE from
 *                            the tx area lands (read back with O_DIRECT);
 *                            a device offset, a slice offset or a length
 *                            that is a multiple of 512 but not of 4096:
 *                            EINVAL, device untouched
 *  write_received            over a TCP loopback session (three variants:
 *                            the pool starting on a page, or 2560 bytes
 *                            after one, also lossless with 1536): rounds
 *                            of messages whose data segments are 4 KiB,
 *                            8 KiB, 64 KiB, 1 MiB and two random
 *                            multiples of 4 KiB, with fronts and middles
 *                            of odd sizes (or none), each behind 0 to 3
 *                            small messages (odd front, middle and data
 *                            sizes) that the receiver holds for a while,
 *                            so the pool is fragmented and the 1 MiB
 *                            messages (half the pool) wait for room:
 *                            every message arrives whole, in order, with
 *                            its bytes; every 4 KiB-multiple data slice
 *                            is 4 KiB-aligned in the buffer area and is
 *                            written to its own place on the device with
 *                            KMSGR_SQE_F_RELEASE; the same message
 *                            written 512 bytes off, and a small message's
 *                            data, are refused with EINVAL (and leave the
 *                            slices with the application); the pool
 *                            drains to 0; the device, read back with
 *                            O_DIRECT, holds every message's bytes
 *
 * The device: KMSGR_NVME_4K, set by tools/vm/run --nvme SIZE (its second
 * namespace: 16 MiB, 4096-byte logical and physical blocks).  Without it
 * the tests SKIP saying so; make check (run_guest.sh with
 * KMSGR_NO_SKIP=1) counts such a skip as a failure.  The tests write all
 * over the namespace: never point KMSGR_NVME_4K at a device holding data.
 *
 * Knobs: KMSGR_BDEV4K_ROUNDS (6), KMSGR_SEED (the seed of a run is
 * printed; set it to repeat the run).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "kmsgr_ring_util.h"
#include "kmsgr_bdev_util.h"

#define KIB		1024U
#define MIB		(1024 * KIB)
#define LBS		4096U		/* the namespace's blocks */
#define NS_MIN		(16 * MIB)	/* tools/vm/run --nvme: namespace 2 */
#define POISON		0x5a
#define GRAIN		512U		/* receive-pool allocation unit */

/* Where each test works on the namespace (bytes, all below NS_MIN). */
#define RX_BASE		0		/* write_received: the messages */
#define RX_END		(14 * MIB)
#define BAD_BASE	(14 * MIB)	/* refused writes aim here */
#define BAD_SIZE	(64 * KIB)
#define ATT_BASE	(15 * MIB)	/* attach_reports_4k */

/* user_data: a tag in the high half, a number in the low one */
#define UD(tag, n)	(((uint64_t)(tag) << 32) | (uint32_t)(n))
#define UD_TAG(ud)	((uint32_t)((ud) >> 32))
#define UD_NUM(ud)	((uint32_t)(ud))
#define TAG_OP		0xc0	/* attach_reports_4k's ops */
#define TAG_SEND	0xc1
#define TAG_WRITE	0xc2	/* a write_recv that must work */
#define TAG_BAD		0xc3	/* a write_recv that must fail EINVAL */
#define TAG_REL		0xc4	/* a RELEASE (a CQE only when it fails) */

/* ---- helpers ------------------------------------------------------------- */

/* Why the tests cannot run here (SKIP), or NULL. */
static const char *bdev4k_missing(void)
{
	const char *why = kmsgr_missing(1);
	const char *path = getenv("KMSGR_NVME_4K");

	if (why)
		return why;
	if (!path || !*path)
		return "KMSGR_NVME_4K not set: no 4Kn device (tools/vm/run --nvme SIZE)";
	if (bdev_unsupported())
		return "the module has no KMSGR_FEAT_BDEV";
	return NULL;
}

/* The 4Kn namespace (KMSGR_NVME_4K), as both fixtures open it. */
struct dev4k {
	const char *why;	/* set: SKIP with this reason */
	const char *path;
	int dfd;		/* the namespace, O_RDWR | O_DIRECT */
	uint64_t cap;
	uint8_t *bounce;	/* BOUNCE bytes, 4 KiB-aligned */
	uint64_t rng;
	int kmsg;		/* kernel log watch */
};

static void dev4k_open(struct __test_metadata *_metadata,
		       struct dev4k *self)
{
	unsigned int pbs = 0;
	struct stat st;
	int lbs = 0;

	self->dfd = -1;
	self->kmsg = -1;
	self->why = bdev4k_missing();
	if (self->why)
		return;
	self->path = getenv("KMSGR_NVME_4K");
	self->rng = test_seed();
	self->kmsg = kt_kmsg_open();
	dev_open(_metadata, "KMSGR_NVME_4K", self->path, &self->dfd, &st,
		 &self->cap, &lbs, &pbs);
	ASSERT_EQ(LBS, (unsigned int)lbs)
		TH_LOG("%s: logical block size %d, not 4096", self->path, lbs);
	ASSERT_EQ(LBS, pbs)
		TH_LOG("%s: physical block size %u, not 4096", self->path, pbs);
	ASSERT_LE(NS_MIN, self->cap)
		TH_LOG("%s has %llu bytes; the tests want 16 MiB", self->path,
		       (unsigned long long)self->cap);
	ASSERT_EQ(0, posix_memalign((void **)&self->bounce, LBS, BOUNCE));
}

FIXTURE(bdev4k) {
	struct dev4k d;
};

FIXTURE_SETUP(bdev4k)
{
	dev4k_open(_metadata, &self->d);
}

FIXTURE_TEARDOWN(bdev4k)
{
	dev_close(_metadata, self->d.dfd, self->d.bounce, self->d.kmsg);
}

/* ---- attach ------------------------------------------------------------- */

/* The @op (WRITE, READ) @s with @what must fail with EINVAL. */
static void expect_einval(struct __test_metadata *_metadata,
			  struct kt_inst *ti, const struct kmsgr_sqe *s,
			  const char *op, const char *what)
{
	int res = op_res(_metadata, ti, s, what);

	EXPECT_EQ(-EINVAL, res)
		TH_LOG("%s with %s: %s, expected EINVAL", op, what,
		       res ? strerror(-res) : "0");
}

TEST_F(bdev4k, attach_reports_4k)
{
	struct dev4k *d = &self->d;
	static const struct {
		uint64_t dev_off;
		uint32_t off, len;
		const char *what;
	} bad[] = {
		{ ATT_BASE + 512, 0, LBS, "device offset 512 past a block" },
		{ ATT_BASE + 2048, 0, 2 * LBS, "device offset 2048 past a block" },
		{ ATT_BASE, 512, LBS, "slice 512 bytes past a block" },
		{ ATT_BASE, 3584, 2 * LBS, "slice 3584 bytes past a block" },
		{ ATT_BASE, 0, 512, "length 512" },
		{ ATT_BASE, 0, LBS + 512, "length 4608" },
	};
	uint8_t *want;
	struct kmsgr_bdev b;
	struct kmsgr_sqe s;
	struct kt_inst ti;
	unsigned int i;
	int res;

	if (d->why)
		SKIP(return, "%s", d->why);
	ASSERT_EQ(0, kt_inst_open(&ti, "4k", 16, 4 * MIB, KMSGR_POOL_MIN,
				  d->rng));
	ASSERT_EQ(0, attach_path(ti.k, d->path, O_RDWR, 0, &b));
	TH_LOG("%s: capacity %llu, lbs %u, pbs %u, max_io %u, attrs %#x",
	       d->path, (unsigned long long)b.capacity, b.lbs, b.pbs,
	       b.max_io, b.attrs);
	EXPECT_EQ(d->cap, b.capacity);
	EXPECT_EQ(LBS, b.lbs) TH_LOG("lbs of a 4Kn namespace");
	EXPECT_EQ(LBS, b.pbs) TH_LOG("pbs of a 4Kn namespace");
	EXPECT_EQ(0, b.max_io % LBS)
		TH_LOG("max_io %u is not a multiple of 4096", b.max_io);

	/* poison, then an aligned WRITE of random bytes from the tx area */
	want = malloc(MIB);
	ASSERT_NE(NULL, want);
	memset(want, POISON, MIB);
	ASSERT_EQ(0, dev_io(d->dfd, d->bounce, true, ATT_BASE, want,
			    MIB));
	kmsgr_prep_bdev(&s, KMSGR_OP_BDEV_WRITE, b.id, ATT_BASE + MIB / 2,
			LBS, 16 * LBS, UD(TAG_OP, 0));
	res = op_res(_metadata, &ti, &s, "an aligned WRITE");
	EXPECT_EQ(0, res) TH_LOG("an aligned WRITE: %s", strerror(-res));
	memcpy(want + MIB / 2, ti.buf + LBS, 16 * LBS);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		s = bdev_sqe(KMSGR_OP_BDEV_WRITE, b.id, bad[i].dev_off,
			     bad[i].off, bad[i].len, UD(TAG_OP, i + 1));
		expect_einval(_metadata, &ti, &s, "WRITE", bad[i].what);
		s = bdev_sqe(KMSGR_OP_BDEV_READ, b.id, bad[i].dev_off,
			     bad[i].off, bad[i].len, UD(TAG_OP, i + 100));
		expect_einval(_metadata, &ti, &s, "READ", bad[i].what);
	}
	dev_holds(_metadata, d->dfd, d->bounce, ATT_BASE, want, MIB,
		  "the aligned WRITE, and nothing of the refused ones");
	EXPECT_EQ(0, kmsgr_bdev_detach(ti.k, b.id));
	kt_inst_close(&ti);
	free(want);
}

/* ---- received messages to the device ------------------------------------ */

#define RX_TX		(4 * MIB)	/* the sender's area */
#define RX_POOL		(2 * MIB + 64 * KIB)	/* the receiver's pool */
#define RX_SQ		128
#define RX_CQ		512
#define RX_WINDOW	8		/* SENDs in flight */
#define RX_HOLD_MAX	32		/* small messages held at once */
#define RX_IDLE_MS	30		/* nothing came: release a held one */
#define RX_MS		240000		/* the whole stream */

/* One message of the stream. */
struct m4k {
	uint32_t src[KT_NSEG];	/* in the sender's area */
	uint32_t len[KT_NSEG];	/* front, middle, data */
	uint64_t hash[KT_NSEG];
	bool big;		/* data a non-zero multiple of 4 KiB */
	bool bad;		/* also written 512 bytes off first */
	uint64_t dev_off;	/* big: where it goes */
};

/* A small message the receiver holds, until @until messages came. */
struct held {
	struct kmsgr_cqe c;
	unsigned int until;
};

struct rx4k {
	struct kt_inst r, s;	/* receiver (the device), sender */
	struct kt_loop lp;
	uint32_t r_id, s_id;
	uint32_t id;		/* the device on r */
	struct m4k *m;
	unsigned int n, nbig;
	struct kmsgr_cqe *got;	/* per message: its RECV */
	unsigned int sent, sends, recvd, written;
	unsigned int bad_queued, bad_seen;	/* write_recvs to refuse */
	unsigned int misaligned, unwritten, skewed;
	struct held hold[RX_HOLD_MAX];
	unsigned int nhold;
	uint64_t last_rx;	/* when the last RECV came */
	uint64_t dev_end;
};

/* Front and middle sizes of the big messages: odd ones, or none. */
static const uint32_t fronts[] = { 0, 1, 200, 511, 513, 1000, 4095, 4097 };
static const uint32_t middles[] = { 0, 0, 77, 512, 1500, 3000 };

/* Receive-pool grains of a @len-byte segment. */
static uint32_t grains(uint32_t len)
{
	return (len + GRAIN - 1) / GRAIN;
}

static uint32_t rnd(uint64_t *rng, uint32_t n)
{
	return (uint32_t)(kt_rand(rng) % n);
}

/* Message @i: segment lengths @len, from random places of the area. */
static void m4k_plan(struct rx4k *x, unsigned int i, const uint32_t *len,
		     uint64_t *rng)
{
	struct m4k *m = &x->m[i];
	unsigned int k;

	for (k = 0; k < KT_NSEG; k++) {
		m->len[k] = len[k];
		m->src[k] = rnd(rng, RX_TX - len[k] + 1);
		m->hash[k] = kt_hash(x->s.buf + m->src[k], len[k]);
	}
	m->big = len[2] && !(len[2] % LBS);
	if (m->big) {
		m->dev_off = x->dev_end;
		x->dev_end += len[2];
		x->nbig++;
	}
}

/*
 * The plan: @rounds rounds of the data sizes 4 KiB, 8 KiB, 64 KiB, 1 MiB
 * and two random multiples of 4 KiB (up to 256 KiB) in a random order,
 * fronts and middles from the tables; each behind 0 to 3 small messages.
 * Return: the number of messages (the array holds them).
 */
static unsigned int m4k_plan_all(struct rx4k *x, unsigned int rounds,
				 uint64_t *rng)
{
	static const uint32_t sizes[] = { 4 * KIB, 8 * KIB, 64 * KIB, MIB };
	uint32_t data[6], len[KT_NSEG], t;
	unsigned int r, j, k, smalls, n = 0, first64 = 1;

	for (r = 0; r < rounds; r++) {
		for (j = 0; j < 4; j++)
			data[j] = sizes[j];
		data[4] = LBS * (1 + rnd(rng, 64));
		data[5] = LBS * (1 + rnd(rng, 64));
		for (j = 5; j > 0; j--) {
			k = rnd(rng, j + 1);
			t = data[j];
			data[j] = data[k];
			data[k] = t;
		}
		for (j = 0; j < 6; j++) {
			if (x->dev_end + data[j] > RX_END)
				return n;
			for (smalls = rnd(rng, 4); smalls; smalls--) {
				len[0] = 1 + rnd(rng, 700);
				len[1] = rnd(rng, 2) ? rnd(rng, 300) : 0;
				len[2] = rnd(rng, 3) ? 1 + rnd(rng, 6000) : 0;
				if (!(len[2] % LBS))
					len[2]++;
				m4k_plan(x, n++, len, rng);
			}
			len[0] = fronts[rnd(rng, ARRAY_SIZE(fronts))];
			len[1] = middles[rnd(rng, ARRAY_SIZE(middles))];
			len[2] = data[j];
			m4k_plan(x, n, len, rng);
			/* the first 64 KiB one is also written 512 bytes off */
			if (data[j] == 64 * KIB && first64) {
				x->m[n].bad = true;
				first64 = 0;
			}
			n++;
		}
	}
	return n;
}

/* Queue the SENDs the window allows. */
static void rx4k_send(struct rx4k *x)
{
	struct kmsgr_sqe *sqe;
	struct m4k *m;

	while (x->sent < x->n && x->sent - x->sends < RX_WINDOW) {
		sqe = kt_sqe(&x->s);
		if (!sqe)
			break;
		m = &x->m[x->sent];
		kmsgr_prep_send(sqe, x->s_id, 0x4b34, x->sent,
				slice(m->len[0] ? m->src[0] : 0, m->len[0]),
				slice(m->len[1] ? m->src[1] : 0, m->len[1]),
				slice(m->len[2] ? m->src[2] : 0, m->len[2]),
				UD(TAG_SEND, x->sent));
		x->sent++;
	}
	kmsgr_submit(x->s.k, 0, 0);
}

/* The sender's CQEs: SENDs done (each must succeed). */
static void rx4k_sender_cqes(struct __test_metadata *_metadata,
			     struct rx4k *x)
{
	struct kmsgr_cqe *c;

	while ((c = kmsgr_peek_cqe(x->s.k))) {
		if (c->kind == KMSGR_CQE_SEND) {
			EXPECT_EQ(0, c->res)
				TH_LOG("SEND %u: %s", UD_NUM(c->user_data),
				       strerror(-c->res));
			x->sends++;
		} else if (c->kind == KMSGR_CQE_EVENT) {
			EXPECT_TRUE(c->event != KMSGR_EV_DOWN &&
				    c->event != KMSGR_EV_CLOSED &&
				    c->event != KMSGR_EV_RESET)
				TH_LOG("sender: session %s (%s)",
				       kmsgr_event_str(c->event),
				       kmsgr_reason_str(c->reason));
		} else {
			EXPECT_TRUE(0) TH_LOG("sender: CQE kind %u", c->kind);
		}
		kmsgr_cqe_seen(x->s.k);
	}
}

/* A RELEASE of @c's slices, with @seg2 false without its data slice. */
static void rx4k_release(struct __test_metadata *_metadata, struct rx4k *x,
			 const struct kmsgr_cqe *c, bool seg2)
{
	struct kmsgr_cqe f = *c;
	struct kmsgr_sqe *sqe;

	if (!seg2)
		f.seg[2] = slice(0, 0);
	if (!f.seg[0].len && !f.seg[1].len && !f.seg[2].len)
		return;
	sqe = kt_sqe(&x->r);
	ASSERT_NE(NULL, sqe) TH_LOG("receiver: SQ full");
	kmsgr_prep_release(sqe, &f);
	sqe->user_data = UD(TAG_REL, c->tid);
}

/* Give back the held small message at index @k. */
static void rx4k_unhold(struct __test_metadata *_metadata, struct rx4k *x,
			unsigned int k)
{
	rx4k_release(_metadata, x, &x->hold[k].c, true);
	x->hold[k] = x->hold[--x->nhold];
}

/* A write_recv of message @i's RECV @c to @dev_off, as @tag. */
static void rx4k_write(struct __test_metadata *_metadata, struct rx4k *x,
		       const struct kmsgr_cqe *c, uint64_t dev_off,
		       uint32_t tag)
{
	struct kmsgr_sqe *sqe = kt_sqe(&x->r);

	ASSERT_NE(NULL, sqe) TH_LOG("receiver: SQ full");
	kmsgr_prep_bdev_write_recv(sqe, x->id, dev_off, c,
				   UD(tag, (uint32_t)c->tid));
}

/* A RECV: check it, then write it (big) or hold it (small). */
static void rx4k_recv(struct __test_metadata *_metadata, struct dev4k *d,
		      struct rx4k *x, const struct kmsgr_cqe *c)
{
	unsigned int i = x->recvd, k;
	struct m4k *m;

	ASSERT_LT(i, x->n) TH_LOG("more messages than were sent");
	m = &x->m[i];
	EXPECT_EQ(x->r_id, c->session);
	ASSERT_EQ(i, c->tid) TH_LOG("messages lost or reordered");
	ASSERT_LT(0, c->res) TH_LOG("message %u: no release token", i);
	for (k = 0; k < KT_NSEG; k++) {
		ASSERT_EQ(m->len[k], c->seg[k].len)
			TH_LOG("message %u: segment %u", i, k);
		if (m->len[k])
			EXPECT_EQ(m->hash[k], kt_hash(x->r.buf + c->seg[k].off,
						      m->len[k]))
				TH_LOG("message %u: segment %u arrived with other bytes",
				       i, k);
	}
	x->got[i] = *c;
	x->recvd++;
	x->last_rx = kt_now_ms();
	if (!m->big) {
		/* a small one's data cannot go to the device */
		if (m->len[2] && x->bad_queued < 4) {
			rx4k_write(_metadata, x, c, BAD_BASE, TAG_BAD);
			x->bad_queued++;
		}
		if (x->nhold == RX_HOLD_MAX)
			rx4k_unhold(_metadata, x, rnd(&d->rng, x->nhold));
		x->hold[x->nhold].c = *c;
		x->hold[x->nhold].until = x->recvd + 1 + rnd(&d->rng, 16);
		x->nhold++;
		return;
	}
	/* a run that starts on a 4 KiB boundary would misplace the data */
	if ((grains(m->len[0]) + grains(m->len[1])) % (LBS / GRAIN))
		x->skewed++;
	if (c->seg[2].off % LBS) {
		x->misaligned++;
		EXPECT_EQ(0, c->seg[2].off % LBS)
			TH_LOG("message %u: data (%u B) at %u not 4K-aligned (front %u, middle %u)",
			       i, m->len[2], c->seg[2].off, m->len[0],
			       m->len[1]);
	}
	if (m->bad) {
		rx4k_write(_metadata, x, c, m->dev_off + 512, TAG_BAD);
		x->bad_queued++;
	}
	rx4k_write(_metadata, x, c, m->dev_off, TAG_WRITE);
	rx4k_release(_metadata, x, c, false);
}

/* An OP CQE of the receiver. */
static void rx4k_op(struct __test_metadata *_metadata, struct rx4k *x,
		    const struct kmsgr_cqe *c)
{
	unsigned int i = UD_NUM(c->user_data);

	ASSERT_LT(i, x->n);
	switch (UD_TAG(c->user_data)) {
	case TAG_WRITE:
		EXPECT_EQ(0, c->res)
			TH_LOG("message %u: write_recv of %u bytes (slice at %u) to %llu: %s",
			       i, x->m[i].len[2], x->got[i].seg[2].off,
			       (unsigned long long)x->m[i].dev_off,
			       strerror(-c->res));
		EXPECT_EQ(x->id, c->session);
		EXPECT_EQ(x->m[i].dev_off, c->tid);
		x->written++;
		if (c->res) {
			/* refused: the slice is still ours */
			x->unwritten++;
			rx4k_release(_metadata, x, &x->got[i], true);
		}
		break;
	case TAG_BAD:
		EXPECT_EQ(-EINVAL, c->res)
			TH_LOG("message %u: misaligned write_recv of %u bytes: %s, not EINVAL",
			       i, x->m[i].len[2],
			       c->res ? strerror(-c->res) : "0");
		x->bad_seen++;
		break;
	default:
		EXPECT_TRUE(0)
			TH_LOG("OP CQE %#llx, res %d (a failed RELEASE?)",
			       (unsigned long long)c->user_data, c->res);
	}
}

/* The receiver's CQEs. */
static void rx4k_receiver_cqes(struct __test_metadata *_metadata,
			       struct dev4k *d, struct rx4k *x)
{
	struct kmsgr_cqe c;

	while (kmsgr_peek_cqe(x->r.k)) {
		c = *kmsgr_peek_cqe(x->r.k);
		kmsgr_cqe_seen(x->r.k);
		switch (c.kind) {
		case KMSGR_CQE_RECV:
			rx4k_recv(_metadata, d, x, &c);
			break;
		case KMSGR_CQE_OP:
			rx4k_op(_metadata, x, &c);
			break;
		case KMSGR_CQE_EVENT:
			ASSERT_TRUE(c.event != KMSGR_EV_DOWN &&
				    c.event != KMSGR_EV_CLOSED &&
				    c.event != KMSGR_EV_RESET)
				TH_LOG("receiver: session %s (%s)",
				       kmsgr_event_str(c.event),
				       kmsgr_reason_str(c.reason));
			break;
		default:
			ASSERT_TRUE(0) TH_LOG("receiver: CQE kind %u", c.kind);
		}
	}
}

/* Release the held messages whose time came (or one, when idle). */
static void rx4k_release_held(struct __test_metadata *_metadata,
			      struct rx4k *x)
{
	unsigned int k, old;

	for (k = 0; k < x->nhold;) {
		if (x->hold[k].until <= x->recvd || x->recvd == x->n)
			rx4k_unhold(_metadata, x, k);
		else
			k++;
	}
	/* nothing came for a while: the pool may be full of them */
	if (x->nhold && kt_now_ms() - x->last_rx > RX_IDLE_MS) {
		for (old = 0, k = 1; k < x->nhold; k++)
			if (x->hold[k].c.tid < x->hold[old].c.tid)
				old = k;
		rx4k_unhold(_metadata, x, old);
		x->last_rx = kt_now_ms();
	}
}

static bool rx4k_done(const struct rx4k *x)
{
	return x->recvd == x->n && x->written == x->nbig && !x->nhold &&
	       x->bad_seen == x->bad_queued && x->sends == x->n;
}

FIXTURE(recv4k) {
	struct dev4k d;
};

/*
 * Where the receive pool starts: pool_skew bytes past a 4 KiB boundary
 * of the area (the alignment is the area's, not the pool's); and the
 * session's flags.
 */
FIXTURE_VARIANT(recv4k) {
	uint32_t pool_skew;
	uint32_t flags;		/* KMSGR_SESS_F_* */
};

FIXTURE_VARIANT_ADD(recv4k, pool_on_page) {
	.pool_skew = 0,
	.flags = 0,
};

FIXTURE_VARIANT_ADD(recv4k, pool_skewed) {
	.pool_skew = 2560,
	.flags = 0,
};

FIXTURE_VARIANT_ADD(recv4k, pool_skewed_lossless) {
	.pool_skew = 1536,
	.flags = KMSGR_SESS_F_LOSSLESS,
};

FIXTURE_SETUP(recv4k)
{
	dev4k_open(_metadata, &self->d);
}

FIXTURE_TEARDOWN(recv4k)
{
	dev_close(_metadata, self->d.dfd, self->d.bounce, self->d.kmsg);
}

TEST_F_TIMEOUT(recv4k, write_received, 360)
{
	unsigned int rounds = (unsigned int)kt_env_long("KMSGR_BDEV4K_ROUNDS",
							6);
	uint64_t end, t0, vol = 0;
	struct kmsgr_listen l;
	struct pollfd pfd[2];
	struct kmsgr_bdev b;
	struct kmsgr_info info;
	uint8_t *img;
	unsigned int i;
	long long v;
	struct dev4k *d = &self->d;
	struct rx4k *x;

	if (d->why)
		SKIP(return, "%s", d->why);
	x = calloc(1, sizeof(*x));
	ASSERT_NE(NULL, x);
	/* the pool starts pool_skew bytes past a page of the area */
	ASSERT_EQ(0, kt_inst_open_cq(&x->r, "recv", RX_SQ, RX_CQ,
				     MIB - variant->pool_skew,
				     RX_POOL + variant->pool_skew,
				     d->rng + 1));
	ASSERT_EQ(variant->pool_skew, (4096 - x->r.tx_size % 4096) % 4096)
		TH_LOG("the pool starts at %llu", (unsigned long long)x->r.tx_size);
	ASSERT_EQ(0, kt_inst_open(&x->s, "send", 64, RX_TX, KMSGR_POOL_MIN,
				  d->rng + 2));
	memset(&info, 0, sizeof(info));
	ASSERT_EQ(0, kmsgr_info(x->r.k, &info));
	ASSERT_TRUE(info.features & KMSGR_FEAT_RELEASE_TOKEN);
	ASSERT_TRUE(info.features & KMSGR_FEAT_INFO_POOL);

	x->m = calloc(rounds * 6 * 4 + 1, sizeof(*x->m));
	ASSERT_NE(NULL, x->m);
	x->n = m4k_plan_all(x, rounds, &d->rng);
	x->got = calloc(x->n, sizeof(*x->got));
	ASSERT_NE(NULL, x->got);
	for (i = 0; i < x->n; i++)
		vol += x->m[i].len[0] + x->m[i].len[1] + x->m[i].len[2];

	/* what the device holds before: poison */
	img = malloc(x->dev_end > BAD_SIZE ? x->dev_end : BAD_SIZE);
	ASSERT_NE(NULL, img);
	memset(img, POISON, x->dev_end > BAD_SIZE ? x->dev_end : BAD_SIZE);
	ASSERT_EQ(0, dev_io(d->dfd, d->bounce, true, RX_BASE, img,
			    x->dev_end));
	ASSERT_EQ(0, dev_io(d->dfd, d->bounce, true, BAD_BASE, img,
			    BAD_SIZE));

	kt_loop_init(&x->lp);
	kt_loop_add(&x->lp, &x->r);
	kt_loop_add(&x->lp, &x->s);
	ASSERT_EQ(0, kt_listen(&x->r, "127.0.0.1", variant->flags, 0x11, &l));
	ASSERT_EQ(0, kt_connect(&x->s, &l.bound, variant->flags, KT_PEER_ANY,
				0x22, &x->s_id));
	ASSERT_EQ(0, kt_wait_pair(&x->lp, &x->s, x->s_id, &x->r, &x->r_id,
				  20000));
	ASSERT_EQ(0, attach_path(x->r.k, d->path, O_RDWR, 0, &b));
	ASSERT_EQ(LBS, b.lbs);
	x->id = b.id;

	t0 = kt_now_ms();
	x->last_rx = t0;
	end = t0 + RX_MS;
	while (!rx4k_done(x) && kt_now_ms() < end && _metadata->passed) {
		rx4k_send(x);
		if (!kmsgr_peek_cqe(x->r.k) && !kmsgr_peek_cqe(x->s.k)) {
			pfd[0].fd = kmsgr_fd(x->r.k);
			pfd[1].fd = kmsgr_fd(x->s.k);
			pfd[0].events = POLLIN;
			pfd[1].events = POLLIN;
			poll(pfd, 2, 10);
		}
		rx4k_sender_cqes(_metadata, x);
		rx4k_receiver_cqes(_metadata, d, x);
		rx4k_release_held(_metadata, x);
		kmsgr_submit(x->r.k, 0, 0);
	}
	TH_LOG("%u messages, %llu KiB, through a %u KiB pool %u bytes past a page: %llu ms",
	       x->n, (unsigned long long)(vol >> 10),
	       (RX_POOL + variant->pool_skew) >> 10, variant->pool_skew,
	       (unsigned long long)(kt_now_ms() - t0));
	TH_LOG("%u with 4 KiB-multiple data (%u with front + middle off 4 KiB)",
	       x->nbig, x->skewed);
	TH_LOG("%u sent, %u SENDs done, %u received, %u written (%u failed)",
	       x->sent, x->sends, x->recvd, x->written, x->unwritten);
	TH_LOG("%u misaligned data slices, %u small messages still held",
	       x->misaligned, x->nhold);
	EXPECT_TRUE(rx4k_done(x)) TH_LOG("the stream did not finish");
	EXPECT_EQ(0, x->misaligned);
	EXPECT_EQ(0, x->unwritten);
	ASSERT_EQ(0, submit_all(&x->r));
	v = kt_pool_bytes(&x->r);
	for (i = 0; v && i < 200; i++) {
		usleep(10000);
		v = kt_pool_bytes(&x->r);
	}
	EXPECT_EQ(0, v) TH_LOG("receive-pool bytes in use at the end");

	dev_holds(_metadata, d->dfd, d->bounce, BAD_BASE, img, BAD_SIZE,
		  "where the refused writes aimed (poison)");
	for (i = 0; i < x->n; i++)
		if (x->m[i].big)
			memcpy(img + x->m[i].dev_off - RX_BASE,
			       x->s.buf + x->m[i].src[2], x->m[i].len[2]);
	dev_holds(_metadata, d->dfd, d->bounce, RX_BASE, img,
		  x->dev_end, "the received data segments on the device");

	EXPECT_EQ(0, kmsgr_bdev_detach(x->r.k, x->id));
	EXPECT_EQ(0, x->lp.stray) TH_LOG("%s", x->lp.stray_why);
	kt_inst_close(&x->s);
	kt_inst_close(&x->r);
	free(img);
	free(x->got);
	free(x->m);
	free(x);
}

TEST_HARNESS_MAIN
