// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - listeners: LISTEN, the accept work, listener teardown.
 *
 * A listener owns a listening transport and an accept work item, kicked
 * by the transport when connections wait.  Each accepted connection
 * becomes a server session, an embryo of the listener
 * (kmsgr_sess_accept(), session.c; see struct kmsgr_listener), until its
 * handshake reaches READY.  Tearing a listener down (CLOSE, the final
 * close of the file) stops accepting and tears its embryos down;
 * announced sessions live on.  Above the sessions: it calls session.c,
 * never the other way round.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "kmsgr.h"
#include "log.h"
#include "session.h"

/* connections taken per run of the accept work */
#define KMSGR_LISTENER_ACCEPT_BUDGET	16
/*
 * After an accept that failed (memory), the listener tries again this much
 * later: the connections already queued would otherwise wait for the next
 * one to arrive, and with a full accept queue no new one arrives at all.
 */
#define KMSGR_LISTENER_RETRY	(HZ / 10)

/* The secret of @k from the caller's logon key "kmsgr:TYPE.ID". */
static int kmsgr_listener_logon_key(struct msgr2_cephx_entity *e,
				    const struct kmsgr_listen_key *k)
{
	char desc[sizeof(k->name) + 16];
	int ret;

	if (memchr_inv(k->key, 0, sizeof(k->key)))
		return -EINVAL;		/* one or the other */
	ret = kmsgr_key_entity_desc(desc, sizeof(desc), k->entity_type,
				    k->name);
	if (!ret)
		ret = kmsgr_key_logon(desc, e->key, sizeof(e->key));
	return ret;
}

/* Copy a cephx listener's keys in (LISTEN): -EINVAL on a bad entry. */
static int kmsgr_listener_copy_keys(struct kmsgr_listener *l,
				    const struct kmsgr_listen *la)
{
	const struct kmsgr_listen_key __user *uk = u64_to_user_ptr(la->keys);
	struct kmsgr_listen_key k;
	u32 i;
	int ret = 0;

	l->keys = kvcalloc(la->n_keys, sizeof(*l->keys), GFP_KERNEL_ACCOUNT);
	if (!l->keys)
		return -ENOMEM;
	l->n_keys = la->n_keys;
	for (i = 0; i < la->n_keys && !ret; i++) {
		if (copy_from_user(&k, &uk[i], sizeof(k))) {
			ret = -EFAULT;
			break;
		}
		if (memchr_inv(k.reserved, 0, sizeof(k.reserved)) ||
		    (k.flags & ~KMSGR_LISTEN_KEY_F_LOGON) ||
		    !kmsgr_entity_type_ok(k.entity_type) || !k.name[0] ||
		    strnlen(k.name, sizeof(k.name)) == sizeof(k.name))
			ret = -EINVAL;
		l->keys[i].entity_type = k.entity_type;
		BUILD_BUG_ON(sizeof(l->keys[i].name) != sizeof(k.name));
		memcpy(l->keys[i].name, k.name, sizeof(k.name));
		if (!ret && (k.flags & KMSGR_LISTEN_KEY_F_LOGON))
			ret = kmsgr_listener_logon_key(&l->keys[i], &k);
		else
			memcpy(l->keys[i].key, k.key, sizeof(k.key));
	}
	memzero_explicit(&k, sizeof(k));
	return ret;	/* on failure the listener's release wipes them */
}

static void kmsgr_listener_accept(struct work_struct *work)
{
	struct kmsgr_listener *l = container_of(to_delayed_work(work),
						struct kmsgr_listener,
						accept_work);
	struct mem_cgroup *old_memcg;
	struct kmsgr_xprt *x, *lx;
	int i, ret;

	/* pairs with kmsgr_listen()'s release: the transport is set up */
	lx = smp_load_acquire(&l->xprt);
	/* kicked before kmsgr_listen() had the transport: it kicks again */
	if (!lx)
		return;
	/* what the connections cost is the listener owner's */
	old_memcg = set_active_memcg(l->obj.inst->memcg);
	for (i = 0; i < KMSGR_LISTENER_ACCEPT_BUDGET; i++) {
		if (READ_ONCE(l->closing))
			goto out;
		if (kmsgr_fault_set(KMSGR_FAULT_ACCEPT_FAIL))
			ret = -ENOMEM;
		else
			ret = lx->ops->accept(lx, &x);
		if (ret == -EAGAIN)
			goto out;
		/* its device went away: nothing to try again (kmsgr(4)) */
		if (ret == -ENODEV) {
			kmsgr_listener_stopped(l, ret);
			goto out;
		}
		if (ret) {
			kmsgr_inst_warn_ratelimited(l->obj.inst, "listener %u: accept failed: %d; trying again\n",
						    l->obj.id, ret);
			queue_delayed_work(kmsgr_wq, &l->accept_work,
					   KMSGR_LISTENER_RETRY);
			goto out;
		}
		ret = kmsgr_sess_accept(l, x);
		if (ret)	/* reported by kmsgr_sess_accept() */
			x->ops->close(x);
	}
	queue_delayed_work(kmsgr_wq, &l->accept_work, 0);	/* more may wait */
out:
	set_active_memcg(old_memcg);
}

static void kmsgr_listener_kick(void *priv, unsigned int why)
{
	struct kmsgr_listener *l = priv;

	/* a retry waiting for its time is run now: a connection came */
	mod_delayed_work(kmsgr_wq, &l->accept_work, 0);
}

/*
 * Stop accepting, then tear down the embryos (sessions not yet announced):
 * they are the listener's.  Announced sessions live on.
 */
void kmsgr_listener_teardown(struct kmsgr_listener *l)
{
	struct kmsgr_sess *s, *tmp;
	LIST_HEAD(embryos);

	spin_lock(&l->lock);
	l->closing = true;		/* no embryo is linked or announced */
	spin_unlock(&l->lock);
	cancel_delayed_work_sync(&l->accept_work);
	if (l->xprt)
		l->xprt->ops->close(l->xprt);	/* no kick after this */
	cancel_delayed_work_sync(&l->accept_work);

	spin_lock(&l->lock);
	list_for_each_entry_safe(s, tmp, &l->embryos, embryo) {
		s->embryo_linked = false;	/* ours now, not the reaper's */
		list_move_tail(&s->embryo, &embryos);
	}
	l->nr_embryos = 0;
	spin_unlock(&l->lock);
	list_for_each_entry_safe(s, tmp, &embryos, embryo) {
		list_del_init(&s->embryo);
		kmsgr_sess_teardown(s, false, false);
	}

	atomic_dec(&l->obj.inst->nr_sessions);
	kmsgr_obj_put(&l->obj);
}

int kmsgr_listen(struct kmsgr_instance *inst, struct kmsgr_listen __user *uarg)
{
	struct sockaddr_storage ss;
	struct kmsgr_listener *l;
	struct kmsgr_listen la;
	struct kmsgr_xprt *lx;
	int ret;

	if (copy_from_user(&la, uarg, sizeof(la)))
		return -EFAULT;
	/* id and bound are output fields: ignored on input */
	if (memchr_inv(la.reserved1, 0, sizeof(la.reserved1)) ||
	    memchr_inv(la.reserved, 0, sizeof(la.reserved)) || la.reserved2)
		return -EINVAL;
	if (la.flags & ~(KMSGR_SESS_F_LOSSLESS | KMSGR_SESS_F_SECURE))
		return -EINVAL;
	if (la.my_type && !kmsgr_entity_type_ok(la.my_type))
		return -EINVAL;
	if (la.auth == KMSGR_AUTH_CEPHX) {
		if (!la.n_keys || la.n_keys > KMSGR_LISTEN_KEYS_MAX || !la.keys)
			return -EINVAL;
	} else if (la.auth && la.auth != KMSGR_AUTH_NONE) {
		return -EINVAL;
	} else if (la.n_keys || la.keys) {
		return -EINVAL;
	} else if (la.flags & KMSGR_SESS_F_SECURE) {
		return -EINVAL;		/* secure mode needs cephx */
	}
	if (la.transport != KMSGR_XPRT_TCP && la.transport != KMSGR_XPRT_RDMA)
		return -EOPNOTSUPP;
	ret = kmsgr_addr_to_ss(&la.addr, &ss);
	if (ret)
		return ret;

	l = kzalloc(sizeof(*l), GFP_KERNEL_ACCOUNT);
	if (!l)
		return -ENOMEM;
	kref_init(&l->obj.ref);
	l->obj.kind = KMSGR_OBJ_LISTENER;
	l->obj.inst = inst;
	l->obj.user_data = la.user_data;
	INIT_LIST_HEAD(&l->obj.teardown);
	l->flags = la.flags;
	l->auth = la.auth == KMSGR_AUTH_CEPHX ? KMSGR_AUTH_CEPHX :
						 KMSGR_AUTH_NONE;
	if (l->auth == KMSGR_AUTH_CEPHX) {
		ret = kmsgr_listener_copy_keys(l, &la);
		if (ret)
			goto out_free;
	}
	l->nonce = la.addr.nonce;
	l->my_type = la.my_type ? la.my_type : MSGR2_ENTITY_CLIENT;
	spin_lock_init(&l->lock);
	INIT_LIST_HEAD(&l->embryos);
	INIT_DELAYED_WORK(&l->accept_work, kmsgr_listener_accept);
	/* released with the listener (kmsgr_obj_release()) */
	l->xtype = kmsgr_xprt_get(la.transport);
	if (!l->xtype) {
		ret = -EOPNOTSUPP;	/* its module is not loaded */
		goto out_free;
	}

	ret = kmsgr_sess_charge(inst);	/* listeners count as sessions */
	if (ret)
		goto out_free;
	/* a CLOSE naming the id finds nothing until it is returned */
	ret = kmsgr_obj_reserve(inst, &l->obj.id);
	if (ret)
		goto out_uncharge;
	ret = l->xtype->listen(inst->net, &inst->xacct, &ss,
			       kmsgr_listener_kick, l, &lx);
	if (ret)
		goto out_release;
	ret = lx->ops->getname(lx, &ss, false);
	if (ret)
		goto out_close;
	spin_lock(&l->lock);
	l->bound = ss;
	spin_unlock(&l->lock);
	kmsgr_ss_to_addr(&ss, &la.bound);
	la.id = l->obj.id;
	if (copy_to_user(uarg, &la, sizeof(la))) {
		ret = -EFAULT;
		goto out_close;
	}
	/*
	 * Only a LISTEN that cannot fail any more gives the accept work the
	 * transport: a session it announced would name a listener id the
	 * application was never given.  The transport may have kicked
	 * already (it may as soon as it listens): the accept work did
	 * nothing without @lx, so kick it again for what came meanwhile.
	 */
	kmsgr_fault(KMSGR_FAULT_LISTEN, false);
	/* pairs with the accept work's acquire */
	smp_store_release(&l->xprt, lx);
	kmsgr_listener_kick(l, 0);
	kmsgr_obj_publish(inst, &l->obj);
	return 0;

out_close:
	lx->ops->close(lx);		/* no kick after this */
out_release:
	/* a kick before the failure queued an accept work that does nothing */
	cancel_delayed_work_sync(&l->accept_work);
	xa_release(&inst->objs, l->obj.id);
out_uncharge:
	atomic_dec(&inst->nr_sessions);
out_free:
	kmsgr_obj_put(&l->obj);
	return ret;
}
