"""Loading character files: every problem reported at once, never a traceback."""

from __future__ import annotations

import difflib
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import SecretStr, ValidationError
from pydantic_core import ErrorDetails

from bot.config.character._plugin_names import resolve_plugins
from bot.config.character._reading import read_json
from bot.config.character._result import LoadResult
from bot.config.character._schema import ELIZAOS_FIELDS, Character, KnowledgeSource, json_type
from bot.config.secrets import resolve_secret
from bot.kernel.errors import Problem, SecretReferenceError
from bot.kernel.files import expand_home, file_key, mode_of, shown

__all__ = ["load_character", "load_characters"]


def _json_path(loc: tuple[int | str, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


_FIELD_HINTS = {
    "name": 'add "name": "the character\'s name"',
    "bio": 'add "bio": "a sentence or a list of sentences about the character"',
    "content": 'add "content": {"text": "..."}',
}


def _problem_from_error(err: ErrorDetails) -> Problem:
    loc = tuple(err["loc"])
    kind = err["type"]
    got = json_type(err.get("input"))
    if kind == "missing":
        hint = _FIELD_HINTS.get(str(loc[-1]), "add it")
        message = f"required field is missing: {hint}"
    elif kind == "string_type":
        message = f"must be text (a string in quotes), not {got}"
    elif kind == "list_type":
        message = f"must be a list [...], not {got}"
    elif kind in ("dict_type", "model_type", "model_attributes_type"):
        message = f"must be an object {{...}}, not {got}"
    elif kind in ("bool_type", "bool_parsing"):
        message = f"must be true or false, not {got}"
    elif kind == "extra_forbidden":
        message = "unknown key here; remove it or check its spelling"
        if len(loc) >= 2 and loc[-2] == "style":
            close = difflib.get_close_matches(str(loc[-1]).lower(), ["all", "chat", "post"], n=1, cutoff=0.6)
            guess = f"; did you mean {close[0]!r}?" if close else ""
            message = f'unknown style key; style has "all", "chat" and "post"{guess}'
    else:
        message = err["msg"].removeprefix("Value error, ")
    return Problem(_json_path(loc), message)


def load_character(path: str | Path, *, environ: Mapping[str, str] | None = None) -> LoadResult:
    """Read and validate one character file. Never raises for bad input: see ``problems``.

    Every problem is reported at once: the parts of the file that are well-formed (plugins,
    secrets, knowledge paths) are checked even when other fields do not validate.

    Secret references are resolved against ``environ`` (default: the process environment,
    ``.env`` included once the daemon has loaded it).
    """
    path = Path(path)
    result = LoadResult(source=path)
    data, result.problems = read_json(path)
    if result.problems:
        return result
    if not isinstance(data, dict):
        kind = "a list (several characters in one file?)" if isinstance(data, list) else json_type(data)
        result.problems.append(Problem("$", f"a character file holds one JSON object {{...}}, not {kind}"))
        return result
    character: Character | None = None
    try:
        character = Character.model_validate(data)
    except ValidationError as exc:
        result.problems = [_problem_from_error(e) for e in exc.errors()]

    if character is not None:
        resolve_plugins(character.plugins, character.clients, character.model_provider, result)
        secrets = {"settings.secrets": character.settings_secrets, "secrets": character.secrets}
        knowledge = character.knowledge
    else:  # keep going on the parts that are well-formed
        provider = data.get("modelProvider")
        resolve_plugins(
            _strings(data.get("plugins")),
            _strings(data.get("clients")),
            provider if isinstance(provider, str) else None,
            result,
        )
        settings = data.get("settings")
        secrets = {
            where: {k: v for k, v in raw.items() if isinstance(v, str)}
            for where, raw in (
                ("settings.secrets", settings.get("secrets") if isinstance(settings, dict) else None),
                ("secrets", data.get("secrets")),
            )
            if isinstance(raw, dict)
        }
        knowledge = _well_formed_knowledge(data.get("knowledge"))
    resolved = _resolve_secrets(secrets, path.parent, environ, result)
    _check_knowledge(knowledge, path.parent, result)
    for key in data:
        if key not in _KNOWN_KEYS:
            result.warnings.append(Problem(f"$.{key}", _unknown_key_message(key)))
    if character is not None:
        character._secrets = resolved
        character._base_dir = path.parent.absolute()
        result.character = character
    return result


def _field_names() -> frozenset[str]:
    names = set(ELIZAOS_FIELDS)
    for name, info in Character.model_fields.items():
        names.add(name)
        if info.alias:
            names.add(info.alias)
    return frozenset(names)


_KNOWN_KEYS = _field_names()
_SUGGESTABLE = {name.casefold(): name for name in _KNOWN_KEYS if "_" not in name}


def _unknown_key_message(key: str) -> str:
    """An unknown key's warning, with the field it most likely meant."""
    close = difflib.get_close_matches(key.casefold(), list(_SUGGESTABLE), n=1, cutoff=0.75)
    if close:
        return f"unknown key, kept but unused; did you mean {_SUGGESTABLE[close[0]]!r}?"
    return "unknown key, kept but unused; check its spelling"


def _well_formed_knowledge(value: object) -> list[KnowledgeSource]:
    """The knowledge items that validate (the others are reported already)."""
    items: list[KnowledgeSource] = []
    for item in value if isinstance(value, list) else []:
        try:
            items.append(KnowledgeSource.model_validate(item))
        except ValidationError:
            items.append(KnowledgeSource(text=""))  # keep the indexes of the items after it
    return items


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _resolve_secrets(
    sources: dict[str, dict[str, str]], base_dir: Path, environ: Mapping[str, str] | None, result: LoadResult
) -> dict[str, SecretStr]:
    """Resolve every secret; later sources win (``secrets`` over ``settings.secrets``, as bot/config/settings.py says)."""
    resolved: dict[str, SecretStr] = {}
    for where, mapping in sources.items():
        for key, value in mapping.items():
            try:
                secret = resolve_secret(value, environ=environ, base_dir=base_dir)
            except SecretReferenceError as exc:
                result.problems.append(Problem(f"$.{where}.{key}", str(exc)))
                continue
            if secret is not None:
                resolved[key] = secret
    return resolved


def _check_knowledge(knowledge: list[KnowledgeSource], base_dir: Path, result: LoadResult) -> None:
    for i, item in enumerate(knowledge):
        if item.kind in ("text", "url"):
            continue
        target = expand_home(item.path or item.directory or "")
        full = target if target.is_absolute() else base_dir / target
        mode = mode_of(full)
        if mode is None:
            result.problems.append(
                Problem(
                    f"$.knowledge[{i}].{item.kind}",
                    f"{shown(full)} does not exist; fix the path (relative to the character file)",
                )
            )
        elif item.kind == "directory" and not stat.S_ISDIR(mode):
            result.problems.append(
                Problem(f"$.knowledge[{i}].directory", f'{shown(full)} is a file; use "path" for a file')
            )


def load_characters(paths: Iterable[str | Path], *, environ: Mapping[str, str] | None = None) -> list[LoadResult]:
    """Load several files and flag characters that would share an agent id or a name."""
    results = [load_character(p, environ=environ) for p in paths]
    by_id: dict[str, LoadResult] = {}
    by_name: dict[str, LoadResult] = {}
    for result in results:
        character = result.character
        if character is None:
            continue
        first = by_id.get(character.agent_id)
        if first is not None and file_key(first.source) == file_key(result.source):
            result.problems.append(Problem("$", "this file is listed twice"))
            continue
        if first is not None:
            result.problems.append(
                Problem(
                    "$.id" if character.id else "$.name",
                    f"agent id {character.agent_id} is already used by {first.source}; "
                    'give one of them a different "name" or an explicit "id"',
                )
            )
        else:
            by_id[character.agent_id] = result
        other = by_name.get(character.name.casefold())
        if other is not None and first is None:
            result.problems.append(
                Problem("$.name", f"{other.source} already has a character named {character.name!r}; rename one")
            )
        else:
            by_name.setdefault(character.name.casefold(), result)
    return results
