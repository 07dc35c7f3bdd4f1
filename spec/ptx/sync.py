"""The PTX synchronisation ops pipeproof reads, each to the raw event the shared extractor
(spec/mojo/parse.py) knows, with the PTX ISA section each follows (docs/ptx.md has the table).

Every op is here once: the mbarrier family (9.7.13.15), the bulk and tensor copies that
complete a transaction (9.7.9.25, 9.7.9.27), tcgen05.commit (9.7.16.12), cluster launch
control (9.7.12.x), named and cluster barriers (9.7.13.1, 9.7.13.4), mapa / getctarank
(9.7.9.22, 9.7.9.23), elect.sync, vote and shfl.sync; and the ops that have no meaning for
the protocol (fences, wgmma groups, setmaxnreg, tcgen05.mma's data path), read and passed.
Anything else that synchronises is refused in one line.
"""
from __future__ import annotations

from pipeproof.spec.mojo.interp import T, taint
from pipeproof.spec.mojo.llvm import IRError, OPAQUE, Ptr


def barrier_addr(th, regs, text, inst):
    a = th.address(regs, text, inst)
    if isinstance(a, tuple):
        raise IRError("an mbarrier in the parameter space", inst)
    return a


def sync_op(th, regs, inst, stack, words, a):
    op = inst.opcode
    w0 = words[0]
    if w0 == "mbarrier":
        return mbarrier(th, regs, inst, stack, words, a)
    if op.startswith("cp.async.bulk.tensor") or op.startswith("cp.async.bulk.shared") \
            or op.startswith("cp.async.bulk.global") or op.startswith("cp.async.bulk.prefetch") \
            or op.startswith("cp.async.bulk.commit_group") or op.startswith("cp.async.bulk.wait_group"):
        return bulk_copy(th, regs, inst, stack, words, a)
    if op.startswith("cp.async.commit_group") or op.startswith("cp.async.wait_group") \
            or op.startswith("cp.async.wait_all"):
        return None   # cp.async groups: waited by the thread itself, no barrier
    if op.startswith("cp.async.mbarrier.arrive"):
        raise IRError("cp.async.mbarrier.arrive (an arrival when a thread's cp.async copies land) "
                      "is not read yet", inst)
    if op.startswith("cp.async.ca") or op.startswith("cp.async.cg"):
        return None   # a thread's own asynchronous copy, waited with cp.async.wait_group
    if op.startswith("tcgen05.commit"):
        bar = barrier_addr(th, regs, a[0], inst)
        mask = th.value(regs, a[1], inst) if "multicast::cluster" in op and len(a) > 1 else None
        th.record("commit", inst, stack, addr=bar, extra=mask)
        return None
    if w0 == "tcgen05":
        if words[1] == "mma":
            th.record("mma", inst, stack)
        elif a and not a[0].startswith("["):
            th.set(regs, a[0], OPAQUE)
        return None
    if op.startswith("clusterlaunchcontrol.try_cancel"):
        resp, bar = th.address(regs, a[0], inst), barrier_addr(th, regs, a[1], inst)
        th.record("copy", inst, stack, addr=resp, extra=(bar, "all" if "multicast" in op else None, "clc"))
        return None
    if op.startswith("clusterlaunchcontrol.query_cancel"):
        return query_cancel(th, regs, inst, stack, words, a)
    if w0 in ("bar", "barrier") and len(words) > 1 and words[1] == "cluster":
        if th.ncta == 1:
            return None   # a one-CTA cluster: the CTA-wide barrier after init orders nothing modelled
        th.record("csync", inst, stack, addr=words[2], value=th.ncta)
        return None
    if w0 in ("bar", "barrier"):
        kind = words[1]
        if kind == "warp":
            return None   # bar.warp.sync: the warp's own lanes
        bid = th.value(regs, a[0], inst) if a else 0
        cnt = th.value(regs, a[1], inst) if len(a) > 1 else th.block_dim
        if kind in ("sync", "red") or kind.isdigit():
            if kind == "red":
                th.set(regs, a[0], OPAQUE)
                bid = th.value(regs, a[1], inst)
                cnt = th.value(regs, a[2], inst) if len(a) > 3 else th.block_dim
            th.record("sync", inst, stack, addr=bid, value=cnt)
            th.syncs[bid] = th.syncs.get(bid, 0) + 1
            return None
        if kind == "arrive":
            th.record("bar_arrive", inst, stack, addr=bid, value=cnt)
            th.syncs[bid] = th.syncs.get(bid, 0) + 1
            return None
        raise IRError(f"{op}: a barrier form pipeproof does not read", inst)
    if w0 == "elect":
        # elect.sync d|p, membermask: one lane (the lowest active: lane 0 of a full warp)
        th.set(regs, a[0], [0, T(int(th.lane == 0))])
        return None
    if w0 == "mapa":
        x, c = th.value(regs, a[1], inst), th.value(regs, a[2], inst)
        r = Ptr(x.base, x.offset, c) if isinstance(x, Ptr) and isinstance(c, int) else OPAQUE
        th.set(regs, a[0], r)
        return None
    if w0 == "getctarank":
        x = th.value(regs, a[1], inst)
        th.set(regs, a[0], (x.cta if x.cta is not None else th.cta) if isinstance(x, Ptr) else OPAQUE)
        return None
    if w0 == "vote":
        return vote(th, regs, inst, words, a)
    if w0 == "shfl":
        return shfl(th, regs, inst, words, a)
    if w0 in ("fence", "membar", "wgmma", "setmaxnreg", "griddepcontrol"):
        if w0 == "wgmma" and a and not a[0].startswith("["):
            th.set(regs, a[0], OPAQUE)
        return None
    if w0 == "st" or w0 == "red":
        if "async" in words and any(w.startswith("mbarrier") for w in words):
            raise IRError(f"{op}: a store that completes a transaction on an mbarrier is not read "
                          f"yet", inst)
        if w0 == "red":
            return None
        return None
    raise IRError(f"{op}: a synchronisation op pipeproof does not read yet", inst)


def mbarrier(th, regs, inst, stack, words, a):
    kind = words[1]
    op = inst.opcode
    if kind == "init":
        th.record("init", inst, stack, addr=barrier_addr(th, regs, a[0], inst),
                  value=th.value(regs, a[1], inst))
        return None
    if kind in ("inval", "pending_count"):
        if kind == "pending_count":
            th.set(regs, a[0], OPAQUE)
        return None
    if kind in ("try_wait", "test_wait"):
        if "parity" not in words:
            raise IRError(f"{op}: a wait on an arrive's state token (not .parity) is not read yet",
                          inst)
        bar = barrier_addr(th, regs, a[1], inst)
        parity = th.value(regs, a[2], inst)
        key = th.loop_stack[-1][0] if th.loop_stack else None
        if key is None or key[-1] not in th.spin_loops.get(key[-2], ()):
            # a peek (no retry loop around it: CUTLASS's consumer_try_wait, the DSL's
            # prefetched try_wait, `if (!test_wait) wait`): taken as not ready, so the kernel
            # goes on to its blocking wait, which is recorded where it blocks
            th.set(regs, a[0], 0)
            return None
        th.record("wait", inst, stack, addr=bar, value=parity)   # (its loop is marked spin on entry)
        th.set(regs, a[0], 1)   # taken as passed: whether it would is the model's question
        return None
    if kind == "arrive" and "expect_tx" in words:
        bar = barrier_addr(th, regs, a[1], inst)
        th.record("expect", inst, stack, addr=bar, value=th.value(regs, a[2], inst))
        th.set(regs, a[0], OPAQUE)
        return None
    if kind == "arrive" or kind == "arrive_drop":
        if kind == "arrive_drop":
            raise IRError(f"{op}: arrive_drop (an arrival that lowers the expected count) is not "
                          f"read yet", inst)
        bar = barrier_addr(th, regs, a[1], inst)
        count = th.value(regs, a[2], inst) if len(a) > 2 else 1
        if "noComplete" in words:
            raise IRError(f"{op}: an arrive that must not complete the phase is not read yet", inst)
        th.record("arrive", inst, stack, addr=bar, value=count)
        th.set(regs, a[0], OPAQUE)
        return None
    if kind == "expect_tx":   # bytes announced without an arrival (docs/rules.md expect_bytes)
        bar = barrier_addr(th, regs, a[0], inst)
        th.record("expect", inst, stack, addr=bar, value=th.value(regs, a[1], inst), extra="bare")
        return None
    if kind == "complete_tx":
        raise IRError(f"{op}: a transaction count completed by a thread (mbarrier.complete_tx) is "
                      f"not expressible yet", inst)
    raise IRError(f"{op}: an mbarrier op pipeproof does not read", inst)


def bulk_copy(th, regs, inst, stack, words, a):
    op = inst.opcode
    if "commit_group" in words or "wait_group" in words or "prefetch" in op:
        return None   # bulk store groups: no barrier, no ring slot
    if not any(w.startswith("mbarrier::complete_tx") for w in words):
        return None   # a store to global (shared -> global): no barrier
    # load forms: [dst], [src | tmap, {coords}], (size,) [mbar] (, mask)(, cache hint)
    dst = th.address(regs, a[0], inst)
    bars = [x for x in a[2:] if x.strip().startswith("[")]
    if not bars:
        raise IRError(f"{op}: no mbarrier operand found", inst)
    bar = barrier_addr(th, regs, bars[0], inst)
    mask = None
    if any(w.startswith("multicast") for w in words):
        after = a[a.index(bars[0]) + 1:]
        mask = th.value(regs, after[0], inst) if after else OPAQUE
    th.record("copy", inst, stack, addr=dst, extra=(bar, mask))
    return None


def query_cancel(th, regs, inst, stack, words, a):
    """clusterlaunchcontrol.query_cancel: the response decides whether the tile loop goes on;
    its n-th answer says "cancelled" (another tile) for n < tiles - 1 (--tiles)."""
    if th.tiles is None:
        raise IRError("the kernel asks the hardware for its next work tile "
                      "(clusterlaunchcontrol.query_cancel): give the work tiles per CTA with "
                      "--tiles N", inst)
    if "is_canceled" in words:
        n = th.clc_queries
        th.clc_queries += 1
        th.record("load", inst, stack, addr=th.value(regs, a[1], inst), extra="clc")
        th.set(regs, a[0], int(n < th.tiles - 1))
        return None
    th.set(regs, a[0], [th.clc_queries, 0, 0, 0] if a[0].startswith("{") else th.clc_queries)
    return None


def vote(th, regs, inst, words, a):
    p = th.value(regs, a[1], inst)
    uniform = isinstance(p, int) and not isinstance(p, T)
    if "ballot" in words:
        th.set(regs, a[0], (0xFFFFFFFF if p & 1 else 0) if uniform else OPAQUE)
    elif "uni" in words:
        th.set(regs, a[0], 1 if uniform else OPAQUE)
    else:   # any, all
        th.set(regs, a[0], p & 1 if uniform else OPAQUE)
    return None


def shfl(th, regs, inst, words, a):
    """shfl.sync.idx from lane 0 is a warp-uniform broadcast (CUTLASS's and Triton's warp
    index, the DSL's shared-memory base): every lane reads what lane 0 had there, which lane 0's
    run (always the first of its warp) left in `th.lane0` at the same dynamic instance. A
    uniform value reads as itself; anything else is unknown."""
    dest = a[0].split("|")[0]
    x, src = th.value(regs, a[1], inst), th.value(regs, a[2], inst)
    key = (th.tid // 32, inst.index, th.shfls.get(inst.index, 0))
    th.shfls[inst.index] = key[2] + 1
    if "idx" in words and isinstance(src, int) and not isinstance(src, T) and src & 31 == 0:
        if th.lane == 0:
            th.lane0[key] = int(x) if isinstance(x, int) else x
        th.set(regs, dest, th.lane0.get(key, OPAQUE))
    elif isinstance(x, int) and not isinstance(x, T):
        th.set(regs, dest, x)
    else:
        th.set(regs, dest, OPAQUE)
    if "|" in a[0]:
        th.set(regs, a[0].split("|")[1], taint(1, x) if isinstance(x, int) else OPAQUE)
    return None
