#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# The Ceph side of rados_test.sh, through librados (python3-rados, what
# the `rados` and `ceph` tools use), in one process:
#
#   rados_check.py CONF POOL verify LIST   LIST lines "OBJECT FILE [JSON]":
#       each object's bytes equal FILE's, its stat size too, and where
#       JSON (kmsgrctl -j rados put's line) is given, its pgid, raw_pgid
#       and primary agree with the mon's `osd map` (the first 20 lines and
#       every tenth after them: a mon command each)
#   rados_check.py CONF POOL put LIST      write each FILE as OBJECT
#   rados_check.py CONF POOL absent OBJECT...  each is gone (ENOENT)
#
# Prints one line per problem and "N checked" at the end; exit 1 on any.

import json
import sys

import rados


def main():
    conf, pool, cmd = sys.argv[1:4]
    args = sys.argv[4:]
    cluster = rados.Rados(conffile=conf)
    cluster.connect(timeout=60)
    ioctx = cluster.open_ioctx(pool)
    bad = 0
    n = 0
    if cmd == 'absent':
        for oid in args:
            n += 1
            try:
                ioctx.stat(oid)
                print(f'{oid}: still there')
                bad += 1
            except rados.ObjectNotFound:
                pass
    else:
        with open(args[0]) as f:
            lines = [ln.split(' ', 2) for ln in f.read().splitlines() if ln]
        for idx, parts in enumerate(lines):
            oid, path = parts[0], parts[1]
            with open(path, 'rb') as f:
                want = f.read()
            n += 1
            if cmd == 'put':
                ioctx.write_full(oid, want)
                continue
            size, _ = ioctx.stat(oid)
            got = ioctx.read(oid, length=max(len(want), 1) + 1) if size else b''
            if size != len(want) or got != want:
                print(f'{oid}: librados reads {len(got)} bytes (stat {size}),'
                      f' want {len(want)} from {path}'
                      f'{"" if len(got) != len(want) else ", content differs"}')
                bad += 1
            if len(parts) < 3 or (idx >= 20 and idx % 10):
                continue
            mine = json.loads(parts[2])
            ret, out, rs = cluster.mon_command(json.dumps({
                'prefix': 'osd map', 'pool': pool, 'object': oid,
                'format': 'json'}), b'')
            if ret:
                print(f'{oid}: osd map failed: {rs}')
                bad += 1
                continue
            theirs = json.loads(out)
            for mk, tk in (('pgid', 'pgid'), ('raw_pgid', 'raw_pgid'),
                           ('primary', 'acting_primary')):
                if str(mine[mk]) != str(theirs[tk]):
                    print(f'{oid}: kmsgrctl says {mk} {mine[mk]},'
                          f' ceph osd map says {theirs[tk]}')
                    bad += 1
    ioctx.close()
    cluster.shutdown()
    print(f'{n} checked, {bad} bad')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
