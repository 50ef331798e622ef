/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr selftests - ring helpers shared by the session tests: an instance
 * with its rings mapped, sessions between two instances, and message
 * streams whose every message is checked on arrival (once, in order, same
 * type, lengths and content hash as sent).
 *
 * Everything here uses libkmsgr; nothing talks to the ioctls directly.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGR_RING_UTIL_H
#define KMSGR_RING_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libkmsgr.h>

#define KT_NSEG			3
#define KT_MAX_INST		4
#define KT_MAX_STREAMS		8
#define KT_PEER_ANY		0	/* kmsgr listeners: any type */
#define KT_ENTITY_OSD		4
#define KT_ENTITY_CLIENT	8

/* One kmsgr instance with its rings and buffer area mapped. */
#define KT_CEPHX_NAME	"admin"	/* of struct kt_inst's key */

struct kt_inst {
	struct kmsgr *k;
	const char *name;		/* for messages */
	uint8_t *buf;			/* the buffer area */
	uint64_t buf_size;
	uint64_t tx_size;		/* [0, tx_size) is ours: random bytes */
	uint64_t pool_size;
	uint32_t transport;		/* of kt_listen/kt_connect: KMSGR_XPRT_*,
					 * 0 = tcp
					 */
	/*
	 * of kt_listen/kt_connect: NULL, auth none; else cephx with this
	 * 16-byte key for entity client.KT_CEPHX_NAME (kt_listen: the one
	 * key the listener accepts)
	 */
	const uint8_t *key;
	unsigned int nr_cqes;		/* CQEs seen */
	unsigned int nr_op_errors;	/* KMSGR_CQE_OP with res < 0 */
	/* RECVs whose RELEASE found the SQ full: released by a later run */
	struct kmsgr_cqe *rel_backlog;
	unsigned int rel_n, rel_cap;
};

/* What one message of a stream looks like. */
struct kt_msg {
	uint16_t type;
	uint16_t version;
	uint32_t off[KT_NSEG];		/* in the sender's tx area */
	uint32_t len[KT_NSEG];
	uint64_t hash[KT_NSEG];		/* of the bytes sent */
};

/*
 * A one-way stream of messages from a session of @src to its peer session
 * on @dst.  The sender keeps at most @window sends in flight.
 */
struct kt_stream {
	int id;				/* index in its kt_loop */
	struct kt_inst *src, *dst;
	uint32_t src_sess, dst_sess;
	struct kt_msg *msgs;
	unsigned int total;
	unsigned int window;
	unsigned int queued;		/* SEND SQEs prepared */
	unsigned int completed;		/* KMSGR_CQE_SEND seen */
	unsigned int received;		/* KMSGR_CQE_RECV checked */
	uint8_t *done;			/* per message: send completed */
	uint64_t last_seq;
	uint64_t bytes;			/* payload bytes received */
	int failed;			/* first problem seen (0: none) */
	char why[256];
};

/* Session events seen by a kt_loop, for the tests to look at. */
struct kt_event {
	struct kt_inst *inst;
	uint32_t session;
	uint8_t event;
	uint16_t reason;
	int32_t res;
	uint64_t user_data;
	uint64_t tid;		/* ACCEPTED, UP: 1 + the listener key used */
	bool claimed;		/* ACCEPTED: kt_wait_pair() returned it */
};

#define KT_MAX_EVENTS	1024

struct kt_loop {
	struct kt_inst *inst[KT_MAX_INST];
	int nr_inst;
	struct kt_stream *streams[KT_MAX_STREAMS];
	int nr_streams;
	struct kt_event ev[KT_MAX_EVENTS];
	unsigned int nr_ev;
	unsigned int nr_ev_dropped;	/* more than KT_MAX_EVENTS */
	unsigned int stray;		/* CQEs nobody expected */
	char stray_why[256];
	/* optional hook, called for every CQE before the default handling */
	int (*hook)(struct kt_loop *lp, struct kt_inst *ti,
		    const struct kmsgr_cqe *cqe);
	void *priv;
};

/* deterministic random numbers (xorshift64*) */
uint64_t kt_rand(uint64_t *state);
uint64_t kt_hash(const void *p, size_t len);
uint64_t kt_now_ms(void);
/* An integer from the environment, or @def. */
long kt_env_long(const char *name, long def);

/*
 * Open an instance, SETUP with @sq SQEs, a tx area of @tx_size bytes
 * (filled with random bytes from @seed) followed by a receive pool of
 * @pool_size bytes.  RLIMIT_MEMLOCK is raised to cover it.
 * Return: 0 or a negative errno (the reason is printed).
 */
int kt_inst_open(struct kt_inst *ti, const char *name, unsigned int sq,
		 uint64_t tx_size, uint64_t pool_size, uint64_t seed);
/* the same with a CQ of @cq entries instead of 4 * @sq */
int kt_inst_open_cq(struct kt_inst *ti, const char *name, unsigned int sq,
		    unsigned int cq, uint64_t tx_size, uint64_t pool_size,
		    uint64_t seed);
void kt_inst_close(struct kt_inst *ti);

/* A struct kmsgr_addr for "IP" (IPv4 or IPv6) and @port (host order). */
int kt_addr(struct kmsgr_addr *a, const char *ip, uint16_t port);

int kt_listen(struct kt_inst *ti, const char *ip, uint32_t flags,
	      uint64_t user_data, struct kmsgr_listen *l);
/* CONNECT as a client to a kmsgr-like peer (auth: kt_inst.key) */
int kt_connect(struct kt_inst *ti, const struct kmsgr_addr *a,
	       uint32_t flags, uint8_t peer_type, uint64_t user_data,
	       uint32_t *id);
/* the same as entity client.@name, with cephx when @key (16 bytes) is set */
int kt_connect_as(struct kt_inst *ti, const struct kmsgr_addr *a,
		  uint32_t flags, uint8_t peer_type, uint64_t user_data,
		  const char *name, const uint8_t *key, uint32_t *id);

/*
 * The transport of a test variant (KMSGR_XPRT_TCP or KMSGR_XPRT_RDMA) and
 * the address its listeners bind, port 0; clients dial the bound address.
 * TCP: 127.0.0.1.  RDMA: KMSGR_VM_IP (tools/vm/run --rxe), since rdma_cm
 * cannot use 127.0.0.1 on the soft-RoCE device rxe0 bound to eth0.
 */
struct kt_xprt {
	uint32_t transport;
	const char *name;		/* "tcp", "rdma" */
	const char *ip;
};

/*
 * Fill @x for @transport.  Return: NULL, or why the variant cannot run
 * here, for SKIP: KMSGR_VM_IP is not set, or kmsgr_rdma.ko is not loaded
 * (INFO without KMSGR_FEAT_RDMA).  Inline: the programs on the raw uapi
 * (kmsgr_sess_test, kmsgr_ring_test) do not link kmsgr_ring_util.c.
 */
static inline const char *kt_xprt_init(struct kt_xprt *x, uint32_t transport)
{
	struct kmsgr_info info;
	struct kmsgr *k;
	int ret;

	x->transport = transport;
	x->name = "tcp";
	x->ip = "127.0.0.1";
	if (transport == KMSGR_XPRT_TCP)
		return NULL;
	x->name = "rdma";
	x->ip = getenv("KMSGR_VM_IP");
	if (!x->ip || !*x->ip)
		return "rdma: KMSGR_VM_IP not set (run in the guest with --rxe)";
	ret = kmsgr_open(NULL, &k);
	if (ret)
		return "rdma: cannot open an instance to ask INFO";
	memset(&info, 0, sizeof(info));
	ret = kmsgr_info(k, &info);
	kmsgr_close(k);
	if (ret)
		return "rdma: INFO failed";
	if (!(info.features & KMSGR_FEAT_RDMA))
		return "rdma: kmsgr_rdma.ko is not loaded (no KMSGR_FEAT_RDMA)";
	return NULL;
}

/*
 * The variants of a fixture @f whose sessions run over each transport:
 * tcp and rdma, variant->transport being KMSGR_XPRT_TCP or _RDMA (for
 * kt_xprt_init()).  Use after including kselftest_harness.h.
 */
#define KT_XPRT_VARIANTS(f)						\
	FIXTURE_VARIANT(f) {						\
		uint32_t transport;					\
	};								\
	FIXTURE_VARIANT_ADD(f, tcp) {					\
		.transport = KMSGR_XPRT_TCP,				\
	};								\
	FIXTURE_VARIANT_ADD(f, rdma) {					\
		.transport = KMSGR_XPRT_RDMA,				\
	}

/* A kmsgr_rdma counter (pinned_bytes, pulled_bytes, ...); -1: unreadable. */
long long kt_rdma_counter(const char *name);

/*
 * A session over rdma between two open instances: @srv listens on
 * 0.0.0.0 (:: if @ip is IPv6) with @flags (its LISTEN in *@l), @cli
 * dials @ip at the bound port (in *@dial) with @flags; both instances'
 * transport becomes rdma.
 * Waits for UP and ACCEPTED.  Return: 0, -EOPNOTSUPP when kmsgr_rdma is
 * not loaded (no KMSGR_FEAT_RDMA), -ETIME or -errno (printed).
 */
int kt_rdma_pair(struct kt_loop *lp, struct kt_inst *srv, struct kt_inst *cli,
		 const char *ip, uint32_t flags, struct kmsgr_listen *l,
		 struct kmsgr_addr *dial, uint32_t *srv_id, uint32_t *cli_id);

/* next SQE, submitting to make room if needed; NULL if the SQ stays full */
struct kmsgr_sqe *kt_sqe(struct kt_inst *ti);

void kt_loop_init(struct kt_loop *lp);
void kt_loop_add(struct kt_loop *lp, struct kt_inst *ti);
void kt_loop_add_stream(struct kt_loop *lp, struct kt_stream *st);

/*
 * One round: queue what the streams may send, submit, wait up to @ms for
 * a completion on any instance, handle every CQE there is.
 * Return: 0, or a negative errno of libkmsgr or poll().
 */
int kt_loop_run_once(struct kt_loop *lp, int ms);

/*
 * Run rounds until @done(lp) is true or @ms passed.
 * Return: 0 when done, -ETIME on timeout, or a negative errno.
 */
int kt_loop_run(struct kt_loop *lp, bool (*done)(struct kt_loop *lp),
		int ms);

/* The first event @ev (0: any) of @session on @ti since event @from. */
const struct kt_event *kt_find_event(const struct kt_loop *lp,
				     const struct kt_inst *ti,
				     uint32_t session, uint8_t ev,
				     unsigned int from);

/*
 * Wait for the UP of a CONNECT (@cli_id on @cli) and the ACCEPTED on @srv;
 * *@srv_id gets the accepted session (the latest ACCEPTED on @srv).
 * Return: 0, -ETIME or -errno.
 */
int kt_wait_pair(struct kt_loop *lp, struct kt_inst *cli, uint32_t cli_id,
		 struct kt_inst *srv, uint32_t *srv_id, int ms);

/* Plan of a stream. */
struct kt_plan {
	unsigned int count;
	unsigned int max_log2;		/* largest segment 2^max_log2 */
	unsigned int small_log2;	/* usual largest segment */
	unsigned int big_one_in;	/* 1 in N segments may be large */
	uint64_t seed;
};

/*
 * Build a stream of @p->count messages from @src's session @src_sess to
 * @dst's @dst_sess: segment lengths log-uniform in [0, 2^max_log2] (a
 * length above 2^small_log2 only for 1 in big_one_in draws, so the volume
 * stays bounded), presence of front/middle/data cycling through all eight
 * combinations, and content from random places of the tx area.
 * Return: 0 or -ENOMEM.
 */
int kt_stream_init(struct kt_stream *st, struct kt_inst *src,
		   uint32_t src_sess, struct kt_inst *dst, uint32_t dst_sess,
		   const struct kt_plan *p, unsigned int window);
void kt_stream_free(struct kt_stream *st);
/* total payload bytes of the plan */
uint64_t kt_stream_volume(const struct kt_stream *st);
bool kt_stream_finished(const struct kt_stream *st);
bool kt_loop_streams_finished(struct kt_loop *lp);

/*
 * The bad-input tests' bed: instance "victim" with a healthy lossless
 * session to instance "peer" on 127.0.0.1, and a stream of small messages
 * each way that must keep flowing (once, in order, hashes equal) whatever
 * a test does to other instances meanwhile.
 */
struct kt_bed {
	struct kt_inst victim, peer;
	struct kt_loop lp;
	struct kmsgr_listen pl;		/* the peer's listener */
	uint32_t v_id, p_id;		/* the healthy session, both ends */
	struct kt_stream out, in;	/* victim -> peer, peer -> victim */
};

/* Set up @b and its streams: 0, or -errno (the reason is printed). */
int kt_bed_open(struct kt_bed *b);
/*
 * Run @b's loop until its session moved @n more messages each way: 0,
 * -EPROTO when a stream failed, -ETIME after @ms.
 */
int kt_bed_progress(struct kt_bed *b, unsigned int n, int ms);
/* Close what kt_bed_open() opened (also after it failed half-way). */
void kt_bed_close(struct kt_bed *b);
/* Why the bed cannot be set up (no module, none with rings and TCP), or NULL */
const char *kt_bed_missing(void);

/*
 * Receive-pool bytes @ti has in use (kmsgr_info.pool_bytes), after
 * submitting what is prepared; -1 if INFO fails.
 */
long long kt_pool_bytes(struct kt_inst *ti);

/* Give a RECV's pool slices back. */
int kt_release(struct kt_inst *ti, const struct kmsgr_cqe *cqe);

/*
 * Kernel log watch: kt_kmsg_open() positions at the end of /dev/kmsg;
 * kt_kmsg_check() reads what was logged since and copies the first line
 * that shows a kernel problem (WARNING, BUG, Oops, general protection,
 * Call Trace) into @out.  Return: 1 if there was one, 0 if not, -errno.
 */
int kt_kmsg_open(void);
int kt_kmsg_check(int fd, char *out, size_t len);

/*
 * A tracefs instance of the calling program's own
 * (instances/<program>.<pid>: nobody else's tracing is touched) with the
 * kmsgr events, and kmsgr_rdma's with @rdma, enabled.
 * kt_trace_create() returns NULL, or why it cannot be had (no tracefs,
 * the module's events missing); tracefs is mounted at /sys/kernel/tracing
 * when it is not.  kt_trace_remove() turns the events off, clears the
 * buffer and removes the instance.  kt_trace_read(): the trace,
 * NUL-terminated (malloc'd), or NULL.  kt_trace_write(): a line to one of
 * the instance's files (relative path), 0 or -errno.
 */
struct kt_trace {
	char dir[256];		/* <tracefs>/instances/<ours>, "" when none */
	bool rdma;		/* kmsgr_rdma events enabled too */
};

const char *kt_trace_create(struct kt_trace *t, bool rdma);
void kt_trace_remove(struct kt_trace *t);
char *kt_trace_read(const struct kt_trace *t);
int kt_trace_write(const struct kt_trace *t, const char *file,
		   const char *val);

#endif /* KMSGR_RING_UTIL_H */
