// The AI SDK's chat state machine in Node: `AbstractChat` with a minimal ChatState (what @ai-sdk/react's
// ReactChatState does, minus React). Shared by the drivers that run the real chat; `nodeChatOf(lib)` builds it on
// another `ai` release (ai5, ai-strict, ai7-strict).
import * as latest from "ai";

class NodeChatState {
  constructor(messages = []) {
    this.messages = messages;
    this.status = "ready";
    this.error = undefined;
  }
  pushMessage = (m) => {
    this.messages = this.messages.concat(m);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (i, m) => {
    this.messages = [...this.messages.slice(0, i), this.snapshot(m), ...this.messages.slice(i + 1)];
  };
  snapshot = (x) => structuredClone(x);
}

export function nodeChatOf(lib) {
  return class NodeChat extends lib.AbstractChat {
    constructor({ messages, ...init }) {
      super({ ...init, state: new NodeChatState(messages) });
    }
  };
}

export const NodeChat = nodeChatOf(latest);

