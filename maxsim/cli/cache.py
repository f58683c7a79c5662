"""``maxsim cache``: what maxsim's two caches hold (the compiled code of the simulator's cores and
the result cache of compare, validate and sweep), and emptying them."""

from __future__ import annotations

import json


def add_parser(sub):
    c = sub.add_parser("cache", help="show or empty the caches (compiled code, results)",
                       description="maxsim keeps two caches in its cache folder (the user's cache folder, "
                                   "on Linux ~/.cache/maxsim, or $MAXSIM_CACHE_DIR): the compiled code of "
                                   "the simulator's cores (numba/, a folder per maxsim version, source, "
                                   "numba, Python and CPU; older ones are pruned) and the results of "
                                   "compare, validate and sweep (results/). `info` shows what they hold, "
                                   "`clear` empties them (the next run compiles again).")
    csub = c.add_subparsers(dest="action", metavar="ACTION", required=True)
    i = csub.add_parser("info", help="the folders, entries and sizes of both caches",
                        description="Show the cache folder, the compiled code's entries (the one this "
                                    "maxsim uses marked) and the result cache's entries, with their sizes.")
    i.add_argument("--json", action="store_true", help="print one JSON object")
    i.set_defaults(handler=info)
    cl = csub.add_parser("clear", help="empty both caches (or one of them)",
                         description="Empty the compiled code's cache and the result cache (both unless "
                                     "one is chosen).")
    g = cl.add_mutually_exclusive_group()
    g.add_argument("--compiled", action="store_true", help="only the compiled code")
    g.add_argument("--results", action="store_true", help="only the result cache")
    cl.set_defaults(handler=clear)


def _mb(n):
    return f"{n / 1e6:.1f} MB"


def info(args):
    from ..cache import cache_info
    from ..jit import cache_key
    out = cache_info(cache_key())
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    comp, res = out["compiled"], out["results"]
    print(f"cache folder: {out['folder']}")
    print(f"compiled code: {comp['folder']}: {len(comp['entries'])} entr{'y' if len(comp['entries']) == 1 else 'ies'}, "
          f"{_mb(comp['bytes'])}")
    for e in comp["entries"]:
        mark = "  (this maxsim)" if e["in_use"] else ""
        print(f"  {e['key']}: {e['files']} files, {_mb(e['bytes'])}, last used {e['last_used']}{mark}")
    print(f"results: {res['folder']}: {res['entries']} entries, {_mb(res['bytes'])}")
    return 0


def clear(args):
    from ..cache import clear as clear_caches
    freed = clear_caches(compiled=not args.results, results=not args.compiled)
    for name, n in freed.items():
        what = "compiled code" if name == "compiled" else "results"
        print(f"cleared the {what}: {_mb(n)} freed")
    return 0
