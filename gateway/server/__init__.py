"""The gateway server: the ASGI app, the per-route proxy, access control, metrics, logs and tracing."""
