// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - CLOSE of a session or a listener, and closing all of them when
 * the instance goes away.  Above both listener.c and session.c.
 *
 * Whoever takes an object out of inst->objs tears it down; readers find
 * objects under RCU, so a grace period separates the two.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait_bit.h>
#include <linux/xarray.h>

#include "kmsgr.h"
#include "session.h"

int kmsgr_close(struct kmsgr_instance *inst, struct kmsgr_close __user *uarg)
{
	struct kmsgr_close c;
	struct kmsgr_obj *obj;

	if (copy_from_user(&c, uarg, sizeof(c)))
		return -EFAULT;
	if (c.flags || memchr_inv(c.reserved, 0, sizeof(c.reserved)))
		return -EINVAL;
	if (!c.id)
		return -ENOENT;
	/*
	 * Whoever takes it out of objs tears it down: CLOSE is idempotent.
	 * A reserved slot (an id CONNECT or LISTEN has not returned yet, or
	 * kmsgr_sess_announce()'s) reads as NULL and must stay reserved:
	 * look before erasing.  Two change a slot without inst->lock:
	 * kmsgr_sess_announce() stores its session into its reservation
	 * (under the session's and the listener's locks), so the look sees
	 * the reservation (ENOENT: the ACCEPTED that names the id is not
	 * posted yet) or the session, never a half; and a retiring server
	 * session's reaper may erase the id (xa_cmpxchg(): then the reaper
	 * owns it and CLOSE says ENOENT).  Once erased, the object is
	 * ours: the lock is not held across the grace period, so closing
	 * many sessions does not stall the instance's other control ioctls.
	 */
	mutex_lock(&inst->lock);
	obj = xa_load(&inst->objs, c.id) ? xa_erase(&inst->objs, c.id) : NULL;
	mutex_unlock(&inst->lock);
	if (!obj)
		return -ENOENT;
	/* no kick or resume still looks at it after this */
	synchronize_rcu();
	if (obj->kind == KMSGR_OBJ_SESS)
		kmsgr_sess_teardown(container_of(obj, struct kmsgr_sess, obj),
				    true, false);
	else
		kmsgr_listener_teardown(container_of(obj,
						     struct kmsgr_listener,
						     obj));
	return 0;
}

void kmsgr_close_all(struct kmsgr_instance *inst)
{
	struct kmsgr_obj *obj, *tmp;
	unsigned long idx;
	LIST_HEAD(sessions);
	LIST_HEAD(listeners);

	/*
	 * An instance that never had a session or listener (the common
	 * open/INFO/close) has nothing to wait for: skip the grace periods
	 * and the workqueue flush.  Nothing can charge one concurrently: this
	 * runs at the final release of the file.
	 */
	if (!READ_ONCE(inst->objs_used)) {
		xa_destroy(&inst->objs);
		return;
	}

	/* take everything out; what a reaper took out already is its own */
	xa_for_each(&inst->objs, idx, obj) {
		if (xa_cmpxchg(&inst->objs, idx, obj, NULL, GFP_KERNEL) != obj)
			continue;
		list_add_tail(&obj->teardown,
			      obj->kind == KMSGR_OBJ_SESS ? &sessions :
							    &listeners);
	}
	synchronize_rcu();
	/* listeners first: no new sessions after this */
	list_for_each_entry_safe(obj, tmp, &listeners, teardown) {
		list_del_init(&obj->teardown);
		kmsgr_listener_teardown(container_of(obj,
						     struct kmsgr_listener,
						     obj));
	}
	/* sessions accepted meanwhile */
	xa_for_each(&inst->objs, idx, obj) {
		if (xa_cmpxchg(&inst->objs, idx, obj, NULL, GFP_KERNEL) == obj)
			list_add_tail(&obj->teardown, &sessions);
	}
	synchronize_rcu();
	list_for_each_entry_safe(obj, tmp, &sessions, teardown) {
		list_del_init(&obj->teardown);
		kmsgr_sess_teardown(container_of(obj, struct kmsgr_sess, obj),
				    false, false);
	}
	/* reapers of embryos, and references held for a moment elsewhere */
	wait_var_event(&inst->nr_live, !atomic_read(&inst->nr_live));
	WARN_ON_ONCE(!xa_empty(&inst->objs));
	WARN_ON_ONCE(atomic_read(&inst->nr_sessions));
	WARN_ON_ONCE(!list_empty(&inst->timed));
	del_timer_sync(&inst->timer);
	xa_destroy(&inst->objs);
}
