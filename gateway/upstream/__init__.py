"""The HTTP/1.1 client the gateway calls upstreams with: pooling, proxies, TLS and URLs."""
