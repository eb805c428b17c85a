"""`python -m sites [port] [seed]`: serve the demo sites until Ctrl-C."""

import sys

from sites import serve_sites


def main(argv: list[str]) -> None:
    """Parse the optional port and seed, then serve."""
    port = int(argv[0]) if argv else 8700
    seed = int(argv[1]) if len(argv) > 1 else 0
    servers = serve_sites(port=port, seed=seed)
    for name, url in servers.urls.items():
        print(f"{name:12s} {url}", flush=True)
    servers.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
