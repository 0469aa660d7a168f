#!/usr/bin/env python3
# The longest C functions (lines from the column-0 "{" to its column-0 "}"),
# for keeping functions to a screen: contrib/fnsize.py src/uct/uccl/*.c
# (TOP=n rows, default 8).
import os, re, sys
rows = []
for f in sys.argv[1:]:
    L = open(f).read().split('\n')
    start = None
    for i, l in enumerate(L):
        if l.startswith('{'):
            start = i
        elif l.startswith('}') and start is not None:
            name = '?'
            for j in range(start - 1, max(start - 8, -1), -1):
                m = re.match(r'^[A-Za-z_].*?([A-Za-z_]\w*)\s*\(', L[j])
                if m:
                    name = m.group(1)
                    break
            rows.append((i - start + 1, f, name))
            start = None
rows.sort(reverse=True)
for n, f, name in rows[:int(os.environ.get('TOP', '8'))]:
    print(f"{n:5d} {f} {name}")
