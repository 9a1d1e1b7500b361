// The tools of `{{name}}`, written on the helper layer (corral.js). Nothing here imports the
// host, so `node --test` runs them as they are (tools.test.js).

import { tool } from "./corral.js";

export const greet = tool({
  name: "{{tool}}",
  title: "Greet",
  description: "Greets someone by name.",
  annotations: { readOnly: true, openWorld: false },
  args: {
    name: { type: "string", description: "Who to greet." },
  },
  run({ name }, ctx) {
    const who = name.trim();
    if (who.length === 0) {
      throw new Error("`name` is empty: say who to greet");
    }
    ctx.log("debug", `greeting ${who}`);
    return `Hello, ${who}!`;
  },
});

// Work that survives a crash: run as a task (`taskSupport: "optional"`), it checkpoints every
// `every` numbers, and a task that runs again after its host died resumes from the last
// checkpoint (the manifest says `resumable = true`). The state holds everything the run has
// learnt (the next number and the sum so far), and it is checkpointed *after* the work it
// records: each checkpoint is a safe retry boundary.
export const tally = tool({
  name: "{{tool}}_tally",
  title: "Tally",
  description:
    "Adds up the numbers 1 to `to`, reporting progress and checkpointing every `every` numbers; " +
    "as a task it resumes from its last checkpoint after a crash instead of starting over.",
  taskSupport: "optional",
  annotations: { readOnly: true, openWorld: false },
  args: {
    to: { type: "integer", minimum: 1, maximum: 100000000, description: "The last number to add." },
    every: { type: "integer", minimum: 1, default: 1000, description: "Numbers between two checkpoints." },
  },
  run({ to, every }, ctx) {
    let state = ctx.resume() ?? { next: 1, sum: 0 };
    const resumedAt = state.next;
    while (state.next <= to) {
      const end = Math.min(to, state.next + every - 1);
      let sum = state.sum;
      for (let n = state.next; n <= end; n++) sum += n;
      state = { next: end + 1, sum };
      ctx.progress(end, to, `added up to ${end} of ${to}`);
      ctx.checkpoint(state);
    }
    return {
      text: `1 + 2 + ... + ${to} = ${state.sum}` + (resumedAt > 1 ? ` (resumed at ${resumedAt})` : ""),
      structured: { sum: state.sum, resumedAt },
    };
  },
});

export const TOOLS = [greet, tally];
