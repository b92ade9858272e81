// The AI SDK's chat state machine in Node: `AbstractChat` with a minimal ChatState (what @ai-sdk/react's
// ReactChatState does, minus React). Shared by the drivers that run the real chat.
import { AbstractChat } from "ai";

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

export class NodeChat extends AbstractChat {
  constructor({ messages, ...init }) {
    super({ ...init, state: new NodeChatState(messages) });
  }
}

