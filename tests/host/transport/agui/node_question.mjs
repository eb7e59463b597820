// The official AG-UI client (@ag-ui/client's HttpAgent) against a thread whose model asks the user
// (ask_user): the input interrupt it records, the resume built with its buildResumeArray carrying
// the answers, then a second question cancelled together with its turn. Prints one JSON object.
// Usage: node node_question.mjs URL TOKEN
import { HttpAgent, buildResumeArray } from "@ag-ui/client";
import { runOnce } from "./agui_runs.mjs";

const [url, token] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${token}` };

const out = {};
const agent = new HttpAgent({ url, headers, threadId: "node-question" });
agent.addMessage({ id: "u1", role: "user", content: "order socks" });
out.first = await runOnce(agent, { runId: "q-1", forwardedProps: { agent: "scripted" } });

const [question] = agent.pendingInterrupts;
const answers = buildResumeArray(agent.pendingInterrupts, {
  [question.id]: { status: "resolved", payload: { answers: { colour: "blue" } } },
});
out.second = { ...(await runOnce(agent, { runId: "q-2", resume: answers })), messages: structuredClone(agent.messages) };

agent.addMessage({ id: "u2", role: "user", content: "and gloves?" });
out.third = await runOnce(agent, { runId: "q-3" });
const dismissed = Object.fromEntries(agent.pendingInterrupts.map((item) => [item.id, { status: "cancelled" }]));
out.cancel = await runOnce(agent, {
  runId: "q-4", resume: buildResumeArray(agent.pendingInterrupts, dismissed), forwardedProps: { cancel: true },
});

console.log(JSON.stringify(out));
