"""What `@ag-ui/client` 1.0.0 rejects in an AG-UI answer, frame by frame, without Node.

A port of the inbound pipeline a real `HttpAgent.runAgent` runs over a response: the SSE parser (`transform/sse.ts`,
`transform/http.ts`), the always-on `CompatibilityBoundary`, `enforceEvents` with `@ag-ui/core`'s zod event schemas,
`transformChunks`, `verifyEvents` and the reducer (`apply/default.ts`). The client fails a run on a malformed frame,
but only *warns* when it drops an unknown event, strips an unknown key or upgrades a pre-1.0 shape; a conforming
stream draws no warning, so each of those is a violation here too, as is a stream that ends without a terminal event.

The client stops at its first error. The judge goes on, as if the broken event had been right, so one answer shows
every broken frame; past that first error it no longer models the client's messages and state (the reducer's
warnings stop), because the client would hold none.
"""

from .client import AguiClient, frame_ends, judge

__all__ = ["AguiClient", "frame_ends", "judge"]
