#!/usr/bin/env python3
"""Run one step of `make test` with an overall time bound.

    python3 tests/step.py NAME SECONDS COMMAND [ARG...]

The command runs in a process group of its own, with this script as the
subreaper of everything it starts (a server that a test spawned and lost is
re-parented here, not to init), and its output (stdout and stderr, merged)
is passed through as it comes. Then:

- the command ends in time: every process it left behind is named, killed,
  and the step fails ("a test that starts a server closes it"); otherwise
  the step ends with the command's status;
- the bound passes first: the step fails with its name, the processes still
  running (the tree shows what hung: a test runner, the server it waits on)
  and the command's last lines of output; every one of them is killed
  (SIGTERM, then SIGKILL), so nothing can hang the run.

Exit status: the command's; 124 when the bound passed; 125 when the command
left processes running; 126 when it could not start.
"""

from __future__ import annotations

import collections
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

PR_SET_CHILD_SUBREAPER = 36
# Lines of output kept for the report of a step that hung.
TAIL_LINES = 60
# How long processes get to leave after SIGTERM before SIGKILL.
TERM_GRACE_S = 5.0


def descendants(root: int) -> list[tuple[int, int, str]]:
    """(pid, parent pid, command line) of every live process under `root`."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if fields[0] == b"Z":
                continue
            parents[pid] = int(fields[1])
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                commands[pid] = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError, ValueError):
            continue
    found: list[tuple[int, int, str]] = []
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent:
                found.append((pid, ppid, commands.get(pid, "?")))
                frontier.append(pid)
    return found


def tree(processes: list[tuple[int, int, str]]) -> str:
    return "\n".join(f"  pid {pid} (parent {ppid}): {command[:300]}" for pid, ppid, command in processes)


def reap() -> None:
    """Collect every exited child (re-parented orphans included)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_all(pids: list[int]) -> None:
    """SIGTERM, a grace period, then SIGKILL for whatever is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + TERM_GRACE_S
        while sig == signal.SIGTERM and time.monotonic() < deadline:
            reap()
            if not descendants(os.getpid()):
                return
            time.sleep(0.1)
        pids = [pid for pid, _, _ in descendants(os.getpid())]
    reap()


def main() -> int:
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    name, bound, command = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    started = time.monotonic()
    try:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, close_fds=False)
    except OSError as error:
        print(f"step {name}: could not start {command[0]}: {error}", file=sys.stderr)
        return 126
    tail: collections.deque[bytes] = collections.deque(maxlen=TAIL_LINES)

    def pump() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            tail.append(line)
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()

    def interrupted(signum: int, _frame: object) -> None:
        # make was interrupted: take the step's processes down with it.
        kill_all([pid for pid, _, _ in descendants(os.getpid())])
        print(f"step {name}: interrupted ({signal.Signals(signum).name})", file=sys.stderr, flush=True)
        os._exit(128 + signum)

    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    try:
        status = child.wait(timeout=bound)
    except subprocess.TimeoutExpired:
        running = descendants(os.getpid())
        print(f"\nstep {name} HUNG: still running after {bound:.0f} s; the processes it had running:\n{tree(running)}", flush=True)
        kill_all([pid for pid, _, _ in running])
        reader.join(timeout=10)
        last = b"".join(tail).decode(errors="replace")
        print(f"step {name} FAILED (timed out after {bound:.0f} s); its last {TAIL_LINES} lines of output were:\n{last}", flush=True)
        return 124
    # A server told to stop just before the command ended may still be on
    # its way out: it gets a moment before it counts as left behind.
    settle = time.monotonic() + TERM_GRACE_S
    while (left := descendants(os.getpid())) and time.monotonic() < settle:
        reap()
        time.sleep(0.1)
    if left:
        kill_all([pid for pid, _, _ in left])
    reader.join(timeout=10)
    elapsed = time.monotonic() - started
    if left:
        print(f"step {name} FAILED: it ended (status {status}) but left processes running, now killed:\n{tree(left)}", flush=True)
        return status or 125
    print(f"step {name}: {'ok' if status == 0 else f'FAILED (status {status})'} in {elapsed:.0f} s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
