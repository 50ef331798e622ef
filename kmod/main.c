// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - module init/exit and the /dev/kmsgr misc device.
 *
 * Every open() of /dev/kmsgr creates a struct kmsgr_instance, freed by the
 * final release() of that file.  Control is by ioctl (see
 * uapi/linux/kmsgr.h): INFO here, SETUP in mem.c, ENTER in enter.c, LISTEN
 * in listener.c, CONNECT in session.c, CLOSE in close.c; data by mmap'd
 * rings (mem.c).  The layers are drawn in session.h.
 *
 * The final release() comes only after every mapping of the file is gone
 * (each VMA holds a reference to the file), and after every ioctl and
 * poll() returned (they hold one too), so teardown never races with them.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/build_bug.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/memcontrol.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/nsproxy.h>
#include <linux/cred.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sizes.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>

#include "kmsgr.h"
#include "log.h"
#include "xprt.h"

/* Live instances; must be zero when the module goes away. */
static atomic_t kmsgr_instances = ATOMIC_INIT(0);

/*
 * Module parameter "instances": read-only view of kmsgr_instances, so tests
 * can check that every instance was freed before the module is unloaded.
 */
static int kmsgr_param_instances_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&kmsgr_instances));
}

static int kmsgr_param_readonly_set(const char *val,
				    const struct kernel_param *kp)
{
	return -EPERM;
}

static const struct kernel_param_ops kmsgr_param_instances_ops = {
	.set = kmsgr_param_readonly_set,
	.get = kmsgr_param_instances_get,
};

module_param_cb(instances, &kmsgr_param_instances_ops, NULL, 0444);
MODULE_PARM_DESC(instances,
		 "Open /dev/kmsgr instances (read-only; 0 when none is open)");

static struct kmsgr_instance *kmsgr_instance_alloc(void)
{
	struct kmsgr_instance *inst;

	inst = kzalloc(sizeof(*inst), GFP_KERNEL_ACCOUNT);
	if (!inst)
		return NULL;

	inst->tgid = get_pid(task_tgid(current));
	get_task_comm(inst->comm, current);
	inst->uid = current_euid();
	/* sockets go where the opener lives, like libceph's */
	inst->net = get_net(current->nsproxy->net_ns);
	inst->memcg = get_mem_cgroup_from_mm(current->mm);
	mutex_init(&inst->lock);
	kmsgr_inst_init(inst);
	/* before netlink can find it (kmsgr_bdev_info_next()) */
	kmsgr_bdev_inst_init(inst);
	kmsgr_sess_inst_init(inst);	/* gives it its id, registers it */
	atomic_inc(&kmsgr_instances);
	kmsgr_inst_dbg(inst, "created\n");
	return inst;
}

static void kmsgr_instance_free(struct kmsgr_instance *inst)
{
	kmsgr_inst_dbg(inst, "freed\n");
	put_net(inst->net);
	put_pid(inst->tgid);
	mem_cgroup_put(inst->memcg);
	mutex_destroy(&inst->lock);
	kfree(inst);
	atomic_dec(&kmsgr_instances);
}

/* KMSGR_IOC_INFO: report the ABI version, the features and the limits. */
static int kmsgr_ctrl_info(struct kmsgr_instance *inst,
			   struct kmsgr_info __user *uinfo)
{
	struct kmsgr_info info;

	if (copy_from_user(&info, uinfo, sizeof(info)))
		return -EFAULT;

	if (info.flags & ~KMSGR_INFO_F_ALL)
		return -EINVAL;
	if (info.reserved0 || memchr_inv(info.reserved, 0, sizeof(info.reserved)))
		return -EINVAL;

	/* Every field not set below, reserved ones included, reads as 0. */
	memset(&info, 0, sizeof(info));
	info.abi_version = KMSGR_ABI_VERSION;
	info.features = KMSGR_FEAT_SUPPORTED | kmsgr_xprt_features();
	info.max_sq_entries = READ_ONCE(kmsgr_max_sq_entries);
	info.max_cq_entries = READ_ONCE(kmsgr_max_cq_entries);
	info.max_buf_size = READ_ONCE(kmsgr_max_buf_size);
	info.max_sessions = READ_ONCE(kmsgr_max_sessions);
	strscpy(info.version, KMSGR_VERSION, sizeof(info.version));
	info.pool_bytes = kmsgr_pool_in_use(inst);
	kmsgr_xprt_mem(&info.pinned_bytes, &info.registered_bytes);

	if (copy_to_user(uinfo, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static int kmsgr_ch_open(struct inode *inode, struct file *file)
{
	struct kmsgr_instance *inst;
	int ret;

	ret = nonseekable_open(inode, file);
	if (ret)
		return ret;

	inst = kmsgr_instance_alloc();
	if (!inst)
		return -ENOMEM;

	/* Replaces the struct miscdevice pointer that misc_open() put here. */
	file->private_data = inst;
	return 0;
}

/*
 * The final close of the file: no mapping, ioctl or poll() is left (each
 * holds a file reference).  Sessions go first: they post into the rings
 * and the buffer area that kmsgr_inst_teardown() frees.
 */
static int kmsgr_ch_release(struct inode *inode, struct file *file)
{
	struct kmsgr_instance *inst = file->private_data;

	kmsgr_sess_inst_exit(inst);	/* netlink no longer sees it */
	kmsgr_close_all(inst);
	kmsgr_bdev_detach_all(inst);	/* waits for their ops' CQEs */
	kmsgr_sess_inst_drain(inst);	/* their last resume_work */
	kmsgr_inst_teardown(inst);
	kmsgr_instance_free(inst);
	return 0;
}

static int kmsgr_ch_mmap(struct file *file, struct vm_area_struct *vma)
{
	return kmsgr_inst_mmap(file->private_data, vma);
}

static __poll_t kmsgr_ch_poll(struct file *file, poll_table *wait)
{
	return kmsgr_inst_poll(file->private_data, file, wait);
}

/*
 * LISTEN and CONNECT need the rings (their events go to the CQ): -EINVAL
 * before SETUP.  Called with inst->lock held.
 */
static long kmsgr_ctrl_session(struct kmsgr_instance *inst, unsigned int cmd,
			       void __user *argp)
	__must_hold(&inst->lock)
{
	switch (cmd) {
	case KMSGR_IOC_LISTEN:
		if (!inst->setup_done)
			return -EINVAL;
		return kmsgr_listen(inst, argp);
	case KMSGR_IOC_CONNECT:
		if (!inst->setup_done)
			return -EINVAL;
		return kmsgr_sess_connect(inst, argp);
	default:
		return -ENOTTY;
	}
}

/* Whether @cmd is one of kmsgr's commands, exactly (size, direction). */
static bool kmsgr_ioc_known(unsigned int cmd)
{
	switch (cmd) {
	case KMSGR_IOC_INFO:
	case KMSGR_IOC_SETUP:
	case KMSGR_IOC_ENTER:
	case KMSGR_IOC_LISTEN:
	case KMSGR_IOC_CONNECT:
	case KMSGR_IOC_CLOSE:
	case KMSGR_IOC_ATTACH_BDEV:
	case KMSGR_IOC_DETACH_BDEV:
		return true;
	default:
		return false;
	}
}

static long kmsgr_ch_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct kmsgr_instance *inst = file->private_data;
	void __user *argp = (void __user *)arg;
	long ret;

	/*
	 * Everything but INFO allocates, pins memory or talks to the network:
	 * only for a file opened for writing.  A command that is not one of
	 * ours is ENOTTY on any file.
	 */
	if (!kmsgr_ioc_known(cmd))
		return -ENOTTY;
	if (cmd != KMSGR_IOC_INFO && !(file->f_mode & FMODE_WRITE))
		return -EBADF;

	switch (cmd) {
	case KMSGR_IOC_INFO:
		mutex_lock(&inst->lock);
		ret = kmsgr_ctrl_info(inst, argp);
		mutex_unlock(&inst->lock);
		break;
	case KMSGR_IOC_SETUP:
		mutex_lock(&inst->lock);
		ret = kmsgr_inst_setup(inst, argp);
		mutex_unlock(&inst->lock);
		break;
	case KMSGR_IOC_ENTER:
		/* Not under inst->lock: it may wait; submit_lock inside. */
		ret = kmsgr_inst_enter(inst, argp);
		break;
	case KMSGR_IOC_LISTEN:
	case KMSGR_IOC_CONNECT:
		mutex_lock(&inst->lock);
		ret = kmsgr_ctrl_session(inst, cmd, argp);
		mutex_unlock(&inst->lock);
		break;
	case KMSGR_IOC_CLOSE:
		/* inst->lock inside, not across its RCU grace period */
		ret = kmsgr_close(inst, argp);
		break;
	case KMSGR_IOC_ATTACH_BDEV:
		/* submit_lock inside; not inst->lock (never nested) */
		ret = kmsgr_bdev_attach(inst, argp);
		break;
	case KMSGR_IOC_DETACH_BDEV:
		ret = kmsgr_bdev_detach(inst, argp);
		break;
	default:
		ret = -ENOTTY;
		break;
	}
	return ret;
}

static const struct file_operations kmsgr_ch_fops = {
	.owner		= THIS_MODULE,
	.open		= kmsgr_ch_open,
	.release	= kmsgr_ch_release,
	.unlocked_ioctl	= kmsgr_ch_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= kmsgr_ch_mmap,
	.poll		= kmsgr_ch_poll,
};

static struct miscdevice kmsgr_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= KMSGR_DEV_NAME,
	.fops	= &kmsgr_ch_fops,
	.mode	= 0600,
};

static int __init kmsgr_init(void)
{
	int ret;

	/* The uapi structures have one size on every ABI, 32-bit included. */
	BUILD_BUG_ON(sizeof(struct kmsgr_info) != 128);
	BUILD_BUG_ON(sizeof(KMSGR_VERSION) > KMSGR_VERSION_LEN);
	BUILD_BUG_ON(sizeof(struct kmsgr_ring) != 64);
	BUILD_BUG_ON(sizeof(struct kmsgr_sqe) != 64);
	BUILD_BUG_ON(sizeof(struct kmsgr_cqe) != 64);
	BUILD_BUG_ON(sizeof(struct kmsgr_setup) != 96);
	BUILD_BUG_ON(sizeof(struct kmsgr_enter) != 40);
	BUILD_BUG_ON(sizeof(struct kmsgr_close) != 24);

	ret = msgr2_port_init();
	if (ret)
		return ret;
	ret = kmsgr_sess_init();
	if (ret)
		goto out_port;
	ret = kmsgr_xprt_register(&kmsgr_xprt_tcp);
	if (ret)
		goto out_sess_exit;
	ret = kmsgr_nl_init();
	if (ret) {
		pr_err("cannot register the generic netlink family: error %d\n",
		       ret);
		goto out_xprt;
	}

	ret = misc_register(&kmsgr_misc);
	if (ret) {
		pr_err("cannot register /dev/%s: error %d\n",
		       KMSGR_DEV_NAME, ret);
		goto out_nl;
	}

	pr_info("version %s, ABI %d, features 0x%llx, /dev/%s, limits sq %u cq %u buf %lu sessions %u\n",
		KMSGR_VERSION, KMSGR_ABI_VERSION,
		(unsigned long long)KMSGR_FEAT_SUPPORTED, KMSGR_DEV_NAME,
		kmsgr_max_sq_entries, kmsgr_max_cq_entries,
		kmsgr_max_buf_size, kmsgr_max_sessions);
	return 0;

out_nl:
	kmsgr_nl_exit();
out_xprt:
	kmsgr_xprt_unregister(&kmsgr_xprt_tcp);
out_sess_exit:
	kmsgr_sess_exit();
	kmsgr_tcp_exit();
out_port:
	msgr2_port_exit();
	return ret;
}

static void __exit kmsgr_exit(void)
{
	misc_deregister(&kmsgr_misc);
	kmsgr_nl_exit();
	kmsgr_xprt_unregister(&kmsgr_xprt_tcp);
	kmsgr_sess_exit();
	kmsgr_tcp_exit();
	msgr2_port_exit();
	/* Each open file holds a module reference: nothing can be left. */
	WARN_ON_ONCE(atomic_read(&kmsgr_instances));
	pr_debug("unloaded\n");
}

module_init(kmsgr_init);
module_exit(kmsgr_exit);

MODULE_AUTHOR("The kmsgr authors");
MODULE_DESCRIPTION("Ceph msgr2 sessions over kernel TCP and RDMA");
MODULE_LICENSE("GPL");
MODULE_VERSION(KMSGR_VERSION);
