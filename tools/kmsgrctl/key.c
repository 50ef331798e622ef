// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl key - put a Ceph keyring's secret into the kernel's key
 * retention service as a "logon" key, which the kmsgr module reads at
 * CONNECT (--key-desc) or LISTEN (--logon-key) and user space can never
 * read back: the secret then no longer passes through the processes that
 * open sessions.
 *
 *   kmsgrctl key add --keyring FILE [--name client.ID] [--desc DESC]
 *                    [--to @u|@s|@us|SERIAL]
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kmsgrctl.h"

/* the special keyring ids of add_key(2) (<linux/keyctl.h>) */
#define KEY_SPEC_SESSION_KEYRING	-3
#define KEY_SPEC_USER_KEYRING		-4
#define KEY_SPEC_USER_SESSION_KEYRING	-5

static void key_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s key add --keyring FILE [--name client.ID] [--desc DESC]\n"
		"                  [--to @u|@s|@us|SERIAL]\n"
		"\n"
		"Reads the secret of entity --name (default client.admin) from a Ceph\n"
		"keyring and adds it as a \"logon\" key, which user space cannot read\n"
		"back, to the user keyring (@u, default), the session keyring (@s),\n"
		"the user session keyring (@us) or a keyring by serial.  Its\n"
		"description is DESC, by default \"kmsgr:client.ID\": what \"session\n"
		"listen --logon-key\" looks for; \"session connect --key-desc DESC\"\n"
		"names it.  Prints the new key's serial.\n",
		progname);
}

static int parse_keyring_id(const char *s, long *id)
{
	char *end;

	if (!strcmp(s, "@u"))
		*id = KEY_SPEC_USER_KEYRING;
	else if (!strcmp(s, "@s"))
		*id = KEY_SPEC_SESSION_KEYRING;
	else if (!strcmp(s, "@us"))
		*id = KEY_SPEC_USER_SESSION_KEYRING;
	else {
		errno = 0;
		*id = strtol(s, &end, 0);
		/* a key_serial_t is 32 bits: the kernel would cut it down */
		if (errno || end == s || *end || *id <= 0 || *id > INT32_MAX)
			return -EINVAL;
	}
	return 0;
}

static int key_add(int argc, char **argv)
{
	enum { OPT_KEYRING = 256, OPT_NAME, OPT_DESC, OPT_TO, OPT_HELP };
	static const struct option lopts[] = {
		{ "keyring", required_argument, NULL, OPT_KEYRING },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "desc", required_argument, NULL, OPT_DESC },
		{ "to", required_argument, NULL, OPT_TO },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *keyring = NULL, *name = "client.admin", *desc = NULL;
	const size_t prefix = strlen(KMSGR_KEY_DESC_PREFIX);
	long to = KEY_SPEC_USER_KEYRING, serial;
	char defdesc[128];
	__u8 key[16];
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case OPT_KEYRING:
			keyring = optarg;
			break;
		case OPT_NAME:
			name = optarg;
			break;
		case OPT_DESC:
			desc = optarg;
			break;
		case OPT_TO:
			if (parse_keyring_id(optarg, &to)) {
				error("bad --to \"%s\" (@u, @s, @us or a serial)",
				      optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_HELP:
		case 'h':
			key_usage(stdout);
			return EXIT_SUCCESS;
		default:
			ctl_bad_option("key add", argv);
			return EXIT_USAGE;
		}
	}
	if (optind != argc || !keyring) {
		error("key add wants --keyring FILE and no other argument");
		return EXIT_USAGE;
	}
	if (strncmp(name, "client.", 7) || !name[7] ||
	    prefix + strlen(name) >= sizeof(defdesc)) {
		error("--name must look like client.ID, not \"%s\"", name);
		return EXIT_USAGE;
	}
	if (!desc) {
		snprintf(defdesc, sizeof(defdesc), KMSGR_KEY_DESC_PREFIX "%s",
			 name);
		desc = defdesc;
	}
	/* kmsgr reads only logon keys of its own service */
	if (strncmp(desc, KMSGR_KEY_DESC_PREFIX, prefix) || !desc[prefix]) {
		error("--desc \"%s\": kmsgr's logon keys are named \"%sNAME\"",
		      desc, KMSGR_KEY_DESC_PREFIX);
		return EXIT_USAGE;
	}
	ret = kmsgr_keyring_load(keyring, name, key);
	if (ret) {
		error("cannot read the key of %s from %s: %s", name, keyring,
		      kmsgr_strerror(ret));
		return EXIT_FAILURE;
	}
	serial = syscall(SYS_add_key, "logon", desc, key, sizeof(key), to);
	ret = serial < 0 ? -errno : 0;
	explicit_bzero(key, sizeof(key));
	if (ret) {
		error("add_key(logon, \"%s\"): %s", desc, strerror(-ret));
		return EXIT_FAILURE;
	}
	if (opt.json) {
		jw_open(NULL, '{');
		jw_u64("serial", (__u64)serial);
		jw_string("desc", desc);
		jw_close('}');
	} else {
		printf("%ld\n", serial);
	}
	return EXIT_SUCCESS;
}

int cmd_key(int argc, char **argv)
{
	if (argc < 1) {
		key_usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[0], "help") || !strcmp(argv[0], "-h") ||
	    !strcmp(argv[0], "--help")) {
		key_usage(stdout);
		return EXIT_SUCCESS;
	}
	if (*argv[0] && !strncmp("add", argv[0], strlen(argv[0])))
		return key_add(argc, argv);
	error("unknown verb \"%s\" for object \"key\"; try \"%s key help\"",
	      argv[0], progname);
	return EXIT_USAGE;
}
