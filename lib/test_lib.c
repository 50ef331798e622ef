// SPDX-License-Identifier: GPL-2.0
/*
 * test_lib - host-only tests of libkmsgr's pure helpers: address parsing
 * and formatting, Ceph key and keyring decoding, reason and event names.
 * No device needed.  Output is TAP; exit status 0 when every test passed.
 *
 *   make -C lib check
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libkmsgr.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int tests, failures;

static void ok(int cond, const char *fmt, const char *arg)
{
	tests++;
	if (!cond)
		failures++;
	printf("%s %d - ", cond ? "ok" : "not ok", tests);
	printf(fmt, arg);
	putchar('\n');
}

/* Parse @in, expect @ret, and (on success) that it formats as @out. */
static void addr_case(const char *in, int ret, const char *out)
{
	struct kmsgr_addr a;
	char buf[80];
	int r;

	r = kmsgr_addr_parse(in, &a);
	if (ret || r) {
		ok(r == ret, "addr_parse \"%s\" fails with EINVAL", in);
		return;
	}
	kmsgr_addr_format(&a, buf, sizeof(buf));
	ok(!strcmp(buf, out), "addr round trip \"%s\"", in);
	if (strcmp(buf, out))
		printf("# got \"%s\" want \"%s\"\n", buf, out);
}

static void test_addr(void)
{
	struct kmsgr_addr a;

	addr_case("127.0.0.1:3300", 0, "127.0.0.1:3300");
	addr_case("v2:10.99.0.1:6800/1234", 0, "10.99.0.1:6800/1234");
	addr_case("0.0.0.0:0", 0, "0.0.0.0:0");
	addr_case("[::1]:3300", 0, "[::1]:3300");
	addr_case("[fe80::1%7]:1", 0, "[fe80::1%7]:1");
	addr_case("[2001:db8::2]:65535", 0, "[2001:db8::2]:65535");
	addr_case("127.0.0.1:65535", 0, "127.0.0.1:65535");
	addr_case("[::1]:0", 0, "[::1]:0");
	addr_case("127.0.0.1:0080", 0, "127.0.0.1:80");
	addr_case("127.0.0.1:1/4294967295", 0, "127.0.0.1:1/4294967295");
	addr_case("127.0.0.1", -EINVAL, NULL);
	/* ports: digits only, at most 65535, no wrap-around to a valid one */
	addr_case("127.0.0.1:", -EINVAL, NULL);
	addr_case("127.0.0.1:65536", -EINVAL, NULL);
	addr_case("[::1]:65536", -EINVAL, NULL);
	addr_case("127.0.0.1:4294967376", -EINVAL, NULL);	/* 2^32 + 80 */
	addr_case("127.0.0.1:18446744073709551617", -EINVAL, NULL);
	addr_case("127.0.0.1:18446744073709551696", -EINVAL, NULL);
	addr_case("127.0.0.1:99999999999999999999", -EINVAL, NULL);
	addr_case("[::1]:18446744073709551617", -EINVAL, NULL);
	addr_case("127.0.0.1:-1", -EINVAL, NULL);
	addr_case("127.0.0.1:+80", -EINVAL, NULL);
	addr_case("127.0.0.1: 80", -EINVAL, NULL);
	addr_case("127.0.0.1:80 ", -EINVAL, NULL);
	addr_case("127.0.0.1:0x50", -EINVAL, NULL);
	/* nonces: at most 2^32 - 1, no wrap-around either */
	addr_case("127.0.0.1:1/4294967296", -EINVAL, NULL);
	addr_case("127.0.0.1:1/18446744073709551617", -EINVAL, NULL);
	addr_case("127.0.0.1:1/-1", -EINVAL, NULL);
	addr_case("127.0.0.1:1/", -EINVAL, NULL);
	addr_case("127.0.0.1:33a", -EINVAL, NULL);
	addr_case("1.2.3:4", -EINVAL, NULL);
	addr_case("::1:3300", -EINVAL, NULL);
	addr_case("[::1]3300", -EINVAL, NULL);
	addr_case("[::1:3300", -EINVAL, NULL);
	addr_case("[]:1", -EINVAL, NULL);
	addr_case(":1", -EINVAL, NULL);
	addr_case("[fe80::1%nosuchif0]:1", -EINVAL, NULL);
	addr_case("1.2.3.4:1/x", -EINVAL, NULL);
	addr_case("", -EINVAL, NULL);

	kmsgr_addr_parse("10.0.0.2:3300", &a);
	ok(a.family == AF_INET && ntohs(a.port) == 3300 && a.addr[0] == 10 &&
	   a.addr[3] == 2 && !a.addr[4] && !a.reserved && !a.nonce,
	   "addr fields of %s", "10.0.0.2:3300");
}

#define KEY_OK		"AQAAAABlAAAAABAAAAECAwQFBgcICQoLDA0ODw=="

static void test_key(void)
{
	static const struct {
		const char *b64, *what;
	} bad[] = {
		{ "AgAAAABlAAAAABAAAAECAwQFBgcICQoLDA0ODw==", "type 2" },
		{ "AQAAAABlAAAAAA8AAAECAwQFBgcICQoLDA0ODw==", "length 15" },
		{ "AQAAAABlAAAAABAAAAECAwQFBgcICQoLDA0ODw=", "bad padding" },
		{ "AQAAAABlAAAAABAAAAECAwQFBgcICQoLDA0ODx==", "non-canonical" },
		{ "AQAAAABlAAAAABAAAAECAwQFBgcICQoLDA0O", "27 bytes" },
		{ "AQAAAABlAAAAABAAAAECAwQFBgcICQoLDA0ODwAA", "30 bytes" },
		{ "AQAAAABlAAAAABAAAAECAwQFBgcI*QoLDA0ODw==", "bad char" },
		{ "AQAAAABlAAAAABAAAAECAwQF=gcICQoLDA0ODw==", "inner =" },
		{ "", "empty" },
	};
	__u8 key[16];
	size_t i;
	int r, good;

	r = kmsgr_key_decode(KEY_OK, key);
	good = !r;
	for (i = 0; i < 16; i++)
		good &= key[i] == i;
	ok(good, "key_decode %s", "valid CryptoKey");
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		ok(kmsgr_key_decode(bad[i].b64, key) == -EINVAL,
		   "key_decode rejects %s", bad[i].what);
}

static char tmp_path[64];

static const char *write_file(const char *text)
{
	char *path = tmp_path;
	int fd;

	snprintf(tmp_path, sizeof(tmp_path), "/tmp/kmsgr-keyring-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		perror("test keyring");
		exit(1);
	}
	close(fd);
	return path;
}

static void keyring_case(const char *text, const char *name, int ret,
			 const char *what)
{
	const char *path = write_file(text);
	__u8 key[16];
	int r;

	r = kmsgr_keyring_load(path, name, key);
	ok(r == ret && (ret || key[15] == 15), "keyring: %s", what);
	if (r != ret)
		printf("# got %d want %d\n", r, ret);
	unlink(path);
}

static void test_keyring(void)
{
	__u8 key[16];

	keyring_case("[mon.]\n\tkey = AQBogwxrJ94VLhAAIp60ZXwfaU24IqyrQEzSkw==\n"
		     "\tcaps mon = \"allow *\"\n"
		     "[client.admin]\n\tkey = " KEY_OK "\n"
		     "\tcaps mds = \"allow *\"\n",
		     "client.admin", 0, "client.admin after mon.");
	keyring_case("# comment\n; other\n[ client.admin ]\nkey=" KEY_OK "\t\n",
		     "client.admin", 0, "spaces and comments");
	keyring_case("[client.admin]\nkey = " KEY_OK "\n", "client.foo",
		     -ENOENT, "missing entity");
	keyring_case("[client.admin]\ncaps mon = \"allow *\"\n",
		     "client.admin", -ENOKEY, "section without key");
	keyring_case("[client.admin]\nkey = AQAAAABl\n", "client.admin",
		     -EINVAL, "truncated key");
	keyring_case("[client.admin\nkey = " KEY_OK "\n", "client.admin",
		     -EINVAL, "unterminated section");
	keyring_case("[client.admin]\njunk\n", "client.admin", -EINVAL,
		     "line without =");
	keyring_case("", "client.admin", -ENOENT, "empty file");
	ok(kmsgr_keyring_load("/nonexistent/keyring", "client.admin", key) ==
	   -ENOENT, "keyring: %s", "missing file");
}

static void test_names(void)
{
	ok(!strcmp(kmsgr_reason_str(KMSGR_REASON_EOF),
		   "connection closed by the peer"), "reason %s", "EOF");
	ok(!strcmp(kmsgr_reason_str(9999), "unknown reason"), "reason %s",
	   "out of range");
	ok(!strcmp(kmsgr_event_str(KMSGR_EV_UP), "up"), "event %s", "up");
	ok(!strcmp(kmsgr_event_str(0), "unknown"), "event %s", "0");
	ok(!strcmp(kmsgr_feature_name(2), "tcp"), "feature %s", "tcp");
	ok(!!strstr(kmsgr_strerror(-ETIME), "completion"),
	   "strerror %s", "ETIME");
}

int main(void)
{
	test_addr();
	test_key();
	test_keyring();
	test_names();
	printf("1..%d\n", tests);
	return failures ? 1 : 0;
}
