"""TLS client contexts (gateway/tls.py) against a real TLS server on 127.0.0.1, with a private CA, a server
certificate and a client certificate that openssl makes once per module. The server reports what it saw of the
client (the ALPN protocol agreed, the client certificate's name), so both ends of each option are checked.
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.upstream import tls
from gateway.upstream.tls import client_context

Run = Callable[[Callable[[], Awaitable[None]]], None]


@dataclass(frozen=True)
class PKI:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    client_both: Path
    """The client certificate and its key in one file."""
    encrypted_key: Path
    other_key: Path


def openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def issue(folder: Path, name: str, serial: int, subject: str, extensions: str, ca: Path, ca_key: Path
          ) -> tuple[Path, Path]:
    cert, key, request, extfile = (folder / f"{name}{suffix}" for suffix in (".pem", ".key", ".csr", ".cnf"))
    extfile.write_text(extensions + "\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
            "-out", request, "-subj", subject)
    openssl("x509", "-req", "-in", request, "-CA", ca, "-CAkey", ca_key, "-set_serial", str(serial),
            "-days", "1", "-out", cert, "-extfile", extfile)
    return cert, key


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make test certificates (apt-get install -y openssl)", pytrace=False)
    folder = tmp_path_factory.mktemp("pki")
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", ca_key,
            "-out", ca, "-days", "1", "-subj", "/CN=agent-gateway test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    server_cert, server_key = issue(folder, "server", 2, "/CN=127.0.0.1", "basicConstraints=critical,CA:FALSE\n"
                                    "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                                    "subjectAltName=IP:127.0.0.1", ca, ca_key)
    client_cert, client_key = issue(folder, "client", 3, "/CN=gateway-client", "basicConstraints=critical,CA:FALSE\n"
                                    "keyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth", ca, ca_key)
    client_both = folder / "client-both.pem"
    client_both.write_text(client_cert.read_text() + client_key.read_text())
    encrypted_key = folder / "encrypted.key"
    openssl("pkey", "-in", client_key, "-aes256", "-passout", "pass:secret", "-out", encrypted_key)
    other_key = folder / "other.key"
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", other_key)
    return PKI(ca, server_cert, server_key, client_cert, client_key, client_both, encrypted_key, other_key)


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Run:
    if request.param == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        return lambda main: uvloop.run(main())
    return lambda main: asyncio.run(main())


@pytest.fixture(autouse=True)
def no_ssl_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


class Server:
    """Answers each connection with what it saw: `alpn=<protocol> client=<certificate CN or ->`, then closes.
    It prefers h2, so a client that offered h2 would get it."""

    def __init__(self, pki: PKI, require_client_cert: bool = False) -> None:
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(pki.server_cert, pki.server_key)
        self.tls.set_alpn_protocols(["h2", "http/1.1"])
        if require_client_cert:
            self.tls.verify_mode = ssl.CERT_REQUIRED
            self.tls.load_verify_locations(pki.ca)
        self.seen: list[str] = []
        self.server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readexactly(4)
            tls = writer.get_extra_info("ssl_object")
            subject = dict(pair[0] for pair in (tls.getpeercert() or {}).get("subject", ()))
            self.seen.append(f"alpn={tls.selected_alpn_protocol()} client={subject.get('commonName', '-')}")
            writer.write(self.seen[-1].encode())
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()


async def ask(server: Server, context: ssl.SSLContext) -> str:
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", server.port, ssl=context), 5)
    try:
        writer.write(b"ping")
        return (await asyncio.wait_for(reader.read(), 5)).decode()
    finally:
        writer.close()


def test_the_default_context_refuses_a_private_ca_and_ca_file_trusts_it_instead(run: Run, pki: PKI) -> None:
    async def main() -> None:
        async with Server(pki) as server:
            with pytest.raises(ssl.SSLCertVerificationError, match="CERTIFICATE_VERIFY_FAILED"):
                await ask(server, client_context())
            assert await ask(server, client_context(ca_file=str(pki.ca))) == "alpn=http/1.1 client=-"

    run(main)
    assert len(client_context(ca_file=str(pki.ca)).get_ca_certs()) == 1  # the bundle only, not the system's too


def test_the_default_context_reads_ssl_cert_file_when_it_is_made(pki: PKI, monkeypatch: pytest.MonkeyPatch) -> None:
    without = client_context()
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca))
    with_ca = client_context()
    assert with_ca is not without and with_ca is client_context()

    async def main() -> None:
        async with Server(pki) as server:
            assert await ask(server, with_ca) == "alpn=http/1.1 client=-"

    asyncio.run(main())


def test_a_server_that_requires_a_client_certificate_takes_the_configured_one(run: Run, pki: PKI) -> None:
    async def main() -> None:
        async with Server(pki, require_client_cert=True) as server:
            for options in ({"client_cert": str(pki.client_cert), "client_key": str(pki.client_key)},
                            {"client_cert": str(pki.client_both)}):
                assert await ask(server, client_context(ca_file=str(pki.ca), **options)) == (
                    "alpn=http/1.1 client=gateway-client")

    run(main)


def test_a_server_that_requires_a_client_certificate_refuses_a_client_without(run: Run, pki: PKI) -> None:
    async def main() -> None:
        async with Server(pki, require_client_cert=True) as server:
            try:  # TLS 1.3 ends the client's side of the handshake first: the refusal is a close, or an alert
                answer = await ask(server, client_context(ca_file=str(pki.ca)))
            except (ssl.SSLError, ConnectionError) as exc:
                answer = str(exc)
            assert answer == "" or "CERTIFICATE_REQUIRED" in answer or "reset" in answer.lower(), answer
            assert server.seen == []

    run(main)


def test_contexts_are_shared_per_option_set_and_all_verify_with_alpn_http_1_1(pki: PKI) -> None:
    default, private = client_context(), client_context(ca_file=str(pki.ca))
    assert default is client_context() and private is client_context(ca_file=str(pki.ca)) and default is not private
    mutual = client_context(ca_file=str(pki.ca), client_cert=str(pki.client_cert), client_key=str(pki.client_key))
    assert mutual is not private
    for context in (default, private, mutual):
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
        assert context.minimum_version == ssl.TLSVersion.TLSv1_2


@pytest.mark.skipif(sys.platform != "linux", reason="truststore reads SSL_CERT_FILE through OpenSSL on Linux only")
def test_the_system_trust_store_is_used_through_truststore(run: Run, pki: PKI, monkeypatch: pytest.MonkeyPatch) -> None:
    truststore = pytest.importorskip("truststore")
    assert isinstance(client_context(system_trust_store=True), truststore.SSLContext)
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca))  # where OpenSSL, and so truststore on Linux, finds the CAs
    context = client_context(system_trust_store=True, client_cert=str(pki.client_both))

    async def main() -> None:
        async with Server(pki, require_client_cert=True) as server:
            assert await ask(server, context) == "alpn=http/1.1 client=gateway-client"
            monkeypatch.delenv("SSL_CERT_FILE")
            with pytest.raises(ssl.SSLCertVerificationError, match="CERTIFICATE_VERIFY_FAILED"):
                await ask(server, client_context(system_trust_store=True))

    run(main)


def test_the_system_trust_store_without_truststore_installed_is_a_value_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tls, "_contexts", {})
    monkeypatch.setitem(sys.modules, "truststore", None)  # what `import truststore` meets when it is not installed
    with pytest.raises(ValueError, match=r"^system_trust_store needs the truststore package \(pip install"):
        client_context(system_trust_store=True)


@pytest.mark.parametrize(("options", "message"), [
    ({"ca_file": "{missing}"}, "^ca_file {missing}: no such file$"),
    ({"ca_file": "{folder}"}, "^ca_file {folder}: is a directory, not a PEM file$"),
    ({"ca_file": "{client_key}"}, "^ca_file {client_key}: no PEM certificate in it$"),
    ({"client_cert": "{missing}"}, "^client_cert {missing}: no such file$"),
    ({"client_cert": "{client_key}"}, "^client_cert {client_key}: no PEM certificate in it$"),
    ({"client_cert": "{client_cert}"},
     r"^client_cert {client_cert}: no PEM private key in it \(give it in client_key\)$"),
    ({"client_cert": "{client_cert}", "client_key": "{missing}"}, "^client_key {missing}: no such file$"),
    ({"client_cert": "{client_cert}", "client_key": "{ca}"}, "^client_key {ca}: no PEM private key in it$"),
    ({"client_cert": "{client_cert}", "client_key": "{other_key}"},
     "^client_key {other_key} is not the key of client_cert {client_cert}$"),
    ({"client_cert": "{client_cert}", "client_key": "{encrypted_key}"},
     "^client_key {encrypted_key}: the private key is encrypted; give an unencrypted one$"),
    ({"client_key": "{client_key}"}, "^client_key is set without client_cert$"),
    ({"ca_file": "{ca}", "system_trust_store": True}, "^ca_file and system_trust_store cannot both be set"),
])
def test_an_option_that_cannot_be_used_is_a_one_line_value_error_naming_the_file(
        pki: PKI, options: dict[str, str | bool], message: str) -> None:
    paths = {"missing": str(pki.ca.parent / "missing.pem"), "folder": str(pki.ca.parent), "ca": str(pki.ca),
             "client_cert": str(pki.client_cert), "client_key": str(pki.client_key), "other_key": str(pki.other_key),
             "encrypted_key": str(pki.encrypted_key)}
    filled = {name: value.format(**paths) if isinstance(value, str) else value for name, value in options.items()}
    escaped = {name: path.replace(".", r"\.") for name, path in paths.items()}
    with pytest.raises(ValueError, match=message.format(**escaped)) as raised:
        client_context(**filled)  # type: ignore[arg-type]
    assert "\n" not in str(raised.value)
