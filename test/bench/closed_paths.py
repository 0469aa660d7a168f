#!/usr/bin/env python3
"""Closed-network model of the ECMP scenario (docs/STATUS.md, ECMP).

N chunks circulate over K equal FIFO core paths (one time unit of service
per chunk). A chunk served goes back to its sender, which sends it again
after an exponential pause of mean Z (0: at once) on the path its policy
chooses:

  random  a random one of the sender's QPS QPs, each QP hashed onto a path
          once (ECMP: the sender does not know the hash);
  rr      the sender's QPs in turn;
  qp      the better of two random QPs of the sender, each known by the
          queue its latest chunk found, learned when that chunk was
          delivered (what a sender's per-QP RTT samples tell);
  stale   the shorter of two random paths' queues as they were one mean
          queueing time (N / K) ago (every path known, late);
  p2c     the shorter of two random paths' present queues (what no sender
          knows: an upper bound for a choice on fresh queues);
  jsq     the shortest present queue.

Prints each policy's utilization of the paths, and (K-1)/(N+K-1), the
chance that a path is empty when the chunks spread over the paths at
random (a closed network with random routing).

  closed_paths.py [-z Z] [-s SEED] [-t TIME]
"""
import argparse
import collections
import heapq
import random

SENDERS = 4
QPS = 32
POLICIES = ("random", "rr", "qp", "stale", "p2c", "jsq")


def better(a, b, seen):
    return a if seen[a] <= seen[b] else b


def simulate(paths, chunks, think, policy, seed, horizon):
    rnd = random.Random(seed)
    qp_path = [[rnd.randrange(paths) for _ in range(QPS)]
               for _ in range(SENDERS)]
    qp_seen = [[0] * QPS for _ in range(SENDERS)]
    turn = [0] * SENDERS
    queued = [0] * paths
    old = [0] * paths       # stale: the queues N / K ago
    history = collections.deque()
    free_at = [0.0] * paths
    served = 0.0
    sends = [(rnd.random(), i % SENDERS) for i in range(chunks)]
    heapq.heapify(sends)
    leaves = []   # (time, path): a chunk leaves its queue
    samples = []  # (time, sender, qp, queue found): a chunk delivered
    now = 0.0
    while sends:
        now, sender = heapq.heappop(sends)
        if now > horizon:
            break
        while leaves and leaves[0][0] <= now:
            queued[heapq.heappop(leaves)[1]] -= 1
        while samples and samples[0][0] <= now:
            _, s, q, found = heapq.heappop(samples)
            qp_seen[s][q] = found
        while history and history[0][0] <= now - chunks / paths:
            old = history.popleft()[1]
        qp = rnd.randrange(QPS)
        a, b = rnd.randrange(paths), rnd.randrange(paths)
        if policy == "rr":
            qp = turn[sender]
            turn[sender] = (turn[sender] + 1) % QPS
        elif policy == "qp":
            qp = better(qp, rnd.randrange(QPS), qp_seen[sender])
        path = qp_path[sender][qp]
        if policy == "stale":
            path = better(a, b, old)
        elif policy == "p2c":
            path = better(a, b, queued)
        elif policy == "jsq":
            least = min(queued)
            path = rnd.choice([p for p in range(paths)
                               if queued[p] == least])
        history.append((now, list(queued)))
        queued[path] += 1
        free_at[path] = max(now, free_at[path]) + 1.0
        served += 1.0
        heapq.heappush(leaves, (free_at[path], path))
        heapq.heappush(samples, (free_at[path], sender, qp,
                                 queued[path] - 1))
        back = free_at[path] + (rnd.expovariate(1.0 / think) if think else 0)
        heapq.heappush(sends, (back, sender))
    return served / (paths * max(now, free_at[0], 1.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-z", type=float, default=0.0, help="mean pause")
    ap.add_argument("-s", type=int, default=1, help="seed")
    ap.add_argument("-t", type=float, default=20000.0, help="time units")
    args = ap.parse_args()
    print("seed %d, pause %g" % (args.s, args.z))
    for paths in (1, 2, 4, 8):
        for chunks in (8, 16, 32, 64):
            util = [simulate(paths, chunks, args.z, pol, args.s, args.t)
                    for pol in POLICIES]
            print("K %d N %2d: %s; 1-(K-1)/(N+K-1) %.2f" %
                  (paths, chunks,
                   " ".join("%s %.2f" % pu for pu in zip(POLICIES, util)),
                   1 - (paths - 1) / (chunks + paths - 1)))


if __name__ == "__main__":
    main()
