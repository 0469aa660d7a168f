#!/usr/bin/python3
# Copyright (C) uccl contributors. See file LICENSE for terms.
"""A small Dask computation over UCX on uccl.

    UCX_TLS=uccl,self,tcp uccl-run /usr/bin/python3 examples/dask_uccl.py

starts a local Dask cluster on ucx:// (a scheduler in this process, two
worker processes with one thread each), computes the mean of x + x.T for a
random 4000 x 4000 array in 8 MB chunks (the transpose makes the workers
trade chunks, far above UCX's rendezvous threshold), checks it against the
same computation done here without Dask's distributed scheduler, and
prints the transports (lanes) of the scheduler's endpoint to a worker.

    --scheduler ucx://HOST:PORT    use a running cluster instead
    -n N                           array size (default 4000)

Exit status 1 if the result is wrong.
"""

import argparse
import sys
import time
import warnings

import dask.array as da
from distributed import Client, LocalCluster


def lanes(dask_scheduler):
    """The lane lines of ucp_ep_print_info, per worker endpoint."""
    out = {}
    for addr, stream in dask_scheduler.stream_comms.items():
        ep = getattr(stream.comm, "_ep", None)
        if ep is not None and hasattr(ep, "ucx_info"):
            out[addr] = [ln.strip("# ") for ln in ep.ucx_info().splitlines()
                         if "lane[" in ln]
    return out


def compute(client, n):
    x = da.random.RandomState(42).random((n, n), chunks=(1000, 1000))
    expr = (x + x.T).mean()
    t0 = time.monotonic()
    got = expr.compute()
    elapsed = time.monotonic() - t0
    with warnings.catch_warnings():   # "single-machine scheduler" is meant
        warnings.simplefilter("ignore", UserWarning)
        want = expr.compute(scheduler="sync")
    print("mean of x + x.T (%d x %d): %.12f in %.2f s over %s"
          % (n, n, got, elapsed, client.scheduler.address))
    for addr, lines in client.run_on_scheduler(lanes).items():
        print("scheduler -> %s:" % addr)
        for ln in lines:
            print("    " + ln)
    if abs(got - want) > 1e-12 * abs(want):
        print("WRONG: the local computation gives %.12f" % want)
        return 1
    print("result checked against a local computation: ok")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scheduler", help="address of a running scheduler")
    ap.add_argument("-n", type=int, default=4000, help="array size")
    args = ap.parse_args()
    if args.scheduler:
        with Client(args.scheduler) as client:
            return compute(client, args.n)
    with LocalCluster(protocol="ucx", host="127.0.0.1", n_workers=2,
                      threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, \
            Client(cluster) as client:
        return compute(client, args.n)


if __name__ == "__main__":
    sys.exit(main())
