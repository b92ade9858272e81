"""The endpoints beside a route's own POST: what the dialects' capabilities mount (queries about runs and their
push notifications, a dialect's own answers, resources, WebSockets, documents), a resumable route's conversation
endpoints, and `/metrics`. Imports every layer below: `request`, `stream`, `connections`, `operations`."""
