// The official AG-UI client (@ag-ui/client's HttpAgent) against a thread whose server tool needs
// confirmation: the interrupt it records, its own refusal to run on without answering, the resume
// built with its buildResumeArray, and a second front end joining the thread. Prints one JSON object.
// Usage: node node_confirm.mjs URL TOKEN
import { HttpAgent, buildResumeArray } from "@ag-ui/client";
import { runOnce } from "./agui_runs.mjs";

const [url, token] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${token}` };

const out = {};
const agent = new HttpAgent({ url, headers, threadId: "node-confirm" });
agent.addMessage({ id: "u1", role: "user", content: "print something" });
out.first = await runOnce(agent, { runId: "c-1", forwardedProps: { agent: "scripted" } });

try {
  await agent.runAgent({ runId: "c-unanswered" });
  out.refusedByClient = null;
} catch (error) {
  out.refusedByClient = String(error.message);
}

const [interrupt] = agent.pendingInterrupts;
const resume = buildResumeArray(agent.pendingInterrupts, { [interrupt.id]: { status: "resolved", payload: { approved: true } } });
out.second = { ...(await runOnce(agent, { runId: "c-2", resume })), messages: agent.messages };

const joiner = new HttpAgent({ url, headers, threadId: "node-confirm" });
out.join = { ...(await runOnce(joiner, { runId: "c-3" })), messages: joiner.messages };

console.log(JSON.stringify(out));
