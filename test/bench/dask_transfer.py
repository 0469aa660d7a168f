#!/usr/bin/env python3
# Copyright (C) uccl contributors. See file LICENSE for terms.
"""Dask worker-to-worker transfer rate: ucx:// (uccl) against tcp://.

    UCX_TLS=uccl,self,tcp uccl-run python3 test/bench/dask_transfer.py
        [-s SIZES_MIB] [-t TOTAL_MIB] [-r ROUNDS]

For each protocol a scheduler and two workers (one thread each) run as
separate processes (test/dask/cluster.py). Worker w0 makes blocks of
float64 (one size at a time, TOTAL_MIB in all); a trivial task per block
on w1 makes w1 fetch them: the time from submitting those tasks to their
results is the transfer time, as a Dask user sees it (Dask's own messages,
serialization and task overheads included). Prints MB/s per block size,
median of ROUNDS, for both protocols in one table.
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "dask"))

try:
    import numpy as np
    from distributed import Client, wait
    import ucp  # noqa: F401  (ucx:// needs it)
except ImportError as e:
    print("SKIP: %s" % e)
    sys.exit(77)

from cluster import Cluster

WORKERS_TIMEOUT_S = 90
ROUND_TIMEOUT_S = 300


def make_block(i, nbytes):
    return np.full(nbytes // 8, float(i))


def nbytes_of(a):
    return a.nbytes


def measure(client, size, total, rounds):
    w0, w1 = sorted(client.scheduler_info()["workers"])
    count = max(1, total // size)
    rates = []
    for r in range(rounds):
        blocks = [client.submit(make_block, r * count + i, size,
                                workers=[w0], pure=False)
                  for i in range(count)]
        wait(blocks, timeout=ROUND_TIMEOUT_S)
        t0 = time.monotonic()
        got = client.gather([client.submit(nbytes_of, b, workers=[w1],
                                           pure=False) for b in blocks])
        elapsed = time.monotonic() - t0
        if got != [size // 8 * 8] * count:
            raise AssertionError("w1 got blocks of %r bytes" % got[:3])
        rates.append(count * size / elapsed / 1e6)
        del blocks
    return statistics.median(rates), rates


def run_protocol(protocol, sizes, total, rounds):
    results = {}
    with Cluster(protocol, 2, "bench-" + protocol) as cluster:
        with Client(cluster.address(), timeout=WORKERS_TIMEOUT_S) as client:
            client.wait_for_workers(2, timeout=WORKERS_TIMEOUT_S)
            for size in sizes:
                med, all_rates = measure(client, size, total, rounds)
                results[size] = med
                print("  %s %4d MiB blocks: %s MB/s" % (
                    protocol, size >> 20,
                    " ".join("%.0f" % x for x in all_rates)), flush=True)
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-s", default="1,16,64",
                    help="block sizes in MiB (default 1,16,64)")
    ap.add_argument("-t", type=int, default=512,
                    help="MiB moved per round and size (default 512)")
    ap.add_argument("-r", type=int, default=3, help="rounds (default 3)")
    args = ap.parse_args()
    sizes = [int(s) << 20 for s in args.s.split(",")]
    total = args.t << 20
    print("dask_transfer: w0 -> w1, %d MiB per round, %d rounds, UCX_TLS=%s "
          "SOFTVERBS_LOSS=%s" % (args.t, args.r, os.environ.get("UCX_TLS"),
                                 os.environ.get("SOFTVERBS_LOSS", "0")),
          flush=True)
    res = {p: run_protocol(p, sizes, total, args.r) for p in ("ucx", "tcp")}
    print("\n%-12s %16s %16s %8s" % ("block", "ucx:// MB/s", "tcp:// MB/s",
                                     "ucx/tcp"))
    for size in sizes:
        u, t = res["ucx"][size], res["tcp"][size]
        print("%-12s %16.0f %16.0f %8.2f" % ("%d MiB" % (size >> 20), u, t,
                                             u / t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
