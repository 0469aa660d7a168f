# Copyright (C) uccl contributors. See file LICENSE for terms.
"""Endpoint: a connection to a peer, with ucx-py's behaviour.

Messages are UCP tag messages (so large ones go by rendezvous, zero-copy).
Each side picks the tags it receives on, unique in its worker, and tells
the peer in a handshake over the UCP stream API right after connecting:

    8 bytes magic b"uccl-ucp", u64 message tag, u64 control tag  (little end.)

The control tag carries close(): (u64 opcode 1, u64 messages sent), after
which the peer closes once it received that many.
"""

import array
import asyncio
import logging
import os
import socket
import struct

from . import _libucp
from ._context import call_in_loop
from ._utils import message_tag
from .exceptions import (UCXBaseException, UCXCanceled, UCXCloseError,
                         UCXError, UCXMsgTruncated, UCXUnreachable,
                         _from_status)

logger = logging.getLogger("ucx")

_HELLO = struct.Struct("<8sQQ")
_HELLO_MAGIC = b"uccl-ucp"
_CTRL = struct.Struct("<QQ")
_CTRL_SHUTDOWN = 1

_OK = _libucp.UCS_OK
_CANCELED = _libucp.UCS_ERR_CANCELED

# what an operation is, for its errors and for what abort() cancels
_SEND, _RECV, _CTRL_RECV, _STREAM_SEND, _STREAM_RECV = range(5)
_RECEIVES = (_RECV, _CTRL_RECV)


def _resolve(fut, exc, result):
    def set_it():
        if fut.done():
            return
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)
    call_in_loop(fut.get_loop(), set_it)


class Endpoint:
    """An endpoint represents a connection to a peer.

    Made by create_endpoint() and handed to create_listener()'s callback.
    """

    def __init__(self, ctx, cep):
        self._ctx = ctx
        self._ep = cep                 # None once closed
        self._uid = cep.handle
        self._pending = {}             # Request -> operation kind
        self._error_status = None      # UCX status of the ep's failure
        self._close_cbs = []
        self._close_cbs_fired = False
        self._send_tag = self._ctrl_send_tag = None
        self._recv_tag, self._ctrl_recv_tag = ctx.new_tags()
        self._send_count = 0
        self._recv_count = 0
        self._finished_recv_count = 0
        self._close_after_n_recv = None
        self._shutting_down_peer = False
        ctx.register_endpoint(cep, self)

    def __repr__(self):
        state = "closed" if self.closed() else "open"
        if self._error_status is not None:
            state += ", failed: " + _libucp.status_string(self._error_status)
        return "<ucp.Endpoint %#x %s>" % (self._uid, state)

    def __del__(self):
        if getattr(self, "_ep", None) is not None:
            try:
                self.abort()
            except Exception:
                pass

    # --- properties ---------------------------------------------------------

    @property
    def uid(self):
        """The unique ID of the underlying UCX endpoint."""
        return self._uid

    def closed(self):
        """Is this endpoint closed?"""
        return self._ep is None

    def cuda_support(self):
        """Whether device memory can be sent (no: host memory only)."""
        return False

    def get_ucp_worker(self):
        """The ucp_worker_h as an integer."""
        return self._ctx.worker.handle

    def get_ucp_endpoint(self):
        """The ucp_ep_h as an integer."""
        return self._uid

    def ucx_info(self):
        """ucp_ep_print_info of this endpoint: its configuration and the
        transport of every lane."""
        if self._ep is None:
            raise UCXCloseError("Endpoint closed")
        return self._ep.info()

    # --- operations ---------------------------------------------------------

    async def _wait(self, req, kind, expected):
        """Await one posted request; its errors as the endpoint sees them.
        A cancelled wait cancels the request (when UCP can)."""
        fut = asyncio.get_running_loop().create_future()

        def done(status, length):
            self._pending.pop(req, None)
            _resolve(fut, self._completion_error(status, length, kind,
                                                 expected), length)
        self._pending[req] = kind
        self._ctx.submit(req, done)
        try:
            return await fut
        except asyncio.CancelledError:
            if not req.done:
                req.cancel()
                self._ctx.kick()
            raise

    def _completion_error(self, status, length, kind, expected):
        if status == _OK:
            if kind in _RECEIVES + (_STREAM_RECV,) and length != expected:
                return UCXMsgTruncated(
                    "length mismatch: %d (got) != %d (expected)"
                    % (length, expected))
            return None
        if self._error_status is not None:
            return self._error_exception()
        if status == _CANCELED and self._ep is None:
            return UCXCanceled("Endpoint %#x was closed while the operation "
                               "was in flight" % self._uid)
        return _from_status(status, "Endpoint %#x: operation failed: %s"
                            % (self._uid, _libucp.status_string(status)))

    def _error_exception(self):
        return _from_status(self._error_status, "Endpoint %#x error: %s" % (
            self._uid, _libucp.status_string(self._error_status)))

    def _check_send(self):
        if self._ep is None:
            raise UCXCloseError("Endpoint closed")
        if self._error_status is not None:
            raise self._error_exception()

    async def send(self, buffer, tag=None, force_tag=False):
        """Send buffer (any object with the buffer protocol, host memory)
        to the peer, which receives it with a recv() of the same size.

        tag: optional; the receiver must give the same one. With
        force_tag the int tag is used as the UCP tag as it is.
        """
        self._check_send()
        utag = message_tag(self._send_tag, tag, force_tag)
        req = self._ep.tag_send(buffer, utag)
        self._send_count += 1
        await self._wait(req, _SEND, None)

    async def recv(self, buffer, tag=None, force_tag=False):
        """Receive a message of exactly len(buffer) bytes into buffer (any
        writable, contiguous object with the buffer protocol, host memory).
        A message of another size raises UCXMsgTruncated.

        After the peer failed, messages that already arrived can still be
        received; waiting for more raises the endpoint's error.
        """
        if self._ep is None:
            raise UCXCloseError("Endpoint closed")
        utag = message_tag(self._recv_tag, tag, force_tag)
        worker = self._ctx.worker
        if self._error_status is not None and not worker.tag_probe(utag):
            raise self._error_exception()
        req = worker.tag_recv(buffer, utag)
        self._recv_count += 1
        await self._wait(req, _RECV, req.size)
        self._finished_recv_count += 1
        if (self._close_after_n_recv is not None and
                self._finished_recv_count >= self._close_after_n_recv):
            self.abort()

    async def send_obj(self, obj, tag=None):
        """Send obj's size, then obj, to a peer that calls recv_obj()."""
        nbytes = memoryview(obj).nbytes
        await self.send(array.array("Q", [nbytes]), tag=tag)
        await self.send(obj, tag=tag)

    async def recv_obj(self, tag=None, allocator=bytearray):
        """Receive what the peer's send_obj() sent, into allocator(size)."""
        size = array.array("Q", [0])
        await self.recv(size, tag=tag)
        obj = allocator(size[0])
        await self.recv(obj, tag=tag)
        return obj

    # --- closing ------------------------------------------------------------

    def set_close_callback(self, callback_func, cb_args=None, cb_kwargs=None):
        """Call callback_func(*cb_args, **cb_kwargs) once when the endpoint
        closes: the peer failed or closed (UCX's error callback), or
        abort()/close() here. Registered after that, it is called at once.
        """
        if not callable(callback_func):
            raise TypeError("callback_func must be callable")
        cb = (callback_func, tuple(cb_args or ()), dict(cb_kwargs or {}))
        if self._close_cbs_fired:
            self._call_close_cb(cb)
        else:
            self._close_cbs.append(cb)

    def _call_close_cb(self, cb):
        func, args, kwargs = cb
        try:
            func(*args, **kwargs)
        except Exception:
            logger.exception("ucp: close callback of %r", self)

    def _fire_close_callbacks(self):
        if self._close_cbs_fired:
            return
        self._close_cbs_fired = True
        cbs, self._close_cbs = self._close_cbs, []
        for cb in cbs:
            self._call_close_cb(cb)

    def _on_error(self, status):
        """UCX's error callback: the peer is gone. Receives that wait fail
        with its error (sends are failed by UCP itself)."""
        if self._error_status is not None or self._ep is None:
            return
        self._error_status = status
        logger.debug("ucp: %r: error %s", self, _libucp.status_string(status))
        for req, kind in list(self._pending.items()):
            if kind in _RECEIVES and not req.done:
                req.cancel()
        self._fire_close_callbacks()

    def abort(self):
        """Close the endpoint at once, without telling the peer (it sees
        the connection reset). Waiting receives fail with UCXCanceled;
        sends in flight still complete (flush close) unless the endpoint
        failed."""
        cep = self._ep
        if cep is None:
            return
        self._ep = None
        for req, kind in list(self._pending.items()):
            if kind in _RECEIVES and not req.done:
                req.cancel()
        self._ctx.close_endpoint(cep, force=self._error_status is not None)
        self._ctx.sink((self._recv_tag, self._ctrl_recv_tag))
        self._fire_close_callbacks()

    async def close(self):
        """Close cleanly: tell the peer how many messages were sent (it
        closes after receiving them all), then abort()."""
        if self.closed():
            return
        try:
            if not self._shutting_down_peer and self._error_status is None:
                self._shutting_down_peer = True
                msg = _CTRL.pack(_CTRL_SHUTDOWN, self._send_count)
                try:
                    req = self._ep.tag_send(msg, self._ctrl_send_tag)
                    await self._wait(req, _SEND, None)
                except UCXBaseException as e:
                    logger.debug("ucp: %r: shutdown message: %r", self, e)
        finally:
            self.abort()

    def close_after_n_recv(self, n, count_from_ep_creation=False):
        """Close after n more received messages (or n in all, counting
        from the endpoint's creation)."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError("n must be an int")
        if not count_from_ep_creation:
            n += self._finished_recv_count
        if self._close_after_n_recv is not None:
            raise UCXError("close_after_n_recv has already been set to: %d "
                           "(abs)" % self._close_after_n_recv)
        if n == self._finished_recv_count:
            self.abort()
        elif n > self._finished_recv_count:
            self._close_after_n_recv = n
        else:
            raise UCXError("`n` cannot be less than current recv_count: "
                           "%d (abs) < %d (abs)"
                           % (n, self._finished_recv_count))

    # --- set-up -------------------------------------------------------------

    async def _handshake(self):
        """Exchange receive tags with the peer (see the module's doc)."""
        mine = _HELLO.pack(_HELLO_MAGIC, self._recv_tag, self._ctrl_recv_tag)
        theirs = bytearray(_HELLO.size)
        rreq = self._ep.stream_recv(theirs)
        sreq = self._ep.stream_send(mine)
        await self._wait(sreq, _STREAM_SEND, None)
        await self._wait(rreq, _STREAM_RECV, rreq.size)
        magic, send_tag, ctrl_tag = _HELLO.unpack(theirs)
        if magic != _HELLO_MAGIC or send_tag == 0 or ctrl_tag == 0:
            raise UCXError("Endpoint %#x: the peer's handshake is not a ucp "
                           "one (magic %r)" % (self._uid, magic))
        self._send_tag, self._ctrl_send_tag = send_tag, ctrl_tag
        self._post_ctrl_recv()

    def _post_ctrl_recv(self):
        buf = bytearray(_CTRL.size)
        req = self._ctx.worker.tag_recv(buf, self._ctrl_recv_tag)

        def done(status, length):
            self._pending.pop(req, None)
            if status != _OK or self._ep is None:
                return
            if length != _CTRL.size:
                logger.warning("ucp: %r: control message of %d bytes "
                               "ignored", self, length)
                return
            opcode, n = _CTRL.unpack(buf)
            if opcode != _CTRL_SHUTDOWN:
                logger.warning("ucp: %r: unknown control opcode %d ignored",
                               self, opcode)
                return
            try:
                self.close_after_n_recv(n, count_from_ep_creation=True)
            except UCXError as e:
                logger.warning("ucp: %r: peer's shutdown: %s", self, e)
        self._pending[req] = _CTRL_RECV
        self._ctx.submit(req, done)


async def create_endpoint(ip_address, port, endpoint_error_handling=True):
    """Connect to a listener (create_listener()) at ip_address:port and
    return the Endpoint once both sides are set up."""
    from ._context import get_ctx
    if not isinstance(ip_address, str):
        raise TypeError("ip_address must be a str, not %s"
                        % type(ip_address).__name__)
    if isinstance(port, bool) or not isinstance(port, int):
        raise TypeError("port must be an int, not %s" % type(port).__name__)
    if not 0 < port < 65536:
        raise ValueError("port %d is not in 1..65535" % port)
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(ip_address, port,
                                   type=socket.SOCK_STREAM)
    ip = infos[0][4][0]
    ctx = get_ctx()
    ep = Endpoint(ctx, ctx.worker.connect(ip, port,
                                          bool(endpoint_error_handling)))
    try:
        await ep._handshake()
    except UCXUnreachable as e:
        ep.abort()
        raise UCXUnreachable(str(e) + _unreachable_hint()) from None
    except BaseException:
        ep.abort()
        raise
    return ep


def _unreachable_hint():
    tls = os.environ.get("UCX_TLS", "all").split(",")
    if "tcp" in tls or "all" in tls or "^tcp" in tls:
        return ""
    return (" (UCX sets a client-server endpoint up through a transport on "
            "the network device of the address: without rdmacm, as on "
            "softverbs, add tcp to UCX_TLS, e.g. UCX_TLS=uccl,self,tcp; the "
            "data lanes stay on uccl)")
