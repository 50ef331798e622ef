/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr - the transport interface.
 *
 * A transport moves the bytes of one msgr2 connection; the session layer
 * (session.c) does not know which one it runs on.  Every operation is
 * non-blocking: an operation that cannot make progress returns -EAGAIN and
 * the transport calls the owner's kick function later, when it can.  Kick
 * functions run in softirq context (or with BHs off), under a spinlock of
 * the transport (TCP: the socket's callback lock, for reading; RDMA: the
 * connection's or the listener's lock), or, once, straight from
 * ops->start() or type->connect() in their caller's context (TCP: a look
 * at what came before the hooks): they must not sleep or call back into
 * the transport, take only irq-safe locks of the owner's (the session
 * layer queues work, or hands the connection to a waiting ENTER under the
 * instance's rx_lock and wakes it), and cannot count on being in an RCU
 * read-side section.
 *
 * Life cycle:
 *
 *   type->connect()   start connecting; kicks when connected or failed
 *   type->listen()    bind and listen; kicks when a connection waits
 *   ops->accept()     take one waiting connection (not started yet)
 *   ops->start()      install the kick function (accepted connections)
 *   ops->state()      0 connected, -EINPROGRESS, or -errno
 *   ops->recv/send()  move bytes (ops->read() instead of recv(), if there)
 *   ops->close()      stop kicks (none runs or starts after it returns),
 *                     close and free
 *
 * The caller serialises all operations on one transport object; only the
 * kick callbacks run concurrently with them.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGR_XPRT_H
#define KMSGR_XPRT_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/module.h>
#include <linux/socket.h>
#include <linux/types.h>

#include "msgr2/port.h"

/* kmsgr_xprt.caps */
#define KMSGR_XPRT_CAP_STREAM	BIT(0)	/* byte stream: msgr2 frames as is */
#define KMSGR_XPRT_CAP_RDMA	BIT(1)	/* over RDMA verbs (kmsgr_rdma.ko) */

/* why a kick happened (a hint; the owner re-checks everything) */
#define KMSGR_XPRT_KICK_RX	BIT(0)	/* readable, or a connection waits */
#define KMSGR_XPRT_KICK_TX	BIT(1)	/* writable again */
#define KMSGR_XPRT_KICK_STATE	BIT(2)	/* connected, closed or failed */

/* most iovec entries one send() takes */
#define KMSGR_XPRT_MAX_IOV	16

typedef void (*kmsgr_xprt_kick_t)(void *priv, unsigned int why);

/*
 * What ops->read() feeds, piece by piece: want() names where the next
 * bytes go (*@buf, at most the count it returns; 0 stops the read: nothing
 * more is wanted now), done() is told that @n bytes were put there (a
 * negative return stops the read after them).  Both run in the caller's
 * context with the transport's receive side locked: of the transport's
 * operations they may call only getname(), which must answer without
 * that lock.
 */
struct kmsgr_xprt_reader {
	ssize_t (*want)(void *arg, void **buf);
	int (*done)(void *arg, size_t n);
};

/*
 * Zero-copy transmit: memory whose pages a transport may hand to the
 * network stack by reference (the instance's buffer area, vmalloc memory).
 * The stack holds page references, so the pages outlive any free; their
 * contents must stay as they are until the bytes can no longer be read by
 * the stack.  The session layer offers this only for lossless sessions,
 * whose SEND completes at the peer's msgr2 ack, and the application keeps
 * a SEND's slices untouched until its CQE.  An honest peer acks only what
 * it has read; a transport that cannot tell an ack of unread bytes (TCP:
 * its socket may still hold the pages) uses it only where the peer is
 * trusted (xprt_tcp.c, kmsgr_tcp_zerocopy).
 */
struct kmsgr_xprt_zc {
	const void *base;
	size_t len;
	size_t min;			/* smallest piece worth it, bytes */
};

struct kmsgr_xprt;
struct net;

/*
 * Transport memory of one owner, an instance (netlink's instance-get):
 * @pinned, bytes kept DMA-mapped for its connections (RDMA: their receive
 * and send buffers); @registered, bytes registered for its peers to read
 * (RDMA: what PULLs offer, until invalidated).  The owner embeds it and
 * hands it to connect() and listen(); the connections a listener accepts
 * charge it too.  Only the transport writes it, from any context, with
 * atomic adds; it stops touching it for good before close() of the
 * connection (or of the listener, for connections accept() has not handed
 * out) returns, taking off first what the connection still holds, so that
 * the owner may go once it has closed every transport object it gave it
 * to.  Anyone may read it, racily.
 */
struct kmsgr_xprt_acct {
	atomic64_t pinned;
	atomic64_t registered;
};

/* A device a transport uses, as netlink's dev-get reports it. */
struct kmsgr_xprt_dev {
	char name[64];
	u32 index;			/* the transport's stable device index */
	u32 ports;			/* its ports: 1 .. @ports */
	u64 ports_down;			/* bit N: port N is down */
	u32 conns;			/* connections on it now */
	u32 parked;			/* closed while their port was down */
	bool dying;			/* being removed */
};

/* Called once per device; a non-zero return stops the walk. */
typedef int (*kmsgr_xprt_dev_fn)(const struct kmsgr_xprt_dev *d, void *arg);

struct kmsgr_xprt_ops {
	/* Install @kick (an accepted connection) and kick once. */
	void (*start)(struct kmsgr_xprt *x, kmsgr_xprt_kick_t kick, void *priv);
	/* Listener: one waiting connection, not started; -EAGAIN if none. */
	int (*accept)(struct kmsgr_xprt *lx, struct kmsgr_xprt **out);
	/* 0 when connected, -EINPROGRESS while connecting, else -errno. */
	int (*state)(struct kmsgr_xprt *x);
	/*
	 * Bytes into @n (<= 2) pieces, in order, as many as are there: the
	 * count, 0 at EOF, -EAGAIN or -errno.
	 */
	ssize_t (*recv)(struct kmsgr_xprt *x, const struct msgr2_iov *iov,
			int n);
	/*
	 * Optional, used instead of recv() when there: hand @r the bytes that
	 * are there, in order, each copied once, from the transport's own
	 * buffers to where want() says, until @r stops or nothing is left.
	 * Returns the bytes taken, 0 at EOF (none taken), -EAGAIN when there
	 * was nothing, or -errno.
	 */
	ssize_t (*read)(struct kmsgr_xprt *x, const struct kmsgr_xprt_reader *r,
			void *arg);
	/*
	 * Send from @n (<= KMSGR_XPRT_MAX_IOV) pieces; they may be vmalloc
	 * memory.  Pieces of at least @zc->min bytes inside @zc's range (if
	 * @zc) may be sent by reference to their pages instead of by copy;
	 * the caller keeps those bytes unchanged until the peer has
	 * acknowledged them at its level (see struct kmsgr_xprt_zc).
	 * @more: the caller sends more right after this (the next frame is
	 * queued), so a partial segment may be held back for it (MSG_MORE);
	 * a burst of sends ends with one without @more, or with push().
	 * Returns the bytes taken (possibly fewer than offered), -EAGAIN or
	 * -errno.
	 */
	ssize_t (*send)(struct kmsgr_xprt *x, const struct msgr2_iov *iov,
			int n, const struct kmsgr_xprt_zc *zc, bool more);
	/*
	 * Optional: send now what send() calls with @more held back (the
	 * burst ended without the send it announced).
	 */
	void (*push)(struct kmsgr_xprt *x);
	/* Local (@peer false) or peer address. */
	int (*getname)(struct kmsgr_xprt *x, struct sockaddr_storage *ss,
		       bool peer);
	/* Stop kicks, close the connection or listener, free @x. */
	void (*close)(struct kmsgr_xprt *x);
	/*
	 * Optional: what the connection is waiting for, one line into @buf
	 * (for the log when a session times out).
	 */
	void (*describe)(struct kmsgr_xprt *x, char *buf, size_t len);
	/*
	 * Optional, for transports that let the peer fetch pieces of the
	 * stream from our memory (RDMA): the peer acknowledged a message
	 * whose last byte was the @end'th byte send() took on this
	 * connection.  When this returns, the peer can no longer read any
	 * piece of the first @end bytes, and the application may reuse
	 * them.  0, or -errno when the connection had to be failed for it
	 * (the peer acknowledged bytes it had not said it had finished
	 * reading).  @acked false: the message was given up instead (an
	 * error completion); pieces still offered are then waited for a
	 * little, then taken back by failing the connection.  Process
	 * context; may sleep.
	 */
	int (*zc_release)(struct kmsgr_xprt *x, u64 end, bool acked);
};

/* A transport object; each transport embeds it in its own state. */
struct kmsgr_xprt {
	const struct kmsgr_xprt_ops *ops;
	u32 caps;			/* KMSGR_XPRT_CAP_* */
};

/*
 * A transport kind (KMSGR_XPRT_* of the uapi), registered with
 * kmsgr_xprt_register() (xprt.c).  Its operations fail a connection whose
 * device went away with -ENODEV (state(), recv(), send()).
 */
struct kmsgr_xprt_type {
	u32 id;
	const char *name;
	struct module *owner;
	/*
	 * Start connecting to @ss from network namespace @net (the caller
	 * holds a reference to it for the life of the connection); @kick
	 * fires when that ends.  The connection's memory is charged to
	 * @acct (see struct kmsgr_xprt_acct).
	 */
	int (*connect)(struct net *net, struct kmsgr_xprt_acct *acct,
		       const struct sockaddr_storage *ss,
		       kmsgr_xprt_kick_t kick, void *priv,
		       struct kmsgr_xprt **out);
	/*
	 * Listen on @ss (port 0: any) in @net (held as for connect); @kick
	 * fires when accept() may work.  Its connections charge @acct.  A
	 * listen that fails has not kicked, and never will.
	 */
	int (*listen)(struct net *net, struct kmsgr_xprt_acct *acct,
		      const struct sockaddr_storage *ss,
		      kmsgr_xprt_kick_t kick, void *priv,
		      struct kmsgr_xprt **out);
	/*
	 * Optional: bytes kept DMA-mapped and registered for peers now, by
	 * every connection (closed ones still being torn down included).
	 */
	void (*mem)(u64 *pinned, u64 *registered);
	/*
	 * Optional: the devices it uses that network namespace @net may
	 * use, @fn called for each under the transport's lock (it may
	 * allocate, not wait for the transport).
	 */
	int (*devices)(struct net *net, kmsgr_xprt_dev_fn fn, void *arg);
};

extern const struct kmsgr_xprt_type kmsgr_xprt_tcp;
void kmsgr_tcp_exit(void);

/* xprt.c */
int kmsgr_xprt_register(const struct kmsgr_xprt_type *t);
void kmsgr_xprt_unregister(const struct kmsgr_xprt_type *t);
const struct kmsgr_xprt_type *kmsgr_xprt_get(u32 id);
void kmsgr_xprt_hold(const struct kmsgr_xprt_type *t);
void kmsgr_xprt_put(const struct kmsgr_xprt_type *t);
u64 kmsgr_xprt_features(void);
void kmsgr_xprt_mem(u64 *pinned, u64 *registered);
/* Every registered transport's devices @net may use: @fn(id, device, arg). */
int kmsgr_xprt_devices(struct net *net,
		       int (*fn)(u32 xprt, const struct kmsgr_xprt_dev *d,
				 void *arg), void *arg);

#endif /* KMSGR_XPRT_H */
