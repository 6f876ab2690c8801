"""The edge between Kubernetes manifests (dicts, YAML) and the frozen models.

Everything that reads user input lives here, outside the core: API versions
(Kueue v1beta1 is converted to the v1beta2 storage models), the CRD defaults,
validation with :class:`ManifestError`, and strict YAML.  The core never
imports this package (nor ``yaml``).
"""

from kueue_provreq.manifests.codec import decode, encode, format_duration, parse_duration
from kueue_provreq.manifests.configuration import load_configuration, load_configuration_file
from kueue_provreq.manifests.errors import ManifestError, ManifestErrors
from kueue_provreq.manifests.objects import Checked, check_object, dump_object, load_object
from kueue_provreq.manifests.yamlio import load_file, load_yaml_documents

__all__ = [
    "Checked",
    "ManifestError",
    "ManifestErrors",
    "check_object",
    "decode",
    "dump_object",
    "encode",
    "format_duration",
    "load_configuration",
    "load_configuration_file",
    "load_file",
    "load_object",
    "load_yaml_documents",
    "parse_duration",
]
