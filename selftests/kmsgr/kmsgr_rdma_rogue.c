// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr_rdma_rogue - a misbehaving RDMA peer for the kmsgr_rdma tests
 * (kmsgr_rdma_bad_test): it speaks the kmsgr RDMA wire (kmod/xprt_rdma.c)
 * from user space with librdmacm and libibverbs, and breaks one rule.
 *
 *   kmsgr_rdma_rogue [--timeout-ms N] IP:PORT CASE
 *
 * connects to the kmsgr RDMA listener at IP:PORT ("[IPv6]:PORT" works too)
 * and commits CASE:
 *
 *   no-private      a connect request without private data
 *   bad-magic       private data with a wrong magic
 *   bad-version     private data of wire version 2
 *   few-credits     private data announcing 1 credit (4 is the least)
 *   small-buffer    private data announcing 4-byte buffers (no room for
 *                   more than the header; 1024 is the least)
 *     each of these must be rejected, the reject's private data saying
 *     why: the magic, version 1 and reason KMSGR_RDMA_REJ_VERSION (1) for
 *     bad-version, KMSGR_RDMA_REJ_PARAMS (2) for the others.
 *
 * The other cases connect with valid private data (and check the accept's
 * private data: magic, version 1, at least 2 credits, buffers larger than
 * the header, reserved 0), then:
 *
 *   legal           the control: a CREDIT message and an empty DATA
 *                   message, both valid; the connection must STAY up for
 *                   1.5 s (then the rogue hangs up itself)
 *   credit-overrun  waits until kmsgr is quiet, returns exactly the
 *                   credits kmsgr has outstanding (valid: the connection
 *                   must stay up), then returns one more than it has
 *                   outstanding (now 0)
 *   oversize        a DATA message one byte larger than the buffer size
 *                   kmsgr announced
 *   bad-type        a message of type 9
 *   bad-flags       a DATA message with flags 0x80
 *   short           a 3-byte message (shorter than the header)
 *   empty           a 0-byte SEND
 *   done-unknown    a DONE naming a key kmsgr never offered in a PULL
 *   done-reserved   a DONE whose reserved word is not 0
 *   done-short      a DONE whose payload is 4 bytes (the key alone)
 *     each of these must make kmsgr hang up: RDMA_CM_EVENT_DISCONNECTED
 *     (or any other CM event that ends the connection: REJECTED when kmsgr
 *     failed it before its own ESTABLISHED came).
 *
 *   recv-overrun    twice as many SENDs as kmsgr granted credits, posted
 *                   at once: DATA messages of one byte each, which kmsgr
 *                   must hold until its session reads them (they are a
 *                   valid msgr2 banner, padded, so the session never
 *                   fails on their content).  kmsgr's receive queue runs
 *                   dry: a SEND must fail with RNR retry exceeded (kmsgr
 *                   accepts with rnr_retry 0) or kmsgr must hang up.
 *
 * The PULL cases connect the same way, but grant kmsgr RDMA READs of their
 * memory (responder resources: min(4, the device's max_qp_rd_atom)), and
 * go on only when kmsgr's accept announces KMSGR_RDMA_F_PULL (else exit
 * 2).  Their first message is a PULL, so its bytes are the first of the
 * stream: the msgr2 banner, which kmsgr's session reads first.
 *
 *   pull-legal      the control: a valid PULL of a 26-byte banner,
 *                   registered for remote read only.  The request asks no
 *                   initiator depth (we READ nothing: the wire allows 0
 *                   when we do not announce KMSGR_RDMA_F_PULL).  kmsgr
 *                   must read it and answer with a DONE naming its rkey
 *                   within 3 s, and keep the connection for 1 s more (then
 *                   the rogue hangs up itself).
 *
 * The other PULL cases also ask an initiator depth as large as their
 * responder resources, as kmsgr's own client does, so that they test what
 * kmsgr does with the PULL, whatever it makes of the grant (pull-legal
 * tests that).  The offered memory is a 64 KiB buffer holding a valid
 * banner whose payload runs to byte 4106, registered for remote read only:
 *
 *   pull-bad-rkey   the buffer's address and length under a wrong key (the
 *                   registration's rkey with its low byte flipped)
 *   pull-beyond-mr  64 KiB offered, only the first 4 KiB registered:
 *                   kmsgr's READ of the banner's first 10 bytes lies
 *                   inside, the READ of its payload crosses the end
 *   pull-outside-mr the first 4 KiB of the buffer offered, only the next
 *                   4 KiB registered (the key is right, the memory is not
 *                   the key's)
 *   pull-invalidated the whole buffer offered under a key deregistered
 *                   before the PULL was posted: a key taken back
 *     each of these must make kmsgr's RDMA READ fail, and kmsgr hang up.
 *
 *   read-bad-rkey   (asks an initiator depth) an RDMA READ of kmsgr's
 *                   memory at address 0 under a made-up key, and nothing
 *                   else: kmsgr's QP goes to error with no disconnect
 *                   (rxe raises no event), and kmsgr must hang up within
 *                   5 s all the same, not wait for msgr2's keepalive
 *                   timeout
 *
 *   pull-len-0      a PULL of 0 bytes
 *   pull-len-huge   a PULL of 16 MiB + 1 bytes (KMSGR_RDMA_PULL_MAX + 1)
 *   pull-short      a 19-byte PULL message (its descriptor cut short)
 *     kmsgr must refuse each of these descriptors and hang up.
 *
 * Prints one line saying what happened and exits 0 when kmsgr reacted as
 * expected within the timeout (default 10000 ms), 1 when it did not, 2 on
 * usage or set-up errors.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* ---- the kmsgr RDMA wire (kmod/xprt_rdma.c) ---- */

#define KMSGR_RDMA_MAGIC	0x4b4d5352	/* "KMSR" */
#define KMSGR_RDMA_VERSION	1

struct kmsgr_rdma_cm_priv {
	uint32_t magic;			/* big-endian */
	uint8_t version;
	uint8_t flags;
	uint16_t credits;		/* big-endian */
	uint32_t buf_size;		/* big-endian, header included */
	uint32_t reserved;
};

struct kmsgr_rdma_cm_rej {
	uint32_t magic;			/* big-endian */
	uint8_t version;
	uint8_t reason;
	uint16_t reserved;
};

#define KMSGR_RDMA_REJ_VERSION	1
#define KMSGR_RDMA_REJ_PARAMS	2

struct kmsgr_rdma_hdr {
	uint8_t type;
	uint8_t flags;
	uint16_t credits;		/* big-endian */
};

#define KMSGR_RDMA_MSG_DATA	1
#define KMSGR_RDMA_MSG_CREDIT	2
#define KMSGR_RDMA_MSG_PULL	3
#define KMSGR_RDMA_MSG_DONE	4
#define KMSGR_RDMA_HDR		4

#define KMSGR_RDMA_F_PULL	0x01	/* "I READ what PULLs offer" */

/* the payload of a PULL: @len stream bytes at @addr under @rkey */
struct kmsgr_rdma_pull {
	uint64_t addr;			/* big-endian */
	uint32_t rkey;			/* big-endian */
	uint32_t len;			/* big-endian, 1..KMSGR_RDMA_PULL_MAX */
};

#define KMSGR_RDMA_PULL_MAX	(16U << 20)

/* the payload of a DONE: the rkey of a PULL whose bytes were all read */
struct kmsgr_rdma_done {
	uint32_t rkey;			/* big-endian */
	uint32_t reserved;
};

/* the IB CM reject reason of a consumer's reject (IBA table 112) */
#define IB_CM_REJ_CONSUMER_DEFINED	28

/* ---- the rogue ---- */

#define ROGUE_CREDITS		16	/* receive buffers we post */
#define ROGUE_BUF		4096	/* bytes each */
#define ROGUE_MAX_SENDS		4200	/* recv-overrun: 4106 at most */
#define ROGUE_SLOT		8	/* bytes per small SEND */
#define ROGUE_STEP_MS		10
#define ROGUE_RD_RES		4	/* kmsgr's READs we serve at once */
#define ROGUE_AREA		65536	/* the memory the PULL cases offer */
#define ROGUE_PAGE		4096
#define ROGUE_DONE_MS		3000	/* pull-legal: the DONE comes */
#define ROGUE_DONE_RKEY		0x12345678	/* the done-* cases' key */

/* the msgr2 banner: magic, le16 payload length, supported, required */
#define BANNER_MAGIC		"ceph v2\n"
#define BANNER_PREFIX		10
#define BANNER_PAYLOAD_MIN	16
#define BANNER_PAYLOAD_MAX	4096

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

enum rogue_case {
	C_NO_PRIVATE, C_BAD_MAGIC, C_BAD_VERSION, C_FEW_CREDITS,
	C_SMALL_BUFFER, C_LEGAL, C_CREDIT_OVERRUN, C_OVERSIZE, C_BAD_TYPE,
	C_BAD_FLAGS, C_SHORT, C_EMPTY, C_DONE_UNKNOWN, C_DONE_RESERVED,
	C_DONE_SHORT, C_RECV_OVERRUN, C_PULL_LEGAL,
	C_PULL_BAD_RKEY, C_PULL_BEYOND_MR, C_PULL_OUTSIDE_MR,
	C_PULL_INVALIDATED, C_PULL_LEN_0, C_PULL_LEN_HUGE, C_PULL_SHORT,
	C_READ_BAD_RKEY,
};

static const struct {
	const char *name;
	enum rogue_case c;
} rogue_cases[] = {
	{ "no-private", C_NO_PRIVATE },
	{ "bad-magic", C_BAD_MAGIC },
	{ "bad-version", C_BAD_VERSION },
	{ "few-credits", C_FEW_CREDITS },
	{ "small-buffer", C_SMALL_BUFFER },
	{ "legal", C_LEGAL },
	{ "credit-overrun", C_CREDIT_OVERRUN },
	{ "oversize", C_OVERSIZE },
	{ "bad-type", C_BAD_TYPE },
	{ "bad-flags", C_BAD_FLAGS },
	{ "short", C_SHORT },
	{ "empty", C_EMPTY },
	{ "done-unknown", C_DONE_UNKNOWN },
	{ "done-reserved", C_DONE_RESERVED },
	{ "done-short", C_DONE_SHORT },
	{ "recv-overrun", C_RECV_OVERRUN },
	{ "pull-legal", C_PULL_LEGAL },
	{ "pull-bad-rkey", C_PULL_BAD_RKEY },
	{ "pull-beyond-mr", C_PULL_BEYOND_MR },
	{ "pull-outside-mr", C_PULL_OUTSIDE_MR },
	{ "pull-invalidated", C_PULL_INVALIDATED },
	{ "pull-len-0", C_PULL_LEN_0 },
	{ "pull-len-huge", C_PULL_LEN_HUGE },
	{ "pull-short", C_PULL_SHORT },
	{ "read-bad-rkey", C_READ_BAD_RKEY },
};

struct rogue {
	const char *name;		/* the case, for messages */
	enum rogue_case c;
	long long deadline;
	struct sockaddr_storage dst;

	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	bool qp;
	struct ibv_mr *rx_mr, *tx_mr;
	uint8_t *rx, *tx;
	size_t tx_len;
	uint8_t *area;			/* the PULL cases' memory */
	struct ibv_mr *area_mr;

	/* what kmsgr announced in its accept */
	unsigned int kcredits;
	uint32_t kbuf;
	uint8_t kflags;
	uint8_t rd_res;			/* responder resources we asked */
	uint8_t depth;			/* initiator depth we asked */
	/* the accept's, as ESTABLISHED reports them: from our side */
	uint8_t ev_rd_res;		/* ours: kmsgr's initiator depth */
	uint8_t ev_depth;		/* ours: kmsgr's responder resources */

	/* what happened */
	bool established;
	bool ended;			/* a CM event ended the connection */
	enum rdma_cm_event_type end_ev;	/* which one */
	unsigned int received;		/* messages from kmsgr */
	long long last_rx;		/* when the last one came */
	unsigned int sent, sent_ok;	/* SENDs posted, completed well */
	unsigned int send_errors;
	enum ibv_wc_status first_err;	/* of the first failed SEND */
	unsigned int first_err_at;	/* its index */
	bool rnr;			/* a SEND failed: RNR retry exceeded */
	unsigned int dones;		/* DONE messages from kmsgr */
	uint32_t done_rkey;		/* the rkey the first one names */
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A set-up error: exit 2. */
static void die(struct rogue *r, const char *what, int err)
{
	fprintf(stderr, "kmsgr_rdma_rogue: %s: %s: %s\n", r->name, what,
		strerror(err));
	exit(2);
}

/* kmsgr did not react as it must: say how, exit 1 */
static int fail(struct rogue *r, const char *fmt, ...)
{
	va_list ap;

	printf("kmsgr_rdma_rogue: %s: FAIL: ", r->name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return 1;
}

static int parse_target(const char *arg, struct sockaddr_storage *ss)
{
	struct addrinfo hints = {
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
		.ai_socktype = SOCK_STREAM,
	};
	struct addrinfo *ai;
	char host[128], *port;

	if (strlen(arg) >= sizeof(host))
		return -1;
	strcpy(host, arg);
	port = strrchr(host, ':');
	if (!port)
		return -1;
	*port++ = '\0';
	if (host[0] == '[') {
		if (host[strlen(host) - 1] != ']')
			return -1;
		host[strlen(host) - 1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

static const char *cm_event_name(enum rdma_cm_event_type e)
{
	return rdma_event_str(e);
}

/* ---- verbs ---- */

static int post_recv(struct rogue *r, unsigned int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(r->rx + (size_t)i * ROGUE_BUF),
		.length = ROGUE_BUF,
		.lkey = r->rx_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = i,
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	return ibv_post_recv(r->id->qp, &wr, &bad);
}

/* wr_id of a SEND: its index with this bit */
#define WR_SEND		(1ULL << 32)

/*
 * Post @n SENDs at once; SEND i is @lens[i] bytes at @off[i] of the tx
 * buffer (0 bytes: no scatter entry at all).
 */
static int post_sends(struct rogue *r, const size_t *off, const uint32_t *lens,
		      unsigned int n)
{
	struct ibv_send_wr *wr, *bad;
	struct ibv_sge *sge;
	unsigned int i;
	int ret;

	wr = calloc(n, sizeof(*wr));
	sge = calloc(n, sizeof(*sge));
	if (!wr || !sge)
		die(r, "calloc", ENOMEM);
	for (i = 0; i < n; i++) {
		sge[i].addr = (uintptr_t)(r->tx + off[i]);
		sge[i].length = lens[i];
		sge[i].lkey = r->tx_mr->lkey;
		wr[i].wr_id = WR_SEND | (r->sent + i);
		wr[i].sg_list = lens[i] ? &sge[i] : NULL;
		wr[i].num_sge = lens[i] ? 1 : 0;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	ret = ibv_post_send(r->id->qp, wr, &bad);
	if (!ret)
		r->sent += n;
	free(wr);
	free(sge);
	return ret;
}

/* One SEND of @len bytes from the start of the tx buffer. */
static int post_send(struct rogue *r, uint32_t len)
{
	size_t off = 0;

	return post_sends(r, &off, &len, 1);
}

static void put_hdr(uint8_t *p, uint8_t type, uint8_t flags,
		    uint16_t credits)
{
	struct kmsgr_rdma_hdr h = {
		.type = type,
		.flags = flags,
		.credits = htobe16(credits),
	};

	memcpy(p, &h, sizeof(h));
}

/* Note a DONE in receive buffer @i (@len bytes), the rest is ignored. */
static void note_done(struct rogue *r, unsigned int i, uint32_t len)
{
	const uint8_t *p = r->rx + (size_t)i * ROGUE_BUF;
	struct kmsgr_rdma_done d;

	if (len < KMSGR_RDMA_HDR + sizeof(d) || p[0] != KMSGR_RDMA_MSG_DONE)
		return;
	memcpy(&d, p + KMSGR_RDMA_HDR, sizeof(d));
	if (!r->dones++)
		r->done_rkey = be32toh(d.rkey);
}

static void poll_cq(struct rogue *r)
{
	struct ibv_wc wc[32];
	int n, i;

	while ((n = ibv_poll_cq(r->cq, ARRAY_SIZE(wc), wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & WR_SEND) {
				if (wc[i].status == IBV_WC_SUCCESS) {
					r->sent_ok++;
					continue;
				}
				if (!r->send_errors++) {
					r->first_err = wc[i].status;
					r->first_err_at =
						(unsigned int)wc[i].wr_id;
				}
				if (wc[i].status == IBV_WC_RNR_RETRY_EXC_ERR)
					r->rnr = true;
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS)
				continue;	/* flushed: the QP is down */
			r->received++;
			r->last_rx = now_ms();
			note_done(r, (unsigned int)wc[i].wr_id,
				  wc[i].byte_len);
			/* what kmsgr sent is of no interest: post it again */
			if (post_recv(r, (unsigned int)wc[i].wr_id))
				fprintf(stderr, "kmsgr_rdma_rogue: repost failed\n");
		}
	}
}

/* ---- the connection manager ---- */

/*
 * Wait up to @ms for a CM event, handling completions meanwhile.  An event
 * of @want (or any event if @want is -1) is returned to the caller, who
 * acks it; others are noted and acked here.  NULL on timeout.
 */
static struct rdma_cm_event *cm_wait(struct rogue *r, int want, int ms)
{
	struct pollfd p = { .fd = r->ch->fd, .events = POLLIN };
	long long end = now_ms() + ms;
	struct rdma_cm_event *ev;
	int left;

	for (;;) {
		if (r->cq)
			poll_cq(r);
		left = (int)(end - now_ms());
		if (left < 0)
			return NULL;
		if (poll(&p, 1, left < ROGUE_STEP_MS ? left : ROGUE_STEP_MS) <= 0)
			continue;
		if (rdma_get_cm_event(r->ch, &ev))
			continue;	/* nonblocking channel: none after all */
		/*
		 * Once established, any event ends the connection: mostly
		 * DISCONNECTED; REJECTED when kmsgr tore it down before its
		 * own ESTABLISHED (the CM then answers with a REJ).
		 */
		if (r->established && !r->ended &&
		    ev->event != RDMA_CM_EVENT_ESTABLISHED) {
			r->ended = true;
			r->end_ev = ev->event;
		}
		if (want < 0 || (int)ev->event == want)
			return ev;
		fprintf(stderr, "kmsgr_rdma_rogue: %s: (CM event %s, status %d)\n",
			r->name, cm_event_name(ev->event), ev->status);
		rdma_ack_cm_event(ev);
	}
}

/* Run for @ms handling events; return early when @until(r) holds. */
static void pump(struct rogue *r, int ms, bool (*until)(struct rogue *r))
{
	long long end = now_ms() + ms;
	struct rdma_cm_event *ev;

	while (now_ms() < end && !(until && until(r))) {
		ev = cm_wait(r, -1, ROGUE_STEP_MS);
		if (ev)
			rdma_ack_cm_event(ev);
	}
	poll_cq(r);
}

static bool hung_up(struct rogue *r)
{
	return r->ended;
}

static bool hung_up_or_rnr(struct rogue *r)
{
	return r->ended || r->rnr;
}

static bool got_one(struct rogue *r)
{
	return r->ended || r->received;
}

static bool got_done(struct rogue *r)
{
	return r->ended || r->dones;
}

/* Resolve the address and the route, make the CQ, the QP, the buffers. */
static void rogue_setup(struct rogue *r)
{
	struct ibv_qp_init_attr attr = { };
	struct rdma_cm_event *ev;
	unsigned int i;
	int ret;

	r->ch = rdma_create_event_channel();
	if (!r->ch)
		die(r, "rdma_create_event_channel", errno);
	if (rdma_create_id(r->ch, &r->id, r, RDMA_PS_TCP))
		die(r, "rdma_create_id", errno);
	/* cm_wait() polls the channel's fd */
	ret = fcntl(r->ch->fd, F_GETFL);
	if (ret < 0 || fcntl(r->ch->fd, F_SETFL, ret | O_NONBLOCK))
		die(r, "fcntl", errno);
	if (rdma_resolve_addr(r->id, NULL, (struct sockaddr *)&r->dst, 3000))
		die(r, "rdma_resolve_addr", errno);
	ev = cm_wait(r, -1, 5000);
	if (!ev || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
		die(r, "address not resolved", ev ? EHOSTUNREACH : ETIMEDOUT);
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(r->id, 3000))
		die(r, "rdma_resolve_route", errno);
	ev = cm_wait(r, -1, 5000);
	if (!ev || ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		die(r, "route not resolved", ev ? EHOSTUNREACH : ETIMEDOUT);
	rdma_ack_cm_event(ev);

	r->pd = ibv_alloc_pd(r->id->verbs);
	if (!r->pd)
		die(r, "ibv_alloc_pd", errno);
	r->cq = ibv_create_cq(r->id->verbs, ROGUE_MAX_SENDS + ROGUE_CREDITS + 8,
			      NULL, NULL, 0);
	if (!r->cq)
		die(r, "ibv_create_cq", errno);
	attr.send_cq = r->cq;
	attr.recv_cq = r->cq;
	attr.cap.max_send_wr = ROGUE_MAX_SENDS;
	attr.cap.max_recv_wr = ROGUE_CREDITS;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 1;
	if (rdma_create_qp(r->id, r->pd, &attr))
		die(r, "rdma_create_qp", errno);
	r->qp = true;

	r->rx = calloc(ROGUE_CREDITS, ROGUE_BUF);
	if (!r->rx)
		die(r, "calloc", ENOMEM);
	r->rx_mr = ibv_reg_mr(r->pd, r->rx, (size_t)ROGUE_CREDITS * ROGUE_BUF,
			      IBV_ACCESS_LOCAL_WRITE);
	if (!r->rx_mr)
		die(r, "ibv_reg_mr", errno);
	for (i = 0; i < ROGUE_CREDITS; i++)
		if (post_recv(r, i))
			die(r, "ibv_post_recv", errno);
}

/* The tx buffer, once kmsgr's buffer size is known. */
static void rogue_tx_setup(struct rogue *r)
{
	r->tx_len = (size_t)r->kbuf + 64 + (size_t)ROGUE_MAX_SENDS * ROGUE_SLOT;
	r->tx = calloc(1, r->tx_len);
	if (!r->tx)
		die(r, "calloc", ENOMEM);
	r->tx_mr = ibv_reg_mr(r->pd, r->tx, r->tx_len, 0);
	if (!r->tx_mr)
		die(r, "ibv_reg_mr", errno);
}

static void rogue_teardown(struct rogue *r)
{
	struct rdma_cm_event *ev;

	if (r->established) {
		/* after kmsgr's DREQ too: this answers it */
		rdma_disconnect(r->id);
		if (!r->ended) {
			ev = cm_wait(r, RDMA_CM_EVENT_DISCONNECTED, 2000);
			if (ev)
				rdma_ack_cm_event(ev);
		}
	}
	if (r->qp)
		rdma_destroy_qp(r->id);
	if (r->area_mr)
		ibv_dereg_mr(r->area_mr);
	if (r->tx_mr)
		ibv_dereg_mr(r->tx_mr);
	if (r->rx_mr)
		ibv_dereg_mr(r->rx_mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->id)
		rdma_destroy_id(r->id);
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	free(r->area);
	free(r->tx);
	free(r->rx);
}

/* ---- the cases ---- */

/* the cases that send PULLs */
static bool pull_case(enum rogue_case c)
{
	switch (c) {
	case C_PULL_LEGAL:
	case C_PULL_BAD_RKEY:
	case C_PULL_BEYOND_MR:
	case C_PULL_OUTSIDE_MR:
	case C_PULL_INVALIDATED:
	case C_PULL_LEN_0:
	case C_PULL_LEN_HUGE:
	case C_PULL_SHORT:
		return true;
	default:
		return false;
	}
}

/*
 * The RDMA READs of kmsgr's we serve at once, asked in the connect request
 * (kmsgr answers it with its initiator depth): min(ROGUE_RD_RES, what the
 * device serves), at least 1.
 */
static uint8_t rd_resources(struct rogue *r)
{
	struct ibv_device_attr a;
	int ret;

	ret = ibv_query_device(r->id->verbs, &a);
	if (ret)
		die(r, "ibv_query_device", ret);
	if (a.max_qp_rd_atom < 1)
		die(r, "the device serves no RDMA READ (max_qp_rd_atom 0)",
		    EOPNOTSUPP);
	return a.max_qp_rd_atom < ROGUE_RD_RES ? a.max_qp_rd_atom :
	       ROGUE_RD_RES;
}

/*
 * A msgr2 banner at @p whose payload (revision 1 supported, nothing
 * required) is padded with zeros to @payload bytes; @p holds
 * BANNER_PREFIX + @payload bytes.
 */
static void put_banner(uint8_t *p, uint16_t payload)
{
	uint64_t supported = htole64(1);	/* msgr2 revision 1 */
	uint16_t plen = htole16(payload);

	memset(p, 0, BANNER_PREFIX + (size_t)payload);
	memcpy(p, BANNER_MAGIC, 8);
	memcpy(p + 8, &plen, 2);
	memcpy(p + BANNER_PREFIX, &supported, 8);
}

static void make_priv(const struct rogue *r, struct kmsgr_rdma_cm_priv *p)
{
	p->magic = htobe32(KMSGR_RDMA_MAGIC);
	p->version = KMSGR_RDMA_VERSION;
	p->flags = 0;
	p->credits = htobe16(ROGUE_CREDITS);
	p->buf_size = htobe32(ROGUE_BUF);
	p->reserved = 0;
	switch (r->c) {
	case C_BAD_MAGIC:
		p->magic = htobe32(KMSGR_RDMA_MAGIC ^ 0x20);	/* "KMSr" */
		break;
	case C_BAD_VERSION:
		p->version = KMSGR_RDMA_VERSION + 1;
		break;
	case C_FEW_CREDITS:
		p->credits = htobe16(1);
		break;
	case C_SMALL_BUFFER:
		p->buf_size = htobe32(KMSGR_RDMA_HDR);
		break;
	default:
		break;
	}
}

/* A connect request that must be rejected, with the right reason. */
static int case_reject(struct rogue *r, struct rdma_cm_event *ev)
{
	const struct kmsgr_rdma_cm_rej *rej = ev->param.conn.private_data;
	uint8_t want = r->c == C_BAD_VERSION ? KMSGR_RDMA_REJ_VERSION :
		       KMSGR_RDMA_REJ_PARAMS;

	if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
		return fail(r, "kmsgr accepted the connect request");
	if (ev->event != RDMA_CM_EVENT_REJECTED)
		return fail(r, "the connect request ended with %s (status %d), not REJECTED",
			    cm_event_name(ev->event), ev->status);
	if (ev->status != IB_CM_REJ_CONSUMER_DEFINED)
		return fail(r, "rejected with status %d, not %d (consumer defined)",
			    ev->status, IB_CM_REJ_CONSUMER_DEFINED);
	if (!rej || ev->param.conn.private_data_len < sizeof(*rej))
		return fail(r, "the reject carries no private data");
	if (be32toh(rej->magic) != KMSGR_RDMA_MAGIC)
		return fail(r, "the reject's magic is %#x",
			    be32toh(rej->magic));
	if (rej->reason != want || rej->version != KMSGR_RDMA_VERSION)
		return fail(r, "rejected with reason %u, version %u; expected reason %u, version %u",
			    rej->reason, rej->version, want,
			    KMSGR_RDMA_VERSION);
	printf("kmsgr_rdma_rogue: %s: rejected (reason %u, version %u)\n",
	       r->name, rej->reason, rej->version);
	return 0;
}

/*
 * kmsgr's accept private data must be a valid kmsgr_rdma_cm_priv.  Its
 * flags are not checked: they say what kmsgr does with what we send, and
 * we announced nothing (we READ no PULL), so kmsgr offers us none.  The
 * PULL cases need KMSGR_RDMA_F_PULL in them: without it no PULL may be
 * sent at all (exit 2: nothing to test).
 */
static int check_accept(struct rogue *r, struct rdma_cm_event *ev)
{
	const struct kmsgr_rdma_cm_priv *p = ev->param.conn.private_data;

	if (!p || ev->param.conn.private_data_len < sizeof(*p))
		return fail(r, "the accept carries no private data");
	r->kcredits = be16toh(p->credits);
	r->kbuf = be32toh(p->buf_size);
	r->kflags = p->flags;
	r->ev_rd_res = ev->param.conn.responder_resources;
	r->ev_depth = ev->param.conn.initiator_depth;
	if (be32toh(p->magic) == KMSGR_RDMA_MAGIC &&
	    p->version == KMSGR_RDMA_VERSION && !p->reserved &&
	    r->kcredits >= 2 && r->kbuf > KMSGR_RDMA_HDR &&
	    r->kbuf <= (1U << 20)) {
		if (!pull_case(r->c) || (r->kflags & KMSGR_RDMA_F_PULL))
			return 0;
		printf("kmsgr_rdma_rogue: %s: kmsgr's accept does not announce KMSGR_RDMA_F_PULL (flags %#x): it takes no PULL (kmsgr_rdma pull_min or pulls 0?)\n",
		       r->name, r->kflags);
		return 2;
	}
	return fail(r, "bad accept private data: magic %#x version %u flags %#x credits %u buf_size %u reserved %#x",
		    be32toh(p->magic), p->version, p->flags, r->kcredits,
		    r->kbuf, be32toh(p->reserved));
}

/* Wait for kmsgr to hang up; 0 if it did within the timeout. */
static int expect_hangup(struct rogue *r, const char *what, long long t0)
{
	pump(r, (int)(r->deadline - now_ms()), hung_up);
	if (!r->ended)
		return fail(r, "kmsgr kept the connection: %s, still connected after %lld ms",
			    what, now_ms() - t0);
	printf("kmsgr_rdma_rogue: %s: %s; kmsgr hung up (%s) after %lld ms",
	       r->name, what, cm_event_name(r->end_ev), now_ms() - t0);
	if (r->send_errors)
		printf(" (our SEND %u: %s)", r->first_err_at,
		       ibv_wc_status_str(r->first_err));
	printf("\n");
	return 0;
}

/* Returning credits: legal, then one too many. */
static int case_credit_overrun(struct rogue *r)
{
	unsigned int out;
	char why[96];
	long long t0;

	/* kmsgr sends its banner, then waits for ours: let it settle */
	pump(r, 3000, got_one);
	while (!r->ended && now_ms() - r->last_rx < 500)
		pump(r, 100, hung_up);
	if (r->ended)
		return fail(r, "kmsgr hung up before any credit came");
	out = r->received;	/* none returned yet */
	if (out) {
		put_hdr(r->tx, KMSGR_RDMA_MSG_CREDIT, 0, (uint16_t)out);
		if (post_send(r, KMSGR_RDMA_HDR))
			die(r, "ibv_post_send", errno);
		pump(r, 1000, hung_up);
		if (r->ended || r->send_errors)
			return fail(r, "kmsgr refused a legal return of %u credits (all it had out)",
				    out);
	}
	t0 = now_ms();
	put_hdr(r->tx, KMSGR_RDMA_MSG_CREDIT, 0, 1);
	if (post_send(r, KMSGR_RDMA_HDR))
		die(r, "ibv_post_send", errno);
	snprintf(why, sizeof(why),
		 "returned %u credits, then 1 more with none outstanding", out);
	return expect_hangup(r, why, t0);
}

/* One bad message, then kmsgr must hang up. */
static int case_bad_message(struct rogue *r)
{
	struct kmsgr_rdma_done done = { 0 };
	uint32_t len = KMSGR_RDMA_HDR;
	const char *what = "";
	long long t0;

	switch (r->c) {
	case C_OVERSIZE:
		len = r->kbuf + 1;
		put_hdr(r->tx, KMSGR_RDMA_MSG_DATA, 0, 0);
		memset(r->tx + KMSGR_RDMA_HDR, 'x', len - KMSGR_RDMA_HDR);
		what = "sent a DATA message 1 byte over kmsgr's buffer size";
		break;
	case C_BAD_TYPE:
		put_hdr(r->tx, 9, 0, 0);
		what = "sent a message of type 9";
		break;
	case C_BAD_FLAGS:
		put_hdr(r->tx, KMSGR_RDMA_MSG_DATA, 0x80, 0);
		what = "sent a DATA message with flags 0x80";
		break;
	case C_SHORT:
		put_hdr(r->tx, KMSGR_RDMA_MSG_CREDIT, 0, 0);
		len = KMSGR_RDMA_HDR - 1;
		what = "sent a 3-byte message";
		break;
	case C_EMPTY:
		len = 0;
		what = "sent a 0-byte message";
		break;
	case C_DONE_UNKNOWN:
	case C_DONE_RESERVED:
	case C_DONE_SHORT:
		/* no PULL of kmsgr's has come: no key is kmsgr's to take back */
		put_hdr(r->tx, KMSGR_RDMA_MSG_DONE, 0, 0);
		done.rkey = htobe32(ROGUE_DONE_RKEY);
		len = KMSGR_RDMA_HDR + sizeof(done);
		if (r->c == C_DONE_RESERVED)
			done.reserved = htobe32(1);
		if (r->c == C_DONE_SHORT)
			len -= sizeof(done.reserved);
		memcpy(r->tx + KMSGR_RDMA_HDR, &done, sizeof(done));
		what = r->c == C_DONE_UNKNOWN ?
		       "sent a DONE for a key kmsgr never offered" :
		       r->c == C_DONE_RESERVED ?
		       "sent a DONE with reserved 1" :
		       "sent a DONE 4 bytes short";
		break;
	default:
		break;
	}
	t0 = now_ms();
	if (post_send(r, len))
		die(r, "ibv_post_send", errno);
	return expect_hangup(r, what, t0);
}

/* Two valid messages; the connection must stay up. */
static int case_legal(struct rogue *r)
{
	size_t off[2] = { 0, ROGUE_SLOT };
	uint32_t lens[2] = { KMSGR_RDMA_HDR, KMSGR_RDMA_HDR };

	put_hdr(r->tx, KMSGR_RDMA_MSG_CREDIT, 0, 0);
	put_hdr(r->tx + ROGUE_SLOT, KMSGR_RDMA_MSG_DATA, 0, 0);
	if (post_sends(r, off, lens, 2))
		die(r, "ibv_post_send", errno);
	pump(r, 1500, hung_up);
	if (r->ended || r->send_errors || r->sent_ok != 2)
		return fail(r, "valid messages were not taken: %s, %u of 2 SENDs completed well",
			    r->ended ? "kmsgr hung up" :
			    "still connected", r->sent_ok);
	printf("kmsgr_rdma_rogue: %s: 2 valid messages taken, still connected after 1500 ms (%u received)\n",
	       r->name, r->received);
	return 0;
}

/* Far more SENDs than kmsgr has receive buffers, all at once. */
static int case_recv_overrun(struct rogue *r)
{
	unsigned int n = r->kcredits * 2, i;
	uint8_t stream[BANNER_PREFIX + BANNER_PAYLOAD_MAX];
	size_t *off;
	uint32_t *lens;
	long long t0;

	if (n < BANNER_PREFIX + BANNER_PAYLOAD_MIN)
		n = BANNER_PREFIX + BANNER_PAYLOAD_MIN;
	if (n > BANNER_PREFIX + BANNER_PAYLOAD_MAX)
		n = BANNER_PREFIX + BANNER_PAYLOAD_MAX;
	/* a banner whose payload pads it to n bytes: 1 byte per SEND */
	put_banner(stream, (uint16_t)(n - BANNER_PREFIX));
	off = calloc(n, sizeof(*off));
	lens = calloc(n, sizeof(*lens));
	if (!off || !lens)
		die(r, "calloc", ENOMEM);
	for (i = 0; i < n; i++) {
		off[i] = (size_t)i * ROGUE_SLOT;
		lens[i] = KMSGR_RDMA_HDR + 1;
		put_hdr(r->tx + off[i], KMSGR_RDMA_MSG_DATA, 0, 0);
		r->tx[off[i] + KMSGR_RDMA_HDR] = stream[i];
	}
	t0 = now_ms();
	if (post_sends(r, off, lens, n))
		die(r, "ibv_post_send", errno);
	free(off);
	free(lens);
	pump(r, (int)(r->deadline - now_ms()), hung_up_or_rnr);
	if (!r->rnr && !r->ended)
		return fail(r, "the overrun went unnoticed: %u SENDs on %u credits: %u completed well, %u failed (first: %s), still connected",
			    n, r->kcredits, r->sent_ok, r->send_errors,
			    r->send_errors ?
			    ibv_wc_status_str(r->first_err) : "none");
	printf("kmsgr_rdma_rogue: %s: %u SENDs on %u credits: ", r->name, n,
	       r->kcredits);
	if (r->rnr)
		printf("SEND %u failed with %s after %lld ms (%u completed well before)\n",
		       r->first_err_at, ibv_wc_status_str(r->first_err),
		       now_ms() - t0, r->sent_ok);
	else
		printf("kmsgr hung up (%s) after %lld ms (%u completed well)\n",
		       cm_event_name(r->end_ev), now_ms() - t0, r->sent_ok);
	return 0;
}

/*
 * pull-legal: kmsgr must read the PULL (@rkey) sent at @t0 and say so in a
 * DONE, and keep the connection.
 */
static int pull_legal_wait(struct rogue *r, const char *what, uint32_t rkey,
			   long long t0)
{
	long long done_ms;

	pump(r, ROGUE_DONE_MS, got_done);
	if (r->ended)
		return fail(r, "%s; kmsgr hung up (%s) after %lld ms", what,
			    cm_event_name(r->end_ev), now_ms() - t0);
	if (!r->dones)
		return fail(r, "%s; kmsgr never read it: no DONE after %d ms%s",
			    what, ROGUE_DONE_MS,
			    r->ev_rd_res ? "" :
			    " (its accept took an initiator depth of 0: it cannot READ)");
	if (r->done_rkey != rkey)
		return fail(r, "%s; kmsgr's DONE names rkey %#x", what,
			    r->done_rkey);
	done_ms = now_ms() - t0;
	pump(r, 1000, hung_up);
	if (r->ended || r->send_errors)
		return fail(r, "%s; kmsgr's DONE came after %lld ms, then it hung up",
			    what, done_ms);
	printf("kmsgr_rdma_rogue: %s: %s; kmsgr's DONE came after %lld ms, still connected 1000 ms later\n",
	       r->name, what, done_ms);
	return 0;
}

/*
 * A PULL as the first message: the stream's first bytes, the banner, are
 * in our memory, offered in a way kmsgr cannot or must not read (or, for
 * pull-legal, in the right way).
 */
static int case_pull(struct rogue *r)
{
	struct kmsgr_rdma_pull d;
	size_t reg_off = 0, reg_len = ROGUE_AREA;
	uint32_t rkey, reg_rkey, len = ROGUE_AREA;
	uint32_t msg_len = KMSGR_RDMA_HDR + sizeof(d);
	const char *what = "";
	uint64_t addr;
	char why[384];
	long long t0;

	r->area = aligned_alloc(ROGUE_PAGE, ROGUE_AREA);
	if (!r->area)
		die(r, "aligned_alloc", ENOMEM);
	memset(r->area, 0, ROGUE_AREA);
	if (r->c == C_PULL_LEGAL) {
		/* exactly a banner, exactly registered */
		put_banner(r->area, BANNER_PAYLOAD_MIN);
		len = BANNER_PREFIX + BANNER_PAYLOAD_MIN;
		reg_len = len;
	} else {
		/* its payload runs to byte 4106: past the first page */
		put_banner(r->area, BANNER_PAYLOAD_MAX);
	}
	if (r->c == C_PULL_BEYOND_MR) {
		reg_len = ROGUE_PAGE;
	} else if (r->c == C_PULL_OUTSIDE_MR) {
		reg_off = ROGUE_PAGE;
		reg_len = ROGUE_PAGE;
	}
	r->area_mr = ibv_reg_mr(r->pd, r->area + reg_off, reg_len,
				IBV_ACCESS_REMOTE_READ);
	if (!r->area_mr)
		die(r, "ibv_reg_mr", errno);
	addr = (uintptr_t)r->area;
	reg_rkey = r->area_mr->rkey;
	rkey = reg_rkey;

	switch (r->c) {
	case C_PULL_BAD_RKEY:
		rkey ^= 0x5a;
		what = "a wrong key";
		break;
	case C_PULL_BEYOND_MR:
		what = "64 KiB, 4 KiB of them registered";
		break;
	case C_PULL_OUTSIDE_MR:
		len = ROGUE_PAGE;
		what = "the 4 KiB below the registration";
		break;
	case C_PULL_INVALIDATED:
		/* taken back before the PULL goes: no race with the READ */
		if (ibv_dereg_mr(r->area_mr))
			die(r, "ibv_dereg_mr", errno);
		r->area_mr = NULL;
		what = "a key deregistered before the PULL was sent";
		break;
	case C_PULL_LEN_0:
		len = 0;
		what = "0 bytes";
		break;
	case C_PULL_LEN_HUGE:
		len = KMSGR_RDMA_PULL_MAX + 1;
		what = "16 MiB + 1 bytes";
		break;
	case C_PULL_SHORT:
		msg_len--;
		what = "a 19-byte message";
		break;
	case C_PULL_LEGAL:
		what = "a valid banner";
		break;
	default:
		break;
	}
	d.addr = htobe64(addr);
	d.rkey = htobe32(rkey);
	d.len = htobe32(len);
	put_hdr(r->tx, KMSGR_RDMA_MSG_PULL, 0, 0);
	memcpy(r->tx + KMSGR_RDMA_HDR, &d, sizeof(d));
	snprintf(why, sizeof(why),
		 "sent a PULL {addr %#llx, rkey %#x, len %u} first: %s (registered: %zu bytes at %#llx, rkey %#x; asked: responder resources %u, initiator depth %u; accepted: kmsgr's initiator depth %u, responder resources %u)",
		 (unsigned long long)addr, rkey, len, what, reg_len,
		 (unsigned long long)addr + reg_off, reg_rkey, r->rd_res,
		 r->depth, r->ev_rd_res, r->ev_depth);
	t0 = now_ms();
	if (post_send(r, msg_len))
		die(r, "ibv_post_send", errno);
	if (r->c == C_PULL_LEGAL)
		return pull_legal_wait(r, why, rkey, t0);
	return expect_hangup(r, why, t0);
}

/*
 * An RDMA READ kmsgr never offered: address 0, a made-up key.  kmsgr's
 * QP goes to error (rxe: with no event); kmsgr must end the connection
 * soon all the same.
 */
static int case_read_bad_rkey(struct rogue *r)
{
	struct ibv_send_wr wr = { }, *bad;
	struct ibv_sge sge;
	long long t0;

	r->area = calloc(1, ROGUE_PAGE);
	if (!r->area)
		die(r, "calloc", ENOMEM);
	r->area_mr = ibv_reg_mr(r->pd, r->area, ROGUE_PAGE,
				IBV_ACCESS_LOCAL_WRITE);
	if (!r->area_mr)
		die(r, "ibv_reg_mr", errno);
	sge.addr = (uintptr_t)r->area;
	sge.length = ROGUE_PAGE;
	sge.lkey = r->area_mr->lkey;
	wr.wr_id = WR_SEND | 0xffff;	/* its error counted as a SEND's */
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = 0;
	wr.wr.rdma.rkey = 0xdeadbeef;
	t0 = now_ms();
	if (ibv_post_send(r->id->qp, &wr, &bad))
		die(r, "ibv_post_send", errno);
	if (r->deadline > t0 + 5000)
		r->deadline = t0 + 5000;
	return expect_hangup(r, "an RDMA READ under a made-up key", t0);
}

static int rogue_run(struct rogue *r)
{
	struct kmsgr_rdma_cm_priv priv;
	struct rdma_conn_param p = { };
	struct rdma_cm_event *ev;
	int ret;

	rogue_setup(r);
	make_priv(r, &priv);
	if (r->c != C_NO_PRIVATE) {
		p.private_data = &priv;
		p.private_data_len = sizeof(priv);
	}
	/* a transport error must show quickly */
	p.retry_count = 1;
	p.rnr_retry_count = 0;
	/*
	 * kmsgr may READ what we offer; we READ nothing, but the
	 * misbehaving cases ask as kmsgr's client does (header comment).
	 */
	if (pull_case(r->c)) {
		r->rd_res = rd_resources(r);
		p.responder_resources = r->rd_res;
		if (r->c != C_PULL_LEGAL)
			r->depth = r->rd_res;
		p.initiator_depth = r->depth;
	}
	if (r->c == C_READ_BAD_RKEY) {
		r->depth = rd_resources(r);
		p.initiator_depth = r->depth;
	}
	if (rdma_connect(r->id, &p))
		die(r, "rdma_connect", errno);
	ev = cm_wait(r, -1, (int)(r->deadline - now_ms()));
	if (!ev)
		return fail(r, "no answer to the connect request");
	switch (r->c) {
	case C_NO_PRIVATE:
	case C_BAD_MAGIC:
	case C_BAD_VERSION:
	case C_FEW_CREDITS:
	case C_SMALL_BUFFER:
		ret = case_reject(r, ev);
		rdma_ack_cm_event(ev);
		return ret;
	default:
		break;
	}
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
		ret = fail(r, "a valid connect request got %s",
			   cm_event_name(ev->event));
		rdma_ack_cm_event(ev);
		return ret;
	}
	r->established = true;
	ret = check_accept(r, ev);
	rdma_ack_cm_event(ev);
	if (ret)
		return ret;
	rogue_tx_setup(r);

	switch (r->c) {
	case C_LEGAL:
		return case_legal(r);
	case C_CREDIT_OVERRUN:
		return case_credit_overrun(r);
	case C_RECV_OVERRUN:
		return case_recv_overrun(r);
	case C_READ_BAD_RKEY:
		return case_read_bad_rkey(r);
	default:
		if (pull_case(r->c))
			return case_pull(r);
		return case_bad_message(r);
	}
}

static void bad_usage(void)
{
	size_t i;

	fprintf(stderr, "usage: kmsgr_rdma_rogue [--timeout-ms N] IP:PORT CASE\ncases:");
	for (i = 0; i < ARRAY_SIZE(rogue_cases); i++)
		fprintf(stderr, " %s", rogue_cases[i].name);
	fprintf(stderr, "\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct rogue r = { .first_err = IBV_WC_SUCCESS };
	long timeout = 10000;
	int i = 1, ret;
	size_t c;

	if (argc > 2 && !strcmp(argv[1], "--timeout-ms")) {
		timeout = strtol(argv[2], NULL, 10);
		i = 3;
	}
	if (argc - i != 2 || timeout <= 0)
		bad_usage();
	for (c = 0; c < ARRAY_SIZE(rogue_cases); c++)
		if (!strcmp(argv[i + 1], rogue_cases[c].name))
			break;
	if (c == ARRAY_SIZE(rogue_cases))
		bad_usage();
	r.name = rogue_cases[c].name;
	r.c = rogue_cases[c].c;
	if (parse_target(argv[i], &r.dst)) {
		fprintf(stderr, "kmsgr_rdma_rogue: bad address %s (IP:PORT)\n",
			argv[i]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	r.deadline = now_ms() + timeout;
	ret = rogue_run(&r);
	rogue_teardown(&r);
	return ret;
}
