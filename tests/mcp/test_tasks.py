"""MCP tasks (the io.modelcontextprotocol/tasks extension of 2026-07-28),
on the wire: the MCP Python SDK has no client for the extension yet, so
these tests speak JSON-RPC themselves, over streamable HTTP (stateless and
in a session) and stdio.

What they check: a task survives its client going away and is read after
it reconnects; `tasks/cancel` stops the running guest (a 60 s
`slow_compute` ends within its cancel, audited as cancelled); another
principal cannot see, answer or cancel it; a task over its principal's cap
is refused naming the key; a confirmation inside a task goes through
`input_required` and `tasks/update`, or waits for the person on Airlock's
approval page; clients that did not declare the extension, and clients of
the initialize-based revisions that declare it (the MCP Inspector does),
keep today's behaviour.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from conftest import BIN, OTHER_TOKEN, TEST_GUESTS, TOKEN, HttpServer, Setup, http_server, server_env, write_config
from passkeys import answer_on_page
from rawclient import MODERN, RawStdio, modern_meta

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
WITH_TASKS = {"extensions": {TASKS_EXTENSION: {}}}
WITH_TASKS_AND_FORMS = {"elicitation": {"form": {}}, "extensions": {TASKS_EXTENSION: {}}}
ACCEPT = {"confirm": {"action": "accept", "content": {"allow": True}}}
# Every wait for a task: generous, for a loaded machine.
DEADLINE_S = 120.0

TOOLS = f"""
[tools.slow_compute]
component = "{TEST_GUESTS / "conformance_slow.wasm"}"
side_effect = false
concurrency_safe = true
task = "optional"
timeout_ms = 5000
task_timeout_ms = 120000

[tools.failing_job]
component = "{TEST_GUESTS / "conformance_failing.wasm"}"
side_effect = false
concurrency_safe = true
task = "required"

[tools.confirm_delete]
component = "{TEST_GUESTS / "conformance_confirm.wasm"}"
side_effect = true
concurrency_safe = true
task = "optional"

[tasks]
max_per_principal = 2
"""

_ids = itertools.count(1)


@pytest.fixture
def tasks_setup(tmp_path: Path) -> Setup:
    setup = write_config(tmp_path, tokens=True, audit=True)
    setup.config.write_text(setup.config.read_text() + TOOLS)
    # The fixtures compiled into the shared cache (once per run), so that a
    # server has them at once.
    subprocess.run([str(BIN), *setup.args(), "tools"], check=True, capture_output=True, timeout=600, env=server_env())
    return setup


# --- the wire -----------------------------------------------------------------

_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post(server: HttpServer, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], dict[str, Any] | None]:
    """One POST to /mcp on a connection of its own: (status, headers, JSON-RPC message)."""
    request = urllib.request.Request(server.url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    for name, value in headers.items():
        request.add_header(name, value)
    try:
        with _opener.open(request, timeout=DEADLINE_S) as response:
            status, got, text = response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as err:
        status, got, text = err.code, dict(err.headers), err.read().decode()
    message = None
    if text.lstrip().startswith("{"):
        message = json.loads(text)
    else:
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                candidate = json.loads(line[5:])
                if "result" in candidate or "error" in candidate:
                    message = candidate
    return status, {k.lower(): v for k, v in got.items()}, message


def rpc(server: HttpServer, method: str, params: dict[str, Any], *, token: str = TOKEN, capabilities: dict[str, Any] | None = WITH_TASKS) -> dict[str, Any]:
    """A stateless 2026-07-28 request; its JSON-RPC response."""
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": {**params, "_meta": modern_meta(capabilities)}}
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    name = params.get("name") or params.get("taskId")
    if name:
        headers["Mcp-Name"] = name
    status, _, message = post(server, body, headers)
    assert message is not None, f"HTTP {status} without a JSON-RPC message"
    return message


def call(server: HttpServer, name: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return rpc(server, "tools/call", {"name": name, "arguments": arguments}, **kw)


def task_get(server: HttpServer, task_id: str, **kw: Any) -> dict[str, Any]:
    return rpc(server, "tasks/get", {"taskId": task_id}, **kw)


def until(server: HttpServer, task_id: str, done: Any, **kw: Any) -> dict[str, Any]:
    """Poll tasks/get until `done(task)`; the task."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        task = task_get(server, task_id, **kw)["result"]
        if done(task):
            return task
        assert time.monotonic() < deadline, f"task {task_id} never got there: {task}"
        time.sleep(0.1)


def ended(task: dict[str, Any]) -> bool:
    return task["status"] in ("completed", "failed", "cancelled")


def audited(setup: Setup, task_id: str, outcome: str | None = None) -> list[dict[str, Any]]:
    """The audit records of the task, once one with `outcome` (any, if None) is there."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        records = [r for r in setup.audit() if r.get("task") == task_id]
        if any(outcome is None or r["outcome"] == outcome for r in records):
            return records
        assert time.monotonic() < deadline, f"no {outcome} record of task {task_id}: {records}"
        time.sleep(0.1)


# --- the tests ----------------------------------------------------------------


def test_a_task_survives_its_client_and_is_read_after_reconnecting(tasks_setup: Setup) -> None:
    with http_server(tasks_setup) as server:
        # Created by a request whose connection then closes (`post` opens one
        # of its own for each request) ...
        handle = call(server, "slow_compute", {"seconds": 2, "label": "away"})["result"]
        assert handle["resultType"] == "task" and handle["status"] == "working", handle
        # ... and read on another: the task ran on and is there.
        task = until(server, handle["taskId"], ended)
        assert task["status"] == "completed", task
        assert task["result"]["structuredContent"] == {"seconds": 2, "label": "away"}, task
        assert task["result"]["isError"] is False
        [record] = audited(tasks_setup, handle["taskId"], "ok")
        assert record["principal"] == "alice" and record["tool"] == "slow_compute", record


def test_cancel_stops_the_running_guest(tasks_setup: Setup) -> None:
    with http_server(tasks_setup) as server:
        handle = call(server, "slow_compute", {"seconds": 60})["result"]
        task_id = handle["taskId"]
        assert until(server, task_id, lambda t: True)["status"] == "working"
        cancelled_at = time.monotonic()
        ack = rpc(server, "tasks/cancel", {"taskId": task_id})["result"]
        assert ack == {"resultType": "complete"}, ack
        assert until(server, task_id, ended)["status"] == "cancelled"
        # The guest stopped: its call's record says so, long before its 60 s.
        [record] = audited(tasks_setup, task_id, "cancelled")
        # Two thirds of the guest's 60 s: a cancel that did not stop it
        # would let it run to its end.
        assert record["duration_us"] < 40_000_000, record
        assert time.monotonic() - cancelled_at < 40
        # A cancel of a task that ended changes nothing and answers the same.
        assert rpc(server, "tasks/cancel", {"taskId": task_id})["result"] == {"resultType": "complete"}
        assert task_get(server, task_id)["result"]["status"] == "cancelled"


def test_a_task_is_invisible_to_another_principal(tasks_setup: Setup) -> None:
    with http_server(tasks_setup) as server:
        task_id = call(server, "slow_compute", {"seconds": 2})["result"]["taskId"]
        unknown = "0" * 32
        for method, params in (("tasks/get", {}), ("tasks/update", {"inputResponses": ACCEPT}), ("tasks/cancel", {})):
            theirs = rpc(server, method, {"taskId": task_id, **params}, token=OTHER_TOKEN)["error"]
            none = rpc(server, method, {"taskId": unknown, **params}, token=OTHER_TOKEN)["error"]
            assert theirs["code"] == none["code"] == -32602, (theirs, none)
            # The same answer as for an id nobody has: nothing to probe.
            assert theirs["message"].replace(task_id, unknown) == none["message"], (theirs, none)
        task = until(server, task_id, ended)
        assert task["status"] == "completed", "bob's cancel changed nothing"


def test_a_task_over_the_principals_cap_is_refused_naming_the_key(tasks_setup: Setup) -> None:
    with http_server(tasks_setup) as server:
        running = [call(server, "slow_compute", {"seconds": 60})["result"]["taskId"] for _ in range(2)]
        refused = call(server, "slow_compute", {"seconds": 60})["result"]
        assert "taskId" not in refused and refused["isError"] is True, refused
        assert refused["_meta"]["airlock/kind"] == "quota_exceeded", refused
        text = refused["content"][0]["text"]
        assert "`[tasks] max_per_principal` = 2" in text and "nothing was run" in text, text
        # Another principal's share is its own.
        theirs = call(server, "slow_compute", {"seconds": 0}, token=OTHER_TOKEN)["result"]
        assert theirs["resultType"] == "task", theirs
        # The refusal is audited, as not reached.
        deadline = time.monotonic() + DEADLINE_S
        while not any(r["outcome"] == "quota_exceeded" and r["tool"] == "slow_compute" for r in tasks_setup.audit()):
            assert time.monotonic() < deadline, tasks_setup.audit()
            time.sleep(0.1)
        for task_id in running:
            rpc(server, "tasks/cancel", {"taskId": task_id})


def test_tools_that_run_as_tasks_and_clients_without_the_extension(tasks_setup: Setup) -> None:
    with http_server(tasks_setup) as server:
        discover = rpc(server, "server/discover", {})["result"]
        assert discover["capabilities"]["extensions"] == {TASKS_EXTENSION: {}}, discover
        # Without the extension: the call runs while the client waits, as before.
        plain = call(server, "slow_compute", {"seconds": 0, "label": "now"}, capabilities={})["result"]
        assert plain["resultType"] == "complete" and "taskId" not in plain, plain
        assert plain["structuredContent"] == {"seconds": 0, "label": "now"}
        # A tool that runs only as a task refuses such a client.
        required = call(server, "failing_job", {}, capabilities={})["error"]
        assert required["code"] == -32021, required
        assert required["data"]["requiredCapabilities"]["extensions"] == {TASKS_EXTENSION: {}}, required
        # Task methods need the extension too.
        assert rpc(server, "tasks/get", {"taskId": "0" * 32}, capabilities={})["error"]["code"] == -32021
        # With it, a tool error completes the task with isError.
        task_id = call(server, "failing_job", {})["result"]["taskId"]
        task = until(server, task_id, ended)
        assert task["status"] == "completed" and task["result"]["isError"] is True, task
        assert "always fails" in task["result"]["content"][0]["text"], task
        # Removed and unknown: tasks/list and tasks/result are -32601, an unknown id -32602.
        assert rpc(server, "tasks/list", {})["error"]["code"] == -32601
        assert rpc(server, "tasks/result", {"taskId": task_id})["error"]["code"] == -32601
        assert task_get(server, "f" * 32)["error"]["code"] == -32602


def raw(setup: Setup) -> RawStdio:
    return RawStdio([str(BIN), *setup.args(), "serve", "--stdio", "--principal", "alice"], server_env(), setup.dir / "raw-stderr.log")


def stdio_rpc(server: RawStdio, method: str, params: dict[str, Any], capabilities: dict[str, Any] = WITH_TASKS_AND_FORMS) -> dict[str, Any]:
    return server.request(method, {**params, "_meta": modern_meta(capabilities)})


def stdio_until(server: RawStdio, task_id: str, done: Any) -> dict[str, Any]:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        task = stdio_rpc(server, "tasks/get", {"taskId": task_id})["result"]
        if done(task):
            return task
        assert time.monotonic() < deadline, task
        time.sleep(0.1)


def test_a_confirmation_inside_a_task_is_input_required_then_answered(tasks_setup: Setup) -> None:
    with raw(tasks_setup) as server:
        handle = stdio_rpc(server, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a.txt"}})["result"]
        task_id = handle["taskId"]
        asking = stdio_until(server, task_id, lambda t: t["status"] != "working")
        assert asking["status"] == "input_required", asking
        question = asking["inputRequests"]["confirm"]
        assert question["method"] == "elicitation/create", question
        assert "alice wants to call confirm_delete" in question["params"]["message"], question
        # An answer to a key that was never asked is ignored.
        ignored = stdio_rpc(server, "tasks/update", {"taskId": task_id, "inputResponses": {"other": {"action": "accept"}}})
        assert ignored["result"] == {"resultType": "complete"}, ignored
        assert stdio_rpc(server, "tasks/get", {"taskId": task_id})["result"]["status"] == "input_required"
        ack = stdio_rpc(server, "tasks/update", {"taskId": task_id, "inputResponses": ACCEPT})["result"]
        assert ack == {"resultType": "complete"}, ack
        done = stdio_until(server, task_id, ended)
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "deleted a.txt", done
        records = audited(tasks_setup, task_id, "ok")
        assert [r["outcome"] for r in records] == ["started", "ok"], records
        assert all(r["decision"] == "ask:confirmed" for r in records), records
        # Declined: the task completes with the refusal the model reads.
        task_id = stdio_rpc(server, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "b.txt"}})["result"]["taskId"]
        stdio_until(server, task_id, lambda t: t["status"] == "input_required")
        stdio_rpc(server, "tasks/update", {"taskId": task_id, "inputResponses": {"confirm": {"action": "decline"}}})
        done = stdio_until(server, task_id, ended)
        assert done["status"] == "completed" and done["result"]["isError"] is True, done
        assert done["result"]["_meta"]["airlock/kind"] == "declined", done


def test_an_initialize_based_client_that_declares_the_extension_gets_no_task(tasks_setup: Setup) -> None:
    """The extension is of 2026-07-28's wire (a task handle is a result of
    its own kind): a 2025-11-25 client that declares it anyway, as the MCP
    Inspector does, would read the handle as an empty tool result. It is
    answered as if it had not declared it."""
    with raw(tasks_setup) as server:
        init = server.initialize(WITH_TASKS)["result"]
        assert "extensions" not in init["capabilities"], init
        plain = server.request("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0, "label": "legacy"}})["result"]
        assert "taskId" not in plain and "resultType" not in plain, plain
        assert plain["structuredContent"] == {"seconds": 0, "label": "legacy"}, plain
        required = server.request("tools/call", {"name": "failing_job", "arguments": {}})["error"]
        assert required["code"] == -32021, required


def test_an_older_client_sees_what_it_saw_before(tasks_setup: Setup) -> None:
    with raw(tasks_setup) as server:
        init = server.initialize()["result"]
        assert "extensions" not in init["capabilities"], init
        plain = server.request("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}})["result"]
        assert "taskId" not in plain and "resultType" not in plain, plain
        assert plain["structuredContent"] == {"seconds": 0, "label": None}, plain


def test_a_task_waits_for_the_person_on_the_approval_page(tmp_path: Path) -> None:
    setup = write_config(tmp_path, tokens=True, audit=True)
    setup.config.write_text(setup.config.read_text() + TOOLS + '\n[approvals]\nmode = "page"\n')
    subprocess.run([str(BIN), *setup.args(), "tools"], check=True, capture_output=True, timeout=600, env=server_env())
    with_urls = {"elicitation": {"url": {}}, "extensions": {TASKS_EXTENSION: {}}}
    with http_server(setup) as server:
        handle = call(server, "confirm_delete", {"filename": "page.txt"}, capabilities=with_urls)["result"]
        task_id = handle["taskId"]
        asking = until(server, task_id, lambda t: t["status"] != "working", capabilities=with_urls)
        assert asking["status"] == "input_required", asking
        request = asking["inputRequests"]["approval"]
        assert request["method"] == "elicitation/create" and request["params"]["mode"] == "url", request
        link = request["params"]["url"]
        # The client sent the person to the page: the task waits for the page, not for the client.
        sent = rpc(server, "tasks/update", {"taskId": task_id, "inputResponses": {"approval": {"action": "accept"}}}, capabilities=with_urls)
        assert sent["result"] == {"resultType": "complete"}, sent
        waiting = until(server, task_id, lambda t: t["status"] == "working", capabilities=with_urls)
        assert "approval page" in waiting.get("statusMessage", ""), waiting
        answer_on_page(setup, link, "approve")
        done = until(server, task_id, ended, capabilities=with_urls)
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "deleted page.txt", done
        ran = [r for r in audited(setup, task_id, "ok") if r["outcome"] == "ok"]
        assert ran[0]["approval"]["how"] == "page" and ran[0]["approval"]["by"] == "alice", ran
