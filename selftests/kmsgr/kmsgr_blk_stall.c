// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr_blk_stall - a client of the example block service ("kmsgrctl blk
 * serve") that stops reading: it sends COUNT READs of BYTES each and never
 * gives back the receive-pool slices of the replies, so that once its
 * small pool is full its kernel stops taking bytes off the connection,
 * the target's reply SENDs stop completing, and the contexts of those
 * requests stay taken (blk_test.sh: the target's other clients must get
 * the rest of its depth).
 *
 *   kmsgr_blk_stall ADDR:PORT COUNT BYTES [write]
 *
 * Prints "stalled: COUNT requests sent" once every SEND completed, then
 * waits for SIGTERM or SIGINT (seen within a second), still giving no
 * reply's slices back; if the session ends first (a target with a reply
 * timeout closes it), it prints "session ended after stalling: EVENT
 * (REASON)" and exits 0 then.  With "write" the requests are WRITEs of
 * BYTES each, all sent at once: a client that floods the target's receive
 * pool, which the target closes; it prints "closed by the target after N
 * of COUNT requests sent" and exits 0 then (1 when that does not come
 * within 30 s).
 * Exit status: 0 after the signal (or that close), 1 on a failure, 2 on a
 * usage error.
 *
 * Copyright (C) 2026 The kmsgr authors
 */
#include <endian.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libkmsgr.h"
#include "blk.h"

#define STALL_POOL	(4U << 20)	/* holds 4 replies of 1 MiB */
#define SEC_NS		1000000000ULL
#define STALL_NS	(30 * SEC_NS)

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/*
 * Wait up to @timeout_ns for a CQE of @k that is not a RECV (those stay
 * unreleased).
 */
static int next_cqe(struct kmsgr *k, struct kmsgr_cqe *out, __u64 timeout_ns)
{
	struct kmsgr_cqe *cqe;
	int ret;

	for (;;) {
		ret = kmsgr_wait_cqe(k, &cqe, timeout_ns);
		if (ret)
			return ret;
		*out = *cqe;
		kmsgr_cqe_seen(k);
		if (out->kind != KMSGR_CQE_RECV)
			return 0;
	}
}

static int stall(const char *addr, unsigned int count, unsigned int bytes,
		 bool write)
{
	struct kmsgr_setup su = { 0 };
	struct kmsgr_connect c = { 0 };
	struct kmsgr_slice none = { 0 }, front;
	/* WRITEs all send the same bytes, after the fronts */
	struct kmsgr_slice data = { .off = 1U << 20, .len = write ? bytes : 0 };
	struct kmsgr_cqe cqe;
	struct kmsgr_sqe *sqe;
	struct blk_req *q;
	struct kmsgr *k;
	unsigned int i, done = 0;
	int ret;

	ret = kmsgr_open(NULL, &k);
	if (ret) {
		fprintf(stderr, "kmsgr_open: %s\n", kmsgr_strerror(ret));
		return 1;
	}
	su.sq_entries = count + 8;
	su.rx_pool_size = STALL_POOL;
	su.buf_size = STALL_POOL + (2U << 20);
	ret = kmsgr_setup(k, &su);
	if (ret || kmsgr_addr_parse(addr, &c.addr)) {
		fprintf(stderr, "setup or address %s: %s\n", addr,
			kmsgr_strerror(ret ? ret : -EINVAL));
		goto fail;
	}
	c.transport = KMSGR_XPRT_TCP;
	c.my_type = 8;			/* a client */
	c.auth = KMSGR_AUTH_NONE;
	strcpy(c.name, "stall");
	ret = kmsgr_connect(k, &c);
	if (!ret)
		ret = next_cqe(k, &cqe, STALL_NS);
	if (!ret && (cqe.kind != KMSGR_CQE_EVENT || cqe.event != KMSGR_EV_UP))
		ret = -ECONNREFUSED;
	if (ret) {
		fprintf(stderr, "connect %s: %s\n", addr, kmsgr_strerror(ret));
		goto fail;
	}
	for (i = 0; i < count; i++) {
		front.off = i * sizeof(*q);
		front.len = sizeof(*q);
		q = (struct blk_req *)((char *)kmsgr_buf(k) + front.off);
		memset(q, 0, sizeof(*q));
		q->op = htole16(write ? BLK_OP_WRITE : BLK_OP_READ);
		q->len = htole32(bytes);
		q->off = htole64((__u64)i * bytes % (32ULL << 20));
		sqe = kmsgr_get_sqe(k);
		if (!sqe) {
			fprintf(stderr, "the SQ is full\n");
			goto fail;
		}
		kmsgr_prep_send(sqe, c.id, BLK_MSG_REQUEST, i + 1, front, none,
				data, i);
	}
	/* a flood waits for its CLOSED even when all of it went out */
	while (write || done < count) {
		ret = next_cqe(k, &cqe, STALL_NS);
		/* a flood's SENDs may fail before its CLOSED comes */
		if (!ret && cqe.kind == KMSGR_CQE_SEND && cqe.res && !write)
			ret = cqe.res;
		if (!ret && write && cqe.kind == KMSGR_CQE_EVENT &&
		    cqe.event == KMSGR_EV_CLOSED) {
			printf("closed by the target after %u of %u requests sent\n",
			       done, count);
			kmsgr_close(k);
			return 0;
		}
		if (!ret && cqe.kind == KMSGR_CQE_EVENT &&
		    cqe.event != KMSGR_EV_UP)
			ret = -ECONNRESET;
		if (ret) {
			fprintf(stderr, "sending: %s\n", kmsgr_strerror(ret));
			goto fail;
		}
		done += cqe.kind == KMSGR_CQE_SEND;
	}
	printf("stalled: %u requests sent\n", count);
	fflush(stdout);
	/* the signal (it interrupts the wait), or the session's end */
	while (!stop) {
		ret = next_cqe(k, &cqe, SEC_NS);
		if (ret == -ETIME || ret == -EINTR)
			continue;
		if (ret) {
			fprintf(stderr, "waiting: %s\n", kmsgr_strerror(ret));
			goto fail;
		}
		if (cqe.kind == KMSGR_CQE_EVENT &&
		    (cqe.event == KMSGR_EV_DOWN || cqe.event == KMSGR_EV_RESET ||
		     cqe.event == KMSGR_EV_CLOSED)) {
			printf("session ended after stalling: %s (%s)\n",
			       kmsgr_event_str(cqe.event),
			       kmsgr_reason_str(cqe.reason));
			break;
		}
	}
	kmsgr_close(k);
	return 0;

fail:
	kmsgr_close(k);
	return 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned long count, bytes;
	char *end1, *end2;

	if (argc != 4 && (argc != 5 || strcmp(argv[4], "write"))) {
		fprintf(stderr, "usage: %s ADDR:PORT COUNT BYTES [write]\n",
			argv[0]);
		return 2;
	}
	count = strtoul(argv[2], &end1, 0);
	bytes = strtoul(argv[3], &end2, 0);
	if (*end1 || *end2 || !count || count > 1024 || !bytes ||
	    bytes > (1UL << 20)) {
		fprintf(stderr, "%s: COUNT 1 to 1024, BYTES 1 to 1M\n", argv[0]);
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	return stall(argv[1], (unsigned int)count, (unsigned int)bytes,
		     argc == 5);
}
