"""``prism-memory mcp`` over stdio as a real process: the SDK's client across restarts, calls in flight when
standard input ends, the configured embedder, stray output kept off the wire, the message limit, a slow pipe,
and SIGTERM.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import TEST_DIMENSIONS
from mcp_client import SERVER_START_S, Caller, mcp_command

# -- stdio ---------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def stdio_session(dsn: str, log: Path, *options: str, **environment: str):
    """The SDK's client on a ``prism-memory mcp`` subprocess (stdio) over ``dsn``, with the global ``options``;
    its stderr goes to ``log``."""
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "prism_memory", "--dsn", dsn, "--dimensions", str(TEST_DIMENSIONS), *options, "mcp"],
        env={"PYTHONPATH": os.environ.get("PYTHONPATH", ""), "TZ": os.environ["TZ"], **environment},
    )
    with log.open("a") as errlog:
        async with Client(stdio_client(parameters, errlog=errlog)) as client:
            yield Caller(client)


async def test_stdio_subprocess_serves_its_configured_scope_across_restarts(pg_dsn, tmp_path):
    """The scope comes from the environment, survives a restart exactly (never a default scope), and the
    process writes nothing but protocol on standard output (the client would fail on anything else)."""
    ada = {"PRISM_MEMORY_TENANT": "acme", "PRISM_MEMORY_RESOURCE": "user-ada", "PRISM_MEMORY_THREAD": "plans"}
    log = tmp_path / "server.log"
    async with stdio_session(pg_dsn, log, **ada) as call:
        tools = [tool.name for tool in (await call.client.list_tools()).tools]
        stored = await call.ok("remember", entries=["Prefers green tea", "Flies to Lisbon on Friday"])
        await call.ok("update_working_memory", data={"name": "Ada"})
        first = await call.ok("recall", query="tea", top_k=1)
    async with stdio_session(pg_dsn, log, **ada) as call:  # a restart: same scope, same data
        again = await call.ok("recall", query="tea", top_k=1)
        working = (await call.client.read_resource("memory://working")).contents[0].text
        prompt = (await call.client.get_prompt("memory_context", {"query": "Lisbon"})).messages[0].content.text
        refused = await call.failed("recall", query="tea", tenant="acme-corp")
    async with stdio_session(pg_dsn, log, **{**ada, "PRISM_MEMORY_RESOURCE": "user-bob"}) as call:
        bob = await call.ok("recall", query="tea Lisbon", top_k=8)
        bob_list = await call.ok("list_memories", thread="plans")

    assert tools[:3] == ["remember", "recall", "get_working_memory"] and "legal_hold" not in tools
    assert stored["thread"] == "plans" and len(stored["ids"]) == 2
    assert first["hits"][0]["text"] == again["hits"][0]["text"] == "Prefers green tea"
    assert first["hits"][0]["id"] == again["hits"][0]["id"] == stored["ids"][0]
    assert working == '{"name":"Ada"}'
    assert "Flies to Lisbon on Friday" in prompt
    assert refused.error == "arguments"
    assert bob["hits"] == [] and bob_list["entries"] == []
    text = log.read_text()
    assert "serving tenant 'acme', resource 'user-ada' (thread 'plans') over stdio on PostgreSQL" in text
    assert "the hash embedder is for demos and tests" in text and "Traceback" not in text


@pytest.mark.parametrize("ends", ["pipes", "files"])
async def test_stdio_server_answers_the_calls_in_flight_when_standard_input_ends(pg_dsn, tmp_path, ends):
    """A client that sends its calls and closes standard input at once (a script piping requests in): every call
    runs to its end and is answered before the server exits, on pipes (serve_stdio's own streams) and on files
    (the SDK's). The SDK cancelled them instead, answering "Connection closed" for a remember that had committed
    (a client retrying it would store it twice)."""
    remembers = [{"jsonrpc": "2.0", "id": n, "method": "tools/call",
                  "params": {"name": "remember", "arguments": {"entries": [f"in flight note {n}"]}}} for n in range(2, 22)]
    wire = b"".join(json.dumps(message).encode() + b"\n" for message in [*NOISY_CONVERSATION[:2], *remembers])
    command = mcp_command("--dsn", pg_dsn, "--dimensions", str(TEST_DIMENSIONS), "mcp")
    env = {**os.environ, "PRISM_MEMORY_TENANT": "acme", "PRISM_MEMORY_RESOURCE": "user-ada"}
    if ends == "pipes":
        finished = subprocess.run(command, input=wire, capture_output=True, timeout=SERVER_START_S, env=env)
        out = finished.stdout
    else:
        (tmp_path / "requests.jsonl").write_bytes(wire)
        with (tmp_path / "requests.jsonl").open("rb") as requests, (tmp_path / "answers.jsonl").open("wb") as answers:
            finished = subprocess.run(command, stdin=requests, stdout=answers, stderr=subprocess.PIPE,
                                      timeout=SERVER_START_S, env=env)
        out = (tmp_path / "answers.jsonl").read_bytes()
    assert finished.returncode == 0, finished.stderr
    answers = {message["id"]: message for message in map(json.loads, out.splitlines())}
    assert sorted(answers) == [1, *range(2, 22)]
    results = [answers[n].get("result", {}).get("structuredContent") or answers[n] for n in range(2, 22)]
    assert [result.get("stored") for result in results] == [1] * 20, results
    with psycopg.connect(pg_dsn) as conn:
        stored = conn.execute("select count(*) from prism_memory.semantic_memory where tenant_id = 'acme'").fetchone()[0]
    assert stored == 20


async def test_stdio_server_embeds_with_the_configured_embedder(pg_dsn, tmp_path):
    """``--embedder openai`` against a real OpenAI-compatible server on 127.0.0.1: the MCP server's entries and
    queries are embedded there (the recorded model is the endpoint's), and it says which model serves."""
    from embedding_server import EmbeddingServer

    log = tmp_path / "server.log"
    scope = {"PRISM_MEMORY_TENANT": "acme", "PRISM_MEMORY_RESOURCE": "user-ada", "OPENAI_API_KEY": "test-key"}
    with EmbeddingServer(dimensions=TEST_DIMENSIONS) as server:
        options = ("--schema", "prism_memory", "--embedder", "openai", "--model", "served-model", "--base-url", server.base_url)
        async with stdio_session(pg_dsn, log, *options, **scope) as call:
            await call.ok("remember", entries=["Prefers green tea", "Flies to Lisbon on Friday"])
            found = await call.ok("recall", query="green tea", top_k=1)
        embedded = [text for request in server.requests for text in request["body"]["input"]]
    assert found["hits"][0]["text"] == "Prefers green tea"
    assert embedded == ["Prefers green tea", "Flies to Lisbon on Friday", "green tea"]
    text = log.read_text()
    assert "embedding with served-model (64 dimensions, OpenAI-compatible HTTP)" in text
    assert "the hash embedder is for demos" not in text and "Traceback" not in text
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("select model_id from prism_memory.semantic_memory_embedding_model").fetchall() == [("served-model",)]


#: A server whose tool writes to standard output behind the protocol's back, served by serve_stdio.
NOISY_SERVER = """
import asyncio, os
from mcp.server.mcpserver import MCPServer
from prism_memory.mcp_server import serve_stdio, stdio

stdio.STDIO_LINE_LIMIT = int(os.environ.get("LINE_LIMIT", stdio.STDIO_LINE_LIMIT))
server = MCPServer("noisy")

@server.tool()
def shout(word: str) -> str:
    print("stray print", word)
    os.write(1, b"stray write " + word.encode() + b"\\n")
    return word.upper()

asyncio.run(serve_stdio(server))
"""
NOISY_CONVERSATION = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shout", "arguments": {"word": "hi"}}},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "shout", "arguments": {"word": "x" * 300_000}}},
]


def noisy_conversation(tmp_path: Path, stdout_is_a_pipe: bool) -> tuple[list[dict], str]:
    """NOISY_CONVERSATION with a NOISY_SERVER process, each request's response awaited before the next message,
    its standard output a pipe (serve_stdio's own streams) or a file (the SDK's, serve_stdio's fallback);
    returns the responses and what reached standard error."""
    out_path, err_path = tmp_path / f"out-{stdout_is_a_pipe}", tmp_path / f"err-{stdout_is_a_pipe}"
    with out_path.open("wb") as out_file, err_path.open("wb") as err_file:
        process = subprocess.Popen([sys.executable, "-c", NOISY_SERVER], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE if stdout_is_a_pipe else out_file, stderr=err_file)
        responses: list[dict] = []
        try:
            for message in NOISY_CONVERSATION:
                process.stdin.write(json.dumps(message).encode() + b"\n")
                process.stdin.flush()
                if "id" not in message:
                    continue
                if stdout_is_a_pipe:
                    line = process.stdout.readline()
                else:
                    deadline = time.monotonic() + SERVER_START_S
                    while (lines := out_path.read_bytes().splitlines(keepends=True))[len(responses):] == [] \
                            or not lines[-1].endswith(b"\n"):
                        assert time.monotonic() < deadline, "no response from the server"
                        time.sleep(0.02)
                    line = lines[len(responses)]
                responses.append(json.loads(line))
            process.stdin.close()
            assert process.wait(SERVER_START_S) == 0
            rest = process.stdout.read() if stdout_is_a_pipe else b"".join(out_path.read_bytes().splitlines(keepends=True)[len(responses):])
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert rest == b"", rest[:200]  # nothing but the responses on the wire
    return responses, err_path.read_text()


def test_serve_stdio_keeps_stray_output_off_the_wire_and_answers_as_the_sdk_does(tmp_path):
    """serve_stdio on pipes reads and writes them on the event loop; with standard output a file it falls
    back to the SDK's transport. Both answer the same conversation alike (a 300 kB argument included), and
    a tool's print() or write to descriptor 1 lands on standard error, never in the protocol."""
    on_pipes, piped_errors = noisy_conversation(tmp_path, stdout_is_a_pipe=True)
    on_a_file, file_errors = noisy_conversation(tmp_path, stdout_is_a_pipe=False)
    assert on_pipes == on_a_file
    assert [response["id"] for response in on_pipes] == [1, 2, 3]
    assert on_pipes[1]["result"]["structuredContent"] == {"result": "HI"}
    assert on_pipes[2]["result"]["structuredContent"] == {"result": "X" * 300_000}
    for errors in (piped_errors, file_errors):
        assert "stray print hi" in errors and "stray write hi" in errors and "Traceback" not in errors


@contextlib.contextmanager
def noisy_server_on_pipes(tmp_path: Path, **environment: str) -> Iterator[tuple[subprocess.Popen, Path]]:
    """A NOISY_SERVER process on pipes (serve_stdio's own streams), initialized; standard error goes to the file
    yielded (its log lines unwrapped: COLUMNS for the SDK's rich handler). Killed on exit if still running."""
    err_path = tmp_path / "err"
    with err_path.open("wb") as err_file:
        process = subprocess.Popen([sys.executable, "-c", NOISY_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=err_file, env={**os.environ, "COLUMNS": "500", **environment})
    try:
        for message in NOISY_CONVERSATION[:2]:
            process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        yield process, err_path
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()


def tool_call(request_id: int, word: str) -> bytes:
    """A NOISY_SERVER ``shout`` request, as one line."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": "shout", "arguments": {"word": word}}}).encode() + b"\n"


def test_serve_stdio_drops_a_message_over_its_limit_whole(tmp_path):
    """A line over STDIO_LINE_LIMIT is dropped with its tail: here a valid request behind 140 kB of leading
    whitespace (valid JSON), which the server must not answer in part; the next request is answered."""
    with noisy_server_on_pipes(tmp_path, LINE_LIMIT=str(64 * 1024)) as (process, err_path):
        smuggled = tool_call(7, "tail")
        process.stdin.write(b" " * 140_000 + smuggled + tool_call(8, "next"))
        process.stdin.flush()
        responses = [json.loads(process.stdout.readline())]  # the first response after the initialization's
        process.stdin.close()
        responses += [json.loads(line) for line in process.stdout.read().splitlines()]
        assert process.wait(SERVER_START_S) == 0
    assert [response["id"] for response in responses] == [8]
    assert responses[0]["result"]["structuredContent"] == {"result": "NEXT"}
    line_bytes = 140_000 + len(smuggled)  # dropped whole, with its newline
    assert f"dropped a message of {line_bytes} bytes" in " ".join(err_path.read_text().split())


def test_serve_stdio_delivers_a_response_the_pipe_could_not_take_at_once(tmp_path):
    """A response larger than the pipe holds (64 KiB here), unread when the client closes standard input: the
    server delivers all of it before it exits (asyncio's transport buffered the rest, and it was lost)."""
    with noisy_server_on_pipes(tmp_path) as (process, _):
        process.stdin.write(tool_call(2, "x" * 40_000))
        process.stdin.flush()
        readable, _, _ = select.select([process.stdout], [], [], SERVER_START_S)  # the response has begun to arrive
        assert readable
        process.stdin.close()
        time.sleep(2)  # unread: a server that drops what the pipe could not take has exited by now
        wire = process.stdout.read()
        assert process.wait(SERVER_START_S) == 0
    assert len(wire) > 80_000 and wire.endswith(b"\n")
    assert json.loads(wire)["result"]["structuredContent"] == {"result": "X" * 40_000}


def test_serve_stdio_stops_when_the_client_closes_standard_output(tmp_path):
    """No response can reach a client that closed its end of standard output: the server says so on standard
    error and stops, with standard input still open (the SDK's own transport crashes instead)."""
    with noisy_server_on_pipes(tmp_path) as (process, err_path):
        process.stdout.close()
        with contextlib.suppress(BrokenPipeError):  # the server may already be gone
            process.stdin.write(tool_call(2, "hi"))
            process.stdin.flush()
        assert process.wait(SERVER_START_S) == 0
    errors = " ".join(err_path.read_text().split())
    assert "the client closed standard output" in errors and "Traceback" not in errors


def test_sigterm_stops_a_stdio_server_cleanly_and_releases_the_embedded_database(tmp_path):
    """An agent whose stdio server did not stop when its input closed sends SIGTERM (the MCP shutdown's last step;
    Claude Code's health check does it first): the server stops with exit status 0 and leaves through its exit
    handlers, releasing its handle on the embedded PostgreSQL (the signal's default action left it behind)."""
    data_dir = tmp_path / "pgdata"
    env = {**os.environ, "PRISM_MEMORY_DATA_DIR": str(data_dir), "PRISM_MEMORY_TENANT": "acme",
           "PRISM_MEMORY_RESOURCE": "user-ada", "COLUMNS": "500"}
    err_path = tmp_path / "err"
    with err_path.open("wb") as err_file:
        process = subprocess.Popen(mcp_command("mcp"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err_file, env=env)
    try:
        remember = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "remember", "arguments": {"entries": ["Prefers green tea"]}}}
        for message in [*NOISY_CONVERSATION[:2], remember]:
            process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        responses = [json.loads(process.stdout.readline()) for _ in range(2)]
        assert responses[1]["result"]["structuredContent"]["stored"] == 1, responses
        holders = json.loads((data_dir / ".handle_pids.json").read_text())
        assert process.pid in holders
        process.send_signal(signal.SIGTERM)  # standard input stays open
        assert process.wait(SERVER_START_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
        stopped = subprocess.run(mcp_command("server", "stop"), env=env, capture_output=True, text=True, timeout=60)
    errors = " ".join(err_path.read_text().split())
    assert "stopped (SIGTERM)" in errors and "Traceback" not in errors, errors
    assert process.pid not in json.loads((data_dir / ".handle_pids.json").read_text())
    assert "stopped the embedded PostgreSQL" in stopped.stdout, stopped
    assert not (data_dir / "postmaster.pid").exists()


def test_serve_stdio_skips_a_line_that_is_no_message_and_answers_the_next(tmp_path):
    """A line that is not JSON-RPC (not JSON, or JSON of another shape) gets no response, as on the SDK's own
    transport, and does not stop the server: the requests around it are answered (each on a task of its own,
    so in either order)."""
    with noisy_server_on_pipes(tmp_path) as (process, err_path):
        process.stdin.write(tool_call(2, "before") + b"not json at all\n" + b'{"jsonrpc": "2.0", "id": 3}\n'
                            + tool_call(4, "after"))
        process.stdin.flush()
        responses = [json.loads(process.stdout.readline()) for _ in range(2)]
        process.stdin.close()
        rest = process.stdout.read()
        assert process.wait(SERVER_START_S) == 0
    by_id = {response["id"]: response["result"]["structuredContent"] for response in responses}
    assert by_id == {2: {"result": "BEFORE"}, 4: {"result": "AFTER"}} and rest == b""
    assert "Traceback" not in err_path.read_text()
