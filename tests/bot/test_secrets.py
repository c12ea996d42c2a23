import os
from pathlib import Path

import pytest

from bot.config.secrets import is_reference, resolve_secret
from bot.kernel.errors import SecretReferenceError


def value(ref: str, **kw) -> str | None:
    secret = resolve_secret(ref, **kw)
    return None if secret is None else secret.get_secret_value()


def test_plain_values_are_secrets_themselves() -> None:
    assert value("sk-abc", environ={}) == "sk-abc"
    assert value("", environ={}) is None
    assert not is_reference("sk-abc") and is_reference("env:X")


def test_env_reference() -> None:
    assert value("env:TOKEN", environ={"TOKEN": "t"}) == "t"


@pytest.mark.parametrize("env", [{}, {"TOKEN": ""}])
def test_missing_env_reference_is_an_error_that_says_what_to_do(env: dict) -> None:
    with pytest.raises(
        SecretReferenceError, match=r"'env:TOKEN'.*TOKEN is not set; export it.*env:TOKEN\? to make it optional"
    ):
        resolve_secret("env:TOKEN", environ=env)


def test_optional_reference_resolves_to_nothing() -> None:
    assert value("env:TOKEN?", environ={}) is None
    assert value("file:/nonexistent/x?", environ={}) is None
    assert value("credential:x?", environ={}) is None


def test_file_reference_relative_to_the_character(tmp_path: Path) -> None:
    (tmp_path / "tok").write_text("secret-value\n")
    assert value("file:tok", environ={}, base_dir=tmp_path) == "secret-value"
    assert value(f"file:{tmp_path / 'tok'}", environ={}) == "secret-value"


def test_file_reference_errors(tmp_path: Path) -> None:
    with pytest.raises(SecretReferenceError, match="no such file"):
        resolve_secret("file:missing", environ={}, base_dir=tmp_path)
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(SecretReferenceError, match="is empty"):
        resolve_secret("file:empty", environ={}, base_dir=tmp_path)


def test_a_file_reference_to_a_named_pipe_a_folder_or_a_huge_file_is_refused_without_hanging(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(SecretReferenceError, match=r"pipe is a named pipe \(FIFO\), not a regular file"):
        resolve_secret("file:pipe", environ={}, base_dir=tmp_path)
    (tmp_path / "dir").mkdir()
    with pytest.raises(SecretReferenceError, match=r"dir is a folder, not a regular file"):
        resolve_secret("file:dir", environ={}, base_dir=tmp_path)
    (tmp_path / "huge").write_bytes(b"k" * 70_000)
    with pytest.raises(SecretReferenceError, match=r"huge is larger than 64 KiB"):
        resolve_secret("file:huge", environ={}, base_dir=tmp_path)
    with pytest.raises(SecretReferenceError, match=r"a\\x00b is not a path: it contains a NUL byte"):
        resolve_secret("file:a\x00b", environ={}, base_dir=tmp_path)
    with pytest.raises(SecretReferenceError, match=r"no such file: \S*~no-such-user-0/key$"):
        resolve_secret("file:~no-such-user-0/key", environ={}, base_dir=tmp_path)
    (tmp_path / "latin1").write_bytes(b"caf\xe9")
    with pytest.raises(SecretReferenceError, match=r"latin1 is not UTF-8 text"):
        resolve_secret("file:latin1", environ={}, base_dir=tmp_path)


def test_systemd_credential(tmp_path: Path) -> None:
    (tmp_path / "discord-token").write_text("tok")
    assert value("credential:discord-token", environ={"CREDENTIALS_DIRECTORY": str(tmp_path)}) == "tok"
    with pytest.raises(
        SecretReferenceError,
        match=r"only when troupe runs under systemd; .*/etc/troupe/credentials/NAME "
        r"is the credential troupe_NAME",
    ):
        resolve_secret("credential:discord-token", environ={})


def test_reference_without_a_name() -> None:
    with pytest.raises(SecretReferenceError, match="nothing after 'env:'"):
        resolve_secret("env:", environ={})


def test_errors_never_contain_the_secret(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"\xff\xfe secret")
    with pytest.raises(SecretReferenceError) as info:
        resolve_secret("file:bin", environ={}, base_dir=tmp_path)
    assert "secret" not in str(info.value).replace("secret reference", "")
