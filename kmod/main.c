// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - module init/exit and the /dev/kmsgr misc device.
 *
 * Every open() of /dev/kmsgr creates a struct kmsgr_instance, freed by the
 * final release() of that file.  Control is by ioctl (see
 * uapi/linux/kmsgr.h); only KMSGR_IOC_INFO exists so far.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/build_bug.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>

#include "kmsgr.h"

/* Live instances; must be zero when the module goes away. */
static atomic_t kmsgr_instances = ATOMIC_INIT(0);

/* Source of kmsgr_instance.id. */
static atomic64_t kmsgr_next_instance_id = ATOMIC64_INIT(0);

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

	inst = kzalloc(sizeof(*inst), GFP_KERNEL);
	if (!inst)
		return NULL;

	inst->id = atomic64_inc_return(&kmsgr_next_instance_id);
	mutex_init(&inst->lock);
	atomic_inc(&kmsgr_instances);
	pr_debug("instance %llu created\n", inst->id);
	return inst;
}

static void kmsgr_instance_free(struct kmsgr_instance *inst)
{
	pr_debug("instance %llu freed\n", inst->id);
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
	info.features = KMSGR_FEAT_SUPPORTED;
	strscpy(info.version, KMSGR_VERSION, sizeof(info.version));

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

static int kmsgr_ch_release(struct inode *inode, struct file *file)
{
	kmsgr_instance_free(file->private_data);
	return 0;
}

static long kmsgr_ch_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct kmsgr_instance *inst = file->private_data;
	void __user *argp = (void __user *)arg;
	long ret;

	switch (cmd) {
	case KMSGR_IOC_INFO:
		mutex_lock(&inst->lock);
		ret = kmsgr_ctrl_info(inst, argp);
		mutex_unlock(&inst->lock);
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

	/* The uapi structure is 128 bytes on every ABI, 32-bit included. */
	BUILD_BUG_ON(sizeof(struct kmsgr_info) != 128);
	BUILD_BUG_ON(sizeof(KMSGR_VERSION) > KMSGR_VERSION_LEN);

	ret = misc_register(&kmsgr_misc);
	if (ret) {
		pr_err("cannot register /dev/%s: error %d\n",
		       KMSGR_DEV_NAME, ret);
		return ret;
	}

	pr_info("version %s, ABI %d, features 0x%llx, /dev/%s\n",
		KMSGR_VERSION, KMSGR_ABI_VERSION,
		(unsigned long long)KMSGR_FEAT_SUPPORTED, KMSGR_DEV_NAME);
	return 0;
}

static void __exit kmsgr_exit(void)
{
	misc_deregister(&kmsgr_misc);
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
