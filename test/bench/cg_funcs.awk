# Sourced by uccl_callgrind.sh (awk -f): one callgrind output (events: Ir,
# positions: line, callgrind's name compression) in, one line per function
# of the objects matching -v objs (a regular expression on the object's
# file name) out:
#
#   OBJECT <tab> FUNCTION <tab> SELF <tab> CALLS <tab> TIMED_SELF
#
# TIMED_SELF is the part of the function's own instructions that the
# functions given in -v roots (space separated) called for: those run per
# unit of wall time (timers, upkeep), so their cost grows with how long
# the run took, not with the work it did. A function's share is the
# callers' shares weighted by the calls they made (a root's is all),
# spread through the call graph, but not into the functions given in -v
# barriers (what they do is work or polling whoever calls them, e.g. a
# progress pass a timer runs); SELF and CALLS are what is left. A last
# line "*  timer_calls  0  N  0" counts the calls into the roots (how
# often a caller took its branch to a timer).

function name(kind, v,    id, rest) {
    if (match(v, /^\([0-9]+\)/)) {
        id   = substr(v, 2, RLENGTH - 2)
        rest = substr(v, RLENGTH + 1)
        sub(/^ /, "", rest)
        if (rest != "") {
            names[kind, id] = rest
        }
        return names[kind, id]
    }
    return v
}

function base(path) {
    sub(/.*\//, "", path)
    return path
}

BEGIN {
    FS = "\n"
    nroots = split(roots, r, " ")
    for (i = 1; i <= nroots; ++i) {
        is_root[r[i]] = 1
    }
    nbarriers = split(barriers, r, " ")
    for (i = 1; i <= nbarriers; ++i) {
        is_barrier[r[i]] = 1
    }
}

# the cost line after calls=: the call's inclusive cost, not self cost
call_pending {
    call_pending = 0
    next
}

/^[0-9+*-]/ {
    n = split($0, t, " ")
    if (n > 1) {
        self[cur] += t[2]
    }
    next
}

/^ob=/  { ob = base(name("ob", substr($0, 4))); next }
/^cob=/ { cob = base(name("ob", substr($0, 5))); next }
/^fn=/ {
    cur = ob "\t" name("fn", substr($0, 4))
    fn_of[cur] = 1
    cob = ""
    next
}
/^cfn=/ { cfn = name("fn", substr($0, 5)); next }
/^(fl|fi|fe|cfi|cfl)=/ {
    eq = index($0, "=")
    name("fl", substr($0, eq + 1))
    next
}
/^calls=/ {
    split(substr($0, 7), t, " ")
    callee = ((cob != "") ? cob : ob) "\t" cfn
    calls[callee] += t[1]
    edge[cur, callee] += t[1]
    fn_of[callee] = 1
    cob = ""
    call_pending = 1
    next
}

END {
    for (f in fn_of) {
        split(f, p, "\t")
        share[f] = (p[2] in is_root) ? 1 : 0
    }
    # the graph is nearly acyclic and shallow: a few rounds settle it
    for (round = 0; round < 32; ++round) {
        delete sum
        for (e in edge) {
            split(e, p, SUBSEP)
            sum[p[2]] += edge[e] * share[p[1]]
        }
        for (f in fn_of) {
            split(f, p, "\t")
            if (!(p[2] in is_root) && !(p[2] in is_barrier) &&
                (calls[f] > 0)) {
                share[f] = sum[f] / calls[f]
            }
        }
    }
    ticks = 0
    for (f in fn_of) {
        split(f, p, "\t")
        if (p[2] in is_root) {
            ticks += calls[f]
        }
        if (p[1] !~ objs) {
            continue
        }
        printf "%s\t%.0f\t%.0f\t%.0f\n", f, self[f] * (1 - share[f]),
               calls[f] * (1 - share[f]), self[f] * share[f]
    }
    printf "*\ttimer_calls\t0\t%.0f\t0\n", ticks
}
