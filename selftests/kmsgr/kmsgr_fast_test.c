// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - the fast path (issue 8): completions and submission.
 *
 *  skip_success          2000 lossy SENDs with KMSGR_SQE_F_SKIP_SUCCESS
 *                        through a 16-entry CQ all arrive and post no
 *                        CQE; the flag is refused on a NOP; a failing
 *                        SEND with it still posts its error CQE
 *  enter_wakes_for_room  an ENTER that waits for a CQE while SQEs were
 *                        left for want of a CQ slot returns as soon as
 *                        skip-success SENDs give their slots back (it
 *                        used to sleep until its timeout)
 *  threshold_wake        an ENTER waiting for 64 CQEs while they arrive
 *                        one by one is woken about once, not 64 times
 *                        (voluntary context switches of the waiter);
 *                        kmsgr_peek_batch_cqe()/kmsgr_cq_advance() reap
 *                        them at once
 *
 * The fallback of inline submission (the socket takes part of a SEND, the
 * session's work writes the rest on write space) is forced by
 * kmsgr_tcp_test's short_writes (4 KiB socket buffers).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "kmsgr_ring_util.h"

#define SETUP_MS	20000
#define TX_AREA		(1ULL << 20)
#define RX_POOL		(4ULL << 20)

/* A listener on @a and a lossy client session on @b, both UP. */
static int pair_up(struct kt_inst *a, struct kt_inst *b, uint32_t flags,
		   uint32_t *a_id, uint32_t *b_id)
{
	struct kmsgr_listen l;
	struct kt_loop lp;
	int ret;

	kt_loop_init(&lp);
	kt_loop_add(&lp, a);
	kt_loop_add(&lp, b);
	ret = kt_listen(a, "127.0.0.1", flags, 0xa, &l);
	if (!ret)
		ret = kt_connect(b, &l.bound, flags, KT_PEER_ANY, 0xb, b_id);
	if (!ret)
		ret = kt_wait_pair(&lp, b, *b_id, a, a_id, SETUP_MS);
	return ret;
}

/* Reap @ti's CQEs: RECVs are counted and released, the rest counted. */
static void drain(struct kt_inst *ti, unsigned int *recvs,
		  unsigned int *others, struct kmsgr_cqe *last_other)
{
	struct kmsgr_cqe *c;

	while ((c = kmsgr_peek_cqe(ti->k))) {
		if (c->kind == KMSGR_CQE_RECV) {
			(*recvs)++;
			kt_release(ti, c);
		} else if (c->kind != KMSGR_CQE_EVENT) {
			(*others)++;
			*last_other = *c;
		}
		kmsgr_cqe_seen(ti->k);
	}
	kmsgr_submit(ti->k, 0, 0);
}

/* One SEND of @len bytes of data from @ti's session @id, with @flags. */
static int prep_send(struct kt_inst *ti, uint32_t id, uint32_t len,
		     uint8_t flags, uint64_t ud)
{
	struct kmsgr_slice none = { 0 }, data = { 0, len };
	struct kmsgr_sqe *sqe = kmsgr_get_sqe(ti->k);

	if (!sqe)
		return -EBUSY;
	kmsgr_prep_send(sqe, id, 0x42, ud, none, none, data, ud);
	sqe->flags = flags;
	return 0;
}

/* Queue skip-success SENDs from @ti's session @id until @n are queued. */
static void fill_skip(struct kt_inst *ti, uint32_t id, unsigned int *queued,
		      unsigned int n)
{
	while (*queued < n && !prep_send(ti, id, 100,
					 KMSGR_SQE_F_SKIP_SUCCESS, *queued))
		(*queued)++;
}

TEST(skip_success)
{
	unsigned int recvs = 0, a_other = 0, b_other = 0, queued = 0;
	struct kmsgr_cqe a_last, b_last;
	uint64_t end;
	struct kt_inst a, b;
	uint32_t a_id, b_id;
	struct kmsgr_sqe *sqe;
	const char *why = kmsgr_missing(1);

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, kt_inst_open(&a, "a", 64, TX_AREA, RX_POOL, 1));
	/* SQ 8, CQ 16: at most 8 SENDs in flight */
	ASSERT_EQ(0, kt_inst_open_cq(&b, "b", 8, 16, TX_AREA, RX_POOL, 2));
	ASSERT_EQ(0, pair_up(&a, &b, 0, &a_id, &b_id));

	end = kt_now_ms() + 60000;
	while (recvs < 2000 && kt_now_ms() < end) {
		fill_skip(&b, b_id, &queued, 2000);
		kmsgr_submit(b.k, 0, 0);
		drain(&b, &recvs, &b_other, &b_last);
		drain(&a, &recvs, &a_other, &a_last);
	}
	EXPECT_EQ(2000, recvs);
	EXPECT_EQ(0, b_other)
		TH_LOG("a skip-success SEND posted kind %u res %d",
		       b_last.kind, b_last.res);

	/* a SEND that fails still says so; a NOP cannot skip */
	ASSERT_EQ(0, prep_send(&b, 0xfffff, 100, KMSGR_SQE_F_SKIP_SUCCESS,
			       0x77));
	sqe = kmsgr_get_sqe(b.k);
	ASSERT_NE(NULL, sqe);
	sqe->opcode = KMSGR_OP_NOP;
	sqe->flags = KMSGR_SQE_F_SKIP_SUCCESS;
	sqe->user_data = 0x78;
	kmsgr_submit(b.k, 0, 0);
	usleep(100000);
	b_other = 0;
	drain(&b, &recvs, &b_other, &b_last);
	EXPECT_EQ(2, b_other);
	EXPECT_EQ(KMSGR_CQE_OP, b_last.kind);
	EXPECT_EQ(-EINVAL, b_last.res);
	EXPECT_EQ(0x78, b_last.user_data);
	kt_inst_close(&b);
	kt_inst_close(&a);
}

TEST(enter_wakes_for_room)
{
	unsigned int recvs = 0, others = 0, queued = 0, rounds = 0, pending;
	struct kmsgr_cqe last;
	struct kt_inst a, b;
	uint32_t a_id, b_id;
	uint64_t t0, slow = 0;
	pid_t pid;
	int status;
	const char *why = kmsgr_missing(1);

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, kt_inst_open(&a, "a", 64, TX_AREA, RX_POOL, 1));
	/* SQ 32, CQ 8: at most 4 in flight, SQEs always left over */
	ASSERT_EQ(0, kt_inst_open_cq(&b, "b", 32, 8, TX_AREA, RX_POOL, 2));
	ASSERT_EQ(0, pair_up(&a, &b, 0, &a_id, &b_id));

	/* the receiver runs on its own, releasing what arrives */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		while (recvs < 400)
			drain(&a, &recvs, &others, &last);
		_exit(0);
	}
	/*
	 * 400 skip-success SENDs through 4 slots.  While more than 4 wait in
	 * the SQ, each round is one ENTER that submits and waits (5 s
	 * timeout) for a CQE that never comes: it cannot take them all, and
	 * must return when slots come back, not at the timeout.
	 */
	while (rounds < 2000) {
		fill_skip(&b, b_id, &queued, 400);
		pending = kmsgr_sq_pending(b.k);
		if (!pending)
			break;
		if (pending <= 4) {	/* might all go: no wait */
			kmsgr_submit(b.k, 0, 0);
			usleep(1000);
			continue;
		}
		t0 = kt_now_ms();
		kmsgr_submit(b.k, 1, 5000000000ULL);
		if (kt_now_ms() - t0 > slow)
			slow = kt_now_ms() - t0;
		rounds++;
	}
	EXPECT_EQ(400, queued);
	EXPECT_LT(50, rounds) TH_LOG("too few rounds to tell");
	EXPECT_GT(2000, slow) TH_LOG("an ENTER slept %llu ms", (unsigned long long)slow);
	TH_LOG("%u rounds, slowest ENTER %llu ms", rounds,
	       (unsigned long long)slow);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	kt_inst_close(&b);
	kt_inst_close(&a);
}

/* voluntary_ctxt_switches of the calling thread */
static long voluntary_switches(void)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/thread-self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Child: connect to @bound, send 64 messages 5 ms apart, then linger. */
static int trickle(const struct kmsgr_addr *bound)
{
	struct kt_inst c;
	struct kt_loop lp;
	uint32_t id;
	unsigned int i;

	if (kt_inst_open(&c, "trickle", 8, TX_AREA, RX_POOL, 3))
		return 1;
	kt_loop_init(&lp);
	kt_loop_add(&lp, &c);
	if (kt_connect(&c, bound, 0, KT_PEER_ANY, 0xc, &id))
		return 1;
	while (!kt_find_event(&lp, &c, id, KMSGR_EV_UP, 0))
		if (kt_loop_run_once(&lp, 100))
			return 1;
	usleep(500000);
	for (i = 0; i < 64; i++) {
		if (prep_send(&c, id, 100, KMSGR_SQE_F_SKIP_SUCCESS, i))
			return 1;
		kmsgr_submit(c.k, 0, 0);
		usleep(5000);
	}
	usleep(2000000);
	return 0;
}

TEST(threshold_wake)
{
	struct kmsgr_cqe *c, *batch[128];
	struct kmsgr_listen l;
	struct kt_inst a;
	long before, after;
	unsigned int ready = 0, n, i;
	int status;
	pid_t pid;
	const char *why = kmsgr_missing(1);

	if (why)
		SKIP(return, "%s", why);
	/* CQ 128: room for the 64 at once */
	ASSERT_EQ(0, kt_inst_open(&a, "a", 64, TX_AREA, RX_POOL, 1));
	ASSERT_EQ(0, kt_listen(&a, "127.0.0.1", 0, 0xa, &l));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(trickle(&l.bound));
	/* the ACCEPTED and UP events first, out of the way */
	do {
		ASSERT_EQ(0, kmsgr_wait_cqe(a.k, &c, 20000000000ULL));
		ASSERT_EQ(KMSGR_CQE_EVENT, c->kind);
		i = c->event;
		kmsgr_cqe_seen(a.k);
	} while (i != KMSGR_EV_UP);

	before = voluntary_switches();
	ASSERT_LE(0, kmsgr_submit(a.k, 64, 20000000000ULL));
	after = voluntary_switches();
	/* the batch helpers: one look at the tail, one head store */
	n = kmsgr_peek_batch_cqe(a.k, batch, 128);
	for (i = 0; i < n; i++)
		ready += batch[i]->kind == KMSGR_CQE_RECV;
	kmsgr_cq_advance(a.k, n);
	EXPECT_EQ(0, kmsgr_peek_batch_cqe(a.k, batch, 128));
	EXPECT_LE(64, ready) TH_LOG("ENTER returned with %u messages", ready);
	TH_LOG("%ld voluntary context switches for 64 CQEs", after - before);
	EXPECT_GT(16, after - before)
		TH_LOG("the waiter was woken for every CQE");
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	kt_inst_close(&a);
}

TEST_HARNESS_MAIN
