"""Reading multi-document YAML strictly, remembering where every key came from.

PyYAML's SafeLoader accepts duplicate mapping keys (the last one silently
wins) and turns unquoted timestamps into ``datetime``.  Kubernetes tooling
treats the first as an error and the second as a string, and so does this
loader.  Mappings and sequences are built as ``dict``/``list`` subclasses that
carry the line of each key and item, so an error found later, while decoding
an object, can still name ``file.yaml:12``.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Any, TextIO, cast

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

#: How many nodes aliases may add to a document beyond those its text spells out: enough for
#: any hand-written anchor reuse, and far below what "a billion laughs" expands to (each alias
#: of a nine-level bomb stands for 10**9 nodes that a later walk would visit).
MAX_ALIAS_NODES = 100_000


def _expanded_size(root: yaml.Node, source: str) -> tuple[int, int]:
    """How many nodes ``root`` has as the text spells it, and as its aliases expand it (a node
    reached through an alias counted again each time): linear in the text, never expanded."""
    distinct: set[int] = set()
    sizes: dict[int, int] = {}
    # an explicit stack: each node is entered once, then summed once its children are
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            continue
        if key in sizes:
            continue
        if key in distinct:
            raise ManifestError("a recursive alias (an anchor used inside itself)",
                                source=f"{source}:{node.start_mark.line + 1}")
        distinct.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)
    return len(distinct), sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def load_yaml_documents(text: str, source: str) -> list[dict[str, Any]]:
    """Every non-empty document of ``text``; each must be a mapping.

    ``source`` (a file name) prefixes error messages as ``source:line``.  Text beyond
    :data:`MAX_TEXT_BYTES`, aliases that expand a document by more than
    :data:`MAX_ALIAS_NODES` nodes, or nesting deeper than PyYAML's recursive composer can go,
    are refused with a :class:`ManifestError` before anything is built from the document,
    rather than exhausting the process (or whatever walks the result later).
    """
    docs: list[dict[str, Any]] = []
    for line, doc in _documents(text, source):
        if not isinstance(doc, dict):
            raise ManifestError(f"a document must be a mapping, got {describe(doc)}", source=f"{source}:{line}")
        docs.append(doc)
    return docs


def load_yaml_value(text: str, source: str) -> Any:
    """The one value ``text`` spells (a command-line value), with the limits of
    :func:`load_yaml_documents`; None for empty text."""
    values = [doc for _, doc in _documents(text, source)]
    if len(values) > 1:
        raise ManifestError("more than one YAML document", source=source)
    return values[0] if values else None


def _documents(text: str, source: str) -> list[tuple[int, Any]]:
    """Each non-empty document, and its first line."""
    if len(text) > MAX_TEXT_BYTES:
        raise ManifestError(f"larger than {MAX_TEXT_BYTES // (1024 * 1024)} MiB", source=source)
    loader = _Loader(text)
    loader.source = source
    docs: list[tuple[int, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                break
            distinct, expanded = _expanded_size(node, source)
            if expanded - distinct > MAX_ALIAS_NODES:
                raise ManifestError(f"aliases expand the document by more than {MAX_ALIAS_NODES:,} nodes "
                                    f"(an alias bomb?)", source=f"{source}:{node.start_mark.line + 1}")
            doc = loader.construct_document(node)
            if doc is not None:
                docs.append((node.start_mark.line + 1, doc))
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


#: Byte-order marks, and the encodings they announce (kubectl reads all three).
_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def read_text(path: str | Path, limit: int = MAX_TEXT_BYTES) -> str:
    """A text file, as the file system has it: UTF-8 (or UTF-16 or UTF-8 with a byte-order
    mark), at most ``limit`` bytes, checked before it is read; every refusal one
    :class:`ManifestError` naming the file and saying what is there instead (a folder, a path
    through a file, a symbolic link loop)."""
    source = str(path)
    if source == "":
        raise ManifestError("an empty path names no file", source="''")
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise ManifestError(f"larger than {limit // (1024 * 1024)} MiB", source=source)
            data = f.read(limit + 1)
    except OSError as e:
        raise ManifestError(path_problem(e), source=source) from None
    if len(data) > limit:  # a pipe or a device: no size to check first
        raise ManifestError(f"larger than {limit // (1024 * 1024)} MiB", source=source)
    return decode_text(data, source)


def read_stream(stream: TextIO, source: str = "<stdin>", limit: int = MAX_TEXT_BYTES) -> str:
    """Standard input as :func:`read_text` reads a file: its bytes when it has them (so that a
    byte-order mark is honoured), at most ``limit`` of them."""
    binary = getattr(stream, "buffer", None)
    data: bytes | str = binary.read(limit + 1) if binary is not None else stream.read(limit + 1)
    if len(data) > limit:
        raise ManifestError(f"larger than {limit // (1024 * 1024)} MiB", source=source)
    return data if isinstance(data, str) else decode_text(data, source)


def decode_text(data: bytes, source: str) -> str:
    """UTF-8, or what a byte-order mark says (UTF-8 or UTF-16); otherwise one line naming the byte."""
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), "utf-8")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        raise ManifestError(f"not {encoding.upper().removesuffix('-SIG')} text (byte {e.start})",
                            source=source) from None


def path_problem(e: OSError) -> str:
    """What an ``OSError`` on a path means, in the words of the file system's own layout."""
    reasons = {errno.ENOENT: "no such file or directory", errno.EISDIR: "a folder, not a file",
               errno.ENOTDIR: "a path through a file (a part of it is not a folder)",
               errno.ELOOP: "a symbolic link loop", errno.EACCES: "permission denied",
               errno.ENAMETOOLONG: "the name is too long"}
    return reasons.get(e.errno or 0, f"cannot read: {e.strerror or e}")


def load_file(path: str | Path) -> list[dict[str, Any]]:
    """:func:`load_yaml_documents` of a file (:func:`read_text`), errors prefixed with its name."""
    return load_yaml_documents(read_text(path), str(path))


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
