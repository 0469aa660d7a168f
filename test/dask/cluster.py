# Copyright (C) uccl contributors. See file LICENSE for terms.
"""A Dask cluster of separate processes for the tests and the benchmark: a
distributed Scheduler and Workers started with Debian's own command line
tools (python -m distributed.cli.dask_scheduler / dask_worker), one thread
per worker, no nanny, on a protocol (ucx:// or tcp://). They inherit the
environment (run the caller through uccl-run for ucx:// on uccl).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

START_TIMEOUT_S = 90


class Cluster:
    def __init__(self, protocol, nworkers=2, name="dask"):
        self.protocol = protocol
        self.nworkers = nworkers
        self.dir = tempfile.mkdtemp(prefix="uccl-%s." % name)
        self.sched_file = os.path.join(self.dir, "scheduler.json")
        self.scheduler = None
        self.workers = []

    def _spawn(self, what, args):
        log = open(os.path.join(self.dir, what + ".log"), "wb")
        return subprocess.Popen([sys.executable, "-m",
                                 "distributed.cli." + args[0]] + args[1:],
                                stdout=log, stderr=subprocess.STDOUT,
                                cwd=self.dir)

    def log(self, what):
        with open(os.path.join(self.dir, what + ".log"), "rb") as f:
            return f.read().decode(errors="replace")

    def start(self):
        self.scheduler = self._spawn("scheduler", [
            "dask_scheduler", "--protocol", self.protocol,
            "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
            "--scheduler-file", self.sched_file])
        deadline = time.monotonic() + START_TIMEOUT_S
        while not os.path.exists(self.sched_file):
            if self.scheduler.poll() is not None or \
                    time.monotonic() > deadline:
                raise RuntimeError("the scheduler did not start:\n" +
                                   self.log("scheduler"))
            time.sleep(0.1)
        time.sleep(0.2)  # the file is written, then flushed
        for i in range(self.nworkers):
            self.workers.append(self._spawn("worker%d" % i, [
                "dask_worker", "--scheduler-file", self.sched_file,
                "--nthreads", "1", "--no-nanny", "--no-dashboard",
                "--host", "127.0.0.1", "--memory-limit", "0",
                "--name", "w%d" % i,
                "--local-directory", os.path.join(self.dir, "w%d" % i)]))
        return self

    def address(self):
        with open(self.sched_file) as f:
            return json.load(f)["address"]

    def kill_worker(self, i):
        self.workers[i].send_signal(signal.SIGKILL)
        self.workers[i].wait()

    def stop(self):
        for p in self.workers + [self.scheduler]:
            if p is not None and p.poll() is None:
                p.terminate()
        for p in self.workers + [self.scheduler]:
            if p is None:
                continue
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
        if exc[0] is not None:
            for what in ["scheduler"] + ["worker%d" % i
                                         for i in range(len(self.workers))]:
                print("---- %s log (last 40 lines)" % what)
                print("\n".join(self.log(what).splitlines()[-40:]))
        self.cleanup()
        return False


def ucx_lanes_ok(info):
    """(ok, why) for the ucp_ep_print_info text of an endpoint: every lane
    but the connection manager's on uccl, rma_bw among them."""
    lanes = [ln for ln in info.splitlines() if "lane[" in ln]
    data = [ln for ln in lanes if " cm " not in ln + " "]
    if not data:
        return False, "no lanes"
    for ln in data:
        if "uccl/" not in ln:
            return False, "lane not on uccl: " + ln.strip()
    if not any("rma_bw" in ln for ln in data):
        return False, "no rma_bw lane"
    return True, "%d lanes, all uccl" % len(data)
