"""The keys and certificates a local control plane needs, made with ``cryptography``.

One certificate authority signs everything: the API server's serving certificate, the
administrator's client certificate (group ``system:masters``, so RBAC never stands in the way of
the tests), and the serving certificate of Kueue's webhook server, whose CA bundle the webhook
and CRD-conversion configurations carry.  The API server signs service-account tokens with a
separate key pair.  Every certificate names 127.0.0.1 and ``localhost``: nothing here is reached
from another host.

Why ``cryptography`` (the ``cluster`` extra): it is the maintained library for X.509 in Python,
and writing certificates by hand (or calling ``openssl`` in a subprocess, which a machine may
lack) is outside this project's domain.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path
from typing import Any

import attrs

from kueue_provreq.cluster.client import INSTALL_HINT, ClusterError

#: How long the certificates are valid: a testbed lives for a test run or a working day.
VALIDITY = datetime.timedelta(days=30)


def _crypto() -> Any:
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise ClusterError(f"the testbed makes its certificates with cryptography: {INSTALL_HINT}") from None
    from cryptography import x509
    return x509


@attrs.frozen
class Pair:
    """A certificate (or public key) and its private key, as PEM files."""

    cert: Path
    key: Path


@attrs.frozen
class Pki:
    """Every file the control plane reads, under one folder."""

    ca: Pair
    apiserver: Pair
    admin: Pair
    webhook: Pair
    service_accounts: Pair
    """``cert`` is the public key the API server checks tokens with, ``key`` signs them."""


def make_pki(folder: Path) -> Pki:
    """Writes a fresh certificate authority and the certificates signed by it into ``folder``."""
    x509 = _crypto()
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder.mkdir(parents=True, exist_ok=True)
    # a fixed instant would make certificates that expire under a long-lived machine; the
    # testbed is an edge, and reading the clock here is what makes a certificate valid now
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)

    def write_key(path: Path, key: Any) -> None:
        path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
        path.chmod(0o600)

    def name(common: str, org: str | None = None) -> Any:
        attrs_ = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
        if org:
            attrs_.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
        return x509.Name(attrs_)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name("kueue-provreq testbed CA")
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now).not_valid_after(now + VALIDITY)
               .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                            content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False,
                                            encipher_only=False, decipher_only=False), critical=True)
               .sign(ca_key, hashes.SHA256()))

    def issue(stem: str, subject: Any, *, server: bool) -> Pair:
        key = ec.generate_private_key(ec.SECP256R1())
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now).not_valid_after(now + VALIDITY)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        pair = Pair(folder / f"{stem}.crt", folder / f"{stem}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        write_key(pair.key, key)
        return pair

    ca = Pair(folder / "ca.crt", folder / "ca.key")
    ca.cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    write_key(ca.key, ca_key)
    apiserver = issue("apiserver", name("kube-apiserver"), server=True)
    admin = issue("admin", name("kueue-provreq-admin", "system:masters"), server=False)
    webhook = issue("webhook", name("kueue-webhook"), server=True)

    sa_key = ec.generate_private_key(ec.SECP256R1())
    service_accounts = Pair(folder / "sa.pub", folder / "sa.key")
    service_accounts.cert.write_bytes(sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    write_key(service_accounts.key, sa_key)
    return Pki(ca, apiserver, admin, webhook, service_accounts)
