# Copyright (C) uccl contributors. See file LICENSE for terms.
"""Exceptions of the ucp package, as ucx-py names them.

Every exception this package raises for a UCX failure derives from
UCXBaseException. How a UCX status maps to a class: see _from_status().
"""

__all__ = [
    "UCXBaseException", "UCXError", "UCXConfigError", "UCXWarning",
    "UCXCloseError", "UCXCanceled", "UCXConnectionReset", "UCXMsgTruncated",
    "UCXNotConnected", "UCXUnreachable",
]


class UCXBaseException(Exception):
    """Base of every UCX failure."""


class UCXError(UCXBaseException):
    """A UCX operation failed (a status without a class of its own)."""


class UCXConfigError(UCXError):
    """A UCX option or its value is not valid."""


class UCXWarning(UserWarning):
    """Warnings of the ucp package."""


class UCXCloseError(UCXBaseException):
    """The endpoint was closed before or while the operation ran."""


class UCXCanceled(UCXBaseException):
    """The operation was cancelled (also: its endpoint was aborted)."""


class UCXConnectionReset(UCXBaseException):
    """The peer closed the connection or died."""


class UCXMsgTruncated(UCXBaseException):
    """A message did not have the size of the receive buffer."""


class UCXNotConnected(UCXBaseException):
    """The endpoint or worker is not connected (or already closed)."""


class UCXUnreachable(UCXBaseException):
    """The destination cannot be reached."""


def _status_classes():
    # Filled lazily: the status numbers come from the C extension, which
    # imports this module's factory.
    from . import _libucp as lib
    return {
        lib.UCS_ERR_CANCELED: UCXCanceled,
        lib.UCS_ERR_MESSAGE_TRUNCATED: UCXMsgTruncated,
        lib.UCS_ERR_CONNECTION_RESET: UCXConnectionReset,
        # a peer that stopped answering: for the user a reset connection
        lib.UCS_ERR_ENDPOINT_TIMEOUT: UCXConnectionReset,
        lib.UCS_ERR_NOT_CONNECTED: UCXNotConnected,
        lib.UCS_ERR_UNREACHABLE: UCXUnreachable,
    }


_classes = None


def _from_status(status, message):
    """The exception (an instance) for a UCX status code."""
    global _classes
    if _classes is None:
        _classes = _status_classes()
    return _classes.get(status, UCXError)(message)
