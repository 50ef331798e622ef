// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkmsgr - queries and events of the "kmsgr" generic netlink family
 * (<linux/kmsgr_netlink.h>), on libnl-genl-3.  A separate object file, so
 * that programs linking libkmsgr.a without these calls do not need libnl.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include <linux/kmsgr_netlink.h>

#include "libkmsgr.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK	270
#endif

struct kmsgr_nl {
	struct nl_sock *sk;		/* requests */
	struct nl_sock *mon;		/* the monitor group, once joined */
	int family;
	int err;			/* errno of the last error ack */
	char errmsg[128];		/* its extack message, or "" */
};

/* What one request's callbacks fill. */
struct kmsgr_nl_req {
	struct kmsgr_nl *nl;
	int (*parse)(struct nlattr **tb, void *out);
	int maxattr;
	/* dumps: one callback per object; do: one object into @out */
	int (*fn)(const void *obj, void *arg);
	void *arg;
	void *out;			/* an object's struct, for the parse */
	size_t out_size;
	int count;
	int stop;			/* what @fn returned, when not 0 */
};

/* A copy of @sk's callbacks (nl_socket_get_cb() gives a reference). */
static struct nl_cb *kmsgr_nl_cb_clone(struct nl_sock *sk)
{
	struct nl_cb *own = nl_socket_get_cb(sk), *cb;

	if (!own)
		return NULL;
	cb = nl_cb_clone(own);
	nl_cb_put(own);
	return cb;
}

static int kmsgr_nl_errno(int nlerr)
{
	switch (-nlerr) {
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
		return -EPERM;
	case NLE_NOACCESS:
		return -EACCES;
	case NLE_OBJ_NOTFOUND:
		return -ENOENT;
	case NLE_INVAL:
		return -EINVAL;
	case NLE_AGAIN:
		return -EAGAIN;
	case NLE_MSGSIZE:
		return -EMSGSIZE;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}

static int kmsgr_nl_err_cb(struct sockaddr_nl *who, struct nlmsgerr *e,
			   void *arg)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)e - 1;
	struct kmsgr_nl *nl = arg;
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t off = sizeof(*e);

	(void)who;
	nl->err = e->error;
	nl->errmsg[0] = '\0';
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NL_STOP;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
	if (nlh->nlmsg_len < NLMSG_HDRLEN + off)
		return NL_STOP;
	if (!nla_parse(tb, NLMSGERR_ATTR_MAX,
		       (struct nlattr *)((char *)e + off),
		       nlh->nlmsg_len - NLMSG_HDRLEN - off, NULL) &&
	    tb[NLMSGERR_ATTR_MSG])
		snprintf(nl->errmsg, sizeof(nl->errmsg), "%s",
			 nla_get_string(tb[NLMSGERR_ATTR_MSG]));
	return NL_STOP;
}

int kmsgr_nl_open(struct kmsgr_nl **out)
{
	struct kmsgr_nl *nl;
	int one = 1;
	int ret;

	nl = calloc(1, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	nl->sk = nl_socket_alloc();
	if (!nl->sk) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = genl_connect(nl->sk);
	if (ret < 0) {
		ret = kmsgr_nl_errno(ret);
		goto out_sock;
	}
	/* do requests ask for their ack themselves; dumps end with DONE */
	nl_socket_disable_auto_ack(nl->sk);
	/* error acks carry the kernel's message (extack) */
	setsockopt(nl_socket_get_fd(nl->sk), SOL_NETLINK, NETLINK_EXT_ACK,
		   &one, sizeof(one));
	nl->family = genl_ctrl_resolve(nl->sk, KMSGR_GENL_NAME);
	if (nl->family < 0) {
		/* no such family: the module is not loaded */
		ret = nl->family == -NLE_OBJ_NOTFOUND ? -ENOENT :
			kmsgr_nl_errno(nl->family);
		goto out_sock;
	}
	*out = nl;
	return 0;

out_sock:
	nl_socket_free(nl->sk);
out_free:
	free(nl);
	return ret;
}

void kmsgr_nl_close(struct kmsgr_nl *nl)
{
	if (!nl)
		return;
	if (nl->mon)
		nl_socket_free(nl->mon);
	nl_socket_free(nl->sk);
	free(nl);
}

const char *kmsgr_nl_errmsg(const struct kmsgr_nl *nl)
{
	return nl->errmsg;
}

/* ---- attributes into the public structs ---------------------------------- */

static __u64 u64_or_0(struct nlattr *a)
{
	return a ? nla_get_u64(a) : 0;
}

static __u32 u32_or_0(struct nlattr *a)
{
	return a ? nla_get_u32(a) : 0;
}

static __u8 u8_or_0(struct nlattr *a)
{
	return a ? nla_get_u8(a) : 0;
}

static int get_addr(struct nlattr *a, struct kmsgr_addr *out)
{
	if (!a)
		return 0;
	if (nla_len(a) != (int)sizeof(*out))
		return -EPROTO;
	memcpy(out, nla_data(a), sizeof(*out));
	return 1;
}

static void get_comm(struct nlattr *a, char *comm, size_t len)
{
	if (a)
		snprintf(comm, len, "%s", nla_get_string(a));
}

static int parse_session(struct nlattr **tb, void *out)
{
	struct kmsgr_session_info *s = out;
	int r1, r2;

	if (!tb[KMSGR_A_SESSION_INSTANCE] || !tb[KMSGR_A_SESSION_ID])
		return -EPROTO;
	s->instance = nla_get_u64(tb[KMSGR_A_SESSION_INSTANCE]);
	s->id = nla_get_u32(tb[KMSGR_A_SESSION_ID]);
	s->pid = u32_or_0(tb[KMSGR_A_SESSION_PID]);
	get_comm(tb[KMSGR_A_SESSION_COMM], s->comm, sizeof(s->comm));
	s->user_data = u64_or_0(tb[KMSGR_A_SESSION_USER_DATA]);
	s->transport = u32_or_0(tb[KMSGR_A_SESSION_TRANSPORT]);
	s->server = !!tb[KMSGR_A_SESSION_SERVER];
	s->listener = u32_or_0(tb[KMSGR_A_SESSION_LISTENER]);
	r1 = get_addr(tb[KMSGR_A_SESSION_LOCAL], &s->local);
	r2 = get_addr(tb[KMSGR_A_SESSION_PEER], &s->peer);
	if (r1 < 0 || r2 < 0)
		return -EPROTO;
	s->has_local = r1;
	s->has_peer = r2;
	s->peer_type = u8_or_0(tb[KMSGR_A_SESSION_PEER_TYPE]);
	s->peer_gid = (__s64)u64_or_0(tb[KMSGR_A_SESSION_PEER_GID]);
	s->state = u8_or_0(tb[KMSGR_A_SESSION_STATE]);
	s->mode = u8_or_0(tb[KMSGR_A_SESSION_MODE]);
	s->lossless = !!tb[KMSGR_A_SESSION_LOSSLESS];
	s->auth = u32_or_0(tb[KMSGR_A_SESSION_AUTH]);
	s->msgs_out = u64_or_0(tb[KMSGR_A_SESSION_MSGS_OUT]);
	s->bytes_out = u64_or_0(tb[KMSGR_A_SESSION_BYTES_OUT]);
	s->msgs_in = u64_or_0(tb[KMSGR_A_SESSION_MSGS_IN]);
	s->bytes_in = u64_or_0(tb[KMSGR_A_SESSION_BYTES_IN]);
	s->in_flight = u32_or_0(tb[KMSGR_A_SESSION_IN_FLIGHT]);
	s->reconnects = u32_or_0(tb[KMSGR_A_SESSION_RECONNECTS]);
	s->last_error = (__s32)u32_or_0(tb[KMSGR_A_SESSION_LAST_ERROR]);
	s->last_reason = u32_or_0(tb[KMSGR_A_SESSION_LAST_REASON]);
	s->event = u8_or_0(tb[KMSGR_A_SESSION_EVENT]);
	s->reason = u32_or_0(tb[KMSGR_A_SESSION_REASON]);
	s->res = (__s32)u32_or_0(tb[KMSGR_A_SESSION_RES]);
	return 0;
}

static int parse_listener(struct nlattr **tb, void *out)
{
	struct kmsgr_listener_info *l = out;
	int r;

	if (!tb[KMSGR_A_LISTENER_INSTANCE] || !tb[KMSGR_A_LISTENER_ID])
		return -EPROTO;
	l->instance = nla_get_u64(tb[KMSGR_A_LISTENER_INSTANCE]);
	l->id = nla_get_u32(tb[KMSGR_A_LISTENER_ID]);
	l->pid = u32_or_0(tb[KMSGR_A_LISTENER_PID]);
	get_comm(tb[KMSGR_A_LISTENER_COMM], l->comm, sizeof(l->comm));
	l->user_data = u64_or_0(tb[KMSGR_A_LISTENER_USER_DATA]);
	l->transport = u32_or_0(tb[KMSGR_A_LISTENER_TRANSPORT]);
	r = get_addr(tb[KMSGR_A_LISTENER_LOCAL], &l->local);
	if (r < 0)
		return r;
	l->has_local = r;
	l->auth = u32_or_0(tb[KMSGR_A_LISTENER_AUTH]);
	l->flags = u32_or_0(tb[KMSGR_A_LISTENER_FLAGS]);
	l->my_type = u8_or_0(tb[KMSGR_A_LISTENER_MY_TYPE]);
	l->half_open = u32_or_0(tb[KMSGR_A_LISTENER_HALF_OPEN]);
	l->accepted = u64_or_0(tb[KMSGR_A_LISTENER_ACCEPTED]);
	l->refused = u64_or_0(tb[KMSGR_A_LISTENER_REFUSED]);
	l->event = u8_or_0(tb[KMSGR_A_LISTENER_EVENT]);
	l->reason = u32_or_0(tb[KMSGR_A_LISTENER_REASON]);
	l->res = (__s32)u32_or_0(tb[KMSGR_A_LISTENER_RES]);
	return 0;
}

static int parse_instance(struct nlattr **tb, void *out)
{
	struct kmsgr_instance_info *i = out;

	if (!tb[KMSGR_A_INSTANCE_ID])
		return -EPROTO;
	i->id = nla_get_u64(tb[KMSGR_A_INSTANCE_ID]);
	i->pid = u32_or_0(tb[KMSGR_A_INSTANCE_PID]);
	get_comm(tb[KMSGR_A_INSTANCE_COMM], i->comm, sizeof(i->comm));
	i->uid = u32_or_0(tb[KMSGR_A_INSTANCE_UID]);
	i->sq_entries = u32_or_0(tb[KMSGR_A_INSTANCE_SQ_ENTRIES]);
	i->cq_entries = u32_or_0(tb[KMSGR_A_INSTANCE_CQ_ENTRIES]);
	i->buf_size = u64_or_0(tb[KMSGR_A_INSTANCE_BUF_SIZE]);
	i->pool_size = u64_or_0(tb[KMSGR_A_INSTANCE_POOL_SIZE]);
	i->pool_used = u64_or_0(tb[KMSGR_A_INSTANCE_POOL_USED]);
	i->locked = u64_or_0(tb[KMSGR_A_INSTANCE_LOCKED]);
	i->sessions = u32_or_0(tb[KMSGR_A_INSTANCE_SESSIONS]);
	i->sqes = u64_or_0(tb[KMSGR_A_INSTANCE_SQES]);
	i->sqe_errors = u64_or_0(tb[KMSGR_A_INSTANCE_SQE_ERRORS]);
	i->cqes = u64_or_0(tb[KMSGR_A_INSTANCE_CQES]);
	i->cq_full = u64_or_0(tb[KMSGR_A_INSTANCE_CQ_FULL]);
	i->cq_overflow = u64_or_0(tb[KMSGR_A_INSTANCE_CQ_OVERFLOW]);
	i->cq_lost = u64_or_0(tb[KMSGR_A_INSTANCE_CQ_LOST]);
	i->pool_full = u64_or_0(tb[KMSGR_A_INSTANCE_POOL_FULL]);
	i->cq_paused = !!tb[KMSGR_A_INSTANCE_CQ_PAUSED];
	i->pinned = u64_or_0(tb[KMSGR_A_INSTANCE_PINNED]);
	i->registered = u64_or_0(tb[KMSGR_A_INSTANCE_REGISTERED]);
	i->bdev_read_bytes = u64_or_0(tb[KMSGR_A_INSTANCE_BDEV_READ_BYTES]);
	i->bdev_write_bytes = u64_or_0(tb[KMSGR_A_INSTANCE_BDEV_WRITE_BYTES]);
	return 0;
}

static int parse_bdev(struct nlattr **tb, void *out)
{
	struct kmsgr_bdev_info *b = out;

	if (!tb[KMSGR_A_BDEV_INSTANCE] || !tb[KMSGR_A_BDEV_ID])
		return -EPROTO;
	b->instance = nla_get_u64(tb[KMSGR_A_BDEV_INSTANCE]);
	b->id = nla_get_u32(tb[KMSGR_A_BDEV_ID]);
	b->pid = u32_or_0(tb[KMSGR_A_BDEV_PID]);
	get_comm(tb[KMSGR_A_BDEV_COMM], b->comm, sizeof(b->comm));
	get_comm(tb[KMSGR_A_BDEV_NAME], b->name, sizeof(b->name));
	b->major = u32_or_0(tb[KMSGR_A_BDEV_MAJOR]);
	b->minor = u32_or_0(tb[KMSGR_A_BDEV_MINOR]);
	b->lbs = u32_or_0(tb[KMSGR_A_BDEV_LBS]);
	b->pbs = u32_or_0(tb[KMSGR_A_BDEV_PBS]);
	b->capacity = u64_or_0(tb[KMSGR_A_BDEV_CAPACITY]);
	b->flags = u32_or_0(tb[KMSGR_A_BDEV_FLAGS]);
	b->attrs = u32_or_0(tb[KMSGR_A_BDEV_ATTRS]);
	b->in_flight = u32_or_0(tb[KMSGR_A_BDEV_IN_FLIGHT]);
	b->gone = !!tb[KMSGR_A_BDEV_GONE];
	b->ops = u64_or_0(tb[KMSGR_A_BDEV_OPS]);
	b->read_ops = u64_or_0(tb[KMSGR_A_BDEV_READ_OPS]);
	b->write_ops = u64_or_0(tb[KMSGR_A_BDEV_WRITE_OPS]);
	b->flush_ops = u64_or_0(tb[KMSGR_A_BDEV_FLUSH_OPS]);
	b->read_bytes = u64_or_0(tb[KMSGR_A_BDEV_READ_BYTES]);
	b->write_bytes = u64_or_0(tb[KMSGR_A_BDEV_WRITE_BYTES]);
	b->errors = u64_or_0(tb[KMSGR_A_BDEV_ERRORS]);
	return 0;
}

static int parse_stats(struct nlattr **tb, void *out)
{
	struct kmsgr_stats_info *s = out;

	s->instances = u32_or_0(tb[KMSGR_A_STATS_INSTANCES]);
	s->sessions = u32_or_0(tb[KMSGR_A_STATS_SESSIONS]);
	s->connects = u64_or_0(tb[KMSGR_A_STATS_CONNECTS]);
	s->accepts = u64_or_0(tb[KMSGR_A_STATS_ACCEPTS]);
	s->refused = u64_or_0(tb[KMSGR_A_STATS_REFUSED]);
	s->reconnects = u64_or_0(tb[KMSGR_A_STATS_RECONNECTS]);
	s->faults = u64_or_0(tb[KMSGR_A_STATS_FAULTS]);
	s->msgs_out = u64_or_0(tb[KMSGR_A_STATS_MSGS_OUT]);
	s->bytes_out = u64_or_0(tb[KMSGR_A_STATS_BYTES_OUT]);
	s->msgs_in = u64_or_0(tb[KMSGR_A_STATS_MSGS_IN]);
	s->bytes_in = u64_or_0(tb[KMSGR_A_STATS_BYTES_IN]);
	s->pinned = u64_or_0(tb[KMSGR_A_STATS_PINNED]);
	s->registered = u64_or_0(tb[KMSGR_A_STATS_REGISTERED]);
	return 0;
}

static int parse_dev(struct nlattr **tb, void *out)
{
	struct kmsgr_dev_info *d = out;

	if (!tb[KMSGR_A_DEV_NAME])
		return -EPROTO;
	d->transport = u32_or_0(tb[KMSGR_A_DEV_TRANSPORT]);
	get_comm(tb[KMSGR_A_DEV_NAME], d->name, sizeof(d->name));
	d->ports = u32_or_0(tb[KMSGR_A_DEV_PORTS]);
	d->ports_down = u64_or_0(tb[KMSGR_A_DEV_PORTS_DOWN]);
	d->conns = u32_or_0(tb[KMSGR_A_DEV_CONNS]);
	d->parked = u32_or_0(tb[KMSGR_A_DEV_PARKED]);
	d->dying = !!tb[KMSGR_A_DEV_DYING];
	return 0;
}

/* ---- requests ------------------------------------------------------------ */

/*
 * A callback's non-zero return or a bad answer stops the calls, not the
 * reading: the rest of a dump (and a do request's ack) is read and
 * dropped, so that it is not taken for the answer to the next request.
 */
static int kmsgr_nl_valid_cb(struct nl_msg *msg, void *arg)
{
	struct kmsgr_nl_req *r = arg;
	struct nlattr *tb[64];
	int ret;

	if (r->stop)
		return NL_SKIP;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, r->maxattr, NULL) < 0) {
		r->stop = -EPROTO;
		return NL_SKIP;
	}
	memset(r->out, 0, r->out_size);
	ret = r->parse(tb, r->out);
	if (ret) {
		r->stop = ret;
		return NL_SKIP;
	}
	r->count++;
	if (r->fn) {
		ret = r->fn(r->out, r->arg);
		if (ret) {
			r->stop = ret;
			return NL_SKIP;
		}
	}
	return NL_OK;
}

/*
 * The end of a dump: a dump the kernel cut short (out of memory, say)
 * ends with its errno in NLMSG_DONE's payload, which libnl does not look
 * at; without this the objects so far would pass for all of them.
 */
static int kmsgr_nl_finish_cb(struct nl_msg *msg, void *arg)
{
	struct kmsgr_nl_req *r = arg;
	struct nlmsghdr *h = nlmsg_hdr(msg);
	int err;

	if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(err))) {
		memcpy(&err, nlmsg_data(h), sizeof(err));
		if (err < 0 && !r->stop)
			r->stop = err;
	}
	return NL_STOP;
}

/*
 * Send @cmd (a dump with @dump) with an optional u64 attribute @a64 and
 * u32 attribute @a32 (0: none) and run @r's callbacks on the answers.
 */
static int kmsgr_nl_request(struct kmsgr_nl *nl, __u8 cmd, bool dump,
			    int a64, __u64 v64, int a32, __u32 v32,
			    struct kmsgr_nl_req *r)
{
	struct nl_msg *msg;
	struct nl_cb *cb;
	int ret;

	r->nl = nl;
	nl->err = 0;
	nl->errmsg[0] = '\0';
	msg = nlmsg_alloc();
	if (!msg)
		return -ENOMEM;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0,
			 dump ? NLM_F_DUMP : NLM_F_ACK, cmd,
			 KMSGR_GENL_VERSION) ||
	    (a64 && nla_put_u64(msg, a64, v64) < 0) ||
	    (a32 && nla_put_u32(msg, a32, v32) < 0)) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	cb = kmsgr_nl_cb_clone(nl->sk);
	if (!cb) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, kmsgr_nl_valid_cb, r);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, kmsgr_nl_finish_cb, r);
	nl_cb_err(cb, NL_CB_CUSTOM, kmsgr_nl_err_cb, nl);
	ret = nl_send_auto(nl->sk, msg);
	nlmsg_free(msg);
	if (ret >= 0)
		ret = nl_recvmsgs(nl->sk, cb);
	/* a do request ends with its ack */
	if (ret >= 0 && !dump && !nl->err)
		ret = nl_wait_for_ack(nl->sk);
	nl_cb_put(cb);
	if (nl->err)
		return nl->err;
	if (r->stop)
		return r->stop;
	if (ret < 0)
		return kmsgr_nl_errno(ret);
	return r->count;
}

/* A GET for one object: 0, or -ENOENT and the like. */
static int kmsgr_nl_get(struct kmsgr_nl *nl, __u8 cmd, int a64, __u64 v64,
			int a32, __u32 v32, int (*parse)(struct nlattr **, void *),
			int maxattr, void *out, size_t size)
{
	struct kmsgr_nl_req r = {
		.parse = parse,
		.maxattr = maxattr,
		.out = out,
		.out_size = size,
	};
	int ret;

	ret = kmsgr_nl_request(nl, cmd, false, a64, v64, a32, v32, &r);
	if (ret < 0)
		return ret;
	return r.count == 1 ? 0 : -EPROTO;
}

/* A dump: @fn once per object, the count or -errno. */
static int kmsgr_nl_dump(struct kmsgr_nl *nl, __u8 cmd, int a64, __u64 v64,
			 int (*parse)(struct nlattr **, void *), int maxattr,
			 void *obj, size_t size,
			 int (*fn)(const void *, void *), void *arg)
{
	struct kmsgr_nl_req r = {
		.parse = parse,
		.maxattr = maxattr,
		.fn = fn,
		.arg = arg,
		.out = obj,
		.out_size = size,
	};

	return kmsgr_nl_request(nl, cmd, true, a64, v64, 0, 0, &r);
}

/* The caller's typed callback, called through kmsgr_nl_dump()'s. */
struct kmsgr_nl_user {
	union {
		int (*session)(const struct kmsgr_session_info *s, void *arg);
		int (*listener)(const struct kmsgr_listener_info *l, void *arg);
		int (*instance)(const struct kmsgr_instance_info *i, void *arg);
		int (*dev)(const struct kmsgr_dev_info *d, void *arg);
		int (*bdev)(const struct kmsgr_bdev_info *b, void *arg);
	};
	void *arg;
};

static int call_session(const void *obj, void *arg)
{
	const struct kmsgr_nl_user *u = arg;

	return u->session(obj, u->arg);
}

static int call_listener(const void *obj, void *arg)
{
	const struct kmsgr_nl_user *u = arg;

	return u->listener(obj, u->arg);
}

static int call_instance(const void *obj, void *arg)
{
	const struct kmsgr_nl_user *u = arg;

	return u->instance(obj, u->arg);
}

static int call_dev(const void *obj, void *arg)
{
	const struct kmsgr_nl_user *u = arg;

	return u->dev(obj, u->arg);
}

static int call_bdev(const void *obj, void *arg)
{
	const struct kmsgr_nl_user *u = arg;

	return u->bdev(obj, u->arg);
}

int kmsgr_nl_session_get(struct kmsgr_nl *nl, __u64 instance, __u32 id,
			 struct kmsgr_session_info *out)
{
	return kmsgr_nl_get(nl, KMSGR_CMD_SESSION_GET,
			    KMSGR_A_SESSION_INSTANCE, instance,
			    KMSGR_A_SESSION_ID, id, parse_session,
			    KMSGR_A_SESSION_MAX, out, sizeof(*out));
}

int kmsgr_nl_sessions(struct kmsgr_nl *nl, __u64 instance,
		      int (*fn)(const struct kmsgr_session_info *, void *),
		      void *arg)
{
	struct kmsgr_nl_user u = { .session = fn, .arg = arg };
	struct kmsgr_session_info s;

	return kmsgr_nl_dump(nl, KMSGR_CMD_SESSION_GET,
			     instance ? KMSGR_A_SESSION_INSTANCE : 0, instance,
			     parse_session, KMSGR_A_SESSION_MAX, &s, sizeof(s),
			     call_session, &u);
}

int kmsgr_nl_listener_get(struct kmsgr_nl *nl, __u64 instance, __u32 id,
			  struct kmsgr_listener_info *out)
{
	return kmsgr_nl_get(nl, KMSGR_CMD_LISTENER_GET,
			    KMSGR_A_LISTENER_INSTANCE, instance,
			    KMSGR_A_LISTENER_ID, id, parse_listener,
			    KMSGR_A_LISTENER_MAX, out, sizeof(*out));
}

int kmsgr_nl_listeners(struct kmsgr_nl *nl, __u64 instance,
		       int (*fn)(const struct kmsgr_listener_info *, void *),
		       void *arg)
{
	struct kmsgr_nl_user u = { .listener = fn, .arg = arg };
	struct kmsgr_listener_info l;

	return kmsgr_nl_dump(nl, KMSGR_CMD_LISTENER_GET,
			     instance ? KMSGR_A_LISTENER_INSTANCE : 0, instance,
			     parse_listener, KMSGR_A_LISTENER_MAX, &l, sizeof(l),
			     call_listener, &u);
}

int kmsgr_nl_instance_get(struct kmsgr_nl *nl, __u64 id,
			  struct kmsgr_instance_info *out)
{
	return kmsgr_nl_get(nl, KMSGR_CMD_INSTANCE_GET, KMSGR_A_INSTANCE_ID,
			    id, 0, 0, parse_instance, KMSGR_A_INSTANCE_MAX,
			    out, sizeof(*out));
}

int kmsgr_nl_instances(struct kmsgr_nl *nl,
		       int (*fn)(const struct kmsgr_instance_info *, void *),
		       void *arg)
{
	struct kmsgr_nl_user u = { .instance = fn, .arg = arg };
	struct kmsgr_instance_info i;

	return kmsgr_nl_dump(nl, KMSGR_CMD_INSTANCE_GET, 0, 0, parse_instance,
			     KMSGR_A_INSTANCE_MAX, &i, sizeof(i),
			     call_instance, &u);
}

int kmsgr_nl_stats(struct kmsgr_nl *nl, struct kmsgr_stats_info *out)
{
	return kmsgr_nl_get(nl, KMSGR_CMD_STATS_GET, 0, 0, 0, 0, parse_stats,
			    KMSGR_A_STATS_MAX, out, sizeof(*out));
}

int kmsgr_nl_devs(struct kmsgr_nl *nl,
		  int (*fn)(const struct kmsgr_dev_info *, void *), void *arg)
{
	struct kmsgr_nl_user u = { .dev = fn, .arg = arg };
	struct kmsgr_dev_info d;

	return kmsgr_nl_dump(nl, KMSGR_CMD_DEV_GET, 0, 0, parse_dev,
			     KMSGR_A_DEV_MAX, &d, sizeof(d), call_dev, &u);
}

int kmsgr_nl_bdev_get(struct kmsgr_nl *nl, __u64 instance, __u32 id,
		      struct kmsgr_bdev_info *out)
{
	return kmsgr_nl_get(nl, KMSGR_CMD_BDEV_GET, KMSGR_A_BDEV_INSTANCE,
			    instance, KMSGR_A_BDEV_ID, id, parse_bdev,
			    KMSGR_A_BDEV_MAX, out, sizeof(*out));
}

int kmsgr_nl_bdevs(struct kmsgr_nl *nl, __u64 instance,
		   int (*fn)(const struct kmsgr_bdev_info *, void *),
		   void *arg)
{
	struct kmsgr_nl_user u = { .bdev = fn, .arg = arg };
	struct kmsgr_bdev_info b;

	return kmsgr_nl_dump(nl, KMSGR_CMD_BDEV_GET,
			     instance ? KMSGR_A_BDEV_INSTANCE : 0, instance,
			     parse_bdev, KMSGR_A_BDEV_MAX, &b, sizeof(b),
			     fn ? call_bdev : NULL, &u);
}

/* ---- monitor ------------------------------------------------------------- */

int kmsgr_nl_monitor_start(struct kmsgr_nl *nl)
{
	int grp, ret;

	if (nl->mon)
		return nl_socket_get_fd(nl->mon);
	grp = genl_ctrl_resolve_grp(nl->sk, KMSGR_GENL_NAME,
				    KMSGR_MCGRP_MONITOR);
	/* the family is there (kmsgr_nl_open()), its group is not */
	if (grp == -NLE_OBJ_NOTFOUND)
		return -EOPNOTSUPP;
	if (grp < 0)
		return kmsgr_nl_errno(grp);
	nl->mon = nl_socket_alloc();
	if (!nl->mon)
		return -ENOMEM;
	nl_socket_disable_seq_check(nl->mon);
	ret = genl_connect(nl->mon);
	if (ret >= 0)
		ret = nl_socket_add_membership(nl->mon, grp);
	if (ret < 0) {
		nl_socket_free(nl->mon);
		nl->mon = NULL;
		/* joining needs CAP_NET_ADMIN */
		return ret == -NLE_PERM || ret == -NLE_NOACCESS ? -EPERM :
			kmsgr_nl_errno(ret);
	}
	return nl_socket_get_fd(nl->mon);
}

struct kmsgr_nl_mon {
	const struct kmsgr_nl_monitor_ops *ops;
	void *arg;
	int count;
	int stop;
};

static int kmsgr_nl_mon_cb(struct nl_msg *msg, void *arg)
{
	struct genlmsghdr *g = nlmsg_data(nlmsg_hdr(msg));
	struct kmsgr_nl_mon *m = arg;
	struct kmsgr_listener_info l;
	struct kmsgr_session_info s;
	struct nlattr *tb[64];
	int ret = 0;

	if (g->cmd == KMSGR_CMD_SESSION_NTF) {
		memset(&s, 0, sizeof(s));
		if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, KMSGR_A_SESSION_MAX,
				  NULL) < 0 || parse_session(tb, &s))
			return NL_SKIP;
		if (m->ops->session)
			ret = m->ops->session(&s, m->arg);
	} else if (g->cmd == KMSGR_CMD_LISTENER_NTF) {
		memset(&l, 0, sizeof(l));
		if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, KMSGR_A_LISTENER_MAX,
				  NULL) < 0 || parse_listener(tb, &l))
			return NL_SKIP;
		if (m->ops->listener)
			ret = m->ops->listener(&l, m->arg);
	} else {
		return NL_SKIP;		/* a newer event: not ours to know */
	}
	m->count++;
	if (ret) {
		m->stop = ret;
		return NL_STOP;
	}
	return NL_OK;
}

int kmsgr_nl_monitor_read(struct kmsgr_nl *nl,
			  const struct kmsgr_nl_monitor_ops *ops, void *arg)
{
	struct kmsgr_nl_mon m = {
		.ops = ops,
		.arg = arg,
	};
	struct nl_cb *cb;
	int ret;

	if (!nl->mon)
		return -EINVAL;
	/* the socket's callbacks: no sequence check on events */
	cb = kmsgr_nl_cb_clone(nl->mon);
	if (!cb)
		return -ENOMEM;
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, kmsgr_nl_mon_cb, &m);
	ret = nl_recvmsgs(nl->mon, cb);
	nl_cb_put(cb);
	if (m.stop)
		return m.stop;
	/* libnl reports the socket's ENOBUFS (events lost) as NLE_NOMEM */
	if (ret == -NLE_NOMEM)
		return -ENOBUFS;
	if (ret < 0 && !m.count)
		return kmsgr_nl_errno(ret);
	return m.count;
}
