"""systemd/troupe.service and systemd/troupe.env.example: what the unit promises, checked.

The unit is parsed as systemd reads it (keys may repeat), verified with ``systemd-analyze`` when
it is installed, and the example environment is checked against the daemon's real settings.
No test needs root, a running systemd or the network.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config.secrets import resolve_secret
from bot.config.settings import DaemonSettings

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "systemd" / "troupe.service"
ENV_EXAMPLE = REPO / "systemd" / "troupe.env.example"
INSTALLED_TROUPE = "/opt/troupe/bin/troupe"

#: Keys systemd accumulates when repeated; any other key set twice is a mistake (the last wins).
LIST_KEYS = {"Environment", "SystemCallFilter", "LoadCredential", "After", "Wants"}


def parse_unit(text: str) -> dict[str, list[tuple[str, str]]]:
    """Sections of a unit file, each a list of (key, value) in order, repeats kept."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):  # continuation
            pending = line[:-1] + " "
            continue
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        assert current is not None, f"setting outside a section: {line!r}"
        key, sep, value = line.partition("=")
        assert sep, f"not a key=value line: {line!r}"
        current.append((key.strip(), value.strip()))
    return sections


@pytest.fixture(scope="module")
def unit() -> dict[str, list[tuple[str, str]]]:
    return parse_unit(UNIT.read_text())


def values(unit: dict[str, list[tuple[str, str]]], key: str, section: str = "Service") -> list[str]:
    return [v for k, v in unit.get(section, []) if k == key]


def one(unit: dict[str, list[tuple[str, str]]], key: str, section: str = "Service") -> str:
    found = values(unit, key, section)
    assert len(found) == 1, f"[{section}] {key}= is set {len(found)} times, expected once"
    return found[0]


def seconds(span: str) -> float:
    """A systemd time span such as ``45``, ``45s``, ``1min 30s``."""
    units = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}
    total = 0.0
    for number, unit_name in re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", span):
        total += float(number) * units[unit_name]
    return total


def environment(unit: dict[str, list[tuple[str, str]]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for line in values(unit, "Environment"):
        for assignment in line.split():
            key, _, value = assignment.partition("=")
            env[key] = value
    return env


# -- the unit's directives -------------------------------------------------------------------


def test_unit_has_its_sections_and_no_accidental_repeats(unit: dict[str, list[tuple[str, str]]]) -> None:
    assert set(unit) == {"Unit", "Service", "Install"}
    for section, items in unit.items():
        keys = [k for k, _ in items if k not in LIST_KEYS]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        assert not repeated, f"[{section}] sets {repeated} more than once; only the last would count"


def test_service_lifecycle(unit: dict[str, list[tuple[str, str]]]) -> None:
    # Type=notify-reload needs systemd 253; Debian 12 has 252.
    assert one(unit, "Type") == "notify"
    assert one(unit, "NotifyAccess") == "main"
    assert one(unit, "ExecStart") == f"{INSTALLED_TROUPE} start /etc/troupe/characters"
    assert one(unit, "ExecReload") == f"{INSTALLED_TROUPE} reload"
    assert seconds(one(unit, "WatchdogSec")) == 30
    assert one(unit, "Restart") == "on-failure"
    assert seconds(one(unit, "RestartSec")) == 5
    assert "78" in one(unit, "RestartPreventExitStatus").split()
    assert "network-online.target" in " ".join(values(unit, "After", "Unit"))
    assert "network-online.target" in " ".join(values(unit, "Wants", "Unit"))
    assert one(unit, "WantedBy", "Install") == "multi-user.target"


def test_stop_timeout_leaves_room_for_the_daemons_drain(unit: dict[str, list[tuple[str, str]]]) -> None:
    drain = DaemonSettings.model_fields["stop_timeout_s"].default
    # The drain, then closing connections and the database, before systemd sends SIGKILL.
    assert seconds(one(unit, "TimeoutStopSec")) >= drain + 10


def test_directories_account_and_environment(unit: dict[str, list[tuple[str, str]]]) -> None:
    assert one(unit, "DynamicUser") == "yes"
    assert one(unit, "User") == "troupe"
    assert one(unit, "StateDirectory") == "troupe"
    assert one(unit, "RuntimeDirectory") == "troupe"
    assert one(unit, "ConfigurationDirectory") == "troupe"
    assert one(unit, "EnvironmentFile") == "-/etc/troupe/troupe.env"
    env = environment(unit)
    # %S and %t are /var/lib and /run for a system service: the state and runtime directories.
    assert env["TROUPE_DATA_DIR"] == "%S/troupe"
    assert env["TROUPE_CONTROL_SOCKET"] == "%t/troupe/control.sock"


def test_credentials_come_from_one_directory(unit: dict[str, list[tuple[str, str]]]) -> None:
    assert values(unit, "LoadCredential") == ["troupe:/etc/troupe/credentials"]


def test_a_directory_credential_resolves_by_the_name_systemd_gives_it(tmp_path: Path) -> None:
    # LoadCredential=ID:/dir puts /dir/FILE in $CREDENTIALS_DIRECTORY as ID_FILE (systemd.exec(5)).
    credential_id = values(parse_unit(UNIT.read_text()), "LoadCredential")[0].partition(":")[0]
    (tmp_path / f"{credential_id}_iris-discord").write_text("the-token\n")
    secret = resolve_secret(
        f"credential:{credential_id}_iris-discord", environ={"CREDENTIALS_DIRECTORY": str(tmp_path)}
    )
    assert secret is not None and secret.get_secret_value() == "the-token"


HARDENING = {
    "UMask": "0077",
    "NoNewPrivileges": "yes",
    "CapabilityBoundingSet": "",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "ProtectClock": "yes",
    "ProtectHostname": "yes",
    "RestrictNamespaces": "yes",
    "RestrictRealtime": "yes",
    "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes",
    "SystemCallArchitectures": "native",
}


@pytest.mark.parametrize("key", sorted(HARDENING))
def test_hardening(unit: dict[str, list[tuple[str, str]]], key: str) -> None:
    assert one(unit, key) == HARDENING[key]


def test_network_and_system_calls(unit: dict[str, list[tuple[str, str]]]) -> None:
    # HTTPS and Discord voice (UDP) over IPv4/6; journal, notify and control sockets over AF_UNIX.
    assert set(one(unit, "RestrictAddressFamilies").split()) == {"AF_UNIX", "AF_INET", "AF_INET6"}
    filters = values(unit, "SystemCallFilter")
    assert filters[0] == "@system-service"  # the allow list comes first; later ~ lines only remove
    assert all(f.startswith("~") for f in filters[1:])


def test_the_unit_gives_more_open_files_than_the_daemon_could_take_itself(
    unit: dict[str, list[tuple[str, str]]],
) -> None:
    # The daemon raises its soft limit to the hard one, but the filter below refuses setrlimit
    # (@resources) under the unit: only LimitNOFILE= lifts systemd's default of 1,024.
    assert "~@privileged @resources" in values(unit, "SystemCallFilter")
    assert int(one(unit, "LimitNOFILE")) >= 65536


def test_memory_deny_write_execute_is_a_justified_choice() -> None:
    # Either setting is defensible; whichever is chosen must say why next to it.
    text = UNIT.read_text()
    match = re.search(r"((?:^#.*\n)+)MemoryDenyWriteExecute=(yes|no)$", text, re.MULTILINE)
    assert match, "MemoryDenyWriteExecute= must be set explicitly, with a comment above it"
    assert re.search(r"ctypes|cffi|libffi", match.group(1))


def test_readme_names_credentials_as_the_unit_loads_them() -> None:
    credential_id = values(parse_unit(UNIT.read_text()), "LoadCredential")[0].partition(":")[0]
    readme = (REPO / "README.md").read_text()
    assert f"credential:{credential_id}_" in readme
    assert "/etc/troupe/credentials" in readme


# -- systemd-analyze -------------------------------------------------------------------------

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")


@pytest.fixture
def testable_unit(tmp_path: Path) -> Path:
    """The unit with /opt/troupe/bin/troupe replaced by this environment's troupe (verify checks
    that ExecStart= exists)."""
    troupe = Path(sys.executable).with_name("troupe")
    executable = troupe if troupe.exists() else Path(sys.executable)
    path = tmp_path / "troupe.service"
    path.write_text(UNIT.read_text().replace(INSTALLED_TROUPE, str(executable)))
    return path


def run_analyze(*args: str) -> subprocess.CompletedProcess[str]:
    assert SYSTEMD_ANALYZE is not None
    return subprocess.run([SYSTEMD_ANALYZE, *args], capture_output=True, text=True, timeout=60, check=False)


@needs_systemd_analyze
def test_systemd_analyze_verify_is_clean(testable_unit: Path) -> None:
    result = run_analyze("verify", "--man=no", str(testable_unit))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # Unknown or misspelled settings are only warnings (exit 0): none may mention the unit.
    about_unit = [line for line in output.splitlines() if "troupe" in line]
    assert not about_unit, "\n".join(about_unit)


@needs_systemd_analyze
def test_systemd_analyze_verify_would_catch_a_mistake(testable_unit: Path) -> None:
    """The check above can fail: a misspelt setting shows up in the output."""
    testable_unit.write_text(testable_unit.read_text().replace("ProtectClock=", "ProtectClok="))
    result = run_analyze("verify", "--man=no", str(testable_unit))
    assert "ProtectClok" in result.stdout + result.stderr


@needs_systemd_analyze
def test_security_exposure_stays_low(testable_unit: Path) -> None:
    result = run_analyze("security", "--offline=yes", "--no-pager", str(testable_unit))
    if result.returncode != 0 and "offline" in result.stderr:
        pytest.skip(f"this systemd-analyze has no --offline: {result.stderr.strip()}")
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match, result.stdout + result.stderr
    # 1.1 when written (systemd 252); 0 is best, 10 is an unsandboxed root service.
    assert float(match.group(1)) <= 1.5, result.stdout


# -- the example environment file ------------------------------------------------------------

ASSIGNMENT = re.compile(r"^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$")
SHARED_KEYS = {
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_SMALL_MODEL",
    "OPENAI_LARGE_MODEL",
    "OPENAI_EMBEDDING_MODEL",
}
SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD")
SECRET_VALUE = [
    re.compile(r"sk-[A-Za-z0-9_-]{8,}"),  # OpenAI-style keys
    re.compile(r"\d{6,}:[A-Za-z0-9_-]{30,}"),  # Telegram bot tokens
    re.compile(r"[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{20,}"),  # Discord bot tokens
    re.compile(r"[A-Za-z0-9+/_=-]{32,}"),  # anything long and random
]


def example_assignments() -> list[tuple[bool, str, str]]:
    """(active, key, value) for every KEY=value line, commented-out ones included."""
    found = []
    for line in ENV_EXAMPLE.read_text().splitlines():
        match = ASSIGNMENT.match(line.strip())
        if match:
            found.append((match.group(1) is None, match.group(2), match.group(3)))
    return found


def test_env_example_only_has_known_settings() -> None:
    troupe_keys = {f"TROUPE_{name.upper()}" for name in DaemonSettings.model_fields}
    keys = {key for _, key, _ in example_assignments()}
    assert keys, "no assignments found"
    assert keys <= troupe_keys | SHARED_KEYS, sorted(keys - troupe_keys - SHARED_KEYS)
    # Every daemon setting is documented there.
    assert troupe_keys <= keys, sorted(troupe_keys - keys)


def test_env_example_holds_no_secret() -> None:
    for _, key, value in example_assignments():
        if SECRET_NAME.search(key):
            assert value == "", f"{key} has a value in the example"
        for pattern in SECRET_VALUE:
            assert not pattern.search(value), f"{key}={value} looks like a secret"


def test_env_example_values_are_valid_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for _, key, value in example_assignments():
        if key.startswith("TROUPE_") and value:
            monkeypatch.setenv(key, value)
    settings = DaemonSettings(_env_file=None)
    assert settings.health_host == "127.0.0.1"  # the example never serves beyond loopback


def test_env_example_active_lines_are_safe_defaults() -> None:
    active = {key: value for is_active, key, value in example_assignments() if is_active}
    defaults = {f"TROUPE_{name.upper()}": field.default for name, field in DaemonSettings.model_fields.items()}
    for key, value in active.items():
        assert key.startswith("TROUPE_"), f"{key} should stay commented out in the example"
        assert key not in {"TROUPE_HEALTH_PORT", "TROUPE_HEALTH_HOST", "TROUPE_HEALTH_TOKEN"}, (
            f"{key}: the health endpoint stays off unless the operator turns it on"
        )
        assert str(defaults[key]) == value, f"{key}={value} is not the default ({defaults[key]})"
