// Runs AG-UI threads against the host with the official client (@ag-ui/client's HttpAgent) and
// prints what the client ended up with as one JSON object. Usage: node node_thread.mjs URL TOKEN
import { HttpAgent } from "@ag-ui/client";

const [url, token] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${token}` };

async function runOnce(agent, params) {
  const types = [];
  await agent.runAgent(params, { onEvent: ({ event }) => { types.push(event.type); } });
  return types;
}

const out = {};

const tooling = new HttpAgent({ url, headers, threadId: "node-thread" });
tooling.addMessage({ id: "u1", role: "user", content: "use the tool" });
out.server = { types: await runOnce(tooling, { runId: "node-run-1" }), messages: tooling.messages };

const tools = [{ name: "pick_color", description: "Ask the person for a colour.", parameters: { type: "object", properties: {} } }];
const frontEnd = new HttpAgent({ url, headers, threadId: "node-front-end" });
frontEnd.addMessage({ id: "u1", role: "user", content: "pick a colour" });
const first = await runOnce(frontEnd, { runId: "fe-1", tools, forwardedProps: { agent: "frontend" } });
const call = frontEnd.messages.find((m) => m.role === "assistant" && m.toolCalls && m.toolCalls.length).toolCalls[0];
frontEnd.addMessage({ id: "tool-1", role: "tool", toolCallId: call.id, content: "teal" });
const second = await runOnce(frontEnd, { runId: "fe-2", tools, forwardedProps: { agent: "frontend" } });
out.frontEnd = { first, second, call, messages: frontEnd.messages };

console.log(JSON.stringify(out));
