"""TLS client contexts for upstream connections, one per distinct set of route options.

Every context verifies the upstream's certificate and host name, refuses anything older than TLS 1.2 and offers
ALPN `http/1.1` only, since that is all the client speaks. What it trusts is chosen per route:

```
(nothing)                   the system's CAs through OpenSSL; SSL_CERT_FILE and SSL_CERT_DIR are honoured
ca_file=bundle.pem          that bundle instead of the defaults, as httpx's `verify=path` and curl's --cacert
system_trust_store=True     the operating system's own verifier, through the `truststore` package
```

and `client_cert` (with `client_key`, unless the key is in the same file) adds a client certificate for mutual TLS.

Building a context loads and parses every trusted certificate, which takes milliseconds, so contexts are made once
per option set (and per value of SSL_CERT_FILE and SSL_CERT_DIR, which the defaults read) and shared. Files are read
when the context is made: a certificate renewed in place is picked up by a new process, not by a running one.
Problems with the files are a ValueError of one line, meant to be raised while the configuration loads.
"""

from __future__ import annotations

import os
import ssl
from typing import NoReturn

ALPN = ["http/1.1"]

_contexts: dict[tuple[str | None, ...], ssl.SSLContext] = {}


def client_context(*, ca_file: str | None = None, client_cert: str | None = None, client_key: str | None = None,
                   system_trust_store: bool = False) -> ssl.SSLContext:
    """The shared context for these options; the first call for a set builds it, and raises ValueError if it
    cannot be built. `ca_file` and `system_trust_store` are alternatives, not a combination."""
    if ca_file is not None and system_trust_store:
        raise ValueError("ca_file and system_trust_store cannot both be set: ca_file replaces the trusted CAs")
    if client_key is not None and client_cert is None:
        raise ValueError("client_key is set without client_cert")
    environment = (None, None) if ca_file is not None else (os.environ.get("SSL_CERT_FILE"),
                                                            os.environ.get("SSL_CERT_DIR"))
    key = (ca_file, client_cert, client_key, "system" if system_trust_store else None, *environment)
    context = _contexts.get(key)
    if context is None:
        context = _contexts[key] = _build(ca_file, client_cert, client_key, system_trust_store)
    return context


def _build(ca_file: str | None, client_cert: str | None, client_key: str | None,
           system_trust_store: bool) -> ssl.SSLContext:
    if system_trust_store:
        try:
            import truststore
        except ImportError:
            raise ValueError("system_trust_store needs the truststore package (pip install truststore)") from None
        context: ssl.SSLContext = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    elif ca_file is not None:
        _expect(ca_file, "ca_file", "CERTIFICATE-----", "no PEM certificate in it")
        try:
            context = ssl.create_default_context(cafile=ca_file)
        except (OSError, ValueError) as exc:
            _unusable("ca_file", ca_file, exc)
    else:
        context = ssl.create_default_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.verify_mode = ssl.CERT_REQUIRED
    context.check_hostname = True
    context.set_alpn_protocols(ALPN)
    if client_cert is not None:
        _load_client_certificate(context, client_cert, client_key)
    return context


def _load_client_certificate(context: ssl.SSLContext, client_cert: str, client_key: str | None) -> None:
    _expect(client_cert, "client_cert", "-----BEGIN CERTIFICATE-----", "no PEM certificate in it")
    key_option, key_file = ("client_key", client_key) if client_key is not None else ("client_cert", client_cert)
    key_text = _expect(key_file, key_option, "PRIVATE KEY-----",
                       "no PEM private key in it" if client_key is not None
                       else "no PEM private key in it (give it in client_key)")
    if "ENCRYPTED PRIVATE KEY-----" in key_text or "Proc-Type: 4,ENCRYPTED" in key_text:
        raise ValueError(f"{key_option} {key_file}: the private key is encrypted; give an unencrypted one")

    def no_password() -> NoReturn:  # never OpenSSL's own prompt, which would wait on the terminal
        raise ValueError(f"{key_option} {key_file}: the private key is encrypted; give an unencrypted one")

    try:
        context.load_cert_chain(client_cert, client_key, password=no_password)
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise ValueError(f"client_key {key_file} is not the key of client_cert {client_cert}") from None
        _unusable("client_cert", client_cert, exc)
    except OSError as exc:
        _unusable("client_cert", client_cert, exc)


def _expect(path: str, option: str, marker: str, missing: str) -> str:
    """The file's text, which must contain `marker`: a wrong file is told apart from an unreadable one here,
    before OpenSSL's errors, which name neither the file nor the problem."""
    try:
        with open(path, encoding="ascii", errors="replace") as file:
            text = file.read(16 * 1024 * 1024)
    except FileNotFoundError:
        raise ValueError(f"{option} {path}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{option} {path}: is a directory, not a PEM file") from None
    except OSError as exc:
        raise ValueError(f"{option} {path}: cannot be read: {exc.strerror or exc}") from None
    if marker not in text:
        raise ValueError(f"{option} {path}: {missing}")
    return text


def _unusable(option: str, path: str, exc: Exception) -> NoReturn:
    reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)
    raise ValueError(f"{option} {path}: cannot be used: {' '.join(str(reason).split())}") from None
