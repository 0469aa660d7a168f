# Copyright (C) uccl contributors. See file LICENSE for terms.
"""The process's UCX context (one worker) and its progress under asyncio.

Progress is driven by the worker's event fd, registered as a reader with
every asyncio loop that uses the worker: when it is readable, or when an
operation was posted, the loop runs one step: ucp_worker_progress until
idle, dispatch of what completed, then ucp_worker_arm. If arming finds
more work, the step runs again after the loop's other ready callbacks;
otherwise the loop sleeps in epoll until UCX has an event. No thread, no
polling timer.
"""

import asyncio
import gc
import itertools
import logging
import os
import threading
import time
import weakref

from . import _libucp
from .exceptions import UCXBaseException, UCXConfigError, UCXError
from .exceptions import _from_status

logger = logging.getLogger("ucx")

_libucp._set_error_factory(_from_status)

_CLOSE_WAIT_S = 2.0      # reset(): how long endpoint closes may take
_SINK_GRACE_S = 10.0     # a closed endpoint's tags take messages this long
_SINK_BYTES = 64         # larger ones are taken too (as truncated)
_TAG_START = 1 << 32     # first tag number (0 is never a tag)

_ctx = None
_ctx_lock = threading.Lock()


def _running_loop():
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def call_in_loop(loop, func, *args):
    """Run func(*args) now if we are in loop's thread, else schedule it
    there (futures and tasks belong to their loop)."""
    if _running_loop() is loop:
        func(*args)
    else:
        loop.call_soon_threadsafe(func, *args)


class _LoopDriver:
    """Progress of the worker from one asyncio loop."""

    def __init__(self, ctx, loop):
        self._ctx = ctx
        self._loop = loop
        self._scheduled = False
        self._fd = ctx.worker.fileno()
        loop.add_reader(self._fd, self.kick)

    def kick(self):
        """Make the loop run one progress step soon."""
        if self._scheduled:
            return
        self._scheduled = True
        if _running_loop() is self._loop:
            self._loop.call_soon(self._step)
        else:
            self._loop.call_soon_threadsafe(self._step)

    def _step(self):
        self._scheduled = False
        ctx = self._ctx
        if ctx.worker is None:
            return
        ctx.progress()
        if not ctx.worker.arm():
            self.kick()

    def stop(self):
        try:
            if _running_loop() is self._loop or not self._loop.is_running():
                self._loop.remove_reader(self._fd)
            else:
                self._loop.call_soon_threadsafe(self._loop.remove_reader,
                                                self._fd)
        except (RuntimeError, ValueError, OSError):
            pass  # the loop is closed: its selector is gone


class Context:
    """One UCP context and worker, and what waits on their operations."""

    def __init__(self, options):
        self.options = dict(options)
        try:
            _libucp.read_config(self.options)
        except UCXBaseException as e:
            raise UCXConfigError(str(e)) from None
        self.worker = _libucp.Worker(self.options)
        self._waiters = {}                       # Request -> callback
        self._eps = weakref.WeakValueDictionary()        # C ep -> Endpoint
        self._listeners = weakref.WeakValueDictionary()  # C -> Listener
        self._drivers = weakref.WeakKeyDictionary()      # loop -> driver
        self._closing = set()                    # close Requests
        self._sinks = set()                      # sink Requests
        self._tags = itertools.count(_TAG_START)
        self._lock = threading.Lock()

    # --- progress ---------------------------------------------------------

    def driver(self, loop=None):
        """The progress driver of loop (default: the running loop), made
        on first use; None without a loop."""
        loop = loop if loop is not None else _running_loop()
        if loop is None or self.worker is None:
            return None
        with self._lock:
            d = self._drivers.get(loop)
            if d is None:
                d = self._drivers[loop] = _LoopDriver(self, loop)
        return d

    def kick(self):
        d = self.driver()
        if d is not None:
            d.kick()

    def progress(self):
        """Progress until idle and dispatch what completed. True if
        anything happened."""
        worker = self.worker
        n = worker.progress()
        events = worker.drain()
        for ev in events:
            try:
                self._dispatch(ev)
            except Exception:
                logger.exception("ucp: event %r", ev)
        return bool(n or events)

    def _dispatch(self, ev):
        kind = ev[0]
        if kind == _libucp.EV_DONE:
            _, req, status, length = ev
            cb = self._waiters.pop(req, None)
            if cb is not None:
                cb(status, length)
        elif kind == _libucp.EV_ERROR:
            _, cep, status = ev
            ep = self._eps.get(cep)
            if ep is not None:
                ep._on_error(status)
        elif kind == _libucp.EV_CONN:
            _, clis, creq = ev
            lis = self._listeners.get(clis)
            if lis is None or lis.closed():
                if clis.is_open:
                    clis.reject(creq)
            else:
                lis._on_conn(creq)

    def submit(self, req, callback):
        """callback(status, length) when req completes (now, if it did)."""
        if req.done:
            callback(req.status, req.length)
        else:
            self._waiters[req] = callback
        self.kick()

    # --- objects ------------------------------------------------------------

    def new_tags(self):
        """Two tags no other endpoint of this worker receives on."""
        n = next(self._tags)
        return 2 * n, 2 * n + 1

    def register_endpoint(self, cep, ep):
        self._eps[cep] = ep

    def register_listener(self, clis, lis):
        self._listeners[clis] = lis

    def close_endpoint(self, cep, force):
        """Start closing a UCP endpoint; reset() waits for it."""
        req = cep.close(force)
        if req is None:
            return
        self._closing.add(req)

        def done(status, length):
            self._closing.discard(req)
            if status not in (_libucp.UCS_OK, _libucp.UCS_ERR_CANCELED):
                logger.debug("ucp: endpoint close: %s",
                             _libucp.status_string(status))
        self.submit(req, done)

    def sink(self, tags):
        """Take, for a while, the messages still sent to the tags of a
        closed endpoint (the peer's last ones, e.g. its shutdown frame):
        unmatched, UCX would keep each with its receive buffer until the
        worker goes."""
        loop = _running_loop()
        if loop is None or self.worker is None:
            return
        reqs = set()
        for tag in tags:
            self._post_sink(tag, reqs)
        loop.call_later(_SINK_GRACE_S, self._end_sinks, reqs)

    def _post_sink(self, tag, reqs):
        if self.worker is None:
            return
        req = self.worker.tag_recv(bytearray(_SINK_BYTES), tag)
        reqs.add(req)
        self._sinks.add(req)

        def done(status, length):
            reqs.discard(req)
            self._sinks.discard(req)
            if status != _libucp.UCS_ERR_CANCELED:
                self._post_sink(tag, reqs)
        self.submit(req, done)

    def _end_sinks(self, reqs):
        for req in list(reqs):
            reqs.discard(req)
            if not req.done:
                req.cancel()
        self.kick()

    def live_objects(self):
        gc.collect()
        return ([ep for ep in list(self._eps.values()) if not ep.closed()] +
                [lis for lis in list(self._listeners.values())
                 if not lis.closed()])

    def shutdown(self):
        """Let endpoint closes finish (bounded), then destroy the worker;
        what still waits fails as cancelled."""
        if self.worker is None:
            return
        deadline = time.monotonic() + _CLOSE_WAIT_S
        while self._closing and time.monotonic() < deadline:
            if not self.progress():
                time.sleep(0.001)
        with self._lock:
            drivers = list(self._drivers.values())
            self._drivers.clear()
        for d in drivers:
            d.stop()
        worker, self.worker = self.worker, None
        worker.close()
        for ev in worker.drain():
            try:
                self._dispatch(ev)
            except Exception:
                logger.exception("ucp: event %r at shutdown", ev)


def get_ctx():
    global _ctx
    with _ctx_lock:
        if _ctx is None:
            _ctx = Context({})
        return _ctx


def init(options={}, env_takes_precedence=False, blocking_progress_mode=None):
    """Initiate UCX.

    Usually done at the first use of the API; this sets UCX options.

    options: dict of UCX options, names without the UCX_ prefix
        (e.g. {"TLS": "uccl,self"}); values are converted with str().
    env_takes_precedence: an option whose UCX_ variable is set in the
        environment is left to the environment.
    blocking_progress_mode: None or True (progress through the worker's
        event fd, the only mode this implementation has).
    """
    global _ctx
    if not isinstance(options, dict):
        raise TypeError("options must be a dict, not %s"
                        % type(options).__name__)
    if blocking_progress_mode not in (None, True):
        raise ValueError("only the blocking (event fd) progress mode is "
                         "provided")
    opts = {}
    for k, v in options.items():
        if not isinstance(k, str):
            raise TypeError("UCX option names must be str, not %s"
                            % type(k).__name__)
        name = k[4:] if k.startswith("UCX_") else k
        if env_takes_precedence and ("UCX_" + name) in os.environ:
            continue
        opts[name] = v if isinstance(v, str) else str(v)
    with _ctx_lock:
        if _ctx is not None:
            raise RuntimeError("UCX is already initiated. Call reset() and "
                               "init() in order to re-initate UCX with new "
                               "options.")
        _ctx = Context(opts)


def reset():
    """Shut UCX down; the next API call initiates it again.

    Raises UCXError (after dropping the context) if endpoints or listeners
    are still open: they keep the old context alive.
    """
    global _ctx
    with _ctx_lock:
        ctx, _ctx = _ctx, None
    if ctx is None:
        return
    live = ctx.live_objects()
    if live:
        raise UCXError("Trying to reset UCX but not all Endpoints and/or "
                       "Listeners are closed(): %s"
                       % ", ".join(repr(o) for o in live))
    ctx.shutdown()


def progress():
    """Progress UCX once from the caller (for code without a loop).
    Returns True if anything happened."""
    return get_ctx().progress()


def get_config():
    """The UCX configuration (names without UCX_) in effect, or that init()
    would use now."""
    ctx = _ctx
    return _libucp.read_config(ctx.options if ctx is not None else {})


def get_ucx_version():
    """Version of the UCX library in use, e.g. (1, 13, 1); does not
    initiate UCX."""
    return _libucp.get_version()


def get_ucp_worker():
    """The ucp_worker_h as an integer."""
    return get_ctx().worker.handle


def continuous_ucx_progress(event_loop=None):
    """Make sure the loop (default: the running loop) progresses UCX."""
    loop = event_loop
    if loop is None:
        loop = (_running_loop() or
                asyncio.get_event_loop_policy().get_event_loop())
    get_ctx().driver(loop)
