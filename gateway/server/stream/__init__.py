"""The stream: an upstream's reply relayed to the client (the relay, the client's writer, the deadlines, the run's
end, a resumable run's kept reply followed). Imports `connections` and `operations` of the server's layers."""
