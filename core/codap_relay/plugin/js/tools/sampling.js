// @ts-check
// A random sample of cases, as CODAP's Sampler plugin draws one from a population: n distinct cases, each set of n
// equally likely. A seed makes the draw repeatable (the same seed on the same cases draws the same sample).

/**
 * A generator of numbers in [0, 1) from a 32-bit seed (mulberry32: small, fast, good enough for drawing samples).
 * @param {number} seed
 * @returns {() => number}
 */
export function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * `n` distinct items of `items` drawn at random (all of them, in a random order, where there are no more than `n`),
 * in the order CODAP holds them.
 * @template T
 * @param {T[]} items
 * @param {number} n
 * @param {() => number} random
 * @returns {T[]}
 */
export function drawSample(items, n, random) {
  const index = items.map((_, i) => i);
  const take = Math.min(n, index.length);
  for (let i = 0; i < take; i++) {
    const j = i + Math.floor(random() * (index.length - i));
    [index[i], index[j]] = [index[j], index[i]];
  }
  return index.slice(0, take).sort((a, b) => a - b).map((i) => items[i]);
}
