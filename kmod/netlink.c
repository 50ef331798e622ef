// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - the generic netlink family "kmsgr": sessions, listeners,
 * instances and their block devices as operators see them (kmsgrctl
 * session/listener/instance/bdev show, stats), and the "monitor" multicast
 * group carrying session and listener events.  The messages are described in
 * uapi/linux/kmsgr_netlink.h and uapi/netlink/kmsgr.yaml.
 *
 * Locking: a dump holds no lock across the whole walk.  Each pass (one
 * reply skb) walks the instance registry (session.c, kmsgr_inst_walk()),
 * which holds each instance it visits by a count that its release waits
 * for, and no registry lock while it looks at one (opens and closes of
 * /dev/kmsgr do not wait for a dump), and takes each
 * session's lock only while it copies that session
 * (kmsgr_obj_info_next()); an attached block device is copied under no
 * lock of the instance's (kmsgr_bdev_info_next() holds the handle by a
 * count, never submit_lock, under which ENTER may sleep in submit_bio());
 * the position between passes is an instance id and an object id (a
 * device's handle), so objects that come and go meanwhile are simply seen
 * or not.  Events reach the monitor
 * group from the session code with the session's lock held (struct
 * kmsgr_notifier).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/kdev_t.h>
#include <linux/net.h>
#include <linux/pid_namespace.h>
#include <linux/slab.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <net/sock.h>

#include <linux/kmsgr_netlink.h>

#include "kmsgr.h"
#include "session.h"
#include "xprt.h"

enum {
	KMSGR_NL_GRP_MONITOR,
};

static struct genl_family kmsgr_nl_family;

/*
 * Whether the sender of @skb (a request) may see @inst: same network
 * namespace, and CAP_NET_ADMIN there or the effective uid that opened it.
 * *@admin caches the capability for the request (KMSGR_NL_ADMIN_*): it
 * is asked once, not once per instance (a security module logs each
 * denial).
 */
#define KMSGR_NL_ADMIN_UNKNOWN	0
#define KMSGR_NL_ADMIN_NO	1
#define KMSGR_NL_ADMIN_YES	2

static bool kmsgr_nl_visible(const struct sk_buff *skb,
			     const struct kmsgr_instance *inst,
			     long *admin)
{
	struct sock *sk = NETLINK_CB(skb).sk;
	struct socket *sock = sk ? sk->sk_socket : NULL;

	if (!sk || !net_eq(sock_net(sk), inst->net))
		return false;
	if (*admin == KMSGR_NL_ADMIN_UNKNOWN)
		*admin = netlink_net_capable(skb, CAP_NET_ADMIN) ?
			 KMSGR_NL_ADMIN_YES : KMSGR_NL_ADMIN_NO;
	if (*admin == KMSGR_NL_ADMIN_YES)
		return true;
	return sock && sock->file &&
	       uid_eq(sock->file->f_cred->euid, inst->uid);
}

static int kmsgr_nl_put_addr(struct sk_buff *skb, int type,
			     const struct sockaddr_storage *ss)
{
	struct kmsgr_addr a;

	if (ss->ss_family != AF_INET && ss->ss_family != AF_INET6)
		return 0;
	kmsgr_ss_to_addr(ss, &a);
	return nla_put(skb, type, sizeof(a), &a);
}

/* An event for the monitor group (SESSION_NTF, LISTENER_NTF), or none. */
struct kmsgr_nl_ev {
	u8 ev;
	u16 reason;
	int res;
};

/*
 * The namespaces a message's PIDs and uids are numbered in: a reply's,
 * the requester's (a dump keeps those of the task that started it: its
 * later replies are built by whichever task reads the socket); a monitor
 * event's, which readers in any namespace share, the initial ones.
 */
struct kmsgr_nl_ns {
	struct pid_namespace *pid;
	struct user_namespace *user;
};

static const struct kmsgr_nl_ns kmsgr_nl_init_ns = {
	.pid = &init_pid_ns,
	.user = &init_user_ns,
};

/* The opener's PID in @ns (0 when it is not visible there). */
static u32 kmsgr_nl_pid(const struct kmsgr_instance *inst,
			const struct kmsgr_nl_ns *ns)
{
	return pid_nr_ns(inst->tgid, ns->pid);
}

static int kmsgr_nl_fill_sess(struct sk_buff *skb,
			      const struct kmsgr_instance *inst,
			      const struct kmsgr_obj_info *o,
			      const struct kmsgr_nl_ev *e,
			      const struct kmsgr_nl_ns *ns)
{
	const int pad = KMSGR_A_SESSION_PAD;

	if (nla_put_u64_64bit(skb, KMSGR_A_SESSION_INSTANCE, inst->id, pad) ||
	    nla_put_u32(skb, KMSGR_A_SESSION_ID, o->id) ||
	    nla_put_u32(skb, KMSGR_A_SESSION_PID, kmsgr_nl_pid(inst, ns)) ||
	    nla_put_string(skb, KMSGR_A_SESSION_COMM, inst->comm) ||
	    nla_put_u64_64bit(skb, KMSGR_A_SESSION_USER_DATA, o->user_data,
			      pad) ||
	    nla_put_u32(skb, KMSGR_A_SESSION_TRANSPORT, o->transport) ||
	    (o->server && nla_put_flag(skb, KMSGR_A_SESSION_SERVER)) ||
	    (o->server &&
	     nla_put_u32(skb, KMSGR_A_SESSION_LISTENER, o->listener_id)) ||
	    kmsgr_nl_put_addr(skb, KMSGR_A_SESSION_LOCAL, &o->local) ||
	    kmsgr_nl_put_addr(skb, KMSGR_A_SESSION_PEER, &o->peer) ||
	    nla_put_u8(skb, KMSGR_A_SESSION_PEER_TYPE, o->peer_type) ||
	    nla_put_u64_64bit(skb, KMSGR_A_SESSION_PEER_GID, o->peer_gid,
			      pad) ||
	    nla_put_u8(skb, KMSGR_A_SESSION_STATE, o->state) ||
	    nla_put_u8(skb, KMSGR_A_SESSION_MODE, o->mode) ||
	    (o->lossless && nla_put_flag(skb, KMSGR_A_SESSION_LOSSLESS)) ||
	    nla_put_u32(skb, KMSGR_A_SESSION_AUTH, o->auth) ||
	    nla_put_u64_64bit(skb, KMSGR_A_SESSION_MSGS_OUT, o->msgs_out,
			      pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_SESSION_BYTES_OUT, o->bytes_out,
			      pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_SESSION_MSGS_IN, o->msgs_in,
			      pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_SESSION_BYTES_IN, o->bytes_in,
			      pad) ||
	    nla_put_u32(skb, KMSGR_A_SESSION_IN_FLIGHT, o->in_flight) ||
	    nla_put_u32(skb, KMSGR_A_SESSION_RECONNECTS, o->reconnects) ||
	    nla_put_s32(skb, KMSGR_A_SESSION_LAST_ERROR, o->last_error) ||
	    nla_put_u32(skb, KMSGR_A_SESSION_LAST_REASON, o->last_reason))
		return -EMSGSIZE;
	if (e && (nla_put_u8(skb, KMSGR_A_SESSION_EVENT, e->ev) ||
		  nla_put_u32(skb, KMSGR_A_SESSION_REASON, e->reason) ||
		  nla_put_s32(skb, KMSGR_A_SESSION_RES, e->res)))
		return -EMSGSIZE;
	return 0;
}

static int kmsgr_nl_fill_listener(struct sk_buff *skb,
				  const struct kmsgr_instance *inst,
				  const struct kmsgr_obj_info *o,
				  const struct kmsgr_nl_ev *e,
				  const struct kmsgr_nl_ns *ns)
{
	const int pad = KMSGR_A_LISTENER_PAD;

	if (nla_put_u64_64bit(skb, KMSGR_A_LISTENER_INSTANCE, inst->id, pad) ||
	    nla_put_u32(skb, KMSGR_A_LISTENER_ID, o->id) ||
	    nla_put_u32(skb, KMSGR_A_LISTENER_PID, kmsgr_nl_pid(inst, ns)) ||
	    nla_put_string(skb, KMSGR_A_LISTENER_COMM, inst->comm) ||
	    nla_put_u64_64bit(skb, KMSGR_A_LISTENER_USER_DATA, o->user_data,
			      pad) ||
	    nla_put_u32(skb, KMSGR_A_LISTENER_TRANSPORT, o->transport) ||
	    kmsgr_nl_put_addr(skb, KMSGR_A_LISTENER_LOCAL, &o->local) ||
	    nla_put_u32(skb, KMSGR_A_LISTENER_AUTH, o->auth) ||
	    nla_put_u32(skb, KMSGR_A_LISTENER_FLAGS, o->flags) ||
	    nla_put_u8(skb, KMSGR_A_LISTENER_MY_TYPE, o->my_type) ||
	    nla_put_u32(skb, KMSGR_A_LISTENER_HALF_OPEN, o->half_open) ||
	    nla_put_u64_64bit(skb, KMSGR_A_LISTENER_ACCEPTED, o->accepted,
			      pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_LISTENER_REFUSED, o->refused, pad))
		return -EMSGSIZE;
	if (e && (nla_put_u8(skb, KMSGR_A_LISTENER_EVENT, e->ev) ||
		  nla_put_u32(skb, KMSGR_A_LISTENER_REASON, e->reason) ||
		  nla_put_s32(skb, KMSGR_A_LISTENER_RES, e->res)))
		return -EMSGSIZE;
	return 0;
}

/*
 * One message for a session or a listener, an event if @e: 0 or
 * -EMSGSIZE (nothing).
 */
static int kmsgr_nl_put_obj(struct sk_buff *skb, u32 portid, u32 seq,
			    int flags, const struct kmsgr_instance *inst,
			    const struct kmsgr_obj_info *o,
			    const struct kmsgr_nl_ev *e,
			    const struct kmsgr_nl_ns *ns)
{
	u8 cmd;
	void *hdr;
	int ret;

	if (o->listener)
		cmd = e ? KMSGR_CMD_LISTENER_NTF : KMSGR_CMD_LISTENER_GET;
	else
		cmd = e ? KMSGR_CMD_SESSION_NTF : KMSGR_CMD_SESSION_GET;
	hdr = genlmsg_put(skb, portid, seq, &kmsgr_nl_family, flags, cmd);
	if (!hdr)
		return -EMSGSIZE;
	ret = o->listener ? kmsgr_nl_fill_listener(skb, inst, o, e, ns) :
			    kmsgr_nl_fill_sess(skb, inst, o, e, ns);
	if (ret) {
		genlmsg_cancel(skb, hdr);
		return ret;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int kmsgr_nl_put_inst(struct sk_buff *skb, u32 portid, u32 seq,
			     int flags, struct kmsgr_instance *inst,
			     const struct kmsgr_nl_ns *ns)
{
	const int pad = KMSGR_A_INSTANCE_PAD;
	struct kmsgr_inst_stats st;
	u64 buf_size = 0, pool_size = 0, locked = 0;
	u32 sq_entries = 0, cq_entries = 0, bdevs;
	u64 pool_used, pinned, registered;
	bool paused;
	void *hdr;

	/*
	 * The rings as SETUP published them (kmsgr_inst_ready() pairs with
	 * its store-release; they stay until the instance's release, which
	 * waits for this walk).  Not inst->lock: its holder may wait on user
	 * memory (INFO, SETUP, CONNECT copy to and from it) for as long as
	 * the user likes.
	 */
	if (kmsgr_inst_ready(inst)) {
		sq_entries = inst->sq_entries;
		cq_entries = inst->cq_entries;
		buf_size = inst->buf_size;
		pool_size = inst->buf_size - inst->pool_off;
		locked = (u64)inst->locked_pages << PAGE_SHIFT;
	}
	pool_used = kmsgr_pool_in_use(inst);
	/* counters: read racily, as struct kmsgr_inst_stats allows */
	memcpy(&st, &inst->stats, sizeof(st));
	paused = READ_ONCE(inst->cq_paused);
	/* the transports' charges (struct kmsgr_xprt_acct), also racy */
	pinned = atomic64_read(&inst->xacct.pinned);
	registered = atomic64_read(&inst->xacct.registered);
	/* submit_lock's; a racy read of a u32 is a count of a moment */
	bdevs = READ_ONCE(inst->nr_bdevs);

	hdr = genlmsg_put(skb, portid, seq, &kmsgr_nl_family, flags,
			  KMSGR_CMD_INSTANCE_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_ID, inst->id, pad) ||
	    nla_put_u32(skb, KMSGR_A_INSTANCE_PID, kmsgr_nl_pid(inst, ns)) ||
	    nla_put_string(skb, KMSGR_A_INSTANCE_COMM, inst->comm) ||
	    nla_put_u32(skb, KMSGR_A_INSTANCE_UID,
			from_kuid_munged(ns->user, inst->uid)) ||
	    nla_put_u32(skb, KMSGR_A_INSTANCE_SQ_ENTRIES, sq_entries) ||
	    nla_put_u32(skb, KMSGR_A_INSTANCE_CQ_ENTRIES, cq_entries) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_BUF_SIZE, buf_size, pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_POOL_SIZE, pool_size,
			      pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_POOL_USED, pool_used,
			      pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_LOCKED, locked, pad) ||
	    nla_put_u32(skb, KMSGR_A_INSTANCE_SESSIONS,
			atomic_read(&inst->nr_sessions)) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_SQES, st.sqes, pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_SQE_ERRORS, st.sqe_errors,
			      pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_CQES, st.cqes, pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_CQ_FULL, st.cq_full, pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_CQ_OVERFLOW,
			      st.cq_overflow, pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_CQ_LOST, st.cq_lost, pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_POOL_FULL, st.pool_full,
			      pad) ||
	    (paused && nla_put_flag(skb, KMSGR_A_INSTANCE_CQ_PAUSED)) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_PINNED, pinned, pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_REGISTERED, registered,
			      pad) ||
	    nla_put_u32(skb, KMSGR_A_INSTANCE_BDEVS, bdevs) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_BDEV_OPS, st.bdev_ops,
			      pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_BDEV_READ_BYTES,
			      st.bdev_read_bytes, pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_INSTANCE_BDEV_WRITE_BYTES,
			      st.bdev_write_bytes, pad)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int kmsgr_nl_put_bdev(struct sk_buff *skb, u32 portid, u32 seq,
			     int flags, const struct kmsgr_instance *inst,
			     const struct kmsgr_bdev_info *b,
			     const struct kmsgr_nl_ns *ns)
{
	const int pad = KMSGR_A_BDEV_PAD;
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &kmsgr_nl_family, flags,
			  KMSGR_CMD_BDEV_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u64_64bit(skb, KMSGR_A_BDEV_INSTANCE, inst->id, pad) ||
	    nla_put_u32(skb, KMSGR_A_BDEV_ID, b->id) ||
	    nla_put_u32(skb, KMSGR_A_BDEV_PID, kmsgr_nl_pid(inst, ns)) ||
	    nla_put_string(skb, KMSGR_A_BDEV_COMM, inst->comm) ||
	    nla_put_string(skb, KMSGR_A_BDEV_NAME, b->name) ||
	    nla_put_u32(skb, KMSGR_A_BDEV_MAJOR, MAJOR(b->dev)) ||
	    nla_put_u32(skb, KMSGR_A_BDEV_MINOR, MINOR(b->dev)) ||
	    nla_put_u32(skb, KMSGR_A_BDEV_LBS, b->lbs) ||
	    nla_put_u32(skb, KMSGR_A_BDEV_PBS, b->pbs) ||
	    nla_put_u64_64bit(skb, KMSGR_A_BDEV_CAPACITY, b->capacity, pad) ||
	    nla_put_u32(skb, KMSGR_A_BDEV_FLAGS, b->flags) ||
	    nla_put_u32(skb, KMSGR_A_BDEV_ATTRS, b->attrs) ||
	    nla_put_u32(skb, KMSGR_A_BDEV_IN_FLIGHT, b->in_flight) ||
	    nla_put_u64_64bit(skb, KMSGR_A_BDEV_OPS,
			      b->read_ops + b->write_ops + b->flush_ops, pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_BDEV_READ_OPS, b->read_ops, pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_BDEV_WRITE_OPS, b->write_ops,
			      pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_BDEV_FLUSH_OPS, b->flush_ops,
			      pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_BDEV_READ_BYTES, b->read_bytes,
			      pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_BDEV_WRITE_BYTES, b->write_bytes,
			      pad) ||
	    nla_put_u64_64bit(skb, KMSGR_A_BDEV_ERRORS, b->errors, pad) ||
	    (b->gone && nla_put_flag(skb, KMSGR_A_BDEV_GONE))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/* ---- do: one object ---------------------------------------------------- */

struct kmsgr_nl_get {
	struct sk_buff *skb;		/* the request */
	struct genl_info *info;
	u64 inst_id;
	u32 id;
	u8 cmd;
	struct sk_buff *msg;
};

/* kmsgr_inst_walk() callback: fill the reply for the instance asked for */
static int kmsgr_nl_get_one(struct kmsgr_instance *inst, void *arg)
{
	struct kmsgr_nl_get *g = arg;
	struct genl_info *info = g->info;
	const struct kmsgr_nl_ns ns = {
		.pid = task_active_pid_ns(current),
		.user = current_user_ns(),
	};
	struct kmsgr_obj_info *o;
	long admin = KMSGR_NL_ADMIN_UNKNOWN;
	u32 id = g->id;
	int ret;

	if (inst->id != g->inst_id)
		return inst->id > g->inst_id ? -ENOENT : 0;
	if (!kmsgr_nl_visible(g->skb, inst, &admin))
		return -ENOENT;
	if (g->cmd == KMSGR_CMD_INSTANCE_GET)
		return kmsgr_nl_put_inst(g->msg, info->snd_portid,
					 info->snd_seq, 0, inst, &ns) ?: 1;
	if (g->cmd == KMSGR_CMD_BDEV_GET) {
		struct kmsgr_bdev_info b;

		ret = kmsgr_bdev_info_next(inst, &id, &b);
		if (!ret && id != g->id)
			ret = -ENOENT;
		if (!ret)
			ret = kmsgr_nl_put_bdev(g->msg, info->snd_portid,
						info->snd_seq, 0, inst, &b,
						&ns) ?: 1;
		return ret;
	}

	o = kmalloc(sizeof(*o), GFP_KERNEL);
	if (!o)
		return -ENOMEM;
	ret = kmsgr_obj_info_next(inst, &id,
				  g->cmd == KMSGR_CMD_LISTENER_GET, o);
	if (!ret && id != g->id)
		ret = -ENOENT;
	if (!ret)
		ret = kmsgr_nl_put_obj(g->msg, info->snd_portid,
				       info->snd_seq, 0, inst, o, NULL,
				       &ns) ?: 1;
	kfree(o);
	return ret;
}

static int kmsgr_nl_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	u8 cmd = info->genlhdr->cmd;
	struct kmsgr_nl_get g = {
		.skb = skb,
		.info = info,
		.cmd = cmd,
	};
	int inst_attr, id_attr;
	u64 after;
	int ret;

	switch (cmd) {
	case KMSGR_CMD_SESSION_GET:
		inst_attr = KMSGR_A_SESSION_INSTANCE;
		id_attr = KMSGR_A_SESSION_ID;
		break;
	case KMSGR_CMD_LISTENER_GET:
		inst_attr = KMSGR_A_LISTENER_INSTANCE;
		id_attr = KMSGR_A_LISTENER_ID;
		break;
	case KMSGR_CMD_BDEV_GET:
		inst_attr = KMSGR_A_BDEV_INSTANCE;
		id_attr = KMSGR_A_BDEV_ID;
		break;
	default:
		inst_attr = KMSGR_A_INSTANCE_ID;
		id_attr = 0;
		break;
	}
	if (GENL_REQ_ATTR_CHECK(info, inst_attr) ||
	    (id_attr && GENL_REQ_ATTR_CHECK(info, id_attr)))
		return -EINVAL;
	g.inst_id = nla_get_u64(info->attrs[inst_attr]);
	if (id_attr)
		g.id = nla_get_u32(info->attrs[id_attr]);
	if (!g.inst_id) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[inst_attr],
				    "no instance has id 0");
		return -ENOENT;
	}

	g.msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!g.msg)
		return -ENOMEM;
	after = g.inst_id - 1;
	ret = kmsgr_inst_walk(&after, kmsgr_nl_get_one, &g);
	if (ret == 1)
		return genlmsg_reply(g.msg, info);
	nlmsg_free(g.msg);
	if (!ret || ret == -ENOENT) {
		if (id_attr)
			NL_SET_ERR_MSG(info->extack,
				       "no such instance or object");
		else
			NL_SET_ERR_MSG(info->extack, "no such instance");
		ret = -ENOENT;
	}
	return ret;
}

/* ---- dump: every object, a pass at a time ------------------------------ */

/*
 * Where a dump goes on, kept in cb->ctx between passes: instance ids are
 * 64 bits wide, more than a long of cb->args on a 32-bit kernel.
 */
struct kmsgr_nl_cursor {
	u64 after;	/* id of the last instance fully dumped */
	u64 inst;	/* the instance the last pass stopped in (0: none) */
	u32 id;		/* the object id to go on from there (if that
			 * instance has gone, the next starts from the first)
			 */
	long admin;	/* the sender's CAP_NET_ADMIN, once known
			 * (kmsgr_nl_visible())
			 */
	struct kmsgr_nl_ns ns;	/* the requester's, held from .start
				 * to .done
				 */
};

static struct kmsgr_nl_cursor *kmsgr_nl_cursor(struct netlink_callback *cb)
{
	BUILD_BUG_ON(sizeof(struct kmsgr_nl_cursor) >
		     sizeof_field(struct netlink_callback, ctx));
	return (struct kmsgr_nl_cursor *)cb->ctx;
}

struct kmsgr_nl_dump {
	struct sk_buff *skb;
	struct netlink_callback *cb;
	u8 cmd;
	bool filtered;			/* one instance's objects: */
	u64 only;			/* that instance's id */
	struct kmsgr_obj_info *o;	/* sessions, listeners */
	struct kmsgr_bdev_info b;	/* block devices */
};

/* The reply is full: object @id of @inst goes first next time. */
static int kmsgr_nl_dump_stop(struct netlink_callback *cb,
			      struct kmsgr_instance *inst, u32 id)
{
	struct kmsgr_nl_cursor *cur = kmsgr_nl_cursor(cb);

	cur->id = id;
	cur->inst = inst->id;
	return -EMSGSIZE;
}

/* An instance's block devices from handle @id on. */
static int kmsgr_nl_dump_bdevs(struct kmsgr_nl_dump *d,
			       struct kmsgr_instance *inst, u32 id)
{
	struct netlink_callback *cb = d->cb;

	while (!kmsgr_bdev_info_next(inst, &id, &d->b)) {
		if (kmsgr_nl_put_bdev(d->skb, NETLINK_CB(cb->skb).portid,
				      cb->nlh->nlmsg_seq, NLM_F_MULTI, inst,
				      &d->b, &kmsgr_nl_cursor(cb)->ns))
			return kmsgr_nl_dump_stop(cb, inst, id);
		if (id == U32_MAX)
			break;
		id++;
	}
	return 0;
}

static int kmsgr_nl_dump_one(struct kmsgr_instance *inst, void *arg)
{
	struct kmsgr_nl_dump *d = arg;
	struct netlink_callback *cb = d->cb;
	struct kmsgr_nl_cursor *cur = kmsgr_nl_cursor(cb);
	u32 portid = NETLINK_CB(cb->skb).portid;
	u32 seq = cb->nlh->nlmsg_seq;
	u32 id = cur->inst == inst->id ? cur->id : 0;

	if ((d->filtered && inst->id != d->only) ||
	    !kmsgr_nl_visible(cb->skb, inst, &cur->admin))
		goto next;
	if (d->cmd == KMSGR_CMD_INSTANCE_GET) {
		if (kmsgr_nl_put_inst(d->skb, portid, seq, NLM_F_MULTI, inst,
				      &cur->ns))
			return -EMSGSIZE;
		goto next;
	}
	if (d->cmd == KMSGR_CMD_BDEV_GET) {
		if (kmsgr_nl_dump_bdevs(d, inst, id))
			return -EMSGSIZE;
		goto next;
	}
	while (!kmsgr_obj_info_next(inst, &id,
				    d->cmd == KMSGR_CMD_LISTENER_GET, d->o)) {
		if (kmsgr_nl_put_obj(d->skb, portid, seq, NLM_F_MULTI, inst,
				     d->o, NULL, &cur->ns))
			return kmsgr_nl_dump_stop(cb, inst, id);
		if (id == U32_MAX)
			break;
		id++;
	}
next:
	cur->id = 0;
	cur->inst = 0;
	return 0;
}

/*
 * The one attribute a dump takes: the instance whose objects it lists;
 * an INSTANCE_GET dump takes none.
 */
static unsigned int kmsgr_nl_dump_filter(u8 cmd)
{
	switch (cmd) {
	case KMSGR_CMD_SESSION_GET:
		return KMSGR_A_SESSION_INSTANCE;
	case KMSGR_CMD_LISTENER_GET:
		return KMSGR_A_LISTENER_INSTANCE;
	case KMSGR_CMD_BDEV_GET:
		return KMSGR_A_BDEV_INSTANCE;
	default:
		return 0;
	}
}

/*
 * Before the first pass, in the requester's context: the do request's
 * other attributes (an object id) are refused here rather than ignored,
 * and the requester's namespaces are held for the replies.  Nothing is
 * held when this fails (.done is not called then).
 */
static int kmsgr_nl_dump_start(struct netlink_callback *cb)
{
	const struct genl_dumpit_info *info = genl_dumpit_info(cb);
	struct kmsgr_nl_cursor *cur = kmsgr_nl_cursor(cb);
	unsigned int filter = kmsgr_nl_dump_filter(info->op.cmd);
	unsigned int a;

	for (a = 1; a <= info->op.maxattr; a++) {
		if (info->attrs[a] && a != filter) {
			NL_SET_ERR_MSG_ATTR(cb->extack, info->attrs[a],
					    "not a filter of this dump");
			return -EINVAL;
		}
	}
	cur->ns.pid = get_pid_ns(task_active_pid_ns(current));
	cur->ns.user = get_user_ns(current_user_ns());
	return 0;
}

static int kmsgr_nl_dump_done(struct netlink_callback *cb)
{
	struct kmsgr_nl_cursor *cur = kmsgr_nl_cursor(cb);

	if (cur->ns.pid)
		put_pid_ns(cur->ns.pid);
	if (cur->ns.user)
		put_user_ns(cur->ns.user);
	return 0;
}

static int kmsgr_nl_get_dumpit(struct sk_buff *skb,
			       struct netlink_callback *cb)
{
	const struct genl_dumpit_info *info = genl_dumpit_info(cb);
	struct kmsgr_nl_dump d = {
		.skb = skb,
		.cb = cb,
		.cmd = info->op.cmd,
	};
	struct kmsgr_nl_cursor *cur = kmsgr_nl_cursor(cb);
	unsigned int filter = kmsgr_nl_dump_filter(d.cmd);
	u64 after = cur->after;
	int ret;

	if (filter && info->attrs[filter]) {
		d.filtered = true;
		d.only = nla_get_u64(info->attrs[filter]);
		/* no instance has id 0; and none before it need be walked */
		if (!d.only)
			return 0;
		if (after < d.only - 1)
			after = d.only - 1;
	}
	if (d.cmd == KMSGR_CMD_SESSION_GET || d.cmd == KMSGR_CMD_LISTENER_GET) {
		d.o = kmalloc(sizeof(*d.o), GFP_KERNEL);
		if (!d.o)
			return -ENOMEM;
	}
	ret = kmsgr_inst_walk(&after, kmsgr_nl_dump_one, &d);
	cur->after = after;
	kfree(d.o);
	if (ret && ret != -EMSGSIZE)
		return ret;
	/* -EMSGSIZE with nothing in @skb: one object bigger than a reply */
	if (ret == -EMSGSIZE && !skb->len)
		return -EMSGSIZE;
	return skb->len;
}

/* ---- stats ----------------------------------------------------------- */

struct kmsgr_nl_count {
	u32 instances, sessions;
};

static int kmsgr_nl_count_one(struct kmsgr_instance *inst, void *arg)
{
	struct kmsgr_nl_count *c = arg;

	c->instances++;
	c->sessions += atomic_read(&inst->nr_sessions);
	return 0;
}

static int kmsgr_nl_stats_doit(struct sk_buff *skb, struct genl_info *info)
{
	const int pad = KMSGR_A_STATS_PAD;
	struct kmsgr_nl_count c = { };
	u64 after = 0, pinned, registered;
	struct kmsgr_stats st;
	struct sk_buff *msg;
	void *hdr;

	kmsgr_inst_walk(&after, kmsgr_nl_count_one, &c);
	kmsgr_stats_read(&st);
	kmsgr_xprt_mem(&pinned, &registered);

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &kmsgr_nl_family, 0,
				KMSGR_CMD_STATS_GET);
	if (!hdr)
		goto out_free;
	if (nla_put_u32(msg, KMSGR_A_STATS_INSTANCES, c.instances) ||
	    nla_put_u32(msg, KMSGR_A_STATS_SESSIONS, c.sessions) ||
	    nla_put_u64_64bit(msg, KMSGR_A_STATS_CONNECTS, st.connects, pad) ||
	    nla_put_u64_64bit(msg, KMSGR_A_STATS_ACCEPTS, st.accepts, pad) ||
	    nla_put_u64_64bit(msg, KMSGR_A_STATS_REFUSED, st.refused, pad) ||
	    nla_put_u64_64bit(msg, KMSGR_A_STATS_RECONNECTS, st.reconnects,
			      pad) ||
	    nla_put_u64_64bit(msg, KMSGR_A_STATS_FAULTS, st.faults, pad) ||
	    nla_put_u64_64bit(msg, KMSGR_A_STATS_MSGS_OUT, st.msgs_out, pad) ||
	    nla_put_u64_64bit(msg, KMSGR_A_STATS_BYTES_OUT, st.bytes_out,
			      pad) ||
	    nla_put_u64_64bit(msg, KMSGR_A_STATS_MSGS_IN, st.msgs_in, pad) ||
	    nla_put_u64_64bit(msg, KMSGR_A_STATS_BYTES_IN, st.bytes_in, pad) ||
	    nla_put_u64_64bit(msg, KMSGR_A_STATS_PINNED, pinned, pad) ||
	    nla_put_u64_64bit(msg, KMSGR_A_STATS_REGISTERED, registered, pad))
		goto out_free;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

out_free:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

/* ---- devices ---------------------------------------------------------- */

/*
 * A dump pass takes the devices whose key (transport, index) is at least
 * the cursor, and keeps the KMSGR_NL_MAX_DEVS smallest in key order: a
 * device that comes or goes between passes moves no other one, and a
 * longer list takes more passes.
 */
#define KMSGR_NL_MAX_DEVS	64

struct kmsgr_nl_devs {
	u64 from;				/* the cursor */
	u32 n;
	u64 key[KMSGR_NL_MAX_DEVS];		/* ascending */
	u32 xprt[KMSGR_NL_MAX_DEVS];
	struct kmsgr_xprt_dev dev[KMSGR_NL_MAX_DEVS];
};

static u64 kmsgr_nl_dev_key(u32 xprt, const struct kmsgr_xprt_dev *d)
{
	return (u64)xprt << 32 | d->index;
}

static int kmsgr_nl_dev_one(u32 xprt, const struct kmsgr_xprt_dev *d,
			    void *arg)
{
	struct kmsgr_nl_devs *all = arg;
	u64 key = kmsgr_nl_dev_key(xprt, d);
	u32 i;

	if (key < all->from)
		return 0;
	if (all->n == KMSGR_NL_MAX_DEVS) {
		if (key > all->key[all->n - 1])
			return 0;
		all->n--;			/* the largest makes room */
	}
	for (i = all->n; i && all->key[i - 1] > key; i--) {
		all->key[i] = all->key[i - 1];
		all->xprt[i] = all->xprt[i - 1];
		all->dev[i] = all->dev[i - 1];
	}
	all->key[i] = key;
	all->xprt[i] = xprt;
	all->dev[i] = *d;
	all->n++;
	return 0;
}

/* cb->args[0..1]: the cursor's high and low 32 bits (0: from the start). */
static int kmsgr_nl_dev_dumpit(struct sk_buff *skb,
			       struct netlink_callback *cb)
{
	const int pad = KMSGR_A_DEV_PAD;
	struct kmsgr_nl_devs *all;
	const struct kmsgr_xprt_dev *d;
	u32 i;
	void *hdr;
	int ret;

	all = kzalloc(sizeof(*all), GFP_KERNEL);
	if (!all)
		return -ENOMEM;
	all->from = (u64)cb->args[0] << 32 | (u32)cb->args[1];
	ret = kmsgr_xprt_devices(sock_net(cb->skb->sk), kmsgr_nl_dev_one, all);
	for (i = 0; !ret && i < all->n; i++) {
		d = &all->dev[i];
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &kmsgr_nl_family,
				  NLM_F_MULTI, KMSGR_CMD_DEV_GET);
		if (!hdr)
			break;
		if (nla_put_u32(skb, KMSGR_A_DEV_TRANSPORT, all->xprt[i]) ||
		    nla_put_string(skb, KMSGR_A_DEV_NAME, d->name) ||
		    nla_put_u32(skb, KMSGR_A_DEV_PORTS, d->ports) ||
		    nla_put_u64_64bit(skb, KMSGR_A_DEV_PORTS_DOWN, d->ports_down,
				      pad) ||
		    nla_put_u32(skb, KMSGR_A_DEV_CONNS, d->conns) ||
		    nla_put_u32(skb, KMSGR_A_DEV_PARKED, d->parked) ||
		    (d->dying && nla_put_flag(skb, KMSGR_A_DEV_DYING))) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = (all->key[i] + 1) >> 32;
		cb->args[1] = (u32)(all->key[i] + 1);
	}
	kfree(all);
	return ret ?: skb->len;
}

/* ---- monitor --------------------------------------------------------- */

/*
 * Events name every instance's peers and processes: a kernel that cannot
 * keep the group to CAP_NET_ADMIN (compat.h) gets no monitor group.
 */
#define KMSGR_NL_MONITOR	(KMSGR_GENL_MCAST_ADMIN != 0)

static bool kmsgr_nl_want(struct kmsgr_instance *inst)
{
	return KMSGR_NL_MONITOR &&
	       genl_has_listeners(&kmsgr_nl_family, inst->net,
				  KMSGR_NL_GRP_MONITOR);
}

static void kmsgr_nl_event(struct kmsgr_instance *inst,
			   const struct kmsgr_obj_info *o, u8 ev, u16 reason,
			   int res)
{
	const struct kmsgr_nl_ev e = {
		.ev = ev,
		.reason = reason,
		.res = res,
	};
	struct sk_buff *msg;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return;
	if (kmsgr_nl_put_obj(msg, 0, 0, 0, inst, o, &e, &kmsgr_nl_init_ns)) {
		nlmsg_free(msg);
		return;
	}
	genlmsg_multicast_netns(&kmsgr_nl_family, inst->net, msg, 0,
				KMSGR_NL_GRP_MONITOR, GFP_KERNEL);
}

static const struct kmsgr_notifier kmsgr_nl_notifier = {
	.want = kmsgr_nl_want,
	.event = kmsgr_nl_event,
};

/* ---- the family ------------------------------------------------------ */

static const struct nla_policy kmsgr_nl_session_policy[] = {
	[KMSGR_A_SESSION_INSTANCE]	= { .type = NLA_U64 },
	[KMSGR_A_SESSION_ID]		= { .type = NLA_U32 },
};

static const struct nla_policy kmsgr_nl_listener_policy[] = {
	[KMSGR_A_LISTENER_INSTANCE]	= { .type = NLA_U64 },
	[KMSGR_A_LISTENER_ID]		= { .type = NLA_U32 },
};

static const struct nla_policy kmsgr_nl_instance_policy[] = {
	[KMSGR_A_INSTANCE_ID]		= { .type = NLA_U64 },
};

static const struct nla_policy kmsgr_nl_bdev_policy[] = {
	[KMSGR_A_BDEV_INSTANCE]		= { .type = NLA_U64 },
	[KMSGR_A_BDEV_ID]		= { .type = NLA_U32 },
};

static const struct genl_ops kmsgr_nl_ops[] = {
	{
		.cmd		= KMSGR_CMD_SESSION_GET,
		.doit		= kmsgr_nl_get_doit,
		.start		= kmsgr_nl_dump_start,
		.dumpit		= kmsgr_nl_get_dumpit,
		.done		= kmsgr_nl_dump_done,
		.policy		= kmsgr_nl_session_policy,
		.maxattr	= ARRAY_SIZE(kmsgr_nl_session_policy) - 1,
	},
	{
		.cmd		= KMSGR_CMD_LISTENER_GET,
		.doit		= kmsgr_nl_get_doit,
		.start		= kmsgr_nl_dump_start,
		.dumpit		= kmsgr_nl_get_dumpit,
		.done		= kmsgr_nl_dump_done,
		.policy		= kmsgr_nl_listener_policy,
		.maxattr	= ARRAY_SIZE(kmsgr_nl_listener_policy) - 1,
	},
	{
		.cmd		= KMSGR_CMD_INSTANCE_GET,
		.doit		= kmsgr_nl_get_doit,
		.start		= kmsgr_nl_dump_start,
		.dumpit		= kmsgr_nl_get_dumpit,
		.done		= kmsgr_nl_dump_done,
		.policy		= kmsgr_nl_instance_policy,
		.maxattr	= ARRAY_SIZE(kmsgr_nl_instance_policy) - 1,
	},
	{
		.cmd		= KMSGR_CMD_STATS_GET,
		.doit		= kmsgr_nl_stats_doit,
		/*
		 * counts every user's and network namespace's instances:
		 * CAP_NET_ADMIN in the initial user namespace.  No
		 * attributes: the core rejects any.
		 */
		.flags		= GENL_ADMIN_PERM,
	},
	{
		.cmd		= KMSGR_CMD_DEV_GET,
		.dumpit		= kmsgr_nl_dev_dumpit,
	},
	{
		.cmd		= KMSGR_CMD_BDEV_GET,
		.doit		= kmsgr_nl_get_doit,
		.start		= kmsgr_nl_dump_start,
		.dumpit		= kmsgr_nl_get_dumpit,
		.done		= kmsgr_nl_dump_done,
		.policy		= kmsgr_nl_bdev_policy,
		.maxattr	= ARRAY_SIZE(kmsgr_nl_bdev_policy) - 1,
	},
};

static const struct genl_multicast_group kmsgr_nl_mcgrps[] = {
	[KMSGR_NL_GRP_MONITOR] = {
		.name	= KMSGR_MCGRP_MONITOR,
		/* events name every instance's peers and processes */
		.flags	= KMSGR_GENL_MCAST_ADMIN,
	},
};

static struct genl_family kmsgr_nl_family __ro_after_init = {
	.name		= KMSGR_GENL_NAME,
	.version	= KMSGR_GENL_VERSION,
	.netnsok	= true,
	/*
	 * Not under the kernel-wide genl_mutex: a dump waits on sessions'
	 * locks (one closing an RDMA connection holds its own for up to 2 s),
	 * and every other family would wait with it.  kmsgr's own locks and
	 * references are all its requests need (none keeps state here).
	 */
	.parallel_ops	= true,
	.module		= THIS_MODULE,
	.ops		= kmsgr_nl_ops,
	.n_ops		= ARRAY_SIZE(kmsgr_nl_ops),
	.mcgrps		= kmsgr_nl_mcgrps,
	.n_mcgrps	= KMSGR_NL_MONITOR ? ARRAY_SIZE(kmsgr_nl_mcgrps) : 0,
};

int kmsgr_nl_init(void)
{
	int ret;

	ret = genl_register_family(&kmsgr_nl_family);
	if (ret)
		return ret;
	kmsgr_set_notifier(&kmsgr_nl_notifier);
	return 0;
}

void kmsgr_nl_exit(void)
{
	kmsgr_set_notifier(NULL);
	genl_unregister_family(&kmsgr_nl_family);
}
