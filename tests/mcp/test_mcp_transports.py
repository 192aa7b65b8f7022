"""``prism-memory mcp`` as a real process over streamable HTTP on 127.0.0.1 with bearer tokens of look-alike
tenants, the refusal to start without a scope, the token file, and stopping (stdio: ``test_mcp_stdio.py``).

The HTTP test runs the same scenario on the emulator (``--backend memory``), on Postgres, and on Postgres
with a tenant-bound role per token, and compares the three outcomes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx2
import psycopg
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from prism_memory import grant_app_role
from prism_memory.cli import main
from prism_memory.errors import ConfigurationError
from prism_memory.mcp_server import BearerTokens, TokenBinding, hash_token, load_token_file, server_scope, token_stanza

from conftest import CITUS, TEST_CONFIG, TEST_DIMENSIONS
from mcp_client import SERVER_START_S, Caller, ToolFailure, mcp_command, without_times
from parity import assert_same
from roles import as_role

ROOT = Path(__file__).resolve().parents[2]
#: Tenant-bound roles are refused on a Citus-distributed install (tests/schema/test_citus.py checks it).
needs_bindings = pytest.mark.skipif(CITUS, reason="tenant-bound roles are not supported on a Citus-distributed install")
HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")


@pytest.mark.parametrize("argv, environment, message", [
    (["mcp"], {}, "no scope configured: over stdio pass --tenant and --resource"),
    (["--tenant", "acme", "mcp"], {}, "no scope configured"),
    (["mcp"], {"PRISM_MEMORY_TENANT": "acme"}, "no scope configured"),
    (["mcp", "--transport", "http"], {}, "no scope configured: over HTTP pass --tokens FILE"),
    (["--tenant", "acme", "--resource", "ada", "mcp", "--transport", "http", "--tokens", "x.toml"], {},
     "over HTTP each token's scope comes from --tokens"),
    (["--tenant", "acme", "--resource", "ada", "mcp", "--tokens", "x.toml"], {}, "--tokens is for --transport http"),
    (["--tenant", " ", "--resource", "ada", "mcp"], {}, "tenant_id must be"),
    (["--tenant", "acme", "--resource", "ada/agent:x", "mcp"], {}, "reserved segment"),
    (["mcp", "--transport", "http", "--tokens", "missing.toml"], {}, "cannot read the token file"),
])
def test_the_server_refuses_to_start_without_a_valid_scope(argv, environment, message, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in ("PRISM_MEMORY_TENANT", "PRISM_MEMORY_RESOURCE", "PRISM_MEMORY_THREAD"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert main(["--backend", "memory", *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err and captured.out == ""


def test_the_real_command_exits_2_at_once_without_a_scope(tmp_path):
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PRISM_MEMORY_")}
    finished = subprocess.run(mcp_command("--backend", "memory", "mcp"), stdin=subprocess.PIPE, capture_output=True,
                              text=True, timeout=60, env=environment, cwd=tmp_path)
    assert finished.returncode == 2
    assert "no scope configured" in finished.stderr and finished.stdout == ""


# -- the token file ------------------------------------------------------------------------------------


def test_token_file_round_trip_and_constant_time_matching(tmp_path):
    path = tmp_path / "tokens.toml"
    odd = server_scope("a\"b\\c", "ünï\x7f🦊", "tab\there\u2028", dsn="postgresql://app@/db?host=/tmp", name="odd \"name\"")
    tokens = ["token-one", "token-two"]
    path.write_text(token_stanza(odd.name, tokens[0], odd) + "\n" + token_stanza("plain", tokens[1], server_scope("t", "r")))
    first, second = load_token_file(path)
    assert (first.scope, first.name) == (odd, odd.name) and first.digest.hex() == hash_token("token-one")
    assert second.scope == server_scope("t", "r", name="plain") and tokens[0] not in path.read_text()

    import asyncio
    verifier = BearerTokens([first, second])
    accepted = asyncio.run(verifier.verify_token("token-two"))
    assert accepted.client_id == "plain" and accepted.scope.tenant_id == "t"
    assert "tenant" not in accepted.model_dump_json()  # the scope is private to the server
    for wrong in ("token-tw", "token-two ", hash_token("token-two"), "", "\ud800"):
        assert asyncio.run(verifier.verify_token(wrong)) is None
    # an empty token is never accepted, even by a binding of its digest made without load_token_file
    empty = BearerTokens([TokenBinding("empty", bytes.fromhex(hash_token("")), server_scope("t", "r"))])
    assert asyncio.run(empty.verify_token("")) is None


@pytest.mark.parametrize("content, message", [
    ("", "names no token"),
    ("[[token]]\n", "sha256 must be"),
    ("[[token]]\nsha256 = 'abc'\ntenant = 't'\nresource = 'r'\n", "sha256 must be"),
    (f"[[token]]\nsha256 = '{'0' * 64}'\nresource = 'r'\n", "tenant_id"),
    (f"[[token]]\nsha256 = '{'0' * 64}'\ntenant = 't'\nresource = 'r'\ntenat = 'x'\n", "unknown keys"),
    (f"[[token]]\nsha256 = '{'0' * 64}'\ntenant = 't'\nresource = 7\n", "must be a string"),
    (f"[[token]]\nsha256 = '{'0' * 64}'\ntenant = 't'\nresource = 'r/agent:x'\n", "reserved"),
    ("token = 'x'\n", "names no token"),
    ("[tokens]\n", "unknown top-level keys"),
    ("[[token]\n", "not valid TOML"),
    ("".join(f"[[token]]\nsha256 = '{'0' * 64}'\ntenant = 't'\nresource = 'r{n}'\n" for n in range(2)),
     "token 2 (token-2) repeats the digest of token 1"),
    ("".join(f"[[token]]\nname = 'n'\nsha256 = '{str(n) * 64}'\ntenant = 't'\nresource = 'r'\n" for n in range(2)),
     "token 2 (n) repeats the name of token 1"),
    (f"[[token]]\nsha256 = '{'0' * 64}'\ntenant = 't'\nresource = 'r'\ndsn = ' '\n", "dsn is empty"),
    (f"[token]\nsha256 = '{'0' * 64}'\ntenant = 't'\nresource = 'r'\n", "write each token as [[token]]"),
    # what `echo -n "$UNSET" | sha256sum` gives: the digest of the empty token
    (f"[[token]]\nsha256 = '{hash_token('').upper()}'\ntenant = 't'\nresource = 'r'\n", "the digest of an empty token"),
])
def test_a_bad_token_file_is_refused(tmp_path, content, message):
    path = tmp_path / "tokens.toml"
    path.write_text(content)
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        load_token_file(path)


def test_mcp_token_appends_a_digest_and_prints_the_token_once(tmp_path, capsys):
    path = tmp_path / "tokens.toml"
    assert main(["--tenant", "acme", "--resource", "user-ada", "mcp-token", str(path)]) == 0
    token = capsys.readouterr().out.strip()
    assert main(["--tenant", "acme-corp", "--resource", "user-ada", "--thread", "merger", "mcp-token", str(path),
                 "--token-dsn", "postgresql://corp_app@/prism"]) == 0
    other = capsys.readouterr().out.strip()
    assert main(["--tenant", "acme", "--resource", "user-ada", "mcp-token", str(path)]) == 2
    assert "already has a token named 'acme/user-ada'" in capsys.readouterr().err
    assert main(["--tenant", "acme", "mcp-token", str(path)]) == 2
    first, second = load_token_file(path)
    assert (first.name, first.scope.tenant_id, first.scope.thread_id, first.digest.hex()) == (
        "acme/user-ada", "acme", "main", hash_token(token))
    assert (second.scope.tenant_id, second.scope.thread_id, second.scope.dsn) == ("acme-corp", "merger", "postgresql://corp_app@/prism")
    assert len(token) == 43 and token != other and token not in path.read_text() and other not in path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600


# -- streamable HTTP -----------------------------------------------------------------------------------


@contextlib.contextmanager
def http_process(tmp_path: Path, *options: str, env: dict[str, str] | None = None,
                 serve_options: tuple[str, ...] = ()) -> Iterator[tuple[subprocess.Popen, str, Path]]:
    """A ``prism-memory OPTIONS mcp --transport http --port 0 --tokens tokens.toml SERVE_OPTIONS`` process over the
    token file in ``tmp_path``: yields it, its endpoint URL (from its log) and the log; killed if still running
    at the end."""
    log = tmp_path / f"http-{secrets.token_hex(3)}.log"
    with log.open("w") as errlog:
        process = subprocess.Popen(
            mcp_command(*options, "mcp", "--transport", "http", "--port", "0", "--tokens", "tokens.toml", *serve_options),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog, cwd=tmp_path, env=env)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while not (found := re.search(r"at (http://127\.0\.0\.1:\d+/mcp) ", log.read_text())):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield process, found.group(1), log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def assert_stopped_cleanly(process: subprocess.Popen, log: Path, within_s: float) -> None:
    """``process`` got SIGTERM: it must exit within ``within_s`` seconds, with status 0 and no traceback."""
    assert process.wait(timeout=within_s) == 0, log.read_text()
    assert "stopped (SIGTERM)" in log.read_text()
    assert "Traceback" not in log.read_text(), log.read_text()


@contextlib.contextmanager
def http_server(tmp_path: Path, *options: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """A ``prism-memory OPTIONS mcp --transport http --port 0 --tokens tokens.toml`` process (:func:`http_process`);
    yields its endpoint URL. Stopped with SIGTERM, it must shut down cleanly: exit status 0, no traceback."""
    with http_process(tmp_path, *options, env=env) as (process, url, log):
        try:
            yield url
        finally:
            process.terminate()
            assert_stopped_cleanly(process, log, 30)


@contextlib.asynccontextmanager
async def http_session(url: str, token: str):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=60)) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield Caller(client)


async def raw_status(url: str, headers: dict[str, str]) -> tuple[int, str]:
    """The HTTP status of a bare tools/list POST with ``headers``, and its WWW-Authenticate header."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient() as http:
        response = await http.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **headers})
        return response.status_code, response.headers.get("www-authenticate", "")


TENANTS = {"acme": ("user-ada", "acme-plans"), "acme-corp": ("user-ada", "corp-merger")}
TEXTS = {"acme": ["acme plans a picnic on Friday", "acme budget is 10k"],
         "acme-corp": ["acme-corp merger closes on Friday", "acme-corp salaries rise"]}


def write_tokens(tmp_path: Path, dsns: dict[str, str] | None = None) -> dict[str, str]:
    """A token file binding one fresh token to each of TENANTS (with ``dsns[tenant]`` when given)."""
    tokens = {}
    stanzas = []
    for tenant, (resource, thread) in TENANTS.items():
        tokens[tenant] = secrets.token_urlsafe(32)
        scope = server_scope(tenant, resource, thread, dsn=(dsns or {}).get(tenant), name=tenant)
        stanzas.append(token_stanza(tenant, tokens[tenant], scope))
    (tmp_path / "tokens.toml").write_text("\n".join(stanzas))
    return tokens


async def two_tenants_over_http(url: str, tokens: dict[str, str]) -> dict[str, Any]:
    """Each token writes its tenant's entries, then tries everything on the other's: reads with the other's
    thread names and queries, corrections, consent changes and deletions with the other's real ids."""
    outcome: dict[str, Any] = {"refused": {
        "no token": await raw_status(url, {}),
        "wrong token": await raw_status(url, {"Authorization": "Bearer " + secrets.token_urlsafe(32)}),
        "a token's digest": await raw_status(url, {"Authorization": "Bearer " + hash_token(tokens["acme"])}),
        "no scheme": await raw_status(url, {"Authorization": tokens["acme"]}),
        "basic": await raw_status(url, {"Authorization": "Basic " + tokens["acme"]}),
    }}
    ids = {}
    for tenant, token in tokens.items():
        async with http_session(url, token) as call:
            ids[tenant] = (await call.ok("remember", entries=TEXTS[tenant]))["ids"]
            await call.ok("update_working_memory", data={"owner": tenant})
    outcome["ids"] = ids
    for tenant, other in (("acme", "acme-corp"), ("acme-corp", "acme")):
        _, other_thread = TENANTS[other]
        async with http_session(url, tokens[tenant]) as call:
            seen = outcome[tenant] = {}
            for thread in (None, other_thread):
                args = {} if thread is None else {"thread": thread}
                where = thread or "own thread"
                seen[f"recall {where}"] = await call.ok("recall", query=" ".join(TEXTS[other]), top_k=32, message_range=4, **args)
                seen[f"list {where}"] = await call.ok("list_memories", limit=100, **args)
                seen[f"correct {where}"] = await call.failed("correct", entry_id=ids[other][0], text="hacked", **args)
                seen[f"consent {where}"] = await call.failed("set_consent", entry_id=ids[other][1], visible=False, **args)
                seen[f"forget {where}"] = await call.failed("forget", ids=ids[other], **args)
            seen["tenant argument"] = await call.failed("recall", query="Friday", tenant=other)
            seen["working"] = await call.ok("get_working_memory")
            seen["resource"] = (await call.client.read_resource("memory://working")).contents[0].text
            seen["prompt"] = (await call.client.get_prompt("memory_context", {"query": "Friday merger"})).messages[0].content.text
            seen["own"] = await call.ok("recall", query="Friday", top_k=32)
    return outcome


def anonymised(outcome: Any, labels: dict[str, str]) -> Any:
    """``outcome`` with entry ids replaced by labels in order of appearance (ids are random), times dropped,
    tool failures compared by type."""
    if isinstance(outcome, ToolFailure):
        return {"failed": outcome.error}
    if isinstance(outcome, dict):
        return {key: anonymised(value, labels) for key, value in without_times(outcome).items()}
    if isinstance(outcome, (list, tuple)):
        return [anonymised(value, labels) for value in outcome]
    if isinstance(outcome, str):
        return HEX_ID.sub(lambda match: labels.setdefault(match.group(), f"id{len(labels)}"), outcome)
    return outcome


def check_isolation(outcome: dict[str, Any]) -> None:
    for case, (status, challenge) in outcome["refused"].items():
        assert status == 401 and challenge.startswith('Bearer error="invalid_token"'), case
    for tenant, other in (("acme", "acme-corp"), ("acme-corp", "acme")):
        seen = outcome[tenant]
        assert sorted(hit["text"] for hit in seen["own"]["hits"]) == sorted(TEXTS[tenant])
        assert seen["working"]["data"] == {"owner": tenant}
        assert seen["resource"] == json.dumps({"owner": tenant}, separators=(",", ":"))
        assert f'\\"owner\\":\\"{tenant}\\"' in seen["prompt"]
        for case, value in seen.items():
            if case.startswith(("recall", "list")):  # only its own entries in its own thread, none in the other's
                found = [item["id"] for key in ("hits", "adjacent", "entries") for item in value.get(key, [])]
                allowed = outcome["ids"][tenant] if case.endswith("own thread") else []
                assert found and set(found) <= set(allowed) if allowed else found == [], case
            elif case.startswith(("correct", "consent", "forget")):
                assert value.error == "EntryNotFoundError", case
        assert seen["tenant argument"].error == "arguments"
        assert not any(text in repr(seen) for text in TEXTS[other]), tenant


@pytest.fixture
def bound_roles(pg_dsn):
    """Two login roles, each bound to one of TENANTS (tenant-bound roles, docs/security.md); their URLs.
    ``None`` on the Citus lane, where tenant-bound roles are not supported (docs/scaling.md)."""
    if CITUS:
        yield None
        return
    roles = {tenant: f"mcp_{tenant.replace('-', '_')}_{secrets.token_hex(3)}" for tenant in TENANTS}
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for role in roles.values():
            conn.execute(f"create role {role} login")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the test install is owned by a superuser
        for tenant, role in roles.items():
            grant_app_role(pg_dsn, role, TEST_CONFIG, tenants=[tenant])
    yield {tenant: as_role(pg_dsn, role) for tenant, role in roles.items()}
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for role in roles.values():
            conn.execute(f"drop owned by {role}")
            conn.execute(f"drop role {role}")


async def test_http_tokens_of_look_alike_tenants_reach_only_their_own_scope(pg_dsn, bound_roles, tmp_path):
    """Streamable HTTP on 127.0.0.1: tokens bound to acme and acme-corp cannot read, list, correct, revoke or forget
    each other's entries, with the other's real ids and thread names; a missing or wrong token gets 401. The same
    on the emulator, on Postgres, and on Postgres with each token's calls made as a role bound to its tenant."""
    common = ["--dimensions", str(TEST_DIMENSIONS)]
    outcomes = {}
    lanes = [("emulator", ["--backend", "memory"], None), ("postgres", ["--dsn", pg_dsn], None)]
    if bound_roles is not None:
        lanes.append(("tenant-bound roles", ["--dsn", pg_dsn], bound_roles))
    for lane, options, dsns in lanes:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:  # each lane starts from an empty install
            names = TEST_CONFIG.names
            conn.execute(f"truncate {names['entries']}, {names['working']}, {names['invalidation']}")
        tokens = write_tokens(tmp_path, dsns)
        with http_server(tmp_path, *options, *common) as url:
            outcomes[lane] = await two_tenants_over_http(url, tokens)
    for outcome in outcomes.values():
        check_isolation(outcome)
    first = anonymised(outcomes["emulator"], {})
    for lane in list(outcomes)[1:]:
        assert_same(first, anonymised(outcomes[lane], {}), lane)
    assert first["ids"] == {"acme": ["id0", "id1"], "acme-corp": ["id2", "id3"]}


@needs_bindings
def test_a_role_bound_to_another_tenant_stops_the_server_at_start(pg_dsn, bound_roles, tmp_path, capsys):
    write_tokens(tmp_path, {"acme": bound_roles["acme-corp"]})
    code = main(["--dsn", pg_dsn, "--dimensions", str(TEST_DIMENSIONS), "mcp", "--transport", "http",
                 "--tokens", str(tmp_path / "tokens.toml"), "--port", "0"])
    assert code == 2
    assert "acme: its database cannot serve tenant 'acme': TenantAccessDeniedError" in capsys.readouterr().err
    code = main(["--dsn", bound_roles["acme-corp"], "--dimensions", str(TEST_DIMENSIONS), "--tenant", "acme",
                 "--resource", "user-ada", "mcp"])  # over stdio, --dsn is the scope's database
    assert code == 2
    assert "stdio: its database cannot serve tenant 'acme': TenantAccessDeniedError" in capsys.readouterr().err
    write_tokens(tmp_path, {"acme-corp": f"postgresql://nobody@/prism?host={tmp_path / 'no-server-here'}"})
    code = main(["--dsn", pg_dsn, "--dimensions", str(TEST_DIMENSIONS), "mcp", "--transport", "http",
                 "--tokens", str(tmp_path / "tokens.toml"), "--port", "0"])
    assert code == 2  # a token's dsn that cannot be opened: the message names the token
    assert "acme-corp: cannot open its dsn: StoreUnavailableError" in capsys.readouterr().err


@needs_bindings
async def test_each_tokens_calls_run_as_its_own_database_role(pg_dsn, bound_roles, tmp_path):
    """A token's calls use its own dsn: rebinding acme's role to another tenant while the server runs refuses
    acme's next call (in the server's words, not the database's) and leaves acme-corp's untouched."""
    tokens = write_tokens(tmp_path, bound_roles)
    with http_server(tmp_path, "--dsn", pg_dsn, "--dimensions", str(TEST_DIMENSIONS)) as url:
        async with http_session(url, tokens["acme"]) as acme, http_session(url, tokens["acme-corp"]) as corp:
            await acme.ok("remember", entries=["acme plans a picnic"])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                grant_app_role(pg_dsn, urlparse(bound_roles["acme"]).username, TEST_CONFIG, tenants=["acme-old"])
            refused = await acme.failed("recall", query="picnic")
            served = await corp.ok("remember", entries=["acme-corp merger"])
    assert refused.text == ("Error executing tool recall: TenantAccessDeniedError: the server's database role may not "
                            "act for this tenant; ask the operator")
    assert served["stored"] == 1


# -- docs/mcp.md -------------------------------------------------------------------------------------


def documented(language: str) -> list[str]:
    """The bodies of docs/mcp.md's blocks in ``language`` (they carry not-run markers: the tests below run them)."""
    from docblocks import parse_blocks

    return [block.body for block in parse_blocks(ROOT / "docs" / "mcp.md") if block.language == language]


DOCUMENTED_COMMAND = "/absolute/path/to/prism-memory/.venv/bin/prism-memory"


async def test_the_documented_agent_configs_start_a_working_server(pg_dsn, tmp_path):
    """Each JSON configuration in docs/mcp.md, with its placeholders filled in (the path of prism-memory, the
    test database, the token, the port), starts or reaches a server whose tools work."""
    configs = [json.loads(body)["mcpServers"]["prism-memory"] for body in documented("json")]
    assert [sorted(config) for config in configs] == [["args", "command", "env"], ["args", "command", "env"], ["headers", "url"]]
    data_dir = tmp_path / "pgdata"
    for config in configs[:2]:
        assert config["command"] == DOCUMENTED_COMMAND
        args = list(config["args"])
        if "--dsn" in args:  # the reader's own database: here the test's, whose schema pins vector(64)
            args[args.index("--dsn") + 1: args.index("--dsn") + 2] = [pg_dsn, "--dimensions", str(TEST_DIMENSIONS)]
        parameters = StdioServerParameters(command=str(Path(sys.executable).parent / "prism-memory"), args=args,
                                           env={**config["env"], "PRISM_MEMORY_DATA_DIR": str(data_dir)})
        try:
            with (tmp_path / "server.log").open("a") as errlog:
                async with Client(stdio_client(parameters, errlog=errlog)) as client:
                    call = Caller(client)
                    stored = await call.ok("remember", entries=["Prefers green tea"])
                    found = await call.ok("recall", query="tea", top_k=1)
        except Exception as exc:  # the server's own account of why it stopped
            raise AssertionError(f"{args}: the server's stderr:\n{(tmp_path / 'server.log').read_text()}") from exc
        finally:
            if data_dir.exists():
                subprocess.run(mcp_command("server", "stop"), env={**os.environ, "PRISM_MEMORY_DATA_DIR": str(data_dir)},
                               capture_output=True, timeout=60)
        assert found["hits"][0]["id"] == stored["ids"][0] and found["thread"] == ("work" if "--thread" in args else "main")

    http_config = configs[2]
    tokens = write_tokens(tmp_path)
    with http_server(tmp_path, "--backend", "memory") as url:
        port = urlparse(url).port
        assert http_config["url"] == "http://127.0.0.1:8848/mcp"
        headers = {name: value.replace("PASTE-THE-TOKEN-HERE", tokens["acme"]) for name, value in http_config["headers"].items()}
        async with httpx2.AsyncClient(headers=headers) as http:
            async with Client(streamable_http_client(http_config["url"].replace("8848", str(port)), http_client=http)) as client:
                assert (await Caller(client).ok("remember", entries=["Prefers green tea"]))["stored"] == 1


def test_the_documented_token_file_loads(tmp_path):
    [example] = documented("toml")
    (tmp_path / "tokens.toml").write_text(example)
    [binding] = load_token_file(tmp_path / "tokens.toml")
    assert binding.name == "ada-laptop"
    assert binding.digest.hex() == "2fead4db771310f81c2e37570e62d10d56defaac42be44abf0c5b8553394d48e"
    assert (binding.scope.tenant_id, binding.scope.resource_id, binding.scope.thread_id) == ("acme", "user-ada", "main")
    assert binding.scope.dsn == "postgresql://acme_app@/prism_memory?host=/var/run/postgresql"


async def test_a_stopped_server_releases_the_embedded_database(tmp_path):
    """SIGTERM (how agents and service managers stop a server) ends the process through its exit handlers, so the
    embedded PostgreSQL it started is released: `prism-memory server stop` stops it afterwards (a stale handle
    once kept it running)."""
    env = {**os.environ, "PRISM_MEMORY_DATA_DIR": str(tmp_path / "pgdata")}
    tokens = write_tokens(tmp_path)
    try:
        with http_server(tmp_path, env=env) as url:
            async with http_session(url, tokens["acme"]) as call:
                assert (await call.ok("remember", entries=["Prefers green tea"]))["stored"] == 1
    finally:
        stopped = subprocess.run(mcp_command("server", "stop"), env=env, capture_output=True, text=True, timeout=60)
    assert "stopped the embedded PostgreSQL" in stopped.stdout, stopped
    assert not (tmp_path / "pgdata" / "postmaster.pid").exists()


async def open_streams(http: httpx2.AsyncClient, url: str, token: str, count: int) -> list[httpx2.Response]:
    """``count`` idle GET event streams of ``url`` opened at once with ``token`` (their headers read, bodies not)."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    return list(await asyncio.gather(*[http.send(http.build_request("GET", url, headers=headers), stream=True)
                                       for _ in range(count)]))


async def test_sigterm_stops_an_http_server_whatever_event_streams_are_open(tmp_path):
    """100 idle GET event streams (50 per token, under a --max-streams of 50) do not hold the server up: SIGTERM
    ends it within a few seconds, cleanly, and every stream ends with it. One stream over a token's bound, and
    any call of that token while it holds them all, gets 429 with a JSON error; the other token is not affected."""
    tokens = write_tokens(tmp_path)
    with http_process(tmp_path, "--backend", "memory", serve_options=("--max-streams", "50")) as (process, url, log):
        limits = httpx2.Limits(max_connections=None, max_keepalive_connections=None)
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(10), limits=limits) as http:
            streams = [*await open_streams(http, url, tokens["acme"], 50), *await open_streams(http, url, tokens["acme-corp"], 50)]
            assert [stream.status_code for stream in streams] == [200] * 100
            [beyond] = await open_streams(http, url, tokens["acme"], 1)
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            refused_call = await http.post(url, json=call, headers={"Authorization": f"Bearer {tokens['acme']}",
                                                                     "Accept": "application/json, text/event-stream"})
            # However the header is spelt or repeated, the request is served as the token it counts against.
            stream = {"Accept": "text/event-stream"}
            respelt = [await http.send(http.build_request("GET", url, headers=headers), stream=True) for headers in (
                {**stream, "Authorization": f"bEARER {tokens['acme']}"},
                [*stream.items(), ("Authorization", f"Bearer {tokens['acme']}"), ("Authorization", "Bearer junk")])]
            for refused in (beyond, refused_call, *respelt):
                assert refused.status_code == 429 and "open requests" in json.loads(await refused.aread())["error"]
            await streams[-1].aclose()  # the other token, one below its bound again: served
            async with http_session(url, tokens["acme-corp"]) as corp:
                assert (await corp.ok("remember", entries=["Prefers green tea"]))["stored"] == 1
            started = time.monotonic()
            process.terminate()
            await asyncio.to_thread(assert_stopped_cleanly, process, log, 10)
            stopped_s = time.monotonic() - started
            ends = await asyncio.wait_for(asyncio.gather(*[stream.aread() for stream in streams[:-1]],
                                                         return_exceptions=True), 10)
    assert stopped_s < 5, stopped_s
    assert not [end for end in ends if isinstance(end, BaseException) and not isinstance(end, httpx2.HTTPError)]
