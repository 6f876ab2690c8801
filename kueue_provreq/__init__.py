"""kueue-provreq: an executable, formally modelled specification of how Kueue admits a
workload through a ProvisioningRequest admission check.

The core (models, machines, controllers, world, engine) is sans-IO: objects and
the time come in as arguments, a new state and a list of effects go out.
"""

__version__ = "0.1.0"
