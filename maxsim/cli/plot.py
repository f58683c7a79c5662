"""``maxsim plot``: figures to PNG, SVG or PDF files."""

from __future__ import annotations

from .common import WORKLOADS, size


def add_parser(sub):
    pl = sub.add_parser("plot", help="draw figures (PNG, SVG or PDF)",
                        description="Draw a figure to a file; the format follows the file extension "
                                    "(.png, .svg, .pdf).")
    psub = pl.add_subparsers(dest="plot", metavar="FIGURE", required=True)
    pc = psub.add_parser(
        "conflicts", help="register bank conflicts and reuse of every SGEMM variant, and the C bank maps",
        description="Register bank conflicts and operand reuse of the generated SGEMM for each FFMA "
                    "traversal (raster, zigzag, swirl) and C register map (maxas, naive), per k-step "
                    "and over the whole kernel, from the static analysis; and the 8x8 register-bank "
                    "map of a thread's C block for both register maps.")
    pc.add_argument("-o", "--output", metavar="FILE", default="conflicts.png",
                    help="file to write: .png, .svg or .pdf (default conflicts.png)")
    pc.add_argument("--kernel", choices=WORKLOADS, default="sgemm_64",
                    help="which generated SGEMM to analyze (default sgemm_64)")
    pc.add_argument("--dpi", type=size, default=100, help="resolution of a PNG (default 100)")
    pl.set_defaults(handler=command)


def command(args):
    from workloads.sgemm.figures import conflicts_figure

    from ..report.plots import check_output_path, save_figure
    check_output_path(args.output)  # before the work
    fig = {"conflicts": conflicts_figure}[args.plot](args.kernel)
    print(f"wrote {save_figure(fig, args.output, dpi=args.dpi)}")
    return 0
