// The tool's logic, free of wasm: `node --test` tests it (greet.test.js).

export function greet(name) {
  const who = name.trim();
  if (who.length === 0) {
    throw new Error("`name` is empty: say who to greet");
  }
  return `Hello, ${who}!`;
}
