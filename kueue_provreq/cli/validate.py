"""``kueue-provreq validate -f ...``: manifests checked as the API server checks them on create."""

from __future__ import annotations

import argparse

from kueue_provreq.cli import options
from kueue_provreq.cli.inputs import load_manifests
from kueue_provreq.cli.output import print_data
from kueue_provreq.manifests import dump_object


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "validate", run, help="check manifests as the API server would on create",
        description="Load the manifests with the CRD defaults applied and check them against "
                    "the CRD schemas, their CEL rules, Kueue's webhooks and core validation. "
                    "-o table prints one line per object; yaml and json print the objects as "
                    "the server would store them.")
    options.manifest_files(cmd)
    options.reading(cmd)
    options.output(cmd, ("table", "yaml", "json"))


def run(args: argparse.Namespace) -> int:
    objects = load_manifests(args, options.configuration(args)).objects
    if args.output == "table":
        for obj in objects:
            meta = obj.metadata
            name = meta.name or f"{meta.extra.get('generateName', '')}*"
            print(f"valid {obj.KIND} {meta.namespace + '/' if meta.namespace else ''}{name}")
    else:
        dumped = [dump_object(obj) for obj in objects]
        print_data(dumped[0] if len(dumped) == 1 else {"apiVersion": "v1", "kind": "List", "items": dumped},
                   args.output)
    return 0
