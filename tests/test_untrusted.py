"""The toolkit for hostile input (podium.untrusted): each reader against what an agent or a bundle can leave."""

from __future__ import annotations

import json
import os
import socket

import pytest

from podium.untrusted import (
    UntrustedJSONError,
    iter_chunks,
    iter_json_lines,
    loads,
    loads_object,
    open_beneath,
    open_regular,
    printable,
    read_bounded,
    regular_size,
)


@pytest.fixture
def folder(tmp_path):
    """A run folder as a hostile agent leaves it: a file, links to it and to a secret, a FIFO, a socket, a
    hard link, a folder, and a link to a folder with the secret below it."""
    secret = tmp_path / "secret.txt"
    secret.write_text("the private answers")
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (run / "plain.txt").write_text("hello")
    (run / "sub" / "deep.txt").write_text("deep")
    (run / "link.txt").symlink_to(secret)
    (run / "dirlink").symlink_to(tmp_path)
    os.mkfifo(run / "fifo")
    os.link(secret, run / "hard.txt")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(run / "sock"))
    yield run
    listener.close()


def test_open_regular_takes_only_regular_files(folder):
    fd = open_regular(folder / "plain.txt")
    assert fd is not None and os.read(fd, 100) == b"hello"
    os.close(fd)
    for name in ("link.txt", "fifo", "sock", "sub", "missing", "dirlink"):
        assert open_regular(folder / name) is None, name
    assert open_regular("/dev/zero") is None
    assert open_regular(str(folder / "bad\0name")) is None


def test_a_second_hard_link_is_refused_where_asked(folder):
    fd = open_regular(folder / "hard.txt")
    assert fd is not None
    os.close(fd)
    assert open_regular(folder / "hard.txt", single_link=True) is None
    assert regular_size(folder / "hard.txt", single_link=True) is None
    assert regular_size(folder / "hard.txt") == len("the private answers")
    assert regular_size(folder / "link.txt") is None


def test_open_beneath_follows_no_link_at_any_level(folder):
    fd = open_beneath(folder, "sub/deep.txt")
    assert fd is not None and os.read(fd, 10) == b"deep"
    os.close(fd)
    for relative in ("dirlink/secret.txt", "../secret.txt", "/etc/passwd", "sub/../plain.txt", "", "link.txt"):
        assert open_beneath(folder, relative) is None, relative
    # the root itself given as a link is refused too
    assert open_beneath(folder / "dirlink", "secret.txt") is None


def test_reads_are_bounded_and_stop_at_the_size_seen_when_opened(folder):
    big = folder / "big.bin"
    big.write_bytes(b"x" * (3 << 20))
    assert read_bounded(big, 10) == b"x" * 10
    assert len(b"".join(iter_chunks(big))) == 3 << 20
    assert read_bounded(folder / "link.txt", 100) is None
    assert iter_chunks(folder / "fifo") is None
    assert read_bounded("/proc/self/status", 100) == b""  # size 0 as seen: nothing, not an endless read


def test_json_refuses_deep_large_duplicated_and_broken_documents():
    assert loads(b'{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    deep = b"[" * 200_000 + b"]" * 200_000  # RecursionError inside json, not a ValueError
    with pytest.raises(UntrustedJSONError, match="deep"):
        loads(deep, max_bytes=1 << 20)
    with pytest.raises(UntrustedJSONError, match="deeper than 8"):
        loads(json.dumps([[[[[[[[[[1]]]]]]]]]]), max_depth=8)
    with pytest.raises(UntrustedJSONError, match="over the 1000 bytes"):
        loads(b"{}" * 1000, max_bytes=1000)
    with pytest.raises(UntrustedJSONError, match="over the"):
        loads("é" * 600, max_bytes=1000)  # counted in bytes, not characters
    with pytest.raises(UntrustedJSONError, match="'medal' twice"):
        loads(b'{"medal": "none", "medal": "gold"}', unique_keys=True, what="record.json")
    assert loads(b'{"medal": "none", "medal": "gold"}') == {"medal": "gold"}
    with pytest.raises(UntrustedJSONError, match="not valid JSON"):
        loads(b"\xff\xfe{")
    with pytest.raises(UntrustedJSONError, match=r"manifest\.json is not a JSON object"):
        loads_object(b"[1]", what="manifest.json")
    assert isinstance(UntrustedJSONError("x"), ValueError)


def test_json_lines_mark_what_is_not_an_object():
    lines = [b'{"a": 1}\n', b"\n", b"[1]\n", b"not json\n", b"[" * 5000 + b"\n", b'{"b": 2}']
    assert list(iter_json_lines(lines)) == [{"a": 1}, None, None, None, {"b": 2}]


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain name.csv", "plain name.csv"),
        ("a\nb", "a\\nb"),
        ("\x1b[2Jcleared", "\\e[2Jcleared"),
        ("evil\u202etxt.csv", "evil\\u202etxt.csv"),
        ("hid\u200bden", "hid\\u200bden"),
        ("bytes\udcff", "bytes\\udcff"),
        ("bell\x07", "bell\\x07"),
    ],
)
def test_printable_escapes_what_a_terminal_would_act_on(raw, shown):
    assert printable(raw) == shown
    shown.encode("utf-8")  # always encodable: a lone surrogate never reaches the terminal


def test_printable_cuts_before_escaping():
    assert printable("\x1b" * 10, limit=3) == "\\e\\e\\e..."
    assert printable("short", limit=10) == "short"


@pytest.mark.parametrize(
    ("relative", "reason", "part"),
    [
        ("link.txt", "link", None), ("fifo", "fifo", None), ("sock", "socket", None), ("sub", "directory", None),
        ("hard.txt", "hard_link", None), ("absent.txt", "missing", None), ("dirlink/secret.txt", "below", "dirlink"),
        ("plain.txt/x", "below", "plain.txt"), ("../secret.txt", "name", None), ("/etc/passwd", "name", None),
        ("nul\x00.txt", "name", None),
    ],
)  # fmt: skip
def test_open_file_beneath_says_why_it_refused(folder, relative, reason, part):
    """The raising form callers use to say why in their own words (the grader's messages): every refusal has its
    reason, and the component below the folder that was a link or a file is named."""
    from podium.untrusted.files import NotOpened, open_file_beneath

    with pytest.raises(NotOpened) as refused:
        os.close(open_file_beneath(folder, relative, single_link=True))
    assert (refused.value.reason, refused.value.part) == (reason, part)


def test_open_file_beneath_refuses_a_folder_that_is_a_link_and_opens_a_plain_file(folder, tmp_path):
    from podium.untrusted.files import NotOpened, open_file, open_file_beneath

    (tmp_path / "runlink").symlink_to(folder)
    with pytest.raises(NotOpened) as refused:
        open_file_beneath(tmp_path / "runlink", "plain.txt")
    assert refused.value.reason == "root"
    fd = open_file_beneath(folder, "sub/deep.txt", single_link=True)
    try:
        assert os.read(fd, 10) == b"deep"
    finally:
        os.close(fd)
    fd = open_file(folder / "hard.txt")  # a second name is refused only when asked
    os.close(fd)
