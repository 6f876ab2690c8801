"""Where forecasts and simulations read Kueue's own configuration: the one place that knows
how, so that a better loader is one line away.

Today the manager ``Configuration`` comes from :func:`kueue_provreq.manifests.load_configuration`
(config.kueue.x-k8s.io/v1beta2, with its defaults), and ``manageJobsWithoutQueueName``, which
the model's ``Configuration`` does not name, is read from the fields it keeps as they came.
"""

from __future__ import annotations

from pathlib import Path

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.job import Job
from kueue_provreq.manifests import ManifestError, load_configuration, load_file

MANAGE_JOBS_WITHOUT_QUEUE_NAME = "manageJobsWithoutQueueName"


def load_config_file(path: str | Path) -> Configuration:
    """The Kueue Configuration in ``path`` (one YAML document, as upstream writes it)."""
    documents = load_file(path)
    if len(documents) != 1:
        raise ManifestError(f"expected one Configuration document, found {len(documents)}", source=str(path))
    return load_configuration(documents[0])


def manages(config: Configuration, job: Job) -> bool:
    """Whether Kueue's job integration takes ``job`` in: it has a queue name, or the
    configuration says ``manageJobsWithoutQueueName: true``."""
    return bool(job.metadata.labels.get(c.LABEL_QUEUE_NAME)) or \
        config.extra.get(MANAGE_JOBS_WITHOUT_QUEUE_NAME) is True
