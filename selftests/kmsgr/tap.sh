# shellcheck shell=sh
# SPDX-License-Identifier: GPL-2.0
#
# selftests/kmsgr/tap.sh - TAP helpers sourced by the shell tests
# (netlink_test.sh, logon_key_test.sh, blk_test.sh, rados_test.sh,
# rados_cephx_test.sh; tools/test-install, test-deb and test-vm-run):
#
#   tap STATUS DESCRIPTION   prints "ok N DESCRIPTION" when STATUS is 0,
#                            else "not ok N ..." and counts a failure
#   comment FILE             its last 15 lines as TAP comments
#   bound_addr FILE          the address a kmsgrctl server printed in
#                            FILE ("listening on ADDR ..." of session
#                            listen, "serving ... on ADDR transport ..."
#                            of blk serve): the port it was given when
#                            it was asked for port 0
#
# $n counts the tests, $failed the failures; the caller prints "1..$n".

n=0
failed=0

tap() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n $2"
	else
		failed=$((failed + 1))
		echo "not ok $n $2"
	fi
}

comment() {
	tail -n 15 "$1" | sed 's/^/# /'
}

bound_addr() {
	sed -n -e 's/^listening on \([^ ]*\) transport .*/\1/p' \
		-e 's/^serving .* on \([^ ]*\) transport .*/\1/p' "$1" | head -n 1
}
