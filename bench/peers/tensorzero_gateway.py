"""Starts TensorZero's Rust gateway, as its PyPI wheel ships it (inside the Python extension),
serving HTTP on a local port. Usage: tensorzero_gateway.py CONFIG.toml ADDR_FILE
Writes the gateway's base URL to ADDR_FILE and serves until killed."""

import signal
import sys

import tensorzero

gateway = tensorzero._start_http_gateway(
    config_file=sys.argv[1],
    clickhouse_url=None,
    postgres_url=None,
    valkey_url=None,
    async_setup=False,
)
with open(sys.argv[2], "w") as out:
    out.write(gateway.base_url)
signal.sigwait({signal.SIGTERM, signal.SIGINT})
gateway.close()
