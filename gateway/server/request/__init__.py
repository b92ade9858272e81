"""The request: who the caller is, its body read and checked, the call in flight that asks the upstream, and its
report. Imports `stream`, `connections` and `operations` of the server's layers."""
