"""`make bench-sdk`: per SDK, the example tool's component size, its cold
load (compile with an empty cache, then read its metadata) and its per-call
latency, all through the `airlock` binary. Prints a Markdown section for
BENCHMARKS.md.

Per-call latency is the round trip of one MCP `tools/call` over
`airlock serve --stdio` (one call at a time, a fresh instance per call, all
limits on, audit off), so it includes the MCP transport (about 0.25 ms for
`echo`, see item 3); the difference between languages is the component's
instantiation and run.

Usage: python3 tests/sdk/bench.py AIRLOCK EXAMPLES_DIR [CALLS]
"""

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ARGS = {"value": 5, "from_unit": "km", "to_unit": "mi"}
LANGS = [("Rust", "convert_units_rust"), ("Python", "convert_units_python"), ("JavaScript", "convert_units_js")]
# Generous bound for one component to compile and load.
LOAD_TIMEOUT_S = 600


def config(dir_, name, component):
    path = os.path.join(dir_, "airlock.toml")
    with open(path, "w") as f:
        f.write(f'builtin_settings = false\n[tools.{name}]\ncomponent = "{component}"\nside_effect = false\n')
    return path


def cold_load_ms(airlock, name, component):
    """Wall time of `airlock tools` with an empty cache: start, compile, metadata."""
    with tempfile.TemporaryDirectory() as dir_:
        cfg = config(dir_, name, component)
        env = {**os.environ, "AIRLOCK_CACHE_DIR": os.path.join(dir_, "cache")}
        start = time.perf_counter()
        subprocess.run([airlock, "--config", cfg, "tools"], env=env, check=True, stdout=subprocess.DEVNULL, timeout=LOAD_TIMEOUT_S)
        cold = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        subprocess.run([airlock, "--config", cfg, "tools"], env=env, check=True, stdout=subprocess.DEVNULL, timeout=LOAD_TIMEOUT_S)
        warm = (time.perf_counter() - start) * 1000
        return cold, warm


class Client:
    def __init__(self, airlock, cfg, env):
        self.proc = subprocess.Popen([airlock, "--config", cfg, "serve", "--stdio"], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.next_id = 0

    def request(self, method, params):
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            reply = json.loads(self.proc.stdout.readline())
            if reply.get("id") == self.next_id:
                return reply

    def notify(self, method):
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
        self.proc.stdin.flush()

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def call_latency_us(airlock, name, component, calls):
    with tempfile.TemporaryDirectory() as dir_:
        cfg = config(dir_, name, component)
        env = {**os.environ, "AIRLOCK_CACHE_DIR": os.path.join(dir_, "cache")}
        subprocess.run([airlock, "--config", cfg, "tools"], env=env, check=True, stdout=subprocess.DEVNULL, timeout=LOAD_TIMEOUT_S)
        client = Client(airlock, cfg, env)
        client.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "bench", "version": "0"}})
        client.notify("notifications/initialized")
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while not any(t["name"] == name for t in client.request("tools/list", {})["result"]["tools"]):
            if time.monotonic() > deadline:
                raise SystemExit(f"{name} never appeared in tools/list")
            time.sleep(0.05)
        samples = []
        warmup = max(calls // 10, 1)
        for i in range(warmup + calls):
            start = time.perf_counter()
            reply = client.request("tools/call", {"name": name, "arguments": ARGS})
            elapsed = (time.perf_counter() - start) * 1e6
            if reply["result"].get("isError"):
                raise SystemExit(f"{name}: {reply}")
            if i >= warmup:
                samples.append(elapsed)
        client.close()
        samples.sort()
        return samples[len(samples) // 2], samples[min(len(samples) - 1, int(len(samples) * 0.99))], statistics.mean(samples)


def main():
    airlock, examples = sys.argv[1], sys.argv[2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    cores = os.cpu_count()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"Produced by `make bench-sdk` (`python3 tests/sdk/bench.py AIRLOCK EXAMPLES_DIR {calls}`), "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, {cores} cores; load average at start {load}.")
    print()
    print("| language | component | size | cold load: compile + metadata, ms | cached load, ms | per call p50 µs | p99 µs | mean µs |")
    print("|---|---|---|---|---|---|---|---|")
    for lang, name in LANGS:
        component = os.path.abspath(os.path.join(examples, f"{name}.wasm"))
        size = os.path.getsize(component)
        cold, warm = cold_load_ms(airlock, name, component)
        p50, p99, mean = call_latency_us(airlock, name, component, calls)
        print(f"| {lang} | `{name}.wasm` | {size / (1 << 20):.1f} MiB | {cold:.0f} | {warm:.0f} | {p50:.0f} | {p99:.0f} | {mean:.0f} |")


if __name__ == "__main__":
    main()
