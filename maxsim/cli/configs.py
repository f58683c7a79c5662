"""``maxsim configs``: the shipped architecture configs."""

from __future__ import annotations

import json


def add_parser(sub):
    c = sub.add_parser("configs", help="list the shipped architecture configs",
                       description="List the architecture configs shipped with maxsim (give a name to "
                                   "`maxsim run --gpu`, or the path of your own TOML file that "
                                   "inherits from one of them).")
    c.add_argument("--json", action="store_true", help="print a JSON object name -> description")
    c.set_defaults(handler=command)


def command(args):
    from ..arch.config import list_configs
    items = list_configs()
    if args.json:
        print(json.dumps(dict(items), indent=1))
    else:
        for name, desc in items:
            print(f"{name:12s} {desc}")
    return 0
