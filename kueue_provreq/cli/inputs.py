"""Reading the objects ``explain``, ``audit``, ``forecast``, ``validate`` and ``simulate --from`` work on: ``-f``
files and dumps, or a live cluster (which needs the ``cluster`` extra, imported only then)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import attrs

from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.cli import options
from kueue_provreq.cli.options import PROG
from kueue_provreq.cli.output import note
from kueue_provreq.manifests.inputs import InputErrors, Inputs, load_inputs

if TYPE_CHECKING:
    from kueue_provreq.simulation.spec import Cluster


@attrs.frozen
class Input:
    """What explain, audit and forecast read: the objects, the kinds that could not be read, the time."""

    objects: tuple[KubeObject, ...]
    now: Time
    unread: frozenset[str] = frozenset()
    refused: int = 0
    """Objects of ``-f`` left out because the API server would refuse them (``keep_going``)."""
    clock: str = ""
    """Where ``now`` came from, in words for the reader."""

#: Where the time a command works at came from.
CLOCK_GIVEN = "given by --at"
CLOCK_NEWEST = "the newest time the inputs record; --at sets another"
CLOCK_NOW = "the current time"


def read_input(args: argparse.Namespace, config: Configuration, keep_going: bool = False) -> Input:
    """The objects of ``-f`` or of the live cluster named, checked as ``config``'s semantics
    switches say; warnings go to stderr, and with ``keep_going`` the errors of the objects left
    out too (as ``kubectl apply`` goes on)."""
    if args.context is not None and args.kubeconfig is None:
        raise options.UsageError("--context needs --kubeconfig")
    live = args.kubeconfig is not None or args.in_cluster
    if args.namespace and not live:
        raise options.UsageError("--namespace needs --kubeconfig or --in-cluster (a dump holds what it holds)")
    at = options.clock(args.at) if args.at is not None else None
    if not live:
        inputs = load_manifests(args, config, keep_going)
        newest = inputs.newest_timestamp
        if at is not None:
            now, clock = at, CLOCK_GIVEN
        elif newest is not None:
            now, clock = Time(newest), CLOCK_NEWEST
        else:
            now, clock = options.clock(None), CLOCK_NOW
        return Input(inputs.objects, now, refused=len(inputs.errors), clock=clock)
    from kueue_provreq.cluster import client, snapshot

    connection = client.connect_in_cluster() if args.in_cluster else client.connect(args.kubeconfig, args.context)
    with connection as api:
        snap = snapshot.read(api, args.namespace)
    for warning in snap.warnings:
        note("warning", warning)
    objects, problems = snapshot.to_objects(snap.documents, snap.source, args.validate,
                                             semantics=config.semantics)
    for problem in problems:
        note("warning", problem)
    return Input(tuple(objects), at if at is not None else options.clock(None), snap.unread,
                 clock=CLOCK_GIVEN if at is not None else CLOCK_NOW)


def load_manifests(args: argparse.Namespace, config: Configuration | None, keep_going: bool = False) -> Inputs:
    """Every object of every ``-f`` source, checked as the semantics switches say; warnings and
    the skipped kinds on stderr, and with ``keep_going`` the errors of the objects left out."""
    inputs = load_inputs(args.filename, validation=args.validate, keep_going=keep_going,
                         semantics=config.semantics if config is not None else frozenset())
    for error in InputErrors(inputs.errors).lines() if inputs.errors else ():
        note("error", error)
    for warning in inputs.warnings:
        note("warning", warning)
    skipped = inputs.skipped_line()
    if skipped is not None:
        print(f"{PROG}: {skipped}", file=sys.stderr)
    return inputs


def starting_state(args: argparse.Namespace, config: Configuration) -> Cluster | None:
    """``--from``/``--kubeconfig`` (:func:`~kueue_provreq.cli.options.starting_state`): the
    cluster a run starts from, read as :func:`read_input` reads it, at ``--at`` or the dump's
    newest time; None when neither is given."""
    if args.filename is None and args.kubeconfig is None:
        for option, given in (("--at", args.at), ("--context", args.context), ("-n", args.namespace)):
            if given:
                raise options.UsageError(f"{option}: needs --from or --kubeconfig (the cluster a run starts from)")
        return None
    from kueue_provreq.simulation.spec import Cluster

    given = read_input(args, config)
    return Cluster(given.objects, given.now)


def note_left_out(cluster: Cluster, left: list[str], shown: int = 10) -> None:
    """One line naming what of the cluster a run does not start with."""
    if left:
        more = f" and {len(left) - shown} more" if len(left) > shown else ""
        note("note", f"the run starts without {len(left)} of the cluster's {len(cluster.objects)} objects "
                     "(finished or deactivated workloads and their requests, objects the simulation's setup "
                     f"replaces): {', '.join(left[:shown])}{more}")
