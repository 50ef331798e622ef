// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - TCP transport: non-blocking kernel sockets in the network
 * namespace of the instance (the opener's, held by the instance).
 *
 * The socket callbacks (sk_data_ready, sk_write_space, sk_state_change)
 * are replaced under sk_callback_lock by hooks that only kick the owner,
 * which queues work; the originals are put back before the socket is
 * released.  Received bytes are read with one tcp_read_sock() pass per
 * read (ops->read): its actor copies each frame piece from the skbs
 * straight to where the engine wants it (a receive-pool slice for a
 * payload); kernel_recvmsg() (ops->recv) stays for callers without a
 * reader.  Sends use kernel_sendmsg() on kvecs that point straight at the
 * caller's buffers (buffer-area memory is vmalloc memory, which kvec
 * iterators handle), MSG_DONTWAIT | MSG_NOSIGNAL; large buffer-area
 * pieces the session offers for zero copy go out with kernel_sendpage()
 * of their vmalloc pages (struct kmsgr_xprt_zc).
 *
 * A listening socket only hooks sk_data_ready.  Accepted sockets are
 * clones of the listener and inherit that hook (and its sk_user_data): the
 * hook ignores any socket that is not listening, and accept() gives the
 * clone the listener's original sk_data_ready back at once.
 * Nothing is DMA-mapped or registered here: the owner's struct
 * kmsgr_xprt_acct stays untouched.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/llist.h>
#include <linux/mm.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/uio.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/sock.h>
#include <net/tcp.h>

#include <linux/kmsgr.h>

#include "kmsgr.h"
#include "xprt.h"

#define KMSGR_TCP_BACKLOG	128

struct kmsgr_tcp {
	struct kmsgr_xprt x;
	struct socket *sock;
	bool started;			/* our callbacks are installed */
	kmsgr_xprt_kick_t kick;
	void *priv;
	/* the socket's own callbacks, restored by close() */
	void (*orig_data_ready)(struct sock *sk);
	void (*orig_write_space)(struct sock *sk);
	void (*orig_state_change)(struct sock *sk);
	/*
	 * Both names, kept before the first read (kmsgr_tcp_keep_names()):
	 * [0] local, [1] peer.  @reading: inside kmsgr_tcp_read(), under
	 * the socket lock.
	 */
	struct sockaddr_storage names[2];
	bool named;
	bool reading;
	bool zc_sent;			/* pages went by reference */
	/*
	 * A send error that came after part of a send had gone (which
	 * returned that part): the socket's own sk_err was consumed by
	 * the failing call, so every later operation returns this one
	 * (a reset stays a reset, not an EOF or an EPIPE).
	 */
	int err;
	struct llist_node closing;	/* on kmsgr_tcp_closing */
};

/*
 * Connections being closed.  kmsgr_tcp_close() unhooks a connection at
 * once (no kick after it returns) and leaves its shutdown and release,
 * which take the socket lock, to kmsgr_tcp_close_work: its callers may
 * hold a session lock that a receive pass takes under another socket's
 * lock (a session resumed from inside a read, kmsgr_conn_settle()), and
 * lockdep would see that as a cycle.  Listeners close in place.
 */
static LLIST_HEAD(kmsgr_tcp_closing);
static void kmsgr_tcp_close_work(struct work_struct *work);
static DECLARE_WORK(kmsgr_tcp_close_wk, kmsgr_tcp_close_work);

static const struct kmsgr_xprt_ops kmsgr_tcp_ops;
static const struct kmsgr_xprt_ops kmsgr_tcp_listen_ops;

static struct kmsgr_tcp *to_tcp(struct kmsgr_xprt *x)
{
	return container_of(x, struct kmsgr_tcp, x);
}

/* ---- socket callbacks (softirq): kick the owner, nothing else ---- */

static void kmsgr_tcp_kick(struct sock *sk, unsigned int why)
{
	struct kmsgr_tcp *t;

	read_lock_bh(&sk->sk_callback_lock);
	t = sk->sk_user_data;
	if (t)
		t->kick(t->priv, why);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void kmsgr_tcp_data_ready(struct sock *sk)
{
	kmsgr_tcp_kick(sk, KMSGR_XPRT_KICK_RX);
}

static void kmsgr_tcp_write_space(struct sock *sk)
{
	struct kmsgr_tcp *t;

	read_lock_bh(&sk->sk_callback_lock);
	t = sk->sk_user_data;
	if (t && sk_stream_is_writeable(sk)) {
		/* no more write_space calls until the next -EAGAIN */
		if (sk->sk_socket)
			clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		t->kick(t->priv, KMSGR_XPRT_KICK_TX);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

static void kmsgr_tcp_state_change(struct sock *sk)
{
	kmsgr_tcp_kick(sk, KMSGR_XPRT_KICK_STATE);
}

/*
 * Listening sockets.  Sockets accepted from it start as clones carrying
 * this hook and the listener's sk_user_data: look at the latter only while
 * the socket is really listening.
 */
static void kmsgr_tcp_listen_data_ready(struct sock *sk)
{
	struct kmsgr_tcp *t;

	read_lock_bh(&sk->sk_callback_lock);
	if (sk->sk_state == TCP_LISTEN) {
		t = sk->sk_user_data;
		if (t)
			t->kick(t->priv, KMSGR_XPRT_KICK_RX);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

/* ---- helpers ---- */

static int kmsgr_tcp_sa_len(const struct sockaddr_storage *ss)
{
	switch (ss->ss_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return -EAFNOSUPPORT;
	}
}

static struct kmsgr_tcp *kmsgr_tcp_alloc(struct socket *sock,
					 const struct kmsgr_xprt_ops *ops)
{
	struct kmsgr_tcp *t;

	t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
	if (!t)
		return NULL;
	t->x.ops = ops;
	t->x.caps = KMSGR_XPRT_CAP_STREAM;
	t->sock = sock;
	return t;
}

static int kmsgr_tcp_create(struct net *net, int family,
			    struct socket **sockp)
{
	struct socket *sock;
	int ret;

	ret = sock_create_kern(net, family, SOCK_STREAM, IPPROTO_TCP, &sock);
	if (ret)
		return ret;
	/*
	 * A kernel socket holds no reference on its namespace, and TCP then
	 * stops an orphan's timers at close (no retransmission of what is
	 * still queued, of the FIN), while a late ACK could arm them again
	 * after the namespace is gone.  Hold it as user sockets do; accepted
	 * sockets inherit it from the listener.
	 */
	kmsgr_sk_hold_net(sock->sk);
	/* work items call in from any task: no memory-allocation surprises */
	sock->sk->sk_allocation = GFP_KERNEL;
	*sockp = sock;
	return 0;
}

/*
 * A connection's options: no Nagle (frames are written whole).  No
 * TCP_USER_TIMEOUT: it would also abort a connection whose peer answers
 * every window probe but keeps its window 0 that long (tcp_probe_timer()),
 * as a paused kmsgr session or a throttled Ceph daemon does.  A dead peer
 * is msgr2's silence (keepalive_timeout, session.c); a dial that gets no
 * answer, the handshake timeout.
 */
static void kmsgr_tcp_conn_opts(struct sock *sk)
{
	tcp_sock_set_nodelay(sk);
}

/* Hook the callbacks; @data_ready is the original one to restore later. */
static void kmsgr_tcp_hook(struct kmsgr_tcp *t, kmsgr_xprt_kick_t kick,
			   void *priv, bool listener)
{
	struct sock *sk = t->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	t->kick = kick;
	t->priv = priv;
	if (!t->orig_data_ready)
		t->orig_data_ready = sk->sk_data_ready;
	t->orig_write_space = sk->sk_write_space;
	t->orig_state_change = sk->sk_state_change;
	sk->sk_user_data = t;
	if (listener) {
		sk->sk_data_ready = kmsgr_tcp_listen_data_ready;
	} else {
		sk->sk_data_ready = kmsgr_tcp_data_ready;
		sk->sk_write_space = kmsgr_tcp_write_space;
		sk->sk_state_change = kmsgr_tcp_state_change;
	}
	t->started = true;
	write_unlock_bh(&sk->sk_callback_lock);
}

/* After this returns no hook runs or will run with @t. */
static void kmsgr_tcp_unhook(struct kmsgr_tcp *t)
{
	struct sock *sk = t->sock->sk;

	if (!t->started)
		return;
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = t->orig_data_ready;
	sk->sk_write_space = t->orig_write_space;
	sk->sk_state_change = t->orig_state_change;
	t->started = false;
	write_unlock_bh(&sk->sk_callback_lock);
}

/* ---- connections ---- */

static void kmsgr_tcp_start(struct kmsgr_xprt *x, kmsgr_xprt_kick_t kick,
			    void *priv)
{
	struct kmsgr_tcp *t = to_tcp(x);

	kmsgr_tcp_hook(t, kick, priv, false);
	/* bytes may have arrived before the hooks: look once */
	kick(priv, KMSGR_XPRT_KICK_RX | KMSGR_XPRT_KICK_TX);
}

static int kmsgr_tcp_state(struct kmsgr_xprt *x)
{
	struct kmsgr_tcp *t = to_tcp(x);
	struct sock *sk = t->sock->sk;
	int err;

	if (t->err)
		return t->err;
	switch (READ_ONCE(sk->sk_state)) {
	case TCP_ESTABLISHED:
	case TCP_CLOSE_WAIT:
		return 0;
	case TCP_SYN_SENT:
	case TCP_SYN_RECV:
		return -EINPROGRESS;
	default:
		err = sock_error(sk);
		return err ? err : -ENOTCONN;
	}
}

/*
 * Nothing to read on an established socket: its receive queue and backlog
 * are empty, and no error or FIN is there.  Data that arrives after this
 * look calls sk_data_ready, which kicks the owner again, exactly as after
 * an -EAGAIN from tcp_recvmsg(); only the lock_sock() round of that call,
 * once per message that ends a read, is saved.
 */
static bool kmsgr_tcp_rx_empty(const struct sock *sk)
{
	return READ_ONCE(sk->sk_state) == TCP_ESTABLISHED &&
	       skb_queue_empty_lockless(&sk->sk_receive_queue) &&
	       !READ_ONCE(sk->sk_backlog.tail) && !READ_ONCE(sk->sk_err) &&
	       !(READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN);
}

static ssize_t kmsgr_tcp_recv(struct kmsgr_xprt *x,
			      const struct msgr2_iov *iov, int n)
{
	struct kmsgr_tcp *t = to_tcp(x);
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct kvec kv[2];
	size_t total = 0;
	int i;

	if (n <= 0 || n > (int)ARRAY_SIZE(kv))
		return -EINVAL;
	if (t->err)
		return t->err;
	if (kmsgr_tcp_rx_empty(t->sock->sk))
		return -EAGAIN;
	for (i = 0; i < n; i++) {
		kv[i].iov_base = iov[i].base;
		kv[i].iov_len = iov[i].len;
		total += iov[i].len;
	}
	return kernel_recvmsg(t->sock, &msg, kv, n, total, msg.msg_flags);
}

/* A read in progress: the reader it feeds (tcp_read_sock()'s arg). */
struct kmsgr_tcp_rd {
	const struct kmsgr_xprt_reader *r;
	void *arg;
	int err;
};

/*
 * tcp_read_sock() actor: copy out of @skb, from @off, what the reader
 * wants, piece by piece; how much it took.  Once the reader stops,
 * desc->count is 0 and every later call takes nothing, which ends the
 * read (tcp_read_sock() calls again for the rest of a partly taken skb).
 */
static int kmsgr_tcp_actor(read_descriptor_t *desc, struct sk_buff *skb,
			   unsigned int off, size_t len)
{
	struct kmsgr_tcp_rd *rd = desc->arg.data;
	size_t taken = 0;
	ssize_t want;
	void *buf;

	while (desc->count && taken < len) {
		want = rd->r->want(rd->arg, &buf);
		if (want <= 0) {
			desc->count = 0;
			break;
		}
		want = min_t(size_t, want, len - taken);
		if (skb_copy_bits(skb, off + taken, buf, want)) {
			rd->err = -EFAULT;	/* not for a valid skb range */
			desc->count = 0;
			break;
		}
		taken += want;
		if (rd->r->done(rd->arg, want) < 0)
			desc->count = 0;
	}
	return taken;
}

/*
 * The socket's own or its peer's name.  An IPv4 peer of an IPv6 socket
 * (a listener on "::" without IPV6_V6ONLY) is named as IPv4: an address
 * as the peer dialled it and sees it (msgr2 compares the addresses a
 * client dialled and a server names, and Ceph's do too), never as
 * ::ffff:a.b.c.d.
 */
static int kmsgr_tcp_name(struct socket *sock, struct sockaddr_storage *ss,
			  bool peer)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	__be32 a;
	__be16 port;
	int ret;

	memset(ss, 0, sizeof(*ss));
	if (peer)
		ret = kernel_getpeername(sock, (struct sockaddr *)ss);
	else
		ret = kernel_getsockname(sock, (struct sockaddr *)ss);
	if (ret < 0)
		return ret;
	if (ss->ss_family == AF_INET6 &&
	    ipv6_addr_v4mapped(&sin6->sin6_addr)) {
		a = sin6->sin6_addr.s6_addr32[3];
		port = sin6->sin6_port;
		memset(ss, 0, sizeof(*ss));
		sin->sin_family = AF_INET;
		sin->sin_port = port;
		sin->sin_addr.s_addr = a;
	}
	return 0;
}

/*
 * Keep both names: the engine's callbacks run under the socket lock
 * during a read and may ask for them (a session's netlink snapshot when
 * it is announced), while inet_getname() takes that lock.  A connected
 * socket's names do not change.
 */
static void kmsgr_tcp_keep_names(struct kmsgr_tcp *t)
{
	struct sockaddr_storage n[2];

	if (kmsgr_tcp_name(t->sock, &n[0], false) ||
	    kmsgr_tcp_name(t->sock, &n[1], true))
		return;
	memcpy(t->names, n, sizeof(n));
	t->named = true;
}

/*
 * One tcp_read_sock() pass under the socket lock: every frame piece that
 * is there goes from the socket's skbs straight to where the engine wants
 * it (a receive-pool slice for a payload), with no stage in between and
 * one socket lock round for all of them.
 */
static ssize_t kmsgr_tcp_read(struct kmsgr_xprt *x,
			      const struct kmsgr_xprt_reader *r, void *arg)
{
	struct kmsgr_tcp *t = to_tcp(x);
	struct socket *sock = t->sock;
	struct sock *sk = sock->sk;
	struct kmsgr_tcp_rd rd = { .r = r, .arg = arg };
	read_descriptor_t desc = { .arg.data = &rd, .count = 1 };
	int ret;

	if (t->err)
		return t->err;
	if (kmsgr_tcp_rx_empty(sk))
		return -EAGAIN;
	if (!t->named)
		kmsgr_tcp_keep_names(t);
	lock_sock(sk);
	t->reading = true;
	ret = sock->ops->read_sock(sk, &desc, kmsgr_tcp_actor);
	if (ret)
		goto out;
	if (rd.err) {
		ret = rd.err;
		goto out;
	}
	/*
	 * tcp_read_sock() stops at urgent data and never passes it: msgr2
	 * has none, and the connection would wait there for good.
	 */
	if (READ_ONCE(tcp_sk(sk)->urg_data) &&
	    tcp_sk(sk)->urg_seq == tcp_sk(sk)->copied_seq) {
		ret = -EPROTO;
		goto out;
	}
	ret = sock_error(sk);
	if (!ret && !(sk->sk_shutdown & RCV_SHUTDOWN))
		ret = -EAGAIN;		/* else 0: the peer's FIN, read */
out:
	t->reading = false;
	release_sock(sk);
	return ret;
}

/*
 * Whether @iov goes by reference (struct kmsgr_xprt_zc): only with
 * kmsgr_tcp_zerocopy (trusted peers, params.c).
 */
static bool kmsgr_tcp_zc(const struct kmsgr_xprt_zc *zc,
			 const struct msgr2_iov *iov)
{
	const u8 *p = iov->base, *base = zc ? zc->base : NULL;

	return zc && READ_ONCE(kmsgr_tcp_zerocopy) && iov->len >= zc->min &&
	       p >= base &&
	       iov->len <= zc->len && p - base <= zc->len - iov->len;
}

/* Copy @n pieces into the socket; MSG_MORE when @more pieces follow. */
static ssize_t kmsgr_tcp_send_copy(struct kmsgr_tcp *t,
				   const struct msgr2_iov *iov, int n,
				   bool more)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct kvec kv[KMSGR_XPRT_MAX_IOV];
	size_t total = 0;
	int i;

	for (i = 0; i < n; i++) {
		kv[i].iov_base = iov[i].base;
		kv[i].iov_len = iov[i].len;
		total += iov[i].len;
	}
	if (more)
		msg.msg_flags |= MSG_MORE;
	return kernel_sendmsg(t->sock, &msg, kv, n, total);
}

/*
 * A send that made progress and then failed with @err returns @done; a
 * real error (not -EAGAIN) is kept for the next operation (t->err).
 */
static ssize_t kmsgr_tcp_keep_err(struct kmsgr_tcp *t, ssize_t done, int err)
{
	if (err != -EAGAIN)
		t->err = err;
	return done;
}

/* Hand the vmalloc pages under @iov to the socket, page by page. */
static ssize_t kmsgr_tcp_send_pages(struct kmsgr_tcp *t,
				    const struct msgr2_iov *iov, bool more)
{
	const u8 *p = iov->base;
	size_t left = iov->len, done = 0, len, off;
	int flags, ret;

	while (left) {
		off = offset_in_page(p);
		len = min_t(size_t, left, PAGE_SIZE - off);
		flags = MSG_DONTWAIT | MSG_NOSIGNAL;
		if (len < left)
			flags |= MSG_SENDPAGE_NOTLAST | MSG_MORE;
		else if (more)
			flags |= MSG_MORE;
		ret = kernel_sendpage(t->sock, vmalloc_to_page(p), off, len,
				      flags);
		if (ret < 0)
			return done ? kmsgr_tcp_keep_err(t, done, ret) : ret;
		t->zc_sent = true;
		done += ret;
		if (ret < len)
			break;
		p += len;
		left -= len;
	}
	return done;
}

static ssize_t kmsgr_tcp_send(struct kmsgr_xprt *x,
			      const struct msgr2_iov *iov, int n,
			      const struct kmsgr_xprt_zc *zc, bool more)
{
	struct kmsgr_tcp *t = to_tcp(x);
	ssize_t done = 0, ret;
	size_t want;
	int i = 0, j;

	if (n <= 0 || n > KMSGR_XPRT_MAX_IOV)
		return -EINVAL;
	if (t->err)
		return t->err;
	/* runs of copied pieces, and pieces sent by reference, in order */
	while (i < n) {
		/* test builds: the peer's reset between two socket calls */
		if (done && kmsgr_fault_take(KMSGR_FAULT_TX_RESET))
			tcp_abort(t->sock->sk, ECONNRESET);
		if (kmsgr_tcp_zc(zc, &iov[i])) {
			want = iov[i].len;
			ret = kmsgr_tcp_send_pages(t, &iov[i],
						   more || i + 1 < n);
			j = i + 1;
		} else {
			want = 0;
			for (j = i; j < n && !kmsgr_tcp_zc(zc, &iov[j]); j++)
				want += iov[j].len;
			ret = kmsgr_tcp_send_copy(t, &iov[i], j - i,
						  more || j < n);
		}
		if (ret < 0)
			return done ? kmsgr_tcp_keep_err(t, done, ret) : ret;
		done += ret;
		if (ret < want)
			break;
		i = j;
	}
	return done;
}

/* send what MSG_MORE held back (TCP_NODELAY is on: this pushes it) */
static void kmsgr_tcp_push(struct kmsgr_xprt *x)
{
	tcp_sock_set_cork(to_tcp(x)->sock->sk, false);
}

static int kmsgr_tcp_getname(struct kmsgr_xprt *x,
			     struct sockaddr_storage *ss, bool peer)
{
	struct kmsgr_tcp *t = to_tcp(x);

	if (t->named) {
		*ss = t->names[peer];
		return 0;
	}
	if (t->reading) {	/* its lock is ours: never taken twice */
		memset(ss, 0, sizeof(*ss));
		return -ENOTCONN;
	}
	return kmsgr_tcp_name(t->sock, ss, peer);
}

/* tcp_read_sock() actor of a closing socket: every byte read, dropped. */
static int kmsgr_tcp_discard(read_descriptor_t *desc, struct sk_buff *skb,
			     unsigned int off, size_t len)
{
	return len;
}

/*
 * Read and drop what the peer sent and we never read (a session paused
 * for pool or CQ room, bytes that came after the last read): tcp_close()
 * answers unread bytes with a reset, which drops what is still queued for
 * the peer and tells it ECONNRESET instead of an orderly end.
 */
static void kmsgr_tcp_drain(struct sock *sk)
{
	read_descriptor_t desc = { .count = 1 };

	lock_sock(sk);
	tcp_read_sock(sk, &desc, kmsgr_tcp_discard);
	release_sock(sk);
}

static void kmsgr_tcp_close_work(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&kmsgr_tcp_closing);
	struct kmsgr_tcp *t, *next;

	llist_for_each_entry_safe(t, next, list, closing) {
		/*
		 * An orderly FIN for the peer (sock_release() alone may
		 * reset: kmsgr_tcp_drain()), after what is still queued.
		 * Unless pages went by reference: their SENDs have completed
		 * (or failed at the session's end), and the application may
		 * be filling those slices again.  Reset the connection then, which drops what
		 * is queued instead of sending those pages on.  Until this
		 * runs the socket may still send them: a payload changed
		 * since it was summed fails the peer's crc check, and the
		 * peer is trusted (kmsgr_tcp_zerocopy, kmsgr(4)).
		 */
		if (t->zc_sent) {
			sock_no_linger(t->sock->sk);
		} else {
			kmsgr_tcp_drain(t->sock->sk);
			kernel_sock_shutdown(t->sock, SHUT_RDWR);
		}
		sock_release(t->sock);
		kfree(t);
	}
}

static void kmsgr_tcp_close(struct kmsgr_xprt *x)
{
	struct kmsgr_tcp *t = to_tcp(x);

	kmsgr_tcp_unhook(t);
	if (t->x.ops == &kmsgr_tcp_ops) {
		if (llist_add(&t->closing, &kmsgr_tcp_closing))
			schedule_work(&kmsgr_tcp_close_wk);
		return;
	}
	sock_release(t->sock);
	kfree(t);
}

/* Module exit: the connections closed last are released. */
void kmsgr_tcp_exit(void)
{
	flush_work(&kmsgr_tcp_close_wk);
}

static int kmsgr_tcp_connect(struct net *net, struct kmsgr_xprt_acct *acct,
			     const struct sockaddr_storage *ss,
			     kmsgr_xprt_kick_t kick, void *priv,
			     struct kmsgr_xprt **out)
{
	struct socket *sock;
	struct kmsgr_tcp *t;
	int len, ret;

	len = kmsgr_tcp_sa_len(ss);
	if (len < 0)
		return len;
	ret = kmsgr_tcp_create(net, ss->ss_family, &sock);
	if (ret)
		return ret;
	kmsgr_tcp_conn_opts(sock->sk);
	t = kmsgr_tcp_alloc(sock, &kmsgr_tcp_ops);
	if (!t) {
		ret = -ENOMEM;
		goto out_release;
	}
	kmsgr_tcp_hook(t, kick, priv, false);
	ret = kernel_connect(sock, (struct sockaddr *)ss, len, O_NONBLOCK);
	if (ret && ret != -EINPROGRESS)
		goto out_unhook;
	/* connected at once (or state already known): look now */
	kick(priv, KMSGR_XPRT_KICK_STATE);
	*out = &t->x;
	return 0;

out_unhook:
	kmsgr_tcp_unhook(t);
	kfree(t);
out_release:
	sock_release(sock);
	return ret;
}

static const struct kmsgr_xprt_ops kmsgr_tcp_ops = {
	.start		= kmsgr_tcp_start,
	.state		= kmsgr_tcp_state,
	.recv		= kmsgr_tcp_recv,
	.read		= kmsgr_tcp_read,
	.send		= kmsgr_tcp_send,
	.push		= kmsgr_tcp_push,
	.getname	= kmsgr_tcp_getname,
	.close		= kmsgr_tcp_close,
};

/* ---- listeners ---- */

static int kmsgr_tcp_accept(struct kmsgr_xprt *lx, struct kmsgr_xprt **out)
{
	struct kmsgr_tcp *l = to_tcp(lx);
	struct socket *sock;
	struct kmsgr_tcp *t;
	int ret;

	ret = kernel_accept(l->sock, &sock, O_NONBLOCK);
	if (ret)
		return ret;
	/*
	 * The clone carries our listen hook and the listener's user data:
	 * give it the listener's original callback back at once, until
	 * start() hooks it (which looks once for bytes that came meanwhile),
	 * so that a socket closed before then (below, too) keeps nothing of
	 * ours.
	 */
	write_lock_bh(&sock->sk->sk_callback_lock);
	sock->sk->sk_user_data = NULL;
	sock->sk->sk_data_ready = l->orig_data_ready;
	write_unlock_bh(&sock->sk->sk_callback_lock);
	kmsgr_tcp_conn_opts(sock->sk);
	sock->sk->sk_allocation = GFP_KERNEL;
	t = kmsgr_tcp_alloc(sock, &kmsgr_tcp_ops);
	if (!t) {
		sock_release(sock);
		return -ENOMEM;
	}
	t->orig_data_ready = l->orig_data_ready;
	*out = &t->x;
	return 0;
}

static int kmsgr_tcp_listen(struct net *net, struct kmsgr_xprt_acct *acct,
			    const struct sockaddr_storage *ss,
			    kmsgr_xprt_kick_t kick, void *priv,
			    struct kmsgr_xprt **out)
{
	struct socket *sock;
	struct kmsgr_tcp *t;
	int len, ret;

	len = kmsgr_tcp_sa_len(ss);
	if (len < 0)
		return len;
	ret = kmsgr_tcp_create(net, ss->ss_family, &sock);
	if (ret)
		return ret;
	sock_set_reuseaddr(sock->sk);
	ret = kernel_bind(sock, (struct sockaddr *)ss, len);
	if (ret)
		goto out_release;
	t = kmsgr_tcp_alloc(sock, &kmsgr_tcp_listen_ops);
	if (!t) {
		ret = -ENOMEM;
		goto out_release;
	}
	kmsgr_tcp_hook(t, kick, priv, true);
	ret = kernel_listen(sock, KMSGR_TCP_BACKLOG);
	if (ret)
		goto out_unhook;
	*out = &t->x;
	return 0;

out_unhook:
	kmsgr_tcp_unhook(t);
	kfree(t);
out_release:
	sock_release(sock);
	return ret;
}

static const struct kmsgr_xprt_ops kmsgr_tcp_listen_ops = {
	.accept		= kmsgr_tcp_accept,
	.getname	= kmsgr_tcp_getname,
	.close		= kmsgr_tcp_close,
};

const struct kmsgr_xprt_type kmsgr_xprt_tcp = {
	.id		= KMSGR_XPRT_TCP,
	.name		= "tcp",
	.owner		= THIS_MODULE,
	.connect	= kmsgr_tcp_connect,
	.listen		= kmsgr_tcp_listen,
};
