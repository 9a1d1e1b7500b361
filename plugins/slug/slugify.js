// The tool's logic, free of wasm: `npm test` runs slugify.test.js on it with Node.

export function slugify(text, separator = "-") {
  const words = text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "") // combining accents, split off by NFKD
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
  return { slug: words.join(separator), words: words.length };
}
