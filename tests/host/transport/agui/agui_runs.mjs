// Shared by the node_*.mjs scripts: one run of an @ag-ui/client agent, recorded as the event types
// it streamed, the RUN_FINISHED outcome and the interrupts the client holds afterwards.
export async function runOnce(agent, params) {
  const types = [];
  let outcome;
  await agent.runAgent(params, {
    onEvent: ({ event }) => { types.push(event.type); },
    onRunFinishedEvent: (finished) => { outcome = finished.outcome; },
  });
  return { types, outcome, pending: structuredClone(agent.pendingInterrupts) };
}
