import { test } from "node:test";
import assert from "node:assert/strict";
import { greet } from "./greet.js";

test("greets by name", () => {
  assert.equal(greet("Ada"), "Hello, Ada!");
});

test("an empty name is an error the model can read", () => {
  assert.throws(() => greet(" "), /say who to greet/);
});
