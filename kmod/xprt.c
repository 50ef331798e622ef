// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - the transports this module can run sessions on.
 *
 * TCP is built in; other transports are modules of their own (kmsgr_rdma)
 * that register here when they load.  Sessions and listeners hold a
 * reference to their transport's module for as long as they may call it
 * (kmsgr_xprt_get()/kmsgr_xprt_put()), so a transport module cannot go
 * away under them; unloading it fails with EBUSY while one is in use.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kmod.h>
#include <linux/module.h>
#include <linux/spinlock.h>

#include <linux/kmsgr.h>

#include "kmsgr.h"
#include "xprt.h"

#define KMSGR_XPRT_TYPES	3	/* KMSGR_XPRT_* ids are 1 and 2 */

static DEFINE_SPINLOCK(kmsgr_xprt_lock);	/* kmsgr_xprt_types[] */
static const struct kmsgr_xprt_type *kmsgr_xprt_types[KMSGR_XPRT_TYPES];

/**
 * kmsgr_xprt_register() - make a transport available to sessions
 * @t: the transport; @t->owner is the module that implements it
 *
 * Return: 0, -EINVAL for an unknown id, -EEXIST if the id is taken.
 */
int kmsgr_xprt_register(const struct kmsgr_xprt_type *t)
{
	int ret = 0;

	if (!t->id || t->id >= KMSGR_XPRT_TYPES)
		return -EINVAL;
	spin_lock(&kmsgr_xprt_lock);
	if (kmsgr_xprt_types[t->id])
		ret = -EEXIST;
	else
		kmsgr_xprt_types[t->id] = t;
	spin_unlock(&kmsgr_xprt_lock);
	if (!ret)
		pr_info("transport %s registered\n", t->name);
	return ret;
}
EXPORT_SYMBOL_GPL(kmsgr_xprt_register);

/*
 * Called from the transport module's exit: its module reference count is
 * zero, so no session or listener uses it.
 */
void kmsgr_xprt_unregister(const struct kmsgr_xprt_type *t)
{
	spin_lock(&kmsgr_xprt_lock);
	if (t->id < KMSGR_XPRT_TYPES && kmsgr_xprt_types[t->id] == t)
		kmsgr_xprt_types[t->id] = NULL;
	spin_unlock(&kmsgr_xprt_lock);
}
EXPORT_SYMBOL_GPL(kmsgr_xprt_unregister);

static const struct kmsgr_xprt_type *kmsgr_xprt_try_get(u32 id)
{
	const struct kmsgr_xprt_type *t;

	spin_lock(&kmsgr_xprt_lock);
	t = kmsgr_xprt_types[id];
	if (t && !try_module_get(t->owner))
		t = NULL;		/* its module is going away */
	spin_unlock(&kmsgr_xprt_lock);
	return t;
}

/**
 * kmsgr_xprt_get() - a transport by KMSGR_XPRT_* id, with a reference
 * @id: KMSGR_XPRT_*
 *
 * Loads the transport's module (alias "kmsgr-xprt-<id>") if it is not
 * there yet.  May sleep.
 *
 * Return: the transport (release with kmsgr_xprt_put()), or NULL when
 * there is no such transport.
 */
const struct kmsgr_xprt_type *kmsgr_xprt_get(u32 id)
{
	const struct kmsgr_xprt_type *t;

	if (!id || id >= KMSGR_XPRT_TYPES)
		return NULL;
	t = kmsgr_xprt_try_get(id);
	if (!t && !request_module("kmsgr-xprt-%u", id))
		t = kmsgr_xprt_try_get(id);
	return t;
}

/* Another reference to a transport the caller already holds. */
void kmsgr_xprt_hold(const struct kmsgr_xprt_type *t)
{
	__module_get(t->owner);
}

void kmsgr_xprt_put(const struct kmsgr_xprt_type *t)
{
	if (t)
		module_put(t->owner);
}

/* What the registered transports keep pinned and registered, summed. */
void kmsgr_xprt_mem(u64 *pinned, u64 *registered)
{
	const struct kmsgr_xprt_type *t;
	u64 p, r;
	u32 id;

	*pinned = 0;
	*registered = 0;
	for (id = 1; id < KMSGR_XPRT_TYPES; id++) {
		t = kmsgr_xprt_try_get(id);
		if (!t)
			continue;
		if (t->mem) {
			t->mem(&p, &r);
			*pinned += p;
			*registered += r;
		}
		kmsgr_xprt_put(t);
	}
}

struct kmsgr_xprt_devs {
	int (*fn)(u32 xprt, const struct kmsgr_xprt_dev *d, void *arg);
	void *arg;
	u32 id;
};

static int kmsgr_xprt_dev_one(const struct kmsgr_xprt_dev *d, void *arg)
{
	struct kmsgr_xprt_devs *w = arg;

	return w->fn(w->id, d, w->arg);
}

int kmsgr_xprt_devices(struct net *net,
		       int (*fn)(u32 xprt, const struct kmsgr_xprt_dev *d,
				 void *arg), void *arg)
{
	struct kmsgr_xprt_devs w = { .fn = fn, .arg = arg };
	const struct kmsgr_xprt_type *t;
	int ret = 0;

	for (w.id = 1; w.id < KMSGR_XPRT_TYPES && !ret; w.id++) {
		t = kmsgr_xprt_try_get(w.id);
		if (!t)
			continue;
		if (t->devices)
			ret = t->devices(net, kmsgr_xprt_dev_one, &w);
		kmsgr_xprt_put(t);
	}
	return ret;
}

/* KMSGR_FEAT_* bits of the transports registered now. */
u64 kmsgr_xprt_features(void)
{
	u64 f = 0;

	spin_lock(&kmsgr_xprt_lock);
	if (kmsgr_xprt_types[KMSGR_XPRT_TCP])
		f |= KMSGR_FEAT_TCP;
	if (kmsgr_xprt_types[KMSGR_XPRT_RDMA])
		f |= KMSGR_FEAT_RDMA;
	spin_unlock(&kmsgr_xprt_lock);
	return f;
}
