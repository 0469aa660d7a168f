#!/usr/bin/env python3
# Copyright (C) uccl contributors. See file LICENSE for terms.
"""Dask over UCX on uccl: a distributed Scheduler and two Worker processes
on ucx:// addresses (Debian's Dask, unchanged), and a Client here.

    dask_cluster.py compute    dask.array reductions with chunks far above
                               the rendezvous threshold (checked against a
                               closed form and a local computation), 256 MiB
                               moved between the workers (checksums), and
                               the lanes of Dask's own endpoints (all uccl)
    dask_cluster.py kill       a worker killed (SIGKILL) while a computation
                               runs: the scheduler reports it, the result is
                               right, the cluster goes on

Run through uccl-run with UCX_TLS (tests.cmake: uccl,self,tcp) and, for
the lossy variant, SOFTVERBS_LOSS. Exit 0: pass, 1: fail, 77: skipped (no
ucp module or no Dask).
"""

import os
import signal
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SEED = int(os.environ.get("UCCL_TEST_SEED", "17"))
WORKERS_TIMEOUT_S = 90
RESULT_TIMEOUT_S = 180
MOVE_BLOCKS = 8
MOVE_BLOCK_BYTES = 32 << 20        # 8 x 32 MiB = 256 MiB between workers
KILL_TASKS = 60
KILL_TASK_S = 0.1
KILL_AFTER_S = 1.5
REMOVED_TIMEOUT_S = 60

try:
    import numpy as np
    import dask
    import dask.array as da
    from distributed import Client, wait
    import ucp
except ImportError as e:
    print("SKIP: %s" % e)
    sys.exit(77)

from cluster import Cluster, ucx_lanes_ok


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok: " + what, flush=True)


def block(i, nbytes):
    """A deterministic block of nbytes (float64), made on a worker."""
    rng = np.random.default_rng(SEED * 1000 + i)
    return rng.random(nbytes // 8)


def checksum(a):
    """Order-sensitive checksum of an array's bytes."""
    v = np.frombuffer(a.tobytes(), dtype=np.uint64)
    return int((v * np.arange(1, len(v) + 1, dtype=np.uint64)).sum())


def slow_block(i):
    time.sleep(KILL_TASK_S)
    return block(i, 1 << 20)


def sum_checksums(*blocks):
    return sum(checksum(b) for b in blocks)


def sched_lanes(dask_scheduler):
    """ucp_ep_print_info of the scheduler's stream to each worker."""
    out = {}
    for addr, bs in dask_scheduler.stream_comms.items():
        ep = getattr(bs.comm, "_ep", None)
        out["scheduler->" + addr] = ep.ucx_info() if ep is not None else ""
    return out


def worker_lanes(dask_worker):
    """ucp_ep_print_info of a worker's comms (scheduler and other
    workers)."""
    out = {}
    ep = getattr(dask_worker.batched_stream.comm, "_ep", None)
    if ep is not None:
        out["%s->scheduler" % dask_worker.address] = ep.ucx_info()
    for addr, comms in dask_worker.rpc.available.items():
        for c in comms:
            if getattr(c, "_ep", None) is not None:
                out["%s->%s" % (dask_worker.address, addr)] = c._ep.ucx_info()
    return out


def scenario_compute(cluster, client):
    n = 4096
    # closed form: every chunk 8 MiB, x.T makes the workers trade chunks
    x = da.arange(n * n, dtype="f8", chunks=(1 << 20)).reshape((n, n))
    x = x.rechunk((1024, 1024))
    t0 = time.monotonic()
    got = float((x + x.T).sum().compute())
    want = float(n * n) * (n * n - 1)
    check(got == want, "sum of x + x.T (%d x %d, 8 MiB chunks) = %.0f in "
          "%.1f s" % (n, n, got, time.monotonic() - t0))

    # the same graph here, without Dask's distributed scheduler
    y = da.random.RandomState(SEED).random((2048, 2048), chunks=(512, 512))
    expr = (y - y.mean(axis=0)).T @ y[:, :64]
    got = expr.sum().compute()
    with warnings.catch_warnings():   # the local scheduler is meant
        warnings.simplefilter("ignore", UserWarning)
        want = expr.sum().compute(scheduler="sync")
    check(np.isclose(got, want, rtol=1e-12, atol=0),
          "centered product (2 MiB chunks): %.12g == local %.12g"
          % (got, want))

    # worker to worker: blocks made on w0 are needed on w1 and back
    workers = sorted(client.scheduler_info()["workers"])
    w0, w1 = workers
    want = [checksum(block(i, MOVE_BLOCK_BYTES)) for i in range(MOVE_BLOCKS)]
    t0 = time.monotonic()
    made = [client.submit(block, i, MOVE_BLOCK_BYTES, workers=[w0],
                          pure=False) for i in range(MOVE_BLOCKS)]
    wait(made, timeout=RESULT_TIMEOUT_S)
    t1 = time.monotonic()
    sums = client.gather([client.submit(checksum, m, workers=[w1],
                                        pure=False) for m in made])
    t2 = time.monotonic()
    moved = MOVE_BLOCKS * MOVE_BLOCK_BYTES
    check(sums == want, "%d MiB moved %s -> %s, checksums right (%.0f MB/s "
          "including the checksums)" % (moved >> 20, w0, w1,
                                        moved / (t2 - t1) / 1e6))
    back = client.gather([client.submit(checksum, m, workers=[w0],
                                        pure=False)
                          for m in client.map(lambda a: a[::-1].copy(), made,
                                              workers=[w1])])
    want_back = [checksum(block(i, MOVE_BLOCK_BYTES)[::-1].copy())
                 for i in range(MOVE_BLOCKS)]
    check(back == want_back, "%d MiB moved back %s -> %s, checksums right"
          % (moved >> 20, w1, w0))
    del made

    if "uccl" in os.environ.get("UCX_TLS", "").split(","):
        infos = client.run_on_scheduler(sched_lanes)
        for per_worker in client.run(worker_lanes).values():
            infos.update(per_worker)
        check(len(infos) >= 4, "%d Dask endpoints to look at" % len(infos))
        for name, info in sorted(infos.items()):
            ok, why = ucx_lanes_ok(info)
            if not ok:
                print(info)
            check(ok, "lanes of %s: %s" % (name, why))


def scenario_kill(cluster, client):
    futs = client.map(slow_block, range(KILL_TASKS), pure=False)
    total = client.submit(sum_checksums, *futs, pure=False)
    time.sleep(KILL_AFTER_S)
    victim_name = "w1"
    info = client.scheduler_info()["workers"]
    victim = [a for a, w in info.items() if w["name"] == victim_name][0]
    print("killing %s (%s) with SIGKILL" % (victim_name, victim), flush=True)
    t0 = time.monotonic()
    cluster.kill_worker(1)

    deadline = time.monotonic() + REMOVED_TIMEOUT_S
    while victim in client.scheduler_info()["workers"]:
        if time.monotonic() > deadline:
            raise AssertionError("the scheduler still lists %s" % victim)
        time.sleep(0.2)
    check(True, "the scheduler removed the killed worker after %.1f s"
          % (time.monotonic() - t0))

    got = total.result(timeout=RESULT_TIMEOUT_S)
    want = sum_checksums(*[block(i, 1 << 20) for i in range(KILL_TASKS)])
    check(got == want, "the computation finished on the other worker, "
          "result right")
    x = da.ones((2048, 2048), chunks=(512, 512))
    check(int(x.sum().compute()) == 2048 * 2048, "the cluster goes on")
    log = cluster.log("scheduler")
    check("Remove worker" in log and victim in log,
          "the scheduler's log reports the removal of %s" % victim)


def main():
    scenario = sys.argv[1] if len(sys.argv) > 1 else "compute"
    run = {"compute": scenario_compute, "kill": scenario_kill}[scenario]
    print("dask_cluster %s: seed %d, UCX_TLS=%s, SOFTVERBS_LOSS=%s, ucp from "
          "%s, dask %s" % (scenario, SEED, os.environ.get("UCX_TLS"),
                           os.environ.get("SOFTVERBS_LOSS", "0"),
                           os.path.dirname(ucp.__file__), dask.__version__),
          flush=True)
    t0 = time.monotonic()
    with Cluster("ucx", 2, "dask-" + scenario) as cluster:
        addr = cluster.address()
        check(addr.startswith("ucx://"), "scheduler at " + addr)
        with Client(addr, timeout=WORKERS_TIMEOUT_S) as client:
            client.wait_for_workers(2, timeout=WORKERS_TIMEOUT_S)
            workers = client.scheduler_info()["workers"]
            check(all(a.startswith("ucx://") for a in workers),
                  "workers at " + ", ".join(sorted(workers)))
            run(cluster, client)
    print("dask_cluster %s: PASS in %.1f s (seed %d)"
          % (scenario, time.monotonic() - t0, SEED), flush=True)
    return 0


if __name__ == "__main__":
    # timeout(1)'s SIGTERM: leave through the context managers, which stop
    # the Dask processes
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(124))
    try:
        sys.exit(main())
    except Exception:
        import traceback
        traceback.print_exc()
        print("dask_cluster: FAIL (seed %d)" % SEED, flush=True)
        sys.exit(1)
