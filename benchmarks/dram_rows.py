"""How the DRAM reads of the sampled SGEMM predictions fall on DRAM banks and rows.

Runs the sampled prediction of sgemm_64 / sgemm_128 (gtx980_oc, the L2 the launch left) on the
reference core, records every DRAM read piece (its channel, the cycle it starts on the channel,
its missed sectors), and prints, per size, for GDDR5 banks of ``--row-bytes`` rows:

* the row-buffer hit rate of each channel's read stream in the order the channel serves it, under
  an open-row policy (a row stays open until another row of its bank is opened);
* the bytes read per row activation;
* the delay a bank-aware replay of each channel's stream adds (activations need tRP + tRCD after
  the bank's previous activation has lasted tRC; at most 4 activations per tFAW per channel): the
  cycles the replay takes over those the model's bus-only channel took.

The GDDR5 figures (defaults of :func:`analyse`) are those of a 7 Gbps 4 Gb x32 device, the GTX 980's
kind, from Ramulator's GDDR5 standard (Kim, Yang, Mutlu, IEEE CAL 2015; CMU-SAFARI/ramulator
src/GDDR5.h, speed GDDR5_7000 at tCK = 1/1.75 GHz, organisation GDDR5_4Gb_x32): 16 banks (4 groups of
4), 2 KB rows, tRP = tRCD = 21 tCK = 12 ns, tRC = 70 tCK = 40 ns, tFAW = 41 tCK = 23.4 ns; kept in ns at
the 8 Gbps of gtx980_oc (a choice). tRRD and the bank groups' tCCDL are left out (each would only add
to an activation-bound stream, which these streams are not). The address map is a choice (the
GPU's is not published): the channel-local granule is the 256-byte granule number over the
channels; bank and row above the row's columns, the bank optionally XORed with the row's low bits.
The replay is open-loop: the requests keep the cycles the model gave them (first come, first served
per channel), so it bounds what banks and rows would add to the model's own stream.

Usage: python benchmarks/dram_rows.py [--sizes 2048,4096,8192] [--workload sgemm_64]
"""
import argparse
import collections
import itertools
import os
import sys
import time

os.environ["MAXSIM_CORE"] = "python"

import numpy as np  # noqa: E402

from maxsim.arch.config import load_config  # noqa: E402
from maxsim.timing import memory_system as msm  # noqa: E402

_SERIAL = itertools.count()  # a number for each memory system logged (id() may be reused)
LOG = []  # (memory system number, channel, service start, nbytes, first missed sector address, sectors)

_orig_read = msm.MemorySystem.read


def _logged_read(self, now, sectors, sm=0):
    if isinstance(sectors, np.ndarray):
        sectors = sectors.tolist()
    if len(sectors) == 0:
        return _orig_read(self, now, sectors, sm)
    l2 = self.l2
    ls, ss = l2._line_shift, self._sector_shift
    pieces = []
    for s, (count, lines) in self._by_slice(sectors).items():
        miss = []
        for ln, m, st in lines:
            e = st.get(ln)
            for i in msm._BITS[m]:
                if e is None or e[i] is None:
                    miss.append((ln << ls) + (i << ss))
        if miss:
            pieces.append((s, miss))
    nd = len(self._dram_delays)
    done = _orig_read(self, now, sectors, sm)
    delays = self._dram_delays[nd:]
    if len(delays) == len(pieces):
        for (s, miss), d in zip(pieces, delays):
            LOG.append((self.__dict__.setdefault("_log_serial", next(_SERIAL)), self.channel_of_slice[s], float(now) + d, len(miss) * self.sector, min(miss),
                        tuple(miss)))
    return done


msm.MemorySystem.read = _logged_read


def bank_row(addr, channels, row_bytes, banks, granule=256, xor=True):
    """A choice of address map: the channel-local granule (the global granule number over the
    channels), its row of ``row_bytes`` and bank; ``xor``: the bank XOR the low bits of the row."""
    local = (addr // granule) // channels
    per_row = row_bytes // granule
    unit = local // per_row
    bank = unit % banks
    row = unit // banks
    if xor:
        bank ^= row % banks
    return bank, row


def analyse(log, cfg, row_bytes=2048, banks=16, t_rp_rcd_ns=24.0, t_rc_ns=40.0, t_faw_ns=23.4, xor=True):
    f = cfg.gpu.core_clock_mhz / 1e3  # core cycles per ns
    rpcd, trc, tfaw = t_rp_rcd_ns * f, t_rc_ns * f, t_faw_ns * f
    channels = cfg.dram.channels
    bpc = cfg.dram_bytes_per_clk / channels
    by = collections.defaultdict(list)
    for ms, ch, t, nb, a, miss in log:
        by[ms, ch].append((t, nb, a, miss))
    hits = acts = 0
    nbytes = 0
    busy = replay = 0.0
    for key, lst in by.items():
        lst.sort()
        open_row = {}
        last_act = collections.defaultdict(lambda: -1e18)
        acts_t = collections.deque()
        bus_free = -1e18
        start0 = lst[0][0]
        for t, nb, a, miss in lst:
            rows = []
            for x in miss:
                br = bank_row(x, channels, row_bytes, banks, xor=xor)
                if not rows or rows[-1] != br:
                    rows.append(br)
            ready = t
            for b, r in rows:
                if open_row.get(b) == r:
                    hits += 1
                    continue
                acts += 1
                at = max(t, last_act[b] + trc)
                if len(acts_t) >= 4:
                    at = max(at, acts_t[-4] + tfaw)
                acts_t.append(at)
                if len(acts_t) > 8:
                    acts_t.popleft()
                last_act[b] = at
                open_row[b] = r
                ready = max(ready, at + rpcd)
            s = max(ready, bus_free)
            bus_free = s + nb / bpc
            nbytes += nb
        busy += sum(nb for _, nb, _, _ in lst) / bpc
        end_model = lst[-1][0] + lst[-1][1] / bpc
        replay += (bus_free - start0) - (end_model - start0)
    n_rows = hits + acts
    return {"row_hit_rate": hits / max(n_rows, 1), "bytes_per_activation": nbytes / max(acts, 1),
            "pieces": len(log), "extra_cycles_share": replay / max(busy, 1.0)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2048,4096,8192")
    ap.add_argument("--workload", default="sgemm_64")
    ap.add_argument("--config", default="gtx980_oc")
    ap.add_argument("--row-bytes", type=int, default=2048, help="GDDR5 4 Gb x32 device: 2 KB rows (the "
                    "last line of each size also shows rows of half that)")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from workloads.compare import _predict_point
    cfg = load_config(args.config)
    print(f"{args.workload} on {cfg.name}, rows of {args.row_bytes} B, 16 banks (reference core)")
    for n in [int(x) for x in args.sizes.split(",")]:
        LOG.clear()
        t0 = time.time()
        p = _predict_point(cfg, args.workload, None, n, l2_start="previous")
        for row_bytes, xor in ((args.row_bytes, False), (args.row_bytes, True), (args.row_bytes // 2, True)):
            r = analyse(LOG, cfg, row_bytes=row_bytes, xor=xor)
            print(f"N={n:5d} GFLOPS {p['gflops']:7.0f}  rows {row_bytes} B, bank map {'xor ' if xor else 'flat'}  "
                  f"pieces {r['pieces']:7d}  "
                  f"row hits {100 * r['row_hit_rate']:5.1f}%  bytes/activation {r['bytes_per_activation']:6.0f}  "
                  f"replay extra {100 * r['extra_cycles_share']:+6.1f}% of bus time  ({time.time() - t0:.0f} s)",
                  flush=True)


if __name__ == "__main__":
    main()
