import { test } from "node:test";
import assert from "node:assert/strict";
import { slugify } from "./slugify.js";

test("drops accents and punctuation", () => {
  assert.deepEqual(slugify("Crème brûlée, for 2!"), { slug: "creme-brulee-for-2", words: 4 });
});

test("joins with the separator", () => {
  assert.equal(slugify("Hello World", "_").slug, "hello_world");
});

test("nothing to keep is zero words", () => {
  assert.deepEqual(slugify("¡¿!?"), { slug: "", words: 0 });
});
