#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# selftests/kmsgr/rdma_pair.sh - kmsgr over RDMA between two hosts: two
# guests, each with its own soft-RoCE device on a virtio NIC, joined by a
# link (tools/vm/run --pair --rxe runs this script in both):
#
#   tools/vm/run --pair --rxe --timeout 600 -- selftests/kmsgr/rdma_pair.sh
#
# vm1 (10.99.0.2) serves a lossless echo listener over rdma and a sentinel
# listener that ends its part when vm0 is done.  vm0 (10.99.0.1) prints
# TAP: the session comes up across the link; 2000 4 KiB messages and 40
# of 1 MiB (lossless: pulled with RDMA READ across the link, both ways)
# come back with their content verified; a ping-pong bench runs; after
# the sessions close no buffer stays mapped and kmsgr_rdma unloads.
# vm1 reports its listener's summary, which must count every message.

set -u

TOP=$(cd "$(dirname "$0")/../.." && pwd)
KO=$TOP/kmod/kmsgr.ko
RDMA_KO=$TOP/kmod/kmsgr_rdma.ko
KMSGRCTL=$TOP/tools/kmsgrctl/kmsgrctl
PARAMS=/sys/module/kmsgr_rdma/parameters
PORT=3340		# the echo listener on vm1
SENTINEL=3341		# vm0 sends one message there when it is done
SMALL=2000
BIG=40
tmp=$(mktemp -d)
n=0
failed=0

tap() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}

# check DESCRIPTION COMMAND...: a TAP line, the command's output as comments
check() {
	desc=$1
	shift
	"$@" >"$tmp/out" 2>&1
	rc=$?
	sed 's/^/# /' "$tmp/out"
	tap "$rc" "$desc"
}

load() {
	for dep in $(modinfo -F depends "$KO" | tr ',' ' ') \
		$(modinfo -F softdep "$KO" | sed 's/post:.*//; s/pre://g') \
		rdma_cm; do
		modprobe "$dep" || return 1
	done
	insmod "$KO" && insmod "$RDMA_KO"
}

unload() {
	pinned=$(cat "$PARAMS/pinned_bytes") || return 1
	[ "$pinned" = 0 ] || { echo "pinned_bytes $pinned"; return 1; }
	rmmod kmsgr_rdma && rmmod kmsgr
}

# vm1: serve until vm0's sentinel message arrives (or 400 s pass).
serve() {
	load || { echo "vm1: cannot load kmsgr"; return 1; }
	"$KMSGRCTL" session listen --transport rdma --lossless --echo \
		--time 400 "$KMSGR_VM_IP:$PORT" >"$tmp/echo" 2>&1 &
	lpid=$!
	"$KMSGRCTL" session listen --transport rdma --count 1 --time 400 \
		"$KMSGR_VM_IP:$SENTINEL" >"$tmp/sentinel" 2>&1
	src=$?
	kill -TERM "$lpid"
	wait "$lpid"
	lrc=$?
	echo "vm1: echo listener exit $lrc, sentinel exit $src"
	tail -n 3 "$tmp/echo"
	want=$((SMALL + BIG + 1))
	grep -Eq "^received ([0-9]+) messages" "$tmp/echo" || return 1
	got=$(sed -n 's/^received \([0-9]*\) messages.*/\1/p' "$tmp/echo")
	echo "vm1: $got messages echoed (at least $want expected)"
	[ "$lrc" -eq 0 ] && [ "$src" -eq 0 ] && [ "$got" -ge "$want" ] &&
		unload
}

# vm0: wait for vm1's listener (it boots at its own pace).
reach() {
	i=0
	while ! "$KMSGRCTL" session connect --transport rdma --lossless \
		--send 1 --verify-echo --timeout 5 "$KMSGR_PEER_IP:$PORT"; do
		i=$((i + 1))
		[ "$i" -lt 30 ] || return 1
		sleep 2
	done
}

big() {
	p0=$(cat "$PARAMS/pulled_bytes") || return 1
	"$KMSGRCTL" session connect --transport rdma --lossless \
		--send "$BIG" --size 1048576 --verify-echo --timeout 60 \
		"$KMSGR_PEER_IP:$PORT" || return 1
	pulled=$(($(cat "$PARAMS/pulled_bytes") - p0))
	echo "vm0 pulled $pulled bytes of echoes with RDMA READ"
	[ "$pulled" -ge $((BIG * 1048576)) ]
}

if [ "${KMSGR_VM_ID:-0}" = 1 ]; then
	serve
	exit $?
fi

[ -n "${KMSGR_PEER_IP:-}" ] || { echo "not ok 1 - run me with tools/vm/run --pair --rxe"; echo "1..1"; exit 1; }
check "load kmsgr and kmsgr_rdma on vm0" load
check "an rdma session from $KMSGR_VM_IP reaches $KMSGR_PEER_IP:$PORT on the other guest" reach
check "$SMALL messages of 4 KiB across the link come back verified" \
	"$KMSGRCTL" session connect --transport rdma --lossless \
	--send "$SMALL" --size 4096 --verify-echo --timeout 60 \
	"$KMSGR_PEER_IP:$PORT"
check "$BIG messages of 1 MiB across the link, pulled with RDMA READ both ways, come back verified" big
check "kmsgrctl bench ping-pong across the link" \
	"$KMSGRCTL" bench --transport rdma --lossless --pattern pingpong \
	--count 200 --warmup 10 "$KMSGR_PEER_IP:$PORT"
check "the sentinel tells vm1 we are done" \
	"$KMSGRCTL" session connect --transport rdma --send 1 --timeout 30 \
	"$KMSGR_PEER_IP:$SENTINEL"
check "no buffer left mapped; kmsgr_rdma and kmsgr unload" unload
echo "1..$n"
rm -rf "$tmp"
[ "$failed" -eq 0 ]
