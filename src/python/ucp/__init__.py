# Copyright (C) uccl contributors. See file LICENSE for terms.
"""ucp: UCX from Python's asyncio, as ucx-py provides it.

This is uccl's implementation of the part of ucx-py's API that Dask's UCX
communication (distributed.comm.ucx, protocol ucx://) uses: init, reset,
get_ucx_version, get_address, get_config, create_listener,
create_endpoint, Endpoint send/recv/close/abort and the exceptions. It is
a small C extension on UCP's public API; data goes over whatever UCX_TLS
selects (with uccl-run and UCX_TLS=uccl,self: uccl).

If the real ucx-py is installed (a `ucp` package elsewhere on sys.path),
importing ucp gives that one; set UCCL_UCP=1 to use this one anyway.
"""

import importlib.machinery as _machinery
import importlib.util as _util
import os as _os
import sys as _sys
import warnings as _warnings


def _real_ucx_py():
    """The spec of another `ucp` package on sys.path, or None."""
    here = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    path = [p for p in _sys.path
            if _os.path.abspath(p or _os.curdir) != here]
    spec = _machinery.PathFinder.find_spec(__name__, path)
    if (spec is None or spec.loader is None or spec.origin is None or
            not _os.path.isfile(spec.origin)):
        return None
    return spec


def _load_real(spec):
    """Import the real ucx-py in our place; False if it fails to import."""
    me = _sys.modules[__name__]
    module = _util.module_from_spec(spec)
    _sys.modules[__name__] = module
    try:
        spec.loader.exec_module(module)
        return True
    except Exception as e:
        for name in [n for n in _sys.modules if n.startswith(__name__ + ".")]:
            del _sys.modules[name]
        _sys.modules[__name__] = me
        _warnings.warn("ucx-py in %s does not import (%r): using uccl's ucp"
                       % (_os.path.dirname(spec.origin), e))
        return False


_spec = None if _os.environ.get("UCCL_UCP") == "1" else _real_ucx_py()
if _spec is None or not _load_real(_spec):
    try:
        from . import _libucp  # noqa: F401
    except ImportError as _e:
        raise ImportError(
            "uccl's ucp has no C extension for this Python (%s, %s): it is "
            "built for the interpreter configure found, /usr/bin/python3 "
            "unless --with-python named another" %
            (_sys.executable, _sys.version.split()[0])) from _e
    from . import exceptions
    from ._context import (continuous_ucx_progress, get_config,
                           get_ucp_worker, get_ucx_version, init, progress,
                           reset)
    from ._endpoint import Endpoint, create_endpoint
    from ._listener import Listener, create_listener
    from ._utils import get_address

    __version__ = "0.1.0+uccl"
    __all__ = [
        "init", "reset", "progress", "get_config", "get_ucx_version",
        "get_ucp_worker", "get_address", "create_listener",
        "create_endpoint", "continuous_ucx_progress", "Endpoint",
        "Listener", "exceptions",
    ]
del _spec
