"""A small OpenID Connect provider on loopback for the single sign-on tests: the token, userinfo and JWKS
endpoints of the authorization-code flow, HS256 ID tokens signed with the client secret. A test hands it
the claims of the next login (`code_for`) and gets the code the provider's login page would have sent back
to the callback. Stopped by the context manager."""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import jwt


class _Handler(BaseHTTPRequestHandler):
    server: ProviderStub

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def _json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        if self.path != "/token":
            return self._json(404, {"error": "not_found"})
        length = min(int(self.headers.get("Content-Length") or 0), 65536)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        self.server.token_requests += 1
        if (form.get("client_id"), form.get("client_secret")) != (self.server.client_id, self.server.secret):
            return self._json(401, {"error": "invalid_client"})
        login = self.server.logins.pop(form.get("code", ""), None)
        if login is None:
            return self._json(400, {"error": "invalid_grant"})
        claims, nonce = login
        access = secrets.token_urlsafe(16)
        self.server.access[access] = claims
        now = int(time.time())
        id_token = jwt.encode(
            {"iss": self.server.issuer, "aud": self.server.client_id, "sub": claims.get("sub", "s-0"), "nonce": nonce}
            | {"iat": now, "exp": now + 300},
            self.server.secret,
            algorithm="HS256",
        )
        self._json(200, {"access_token": access, "id_token": id_token, "token_type": "Bearer", "expires_in": 300})

    def do_GET(self) -> None:
        if self.path == "/jwks":
            return self._json(200, {"keys": []})
        if self.path != "/userinfo":
            return self._json(404, {"error": "not_found"})
        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
        claims = self.server.access.get(token)
        self._json(200, claims) if claims is not None else self._json(401, {"error": "invalid_token"})


class ProviderStub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, client_id: str, secret: str) -> None:
        super().__init__((host, 0), _Handler)
        self.client_id, self.secret = client_id, secret
        self.logins: dict[str, tuple[dict, str]] = {}
        self.access: dict[str, dict] = {}
        self.token_requests = 0

    @property
    def issuer(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def endpoints(self) -> dict[str, str]:
        """The OIDC_OP_* settings that point at this provider."""
        return {
            "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{self.issuer}/authorize",
            "OIDC_OP_TOKEN_ENDPOINT": f"{self.issuer}/token",
            "OIDC_OP_USER_ENDPOINT": f"{self.issuer}/userinfo",
            "OIDC_OP_JWKS_ENDPOINT": f"{self.issuer}/jwks",
        }

    def code_for(self, claims: dict, nonce: str) -> str:
        """The code the provider would send back after a login with these userinfo claims."""
        code = secrets.token_urlsafe(16)
        self.logins[code] = (dict(claims), nonce)
        return code


@contextmanager
def provider(client_id: str, secret: str, host: str = "127.0.0.1") -> Iterator[ProviderStub]:
    server = ProviderStub(host, client_id, secret)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
