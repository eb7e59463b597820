// The official AG-UI client (@ag-ui/client's HttpAgent) against threads whose session opens a folder
// the user has not trusted: the trust question it records as an interrupt before the first message
// runs, its own refusal to run on without answering, "don't trust" answered in one thread and "trust
// this folder" in another (both with its buildResumeArray), and the folder's hook log after each
// step. Prints one JSON object.
// Usage: node node_trust.mjs URL TOKEN HOOK_LOG
import { existsSync, readFileSync } from "node:fs";
import { HttpAgent, buildResumeArray } from "@ag-ui/client";
import { runOnce } from "./agui_runs.mjs";

const [url, token, hookLog] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${token}` };
// The hooks' log: each event's name on a line of its own, though hooks of sessions running at once
// may write a payload just before it.
const hooks = () => (existsSync(hookLog) ? readFileSync(hookLog, "utf8").split("\n")
  .map((line) => /(?:^|\})([A-Z]\w+)$/.exec(line)?.[1]).filter(Boolean) : []);
const answer = (agent, choice) => buildResumeArray(agent.pendingInterrupts, Object.fromEntries(
  agent.pendingInterrupts.map((item) => [item.id, { status: "resolved", payload: { answers: { trust: choice } } }])));

const out = {};
const no = new HttpAgent({ url, headers, threadId: "node-untrusted" });
no.addMessage({ id: "n1", role: "user", content: "hello from an untrusted folder" });
out.asked = { ...(await runOnce(no, { runId: "t-1", forwardedProps: { agent: "scripted" } })), hooks: hooks() };
try {
  await no.runAgent({ runId: "t-unanswered" });
  out.refusedByClient = null;
} catch (error) {
  out.refusedByClient = String(error.message);
}
out.declined = { ...(await runOnce(no, { runId: "t-2", resume: answer(no, "dont-trust") })), messages: structuredClone(no.messages), hooks: hooks() };

const yes = new HttpAgent({ url, headers, threadId: "node-trusted" });
yes.addMessage({ id: "y1", role: "user", content: "hello from a trusted folder" });
out.askedAgain = { ...(await runOnce(yes, { runId: "t-3", forwardedProps: { agent: "scripted" } })), hooks: hooks() };
out.trusted = { ...(await runOnce(yes, { runId: "t-4", resume: answer(yes, "trust-folder") })), messages: structuredClone(yes.messages), hooks: hooks() };

console.log(JSON.stringify(out));
