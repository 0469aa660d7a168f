#!/usr/bin/env python3
# Copyright (C) uccl contributors. See file LICENSE for terms.
"""A real ucx-py takes precedence over uccl's ucp: with uccl's package first
on PYTHONPATH (as uccl-run puts it) and another `ucp` package later on the
path, `import ucp` gives the other one; UCCL_UCP=1 keeps uccl's; one that
fails to import is passed over with a warning. Run through uccl-run."""

import os
import subprocess
import sys
import tempfile

PROBE = ("import ucp, warnings; print(getattr(ucp, 'MARK', None) or "
         "('uccl' if ucp.__version__.endswith('+uccl') else 'other'))")


def import_ucp(pythonpath, extra_env=None):
    env = dict(os.environ, PYTHONPATH=pythonpath, **(extra_env or {}))
    p = subprocess.run([sys.executable, "-W", "always", "-c", PROBE],
                       env=env, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("import failed: " + p.stderr)
    return p.stdout.strip(), p.stderr


def main():
    ours = os.environ.get("PYTHONPATH", "")
    if not ours:
        print("SKIP: no PYTHONPATH (run through uccl-run)")
        return 77
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        real = os.path.join(tmp, "real", "ucp")
        broken = os.path.join(tmp, "broken", "ucp")
        os.makedirs(real)
        os.makedirs(broken)
        with open(os.path.join(real, "__init__.py"), "w") as f:
            f.write("MARK = 'ucx-py'\nfrom . import sub\n")
        with open(os.path.join(real, "sub.py"), "w") as f:
            f.write("X = 1\n")
        with open(os.path.join(broken, "__init__.py"), "w") as f:
            f.write("raise ImportError('libucxx.so: cannot open')\n")

        cases = [
            ("uccl's alone", ours, {}, "uccl", None),
            ("ucx-py after uccl's", ours + ":" + os.path.dirname(real), {},
             "ucx-py", None),
            ("UCCL_UCP=1", ours + ":" + os.path.dirname(real),
             {"UCCL_UCP": "1"}, "uccl", None),
            ("a broken ucx-py", ours + ":" + os.path.dirname(broken), {},
             "uccl", "does not import"),
        ]
        for what, path, env, want, warn in cases:
            got, err = import_ucp(path, env)
            ok = got == want and (warn is None or warn in err)
            print("%s: %s: import ucp gave %s%s" % (
                "ok" if ok else "FAIL", what, got,
                " (warned)" if warn and warn in err else ""))
            fails += not ok
    print("ucp_precedence: %s" % ("FAIL" if fails else "PASS"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
