"""Operations: what the gateway tells its operator (the access log, metrics, spans, the access record they are
written from, the inspector and recordings, the startup probes). Imports no other layer of the server."""
