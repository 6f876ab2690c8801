"""Where forecasts and simulations read Kueue's own configuration: the one place that knows
how, so that a better loader is one line away.

The manager ``Configuration`` comes from :func:`kueue_provreq.manifests.load_configuration_file`
(the Configuration document, or the ``kueue-manager-config`` ConfigMap that holds it), and
``manageJobsWithoutQueueName``, which the model's ``Configuration`` does not name, is read from
the fields it keeps as they came.
"""

from __future__ import annotations

from pathlib import Path

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.job import Job
from kueue_provreq.manifests import load_configuration_file

MANAGE_JOBS_WITHOUT_QUEUE_NAME = "manageJobsWithoutQueueName"


def load_config_file(path: str | Path) -> Configuration:
    """The Kueue Configuration in ``path``, as upstream writes it."""
    return load_configuration_file(path)


def manages(config: Configuration, job: Job) -> bool:
    """Whether Kueue's job integration takes ``job`` in: it has a queue name, or the
    configuration says ``manageJobsWithoutQueueName: true``."""
    return bool(job.metadata.labels.get(c.LABEL_QUEUE_NAME)) or \
        config.extra.get(MANAGE_JOBS_WITHOUT_QUEUE_NAME) is True
