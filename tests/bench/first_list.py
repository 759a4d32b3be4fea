#!/usr/bin/env python3
"""Time from `initialize` to a `tools/list` holding every bundled tool, on an
empty compile cache, with `airlock serve --stdio`.

    python3 tests/bench/first_list.py AIRLOCK_BINARY TOOLS_DIR [RUNS]

Each run starts the server with AIRLOCK_CACHE_DIR pointing at a new empty
directory, in an empty working directory (no airlock.toml), sends
`initialize`, then `tools/list` until the list names every *.wasm in
TOOLS_DIR; prints the milliseconds of each run and their median.
"""
import json, os, pathlib, shutil, statistics, subprocess, sys, tempfile, time

binary, tools_dir = sys.argv[1], pathlib.Path(sys.argv[2])
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
want = sorted(p.stem for p in tools_dir.glob("*.wasm"))


def one():
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        # SEED_CACHE: files copied into the cache first (e.g. only the
        # schema validator's artifact, to see what the tools alone take).
        if os.environ.get("SEED_CACHE"):
            shutil.copytree(os.environ["SEED_CACHE"], os.path.join(tmp, "cache"))
        env = dict(os.environ, AIRLOCK_CACHE_DIR=os.path.join(tmp, "cache"), AIRLOCK_TOOLS_DIR=str(tools_dir))
        env.pop("AIRLOCK_CONFIG", None)
        server = subprocess.Popen([binary, "serve", "--stdio"], cwd=tmp, env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        ids = iter(range(1, 10**6))

        def request(method, params):
            rid = next(ids)
            server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n")
            server.stdin.flush()
            while True:
                message = json.loads(server.stdout.readline())
                if message.get("id") == rid:
                    return message

        began = time.monotonic()
        request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "bench", "version": "0"}})
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        server.stdin.flush()
        while True:
            names = sorted(t["name"] for t in request("tools/list", {})["result"]["tools"])
            if names == want:
                break
        took = (time.monotonic() - began) * 1000
        server.kill()
        server.wait()
        # Compiler processes the server started go on in their own process
        # groups, writing into this run's cache: wait for them, so that the
        # next run has the machine to itself.
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and subprocess.run(["pgrep", "-f", tmp], capture_output=True).returncode == 0:
            time.sleep(0.5)
        return took


times = [one() for _ in range(runs)]
print(" ".join(f"{t:.0f}" for t in times), f"median {statistics.median(times):.0f} ms ({len(want)} tools)")
