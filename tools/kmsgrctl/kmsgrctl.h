/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgrctl - definitions shared by its objects (kmsgrctl.c: main, output,
 * info, version; ctl.c: the instance, its rings and sessions; session.c,
 * mon.c, bench.c: the objects of the same names).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGRCTL_H
#define KMSGRCTL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "libkmsgr.h"

#define EXIT_USAGE	2
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define NSEC_PER_SEC	1000000000ULL
#define NSEC_PER_MSEC	1000000ULL

/* Command-line options shared by every command. */
struct ctl_opt {
	bool json;		/* -j: JSON output */
	bool pretty;		/* -p: indent JSON output */
	const char *device;	/* -d: device node, NULL for the default */
};

extern struct ctl_opt opt;
extern const char *progname;

/* ---- output (kmsgrctl.c) ------------------------------------------------ */

void error(const char *fmt, ...);
/*
 * getopt() found an unknown option or one without its argument: say which
 * with the one error prefix, and where help is (@object: "session
 * connect", or NULL for the global options).  getopt's own messages are
 * off (opterr = 0).
 */
void ctl_bad_option(const char *object, char **argv);
void jw_open(const char *key, char bracket);
void jw_close(char bracket);
void jw_string(const char *key, const char *val);
void jw_u64(const char *key, __u64 val);
void jw_double(const char *key, double val);
/* As jw_double(), with 9 significant digits (seconds of a latency). */
void jw_double_g(const char *key, double val);
void jw_bool(const char *key, bool val);
/* a member whose value is already valid JSON text */
void jw_raw(const char *key, const char *json);

/* ---- argument helpers (ctl.c) ------------------------------------------- */

/* qsort() comparison of __u64 values, ascending (latency samples) */
int ctl_cmp_u64(const void *a, const void *b);
/*
 * The @p quantile (0 to 1) of @n ascending samples in ns, in us, by
 * nearest rank: p99 of 100 samples is the 99th, not the largest.
 */
double ctl_pct_us(const __u64 *sorted_ns, size_t n, double p);
/* unsigned number with an optional K/M/G (binary) suffix */
int ctl_parse_size(const char *s, __u64 min, __u64 max, __u64 *val);
/* seconds, decimals allowed ("0.5"), as nanoseconds */
int ctl_parse_secs(const char *s, __u64 *ns);
/* --busy-poll USEC (0 to KMSGR_BUSY_POLL_MAX_US); reports a bad value */
int ctl_parse_busy_poll(const char *s, __u32 *usec);
int ctl_parse_transport(const char *s, __u32 *xprt);
const char *ctl_transport_name(__u32 xprt);
const char *ctl_sess_strerror(int err);
int ctl_parse_peer_type(const char *s, __u8 *type);
const char *ctl_peer_type_name(__u8 type);

__u64 ctl_now_ns(void);

/* ---- the instance (ctl.c) ----------------------------------------------- */

/* Set by SIGINT / SIGTERM once ctl_catch_signals() ran. */
extern int ctl_stop_flag;

static inline bool ctl_stopped(void)
{
	return __atomic_load_n(&ctl_stop_flag, __ATOMIC_RELAXED);
}

void ctl_catch_signals(void);

/* The one instance of this process, after ctl_setup(). */
extern struct kmsgr *ctl_k;

/* Open the device with a clear message on failure. */
int ctl_open(struct kmsgr **kp);
/*
 * Open and set up ctl_k: @tx_size bytes for the application, @pool_size
 * of receive pool (rounded up to pages, at least KMSGR_POOL_MIN).
 */
int ctl_setup(__u32 sq_entries, __u64 tx_size, __u64 pool_size);
void ctl_teardown(void);

/*
 * Queue an SQE (copied): into the SQ if it has room, else into a backlog
 * that ctl_wait() drains first.  Never fails except on -ENOMEM.
 */
int ctl_queue(const struct kmsgr_sqe *sqe);
/*
 * Queue a BDEV_READ with KMSGR_SQE_F_LINK and its SEND: they reach the SQ
 * together (one ENTER takes both), from the backlog too.
 */
int ctl_queue_link(const struct kmsgr_sqe pair[2]);
int ctl_queue_release(const struct kmsgr_cqe *recv);

/*
 * Wait for the next CQE until @deadline_ns (CLOCK_MONOTONIC; 0: none) and
 * copy it to @cqe, consuming the ring slot.  Returns 0, -ETIME, -EINTR, or
 * another negative errno (with a message printed).
 */
int ctl_wait(struct kmsgr_cqe *cqe, __u64 deadline_ns);
/*
 * The same within @timeout_ns from now (0: none), reading no clock itself
 * (where clock_gettime() is a system call, as in an emulated guest with an
 * HPET clocksource, that matters per message).
 */
int ctl_wait_for(struct kmsgr_cqe *cqe, __u64 timeout_ns);

/*
 * Take the next CQE if one is ready, without a system call: 1 with @cqe
 * filled, 0 when the CQ is empty.  Lets a loop reap a batch of CQEs and
 * submit what they caused in one KMSGR_IOC_ENTER (the next ctl_wait()).
 */
int ctl_poll(struct kmsgr_cqe *cqe);

/*
 * Take the next of the CQEs that ctl_call() and ctl_conn_open() set aside
 * (not the ring's): 1 with @cqe filled, 0 when there are none.  For a
 * caller that drives the instance itself afterwards (bench's workers).
 */
int ctl_take_deferred(struct kmsgr_cqe *cqe);

/* Options of a client session (session connect, mon, bench). */
struct ctl_conn {
	const char *addr_str;
	struct kmsgr_addr addr;
	__u32 transport;
	__u32 flags;		/* KMSGR_SESS_F_* */
	__u8 peer_type;
	const char *name;	/* "client.admin" */
	const char *keyring;	/* NULL: auth none */
	const char *key_desc;	/* or a logon key's description */
	/*
	 * or cephx with the ticket the mon session @ticket_from holds for
	 * @peer_type (OSD sessions; @keyring and @key_desc are not used)
	 */
	__u32 ticket_from;
	__u64 timeout_ns;
	/* no message when the peer cannot be reached (the caller retries) */
	bool quiet;
	/* out */
	bool open;		/* @id is a live session */
	__u32 id;
	__u64 up_ns;		/* time from CONNECT to UP */
};

/* Check the options of @c (usage errors print and return -EINVAL). */
int ctl_conn_check(struct ctl_conn *c);
/* Connect and wait for UP; on failure print why and return -errno. */
int ctl_conn_open(struct ctl_conn *c);
/* Close the session; quiet. */
void ctl_conn_close(struct ctl_conn *c);
const char *ctl_conn_mode(const struct ctl_conn *c);
const char *ctl_conn_auth(const struct ctl_conn *c);
/* Print why a session event ended things: "closed: connection ..." */
void ctl_report_event(const char *what, const struct kmsgr_cqe *cqe);

/* ---- ceph.conf (cephconf.c) --------------------------------------------- */

struct ceph_conf {
	char mon_host[512];	/* "" when not set */
	char keyring[1024];
	char auth[64];		/* auth client required */
};

/* Parse @path for entity @name: 0, -ENOENT and the like, -EINVAL. */
int ceph_conf_load(const char *path, const char *name, struct ceph_conf *cf);
void ceph_conf_expand(const char *in, const char *name, char *out,
		      size_t size);
int ceph_keyring_find(const char *list, const char *name, char *out,
		      size_t size);
extern const char ceph_default_keyrings[];
int ceph_mon_addr(const char *mon_host, char *out, size_t size);

/*
 * The options every command that talks to a Ceph cluster takes, as the
 * ceph CLI spells them (mon, rados): -c -m -n --id -k --key-desc --secure
 * --timeout --transport.  CEPH_CLI_LONGOPTS goes into a getopt_long
 * table, CEPH_CLI_SHORTOPTS into its option string.
 */
enum {
	CEPH_OPT_SECURE = 256, CEPH_OPT_TIMEOUT, CEPH_OPT_TRANSPORT,
	CEPH_OPT_ID, CEPH_OPT_KEY_DESC, CEPH_OPT_NEXT,
};

#define CEPH_CLI_SHORTOPTS	"c:m:n:k:"
#define CEPH_CLI_LONGOPTS						\
	{ "secure", no_argument, NULL, CEPH_OPT_SECURE },		\
	{ "name", required_argument, NULL, 'n' },			\
	{ "id", required_argument, NULL, CEPH_OPT_ID },			\
	{ "keyring", required_argument, NULL, 'k' },			\
	{ "key-desc", required_argument, NULL, CEPH_OPT_KEY_DESC },	\
	{ "conf", required_argument, NULL, 'c' },			\
	{ "mon-host", required_argument, NULL, 'm' },			\
	{ "timeout", required_argument, NULL, CEPH_OPT_TIMEOUT },	\
	{ "transport", required_argument, NULL, CEPH_OPT_TRANSPORT }

struct ceph_cli {
	struct ctl_conn conn;	/* the monitor session's options */
	const char *conf, *mon_host;
	char idname[KMSGR_NAME_LEN + 8];
};

/* Defaults: tcp, peer type mon, client.admin, 10 s. */
void ceph_cli_init(struct ceph_cli *cli);
/*
 * Take getopt_long's option @c with @arg: 1 when it was one of
 * CEPH_CLI_*, 0 when not, -1 on a bad value (printed).
 */
int ceph_cli_opt(struct ceph_cli *cli, int c, const char *arg);

/*
 * Where the monitor is and how to authenticate, as the ceph CLI decides
 * (see cephconf.c): sets @conn's addr_str (in @abuf) and keyring (in
 * @kbuf, or NULL for auth none).  Returns 0, or an exit status with the
 * reason printed.
 */
int ceph_resolve_mon(struct ctl_conn *conn, const char *addr,
		     const char *mon_host, const char *conf, char *abuf,
		     size_t asize, char *kbuf, size_t ksize);

/* ---- request and reply (ctl.c) ------------------------------------------ */

/* A received message, its segments copied out of the receive pool. */
struct ctl_reply {
	__u16 type, version;
	__u64 tid;
	char *front;		/* malloc'd, NUL-terminated */
	__u32 front_len;
	__u8 *data;		/* malloc'd, or NULL when empty */
	__u32 data_len;
};

void ctl_reply_free(struct ctl_reply *r);

/*
 * The user_data of ctl_call()'s SENDs: this bit and a number of its own
 * per call, so that the late completion of a call that gave up is not
 * taken for a later one's.  Other SENDs in flight meanwhile need other
 * values: their completions (and other sessions' messages and events)
 * are kept for the next ctl_wait() or ctl_poll(), as are those
 * ctl_conn_open() sees.
 */
#define CTL_CALL_UDATA		(1ULL << 62)

/* A message to send: its front and data already in the buffer area. */
struct ctl_msg {
	__u16 type, version, compat;
	__u64 tid;
	struct kmsgr_slice front, data;
};

/*
 * Send @m on session @c and wait until @deadline_ns for a reply of
 * @reply_type (and @m's tid unless @any_tid), copying it to @r; other
 * messages are released.  Returns once the SEND has completed too, so
 * that @m's slices may be reused.  Failures print "@what: why" (nothing
 * when @what is NULL) and return -errno: -ETIME (no reply or completion
 * in time), -EINTR (a signal), the session's end (-ECONNABORTED or its
 * error).
 */
int ctl_call(struct ctl_conn *c, const struct ctl_msg *m, __u16 reply_type,
	     bool any_tid, __u64 deadline_ns, const char *what,
	     struct ctl_reply *r);

/* The cluster's fsid and monmap epoch, by MMonGetMap (mon.c). */
int mon_get_fsid(struct ctl_conn *c, __u8 fsid[16], __u32 *epoch);

/* ---- JSON scanning (json.c) --------------------------------------------- */

/* End of the string starting at @p (on its opening quote), or NULL. */
const char *json_skip_string(const char *p);
/* End of the value at @p, or NULL when malformed. */
const char *json_skip_value(const char *p);
/* Value of member @key (at any depth) after @from, or NULL. */
const char *json_find(const char *from, const char *key);
/* Value of member @key of the object at @obj (its own members only). */
const char *json_member(const char *obj, const char *key);
/* First element of the array at @arr, the one after @elem; NULL at end. */
const char *json_first(const char *arr);
const char *json_next(const char *elem);
/* The string at @v into @out ("" when not a string). */
void json_string_at(const char *v, char *out, size_t cap);
/* The integer at @v: 0, or -1 when it is not a number. */
int json_i64_at(const char *v, long long *out);
/* Member names of the object at @v, comma-separated. */
void json_keys_at(const char *v, char *out, size_t cap);
/* Remove the whitespace outside strings, in place. */
void json_compact(char *json);

/* ---- objects ------------------------------------------------------------ */

int cmd_session(int argc, char **argv);
/* show.c: over the netlink family */
int cmd_session_show(int argc, char **argv);
int cmd_listener(int argc, char **argv);
int cmd_instance(int argc, char **argv);
int cmd_bdev(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_monitor(int argc, char **argv);
int cmd_dev(int argc, char **argv);
int cmd_key(int argc, char **argv);
int cmd_mon(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_rados(int argc, char **argv);
int cmd_blk(int argc, char **argv);

#endif /* KMSGRCTL_H */
