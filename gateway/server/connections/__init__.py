"""Connections: what runs under the ASGI app (uvicorn's HTTP and WebSocket protocols, the workers, the Host check
by local address, the process's body budget, the drain). Imports only `operations` of the server's layers."""
