#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# logon_key_test.sh - cephx secrets that never pass through the session's
# process: "kmsgrctl key add" puts a keyring's secret into a kernel "logon"
# key; a listener (--logon-key) and a client (--key-desc) name it and the
# kmsgr module reads it (run_guest.sh runs this with kmsgr.ko loaded):
#
#   - crc and secure sessions authenticate with the logon keys;
#   - user space cannot read the key back (KEYCTL_READ of a logon key);
#   - a client naming another entity's key is refused by the listener, one
#     naming no key fails with ENOKEY, a revoked key with EKEYREVOKED, one
#     naming another service's key ("cifs:...") is refused, and a listener
#     whose key is missing does not start; all with a message.
#
# Prints TAP; exit status 0 when all passed.

set -u

TOP=$(cd "$(dirname "$0")/../.." && pwd)
K=$TOP/tools/kmsgrctl/kmsgrctl
# the listener's port: KMSGR_KEY_PORT, else any free one (a fixed port in
# the ephemeral range can be taken by an earlier test's connection)
ADDR=127.0.0.1:${KMSGR_KEY_PORT:-0}

# shellcheck source=selftests/kmsgr/tap.sh
. "$TOP/selftests/kmsgr/tap.sh"
tmp=$(mktemp -d) || exit 1
lpid=
serials=
cleanup() {
	[ -n "$lpid" ] && kill "$lpid" 2>/dev/null
	for s in $serials; do
		keyctl_op 3 "$s" >/dev/null 2>&1	# KEYCTL_REVOKE
	done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# keyctl_op OP SERIAL: keyctl(2) without keyutils; prints the result or
# the errno name, exit status 0 when the call succeeded.
keyctl_op() {
	python3 -S - "$1" "$2" <<'EOF'
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_keyctl = 250			# x86-64
buf = ctypes.create_string_buffer(64)
op, serial = int(sys.argv[1]), int(sys.argv[2])
if op == 11:				# KEYCTL_READ
    r = libc.syscall(SYS_keyctl, op, serial, buf, 64)
else:
    r = libc.syscall(SYS_keyctl, op, serial)
if r < 0:
    print(errno.errorcode[ctypes.get_errno()])
    sys.exit(1)
print(r)
EOF
}

# run NAME CMD...: the command's output as comments; its status in $rc
run() {
	name=$1
	shift
	"$@" >"$tmp/$name" 2>&1
	rc=$?
	sed 's/^/# /' "$tmp/$name"
}

for k in admin other; do
	ceph-authtool --create-keyring "$tmp/$k.keyring" --gen-key \
		-n client.admin >/dev/null 2>&1 ||
		{ echo "Bail out! ceph-authtool failed (make deps)"; exit 1; }
done

run add "$K" key add --keyring "$tmp/admin.keyring"
s1=$(cat "$tmp/add")
[ "$rc" -eq 0 ] && [ "$s1" -gt 0 ] 2>/dev/null &&
	grep -q "logon.*kmsgr:client.admin" /proc/keys
tap $? "key add: the secret of client.admin is the logon key kmsgr:client.admin"
serials="$s1"
run add2 "$K" key add --keyring "$tmp/other.keyring" --desc kmsgr:other
s2=$(cat "$tmp/add2")
serials="$serials $s2"

out=$(keyctl_op 11 "$s1")
echo "# KEYCTL_READ: $out"
# EOPNOTSUPP, which Python may name ENOTSUP (the same number)
[ "$out" = EOPNOTSUPP ] || [ "$out" = ENOTSUP ]
tap $? "user space cannot read the logon key back (KEYCTL_READ: EOPNOTSUPP)"

"$K" session listen --echo --logon-key "$ADDR" >"$tmp/listen" 2>&1 &
lpid=$!
i=0
while [ $i -lt 50 ] && ! grep -q listening "$tmp/listen"; do
	sleep 0.2
	i=$((i + 1))
done
grep -q listening "$tmp/listen"
rc=$?
[ $rc -ne 0 ] && comment "$tmp/listen"
tap $rc "a cephx listener takes its key from kmsgr:client.admin (--logon-key)"
# where it listens (port 0: the one it was given)
ADDR=$(bound_addr "$tmp/listen")

run crc "$K" session connect --key-desc kmsgr:client.admin --send 3 \
	--verify-echo "$ADDR"
[ "$rc" -eq 0 ] && grep -q "auth cephx, mode crc" "$tmp/crc" &&
	grep -q "3 echoes, 0 bad" "$tmp/crc"
tap $? "a client authenticates with --key-desc kmsgr:client.admin (cephx, crc)"

run sec "$K" session connect --key-desc kmsgr:client.admin --secure \
	--send 3 --verify-echo "$ADDR"
[ "$rc" -eq 0 ] && grep -q "mode secure" "$tmp/sec"
tap $? "the same in secure mode"

run wrong "$K" session connect --key-desc kmsgr:other --timeout 20 "$ADDR"
[ "$rc" -eq 1 ] && grep -q "authentication refused" "$tmp/wrong"
tap $? "another secret under client.admin's name is refused by the listener"

run none "$K" session connect --key-desc kmsgr:nosuch "$ADDR"
[ "$rc" -eq 1 ] && grep -q 'logon key "kmsgr:nosuch"' "$tmp/none" &&
	grep -qi "key not available" "$tmp/none"
tap $? "a key that is not there: ENOKEY, named in the message"

run alien "$K" session connect --key-desc cifs:client.admin "$ADDR"
[ "$rc" -ne 0 ] && grep -q 'only its own logon keys' "$tmp/alien"
tap $? "--key-desc naming another service's key (cifs:...) is refused, with a message"

run alienadd "$K" key add --keyring "$tmp/admin.keyring" --desc cifs:x
[ "$rc" -eq 2 ] && grep -q 'kmsgr:NAME' "$tmp/alienadd" &&
	! grep -q 'cifs:x' /proc/keys
tap $? "key add --desc outside kmsgr: is a usage error; no key is added"

# 2^32 - 4 would reach the kernel as -4, KEY_SPEC_USER_KEYRING (@u)
before=$(grep -c 'kmsgr:big' /proc/keys)
run bigto "$K" key add --keyring "$tmp/admin.keyring" --desc kmsgr:big \
	--to 4294967292
[ "$rc" -eq 2 ] && grep -q 'bad --to' "$tmp/bigto" &&
	[ "$(grep -c 'kmsgr:big' /proc/keys)" -eq "$before" ]
tap $? "key add --to beyond a 32-bit serial is a usage error; no key is added"

run both "$K" session connect --key-desc kmsgr:client.admin \
	--keyring "$tmp/admin.keyring" "$ADDR"
[ "$rc" -eq 2 ]
tap $? "--key-desc with --keyring: a usage error"

keyctl_op 3 "$s2" >/dev/null	# KEYCTL_REVOKE
run revoked "$K" session connect --key-desc kmsgr:other "$ADDR"
[ "$rc" -eq 1 ] && grep -qi "revoked" "$tmp/revoked"
tap $? "a revoked key: EKEYREVOKED"

run nolisten "$K" session listen --logon-key --name client.nobody \
	127.0.0.1:0
[ "$rc" -eq 1 ] && grep -q 'logon key "kmsgr:client.nobody"' "$tmp/nolisten"
tap $? "a listener whose logon key is missing does not start"

kill "$lpid" 2>/dev/null
wait "$lpid" 2>/dev/null
lpid=

echo "1..$n"
[ "$failed" -eq 0 ]
