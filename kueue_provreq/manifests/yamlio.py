"""Reading multi-document YAML strictly, remembering where every key came from.

PyYAML's SafeLoader accepts duplicate mapping keys (the last one silently
wins) and turns unquoted timestamps into ``datetime``.  Kubernetes tooling
treats the first as an error and the second as a string, and so does this
loader.  Mappings and sequences are built as ``dict``/``list`` subclasses that
carry the line of each key and item, so an error found later, while decoding
an object, can still name ``file.yaml:12``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

import yaml

from kueue_provreq.manifests.codec import describe
from kueue_provreq.manifests.errors import ManifestError


class SourcedDict(dict[str, Any]):
    """A YAML mapping: a plain dict plus ``source``, ``line`` and ``key_lines``."""

    source: str = ""
    line: int = 0
    key_lines: dict[Any, int]


class SourcedList(list[Any]):
    """A YAML sequence: a plain list plus ``source``, ``line`` and ``item_lines``."""

    source: str = ""
    line: int = 0
    item_lines: list[int]


# libyaml's parser when PyYAML has it (its wheels do): a cluster dump of a megabyte parses in
# a fraction of the time the pure-Python one takes; the constructors below are the same.
_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[valid-type,misc]
    source = ""


# Times stay strings, as in JSON: the codec parses them where the model wants a Time.
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Any:
    data = SourcedDict()
    data.source, data.line, data.key_lines = loader.source, node.start_mark.line + 1, {}
    yield data
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            first = data.key_lines.get(key)
        except TypeError:
            raise ManifestError("mapping keys must be scalars",
                                source=f"{loader.source}:{line}") from None
        if first is not None:
            raise ManifestError(f"duplicate key {key!r} (first at line {first})",
                                source=f"{loader.source}:{line}")
        data.key_lines[key] = line
    # Non-string keys are kept here and rejected by the codec, with their field path.
    data.update(cast(dict[str, Any], loader.construct_mapping(node, deep=True)))


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> Any:
    data = SourcedList()
    data.source, data.line = loader.source, node.start_mark.line + 1
    data.item_lines = [item.start_mark.line + 1 for item in node.value]
    yield data
    data.extend(loader.construct_sequence(node, deep=True))


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)


#: The largest YAML text read at once: ten documents of the API server's 3 MiB request limit.
MAX_TEXT_BYTES = 30 * 1024 * 1024


def load_yaml_documents(text: str, source: str) -> list[dict[str, Any]]:
    """Every non-empty document of ``text``; each must be a mapping.

    ``source`` (a file name) prefixes error messages as ``source:line``.  Text beyond
    :data:`MAX_TEXT_BYTES`, or nested deeper than PyYAML's recursive composer can go,
    is refused with a :class:`ManifestError` rather than exhausting the process.
    """
    if len(text) > MAX_TEXT_BYTES:
        raise ManifestError(f"larger than {MAX_TEXT_BYTES // (1024 * 1024)} MiB", source=source)
    loader = _Loader(text)
    loader.source = source
    docs: list[dict[str, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                break
            doc = loader.construct_document(node)
            if doc is None:
                continue
            if not isinstance(doc, dict):
                raise ManifestError(f"a document must be a mapping, got {describe(doc)}",
                                    source=f"{source}:{node.start_mark.line + 1}")
            docs.append(doc)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        reason = " ".join(part for part in (e.context, e.problem) if part)
        raise ManifestError(reason or "invalid YAML", source=where) from None
    except yaml.YAMLError as e:
        raise ManifestError(str(e), source=source) from None
    except RecursionError:
        raise ManifestError("nested too deeply", source=source) from None
    finally:
        loader.dispose()
    return docs


def load_file(path: str | Path) -> list[dict[str, Any]]:
    """:func:`load_yaml_documents` of a file, errors prefixed with its name."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ManifestError(f"cannot read: {e}", source=str(path)) from None
    return load_yaml_documents(text, str(path))


_PATH_TOKEN = re.compile(r"\.?([^.\[\]]+)|\[([^\]]*)\]")


def locate(data: Any, path: str) -> str:
    """``source:line`` of the deepest part of ``path`` found in YAML-loaded
    ``data``; ``""`` when ``data`` did not come from :func:`load_yaml_documents`."""
    if not isinstance(data, SourcedDict):
        return ""
    node: Any = data
    line = data.line
    for m in _PATH_TOKEN.finditer(path):
        token = m.group(1) if m.group(1) is not None else m.group(2)
        if isinstance(node, SourcedDict) and token in node:
            line, node = node.key_lines.get(token, line), node[token]
        elif isinstance(node, SourcedList) and token.isdigit() and int(token) < len(node):
            line, node = node.item_lines[int(token)], node[int(token)]
        else:
            break
    return f"{data.source}:{line}"
