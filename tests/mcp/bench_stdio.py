"""tools/call latency over stdio: the official Python SDK client and a raw
newline-delimited JSON-RPC client, N sequential `echo` calls each.

    AIRLOCK_BIN=target/release/airlock AIRLOCK_TOOLS_DIR=target/guests \
        .venv/bin/python tests/mcp/bench_stdio.py [-n 500]

Prints p50/p90/p99/max per client. The raw client shows the server's floor
(pipeline + sandbox + framing); the difference to the SDK is client overhead.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import BIN, CALL_TIMEOUT, server_env, stdio_params, write_config  # noqa: E402
from mcp import ClientSession, stdio_client  # noqa: E402
from rawclient import RawStdio  # noqa: E402

WARMUP = 20


def summary(name: str, samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] * 1e3

    stats = {"n": len(ordered), "p50": pct(50), "p90": pct(90), "p99": pct(99), "max": ordered[-1] * 1e3, "mean": statistics.fmean(ordered) * 1e3}
    print(f"{name:<12} n={stats['n']:<4} p50={stats['p50']:.3f} ms  p90={stats['p90']:.3f} ms  p99={stats['p99']:.3f} ms  max={stats['max']:.3f} ms  mean={stats['mean']:.3f} ms")
    return stats


async def bench_sdk(dir: Path, n: int) -> list[float]:
    setup = write_config(dir)
    samples = []
    with open(dir / "sdk-stderr.log", "w") as errlog:
        async with stdio_client(stdio_params(setup), errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT) as session:
                await session.initialize()
                for i in range(WARMUP + n):
                    t0 = time.perf_counter()
                    result = await session.call_tool("echo", {"text": f"call {i}"})
                    elapsed = time.perf_counter() - t0
                    assert not result.is_error
                    if i >= WARMUP:
                        samples.append(elapsed)
    return samples


def bench_raw(dir: Path, n: int) -> list[float]:
    setup = write_config(dir)
    samples = []
    command = [str(BIN), *setup.args(), "serve", "--stdio"]
    with RawStdio(command, server_env(), dir / "raw-stderr.log") as server:
        server.initialize()
        for i in range(WARMUP + n):
            t0 = time.perf_counter()
            reply = server.request("tools/call", {"name": "echo", "arguments": {"text": f"call {i}"}})
            elapsed = time.perf_counter() - t0
            assert reply["result"]["isError"] is False, reply
            if i >= WARMUP:
                samples.append(elapsed)
    return samples


def run(n: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        sdk = anyio.run(bench_sdk, Path(tmp), n)
        raw = bench_raw(Path(tmp), n)
    return {"sdk": summary("python-sdk", sdk), "raw": summary("raw-jsonrpc", raw)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=500, help="calls per client (after %d warm-up calls)" % WARMUP)
    run(parser.parse_args().n)


if __name__ == "__main__":
    main()
