// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - connection I/O: the glue that moves bytes between a msgr2
 * connection (the engine, msgr2/) and its transport (xprt.h).
 *
 * Send: the engine's queued frames, as iovecs over its own buffers and the
 * SQEs' buffer-area slices, go to the transport in rounds
 * (kmsgr_conn_flush()).  Receive (kmsgr_conn_rx_round()): a transport
 * with ops->read() feeds the engine every frame piece that is there in
 * one pass, each copied once from the transport's buffers to the place
 * the engine names (a receive-pool slice for payloads); with ops->recv()
 * what the engine wants next is read straight into that place, with a
 * small read-ahead stage behind short wants so that consecutive frame
 * pieces come in one read.
 *
 * Below the sessions (session.c): it calls only the engine and the
 * transport.  The engine's callbacks, which msgr2_rx_done() and
 * msgr2_tx_done() run, are the session's (its struct msgr2_ops).  The
 * caller holds the owning session's lock.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <linux/jiffies.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "kmsgr.h"
#include "session.h"

/* send calls per flush */
#define KMSGR_CONN_TX_ROUNDS	64

struct kmsgr_conn *kmsgr_conn_alloc(struct kmsgr_sess *s)
{
	struct kmsgr_conn *kc;

	kc = kzalloc(sizeof(*kc), GFP_KERNEL_ACCOUNT);
	if (!kc)
		return NULL;
	kc->mc = kvzalloc(msgr2_conn_size(), GFP_KERNEL_ACCOUNT);
	if (!kc->mc) {
		kfree(kc);
		return NULL;
	}
	kc->sess = s;
	return kc;
}

/* Close the transport (no kick after this), then release the engine. */
void kmsgr_conn_free(struct kmsgr_conn *kc)
{
	if (kc->xprt)
		kc->xprt->ops->close(kc->xprt);
	kc->xprt = NULL;	/* the engine's last tx_done()s must not see it */
	/* nothing writes into what the failure left now */
	if (kc->doomed_inst)
		kmsgr_pool_free_msg(kc->doomed_inst, kc->doomed, MSGR2_NSEG);
	kvfree(kc->doomed_spill);
	if (kc->engine)
		msgr2_conn_release(kc->mc);
	kvfree(kc->mc);
	kfree(kc->stage);
	kfree(kc);
}

/**
 * kmsgr_conn_flush() - send what the engine has queued
 * @kc: the connection
 * @zc: memory whose pieces may go by page reference, or NULL (see struct
 *      kmsgr_xprt_zc: only where a SEND completes at the peer's ack)
 *
 * Return: 0 when all is sent, 1 when the transport is full (write space
 * will kick), 2 when the round budget ran out, or a -errno: the
 * transport's when the connection is gone, else the engine's.
 */
int kmsgr_conn_flush(struct kmsgr_conn *kc, const struct kmsgr_xprt_zc *zc)
{
	const struct kmsgr_xprt_ops *ops = kc->xprt->ops;
	struct msgr2_iov iov[KMSGR_XPRT_MAX_IOV];
	bool more, held = false;
	ssize_t sent;
	int i, n, ret;

	for (i = 0; i < KMSGR_CONN_TX_ROUNDS; i++) {
		n = msgr2_tx_iov(kc->mc, iov, ARRAY_SIZE(iov));
		if (n <= 0) {
			ret = n;
			goto out;
		}
		/*
		 * Frames queued behind these: let the transport fill whole
		 * segments with them (one packet for many small messages,
		 * not one each).  The last round never holds back.
		 */
		more = i + 1 < KMSGR_CONN_TX_ROUNDS &&
		       (msgr2_tx_more(kc->mc, n) ||
			kmsgr_fault_set(KMSGR_FAULT_TX_MORE));
		sent = ops->send(kc->xprt, iov, n, zc, more);
		if (sent == -EAGAIN) {
			ret = 1;
			goto out;
		}
		if (sent < 0) {
			/*
			 * The connection is gone: the transport's errno, as
			 * on receive, unless the engine had failed first.
			 */
			ret = msgr2_rx_eof(kc->mc);
			if (msgr2_conn_reason(kc->mc) == MSGR2_R_EOF)
				return (int)sent;
			return ret < 0 ? ret : (int)sent;
		}
		held = more;
		ret = msgr2_tx_done(kc->mc, sent);
		if (ret < 0)
			return ret;
	}
	return 2;
out:
	/* what was announced did not come (or does not fit now) */
	if (held && ops->push)
		ops->push(kc->xprt);
	return ret;
}

/*
 * Up to @len bytes for the engine's @buf: from the stage while it holds
 * some, else one read into @buf with the stage behind it, so that the
 * frame pieces that follow a short want (a preamble, a header) arrive in
 * the same call instead of one read each.  Large payloads still land in
 * their receive-pool slices directly.  The stage is allocated at the
 * first read: a transport with ops->read() never needs it.
 */
static ssize_t kmsgr_conn_recv(struct kmsgr_conn *kc, void *buf, size_t len)
{
	size_t avail = kc->stage_len - kc->stage_pos;
	struct msgr2_iov iov[2];
	ssize_t got;

	if (!kc->stage) {
		kc->stage = kmalloc(KMSGR_CONN_STAGE, GFP_KERNEL_ACCOUNT);
		if (!kc->stage)
			return -ENOMEM;
	}
	iov[0] = (struct msgr2_iov){ .base = buf, .len = len };
	iov[1] = (struct msgr2_iov){ .base = kc->stage,
				     .len = KMSGR_CONN_STAGE };
	if (avail) {
		got = min(len, avail);
		memcpy(buf, kc->stage + kc->stage_pos, got);
		kc->stage_pos += got;
		return got;
	}
	got = kc->xprt->ops->recv(kc->xprt, iov, ARRAY_SIZE(iov));
	if (got > (ssize_t)len) {
		kc->stage_pos = 0;
		kc->stage_len = got - len;
		got = len;
	}
	return got;
}

/* Most frame pieces one transport read() hands the engine. */
#define KMSGR_CONN_READ_PIECES	16

/* A read() in progress (struct kmsgr_xprt_reader's arg). */
struct kmsgr_conn_rd {
	struct kmsgr_conn *kc;
	unsigned int pieces;
	int want_err;		/* msgr2_rx_want()'s, if it failed */
	int err;		/* the last msgr2_rx_done()'s */
};

static ssize_t kmsgr_conn_rd_want(void *arg, void **buf)
{
	struct kmsgr_conn_rd *rd = arg;
	ssize_t n;

	/* a resumed session moves its connection first (kmsgr_conn_settle) */
	if (rd->err < 0 || rd->kc->adopt ||
	    rd->pieces >= KMSGR_CONN_READ_PIECES)
		return 0;
	n = msgr2_rx_want(rd->kc->mc, buf);
	if (n < 0)
		rd->want_err = n;
	return max_t(ssize_t, n, 0);
}

static int kmsgr_conn_rd_done(void *arg, size_t n)
{
	struct kmsgr_conn_rd *rd = arg;

	rd->pieces++;
	rd->err = msgr2_rx_done(rd->kc->mc, n);
	return rd->err;
}

static const struct kmsgr_xprt_reader kmsgr_conn_reader = {
	.want	= kmsgr_conn_rd_want,
	.done	= kmsgr_conn_rd_done,
};

/**
 * kmsgr_conn_rx_round() - one receive round
 * @kc:  the connection
 * @err: out: 0, or the -errno of the round (see below)
 *
 * Asks the engine what it wants next (msgr2_rx_want()), reads it from the
 * transport (kmsgr_conn_recv()) and hands it back (msgr2_rx_done(), which
 * runs the engine's callbacks).
 *
 * Return: KMSGR_RX_DONE after msgr2_rx_done() (*@err its result);
 * KMSGR_RX_IDLE when the engine wants nothing or the transport has nothing
 * now; KMSGR_RX_FAIL when the connection failed before that: *@err is the
 * -errno, or 0 for an orderly end of stream from the peer.
 */
int kmsgr_conn_rx_round(struct kmsgr_conn *kc, int *err)
{
	ssize_t n, got;
	void *buf;

	*err = 0;
	n = msgr2_rx_want(kc->mc, &buf);
	if (n < 0) {
		*err = n;
		return KMSGR_RX_FAIL;
	}
	if (!n)
		return KMSGR_RX_IDLE;
	if (kc->xprt->ops->read && kc->stage_pos == kc->stage_len) {
		struct kmsgr_conn_rd rd = { .kc = kc };

		got = kc->xprt->ops->read(kc->xprt, &kmsgr_conn_reader, &rd);
		if (got == -EAGAIN)
			return KMSGR_RX_IDLE;
		if (got > 0) {
			kc->rx_at = jiffies;
			if (rd.want_err) {
				*err = rd.want_err;
				return KMSGR_RX_FAIL;
			}
			*err = rd.err;
			return KMSGR_RX_DONE;
		}
	} else {
		got = kmsgr_conn_recv(kc, buf, n);
		if (got == -EAGAIN)
			return KMSGR_RX_IDLE;
	}
	if (got <= 0) {
		*err = msgr2_rx_eof(kc->mc);
		/*
		 * The peer closed: an orderly FIN is no error (res 0, reason
		 * EOF); a reset keeps its errno.
		 */
		if (!got && msgr2_conn_reason(kc->mc) == MSGR2_R_EOF)
			*err = 0;
		else if (got < 0)
			*err = (int)got;
		return KMSGR_RX_FAIL;
	}
	kc->rx_at = jiffies;
	*err = msgr2_rx_done(kc->mc, got);
	return KMSGR_RX_DONE;
}
