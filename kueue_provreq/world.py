"""The world a controller reads, the effects it returns, and the one function that applies them.

Controllers are pure: ``reconcile(world, key, ctx) -> Result``.  They read
the world through ``Txn`` (which answers like an API server client: cached
reads, creates that may fail, injected faults) and everything they want done
comes back as effects.  Only the driver (conformance runner, simulator,
explorer, a live-cluster port) calls ``World.apply``.

The World is a mutable container of frozen objects so that applying one
effect costs O(1) however many objects it holds; ``snapshot()`` gives the
hashable, immutable view the explorer stores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import count
from typing import Any, Protocol

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.meta import ObjectMeta, OwnerReference, Time
from kueue_provreq.api.objects import (
    KINDS,
    Key,
    KubeObject,
    already_exists,
    key_of,
    not_found,
)
from kueue_provreq.machines.table import Transition

# --- effects -------------------------------------------------------------------


@attrs.define(unsafe_hash=True)
class Create:
    obj: KubeObject


@attrs.define(unsafe_hash=True)
class Update:
    obj: KubeObject
    transitions: tuple[Transition, ...] = ()
    """The fires of the declared machines that decided this write (the Workload's phase, its
    checks' states); empty when the write moves neither."""


@attrs.define(unsafe_hash=True)
class Delete:
    kind: str
    namespace: str
    name: str


@attrs.define(unsafe_hash=True)
class Event:
    type: str
    reason: str
    message: str
    kind: str
    namespace: str
    name: str


@attrs.define(unsafe_hash=True)
class MetricInc:
    name: str
    labels: FrozenMap[str, str]
    value: float = 1.0


Effect = Create | Update | Delete | Event | MetricInc


@attrs.define(unsafe_hash=True)
class Result:
    """What one reconcile wants done.  ``requeue_after`` is the "wake me at" delay (seconds)."""

    effects: tuple[Effect, ...] = ()
    requeue_after: float | None = None
    error: str | None = None
    settled: bool = False
    """The reconcile ran its whole pass: once its writes are applied, another pass would change
    nothing (and ask no earlier wake-up), so they need not wake it again.  False (the default)
    when it ended its pass early after a write, as upstream's controllers return after a patch
    and are triggered again by it.  The engine's verify mode checks the claim."""


NOTHING = Result()


@attrs.define(unsafe_hash=True)
class Fault:
    """An API error a scenario injects: every matching call fails and stores nothing."""

    verb: str
    kind: str
    error: str
    cached: bool = True
    name: str | None = None

    def matches(self, verb: str, kind: str, name: str) -> bool:
        return self.verb == verb and self.kind == kind and (self.name is None or self.name == name)

    def message(self, kind: str, name: str) -> str:
        if self.error == "AlreadyExists":
            return already_exists(kind, name)
        if self.error == "NotFound":
            return not_found(kind, name)
        return self.error


def _index_add(index: dict[str, tuple[Key, ...]], at: str, key: Key) -> None:
    """Add ``key`` under ``at`` (once, in insertion order).  An owner index holds one entry per
    owner and an owner has a handful of dependents (a Workload: its requests and templates),
    so the entries are tuples, which take a quarter of the memory of one-key dicts; adding and
    removing cost a scan of those few keys."""
    found: tuple[Key, ...] = index.get(at, ())
    if key not in found:
        index[at] = (*found, key)


def _index_remove(index: dict[str, tuple[Key, ...]], at: str, key: Key) -> None:
    """Remove ``key`` from under ``at``, and ``at`` when nothing is left under it (a world that
    keeps changing must not keep an entry per owner ever seen)."""
    found = index.get(at)
    if found is not None and key in found:
        i = found.index(key)  # (added once: no other entry equals it)
        rest = found[:i] + found[i + 1:]
        if rest:
            index[at] = rest
        else:
            del index[at]


# --- the world -------------------------------------------------------------------

Observer = Callable[[Key, KubeObject | None, KubeObject | None, int], None]
"""Told of every change to an object of the kind it observes: (key, old, new, parts), ``parts``
what the change changed as the bits of :mod:`~kueue_provreq.controllers.parts` when the writer
computed them (the engine's write path does, for a Workload update), else :data:`ALL_PARTS`."""

ALL_PARTS = -1
"""Every bit set: the parts of a change nobody computed (a create, a delete, an outside write)."""

OWNED = "owned"
Read = tuple[Any, Any]
"""What a reconcile read and the answer it got (:attr:`Hooks.reads`)."""
UNKEPT: Read = (None, None)
"""A read whose answer is not kept (a whole kind): what depends on it cannot be proven unchanged."""


class Index(Protocol):
    """An index kept over a world's objects of one kind, told of every change to them."""

    def changed(self, key: Key, before: KubeObject | None, after: KubeObject | None, parts: int = ALL_PARTS
                ) -> None: ...


@attrs.define
class Hooks:
    """What the one engine driving a world attaches to it: none of it is the world's state, and
    a world without an engine has none of it."""

    journal: dict[Key, KubeObject | None] | None = None
    """Where ``apply`` and ``put`` record the keys they touch, each with the object it held
    before the first of those changes (None: it did not exist): the engine learns of changes
    made outside its reconciles from it."""
    reads: list[Read] | None = None
    """While the engine keeps what a reconcile reads (verify mode): each read and its answer, as
    (key, object or None), (``OWNED``, kind, namespace, owner, objects) or ``UNKEPT``."""
    queue_index: Index | None = None
    """The scheduler's queue index (``controllers.queues.index``), kept up to date over the
    world's Workloads."""



class World:
    """Every object of a scenario, indexed by key, by kind and by owner."""

    __slots__ = ("_objects", "_by_kind", "_owned_by_name", "_dependents", "uid_counter", "faults", "hooks",
                 "_observers")

    def __init__(self, objects: Iterable[KubeObject] = (), faults: tuple[Fault, ...] = ()) -> None:
        self._objects: dict[Key, KubeObject] = {}
        self._by_kind: dict[str, dict[Key, KubeObject]] = {k: {} for k in KINDS}
        #: the two owner indexes: (kind, namespace) -> owner name -> keys, owner uid -> keys
        #: (see :func:`_index_add` for why tuples; nested, the names are the objects' own
        #: strings, where a flat (kind, namespace, name) key would cost a tuple per owner)
        self._owned_by_name: dict[tuple[str, str], dict[str, tuple[Key, ...]]] = {}
        self._dependents: dict[str, tuple[Key, ...]] = {}
        self.uid_counter = 0
        self.faults = faults
        self.hooks = Hooks()
        self._observers: dict[str, list[Observer]] = {}
        for obj in objects:
            self._put(obj)

    # --- reads -------------------------------------------------------------------
    def get(self, kind: str, namespace: str, name: str) -> KubeObject | None:
        key = (kind, namespace, name)
        found = self._objects.get(key)
        reads = self.hooks.reads
        if reads is not None:
            reads.append((key, found))
        return found

    def objects(self, kind: str, namespace: str | None = None) -> list[KubeObject]:
        if self.hooks.reads is not None:
            self.hooks.reads.append(UNKEPT)
        objs = self._by_kind[kind].values()
        if namespace is None:
            return list(objs)
        return [o for o in objs if o.metadata.namespace == namespace]

    def keys(self, kind: str) -> list[Key]:
        if self.hooks.reads is not None:
            self.hooks.reads.append(UNKEPT)
        return list(self._by_kind[kind])

    def owned_by_name(self, kind: str, namespace: str, owner_name: str) -> list[KubeObject]:
        """Objects of ``kind`` with any ownerReference named ``owner_name`` (Kueue's
        ``metadata.ownedByWorkload`` index, which ignores the owner's kind)."""
        keys = self._owned_keys(kind, namespace, owner_name)
        found = list(map(self._objects.__getitem__, keys)) if keys else []  # (no comprehension's call)
        if self.hooks.reads is not None:
            self.hooks.reads.append(((OWNED, kind, namespace, owner_name), tuple(found)))
        return found

    def still_reads(self, reads: list[Read]) -> bool:
        """Whether every read in ``reads`` (as :attr:`Hooks.reads` keeps them) answers the same now."""
        objects, owned_keys = self._objects, self._owned_keys
        for what, answer in reads:
            if what is None:
                return False
            if what[0] == OWNED:
                keys = owned_keys(*what[1:]) or ()
                if len(keys) != len(answer):
                    return False
                for key, obj in zip(keys, answer, strict=True):
                    if objects[key] is not obj:
                        return False
            elif objects.get(what) is not answer:
                return False
        return True

    def _owned_keys(self, kind: str, namespace: str, owner_name: str) -> tuple[Key, ...] | None:
        by_owner = self._owned_by_name.get((kind, namespace))
        return None if by_owner is None else by_owner.get(owner_name)

    def dependents(self, uid: str) -> list[Key]:
        """Keys of the objects with an ownerReference to ``uid`` (the garbage collector's view)."""
        if self.hooks.reads is not None:
            self.hooks.reads.append(UNKEPT)
        return list(self._dependents.get(uid, ()))

    def __len__(self) -> int:
        return len(self._objects)

    def observe(self, kind: str, observer: Observer) -> None:
        """Call ``observer(key, old, new)`` after every later change to an object of ``kind``
        (``old`` None: created; ``new`` None: deleted): how an index over the world stays
        up to date at O(1) per change."""
        self._observers.setdefault(kind, []).append(observer)

    def _notify(self, key: Key, old: KubeObject | None, new: KubeObject | None, parts: int = ALL_PARTS) -> None:
        for observer in self._observers.get(key[0], ()):
            observer(key, old, new, parts)

    def __iter__(self) -> Iterator[KubeObject]:
        return iter(list(self._objects.values()))

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    def next_uid(self, offset: int = 0) -> str:
        return f"00000000-0000-4000-8000-{self.uid_counter + offset + 1:012x}"

    def created(self, obj: KubeObject, now: Time, offset: int = 0) -> KubeObject:
        """``obj`` as the API server stores it on create: what it does not carry yet, a name
        for ``generateName`` (:func:`~kueue_provreq.api.naming.generated_name`, the first one
        the world does not hold), a fresh uid (``offset`` past the next one, for several creates
        before any is stored), generation 1 and the creation time ``now``."""
        meta = obj.metadata
        if meta.name and meta.uid and meta.generation is not None and meta.creation_timestamp is not None:
            return obj
        name = meta.name
        prefix = meta.extra.get("generateName")
        if not name and isinstance(prefix, str) and prefix:
            name = next(n for n in (naming.generated_name(meta.namespace, prefix, i) for i in count())
                        if (obj.KIND, meta.namespace, n) not in self._objects)
        return evolve(obj, metadata=evolve(
            meta, name=name, uid=meta.uid or self.next_uid(offset),
            generation=1 if meta.generation is None else meta.generation,
            creation_timestamp=now if meta.creation_timestamp is None else meta.creation_timestamp))

    # --- writes (drivers only) ------------------------------------------------------
    def apply(self, effect: Effect) -> list[Key]:
        """Apply one effect; returns the keys of every object it created, changed or deleted."""
        return [key for key, _ in self.apply_changes(effect)]

    def apply_changes(self, effect: Effect) -> list[tuple[Key, KubeObject | None]]:
        """:meth:`apply`, returning each key with the object it held before (None for a create),
        so that a driver can tell what changed, and whose a deleted object was."""
        changes = self.apply_unjournaled(effect)
        journal = self.hooks.journal
        if journal is not None:
            for key, old in changes:
                journal.setdefault(key, old)
        return changes

    def apply_unjournaled(self, effect: Effect) -> list[tuple[Key, KubeObject | None]]:
        """:meth:`apply_changes`, recorded in no journal: the engine's write path, which routes
        what it applies itself."""
        if isinstance(effect, Update):
            obj = effect.obj
            key = (obj.KIND, obj.metadata.namespace, obj.metadata.name)
            old = self._objects.get(key)
            if old is None:
                raise ValueError(not_found(key[0], key[2]))
            return self.replace(key, old, obj) or [(key, old)]
        if isinstance(effect, Create):
            key = key_of(effect.obj)
            if key in self._objects:
                raise ValueError(already_exists(key[0], key[2]))
            self._put(effect.obj, key)
            self._bump_uid(effect.obj)
            if self._observers:
                self._notify(key, None, effect.obj)
            return [(key, None)]
        if isinstance(effect, Delete):
            return self._delete_cascading((effect.kind, effect.namespace, effect.name))
        return []

    def lookup(self) -> Callable[[Key], KubeObject | None]:
        """What answers, for a key, the object under it, as ``get`` does, but as no read of any
        reconcile: the engine looks up what a write replaces, and what it reconciles is still
        there.  The map's own ``get``, for a caller to hold while it asks many times (the write
        path asks twice per write: no Python call per lookup)."""
        return self._objects.get

    def replace(self, key: Key, old: KubeObject, obj: KubeObject, parts: int = ALL_PARTS
                ) -> list[tuple[Key, KubeObject | None]] | None:
        """An Update of ``old``, stored under ``key``, to ``obj`` (which changes ``parts`` of
        it, if the caller knows them): :meth:`apply_unjournaled` for a write whose key and old
        object the caller has looked up already (the engine's write path builds a write's key
        once).  None when ``obj`` is stored (nearly every write: no list is built for it); what
        it deleted when it removed its last finalizer of a terminating object."""
        meta = obj.metadata
        if meta.deletion_timestamp is not None and not meta.finalizers:
            # the API server removes a terminating object once its last finalizer is gone
            return self._delete_cascading(key)
        refs = old.metadata.owner_references
        if refs is meta.owner_references or refs == meta.owner_references:
            # the indexes hold keys, not objects: only the two maps of objects change
            self._objects[key] = obj
            self._by_kind[key[0]][key] = obj
        else:
            self._drop(old)
            self._put(obj)
        observers = self._observers.get(key[0])
        if observers is not None:  # (``_notify``, inlined: every Workload write comes here)
            for observer in observers:
                observer(key, old, obj, parts)
        return None

    def put(self, obj: KubeObject) -> list[Key]:
        """Create or replace, as ``kubectl apply`` would."""
        key = key_of(obj)
        old = self._objects.get(key)
        if old is not None:
            self._drop(old)
        self._put(obj)
        self._bump_uid(obj)
        if self.hooks.journal is not None:
            self.hooks.journal.setdefault(key, old)
        if self._observers:
            self._notify(key, old, obj)
        return [key]

    def copy(self) -> World:
        w = World(faults=self.faults)
        for obj in self._objects.values():
            w._put(obj)
        w.uid_counter = self.uid_counter
        return w

    def snapshot(self) -> frozenset[KubeObject]:
        return frozenset(self._objects.values())

    # --- internals -----------------------------------------------------------------
    def _bump_uid(self, obj: KubeObject) -> None:
        uid = obj.metadata.uid
        if uid.startswith("00000000-0000-4000-8000-"):
            try:
                n = int(uid.rsplit("-", 1)[1], 16)
            except ValueError:
                return
            self.uid_counter = max(self.uid_counter, n)

    def _put(self, obj: KubeObject, key: Key | None = None) -> None:
        """Store ``obj`` and index it (under ``key``, when the caller has built it already)."""
        if key is None:
            key = key_of(obj)
        if not key[2]:
            raise ValueError(f"{key[0]} {key[1] + '/' if key[1] else ''}(no name): the API server stores no object "
                             "without metadata.name (World.created completes a generateName)")
        self._objects[key] = obj
        self._by_kind[key[0]][key] = obj
        refs = obj.metadata.owner_references
        if not refs:
            return
        at = key[:2]
        by_owner = self._owned_by_name.get(at)
        if by_owner is None:
            by_owner = self._owned_by_name[at] = {}
        for ref in refs:
            _index_add(by_owner, ref.name, key)
            if ref.uid:
                _index_add(self._dependents, ref.uid, key)

    def _drop(self, obj: KubeObject) -> None:
        key = key_of(obj)
        del self._objects[key]
        del self._by_kind[key[0]][key]
        refs = obj.metadata.owner_references
        if not refs:
            return
        at = key[:2]
        by_owner = self._owned_by_name.get(at, {})
        for ref in refs:
            _index_remove(by_owner, ref.name, key)
            if ref.uid:
                _index_remove(self._dependents, ref.uid, key)
        if not by_owner:
            self._owned_by_name.pop(at, None)

    def _delete_cascading(self, key: Key) -> list[tuple[Key, KubeObject | None]]:
        obj = self._objects.get(key)
        if obj is None:
            return []
        self._drop(obj)
        if self._observers:
            self._notify(key, obj, None)
        gone: list[tuple[Key, KubeObject | None]] = [(key, obj)]
        uid = obj.metadata.uid
        if uid:
            for dep in self._dependents.get(uid, ()):
                dep_obj = self._objects.get(dep)
                if dep_obj is None:
                    continue
                # the garbage collector deletes a dependent only when no other owner is left
                others = [r for r in dep_obj.metadata.owner_references
                          if r.uid != uid and self._owner_alive(r.uid, dep[1])]
                if not others:
                    gone.extend(self._delete_cascading(dep))
            self._dependents.pop(uid, None)
        return gone

    def _owner_alive(self, uid: str, namespace: str) -> bool:
        return any(o.metadata.uid == uid for o in self._objects.values()
                   if o.metadata.namespace in (namespace, ""))


# --- the client a controller uses during one reconcile -----------------------------


class Txn:
    """A controller's view of the API server for one reconcile.

    Reads answer as the API server would at that moment of the reconcile: they
    see the reconcile's own creates, updates and deletes (a delete hides the
    objects that the garbage collector would remove with it), and miss where a
    ``cached: false`` fault says the informer cache has not caught up.  Writes
    are checked as the API server checks them (existence, injected faults) and
    recorded as effects; nothing is applied to the world.
    """

    __slots__ = ("world", "now", "effects", "_overlay", "_deleted_uids", "_uids")

    def __init__(self, world: World, now: Time) -> None:
        self.world = world
        self.now = now
        self.effects: list[Effect] = []
        self._overlay: dict[Key, KubeObject | None] = {}
        self._deleted_uids: set[str] | None = None
        """The uids this reconcile deleted (None until it deletes: most reconciles do not)."""
        self._uids = 0

    def _fault(self, verb: str, kind: str, name: str) -> Fault | None:
        """The fault injected for this call, if any (callers ask only when some are)."""
        for f in self.world.faults:
            if f.matches(verb, kind, name):
                return f
        return None

    def _visible(self, key: Key) -> KubeObject | None:
        """The object as the API server has it now, ignoring cache faults."""
        if key in self._overlay:
            return self._overlay[key]
        world = self.world  # ``World.get``, inlined: the key is built already
        found = world._objects.get(key)
        reads = world.hooks.reads
        if reads is not None:
            reads.append((key, found))
        return found

    def _cascade(self, obj: KubeObject) -> None:
        """Hide what the garbage collector removes with ``obj``: dependents left with no owner."""
        uid = obj.metadata.uid
        deleted = self._deleted_uids
        if deleted is None:
            deleted = self._deleted_uids = set()
        if not uid or uid in deleted:
            return
        deleted.add(uid)
        for key in self.world.dependents(uid):
            dep = self._visible(key)
            if dep is not None and all(r.uid in deleted for r in dep.metadata.owner_references if r.uid):
                self._overlay[key] = None
                self._cascade(dep)

    def get(self, kind: str, namespace: str, name: str) -> KubeObject | None:
        """A cached read: misses where a fault says the cache has not caught up."""
        world = self.world
        if world.faults:
            for f in world.faults:
                if not f.cached and f.kind == kind and (f.name is None or f.name == name):
                    return None
        key = (kind, namespace, name)
        if self._overlay and key in self._overlay:  # ``_visible``, inlined: the hottest read
            return self._overlay[key]
        found = world._objects.get(key)
        reads = world.hooks.reads
        if reads is not None:
            reads.append((key, found))
        return found

    def owned_by_name(self, kind: str, namespace: str, owner_name: str) -> list[KubeObject]:
        """A cached list through the owner-name index (misses like ``get``)."""
        objs = self.world.owned_by_name(kind, namespace, owner_name)
        if self._overlay or self._deleted_uids or self.world.faults:
            seen = {o.metadata.name for o in objs}
            listed = [self.get(kind, namespace, o.metadata.name) for o in objs]
            for (k, ns, n), o in self._overlay.items():
                if k == kind and ns == namespace and n not in seen and o is not None and \
                        any(r.name == owner_name for r in o.metadata.owner_references):
                    listed.append(self.get(k, ns, n))
            objs = [o for o in listed if o is not None and
                    any(r.name == owner_name for r in o.metadata.owner_references)]
        return objs

    def new_metadata(self, name: str, namespace: str, labels: FrozenMap[str, str] = EMPTY,
                     owner_references: tuple[OwnerReference, ...] = ()) -> ObjectMeta:
        """The metadata the API server stores for this reconcile's next :meth:`create` (the
        next uid, generation 1, the creation time now): an object built with it, just before
        its create, is stored as built instead of copied by :meth:`World.created`.  A create
        that fails takes no uid, so the next object built this way gets the same one."""
        return ObjectMeta(name=name, namespace=namespace, uid=self.world.next_uid(self._uids), generation=1,
                          creation_timestamp=self.now, labels=labels, owner_references=owner_references)

    def create(self, obj: KubeObject) -> tuple[KubeObject | None, str | None]:
        meta = obj.metadata  # (``key_of``, inlined, as in ``update``)
        kind, ns, name = key = (obj.KIND, meta.namespace, meta.name)
        world = self.world
        if world.faults:
            fault = self._fault("create", kind, name)
            if fault is not None:
                return None, fault.message(kind, name)
        if self._visible(key) is not None:
            return None, already_exists(kind, name)
        stored = world.created(obj, self.now, self._uids)
        self._uids += 1
        self._overlay[key] = stored
        self.effects.append(Create(stored))
        return stored, None

    def update(self, obj: KubeObject, transitions: tuple[Transition, ...] = ()) -> str | None:
        """Write ``obj``; ``transitions`` are the fires that decided the write, if it moves
        the object along a declared lifecycle."""
        meta = obj.metadata  # (``key_of``, inlined: every write comes here)
        key = (obj.KIND, meta.namespace, meta.name)
        if self.world.faults:
            fault = self._fault("update", key[0], key[2])
            if fault is not None:
                return fault.message(key[0], key[2])
        if self._visible(key) is None:
            return not_found(key[0], key[2])
        self._overlay[key] = obj
        self.effects.append(Update(obj, transitions))
        return None

    def delete(self, kind: str, namespace: str, name: str) -> str | None:
        key = (kind, namespace, name)
        if self.world.faults:
            fault = self._fault("delete", kind, name)
            if fault is not None:
                return fault.message(kind, name)
        obj = self._visible(key)
        if obj is None:
            return not_found(kind, name)
        marked = marked_for_deletion(obj, self.now)
        if marked is not None:
            if marked is not obj:
                self._overlay[key] = marked
                self.effects.append(Update(marked))
            return None
        self._overlay[key] = None
        self._cascade(obj)
        self.effects.append(Delete(kind, namespace, name))
        return None

    def event(self, type_: str, reason: str, message: str, obj: KubeObject) -> None:
        m = obj.metadata
        if len(message) * 4 > c.EVENT_MESSAGE_LIMIT:  # (no UTF-8 character takes more than 4 bytes)
            message = truncate(message, c.EVENT_MESSAGE_LIMIT)
        self.effects.append(Event(type_, reason, message, obj.KIND, m.namespace, m.name))

    def metric(self, name: str, labels: dict[str, str], value: float = 1.0) -> None:
        self.effects.append(MetricInc(name, FrozenMap(labels), value))

    def result(self, requeue_after: float | None = None, error: str | None = None, settled: bool = False) -> Result:
        """What the reconcile wants done; ``settled``: see :attr:`Result.settled`."""
        if not self.effects and requeue_after is None and error is None:
            return NOTHING
        return Result(tuple(self.effects), requeue_after, error, settled and error is None)


def marked_for_deletion(obj: KubeObject, now: Time) -> KubeObject | None:
    """What a delete does to an object with finalizers: the API server only sets its
    ``deletionTimestamp`` (once; a second delete changes nothing) and keeps it until its
    finalizers are removed.  None for an object without finalizers: a delete removes it."""
    meta = obj.metadata
    if not meta.finalizers:
        return None
    if meta.terminating:
        return obj
    return evolve(obj, metadata=evolve(meta, deletion_timestamp=now))


def truncate(message: str, limit: int) -> str:
    """Kueue's ``api.TruncateEventMessage`` / ``TruncateConditionMessage`` (byte limits)."""
    if len(message) * 4 <= limit:  # no UTF-8 character takes more than 4 bytes
        return message
    raw = message.encode()
    if len(raw) <= limit:
        return message
    return raw[: limit - 4].decode(errors="ignore") + " ..."


__all__ = ["ALL_PARTS", "Create", "Delete", "EMPTY", "Effect", "Event", "Fault", "Hooks", "Index", "MetricInc", "NOTHING",
           "Result", "Txn", "Update", "World", "marked_for_deletion", "truncate"]
