# Copyright (C) uccl contributors. See file LICENSE for terms.
"""Listener: accepts connections on a port and hands each one, set up, to
the user's callback as an Endpoint."""

import asyncio
import inspect
import logging
import socket

from ._context import get_ctx
from ._endpoint import Endpoint
from .exceptions import UCXBaseException

logger = logging.getLogger("ucx")


class Listener:
    """A listening port (create_listener()). Listening stops with close()
    or when this object is garbage collected: keep a reference."""

    def __init__(self, ctx, clis, callback, error_handling, loop):
        self._ctx = ctx
        self._clis = clis
        self._callback = callback
        self._error_handling = error_handling
        self._loop = loop
        self._tasks = set()
        self._ip, self._port = clis.address
        ctx.register_listener(clis, self)

    def __repr__(self):
        return "<ucp.Listener %s:%d%s>" % (self._ip, self._port,
                                           " closed" if self.closed() else "")

    def __del__(self):
        if getattr(self, "_clis", None) is not None:
            try:
                self.close()
            except Exception:
                pass

    @property
    def ip(self):
        """The address listened on."""
        return self._ip

    @property
    def port(self):
        """The port listened on (the one UCX chose for port 0)."""
        return self._port

    def closed(self):
        """Is the listener closed?"""
        return self._clis is None or not self._clis.is_open

    def close(self):
        """Stop listening (endpoints already made stay open)."""
        clis, self._clis = self._clis, None
        if clis is not None:
            clis.close()

    def _on_conn(self, creq):
        coro = self._serve(creq)
        if self._loop.is_closed():
            coro.close()
            if self._clis is not None:
                self._clis.reject(creq)
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            task = self._loop.create_task(coro)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            asyncio.run_coroutine_threadsafe(coro, self._loop)

    async def _serve(self, creq):
        clis = self._clis
        if clis is None:
            return
        try:
            ep = Endpoint(self._ctx, clis.accept(creq, self._error_handling))
        except (UCXBaseException, ValueError) as e:
            logger.debug("ucp: %r: accept %s: %r", self, creq.client, e)
            return
        try:
            await ep._handshake()
        except (UCXBaseException, asyncio.CancelledError) as e:
            logger.debug("ucp: %r: set-up of %r failed: %r", self, ep, e)
            ep.abort()
            if isinstance(e, asyncio.CancelledError):
                raise
            return
        try:
            ret = self._callback(ep)
            if inspect.isawaitable(ret):
                await ret
        except Exception:
            logger.exception("ucp: listener callback for %r", ep)


def create_listener(callback_func, port=None, endpoint_error_handling=True,
                    ip_address=None):
    """Listen for connections from create_endpoint().

    callback_func(ep): a function or coroutine function, called with the
        Endpoint of each accepted connection once it is set up.
    port: the port; None or 0: one UCX chooses (see Listener.port).
    ip_address: the address to listen on (default: all).
    """
    if not callable(callback_func):
        raise TypeError("callback_func must be callable")
    if port is None:
        port = 0
    if isinstance(port, bool) or not isinstance(port, int):
        raise TypeError("port must be an int, not %s" % type(port).__name__)
    if not 0 <= port < 65536:
        raise ValueError("port %d is not in 0..65535" % port)
    if ip_address is not None:
        if not isinstance(ip_address, str):
            raise TypeError("ip_address must be a str")
        ip_address = socket.getaddrinfo(ip_address, port,
                                        type=socket.SOCK_STREAM)[0][4][0]
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    ctx = get_ctx()
    clis = ctx.worker.listen(port, ip_address)
    lis = Listener(ctx, clis, callback_func, bool(endpoint_error_handling),
                   loop)
    ctx.driver(loop)
    return lis
