"""Keys and certificates for tools/fake-apns (python3-cryptography).

ensure_certs(DIR): DIR/ca.pem + ca.key (a private CA) and DIR/server.pem +
server.key (a certificate for `localhost` and 127.0.0.1 signed by it), made
when DIR/ca.pem is absent and reused otherwise. ca.pem is written last, so
its presence means the set is complete; a lock file serialises two fakes
starting on the same folder.

make_provider_key(DIR): DIR/apns-key.p8 (a P-256 key as Apple delivers it:
PKCS#8 PEM, "-----BEGIN PRIVATE KEY-----") and DIR/apns-key.pub.pem (its
public half, SubjectPublicKeyInfo PEM, what --auth-key takes).
"""
import datetime
import fcntl
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 3650


def _write(path, data, private=False):
    """Atomically: a temporary file beside path, then a rename."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _key_usage(cert_sign):
    return x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                         data_encipherment=False, key_agreement=False, key_cert_sign=cert_sign,
                         crl_sign=cert_sign, encipher_only=False, decipher_only=False)


def ensure_certs(directory):
    """Returns (ca.pem, server.pem, server.key) paths in directory, making them if ca.pem is absent."""
    os.makedirs(directory, exist_ok=True)
    ca_pem = os.path.join(directory, "ca.pem")
    server_pem = os.path.join(directory, "server.pem")
    server_key = os.path.join(directory, "server.key")
    with open(os.path.join(directory, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(ca_pem) and os.path.exists(server_pem) and os.path.exists(server_key):
            return ca_pem, server_pem, server_key
        now = datetime.datetime.now(datetime.timezone.utc)
        start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=VALID_DAYS)

        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "registryd tests"),
                             x509.NameAttribute(NameOID.COMMON_NAME, "fake-apns private CA")])
        ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
        ca_cert = (x509.CertificateBuilder()
                   .subject_name(ca_name).issuer_name(ca_name)
                   .public_key(ca_key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(end)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(_key_usage(True), critical=True)
                   .add_extension(ca_ski, critical=False)
                   .sign(ca_key, hashes.SHA256()))

        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
                .issuer_name(ca_name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(end)
                .add_extension(x509.SubjectAlternativeName([
                    x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                    critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(_key_usage(False), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))

        _write(os.path.join(directory, "ca.key"), _key_pem(ca_key), private=True)
        _write(server_key, _key_pem(key), private=True)
        _write(server_pem, cert.public_bytes(serialization.Encoding.PEM))
        _write(ca_pem, ca_cert.public_bytes(serialization.Encoding.PEM))
        return ca_pem, server_pem, server_key


def make_provider_key(directory):
    """Writes apns-key.p8 and apns-key.pub.pem in directory; returns their paths."""
    os.makedirs(directory, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    p8 = os.path.join(directory, "apns-key.p8")
    pub = os.path.join(directory, "apns-key.pub.pem")
    _write(p8, _key_pem(key), private=True)
    _write(pub, key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo))
    return p8, pub
