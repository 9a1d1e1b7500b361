import { test } from "node:test";
import assert from "node:assert/strict";
import { Crash, schemaOf, serve, testHost } from "./corral.js";
import { TOOLS, greet, tally } from "./tools.js";

function call(host, name, args) {
  return serve(TOOLS, host).callTool(name, JSON.stringify(args));
}

test("greets by name", () => {
  const result = call(testHost(), greet.name, { name: "Ada" });
  assert.deepEqual(result.content, [{ tag: "text", val: "Hello, Ada!" }]);
  assert.equal(result.isError, false);
});

test("an empty name is an error the model can read", () => {
  const result = call(testHost(), greet.name, { name: " " });
  assert.equal(result.isError, true);
  assert.match(result.content[0].val, /say who to greet/);
});

test("arguments are typed: a wrong one is an error naming the field", () => {
  assert.match(call(testHost(), tally.name, { to: "ten" }).content[0].val, /argument `to` must be an integer, got "ten"/);
  assert.match(call(testHost(), tally.name, { to: 5, every: 0 }).content[0].val, /argument `every` must be at least 1, got 0/);
  assert.match(call(testHost(), tally.name, {}).content[0].val, /argument `to` is missing/);
  assert.match(call(testHost(), tally.name, { to: 5, evry: 2 }).content[0].val, /unknown argument `evry`/);
  assert.deepEqual(schemaOf(tally.args).required, ["to"], "an argument with a default is optional");
});

test("the tally reports progress and checkpoints as it goes", () => {
  const host = testHost();
  const result = call(host, tally.name, { to: 10, every: 4 });
  assert.deepEqual(JSON.parse(result.structured), { sum: 55, resumedAt: 1 });
  assert.deepEqual(host.reports.map(([done]) => done), [4, 8, 10]);
  assert.equal(host.checkpoints.length, 3);
});

test("after a crash the tally resumes from its last checkpoint and adds each number once", () => {
  const host = testHost({ crashAfter: 2 });
  assert.throws(() => call(host, tally.name, { to: 10, every: 4 }), Crash, "the host died at checkpoint 2");
  const result = call(host, tally.name, { to: 10, every: 4 });
  assert.deepEqual(JSON.parse(result.structured), { sum: 55, resumedAt: 9 }, "the second run starts after 8");
  assert.equal(result.content[0].val, "1 + 2 + ... + 10 = 55 (resumed at 9)");
});
