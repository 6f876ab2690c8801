"""Exhaustive bounded exploration of small worlds (``kueue-provreq explore``).

:mod:`.search` is the pure breadth-first search; :mod:`.scenario` turns a counterexample
trace into a conformance scenario; the command's glue (options, timing, output) is
:mod:`kueue_provreq.cli.explore`, beside the other commands.
"""
