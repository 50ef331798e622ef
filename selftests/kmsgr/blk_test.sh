#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# blk_test.sh - the example remote block service (kmsgrctl blk, docs/
# block-service.md) on the guest's NVMe namespace, in the guest, with
# kmsgr.ko and kmsgr_rdma.ko loaded (run_guest.sh runs it):
#
#   - over tcp (127.0.0.1) and over rdma (rxe, KMSGR_VM_IP; that target
#     with --poll: its I/O reaped by polling the namespace's poll queue,
#     each reply sent by the poller): "blk serve"
#     on KMSGR_NVME; "blk check" reads the whole namespace through it,
#     then KMSGR_BLK_OPS (10000; over rdma KMSGR_BLK_RDMA_OPS, 3000)
#     random WRITEs (some FUA), READs, FLUSHes
#     and bad requests (misaligned, beyond the end, above max_io, an
#     unknown op: each must get its errno), 16 in flight, every READ
#     checked against its image; after the server stopped, the namespace
#     read with O_DIRECT equals that image;
#   - the server's summary counts what the client sent, with no request
#     refused by the module;
#   - a read-only target (--rdonly): writes answered EROFS, the client
#     says so and fails, the target's receive pool drains (a write refused
#     before it starts leaves its slices to the target, which gives them
#     back); the namespace is unchanged;
#   - a client that stops reading its replies holds no more than its
#     session's share of the target's contexts (--session-depth): another
#     client's requests run meanwhile;
#   - two such clients, whose shares add up to more than the target's
#     depth, are closed once a request of theirs is in service for
#     --reply-timeout: another client is served after;
#   - --count N: the target starts exactly N requests and exits while a
#     client keeps requests in flight;
#   - the server killed under a running client: the client fails with a
#     clear message within its timeout, no hang, no kernel warning;
#   - blk bench prints IOPS, latency and CPU per operation (text, JSON);
#   - fio with the kmsgr-blk external engine (tools/fio), over tcp and
#     rdma: random writes, each block read back and verified; a lossless
#     session whose target stops answering, or that nothing accepts
#     (connection refused), ends the job, the latter at once.
#
# Prints TAP; exit status 0 when all passed.

set -u

TOP=$(cd "$(dirname "$0")/../.." && pwd)
K=$TOP/tools/kmsgrctl/kmsgrctl
NVME=${KMSGR_NVME:-}
OPS=${KMSGR_BLK_OPS:-10000}
# fewer over polled rdma: under TCG the poller has a vCPU to itself, so
# they run at a quarter of tcp's rate (64 s for 10^4); rdma_pair.sh runs
# 10^4 across its link
RDMA_OPS=${KMSGR_BLK_RDMA_OPS:-3000}
# Listener ports: KMSGR_BLK_PORT + N when set, else any free one (port 0:
# serve() reads the one the target got; a fixed port in the ephemeral
# range can be held by an earlier test's connection)
port() {
	if [ -n "${KMSGR_BLK_PORT:-}" ]; then
		echo $((KMSGR_BLK_PORT + $1))
	else
		echo 0
	fi
}
ENGINE=${KMSGR_FIO_ENGINE:-$TOP/.build/fio/kmsgr-blk.so}

# shellcheck source=selftests/kmsgr/tap.sh
. "$TOP/selftests/kmsgr/tap.sh"
tmp=$(mktemp -d) || exit 1
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

if [ -z "$NVME" ] || [ ! -b "$NVME" ]; then
	tap 1 "KMSGR_NVME names a block device (tools/vm/run --nvme SIZE): '$NVME'"
	echo "1..$n"
	exit 1
fi

# serve XPRT ADDR [OPTIONS]: start a target in the background; wait for
# its "serving" line
serve() {
	xprt=$1 addr=$2
	shift 2
	"$K" blk serve --transport "$xprt" "$@" "$NVME" "$addr" \
		>"$tmp/srv" 2>&1 &
	srv=$!
	i=0
	while ! grep -q '^serving' "$tmp/srv"; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 "$srv" 2>/dev/null; then
			comment "$tmp/srv"
			return 1
		fi
		sleep 0.1
	done
	# where it listens (port 0: the one it was given)
	addr=$(bound_addr "$tmp/srv")
}

# stop: SIGTERM to the target; its exit status
stop() {
	kill -TERM "$srv" 2>/dev/null
	wait "$srv"
	rc=$?
	srv=
	return $rc
}

# target_busy: wait until the target's device has done an op for a client
# (its session and first requests can take seconds to start under
# emulation; at most 30 s)
target_busy() {
	i=0
	while ! "$K" bdev show 2>/dev/null | grep -A1 " pid $srv " |
		grep -q ' ops [1-9]' && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# kill_target SIGNAL PID: SIGNAL (KILL or STOP) to the target once it is
# busy (target_busy) and 1 s more, then up to 30 s for its client PID to
# end; its exit status in $rc (99: it did not end, and was killed)
kill_target() {
	target_busy
	sleep 1
	kill -"$1" "$srv"
	if [ "$1" = KILL ]; then
		wait "$srv" 2>/dev/null
		srv=
	fi
	shift
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		kill -KILL "$1"
		wait "$1"
		rc=99
	else
		wait "$1"
		rc=$?
	fi
}

# pool_used PID MIN MAX: whether the receive pool of PID's instance has
# MIN to MAX bytes in use
pool_used() {
	"$K" -j instance show >"$tmp/inst" 2>&1 &&
		python3 -S - "$tmp/inst" "$@" <<'EOF'
import json, sys
used = [i["pool_used"] for i in json.load(open(sys.argv[1]))
        if i["pid"] == int(sys.argv[2])]
sys.exit(not (used and int(sys.argv[3]) <= used[0] <= int(sys.argv[4])))
EOF
}

# pool_drains PID: the receive pool of PID's instance is empty within 5 s
pool_drains() {
	for _ in $(seq 50); do
		pool_used "$1" 0 0 && return 0
		sleep 0.1
	done
	comment "$tmp/inst"
	return 1
}

# the namespace, read with O_DIRECT, equals FILE
device_is() {
	dd if="$NVME" iflag=direct bs=1M status=none | cmp - "$1"
}

# run_xprt XPRT IP PORT-OFFSET OPS [SERVE-OPTIONS]
run_xprt() {
	xprt=$1 ip=$2 ops=$4
	addr=$ip:$(port "$3")
	shift 4
	if ! serve "$xprt" "$addr" "$@"; then
		tap 1 "$xprt: blk serve $* $NVME starts"
		return
	fi
	if [ "${1:-}" = --poll ]; then
		grep -q '^serving .*polled' "$tmp/srv"
		tap $? "$xprt: blk serve --poll: the namespace is attached polled"
		what="$xprt (polled)"
	else
		what=$xprt
	fi
	t0=$(date +%s)
	"$K" blk check --transport "$xprt" --ops "$ops" --image "$tmp/img" \
		"$addr" >"$tmp/check" 2>&1
	rc=$?
	sed 's/^/# /' "$tmp/check"
	tap $rc "$what: blk check: the namespace read through the target, then $ops random writes, reads, flushes and bad requests, 16 in flight, every read and errno right ($(($(date +%s) - t0)) s)"
	stop
	src=$?
	comment "$tmp/srv"
	tap $src "$what: blk serve ends cleanly on SIGTERM, no request refused by the module"
	# what the client sent: image reads + ops + INFO
	sent=$(sed -n 's/^\([0-9]*\) requests in .*/\1/p' "$tmp/check")
	image=$(sed -n 's/.* the image read first in \([0-9]*\) requests$/\1/p' \
		"$tmp/check")
	got=$(sed -n 's/^served \([0-9]*\) requests.*/\1/p' "$tmp/srv")
	[ -n "$sent" ] && [ -n "$image" ] && [ -n "$got" ] &&
		[ "$image" -gt 0 ] && [ "$got" -ge $((sent + image + 1)) ]
	tap $? "$what: the server served every request the client sent ($got >= $sent ops + ${image:-?} image reads + INFO)"
	[ $rc -eq 0 ] && device_is "$tmp/img"
	tap $? "$what: the namespace read with O_DIRECT equals the client's image"
}

# fio_verify XPRT IP PORT: the same fio job a block device would get,
# through the kmsgr-blk engine: random writes of 4k-64k, every block read
# back and checked (crc32c)
fio_verify() {
	xprt=$1 addr=$2:$3
	if [ ! -f "$ENGINE" ]; then
		tap 1 "$xprt: fio with the kmsgr-blk engine: $ENGINE is not built (make -C tools/fio)"
		return
	fi
	if ! serve "$xprt" "$addr"; then
		tap 1 "$xprt: blk serve $NVME starts (fio)"
		return
	fi
	fio --name=kblk --ioengine=external:"$ENGINE" --addr="$addr" \
		--transport="$xprt" --rw=randwrite --bsrange=4k-64k --size=16m \
		--iodepth=8 --verify=crc32c --do_verify=1 --verify_fatal=1 \
		>"$tmp/fio" 2>&1
	rc=$?
	grep -E 'IOPS=|err=' "$tmp/fio" | sed 's/^/# /'
	[ $rc -eq 0 ] && grep -q 'err= 0' "$tmp/fio" && ! grep -q 'verify:' "$tmp/fio"
	st=$?
	[ $st -eq 0 ] || comment "$tmp/fio"
	tap $st "$xprt: fio (kmsgr-blk engine): 16 MiB of random 4k-64k writes, each block read back and verified (crc32c)"
	stop
}

# fio_stopped_target: fio on a lossless session whose target stops
# answering (SIGSTOP: its session stays up, no reply comes) ends at its
# runtime, failing what was out, instead of waiting in getevents until
# the target runs again
fio_stopped_target() {
	addr=127.0.0.1:$(port 7)
	if [ ! -f "$ENGINE" ] || ! serve tcp "$addr"; then
		tap 1 "blk serve starts, and the kmsgr-blk engine is built (fio, target stopped)"
		return
	fi
	fio --name=kblk --ioengine=external:"$ENGINE" --addr="$addr" \
		--transport=tcp --lossless=1 --rw=randwrite --bs=4k \
		--iodepth=4 --time_based --runtime=4 >"$tmp/fiodead" 2>&1 &
	kill_target STOP $!
	kill -CONT "$srv"
	stop
	comment "$tmp/fiodead"
	# it ran I/O before the stop, and ended by itself, not by a signal
	{ [ $rc -eq 0 ] || [ $rc -eq 1 ]; } && grep -q 'IOPS=' "$tmp/fiodead"
	tap $? "fio (kmsgr-blk engine, lossless) whose target stops answering ends within 30 s (its runtime is 4 s), not when the target runs again (exit $rc)"
}

# fio_refused: fio on a lossless session to a port where nothing listens
# fails at once, not after its connect_timeout (60 s here)
fio_refused() {
	t0=$(date +%s)
	timeout 120 fio --name=kblk --ioengine=external:"$ENGINE" \
		--addr=127.0.0.1:1 --transport=tcp --lossless=1 \
		--connect_timeout=60 --rw=randwrite --bs=4k --size=1m \
		>"$tmp/fiorefused" 2>&1
	rc=$?
	dt=$(($(date +%s) - t0))
	comment "$tmp/fiorefused"
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$dt" -lt 30 ] &&
		grep -q "Connection refused" "$tmp/fiorefused"
	tap $? "fio (kmsgr-blk engine, lossless) to a port where nothing listens fails at once, connection refused, not after connect_timeout=60 (exit $rc, $dt s)"
}

run_xprt tcp 127.0.0.1 0 "$OPS"
fio_verify tcp 127.0.0.1 "$(port 5)"
fio_stopped_target
fio_refused
if [ -n "${KMSGR_VM_IP:-}" ]; then
	run_xprt rdma "$KMSGR_VM_IP" 1 "$RDMA_OPS" --poll
	fio_verify rdma "$KMSGR_VM_IP" "$(port 6)"
else
	tap 1 "rdma: KMSGR_VM_IP is set (tools/vm/run --rxe)"
fi

# a read-only target: writes answered EROFS, the namespace unchanged
addr=127.0.0.1:$(port 2)
dd if="$NVME" iflag=direct bs=1M status=none >"$tmp/before"
if serve tcp "$addr" --rdonly; then
	"$K" blk bench --rw randwrite --depth 8 --time 1 "$addr" >"$tmp/ro" 2>&1
	rc=$?
	comment "$tmp/ro"
	[ $rc -eq 1 ] && grep -q 'Read-only file system' "$tmp/ro"
	tap $? "a --rdonly target answers writes with EROFS; the client says so and exits 1"
	pool_drains "$srv"
	tap $? "the read-only target gives the refused writes' receive-pool slices back (its pool drains to 0)"
	"$K" blk bench --rw randread --time 1 "$addr" >"$tmp/ro" 2>&1
	tap $? "a --rdonly target serves reads"
	# fio's last reap of a job that ends by size asks once for all that
	# is out: the engine must wait for it, not return short after 1 s
	# without a reply and lose the writes' errors (the target stopped for
	# 3 s between the engine's set-up and the first write)
	fio --name=kblk --ioengine=external:"$ENGINE" --addr="$addr" \
		--transport=tcp --rw=write --bs=4k --size=64k --iodepth=32 \
		--exec_prerun="sh -c 'kill -STOP $srv; (sleep 3; kill -CONT $srv) >/dev/null 2>&1 &'" \
		>"$tmp/fioro" 2>&1
	rc=$?
	kill -CONT "$srv"
	grep -E 'IOPS=|err=' "$tmp/fioro" | sed 's/^/# /'
	[ $rc -ne 0 ] && grep -q 'err=30' "$tmp/fioro"
	st=$?
	[ $st -eq 0 ] || comment "$tmp/fioro"
	tap $st "fio (kmsgr-blk engine) writing to a --rdonly target that answers after 3 s: its last reap waits, and the writes fail EROFS (exit $rc)"
	fio --name=kblk --ioengine=external:"$ENGINE" --addr="$addr" \
		--transport=tcp --rw=read --bs=4k --size=8k --offset=100 \
		>"$tmp/fiooff" 2>&1
	rc=$?
	comment "$tmp/fiooff"
	[ $rc -ne 0 ] && grep -q 'offset 100 .* not a multiple' "$tmp/fiooff"
	tap $? "fio (kmsgr-blk engine) with offset=100: refused at start, not a multiple of the block size (exit $rc)"
	stop
	device_is "$tmp/before"
	tap $? "the namespace is unchanged by the read-only target"
else
	tap 1 "blk serve --rdonly starts"
fi

# a device smaller than the largest request (128 KiB, max_io 1 MiB): blk
# check keeps every range on the device (it used to pick ranges past the
# end, and could divide by zero)
modprobe loop 2>/dev/null
truncate -s 128K "$tmp/small.img"
loop=$(losetup -f --show "$tmp/small.img" 2>/dev/null)
big=$NVME
NVME=$loop
if [ -n "$loop" ] && serve tcp 127.0.0.1:0; then
	NVME=$big
	"$K" blk check --ops 500 --timeout 30 "$addr" >"$tmp/small" 2>&1
	rc=$?
	comment "$tmp/small"
	[ $rc -eq 0 ] && grep -q ' 0 mismatches' "$tmp/small"
	tap $? "blk check of a 128 KiB device (below max_io): every request on the device, no mismatch"
	stop
else
	tap 1 "blk serve of a 128 KiB loop device starts ('$loop')"
fi
NVME=$big
[ -n "$loop" ] && losetup -d "$loop"

# the server killed under a running client: a clear failure, no hang
addr=127.0.0.1:$(port 3)
if serve tcp "$addr"; then
	"$K" blk check --ops 1000000 --timeout 5 "$addr" >"$tmp/kill" 2>&1 &
	kill_target KILL $!
	comment "$tmp/kill"
	[ $rc -eq 1 ] && grep -q '^kmsgr: ' "$tmp/kill"
	tap $? "the target killed under a running client: the client fails (exit $rc) with a message, within 30 s"
else
	tap 1 "blk serve starts (kill test)"
fi

# a depth-1 target whose SQ (4 entries) backs up: a peer's stream of
# messages that are not requests (one RELEASE each) beside a client's
# writes and flushes, each linked to the SEND of its reply; a linked pair
# split at the SQ's end reached the module as a LINK with nothing after it
# (the write refused with EINVAL, its reply cancelled)
addr=127.0.0.1:$(port 5)
if serve tcp "$addr" --depth 1; then
	"$K" blk check --ops 1500 --timeout 60 "$addr" >"$tmp/check" 2>&1 &
	chk=$!
	: >"$tmp/junk"
	jok=0
	while kill -0 "$chk" 2>/dev/null; do
		"$K" session connect --send 2000 --size 64 --timeout 60 \
			"$addr" >>"$tmp/junk" 2>&1 || break
		jok=$((jok + 1))
	done
	wait "$chk"
	crc=$?
	sed 's/^/# /' "$tmp/check"
	tail -n 2 "$tmp/junk" | sed 's/^/# /'
	stop
	src=$?
	comment "$tmp/srv"
	[ $crc -eq 0 ] && [ $src -eq 0 ] && [ $jok -ge 1 ]
	tap $? "blk serve --depth 1 with its SQ backed up by another peer's messages ($jok runs of 2000): every write and flush right, none refused by the module"
else
	tap 1 "blk serve --depth 1 starts"
fi

# a client killed with requests waiting at a depth-1 target: once its
# session is CLOSED they are given back, not run for nobody
addr=127.0.0.1:$(port 6)
if serve tcp "$addr" --depth 1; then
	"$K" blk bench --rw randread --bs 1M --depth 32 --time 20 "$addr" \
		>"$tmp/b" 2>&1 &
	bpid=$!
	# its first read done, and 1 s more for the other 31 to queue up
	target_busy
	sleep 1
	kill -KILL "$bpid" 2>/dev/null
	wait "$bpid" 2>/dev/null
	# the target sees the session CLOSED between two reads
	sleep 3
	stop
	src=$?
	comment "$tmp/srv"
	ab=$(sed -n 's/.* \([0-9]*\) waiting requests of closed sessions not run.*/\1/p' "$tmp/srv")
	[ $src -eq 0 ] && [ "${ab:-0}" -gt 0 ]
	tap $? "a client killed with 32 reads in flight at a depth-1 target: its waiting requests are not run (${ab:-?} given back)"
else
	tap 1 "blk serve --depth 1 starts (killed client)"
fi

# a client that stops reading (kmsgr_blk_stall: 40 reads of 1 MiB whose
# replies it never gives back; its 4 MiB pool fills, then the sockets)
# holds at most --session-depth (here the default, 6 of 8) contexts:
# another client's requests still run (no reply timeout: the cap alone)
addr=127.0.0.1:$(port 7)
STALL=${KMSGR_TEST_BIN:-$TOP/.build/selftests/kmsgr}/kmsgr_blk_stall
if serve tcp "$addr" --depth 8 --reply-timeout 0; then
	"$STALL" "$addr" 40 1048576 >"$tmp/stall" 2>&1 &
	spid=$!
	i=0
	while ! grep -q '^stalled' "$tmp/stall" && kill -0 "$spid" 2>/dev/null &&
		[ $i -lt 300 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	sleep 2
	"$K" blk check --depth 2 --ops 50 --timeout 30 "$addr" \
		>"$tmp/check" 2>&1
	crc=$?
	kill -TERM "$spid" 2>/dev/null
	wait "$spid"
	strc=$?
	stop
	src=$?
	sed 's/^/# /' "$tmp/stall" "$tmp/check"
	comment "$tmp/srv"
	cap=$(sed -n "s/.* \([0-9]*\) waited at their session's cap.*/\1/p" "$tmp/srv")
	grep -q '^stalled: 40' "$tmp/stall" && [ $crc -eq 0 ] &&
		[ $strc -eq 0 ] && [ $src -eq 0 ] && [ "${cap:-0}" -gt 0 ]
	tap $? "a client that stops reading its replies holds 6 of a depth-8 target's contexts: blk check gets the others (${cap:-?} requests waited at the cap)"
else
	tap 1 "blk serve --depth 8 starts (stalled client)"
fi

# two such clients at once: the cap lets each hold up to 6 contexts of 8,
# so between them they hold all 8, and without a deadline no other client
# would ever be served.  With --reply-timeout 3 the target closes each
# once a request of it has been in service for 3 s: their SENDs fail, the
# contexts come back, blk check is served.  Each of the two is closed for
# the timeout, whichever stalled last (each holds contexts that never
# free: exactly 2 closes, which the target reports on stderr as it makes
# them); a stalled client that saw its session end says so and exits 0 by
# itself, else SIGTERM ends it (0 as well)
addr=127.0.0.1:$(port 9)
if serve tcp "$addr" --depth 8 --reply-timeout 3; then
	"$STALL" "$addr" 40 1048576 >"$tmp/stall1" 2>&1 &
	s1=$!
	"$STALL" "$addr" 40 1048576 >"$tmp/stall2" 2>&1 &
	s2=$!
	i=0
	while ! { grep -q '^stalled' "$tmp/stall1" &&
		grep -q '^stalled' "$tmp/stall2"; } &&
		kill -0 "$s1" 2>/dev/null && kill -0 "$s2" 2>/dev/null &&
		[ $i -lt 300 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	"$K" blk check --depth 2 --ops 50 --timeout 30 "$addr" \
		>"$tmp/check" 2>&1
	crc=$?
	# up to 30 s more for the second close
	i=0
	while [ "$(grep -c 'request in service past the reply timeout (' "$tmp/srv")" -lt 2 ] &&
		[ $i -lt 150 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	kill -TERM "$s1" "$s2" 2>/dev/null
	wait "$s1"
	r1=$?
	wait "$s2"
	r2=$?
	stop
	src=$?
	sed 's/^/# /' "$tmp/stall1" "$tmp/stall2" "$tmp/check"
	comment "$tmp/srv"
	to=$(sed -n 's/.* \([0-9]*\) sessions closed for a request in service past the reply timeout.*/\1/p' "$tmp/srv")
	grep -q '^stalled: 40' "$tmp/stall1" &&
		grep -q '^stalled: 40' "$tmp/stall2" &&
		[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ $crc -eq 0 ] &&
		[ $src -eq 0 ] && [ "${to:-0}" -eq 2 ]
	tap $? "two clients that stop reading their replies hold all 8 contexts of a depth-8 target (6 + 6 > 8); with --reply-timeout 3 it closes both (${to:-?} closed for the reply timeout) and blk check is served"
else
	tap 1 "blk serve --depth 8 --reply-timeout 3 starts (two stalled clients)"
fi

# a client that sends 24 WRITEs of 1 MiB at once to a depth-1 target with
# a 16 MiB receive pool (kmsgr_blk_stall write), while the target is
# stopped (SIGSTOP: its kernel takes what fits in the pool), so that the
# target finds them all at once: its waiting requests would hold over half
# the pool, so the target closes it and gives their slices back; another
# client is served after
addr=127.0.0.1:$(port 8)
if serve tcp "$addr" --depth 1 --pool-size 16M; then
	kill -STOP "$srv"
	"$STALL" "$addr" 24 1048576 write >"$tmp/flood" 2>&1 &
	fpid=$!
	sleep 4
	kill -CONT "$srv"
	wait "$fpid"
	frc=$?
	"$K" blk check --depth 2 --ops 50 --timeout 30 "$addr" \
		>"$tmp/check" 2>&1
	crc=$?
	stop
	src=$?
	sed 's/^/# /' "$tmp/flood" "$tmp/check"
	comment "$tmp/srv"
	fl=$(sed -n 's/.* \([0-9]*\) sessions closed for holding too much of the receive pool.*/\1/p' "$tmp/srv")
	[ $frc -eq 0 ] && grep -q '^closed by the target' "$tmp/flood" &&
		[ $crc -eq 0 ] && [ $src -eq 0 ] && [ "${fl:-0}" -eq 1 ]
	tap $? "a client whose waiting WRITEs would hold over half a target's receive pool is closed (${fl:-?} closed); blk check is served after"
else
	tap 1 "blk serve --depth 1 --pool-size 16M starts (flooding client)"
fi

# --count 200 while a client keeps 8 reads in flight: the target starts
# exactly 200, gives back what comes after, and exits (it used to serve
# for as long as the client sent)
addr=127.0.0.1:$(port 10)
if serve tcp "$addr" --count 200; then
	"$K" blk bench --rw randread --depth 8 --time 60 "$addr" \
		>"$tmp/cnt" 2>&1 &
	bpid=$!
	i=0
	while kill -0 "$srv" 2>/dev/null && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -0 "$srv" 2>/dev/null && kill -TERM "$srv"
	wait "$srv"
	src=$?
	srv=
	kill -TERM "$bpid" 2>/dev/null
	wait "$bpid"
	comment "$tmp/srv"
	served=$(sed -n 's/^served \([0-9]*\) requests.*/\1/p' "$tmp/srv")
	past=$(sed -n 's/.* \([0-9]*\) requests past --count not run.*/\1/p' \
		"$tmp/srv")
	# requests past the count are given back only if they arrived
	# before the server ended, which the 8 in flight need not: the
	# count is reported, not required
	[ $src -eq 0 ] && [ $i -lt 300 ] && [ "${served:-0}" -eq 200 ] &&
		[ -n "$past" ]
	tap $? "blk serve --count 200 exits after 200 requests while its client keeps 8 in flight (${served:-?} served, ${past:-?} given back unrun, $((i / 10)) s)"
else
	tap 1 "blk serve --count 200 starts"
fi

# bench: text and JSON
addr=127.0.0.1:$(port 4)
if serve tcp "$addr"; then
	"$K" blk bench --rw randread --depth 8 --time 2 "$addr" >"$tmp/b" 2>&1
	rc=$?
	sed 's/^/# /' "$tmp/b"
	[ $rc -eq 0 ] && grep -q 'IOPS.*p99.*us/op' "$tmp/b"
	tap $? "blk bench randread depth 8 prints IOPS, latency and CPU per op"
	"$K" -j blk bench --rw randwrite --bs 64K --time 2 "$addr" >"$tmp/b" 2>&1
	rc=$?
	sed 's/^/# /' "$tmp/b"
	[ $rc -eq 0 ] && python3 -S -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(not (j["ops"] > 0 and j["iops"] > 0 and j["lat_p99_us"] >= j["lat_p50_us"] > 0))' "$tmp/b"
	tap $? "blk -j bench randwrite 64K: JSON with ops, iops and latency"
	stop
else
	tap 1 "blk serve starts (bench)"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
