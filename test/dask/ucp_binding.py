#!/usr/bin/env python3
# Copyright (C) uccl contributors. See file LICENSE for terms.
"""Tests of uccl's `ucp` package (ucx-py's API) between two processes.

    ucp_binding.py [TEST...]         run the tests (default: all)
    ucp_binding.py --peer            the peer process (started by the tests)

Run through uccl-run with the UCX_TLS under test (tests.cmake: uccl,self,tcp).
Every byte moved is checked. The peer takes commands on each endpoint (a
fixed header, then data) and prints "PORT n" and "RESULT ..." lines on
stdout. Exit status 0 when every test passed; the seed is printed.
"""

import asyncio
import gc
import os
import resource
import signal
import struct
import sys
import time

import numpy as np

import ucp
from ucp.exceptions import (UCXBaseException, UCXCanceled, UCXCloseError,
                            UCXConfigError, UCXConnectionReset, UCXError,
                            UCXMsgTruncated)

SEED = int(os.environ.get("UCCL_TEST_SEED", "17"))
TEST_TIMEOUT_S = 120          # one test
FAIL_WAIT_S = 20              # a peer's close or death must show by then
IDLE_S = 2.0                  # idle wait with a pending receive
IDLE_CPU_MAX_S = 0.5          # CPU the process may use meanwhile
SIZES = [0, 1, 8, 4095, 8192, 65536, 131072, 1 << 20, 8 << 20, 64 << 20]

_CMD = struct.Struct("<16sQQQ")
_STATUS = struct.Struct("<Q")


def pattern(size, seed):
    """size deterministic bytes of a seed, as a uint8 array."""
    return np.frombuffer(np.random.default_rng(seed).bytes(size),
                         dtype=np.uint8)


async def command(ep, op, a=0, b=0, c=0):
    await ep.send(_CMD.pack(op.encode(), a, b, c))


async def status(ep):
    buf = bytearray(_STATUS.size)
    await ep.recv(buf)
    return _STATUS.unpack(buf)[0]


# ---------------------------------------------------------------- the peer

async def peer_handle(ep, counters):
    closes = []
    ep.set_close_callback(lambda: closes.append(1))
    cmd = bytearray(_CMD.size)
    while True:
        try:
            await ep.recv(cmd)
        except UCXBaseException:
            return
        op, a, b, c = _CMD.unpack(cmd)
        op = op.rstrip(b"\0").decode()
        if op == "echo":            # a: size, b: seed
            buf = np.empty(a, dtype=np.uint8)
            await ep.recv(buf)
            ok = np.array_equal(buf, pattern(a, b))
            await ep.send(_STATUS.pack(0 if ok else 1))
            await ep.send(buf)
        elif op == "tags":          # a: count, b: seed; sizes from seed
            sizes = np.random.default_rng(b).integers(0, 1 << 20, a)
            bufs = [np.empty(s, dtype=np.uint8) for s in sizes]
            await asyncio.gather(*(ep.recv(buf, tag=i)
                                   for i, buf in enumerate(bufs)))
            ok = all(np.array_equal(buf, pattern(len(buf), b + i))
                     for i, buf in enumerate(bufs))
            await ep.send(_STATUS.pack(0 if ok else 1))
            await asyncio.gather(*(ep.send(buf, tag=i)
                                   for i, buf in enumerate(bufs)))
        elif op == "inorder":       # a: count, b: size; same tag
            bufs = [np.empty(b, dtype=np.uint8) for _ in range(a)]
            await asyncio.gather(*(ep.recv(buf) for buf in bufs))
            ok = all(np.array_equal(buf, pattern(b, i))
                     for i, buf in enumerate(bufs))
            await ep.send(_STATUS.pack(0 if ok else 1))
        elif op == "send":          # a: size, b: seed, c: delay ms
            await asyncio.sleep(c / 1000)
            await ep.send(pattern(a, b))
        elif op == "close":         # c: delay ms
            await asyncio.sleep(c / 1000)
            await ep.close()
            return
        elif op == "abort":
            await asyncio.sleep(c / 1000)
            ep.abort()
            return
        elif op == "watch":         # a: id; report how a pending recv ends
            try:
                await asyncio.wait_for(ep.recv(bytearray(8)), FAIL_WAIT_S)
                outcome = "received"
            except asyncio.TimeoutError:
                outcome = "timeout"
            except UCXBaseException as e:
                outcome = type(e).__name__
            await asyncio.sleep(0.2)
            print("RESULT %d %s cb=%d" % (a, outcome, len(closes)),
                  flush=True)
            ep.abort()
            return
        else:
            print("RESULT bad command %r" % op, flush=True)
            return


async def peer_main():
    counters = {}
    done = asyncio.get_running_loop().create_future()
    lis = ucp.create_listener(lambda ep: peer_handle(ep, counters))
    print("PORT %d" % lis.port, flush=True)
    await done


# --------------------------------------------------------------- the tests

class Peer:
    """A peer process and its stdout."""

    async def start(self):
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, os.path.abspath(__file__), "--peer",
            stdout=asyncio.subprocess.PIPE)
        line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        if not line.startswith(b"PORT "):
            raise RuntimeError("peer said %r" % line)
        self.port = int(line.split()[1])
        return self

    async def result(self):
        line = await asyncio.wait_for(self.proc.stdout.readline(),
                                      FAIL_WAIT_S + 10)
        return line.decode().split()

    async def connect(self):
        return await ucp.create_endpoint("127.0.0.1", self.port)

    async def stop(self):
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()


def check(cond, what):
    if not cond:
        raise AssertionError(what)


async def expect_raises(excs, coro, what):
    try:
        await coro
    except excs as e:
        return e
    except Exception as e:
        raise AssertionError("%s: raised %r, expected %s" % (what, e, excs))
    raise AssertionError("%s: no exception, expected %s" % (what, excs))


async def test_sizes(peer):
    """0 B to 64 MiB each way, several buffer types, every byte checked."""
    ep = await peer.connect()
    for i, size in enumerate(SIZES):
        data = pattern(size, SEED + i)
        src = [bytes(data), data, bytearray(data), memoryview(data)][i % 4]
        await command(ep, "echo", size, SEED + i)
        await ep.send(src)
        check(await status(ep) == 0, "peer got wrong bytes, size %d" % size)
        if size % 8 == 0 and i % 2:
            back = np.empty(size // 8, dtype=np.float64)   # any dtype
        else:
            back = bytearray(size)
        await ep.recv(back)
        check(np.array_equal(np.frombuffer(back, dtype=np.uint8), data),
              "wrong bytes back, size %d" % size)
    await ep.close()


async def test_concurrent(peer):
    """200 sends in flight at once, each with its tag, up to 1 MiB; then 50
    of one tag, which must match in order."""
    count = 200
    ep = await peer.connect()
    await command(ep, "tags", count, SEED)
    sizes = np.random.default_rng(SEED).integers(0, 1 << 20, count)
    datas = [pattern(s, SEED + i) for i, s in enumerate(sizes)]
    await asyncio.gather(*(ep.send(d, tag=i) for i, d in enumerate(datas)))
    check(await status(ep) == 0, "peer got wrong bytes")
    backs = [np.empty(s, dtype=np.uint8) for s in sizes]
    await asyncio.gather(*(ep.recv(b, tag=i) for i, b in enumerate(backs)))
    for i, (d, b) in enumerate(zip(datas, backs)):
        check(np.array_equal(d, b), "message %d came back wrong" % i)

    await command(ep, "inorder", 50, 4096)
    await asyncio.gather(*(ep.send(pattern(4096, i)) for i in range(50)))
    check(await status(ep) == 0, "same-tag messages out of order")
    await ep.close()


async def test_many_endpoints(peer):
    """20 endpoints at once, each its own tags."""
    eps = await asyncio.gather(*(peer.connect() for _ in range(20)))

    async def one(i, ep):
        data = pattern(100000 + i, SEED + i)
        await command(ep, "echo", len(data), SEED + i)
        await ep.send(data)
        check(await status(ep) == 0, "endpoint %d: peer got wrong bytes" % i)
        back = np.empty_like(data)
        await ep.recv(back)
        check(np.array_equal(back, data), "endpoint %d: wrong bytes" % i)
        await ep.close()
    await asyncio.gather(*(one(i, ep) for i, ep in enumerate(eps)))


async def test_cancel(peer):
    """A cancelled receive takes no message: the next receive gets it, the
    cancelled buffer stays untouched."""
    ep = await peer.connect()
    lost = bytearray(4096)
    task = asyncio.ensure_future(ep.recv(lost))
    await asyncio.sleep(0.2)
    task.cancel()
    await expect_raises(asyncio.CancelledError, task, "cancelled recv")
    await expect_raises(asyncio.TimeoutError,
                        asyncio.wait_for(ep.recv(bytearray(4096)), 0.2),
                        "recv with a timeout")
    await command(ep, "send", 4096, SEED, 100)
    got = bytearray(4096)
    await asyncio.wait_for(ep.recv(got), FAIL_WAIT_S)
    check(got == bytes(pattern(4096, SEED)), "wrong message after cancels")
    check(lost == bytearray(4096), "a cancelled receive wrote its buffer")
    # a large (rendezvous) message after a cancel
    await command(ep, "send", 8 << 20, SEED + 1, 0)
    big = np.empty(8 << 20, dtype=np.uint8)
    await ep.recv(big)
    check(np.array_equal(big, pattern(8 << 20, SEED + 1)), "large message")
    await ep.close()


async def test_close_by_peer(peer):
    """The peer closes (ep.close()): our pending receive fails, the close
    callback runs once, sending fails."""
    for how in ("close", "abort"):
        ep = await peer.connect()
        calls = []
        ep.set_close_callback(lambda: calls.append(1))
        await command(ep, how, 0, 0, 200)
        t0 = time.monotonic()
        await expect_raises(UCXBaseException,
                            asyncio.wait_for(ep.recv(bytearray(8)),
                                             FAIL_WAIT_S),
                            "recv when the peer did %s" % how)
        check(calls == [1], "%s: close callback calls %r" % (how, calls))
        await expect_raises((UCXCloseError, UCXConnectionReset, UCXError),
                            ep.send(b"x" * 8), "send after the peer's " + how)
        print("  peer %s: recv failed after %.2f s" %
              (how, time.monotonic() - t0))
        ep.abort()
        check(ep.closed(), "closed() after abort")


async def test_close_by_us(peer):
    """We close (close() and abort()) while the peer waits in a receive:
    its receive fails and its close callback runs."""
    for i, how in enumerate(("close", "abort")):
        ep = await peer.connect()
        await command(ep, "watch", i)
        await asyncio.sleep(0.3)
        if how == "close":
            await ep.close()
        else:
            ep.abort()
        check(ep.closed(), "closed() after " + how)
        res = await peer.result()
        check(res[:2] == ["RESULT", str(i)], "peer said %r" % res)
        check(res[2] in ("UCXCanceled", "UCXConnectionReset",
                         "UCXCloseError"),
              "%s: peer's receive ended with %s" % (how, res[2]))
        check(res[3] == "cb=1", "%s: peer's close callback: %s"
              % (how, res[3]))
        await expect_raises(UCXCloseError, ep.send(b"x"), "send after close")


async def test_peer_killed(peer):
    """A peer killed with SIGKILL: pending receives and sends fail with
    UCXConnectionReset (or another UCX error), the close callback runs."""
    victim = await Peer().start()
    try:
        ep = await victim.connect()
        calls = []
        ep.set_close_callback(lambda: calls.append(1))
        recv = asyncio.ensure_future(ep.recv(bytearray(64)))
        await command(ep, "echo", 64 << 20, SEED)   # it waits for the data
        await asyncio.sleep(0.2)
        victim.proc.send_signal(signal.SIGKILL)
        t0 = time.monotonic()
        e = await expect_raises(UCXBaseException,
                                asyncio.wait_for(recv, FAIL_WAIT_S),
                                "pending recv of a killed peer")
        print("  killed peer: pending recv: %r after %.2f s"
              % (e, time.monotonic() - t0))
        check(isinstance(e, (UCXConnectionReset, UCXCloseError, UCXError,
                             UCXCanceled)), "recv raised %r" % e)
        e = await expect_raises(UCXBaseException,
                                asyncio.wait_for(ep.send(pattern(8 << 20, 1)),
                                                 FAIL_WAIT_S),
                                "send to a killed peer")
        check(calls == [1], "close callback calls %r" % calls)
        ep.abort()
    finally:
        await victim.stop()


async def test_bad_arguments(peer):
    """Bad arguments raise Python exceptions, nothing crashes or hangs."""
    ep = await peer.connect()
    cases = [
        (TypeError, lambda: ep.send(12345), "send(int)"),
        (TypeError, lambda: ep.send(None), "send(None)"),
        (ValueError, lambda: ep.recv(b"read-only"), "recv(bytes)"),
        (ValueError, lambda: ep.recv(np.zeros((4, 4))[:, 1]),
         "recv(non-contiguous)"),
        (ValueError, lambda: ep.send(b"x", tag=-1, force_tag=True),
         "force_tag=-1"),
        (TypeError, lambda: ep.send(b"x", tag="a", force_tag=True),
         "force_tag str"),
        (ValueError, lambda: ucp.create_endpoint("127.0.0.1", 0), "port 0"),
        (ValueError, lambda: ucp.create_endpoint("127.0.0.1", 70000),
         "port 70000"),
        (TypeError, lambda: ucp.create_endpoint(1234, 80), "ip int"),
        (TypeError, lambda: ucp.create_endpoint("127.0.0.1", "80"),
         "port str"),
        (OSError, lambda: ucp.create_endpoint("no-such-host.invalid", 80),
         "unknown host"),
    ]
    for exc, make, what in cases:
        await expect_raises(exc, make(), what)
    for exc, call, what in [
            (TypeError, lambda: ucp.create_listener(None), "listener(None)"),
            (ValueError, lambda: ucp.create_listener(print, port=-1),
             "listener port -1"),
            (TypeError, lambda: ep.set_close_callback(5),
             "close callback 5"),
            (RuntimeError, lambda: ucp.init(), "second init"),
            (OSError, lambda: ucp.get_address("no-such-if0"),
             "get_address(no-such-if0)")]:
        try:
            call()
        except exc:
            continue
        raise AssertionError("%s: no %s" % (what, exc.__name__))

    # a message of the wrong size
    await command(ep, "send", 100, SEED, 0)
    await expect_raises(UCXMsgTruncated, ep.recv(bytearray(50)),
                        "recv smaller than the message")
    await command(ep, "send", 100, SEED, 0)
    await expect_raises(UCXMsgTruncated, ep.recv(bytearray(200)),
                        "recv larger than the message")
    # the endpoint still works
    data = pattern(1000, 5)
    await command(ep, "echo", 1000, 5)
    await ep.send(data)
    check(await status(ep) == 0, "echo after errors")
    back = bytearray(1000)
    await ep.recv(back)
    check(back == data.tobytes(), "echo after errors came back wrong")
    await ep.close()

    # nobody listens there: fails, does not hang
    lis = ucp.create_listener(print)
    port = lis.port
    lis.close()
    await expect_raises(UCXBaseException,
                        asyncio.wait_for(ucp.create_endpoint("127.0.0.1",
                                                             port),
                                         FAIL_WAIT_S),
                        "connect to a closed port")


async def test_lanes(peer):
    """With uccl in UCX_TLS, every lane of the endpoint (but the connection
    manager's) is a uccl lane, and rendezvous (rma_bw) has one."""
    tls = os.environ.get("UCX_TLS", "")
    if "uccl" not in tls.split(","):
        print("  skipped: UCX_TLS=%s has no uccl" % tls)
        return
    ep = await peer.connect()
    await command(ep, "echo", 1 << 20, 3)
    await ep.send(pattern(1 << 20, 3))
    check(await status(ep) == 0, "echo")
    await ep.recv(bytearray(1 << 20))
    info = ep.ucx_info()
    print("\n".join("  " + ln for ln in info.splitlines() if "lane[" in ln))
    lanes = [ln for ln in info.splitlines() if "lane[" in ln]
    data = [ln for ln in lanes if " cm " not in ln + " "]
    check(data, "no lanes in:\n" + info)
    for ln in data:
        check("uccl/" in ln, "a lane not on uccl: " + ln)
    check(any("rma_bw" in ln for ln in data), "no rma_bw lane")
    check(any(" am " in ln + " " for ln in data), "no am lane")
    await ep.close()


async def test_without_tcp(peer):
    """With UCX_TLS=uccl,self (no tcp) UCX 1.13 cannot set a client-server
    endpoint up on softverbs: create_endpoint raises UCXUnreachable with a
    message that says to add tcp (it does not hang)."""
    if "tcp" not in os.environ.get("UCX_TLS", "tcp").split(","):
        print("  skipped: UCX_TLS has no tcp already")
        return
    code = ("import asyncio, ucp\n"
            "try:\n"
            "    asyncio.run(ucp.create_endpoint('127.0.0.1', %d))\n"
            "    print('connected')\n"
            "except ucp.exceptions.UCXBaseException as e:\n"
            "    print(type(e).__name__, e)\n" % peer.port)
    env = dict(os.environ, UCX_TLS="uccl,self")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    out, _ = await asyncio.wait_for(proc.communicate(), FAIL_WAIT_S * 2)
    out = out.decode().strip()
    print("  " + out[:200])
    check(out.startswith("UCXUnreachable") and "add tcp to UCX_TLS" in out,
          "UCX_TLS=uccl,self gave: " + out)


async def test_idle_cpu(peer):
    """Waiting is sleeping: a pending receive for IDLE_S costs little CPU
    (progress comes from the event fd, not from polling)."""
    ep = await peer.connect()
    await command(ep, "send", 64, SEED, int(IDLE_S * 1000))
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    buf = bytearray(64)
    await ep.recv(buf)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    waited = time.monotonic() - t0
    print("  waited %.2f s, CPU %.3f s" % (waited, cpu))
    check(buf == pattern(64, SEED).tobytes(), "wrong message")
    check(waited >= IDLE_S * 0.9, "the message came too early")
    check(cpu < IDLE_CPU_MAX_S, "%.3f s CPU while waiting" % cpu)
    await ep.close()


async def echo_once(ep, size, seed):
    data = pattern(size, seed)
    await command(ep, "echo", size, seed)
    await ep.send(data)
    check(await status(ep) == 0, "echo: peer got wrong bytes")
    back = np.empty(size, dtype=np.uint8)
    await ep.recv(back)
    check(np.array_equal(back, data), "echo: wrong bytes back")


async def test_reset_with_live_endpoint(peer):
    """reset() refuses (UCXError) while an endpoint is open, which goes on
    working; the next call starts UCX again."""
    ep = await peer.connect()
    try:
        ucp.reset()
        raise AssertionError("reset() with an open endpoint did not raise")
    except UCXError:
        pass
    await echo_once(ep, 300000, 7)
    await ep.close()
    ep = await peer.connect()
    await echo_once(ep, 300000, 8)
    await ep.close()


def config_tests():
    """init()/reset()/get_config() and env_takes_precedence, before anything
    else started UCX."""
    name, env = "RNDV_THRESH", "UCX_RNDV_THRESH"
    saved = os.environ.pop(env, None)
    try:
        ucp.init(options={name: "64K"})
        check(ucp.get_config()[name] == "64K", "option not applied")
        try:
            ucp.init()
            raise AssertionError("second init() did not raise")
        except RuntimeError:
            pass
        ucp.reset()
        os.environ[env] = "32K"
        ucp.init(options={name: "64K"}, env_takes_precedence=True)
        check(ucp.get_config()[name] == "32K", "environment did not win")
        ucp.reset()
        ucp.init(options={name: "64K"}, env_takes_precedence=False)
        check(ucp.get_config()[name] == "64K", "option did not win")
        ucp.reset()
        # (an unknown name is UCX's warning: it may be a transport's option)
        for bad, exc in (({name: "not-a-size"}, UCXConfigError),
                         ("TLS=tcp", TypeError), ({1: "x"}, TypeError)):
            try:
                ucp.init(options=bad)
                raise AssertionError("init(%r) did not raise" % (bad,))
            except exc:
                pass
        check(ucp.get_ucx_version()[0] >= 1, "get_ucx_version")
        check(isinstance(ucp.get_address(), str), "get_address")
    finally:
        os.environ.pop(env, None)
        if saved is not None:
            os.environ[env] = saved
        ucp.reset()


TESTS = [test_sizes, test_concurrent, test_many_endpoints, test_cancel,
         test_close_by_peer, test_close_by_us, test_peer_killed,
         test_bad_arguments, test_lanes, test_without_tcp, test_idle_cpu,
         test_reset_with_live_endpoint]


async def run(names):
    failed = []
    peer = await Peer().start()
    try:
        for test in [t for t in TESTS if names is None or t.__name__ in names]:
            t0 = time.monotonic()
            print("%s ..." % test.__name__, flush=True)
            try:
                await asyncio.wait_for(test(peer), TEST_TIMEOUT_S)
                print("%s: ok (%.1f s)" % (test.__name__,
                                           time.monotonic() - t0), flush=True)
            except Exception as e:
                import traceback
                traceback.print_exc()
                print("%s: FAIL: %r" % (test.__name__, e), flush=True)
                failed.append(test.__name__)
            gc.collect()
    finally:
        await peer.stop()
    return failed


def main():
    if sys.argv[1:] == ["--peer"]:
        asyncio.run(peer_main())
        return 0
    names = sys.argv[1:]
    print("ucp_binding: seed %d, UCX_TLS=%s, ucp from %s" %
          (SEED, os.environ.get("UCX_TLS"), os.path.dirname(ucp.__file__)))
    failed = []
    if not names or "config_tests" in names:
        try:
            config_tests()
            print("config_tests: ok")
        except Exception:
            import traceback
            traceback.print_exc()
            failed.append("config_tests")
    failed += asyncio.run(run(names or None))
    print("ucp_binding: %s (seed %d)" %
          ("FAIL: " + " ".join(failed) if failed else "PASS", SEED))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
